package estimate

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

// synthOp is one operation of a synthetic host.
type synthOp struct {
	demand float64 // mean CPU per execution, seconds (exponential)
	wait   float64 // mean off-CPU wait per execution, seconds (exponential)
	rate   float64 // mean arrivals per second
	period float64 // seconds of one cycle of the rate's variation
}

// synth generates one-second windows of a host with the given cores,
// background busy cores and operations: arrivals Poisson with a rate that
// swings ±60 % over the operation's own period, CPU per execution
// exponential, own time the CPU stretched by processor sharing at the
// window's utilization plus the off-CPU wait, and the measured busy time
// the executions' CPU plus the background plus Gaussian noise of sd
// metricNoise busy cores (a utilization metric's error).
func synth(seed uint64, seconds int, cores, background, metricNoise float64, ops []synthOp) *Problem {
	rng := rand.New(rand.NewPCG(seed, 7))
	p := &Problem{Cores: cores}
	for j := range ops {
		p.Ops = append(p.Ops, fmt.Sprintf("op%d", j))
	}
	for i := 0; i < seconds; i++ {
		w := Window{Start: int64(i) * 1e9, Length: 1, Count: make([]float64, len(ops)), Own: make([]float64, len(ops))}
		var cpu float64
		cpus := make([][]float64, len(ops))
		for j, o := range ops {
			rate := o.rate * (1 + 0.6*math.Sin(2*math.Pi*float64(i)/o.period+float64(j)))
			n := int(distuv.Poisson{Lambda: rate, Src: rng}.Rand())
			w.Count[j] = float64(n)
			for range n {
				c := rng.ExpFloat64() * o.demand
				cpus[j] = append(cpus[j], c)
				cpu += c
			}
		}
		u := math.Min((cpu+background)/cores, 0.98)
		for j, o := range ops {
			for _, c := range cpus[j] {
				w.Own[j] += c/(1-u) + rng.ExpFloat64()*o.wait
			}
		}
		w.Busy = math.Max(0, cpu+background+rng.NormFloat64()*metricNoise)
		p.Windows = append(p.Windows, w)
	}
	return p
}

