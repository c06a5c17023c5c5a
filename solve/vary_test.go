package solve_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve"
	"github.com/perfcast/perfcast/solve/mva"
	"github.com/perfcast/perfcast/solve/sim"
)

// variedModel is speedModel's M/M/1 queue of 10 ms at 60/s without the
// curve, first come first served (so that the response time is
// exponential), and with a CPU time that wanders with a coefficient of
// variation of 0.25.
var variedModel = strings.Replace(speedModel,
	"app: {cpu: {speed_curve: [{utilization: 0, factor: 0.8}, {utilization: 1, factor: 1.2}]}}",
	"app: {cpu: {speed_variation: 0.25, scheduling: fcfs}}", 1)

// variedTheory is, for variedModel at rate lambda, the utilization and
// the mean and p95 of the response time averaged over the speed strata:
// in stratum j the queue is M/M/1 with service time 10 ms × m_j, whose
// response time is exponential with rate 1/s − λ; the open rate is the
// same in each, so each weighs alike.
func variedTheory(lambda float64) (u, mean, p95 float64) {
	m := solve.SpeedMultipliers(0.25)
	rates := make([]float64, len(m))
	for j, f := range m {
		s := 0.010 * f
		u += lambda * s / float64(len(m))
		rates[j] = 1/s - lambda
		mean += 1 / rates[j] / float64(len(m))
	}
	surv := func(t float64) float64 {
		v := 0.0
		for _, r := range rates {
			v += math.Exp(-r*t) / float64(len(rates))
		}
		return v
	}
	lo, hi := 0.0, 10.0
	for range 200 {
		mid := (lo + hi) / 2
		if surv(mid) > 0.05 {
			lo = mid
		} else {
			hi = mid
		}
	}
	return u, mean, lo
}

