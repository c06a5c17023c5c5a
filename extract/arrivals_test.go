package extract

import (
	"math"
	"math/rand/v2"
	"testing"
)

// arrivals counts per second the arrival times of a Poisson process whose
// rate rises linearly from 0 to peak over ramp seconds, stays at peak for
// steady seconds, and falls back to 0 over ramp seconds; each arrival
// brings batch requests.
func arrivals(r *rand.Rand, peak, ramp, steady float64, batch int) *entryStats {
	e := &entryStats{perSecond: map[int64]int64{}}
	end := 2*ramp + steady
	rate := func(t float64) float64 {
		switch {
		case t < ramp:
			return peak * t / ramp
		case t < ramp+steady:
			return peak
		default:
			return peak * (end - t) / ramp
		}
	}
	// Thinning: candidates at the peak rate, kept with rate(t)/peak.
	for t := r.ExpFloat64() / peak; t < end; t += r.ExpFloat64() / peak {
		if r.Float64()*peak < rate(t) {
			e.perSecond[int64(t)] += int64(batch)
			e.count += int64(batch)
		}
	}
	return e
}

func TestArrivalCVIgnoresRamps(t *testing.T) {
	// Over 200 data sets, a Poisson process with ramps at both ends is
	// taken for Poisson at least 90 % of the time (two standard errors:
	// about 95 %), while the plain index of dispersion would see the ramps
	// as burstiness.
	r := rand.New(rand.NewPCG(1, 2))
	poisson := 0
	for range 200 {
		e := arrivals(r, 20, 10, 60, 1)
		if arrivalCV(e, float64(e.count)/80, &activity{}) == 1 {
			poisson++
		}
	}
	if poisson < 180 {
		t.Errorf("Poisson with ramps taken for Poisson %d times of 200, want at least 180", poisson)
	}
}

func TestArrivalCVSeesBatches(t *testing.T) {
	// Requests in pairs: counts have an index of dispersion of 2, cv √2.
	r := rand.New(rand.NewPCG(3, 4))
	var sum float64
	const runs = 50
	for range runs {
		e := arrivals(r, 15, 10, 300, 2)
		cv := arrivalCV(e, float64(e.count)/320, &activity{})
		if cv == 1 {
			t.Fatalf("batched arrivals taken for Poisson")
		}
		sum += cv
	}
	if mean := sum / runs; math.Abs(mean-math.Sqrt2) > 0.05 {
		t.Errorf("mean cv of batched arrivals %.3f, want √2 ± 0.05", mean)
	}
}