// TestRecoversKnownDemands estimates demands from windows generated with
// known ones, with noise, background load and varying rates, with and
// without off-CPU waiting inside the operations. Every operation carrying
// at least 5 % of the load must come within 10 % of its demand, and within
// four of its reported standard errors (the estimator's own account of its
// uncertainty must hold); the predicted mean utilization within 5 % of the
// measured one.
func TestRecoversKnownDemands(t *testing.T) {
	for _, tc := range []struct {
		name string
		ops  []synthOp
	}{
		{"no-waiting", []synthOp{
			{demand: 0.005, rate: 100, period: 600},
			{demand: 0.020, rate: 30, period: 250},
			{demand: 0.002, rate: 80, period: 90},
		}},
		{"off-cpu-waiting", []synthOp{
			{demand: 0.005, wait: 0.001, rate: 100, period: 600},
			{demand: 0.020, wait: 0.060, rate: 30, period: 250},
			{demand: 0.002, wait: 0.010, rate: 80, period: 90},
		}},
		{"four-ops-low-share", []synthOp{
			{demand: 0.010, wait: 0.005, rate: 40, period: 500},
			{demand: 0.004, wait: 0.050, rate: 80, period: 210},
			{demand: 0.030, rate: 10, period: 130},
			{demand: 0.0005, wait: 0.002, rate: 20, period: 70},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const cores, bg = 2, 0.2
			p := synth(1, 3600, cores, bg, 0.03, tc.ops)
			c, err := Choose(p, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if c.Picked != "regression" && c.Picked != "kalman" {
				t.Errorf("picked %s: %s", c.Picked, c.Why)
			}
			var load float64
			for _, o := range tc.ops {
				load += o.rate * o.demand
			}
			res := Results(p, c)
			for j, o := range tc.ops {
				r := res[j]
				t.Logf("%s: share %.2f, CPU %.5f ± %.5f s, true %.5f s (%+.1f %%)", p.Ops[j], o.rate*o.demand/load, r.CPU, r.StdErr, o.demand, 100*(r.CPU/o.demand-1))
				if o.rate*o.demand/load < MinShare {
					continue
				}
				// The test's power: a standard error of at most a third of
				// the 10 % allowed.
				if r.StdErr > 0.033*o.demand {
					t.Errorf("%s: standard error %.2g of %.2g: too few windows for the test to be meaningful", p.Ops[j], r.StdErr, o.demand)
				}
				if rel := math.Abs(r.CPU-o.demand) / o.demand; rel > 0.10 {
					t.Errorf("%s: CPU %.5f s, true %.5f s: %.1f %% off", p.Ops[j], r.CPU, o.demand, 100*rel)
				}
				if !(math.Abs(r.CPU-o.demand) <= 4*r.StdErr) {
					t.Errorf("%s: CPU %.5f s ± %.2g, true %.5f s: more than 4 standard errors off", p.Ops[j], r.CPU, r.StdErr, o.demand)
				}
			}
			t.Logf("%s", c.Why)
			if s := scoreOf(c, c.Picked); math.Abs(s.Bias) > 0.05 {
				t.Errorf("predicted utilization %.1f %% off the measured", 100*s.Bias)
			}
			if math.Abs(c.Fit.Background-bg) > 0.1*bg+0.05 {
				t.Errorf("background %.3f cores, true %.3f", c.Fit.Background, bg)
			}
		})
	}
}

// TestApportionBiasedByWaiting checks that cross-validation tells
// apportioning by own time apart when operations wait off the CPU in
// different proportions: its error must exceed the regression's, and the
// choice must not fall on it.
func TestApportionBiasedByWaiting(t *testing.T) {
	p := synth(2, 1200, 2, 0.1, 0.02, []synthOp{
		{demand: 0.005, rate: 100, period: 600},
		{demand: 0.020, wait: 0.080, rate: 30, period: 250},
	})
	c, err := Choose(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	reg, app := scoreOf(c, "regression"), scoreOf(c, "apportion")
	if !(app.CVError > reg.CVError*1.2) || c.Picked == "apportion" {
		t.Errorf("apportion cv error %.3f not clearly above regression's %.3f; picked %s", app.CVError, reg.CVError, c.Picked)
	}
	// Apportioning takes op1's waiting for CPU work: its demands are far
	// off.
	worst := 0.0
	for j, d := range []float64{0.005, 0.020} {
		worst = math.Max(worst, math.Abs(app.Fit.Demands[j]-d)/d)
	}
	if worst < 0.3 {
		t.Errorf("apportion demands %v within 30 %% of the truth despite the waiting", app.Fit.Demands)
	}
}

// TestDeterministic runs Choose twice on the same windows.
func TestDeterministic(t *testing.T) {
	ops := []synthOp{{demand: 0.005, rate: 100, period: 600}, {demand: 0.02, wait: 0.01, rate: 30, period: 250}}
	a, err := Choose(synth(3, 300, 2, 0.1, 0.02, ops), Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Choose(synth(3, 300, 2, 0.1, 0.02, ops), Options{})
	ja, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Errorf("two runs differ:\n%s\n%s", ja, jb)
	}
}

// TestApportionSteadyLoad fits apportioning on windows of one steady load
// (Poisson arrivals at a fixed rate, the CPU half busy), where own times
// hold the waits for the CPU: the work, not the background, must carry the
// busy time, so that the demand holds at other loads. Regressed on the
// windows' own times, which swell with the load faster than the busy time,
// the background took 0.33 to 0.48 of the core here and the demand fell to
// a tenth to a third of its value. The 5 % allowed holds the background
// (2.4 % of the busy time at 80/s), which a fit that cannot tell it from
// the work gives to the work, and the fit's noise.
func TestApportionSteadyLoad(t *testing.T) {
	const demand, bg = 0.010, 0.02
	for seed := range uint64(5) {
		// A period far longer than the run: the rate stays at 50/s.
		p := synth(10+seed, 1800, 1, bg, 0.01, []synthOp{{demand: demand, wait: 0.002, rate: 50, period: 1e12}})
		f, err := Apportion{}.Estimate(p, nil)
		if err != nil {
			t.Fatal(err)
		}
		// The busy time at 1.6 times the rate, by the fit and by the truth.
		got, want := 80*f.Demands[0]+f.Background, 80*demand+bg
		t.Logf("seed %d: demand %.5f s, background %.3f cores (%s); busy at 80/s %.3f, true %.3f", seed, f.Demands[0], f.Background, f.Note, got, want)
		if math.Abs(got-want) > 0.05*want {
			t.Errorf("seed %d: busy at 80/s %.3f cores by the fit, true %.3f", seed, got, want)
		}
	}
}

// TestSteadyLoadNoBackground fits windows of a host without background
// whose operations arrive at steady rates, as in a capture at one load.
// There the background trades off against the demands: kept whenever the
// fit finds one, it took from the demands what it added as a constant, and
// the busy time at twice the load came out short (by up to 11 % on a
// two-service trace). Its 95 % interval holds zero in all but about one
// seed in twenty: at most three of twenty may keep it, and the busy time
// the fit predicts at twice the load must be within 3 % of the truth on
// average over the seeds (the spread of one seed's estimate is about 2 %),
// for the regression and the Kalman filter alike.
func TestSteadyLoadNoBackground(t *testing.T) {
	ops := []synthOp{
		{demand: 0.005, wait: 0.001, rate: 60, period: 1e12},
		{demand: 0.020, wait: 0.010, rate: 15, period: 1e12},
	}
	want := 2 * (60*0.005 + 15*0.020)
	for _, e := range []Estimator{Regression{}, Kalman{}} {
		kept := 0
		var sum float64
		const seeds = 20
		for seed := range uint64(seeds) {
			p := synth(100+seed, 600, 2, 0, 0.01, ops)
			f, err := e.Estimate(p, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := 2*(60*f.Demands[0]+15*f.Demands[1]) + f.Background
			sum += got / want
			if f.Background > 0 {
				kept++
			}
			t.Logf("%s seed %d: demands %.5f %.5f s, background %.4f (%s); busy at twice the load %+.1f %%", e.Name(), seed, f.Demands[0], f.Demands[1], f.Background, f.Note, 100*(got/want-1))
		}
		if kept > 3 {
			t.Errorf("%s kept a background in %d of %d seeds", e.Name(), kept, seeds)
		}
		if mean := sum/seeds - 1; math.Abs(mean) > 0.03 {
			t.Errorf("%s: busy time at twice the load %+.1f %% off on average", e.Name(), 100*mean)
		}
	}
}
