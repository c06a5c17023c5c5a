package extract

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestAloneMean feeds the solo sweep a Poisson stream of executions that
// do not slow each other (pure delays) and checks that the executions that
// ran alone, weighted, give back the mean own time of all: the raw mean of
// those alone is far short of it, since long executions rarely run alone.
// Over ten seeds the estimate's mean must be within three standard errors
// of the seeds' mean of the truth.
func TestAloneMean(t *testing.T) {
	const (
		rate = 160.0 // executions per second
		n    = 60000
	)
	var est, raw, truth []float64
	for seed := range uint64(10) {
		r := rand.New(rand.NewPCG(seed, 3))
		op := &opStats{self: newSample(), solo: newSample()}
		w := newSoloSweep()
		at, sum := 0.0, 0.0
		for range n {
			at += r.ExpFloat64() / rate
			// 2, 6 and 1 ms exponential stages: a mean of 9 ms with an
			// exponential tail of mean 6 ms.
			x := (2*r.ExpFloat64() + 6*r.ExpFloat64() + r.ExpFloat64()) / 1000
			sum += x
			op.self.add(x)
			op.intervals++
			start := int64(at * 1e9)
			w.add(op.solo, &op.emptyStarts, x, []interval{{start, start + int64(x*1e9)}})
		}
		w.finish()
		m, se, neff := aloneMean(op, float64(op.intervals)/at)
		if !(se > 0) || neff < soloMin {
			t.Fatalf("seed %d: estimate %g ± %g from %g executions", seed, m, se, neff)
		}
		est = append(est, m)
		raw = append(raw, op.solo.mean())
		truth = append(truth, sum/n)
	}
	mean, sd := meanSD(est)
	tm, _ := meanSD(truth)
	rm, _ := meanSD(raw)
	t.Logf("own time without waits: %.3f ms ± %.3f (sd over seeds) for a truth of %.3f; the raw mean of those alone %.3f", 1000*mean, 1000*sd, 1000*tm, 1000*rm)
	if tol := 3 * sd / math.Sqrt(float64(len(est))); math.Abs(mean-tm) > tol {
		t.Errorf("mean %.3f ms, truth %.3f ms: off by more than %.3f ms", 1000*mean, 1000*tm, 1000*tol)
	}
	if rm > 0.7*tm {
		t.Errorf("the raw mean of executions alone, %.3f ms, is not the biased sample this test needs (truth %.3f)", 1000*rm, 1000*tm)
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
