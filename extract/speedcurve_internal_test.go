package extract

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The load's coefficient is recovered beside a drift in time, and a drift
// alone, in traces whose load alternates, is not taken for it.
func TestTrendRegression(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 1))
	const n = 96
	hits := 0
	for _, slope := range []float64{-0.3, 0} {
		x, tm, y := make([]float64, n), make([]float64, n), make([]float64, n)
		noise := 0.0
		for i := range n {
			x[i] = 0.25
			if (i/12)%2 == 1 { // steps of a minute, alternating
				x[i] = 0.6
			}
			tm[i] = float64(i) / 12
			noise = 0.6*noise + 0.03*rng.NormFloat64() // correlated in time
			y[i] = 1 + slope*x[i] + 0.04*tm[i] + noise
		}
		beta, se, ok := trendRegression(x, tm, y)
		if !ok || !(se > 0) {
			t.Fatalf("slope %g: ok %v, se %g", slope, ok, se)
		}
		if math.Abs(beta[1]-slope) > 3*se {
			t.Errorf("slope %g: fitted %.3f ± %.3f", slope, beta[1], se)
		}
		if math.Abs(beta[2]-0.04) > 0.02 {
			t.Errorf("slope %g: time trend %.3f, want 0.04", slope, beta[2])
		}
		if math.Abs(beta[1]) > 2*se {
			hits++
		}
	}
	if hits != 1 {
		t.Errorf("%d of the two cases significant, want only the one with a slope", hits)
	}
	// Load that only rises with time: the two are not told apart.
	x, tm, y := make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range n {
		tm[i] = float64(i) / 12
		x[i] = 0.2 + 0.05*tm[i]
		y[i] = 1 + 0.04*tm[i] + 0.01*rng.NormFloat64()
	}
	if _, _, ok := trendRegression(x, tm, y); ok {
		t.Error("load collinear with time: fitted anyway")
	}
}
