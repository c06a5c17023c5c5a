package mva

import (
	"math"
	"testing"
)

// TestCurveMatchesExactMVA: the throughput curve at a think time equals
// exact MVA's throughput, at servers' own rates or at those open requests
// share (sharedServers), and thinkFor inverts it.
func TestCurveMatchesExactMVA(t *testing.T) {
	stations := []station{
		{servers: 1, copies: 1},
		{servers: 4, copies: 1},
		{servers: 2, copies: 3},
		{servers: 0, copies: 1},
	}
	d := []float64{0.010, 0.030, 0.004, 0.050}
	// The same with open requests sharing the servers of two stations.
	shared := []*sharedServers{nil, newSharedServers(4, 0.3), newSharedServers(2, 0.5), nil}
	for _, sh := range [][]*sharedServers{nil, shared} {
		rates := ratesOf(sh)
		for _, N := range []int{1, 2, 7, 60} {
			cv := newCurve(stations, d, N, rates)
			for _, z := range []float64{0, 0.2, 5} {
				cn := &closedNet{stations: stations, users: []float64{float64(N)}, think: []float64{z}, demand: [][]float64{d}, shared: sh}
				want := cn.exactSingle().X[0]
				if e := relErr(cv.at(z), want); e > 1e-11 {
					t.Errorf("rates %v N=%d z=%g: curve %.15g, exact MVA %.15g (rel. error %.2g)", rates != nil, N, z, cv.at(z), want, e)
				}
			}
		}
	}
	for _, N := range []int{1, 7, 60, 2000} {
		cv := newCurve(stations, d, N, nil)
		for _, z := range []float64{0, 0.2, 5, 100} {
			cn := &closedNet{stations: stations, users: []float64{float64(N)}, think: []float64{z}, demand: [][]float64{d}}
			want := cn.exactSingle().X[0]
			if e := relErr(cv.at(z), want); e > 1e-11 {
				t.Errorf("N=%d z=%g: curve %.15g, exact MVA %.15g (rel. error %.2g)", N, z, cv.at(z), want, e)
			}
			// In saturation the throughput hardly depends on the think
			// time, so the inverse is checked by its throughput.
			if z > 0 {
				got, ok := cv.thinkFor(want)
				// (false only when the curve is flat to rounding.)
				if e := relErr(cv.at(got), want); e > 1e-12 || (!ok && relErr(cv.at(0), want) > 1e-12) {
					t.Errorf("N=%d: X(thinkFor(X(%g))) = X(%.12g), rel. error %.2g, %v", N, z, got, e, ok)
				}
			}
		}
		if z, ok := cv.thinkFor(cv.at(0) * 1.01); ok || z != 0 {
			t.Errorf("N=%d: beyond the no-think throughput: %g %v", N, z, ok)
		}
		// Demands scaled by the curve's scale.
		scaled := make([]float64, len(d))
		for k := range d {
			scaled[k] = 3 * d[k]
		}
		cs := newCurve(stations, scaled, N, nil)
		cv.scale = 3
		cv.fixed *= 3
		for _, z := range []float64{0, 0.7} {
			if e := relErr(cv.at(z), cs.at(z)); e > 1e-12 {
				t.Errorf("N=%d: scaled curve %.15g, curve of scaled demands %.15g", N, cv.at(z), cs.at(z))
			}
		}
	}
}

// TestConstantsManyServers: two identical stations of s servers with no
// think time, against the distribution of the first station's population
// summed directly in the log domain (P(k) ∝ F(k)·F(N−k)); for hundreds of
// servers the factors of the ratio convolution leave the floating-point
// range while the terms do not.
func TestConstantsManyServers(t *testing.T) {
	for _, s := range []int{3, 300, 1000} {
		for _, N := range []int{s / 2, 2 * s, 3 * s, 10 * s} {
			D := 0.02
			logF := make([]float64, N+1)
			for j := 1; j <= N; j++ {
				logF[j] = logF[j-1] + math.Log(D/float64(min(j, s)))
			}
			top := math.Inf(-1)
			for k := 0; k <= N; k++ {
				top = math.Max(top, logF[k]+logF[N-k])
			}
			var norm, busy float64
			for k := 0; k <= N; k++ {
				p := math.Exp(logF[k] + logF[N-k] - top)
				norm += p
				busy += p * float64(min(k, s))
			}
			want := busy / norm / D
			cv := newCurve([]station{{servers: s, copies: 2}}, []float64{D}, N, nil)
			if e := relErr(cv.at(0), want); e > 1e-9 || math.IsNaN(cv.at(0)) {
				t.Errorf("s=%d N=%d: X = %.12g, direct %.12g (rel. error %.2g)", s, N, cv.at(0), want, e)
			}
		}
	}
}
