package extract

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestWithinMean feeds the solo sweep a Poisson stream of executions that
// do not slow each other (pure delays) and checks that the executions that
// stayed within a level, weighted, give back the mean own time of all,
// where the raw mean of those within is far short of it, since long
// executions rarely stay within: alone at 160 a second (1.4 executions
// active on average), within seven others at 800 (7.2 on average). Over
// ten seeds the estimates' mean must be within three standard errors of
// the seeds' mean of the truth.
func TestWithinMean(t *testing.T) {
	const n = 60000
	for _, tc := range []struct {
		rate  float64 // executions per second
		cores int
	}{{160, 1}, {800, 8}} {
		level := splitLevel(tc.cores)
		var est, raw, truth []float64
		for seed := range uint64(10) {
			r := rand.New(rand.NewPCG(seed, 3))
			op := &opStats{self: newSample(), solo: newSample()}
			op.initWithin()
			calm := newCalmStats()
			w := newSoloSweep(calm)
			at, sum := 0.0, 0.0
			for range n {
				at += r.ExpFloat64() / tc.rate
				// 2, 6 and 1 ms exponential stages: a mean of 9 ms
				// with an exponential tail of mean 6 ms.
				x := (2*r.ExpFloat64() + 6*r.ExpFloat64() + r.ExpFloat64()) / 1000
				sum += x
				op.self.add(x)
				start := int64(at * 1e9)
				w.add(op, x, []interval{{start, start + int64(x*1e9)}}, level+1)
			}
			w.finish()
			m, se, neff := withinMean(op, calm[level], level)
			if !(se > 0) || neff < soloMin {
				t.Fatalf("rate %g, seed %d: estimate %g ± %g from %g executions", tc.rate, seed, m, se, neff)
			}
			est = append(est, m)
			rawSample := newSample()
			for i := 0; i <= level; i++ {
				rawSample.merge(op.within[i])
			}
			raw = append(raw, rawSample.mean())
			truth = append(truth, sum/n)
		}
		mean, sd := meanSD(est)
		tm, _ := meanSD(truth)
		rm, _ := meanSD(raw)
		t.Logf("rate %g, within %d others: %.3f ms ± %.3f (sd over seeds) for a truth of %.3f; the raw mean of those within %.3f",
			tc.rate, soloLevels[level], 1000*mean, 1000*sd, 1000*tm, 1000*rm)
		if tol := 3 * sd / math.Sqrt(float64(len(est))); math.Abs(mean-tm) > tol {
			t.Errorf("rate %g: mean %.3f ms, truth %.3f ms: off by more than %.3f ms", tc.rate, 1000*mean, 1000*tm, 1000*tol)
		}
		if rm > 0.8*tm {
			t.Errorf("rate %g: the raw mean of executions within, %.3f ms, is not the biased sample this test needs (truth %.3f)", tc.rate, 1000*rm, 1000*tm)
		}
	}
}

func meanSD(xs []float64) (mean, sd float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		sd += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(sd / float64(len(xs)-1))
}
