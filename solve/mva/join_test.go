package mva

import (
	"math"
	"testing"
)

// TestMaxMoments checks the join of parallel lists against closed forms.
func TestMaxMoments(t *testing.T) {
	cases := []struct {
		name       string
		in         []moments
		mean, vari float64
		tol        float64
	}{
		// Two exponentials with means a and b: a + b − ab/(a+b); two of
		// mean 1: E1 + E2/2 (Rényi), variance 1 + 1/4.
		{"exponential", []moments{{10, 100}, {30, 900}}, 10 + 30 - 300.0/40, -1, 1e-12},
		{"two exponential, variance", []moments{{1, 1}, {1, 1}}, 1.5, 1.25, 1e-6},
		// Fixed times: the largest.
		{"fixed", []moments{{2, 0}, {5, 0}, {3, 0}}, 5, 0, 1e-12},
		// Two Erlang-2 of mean 2 (rate 1): E[min] = ∫e^(−2t)(1+t)² dt = 1.25,
		// so E[max] = 4 − 1.25.
		{"erlang-2", []moments{{2, 2}, {2, 2}}, 2.75, -1, 1e-6},
		// A fixed time beside an exponential one: E[max(c, X)] = c + m·e^(−c/m).
		{"fixed and exponential", []moments{{1, 0}, {2, 4}}, 1 + 2*math.Exp(-0.5), -1, 1e-6},
		// Nearly fixed times barely exceed the largest mean.
		{"low variance", []moments{{10, 1e-4}, {10, 1e-4}, {10, 1e-4}}, 10.0085, -1, 1e-4},
		{"one", []moments{{0, 0}, {4, 3}}, 4, 3, 0},
	}
	// Extreme spreads give finite moments.
	for _, in := range [][]moments{
		{{1e-9, 1e-6}, {1e3, 1e12}},
		{{1, 1e300}, {2, 0}},
		{{1e-300, 1e-300}, {1e-300, 0}, {5, 25}},
	} {
		got := maxMoments(in)
		if math.IsNaN(got.mean+got.vari) || math.IsInf(got.mean+got.vari, 0) || got.mean < 0 || got.vari < 0 {
			t.Errorf("maxMoments(%v) = %v", in, got)
		}
	}
	for _, c := range cases {
		got := maxMoments(c.in)
		if e := relErr(got.mean, c.mean); e > c.tol || math.IsNaN(got.mean) {
			t.Errorf("%s: mean %.9g, want %.9g", c.name, got.mean, c.mean)
		}
		if c.vari >= 0 {
			if e := math.Abs(got.vari - c.vari); e > c.tol*math.Max(c.vari, 1) || math.IsNaN(got.vari) {
				t.Errorf("%s: variance %.9g, want %.9g", c.name, got.vari, c.vari)
			}
		}
	}
}

// FuzzMaxMoments joins three lists of arbitrary moments: no panic, and
// finite moments no smaller than the largest mean where the inputs are
// finite.
func FuzzMaxMoments(f *testing.F) {
	f.Add(1.0, 1.0, 2.0, 0.0, 3.0, 9.0)
	f.Add(1e-300, 1e-300, 5.0, 25.0, 0.0, 0.0)
	f.Add(1.0, 1e300, 2.0, 0.0, 1e-9, 1e-6)
	f.Fuzz(func(t *testing.T, m1, v1, m2, v2, m3, v3 float64) {
		in := []moments{{m1, v1}, {m2, v2}, {m3, v3}}
		largest := 0.0
		for _, m := range in {
			if math.IsNaN(m.mean) || math.IsInf(m.mean, 0) || m.mean > 1e100 || math.IsNaN(m.vari) || math.IsInf(m.vari, 0) || m.vari < 0 || m.vari > 1e200 {
				t.Skip()
			}
			largest = math.Max(largest, m.mean)
		}
		got := maxMoments(in)
		if math.IsNaN(got.mean+got.vari) || math.IsInf(got.mean+got.vari, 0) || got.vari < 0 || got.mean < largest*(1-1e-6) {
			t.Errorf("maxMoments(%v) = %v", in, got)
		}
	})
}
