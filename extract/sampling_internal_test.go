package extract

import (
	"math"
	"testing"
)

func TestThinnedCV(t *testing.T) {
	cases := []struct {
		cv, p  float64
		n      int
		want   float64
		wantOK bool
	}{
		// Bursty arrivals kept half the time, many gaps: c² = (2.25 − 0.5)/0.5.
		{1.5, 0.5, 1e7, 1.87, true}, // √3.5, to three figures
		// Regular arrivals: c² = (0.5 − 0.5)/0.5 = 0, at the floor.
		{math.Sqrt(0.5), 0.5, 1e7, 0.2, true},
		// Few gaps at a small p: the interval reaches Poisson's.
		{1.05, 0.1, 400, 1, true},
		// Every fifth of Poisson arrivals (Erlang 5, cv 0.45): no random
		// sampler at 0.2 leaves gaps that regular.
		{0.45, 0.2, 5000, 0.45, false},
	}
	for _, c := range cases {
		got, ok := thinnedCV(c.cv, c.p, c.n)
		if ok != c.wantOK || math.Abs(got-c.want) > 0.011 {
			t.Errorf("thinnedCV(%g, %g, %d) = %g, %v; want %.3g, %v", c.cv, c.p, c.n, got, ok, c.want, c.wantOK)
		}
	}
}
