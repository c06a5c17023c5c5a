package model

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// vtCheckErr fails unless err is a non-nil single-line message that starts in
// lower case, has no trailing punctuation and contains want.
func vtCheckErr(t *testing.T, input string, err error, want string) {
	t.Helper()
	if err == nil {
		t.Errorf("%q: no error, want one containing %q", input, want)
		return
	}
	msg := err.Error()
	if !strings.Contains(msg, want) {
		t.Errorf("%q: error %q does not contain %q", input, msg, want)
	}
	if strings.ContainsAny(msg, "\n\r") {
		t.Errorf("%q: error %q spans several lines", input, msg)
	}
	if r := []rune(msg)[0]; unicode.IsUpper(r) {
		t.Errorf("%q: error %q starts with a capital", input, msg)
	}
	if strings.ContainsAny(msg[len(msg)-1:], ".!:;,") {
		t.Errorf("%q: error %q ends with punctuation", input, msg)
	}
}

func TestParseDuration(t *testing.T) {
	cases := []struct {
		in   string
		want float64
	}{
		{"250us", 0.00025},
		{"2.5ms", 0.0025},
		{"1.2s", 1.2},
		{"2m", 120},
		{"1h", 3600},
		{"1.5h", 5400},
		{"10ns", 1e-8},
		{"3µs", 3e-6},                    // micro sign U+00B5
		{"3\u03bcs", 3e-6},               // Greek mu U+03BC
		{"3\u00b5s", 3e-6},               // micro sign, spelled out
		{"0.5", 0.5},                     // bare number: seconds
		{"2", 2},                         // bare integer
		{"1e-3", 0.001},                  // exponent
		{"1E-3s", 0.001},                 // capital exponent
		{".5ms", 0.0005},                 // no leading digit
		{"5.ms", 0.005},                  // no fraction digits
		{"  7ms\t", 0.007},               // surrounding white space
		{"2.5 ms", 0.0025},               // space before the unit
		{"0", 0},                         // zero
		{"0s", 0},                        // zero with a unit
		{"0.000ns", 0},                   // zero in another unit
		{"1e-400", 0},                    // underflows to zero
		{"1e308", 1e308},                 // large but finite
		{"100000h", 3.6e8},               // many hours
		{"1.25e2us", 125e-6},             // exponent and unit
		{"0e99999999999999999999ms", 0},  // exponent beyond int, zero mantissa
		{"1e-99999999999999999999ms", 0}, // exponent beyond int, negative
		{"1e-99999999999999999999", 0},   // the same without a unit
	}
	for _, c := range cases {
		got, err := ParseDuration(c.in)
		if err != nil {
			t.Errorf("ParseDuration(%q): %v", c.in, err)
			continue
		}
		if got != c.want {
			t.Errorf("ParseDuration(%q) = %v, want %v", c.in, got, c.want)
		}
		if math.Signbit(got) {
			t.Errorf("ParseDuration(%q) is negative zero", c.in)
		}
	}
}

func TestParseDurationErrors(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", "empty duration"},
		{"   ", "empty duration"},
		{"-1ms", "negative duration"},
		{"-2", "negative duration"},
		{"-0", "negative duration"},
		{"abc", "invalid duration"},
		{"ms", "invalid duration"},
		{"1x", "invalid duration"},
		{"1 ms s", "invalid duration"},
		{"1msec", "invalid duration"},
		{"1min", "invalid duration"},
		{"1d", "invalid duration"},
		{"NaN", "invalid duration"},
		{"Inf", "invalid duration"},
		{"+Inf", "invalid duration"},
		{"infinity", "invalid duration"},
		{"0x10", "invalid duration"},
		{"1_000", "invalid duration"},
		{"+5ms", "invalid duration"},
		{"--1", "invalid duration"},
		{"1e", "invalid duration"},
		{"1e+", "invalid duration"},
		{".", "invalid duration"},
		{".e1", "invalid duration"},
		{"1..2ms", "invalid duration"},
		{"1.2.3", "invalid duration"},
		{"1e400", "too large"},
		{"1e306h", "too large"},
		{"1e99999999999999999999ms", "too large"},
	}
	for _, c := range cases {
		_, err := ParseDuration(c.in)
		vtCheckErr(t, c.in, err, c.want)
	}
	// The hint names the units.
	if _, err := ParseDuration("5 fortnights"); err == nil || !strings.Contains(err.Error(), "ns, us, ms, s, m or h") {
		t.Errorf("error for an unknown unit does not list the units: %v", err)
	}
}

