package extract

import (
	"math"
	"testing"
)

// TestFitShared gives fitShared the facts an M/G/1 server makes (W =
// ρR/(1 − ρ), X₁ = ρR/N₀, the arrivals' squared cv scaling W by Kingman's
// factor) and checks that it finds the server again: its busy share and
// its service's squared cv where the facts are precise; the share nearest
// to the whole time off the CPU within the interval where they are not;
// constant service where W is shorter than even that makes it.
func TestFitShared(t *testing.T) {
	const rate, n0 = 100.0, 0.8
	facts := func(rho, cs2, ca2, relErr, most float64) sharedFacts {
		r := rho / rate * (1 + cs2) / 2 // the residual service
		w := rho * r / (1 - rho) * (ca2 + cs2) / (1 + cs2)
		return sharedFacts{wait: w, beside1: rho * r / n0, relErr: relErr, underWay: n0, rate: rate,
			most: most, whole: most, arrivalSCV: ca2}
	}
	for _, c := range []struct {
		name                      string
		f                         sharedFacts
		busy, scv, busyTol, scvTo float64
	}{
		{"exponential", facts(0.5, 1, 1, 1e-6, 0.8), 0.5, 1, 1e-4, 1e-3},
		{"variable", facts(0.3, 4, 1, 1e-6, 0.8), 0.3, 4, 1e-4, 1e-3},
		{"smooth arrivals", facts(0.5, 1, 0.5, 1e-6, 0.8), 0.5, 1, 1e-4, 1e-3},
		{"bursty arrivals", facts(0.4, 2, 2, 1e-6, 0.8), 0.4, 2, 1e-4, 1e-3},
		// Imprecise: the whole time off the CPU (0.55) lies within the
		// interval around 0.5, and is taken.
		{"imprecise", facts(0.5, 1, 1, 0.3, 0.55), 0.55, math.NaN(), 1e-9, 0},
		// Precise enough to reject the whole time off the CPU (0.8):
		// the interval's top, 0.3 + 1.96·0.7·0.05 at the fitted cv.
		{"below the whole", facts(0.3, 1, 1, 0.05, 0.8), 0.3686, math.NaN(), 0.01, 0},
		// Too few beside one other: the whole time off the CPU.
		{"untold", facts(0.5, 1, 1, math.Inf(1), 0.6), 0.6, math.NaN(), 1e-9, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			fit := fitShared(c.f)
			if math.Abs(fit.busy-c.busy) > c.busyTol {
				t.Errorf("busy %.4g, want %.4g (%s)", fit.busy, c.busy, fit.how)
			}
			if !math.IsNaN(c.scv) && math.Abs(fit.scv-c.scv) > c.scvTo {
				t.Errorf("service scv %.4g, want %.4g", fit.scv, c.scv)
			}
			// Whatever it took, the server waits as measured: the
			// fitted service makes W at the fitted share.
			r := fit.busy / rate * (1 + fit.scv) / 2
			ca2 := c.f.arrivalSCV
			if w := fit.busy * r / (1 - fit.busy) * (ca2 + fit.scv) / (1 + fit.scv); math.Abs(w-c.f.wait) > 1e-6*c.f.wait && fit.scv < sharedScvMax {
				t.Errorf("the fit waits %.4g, measured %.4g", w, c.f.wait)
			}
		})
	}
	// A wait shorter than constant service makes at the whole share: the
	// share is lowered until constant service makes it.
	f := facts(0.5, 1, 1, math.Inf(1), 0.9)
	f.wait /= 10
	fit := fitShared(f)
	if fit.scv != 0 || !(fit.busy < 0.5) {
		t.Fatalf("a short wait: busy %.3g, scv %.3g, want constant service below 0.5", fit.busy, fit.scv)
	}
	if w := fit.busy * fit.busy / (2 * rate * (1 - fit.busy)); math.Abs(w-f.wait) > 1e-9 {
		t.Errorf("constant service waits %.4g, measured %.4g", w, f.wait)
	}
}
