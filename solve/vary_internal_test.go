package solve

import (
	"math"
	"slices"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

// TestSpeedMultipliers: each factor is its stratum's mean of a lognormal
// of mean 1 and the given coefficient of variation, checked by a
// trapezoid integration over the normal density independent of the
// closed form; the factors increase and average 1, and their variance
// (between strata) is below the whole variance v².
func TestSpeedMultipliers(t *testing.T) {
	for _, v := range []float64{0, 0.05, 0.12, 0.5, 1} {
		m := SpeedMultipliers(v)
		if len(m) != SpeedScenarios {
			t.Fatalf("v %g: %d factors, want %d", v, len(m), SpeedScenarios)
		}
		sigma := math.Sqrt(math.Log1p(v * v))
		mean, between := 0.0, 0.0
		for j, f := range m {
			lo, hi := -9.0, 9.0
			if j > 0 {
				lo = distuv.UnitNormal.Quantile(float64(j) / SpeedScenarios)
			}
			if j < SpeedScenarios-1 {
				hi = distuv.UnitNormal.Quantile(float64(j+1) / SpeedScenarios)
			}
			const steps = 20000
			h := (hi - lo) / steps
			sum := 0.0
			for i := 0; i <= steps; i++ {
				z := lo + float64(i)*h
				w := 1.0
				if i == 0 || i == steps {
					w = 0.5
				}
				sum += w * math.Exp(sigma*z-sigma*sigma/2) * distuv.UnitNormal.Prob(z)
			}
			want := SpeedScenarios * sum * h
			if math.Abs(f-want) > 1e-6*want {
				t.Errorf("v %g stratum %d: factor %.9g, integration %.9g", v, j, f, want)
			}
			if j > 0 && !(f > m[j-1]) && v > 0 {
				t.Errorf("v %g: factors %v do not increase", v, m)
			}
			mean += f / SpeedScenarios
			between += (f - 1) * (f - 1) / SpeedScenarios
		}
		if math.Abs(mean-1) > 1e-12 {
			t.Errorf("v %g: factors %v average %.15g, want 1", v, m, mean)
		}
		if between > v*v+1e-15 {
			t.Errorf("v %g: variance between strata %g above the whole %g", v, between, v*v)
		}
	}
}

// TestStratumOrders: every host runs at each stratum once over the
// scenarios, and the strata of any two of the first four hosts are
// correlated within 0.3 over the scenarios (the first two not at all).
func TestStratumOrders(t *testing.T) {
	k := SpeedScenarios
	for i := range 2 * len(strata) {
		var seen []int
		for j := range k {
			seen = append(seen, stratum(i, j))
		}
		slices.Sort(seen)
		for j := range k {
			if seen[j] != j {
				t.Fatalf("host %d: strata %v over the scenarios, want each once", i, seen)
			}
		}
	}
	mid := float64(k-1) / 2
	corr := func(a, b int) float64 {
		var c, v float64
		for j := range k {
			x, y := float64(stratum(a, j))-mid, float64(stratum(b, j))-mid
			c, v = c+x*y, v+x*x
		}
		return c / v
	}
	if c := corr(0, 1); c != 0 {
		t.Errorf("hosts 0 and 1: correlation %g, want 0", c)
	}
	for a := range len(strata) {
		for b := a + 1; b < len(strata); b++ {
			if c := corr(a, b); math.Abs(c) > 0.3 {
				t.Errorf("hosts %d and %d: correlation %g, want within 0.3", a, b, c)
			}
		}
	}
}

// expTimes are the figures of an exponential time of mean mu.
func expTimes(mu, halfWidth float64) Times {
	q := func(p float64) *float64 { return Float(-mu * math.Log(1-p)) }
	return Times{Mean: mu, P50: q(0.5), P90: q(0.9), P95: q(0.95), P99: q(0.99), CI95: &[2]float64{mu - halfWidth, mu + halfWidth}}
}

// TestMixTimesExponential: for exponential times the survival read from
// four percentiles is exact, so the mixture's percentiles are the exact
// mixture's, found here by an independent bisection; the mean is the
// weighted mean and the half-width that of a weighted sum of
// independent estimates.
func TestMixTimesExponential(t *testing.T) {
	got := mixTimes([]Times{expTimes(1, 0.03), expTimes(3, 0.12)}, []float64{2, 1})
	if want := (2*1 + 3.0) / 3; math.Abs(got.Mean-want) > 1e-12 {
		t.Errorf("mean %g, want %g", got.Mean, want)
	}
	hw := math.Sqrt(math.Pow(2.0/3*0.03, 2) + math.Pow(1.0/3*0.12, 2))
	if got.CI95 == nil || math.Abs((got.CI95[1]-got.CI95[0])/2-hw) > 1e-12 {
		t.Errorf("CI %v, want half-width %g", got.CI95, hw)
	}
	surv := func(x float64) float64 { return 2.0/3*math.Exp(-x) + 1.0/3*math.Exp(-x/3) }
	for _, c := range []struct {
		p   float64
		got *float64
	}{{0.5, got.P50}, {0.9, got.P90}, {0.95, got.P95}, {0.99, got.P99}} {
		lo, hi := 0.0, 100.0
		for range 200 {
			mid := (lo + hi) / 2
			if surv(mid) > 1-c.p {
				lo = mid
			} else {
				hi = mid
			}
		}
		if c.got == nil || math.Abs(*c.got-lo) > 1e-9*lo {
			t.Errorf("p%g: %v, exact mixture %g", 100*c.p, c.got, lo)
		}
	}
}

// TestMixTimesWithoutPercentiles: a scenario without percentiles leaves
// the mixture without them; without confidence intervals, without one.
func TestMixTimesWithoutPercentiles(t *testing.T) {
	got := mixTimes([]Times{expTimes(1, 0.1), {Mean: 2}}, nil)
	if got.Mean != 1.5 || got.P95 != nil || got.CI95 != nil {
		t.Errorf("mixture %+v, want mean 1.5 and nothing else", got)
	}
}

// TestMixUnstable: one unstable scenario makes the mixture unstable, with
// its bottleneck and the scenarios' warnings, the middle scenario's first
// and one of those that differ only in their figures.
func TestMixUnstable(t *testing.T) {
	ok := &Result{Stable: true, Warnings: []string{"a", "pool p waits 1.5 ms (3 % of it)"}, Workloads: map[string]*WorkloadResult{}}
	bad := &Result{Stable: false, Bottleneck: "app.cpu", Warnings: []string{"b", "pool p waits 2.25e-3 ms (40 % of it)"}}
	got := Mix([]*Result{ok, bad, ok})
	want := []string{"b", "pool p waits 2.25e-3 ms (40 % of it)", "a"}
	if got.Stable || got.Bottleneck != "app.cpu" || !slices.Equal(got.Warnings, want) {
		t.Errorf("mixture stable %v, bottleneck %q, warnings %q", got.Stable, got.Bottleneck, got.Warnings)
	}
	if bad.Warnings[0] != "b" || len(bad.Warnings) != 2 {
		t.Errorf("the unstable scenario's result was changed: %q", bad.Warnings)
	}
}

// TestMixStable: throughputs, utilizations and queue lengths are the
// scenarios' means, response times weighted by throughput, waits
// equally; a time one scenario lacks is left out; the simulations' counts
// add up.
func TestMixStable(t *testing.T) {
	scenario := func(x, rt, u float64, span bool) *Result {
		r := &Result{Stable: true, Workloads: map[string]*WorkloadResult{}, Operations: map[string]*OperationResult{}, Resources: map[string]*ResourceResult{}}
		r.Workloads["w"] = &WorkloadResult{Throughput: x, ResponseTime: Times{Mean: rt}}
		op := &OperationResult{Throughput: 2 * x, ResponseTime: Times{Mean: rt / 2}}
		if span {
			op.Span = &Times{Mean: rt / 4}
		}
		r.Operations["c/op"] = op
		r.Resources["h.cpu"] = &ResourceResult{Utilization: u, Busy: u, Wait: &Times{Mean: rt / 10}, QueueLength: Float(u)}
		r.Sim = &SimInfo{Seed: 3, Replications: 2, Requests: 100}
		return r
	}
	got := Mix([]*Result{scenario(1, 10, 0.2, true), scenario(3, 20, 0.6, false)})
	w := got.Workloads["w"]
	if w.Throughput != 2 || w.ResponseTime.Mean != (1*10+3*20)/4.0 {
		t.Errorf("workload %+v, want throughput 2 and mean 17.5", w)
	}
	if o := got.Operations["c/op"]; o.Throughput != 4 || o.ResponseTime.Mean != 8.75 || o.Span != nil {
		t.Errorf("operation %+v, want throughput 4, mean 8.75, no span", o)
	}
	r := got.Resources["h.cpu"]
	if math.Abs(r.Utilization-0.4) > 1e-12 || math.Abs(*r.QueueLength-0.4) > 1e-12 || r.Wait == nil || r.Wait.Mean != 1.5 {
		t.Errorf("resource %+v, want utilization and queue 0.4, wait 1.5", r)
	}
	if got.Sim == nil || got.Sim.Replications != 4 || got.Sim.Requests != 200 || got.Sim.Seed != 3 || !got.Stable {
		t.Errorf("sim %+v, stable %v", got.Sim, got.Stable)
	}
}
