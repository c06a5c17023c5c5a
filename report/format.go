package report

import (
	"math"
	"strconv"
	"strings"

	"github.com/perfcast/perfcast/model"
)

// sig3 writes a number with three significant digits, in plain notation
// for ordinary magnitudes.
func sig3(v float64) string {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	a := math.Abs(v)
	if a >= 1e6 || a < 1e-3 {
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	digits := max(2-int(math.Floor(math.Log10(a))), 0)
	// 999.7 rounds to 1000 with no decimals: still three digits.
	return strconv.FormatFloat(v, 'f', digits, 64)
}

// fmtDuration writes seconds in µs, ms, s or min with three digits.
func fmtDuration(sec float64) string {
	a := math.Abs(sec)
	switch {
	case sec == 0 || math.IsNaN(sec) || math.IsInf(sec, 0):
		return sig3(sec) + " s"
	case a < 1e-3:
		return sig3(sec*1e6) + " µs"
	case a < 1:
		return sig3(sec*1e3) + " ms"
	case a < 600:
		return sig3(sec) + " s"
	}
	return sig3(sec/60) + " min"
}

// fmtRate writes a rate per second.
func fmtRate(v float64) string { return sig3(v) + "/s" }

// fmtPercent writes a fraction as a percentage.
func fmtPercent(f float64) string {
	p := f * 100
	if p != 0 && math.Abs(p) < 0.1 {
		return strconv.FormatFloat(p, 'g', 2, 64) + " %"
	}
	return strconv.FormatFloat(p, 'f', 1, 64) + " %"
}

// fmtUtil writes a utilization; a solver's figure above one (a pool whose
// holders would need more than all of it) is written as saturated.
func fmtUtil(u float64) string {
	if u > 1.0005 {
		return "saturated"
	}
	return fmtPercent(u)
}

// fmtFactor writes a load factor: "3.5×".
func fmtFactor(f float64) string { return trimSig3(f) + "×" }

// trimSig3 is sig3 without trailing zeros after the decimal point.
func trimSig3(v float64) string {
	s := sig3(v)
	if strings.Contains(s, ".") && !strings.ContainsAny(s, "e") {
		s = strings.TrimRight(s, "0")
		s = strings.TrimSuffix(s, ".")
	}
	return s
}

// fmtCount writes a whole number with thousands separators.
func fmtCount(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// fmtLoad writes a workload's load: a rate for an open workload, users for
// a closed one.
func fmtLoad(w *model.Workload, v float64) string {
	if w != nil && w.Closed != nil {
		return fmtCount(int64(math.Round(v))) + " users"
	}
	return fmtRate(v)
}

// plural writes n and the noun, with an s when n is not one.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// truncate shortens s to at most n characters, ending with an ellipsis.
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
