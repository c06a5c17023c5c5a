package sim

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/perfcast/perfcast/solve"
)

// TestSpeedWindowFast: a CPU whose speed is redrawn far more often than a
// burst lasts serves every burst at the mean of its speeds. With a CPU
// time per unit of work lognormal of mean 1 and coefficient of variation
// v, the mean speed is E[1/X] = 1 + v², so M/M/1 with μ = (1 + v²)/S, and
// the CPU is busy ρ/(1 + v²) of the time. Each discipline reschedules the
// work in progress at each change: a service (FCFS), the virtual time
// (PS), a slice (RR).
func TestSpeedWindowFast(t *testing.T) {
	const lambda, s, v = 14.0, 0.05, 0.5
	mu := (1 + v*v) / s
	for _, sched := range []string{"fcfs", "ps", "rr, quantum: 5ms"} {
		t.Run(sched[:2], func(t *testing.T) {
			host := fmt.Sprintf(`{cpu: {scheduling: %s, speed_variation: %g, speed_window: 1ms}}`, sched, v)
			r := run(t, singleQueue(host, "", `[{cpu: exp(50ms)}]`, lambda), 160000)
			w := wl(t, r, "w")
			within(t, "mean response", w.ResponseTime.Mean, w.ResponseTime.CI95, 1/(mu-lambda), 0)
			cpu := res(t, r, "h.cpu")
			within(t, "utilization", cpu.Utilization, cpu.UtilizationCI95, lambda/mu, 0)
		})
	}
}

// TestSpeedWindowBeyondSpeed: a load the CPU could not carry at its
// speed, 100 % of it, is carried at the mean of its speeds: the fast
// limit again, at ρ = 0.8.
func TestSpeedWindowBeyondSpeed(t *testing.T) {
	const lambda, s, v = 20.0, 0.05, 0.5
	mu := (1 + v*v) / s
	host := fmt.Sprintf(`{cpu: {scheduling: fcfs, speed_variation: %g, speed_window: 1ms}}`, v)
	r := run(t, singleQueue(host, "", `[{cpu: exp(50ms)}]`, lambda), 160000)
	w := wl(t, r, "w")
	within(t, "mean response", w.ResponseTime.Mean, w.ResponseTime.CI95, 1/(mu-lambda), 0)
}

// TestSpeedWindowSlow: a speed that holds far longer than the queue takes
// to settle (20 s against a tenth of a second) gives the mixture of the
// steady states at each speed: M/M/1 with S·X for X lognormal of mean 1,
// each window as likely and as busy as another, so the mean response is
// E[S·X/(1 − λ·S·X)] (computed here over 20 000 quantiles; windows slow
// enough to saturate the CPU, X > 2.5, are rarer than 1 in 10 000), and
// the CPU busy λ·S. Both differ from the steady speed's (16.7 ms) and
// from the fast limit's (15.1 ms).
func TestSpeedWindowSlow(t *testing.T) {
	const lambda, s, v = 40.0, 0.01, 0.25
	sigma := math.Sqrt(math.Log1p(v * v))
	x := distuv.LogNormal{Mu: -sigma * sigma / 2, Sigma: sigma}
	const n = 20000
	want := 0.0
	for i := range n {
		m := x.Quantile((float64(i) + 0.5) / n)
		want += s * m / (1 - lambda*s*m) / n
	}
	for _, sched := range []string{"fcfs", "ps"} {
		t.Run(sched, func(t *testing.T) {
			host := fmt.Sprintf(`{cpu: {scheduling: %s, speed_variation: %g, speed_window: 20s}}`, sched, v)
			r := run(t, singleQueue(host, "", `[{cpu: exp(10ms)}]`, lambda), 2400000)
			w := wl(t, r, "w")
			within(t, "mean response", w.ResponseTime.Mean, w.ResponseTime.CI95, want, 0)
			// The interval tells the mixture from a steady speed.
			if steady := s / (1 - lambda*s); !(math.Abs(w.ResponseTime.Mean-steady) > 2*halfWidth(w.ResponseTime.CI95)) {
				t.Errorf("mean response %.4g ± %.2g: not told from the steady speed's %.4g", w.ResponseTime.Mean, halfWidth(w.ResponseTime.CI95), steady)
			}
			cpu := res(t, r, "h.cpu")
			within(t, "utilization", cpu.Utilization, cpu.UtilizationCI95, lambda*s, 0)
		})
	}
}

// TestSpeedWindowSolvers: the simulator follows a host's speed over time
// when it has a window, and says so; without one it mixes steady states.
// A load that the slowest of those saturates is unstable for the mixture
// and stable over time, so there the simulator follows the speed over
// time too, a new one every second, and says why.
func TestSpeedWindowSolvers(t *testing.T) {
	const src = `{cpu: {scheduling: fcfs, speed_variation: 0.3%s}}`
	mixed, err := New().Solve(t.Context(), parse(t, singleQueue(fmt.Sprintf(src, ""), "", `[{cpu: exp(10ms)}]`, 75)), solve.Options{Seed: 7, Precision: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	fell := false
	for _, w := range mixed.Warnings {
		fell = fell || strings.Contains(w, "unstable at the slowest of 5") && strings.Contains(w, "redrawn every 1s")
	}
	if !mixed.Stable || !fell {
		t.Errorf("75 %% load with a slowest speed ×%.3g: stable %v, warnings %q; want the speed followed over time", 1/solve.SpeedMultipliers(0.3)[solve.SpeedScenarios-1], mixed.Stable, mixed.Warnings)
	}
	r := run(t, singleQueue(fmt.Sprintf(src, ", speed_window: 1s"), "", `[{cpu: exp(10ms)}]`, 75), 200000)
	found := false
	for _, w := range r.Warnings {
		found = found || w == "host h: its CPU speed is redrawn every 1s (speed_variation 0.3)"
	}
	if !found {
		t.Errorf("no warning of the speed window: %q", r.Warnings)
	}
}

// TestSpeedWindowDeterministic: speeds drawn over time keep a run the same
// for the same seed, however many workers run it, on a model with
// replicas (the web host's two draw apart) and every host changing speed.
func TestSpeedWindowDeterministic(t *testing.T) {
	m := exampleModel(t, "shop.yaml")
	for _, h := range m.Hosts {
		h.CPU.SpeedVariation, h.CPU.SpeedWindow = 0.2, 0.05
	}
	var first []byte
	for _, workers := range []int{1, 2, 5} {
		b := encode(t, runModel(t, m, solve.Options{Seed: 3, Requests: requests(40000), Workers: workers}))
		if first == nil {
			first = b
		} else if !bytes.Equal(first, b) {
			t.Errorf("%d workers give a different result:\n%s\nvs\n%s", workers, first, b)
		}
	}
	for _, h := range m.Hosts {
		h.CPU.SpeedWindow = 0
	}
	if bytes.Equal(first, encode(t, runModel(t, m, solve.Options{Seed: 3, Requests: requests(40000), Workers: 1}))) {
		t.Error("the same result with and without speed windows")
	}
}
