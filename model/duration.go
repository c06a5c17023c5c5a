package model

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// durUnit is one duration unit: its suffix and either the power of ten that
// makes a second of it (pow10, for units shorter than a second: 3 for ms) or
// how many seconds it lasts (sec, for s, m and h). Parsing shifts the decimal
// exponent of the number by pow10 before converting it, so that a value in a
// sub-second unit is the float64 nearest to the exact decimal number of
// seconds; it multiplies by sec otherwise.
type durUnit struct {
	suffix string
	pow10  int
	sec    float64
}

// durUnits lists the accepted suffixes, longest first where one suffix ends
// another ("ms" before "s").
var durUnits = []durUnit{
	{suffix: "ns", pow10: 9},
	{suffix: "us", pow10: 6},
	{suffix: "\u00b5s", pow10: 6}, // micro sign
	{suffix: "\u03bcs", pow10: 6}, // Greek small letter mu
	{suffix: "ms", pow10: 3},
	{suffix: "s", sec: 1},
	{suffix: "m", sec: 60},
	{suffix: "h", sec: 3600},
}

const durationHint = `want a number of seconds or a number with unit ns, us, ms, s, m or h, like "2.5ms"`

// ParseDuration reads a duration and returns it in seconds. The text is a
// non-negative decimal number followed by a unit (ns, us, µs, ms, s, m, h), as
// in "250us", "2.5ms", "1.2s", "2m", or a bare number, which is seconds ("0.5",
// "1e-3"). Surrounding white space is ignored. Negative, infinite and
// unreadable values are errors.
func ParseDuration(s string) (float64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, errors.New("empty duration (" + durationHint + ")")
	}
	num, u := t, durUnit{sec: 1}
	for _, cand := range durUnits {
		if strings.HasSuffix(t, cand.suffix) {
			num, u = strings.TrimSpace(t[:len(t)-len(cand.suffix)]), cand
			break
		}
	}
	v, err := numParseNonNeg(num, u.pow10)
	if err != nil {
		return 0, numError(err, "duration", s, durationHint)
	}
	if u.pow10 == 0 {
		v *= u.sec
	}
	if math.IsInf(v, 0) {
		return 0, fmt.Errorf("duration %q is too large", s)
	}
	return v, nil
}

// Reasons numParseNonNeg gives for rejecting a number; numError phrases them.
var (
	errNumNegative = errors.New("negative")
	errNumSyntax   = errors.New("invalid")
	errNumTooLarge = errors.New("too large")
)

// numError phrases a numParseNonNeg failure for a value of the given kind
// ("duration", "rate") written as text.
func numError(err error, kind, text, hint string) error {
	switch err {
	case errNumNegative:
		return fmt.Errorf("negative %s %q", kind, text)
	case errNumTooLarge:
		return fmt.Errorf("%s %q is too large", kind, text)
	}
	return fmt.Errorf("invalid %s %q (%s)", kind, text, hint)
}

// numParseNonNeg reads a plain non-negative decimal number: digits with an
// optional point and exponent. It rejects signs, hexadecimal, underscores and
// the names of special values that strconv.ParseFloat would accept. The
// number read is s divided by 10^pow10, rounded once. The error is
// errNumNegative, errNumSyntax or errNumTooLarge.
func numParseNonNeg(s string, pow10 int) (float64, error) {
	if strings.HasPrefix(s, "-") && len(s) > 1 && numIsDecimal(s[1:]) {
		return 0, errNumNegative
	}
	if !numIsDecimal(s) {
		return 0, errNumSyntax
	}
	if pow10 != 0 {
		mant, exp := s, 0
		if i := strings.IndexAny(s, "eE"); i >= 0 {
			mant = s[:i]
			var err error
			if exp, err = strconv.Atoi(s[i+1:]); err != nil {
				// Too many digits for an int: far beyond the range of
				// float64 either way, which ParseFloat will see.
				exp = 1 << 30
				if s[i+1] == '-' {
					exp = -exp
				}
			}
		}
		s = mant + "e" + strconv.Itoa(exp-pow10)
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) && v != 0 {
			return 0, errNumTooLarge
		}
		if !errors.Is(err, strconv.ErrRange) {
			return 0, errNumSyntax
		}
		// Underflow: ParseFloat returns 0 with ErrRange; a value too small
		// to represent is zero for every purpose here.
	}
	return v, nil
}

// numIsDecimal reports whether s has the form DIGITS[.DIGITS][e[+-]DIGITS] with at
// least one digit in the mantissa (".5" and "5." are allowed).
func numIsDecimal(s string) bool {
	i, digits := 0, 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			digits++
		}
	}
	if digits == 0 {
		return false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		exp := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			exp++
		}
		if exp == 0 {
			return false
		}
	}
	return i == len(s)
}

// FormatDuration writes a duration given in seconds in the unit (ns, us, ms or
// s) that puts the number in [1, 1000) where possible, with the fewest digits
// that ParseDuration reads back to exactly the same float64. A whole number of
// hours or minutes is written in h or m when that takes no more digits than
// seconds ("2m", "1h", "61m", but "90s"). Durations below a picosecond are
// written in seconds ("1e-15s"). Zero is "0s". Negative or non-finite input, which no ParseDuration result
// can be, is written with strconv's 'g' format and an "s" suffix.
func FormatDuration(sec float64) string {
	if sec == 0 {
		return "0s"
	}
	if sec < 0 || math.IsNaN(sec) || math.IsInf(sec, 0) {
		return strconv.FormatFloat(sec, 'g', -1, 64) + "s"
	}
	if sec >= 60 && sec < 1<<53 && sec == math.Trunc(sec) {
		plain := numFormat(sec)
		for _, u := range [...]durUnit{{suffix: "h", sec: 3600}, {suffix: "m", sec: 60}} {
			n := sec / u.sec
			if n == math.Trunc(n) && n*u.sec == sec {
				if s := numFormat(n); numSigDigits(s) <= numSigDigits(plain) {
					return s + u.suffix
				}
			}
		}
	}
	var k int // decimal exponent of the unit: seconds = number / 10^k
	var suffix string
	switch {
	case sec >= 1 || sec < 1e-12:
		k, suffix = 0, "s"
	case sec >= 1e-3:
		k, suffix = 3, "ms"
	case sec >= 1e-6:
		k, suffix = 6, "us"
	default:
		k, suffix = 9, "ns"
	}
	if k == 0 {
		return numFormat(sec) + suffix
	}
	return numFormatScaled(sec, k, suffix)
}