// TestSpeedVariationMM1: both solvers average the M/M/1 queue over the
// speed strata. The analytical solver is exact; the simulated mean must
// hold the theory in its confidence interval and the p95 lie within the
// tolerance of percentileTolerance in the sim package (five half-widths
// of the mean plus the sketch's 0.5 %), which holds for a mixture of
// exponentials as for one. The variation makes the queue slower than at
// the mean speed: 33.1 ms against 25 ms.
func TestSpeedVariationMM1(t *testing.T) {
	if !strings.Contains(variedModel, "speed_variation: 0.25") {
		t.Fatal("speedModel's host line changed: variedModel is not varied")
	}
	m, err := model.Parse([]byte(variedModel), "varied.yaml")
	if err != nil {
		t.Fatal(err)
	}
	u, mean, p95 := variedTheory(60)
	if steady := 0.010 / (1 - 0.6); !(mean > 1.2*steady) {
		t.Fatalf("theory %g not above the steady speed's %g: the case does not test the mixture", mean, steady)
	}
	ctx := context.Background()
	res, err := mva.New().Solve(ctx, m, solve.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Workloads["w"].ResponseTime.Mean; math.Abs(got-mean) > 1e-9*mean {
		t.Errorf("mva response time %g, theory %g", got, mean)
	}
	if got := res.Resources["app.cpu"].Utilization; math.Abs(got-u) > 1e-9 {
		t.Errorf("mva utilization %g, theory %g", got, u)
	}
	if !hasWarning(res, "averaged over 5 equally likely CPU speeds of app") {
		t.Errorf("mva warnings %q say nothing of the speeds", res.Warnings)
	}
	res, err = sim.New().Solve(ctx, m, solve.Options{Seed: 5, Precision: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	rt := res.Workloads["w"].ResponseTime
	if rt.CI95 == nil || mean < rt.CI95[0] || mean > rt.CI95[1] {
		t.Errorf("simulated response time %g (95 %% CI %v), theory %g", rt.Mean, rt.CI95, mean)
	}
	relHW := (rt.CI95[1] - rt.CI95[0]) / 2 / rt.Mean
	if tol := 0.005 + 5*relHW; rt.P95 == nil || math.Abs(*rt.P95-p95) > tol*p95 {
		t.Errorf("simulated p95 %v, theory %g (tolerance %.2g)", fmtp(rt.P95), p95, tol)
	}
	if got := res.Resources["app.cpu"].Utilization; math.Abs(got-u) > 0.01 {
		t.Errorf("simulated utilization %g, theory %g", got, u)
	}
}

// TestSpeedVariationUnstable: at 85 % of the mean speed's capacity the
// slowest stratum (×1.38 the CPU time at a variation of 0.25) is
// overloaded. The analytical solver says the mixture is unstable; the
// simulator follows the speed over time instead, a new one every second,
// and gives what the model with that speed_window gives, with a warning
// that says so. At 110 % of it, beyond what even the mean of the speeds
// (1 + 0.25² times the speed) can serve, both say unstable.
func TestSpeedVariationUnstable(t *testing.T) {
	parse := func(src string) *model.Model {
		t.Helper()
		m, err := model.Parse([]byte(src), "varied.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	m := parse(strings.Replace(variedModel, "60/s", "85/s", 1))
	if f := solve.SpeedMultipliers(0.25); !(0.85*f[len(f)-1] > 1) {
		t.Fatalf("slowest factor %g does not overload the case", f[len(f)-1])
	}
	opts := solve.Options{Seed: 1}
	res, err := mva.New().Solve(context.Background(), m, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Stable || res.Bottleneck != "app.cpu" || !hasWarning(res, "unstable at the slowest of 5") {
		t.Errorf("mva: stable %v, bottleneck %q, warnings %q", res.Stable, res.Bottleneck, res.Warnings)
	}
	res, err = sim.New().Solve(context.Background(), m, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Stable || !hasWarning(res, "unstable at the slowest of 5") || !hasWarning(res, "redrawn every 1s") {
		t.Fatalf("sim: stable %v, warnings %q", res.Stable, res.Warnings)
	}
	windowed := parse(strings.Replace(strings.Replace(variedModel, "60/s", "85/s", 1), "speed_variation: 0.25,", "speed_variation: 0.25, speed_window: 1s,", 1))
	want, err := sim.New().Solve(context.Background(), windowed, opts)
	if err != nil {
		t.Fatal(err)
	}
	if got, w := res.Workloads["w"].ResponseTime.Mean, want.Workloads["w"].ResponseTime.Mean; got != w {
		t.Errorf("sim: mean response %g, the model with speed_window 1s %g", got, w)
	}
	over := parse(strings.Replace(variedModel, "60/s", "110/s", 1))
	for _, s := range []solve.Solver{mva.New(), sim.New()} {
		res, err := s.Solve(context.Background(), over, opts)
		if err != nil {
			t.Fatal(err)
		}
		if res.Stable || res.Bottleneck != "app.cpu" || !hasWarning(res, "unstable at the slowest of 5") {
			t.Errorf("%s at 110/s: stable %v, bottleneck %q, warnings %q", s.Name(), res.Stable, res.Bottleneck, res.Warnings)
		}
	}
}

func hasWarning(r *solve.Result, part string) bool {
	for _, w := range r.Warnings {
		if strings.Contains(w, part) {
			return true
		}
	}
	return false
}

func fmtp(p *float64) any {
	if p == nil {
		return "none"
	}
	return *p
}

// TestSolveVariedStopsAtUnstable: SolveVaried solves the scenario with the
// host at its slowest speed first, and where that one is unstable it
// solves no other (a timed solver once more, with the fallback window);
// where it is stable, all five, each once.
func TestSolveVariedStopsAtUnstable(t *testing.T) {
	slowest := func() float64 {
		f := solve.SpeedMultipliers(0.25)
		return 1 / f[len(f)-1]
	}()
	for _, tc := range []struct {
		rate  string
		timed bool
		calls int
	}{
		{"60/s", false, 5},
		{"60/s", true, 5},
		{"85/s", false, 1},
		{"85/s", true, 2},
	} {
		m, err := model.Parse([]byte(strings.Replace(variedModel, "60/s", tc.rate, 1)), "varied.yaml")
		if err != nil {
			t.Fatal(err)
		}
		var speeds, windows []float64
		seen := map[int]bool{}
		res, err := solve.SolveVaried(context.Background(), m, tc.timed, func(ctx context.Context, c *model.Model, j, of int) (*solve.Result, error) {
			cpu := c.Host("app").CPU
			speeds, windows = append(speeds, cpu.Speed), append(windows, cpu.SpeedWindow)
			seen[j] = true
			if cpu.VariesOverTime() {
				// The fallback: stable when followed over time.
				return &solve.Result{Stable: true}, nil
			}
			return mva.New().Solve(ctx, c, solve.Options{})
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(speeds) != tc.calls || math.Abs(speeds[0]-slowest) > 1e-12 {
			t.Errorf("%s timed %v: speeds solved %v, want %d calls starting at %g", tc.rate, tc.timed, speeds, tc.calls, slowest)
			continue
		}
		if tc.calls == 5 && len(seen) != 5 {
			t.Errorf("%s timed %v: scenario indices %v, want 0 to 4 once each", tc.rate, tc.timed, seen)
		}
		if want := tc.rate == "60/s" || tc.timed; res.Stable != want {
			t.Errorf("%s timed %v: stable %v, want %v", tc.rate, tc.timed, res.Stable, want)
		}
		if tc.timed && tc.rate == "85/s" && windows[1] != solve.FallbackSpeedWindow {
			t.Errorf("85/s timed: the second solve's window %g, want %g", windows[1], solve.FallbackSpeedWindow)
		}
	}
}
