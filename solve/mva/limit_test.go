package mva

import (
	"context"
	"strings"
	"testing"

	"github.com/perfcast/perfcast/solve"
	"github.com/perfcast/perfcast/solve/sim"
)

// TestLimitCapacity: the solver takes a CPU limit as its capacity. Users
// who never think saturate it, and the throughput is the limit over the
// demand, exactly; the utilization is of the cores, the limit utilization
// 1. An open load above the limit but below the cores is unstable, and
// the model is reported outside the solver's reach.
func TestLimitCapacity(t *testing.T) {
	for _, tc := range []struct {
		cpu          string
		users, cores int
		limit        float64
	}{
		{"{limit: 0.5}", 1, 1, 0.5},
		{"{cores: 2, limit: 1500m}", 3, 2, 1.5},
		{"{cores: 4, limit: 1}", 2, 4, 1},
	} {
		r := solveStable(t, `perfcast: 1
hosts: {h: {cpu: `+tc.cpu+`}}
components: {c: {host: h, operations: {op: {steps: [{cpu: exp(30ms)}]}}}}
workload: {w: {closed: {users: `+ftoa(float64(tc.users))+`, think: 0s}, steps: [{call: c/op}]}}
`)
		want := tc.limit / 0.030
		if tc.users < int(tc.limit+0.5) {
			want = float64(tc.users) / 0.030 * tc.limit / float64(tc.cores)
		}
		near(t, tc.cpu+" throughput", r.Workloads["w"].Throughput, want, 1e-9)
		cpu := r.Resources["h.cpu"]
		near(t, tc.cpu+" utilization", cpu.Utilization, want*0.030/float64(tc.cores), 1e-9)
		if cpu.LimitUtilization == nil {
			t.Fatalf("%s: no limit utilization", tc.cpu)
		}
		near(t, tc.cpu+" limit utilization", *cpu.LimitUtilization, want*0.030/tc.limit, 1e-9)
	}
	m := parse(t, `perfcast: 1
hosts: {h: {cpu: {cores: 2, limit: 0.6}}}
components: {c: {host: h, operations: {op: {steps: [{cpu: exp(10ms)}]}}}}
workload: {w: {open: {rate: 70}, steps: [{call: c/op}]}}
`)
	r := solveModel(t, m)
	if r.Stable || r.Bottleneck != "h.cpu" || r.Saturation == nil {
		t.Fatalf("0.7 cores against a limit of 0.6: stable %v, bottleneck %q", r.Stable, r.Bottleneck)
	}
	near(t, "saturation rate", r.Saturation.At["workload.w.open.rate"], 60, 1e-9)
	if ok, reasons := Supports(m); ok || !strings.Contains(strings.Join(reasons, "; "), "CPU limit") {
		t.Errorf("supports a CPU limit: %v %v", ok, reasons)
	}
}

// TestLimitAgainstSimulator compares the solver's view of a limit, its
// capacity at all times, with the simulator's quota, period by period, on
// open loads the limit throttles. On these loads the capacity view waits
// more, 1.45 to 1.9 times: under a fractional limit a request alone runs
// at the limit's pace instead of full speed, and where the limit is below
// the cores it leaves them unused, while the quota's stalls make waits the
// capacity view lacks. The band holds these measured sizes, not a bound
// from theory: it guards the approximation against getting worse, and
// why auto leaves limited CPUs to the simulator. A limit that does not
// bind changes nothing.
func TestLimitAgainstSimulator(t *testing.T) {
	for _, tc := range []struct {
		cpu      string
		rate     float64
		min, max float64 // the solver's mean over the simulator's
	}{
		{"{cores: 2, limit: 1}", 80, 1, 2},
		{"{limit: 0.5}", 40, 1, 2},
		{"{cores: 8, limit: 2}", 150, 1, 2},
		{"{cores: 2, limit: 2}", 80, 0.97, 1.03},
	} {
		m := parse(t, `perfcast: 1
hosts: {h: {cpu: `+tc.cpu+`}}
components: {c: {host: h, operations: {op: {steps: [{cpu: exp(10ms)}]}}}}
workload: {w: {open: {rate: `+ftoa(tc.rate)+`}, steps: [{call: c/op}]}}
`)
		a := solveModel(t, m)
		s, err := sim.New().Solve(context.Background(), m, solve.Options{Seed: 3, Requests: 200000})
		if err != nil {
			t.Fatal(err)
		}
		ra, rs := a.Workloads["w"].ResponseTime.Mean, s.Workloads["w"].ResponseTime.Mean
		if q := ra / rs; !(q >= tc.min && q <= tc.max) {
			t.Errorf("%s at %g/s: solver %.4g s, simulator %.4g s: ratio %.3g outside [%g, %g]", tc.cpu, tc.rate, ra, rs, q, tc.min, tc.max)
		} else {
			t.Logf("%s at %g/s: solver %.4g s, simulator %.4g s (ratio %.3g)", tc.cpu, tc.rate, ra, rs, q)
		}
	}
}