func TestFormatDuration(t *testing.T) {
	cases := []struct {
		in   float64
		want string
	}{
		{0, "0s"},
		{0.0012, "1.2ms"},
		{0.00025, "250us"},
		{1.5, "1.5s"},
		{1, "1s"},
		{0.001, "1ms"},
		{1e-6, "1us"},
		{1e-9, "1ns"},
		{2.5e-10, "0.25ns"},
		{5e-7, "500ns"},
		{0.0999, "99.9ms"},
		{999.5, "999.5s"},
		{59, "59s"},
		{60, "1m"},
		{90, "90s"},
		{120, "2m"},
		{3600, "1h"},
		{3660, "61m"},
		{7200, "2h"},
		{60.5, "60.5s"},
		{1e-3 / 3, "333.3333333333333us"},
		{1.0 / 3, "333.3333333333333ms"},
	}
	for _, c := range cases {
		if got := FormatDuration(c.in); got != c.want {
			t.Errorf("FormatDuration(%v) = %q, want %q", c.in, got, c.want)
		}
	}
	// Values no duration can have are still written, in seconds.
	for in, want := range map[float64]string{-0.5: "-0.5s", math.Inf(1): "+Infs", 1e-15: "1e-15s", 1e25: "1e+25s"} {
		if got := FormatDuration(in); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", in, got, want)
		}
	}
	if got := FormatDuration(math.NaN()); got != "NaNs" {
		t.Errorf("FormatDuration(NaN) = %q", got)
	}
}

// vtDurationEdges are values near unit boundaries and the ends of float64.
func vtDurationEdges() []float64 {
	var xs []float64
	for _, b := range []float64{1e-9, 1e-6, 1e-3, 1, 60, 3600, 1 << 53} {
		xs = append(xs, b, math.Nextafter(b, 0), math.Nextafter(b, math.Inf(1)))
	}
	return append(xs, math.SmallestNonzeroFloat64, 2*math.SmallestNonzeroFloat64,
		0x1p-1022, math.Nextafter(0x1p-1022, 0), math.MaxFloat64, math.Nextafter(math.MaxFloat64, 0),
		1e-320, 1e300, 0.1, 0.2, 0.3, 1.0/3, 2.0/3)
}

// vtRoundTripDuration fails unless FormatDuration(x) parses back to x exactly
// and, for x from 1 ns to below 1000 s, has its number in [1, 1000) or is a
// whole number of minutes or hours.
func vtRoundTripDuration(t *testing.T, x float64) {
	t.Helper()
	s := FormatDuration(x)
	got, err := ParseDuration(s)
	if err != nil {
		t.Fatalf("FormatDuration(%v) = %q, which does not parse: %v", x, s, err)
	}
	if math.Float64bits(got) != math.Float64bits(x) {
		t.Fatalf("FormatDuration(%v) = %q, which parses to %v (bits %#x, want %#x)", x, s, got, math.Float64bits(got), math.Float64bits(x))
	}
	if x >= 1e-9 && x < 1000 && !strings.HasSuffix(s, "m") && !strings.HasSuffix(s, "h") {
		num := strings.TrimRight(s, "numsµ")
		v, err := strconv.ParseFloat(num, 64)
		if err != nil || v < 1 || v >= 1000 || strings.ContainsAny(num, "eE") {
			t.Fatalf("FormatDuration(%v) = %q: want a plain number in [1, 1000) before the unit", x, s)
		}
	}
}

func TestFormatDurationRoundTrip(t *testing.T) {
	for _, x := range vtDurationEdges() {
		vtRoundTripDuration(t, x)
	}
	r := rand.New(rand.NewPCG(1, 2))
	// Arbitrary bit patterns: every finite non-negative float64 is possible.
	for i := 0; i < 100000; i++ {
		x := math.Float64frombits(r.Uint64() &^ (1 << 63))
		if math.IsNaN(x) || math.IsInf(x, 0) {
			continue
		}
		vtRoundTripDuration(t, x)
	}
	// Log-uniform over the range that durations really take.
	for i := 0; i < 100000; i++ {
		vtRoundTripDuration(t, math.Pow(10, -12+18*r.Float64()))
	}
}

