package shop

import (
	"maps"
	"testing"
)

// ParseMix never panics; what it accepts has finite, non-negative weights
// and survives FormatMix and ParseMix again unchanged.
func FuzzParseMix(f *testing.F) {
	for _, s := range []string{"browse=6,recommend=2,order=2", "order=1", "browse=NaN", "browse=1e400", "=", ",", "browse=1,,order=2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseMix(s)
		if err != nil {
			return
		}
		for k, w := range m {
			if !(w >= 0) || w > 1e308 {
				t.Fatalf("ParseMix(%q): weight %s=%g", s, k, w)
			}
		}
		again, err := ParseMix(FormatMix(m))
		if err != nil || !maps.Equal(m, again) {
			t.Fatalf("ParseMix(%q) = %v; FormatMix then ParseMix = %v, %v", s, m, again, err)
		}
	})
}