// numFormatScaled writes v×10^k followed by suffix, for a unit that
// ParseDuration reads by shifting the decimal exponent back by k. The digits
// are the shortest decimal that reads back to v in seconds (strconv's
// shortest formatting), moved k places without arithmetic, so the text
// denotes exactly that decimal number of seconds and parses back to v; and no
// text with fewer digits could, since it would also be a shorter decimal for v.
func numFormatScaled(v float64, k int, suffix string) string {
	e := strconv.FormatFloat(v, 'e', -1, 64) // d.ddde±XX
	i := strings.IndexByte(e, 'e')
	exp, _ := strconv.Atoi(e[i+1:])
	return numShiftedDecimal(e[:i], exp+k) + suffix
}

// numShiftedDecimal writes mant×10^exp, where mant is "d" or "d.ddd", in plain
// decimal notation without changing the digits. FormatDuration calls it with
// exp between −3 and 3, so the text stays short.
func numShiftedDecimal(mant string, exp int) string {
	digits := strings.Replace(mant, ".", "", 1)
	var s string
	switch point := exp + 1; {
	case point <= 0:
		s = "0." + strings.Repeat("0", -point) + digits
	case point >= len(digits):
		return digits + strings.Repeat("0", point-len(digits))
	default:
		s = digits[:point] + "." + digits[point:]
	}
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// numFormat writes a non-negative finite number with the fewest digits that
// read back exactly, in plain decimal notation unless that would be very long.
func numFormat(v float64) string {
	if v == 0 {
		return "0"
	}
	if v >= 1e-4 && v < 1e21 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// rateUnits are the accepted time units of a rate, after the slash.
var rateUnits = []durUnit{
	{suffix: "s", sec: 1},
	{suffix: "m", sec: 60},
	{suffix: "h", sec: 3600},
}

const rateHint = `want a number per second or a number followed by /s, /m or /h, like "50/s"`

// ParseRate reads a rate and returns it in events per second. The text is a
// non-negative number followed by "/s", "/m" (per minute) or "/h" (per hour),
// as in "50/s" or "3000/m", or a bare number, which is per second.
// Surrounding white space is ignored. Negative, infinite and unreadable values
// are errors.
func ParseRate(s string) (float64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, errors.New("empty rate (" + rateHint + ")")
	}
	num, per := t, 1.0
	if i := strings.IndexByte(t, '/'); i >= 0 {
		num = strings.TrimSpace(t[:i])
		unit := strings.TrimSpace(t[i+1:])
		per = 0
		for _, u := range rateUnits {
			if unit == u.suffix {
				per = u.sec
			}
		}
		if per == 0 {
			return 0, fmt.Errorf("invalid rate %q: unknown time unit %q (%s)", s, unit, rateHint)
		}
	}
	v, err := numParseNonNeg(num, 0)
	if err != nil {
		return 0, numError(err, "rate", s, rateHint)
	}
	return v / per, nil
}

// FormatRate writes a rate given in events per second as "N/s", with the
// fewest digits that ParseRate reads back to exactly the same float64. A rate
// that takes more than six digits per second but at most six per minute or
// per hour (10/h) is written in that unit instead. Zero is "0/s".
func FormatRate(perSec float64) string {
	if perSec < 0 || math.IsNaN(perSec) || math.IsInf(perSec, 0) {
		return strconv.FormatFloat(perSec, 'g', -1, 64) + "/s"
	}
	plain := numFormat(perSec) + "/s"
	if numSigDigits(plain) <= 6 {
		return plain
	}
	best, bestDigits := plain, numSigDigits(plain)
	for _, u := range rateUnits[1:] {
		n := perSec * u.sec
		if math.IsInf(n, 0) {
			continue
		}
		// n is rounded; look for the shortest number near it, of at most
		// six digits, that reads back exactly.
		for prec := 0; prec < 6; prec++ {
			m, err := strconv.ParseFloat(strconv.FormatFloat(n, 'e', prec, 64), 64)
			if err != nil {
				continue
			}
			s := numFormat(m) + "/" + u.suffix
			if got, err := ParseRate(s); err == nil && got == perSec {
				if d := numSigDigits(s); d < bestDigits {
					best, bestDigits = s, d
				}
				break
			}
		}
	}
	return best
}

// numSigDigits counts the digits of the mantissa of a number written by
// numFormat, without leading zeros: a measure of how readable it is.
func numSigDigits(s string) int {
	n, started := 0, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == 'e' || c == '/' || (c < '0' || c > '9') && c != '.' {
			break
		}
		if c == '.' {
			continue
		}
		if c != '0' {
			started = true
		}
		if started {
			n++
		}
	}
	// Trailing zeros of an integer ("3000") are not precision either.
	if !strings.Contains(s, ".") {
		for i := len(s) - 1; i >= 0 && n > 1; i-- {
			if s[i] >= '1' && s[i] <= '9' {
				break
			}
			if s[i] == '0' {
				n--
			}
		}
	}
	return n
}