// TestFormatDurationShortest checks that a duration written with few digits
// comes back with no more digits than it was written with.
func TestFormatDurationShortest(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	units := []string{"ns", "us", "ms", "s"}
	for i := 0; i < 100000; i++ {
		mant := 1 + r.IntN(999999)
		exp := -r.IntN(6)
		in := strconv.Itoa(mant) + "e" + strconv.Itoa(exp) + units[r.IntN(len(units))]
		x, err := ParseDuration(in)
		if err != nil {
			t.Fatal(err)
		}
		out := FormatDuration(x)
		if d, dIn := numSigDigits(out), numSigDigits(strconv.Itoa(mant)); d > dIn {
			t.Fatalf("ParseDuration(%q) = %v is written %q: %d significant digits, want at most %d", in, x, out, d, dIn)
		}
	}
}

func TestParseRate(t *testing.T) {
	cases := []struct {
		in   string
		want float64
	}{
		{"50/s", 50},
		{"3000/m", 50},
		{"10/h", 10.0 / 3600},
		{"1.5/s", 1.5},
		{"40", 40},
		{"0.25", 0.25},
		{" 7 / s ", 7},
		{"0/s", 0},
		{"1e3/m", 1000.0 / 60},
	}
	for _, c := range cases {
		got, err := ParseRate(c.in)
		if err != nil {
			t.Errorf("ParseRate(%q): %v", c.in, err)
			continue
		}
		if got != c.want {
			t.Errorf("ParseRate(%q) = %v, want %v", c.in, got, c.want)
		}
	}
	errs := []struct{ in, want string }{
		{"", "empty rate"},
		{"-5/s", "negative rate"},
		{"-5", "negative rate"},
		{"5/d", "unknown time unit \"d\""},
		{"5/", "unknown time unit"},
		{"5/ms", "unknown time unit"},
		{"/s", "invalid rate"},
		{"fast", "invalid rate"},
		{"NaN/s", "invalid rate"},
		{"Inf", "invalid rate"},
		{"5/s/s", "unknown time unit"},
		{"1e999/s", "too large"},
	}
	for _, c := range errs {
		_, err := ParseRate(c.in)
		vtCheckErr(t, c.in, err, c.want)
	}
}

func TestFormatRate(t *testing.T) {
	cases := []struct {
		in   float64
		want string
	}{
		{50, "50/s"},
		{0, "0/s"},
		{1.5, "1.5/s"},
		{10.0 / 3600, "10/h"},
		{7.0 / 60, "7/m"},
		{1000.0 / 60, "1000/m"},
		{0.125, "0.125/s"},
		{-2, "-2/s"},
		{math.Inf(1), "+Inf/s"},
	}
	for _, c := range cases {
		if got := FormatRate(c.in); got != c.want {
			t.Errorf("FormatRate(%v) = %q, want %q", c.in, got, c.want)
		}
	}
	r := rand.New(rand.NewPCG(5, 6))
	check := func(x float64) {
		s := FormatRate(x)
		got, err := ParseRate(s)
		if err != nil || math.Float64bits(got) != math.Float64bits(x) {
			t.Fatalf("FormatRate(%v) = %q, which parses to %v, %v", x, s, got, err)
		}
	}
	for _, x := range vtDurationEdges() {
		check(x)
	}
	for i := 0; i < 100000; i++ {
		x := math.Float64frombits(r.Uint64() &^ (1 << 63))
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			check(x)
		}
		check(float64(1+r.IntN(100000)) / []float64{1, 60, 3600}[r.IntN(3)])
	}
}

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"250us", "2.5ms", "1.2s", "2m", "1h", "10ns", "3µs", "3\u03bcs", "0.5", "1e-3", "-1ms", "", "1e400", "0x1p3", ".5ms"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseDuration(s)
		if err != nil {
			if strings.ContainsAny(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		if !(v >= 0) || math.IsInf(v, 0) || math.Signbit(v) {
			t.Fatalf("ParseDuration(%q) = %v, want finite and >= +0", s, v)
		}
		out := FormatDuration(v)
		back, err := ParseDuration(out)
		if err != nil || math.Float64bits(back) != math.Float64bits(v) {
			t.Fatalf("ParseDuration(%q) = %v, written %q, read back as %v, %v", s, v, out, back, err)
		}
		r, err := ParseRate(s)
		if err == nil {
			back, err := ParseRate(FormatRate(r))
			if err != nil || back != r {
				t.Fatalf("ParseRate(%q) = %v, written %q, read back as %v, %v", s, r, FormatRate(r), back, err)
			}
		}
	})
}
