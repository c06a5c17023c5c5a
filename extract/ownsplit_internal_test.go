package extract

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/perfcast/perfcast/ingest"
)

// TestWithinMean feeds the solo sweep a Poisson stream of executions that
// do not slow each other (pure delays) and checks that the executions that
// stayed within a level, weighted, give back the mean own time of all,
// where the raw mean of those within is far short of it, since long
// executions rarely stay within: alone at 160 a second (1.4 executions
// active on average), within seven others at 800 (7.2 on average). Over
// ten seeds the estimates' mean must be within three standard errors of
// the seeds' mean of the truth, and the standard error withinMean gives
// within a factor of two of the estimates' spread over the seeds (1.4 and
// 1.5 times it; 2.3 and 2.5 when the cover's noise was taken to move the
// tail's whole length).
func TestWithinMean(t *testing.T) {
	const n = 60000
	for _, tc := range []struct {
		rate  float64 // executions per second
		cores int
	}{{160, 1}, {800, 8}} {
		level := splitLevel(tc.cores)
		var est, raw, truth, ses []float64
		for seed := range uint64(10) {
			r := rand.New(rand.NewPCG(seed, 3))
			op := &opStats{self: newSample(), solo: newSample()}
			op.initWithin()
			calms := map[string]*calmStats{}
			w := newSoloSweep("h", calms)
			at, sum := 0.0, 0.0
			for range n {
				at += r.ExpFloat64() / tc.rate
				// 2, 6 and 1 ms exponential stages: a mean of 9 ms
				// with an exponential tail of mean 6 ms.
				x := (2*r.ExpFloat64() + 6*r.ExpFloat64() + r.ExpFloat64()) / 1000
				sum += x
				op.self.add(x)
				start := int64(at * 1e9)
				w.add(op, op.component, 0, x, []interval{{start, start + int64(x*1e9)}}, level+1, ingest.TraceID{})
			}
			w.finish()
			m, se, neff := withinMean(op, calms["h"][level], level)
			if !(se > 0) || neff < soloMin {
				t.Fatalf("rate %g, seed %d: estimate %g ± %g from %g executions", tc.rate, seed, m, se, neff)
			}
			est = append(est, m)
			ses = append(ses, se)
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
		sm, _ := meanSD(ses)
		t.Logf("rate %g: standard error %.3f ms on average, the estimates' sd over seeds %.3f ms", tc.rate, 1000*sm, 1000*sd)
		if sm < 0.5*sd || sm > 2*sd {
			t.Errorf("rate %g: standard error %.3f ms on average where the estimates scatter by %.3f ms", tc.rate, 1000*sm, 1000*sd)
		}
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

// TestShareOf checks the posterior of the share of own time that is CPU on
// one core (M/M/1's wait a/(1 − a)): a difference measured to within a
// hair of what a share of 0.3 makes gives 0.3 back, with a narrow
// interval; one whose noise dwarfs every share's growth leaves the uniform
// prior, mean 0.5 and central 95 % from 0.025 to 0.975.
func TestShareOf(t *testing.T) {
	ops := []splitOp{{id: "a", rate: 100, own: 2e-3, within: 1.8e-3, n: 1000}, {id: "b", rate: 50, own: 4e-3}}
	w := func(a float64) float64 { return burstyWaitFactor(1, a, 1) }
	// The growth of a at s = 0.3: the busy cores solved by hand.
	const s = 0.3
	a, ok := busyRoot(0, loadCap, func(a float64) float64 {
		return 100*s*2e-3/(1+s*w(a)) + 50*s*4e-3/(1+s*w(a))
	})
	if !ok {
		t.Fatal("no busy cores at s = 0.3")
	}
	grown := 100 * s * 2e-3 * w(a) / (1 + s*w(a))
	for _, tc := range []struct {
		se                  float64
		mean, lo, hi, slack float64
	}{
		{grown * 1e-3, s, s, s, 0.01},
		{grown * 1e6, 0.5, 0.025, 0.975, 0.01},
	} {
		p, ok := shareOf(&splitHost{ops: ops, c: 1, scv: 1}, grown, tc.se)
		if !ok {
			t.Fatalf("se %g: no posterior", tc.se)
		}
		t.Logf("se %.3g: mean %.4f, 95 %% from %.3f to %.3f", tc.se, p.mean, p.lo, p.hi)
		if math.Abs(p.mean-tc.mean) > tc.slack || math.Abs(p.lo-tc.lo) > tc.slack || math.Abs(p.hi-tc.hi) > tc.slack {
			t.Errorf("se %g: mean %.4f, 95 %% %.3f to %.3f; want %.3f, %.3f to %.3f (± %.2f)", tc.se, p.mean, p.lo, p.hi, tc.mean, tc.lo, tc.hi, tc.slack)
		}
	}
}

// testbedOps are the operations of the testbed's host as the split saw
// them in a run without span CPU times (2026-12-02 05:39, the run
// span-cpu-off; milliseconds and executions per second): each service
// one CPU slot on one core. The catalog's listing, most of the host's
// CPU, grew 3.3 ms where processor sharing at the others' load makes
// 1.3; the payments' charge, 0.4 ms of CPU around a 10 ms sleep, grew
// 0.16.
var testbedOps = []splitOp{
	{id: "catalog/GET /products", comp: "catalog", rate: 27.9, own: 13.13, ownSE: 0.16, within: 9.867, withinSE: 0.049, n: 737},
	{id: "catalog/GET /products/{id}", comp: "catalog", rate: 57.5, own: 0.364, ownSE: 0.024, within: 0.2228, withinSE: 0.0041, n: 4773},
	{id: "gateway/GET /catalog/{category}", comp: "gateway", rate: 27.9, own: 1.21, ownSE: 0.019, within: 0.6448, withinSE: 0.003, n: 287},
	{id: "gateway/GET /recommend/{user}", comp: "gateway", rate: 9.58, own: 0.5885, ownSE: 0.035, within: 0.5051, withinSE: 0.0052, n: 404},
	{id: "gateway/POST /orders", comp: "gateway", rate: 9.7, own: 0.1053, ownSE: 0.0065, within: 0.09131, withinSE: 0.0021, n: 356},
	{id: "orders/POST /orders", comp: "orders", rate: 9.7, own: 1.606, ownSE: 0.083, within: 0.7681, withinSE: 0.01, n: 296},
	{id: "orders/order-confirmations process", comp: "orders", rate: 9.7, own: 0.1616, ownSE: 0.0094, within: 0.1502, withinSE: 0.0088, n: 520},
	{id: "payments/POST /charge", comp: "payments", rate: 9.7, own: 10.61, ownSE: 0.025, within: 10.45, withinSE: 0.012, n: 274},
}

// TestSingleSplit: on the testbed's figures the host's own times, pooled,
// grow as if all CPU, so solveSplit leaves the pooled split to
// singleSplit, which splits the charge alone: its CPU comes out under a
// tenth of its own time (0.4 ms of 10.6; all CPU less its wait, 6.5 ms).
// The gateway's short bursts, which grew a third as much as processor
// sharing says, are not split: their first slice is spared. With the
// charge's growth as all CPU makes it, nothing is split.
func TestSingleSplit(t *testing.T) {
	host := func(ops []splitOp) *splitHost {
		p := &splitHost{ops: ops, c: 1, scv: 1, slice: 1.5e-3, amComp: map[string]float64{},
			slots: map[string]int{"catalog": 1, "gateway": 1, "orders": 1, "payments": 1}}
		for i := range p.ops {
			o := &p.ops[i]
			o.own, o.ownSE, o.within, o.withinSE = o.own*1e-3, o.ownSE*1e-3, o.within*1e-3, o.withinSE*1e-3
		}
		return p
	}
	p := host(slices.Clone(testbedOps))
	hs, ok := solveSplit(p)
	if !ok || hs.only == nil {
		t.Fatalf("split %v, only %v: want the charge split alone", ok, hs.only)
	}
	for i, o := range p.ops {
		charge := o.id == "payments/POST /charge"
		if hs.only[i] != charge {
			t.Errorf("%s: split %v", o.id, hs.only[i])
		}
		if charge && !(hs.demand[i] > 0 && hs.demand[i] < 0.1*o.own) {
			t.Errorf("the charge's CPU %.3g ms, want under a tenth of %.3g", 1e3*hs.demand[i], 1e3*o.own)
		}
	}
	cpu := slices.Clone(testbedOps)
	last := &cpu[len(cpu)-1]
	last.within = last.own - 4.1 // as much as all CPU grows
	if hs, ok := solveSplit(host(cpu)); ok {
		t.Errorf("the charge grown as all CPU: split %v", hs.only)
	}
}

// TestApartSplitRestSingles: on one core whose own times' occupancy
// held the pooled split, the charge (c) grows far less than all-CPU own
// times would and is set apart; the listing (b) carries too much of the
// CPU to be tested then (apartMost), but among the rest, split again
// without the charge, it alone grows less than all-CPU own times would
// (singleSplit), so it is apart too. The lookup (a) grows more than
// all-CPU own times would and stays all CPU, flagged neither told nor
// loose; the listing's flags come before it in the operations, where
// adding it to the apart ones once shifted them onto the lookup.
func TestApartSplitRestSingles(t *testing.T) {
	op := func(id string, rate, own, diff, se float64) splitOp {
		return splitOp{id: id, comp: id, rate: rate, own: own, ownSE: se, within: own - diff, withinSE: se, n: 1000}
	}
	p := &splitHost{
		ops: []splitOp{
			op("b", 30, 8e-3, 1e-3, 0.07e-3),
			op("a", 50, 10e-3, 6e-3, 0.2e-3),
			op("c", 10, 10e-3, 0.1e-3, 0.02e-3),
		},
		amComp: map[string]float64{}, slots: map[string]int{}, c: 1, scv: 1, slice: defaultSlice,
		bound: 0.43, cut: map[string]float64{"c": 0.02},
	}
	if _, ok := p.allCPU(); ok {
		t.Fatal("all-CPU own times keep within the bound: the test needs them beyond it")
	}
	hs := hostSplit{demand: []float64{4.4e-3, 5.5e-3, 4e-3}, bounded: true}
	out, ok := p.apartSplit(hs)
	if !ok {
		t.Fatal("no operation set apart")
	}
	t.Logf("demands %.3g s, apart %v, told %v, loose %v, busy %.3f", out.demand, out.apart, out.own, out.mean, out.busy)
	if !slices.Equal(out.apart, []bool{true, false, true}) {
		t.Errorf("apart %v, want the listing and the charge", out.apart)
	}
	if out.own[1] || out.mean[1] {
		t.Errorf("the lookup flagged told %v, loose %v: it is all CPU", out.own[1], out.mean[1])
	}
	w := burstyWaitFactor(1, out.busy, 1)
	if got, want := out.demand[1], 10e-3/(1+w); math.Abs(got-want) > 1e-6 {
		t.Errorf("the lookup's demand %.4g ms, want all of its own time less the wait, %.4g", 1e3*got, 1e3*want)
	}
	if out.demand[2] > 1e-3 {
		t.Errorf("the charge's demand %.3g ms, want about its growth over the wait", 1e3*out.demand[2])
	}
}
