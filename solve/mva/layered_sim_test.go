package mva

import (
	"context"
	"flag"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve"
	"github.com/perfcast/perfcast/solve/sim"
)

var long = flag.Bool("long", false, "run the layered approximation against the simulator (minutes)")

// layeredFamily is the family of pool and lock models the layered
// approximation is measured on: for each pool size c and target load, a
// request does some CPU work, then holds one unit of a pool (a passive
// resource, a component's thread pool, or a lock in front of a pool) while
// it computes and waits for an unmodelled service (a delay); the host has
// ⌈c/2⌉ cores. The open rate is set so that the pool's raw holding time
// (without queueing) would keep it busy the target fraction of the time.
func layeredFamily() []struct {
	name string
	src  string
} {
	var out []struct{ name, src string }
	for _, c := range []int{1, 2, 4, 8, 16, 32} {
		cores := max(1, (c+1)/2)
		for _, load := range []float64{0.1, 0.3, 0.5, 0.7, 0.9} {
			hold := 0.002 + 0.008 // cpu + delay inside
			rate := load * float64(c) / hold
			out = append(out, struct{ name, src string }{
				fmt.Sprintf("passive c=%d load=%.1f", c, load),
				fmt.Sprintf(`perfcast: 1
hosts: {h: {cpu: {cores: %d}}}
components:
  app:
    host: h
    operations:
      op:
        steps:
          - cpu: exp(1ms)
          - hold: {resource: pool, steps: [{cpu: exp(2ms)}, {delay: exp(8ms)}]}
passive:
  pool: {capacity: %d}
workload:
  w: {open: {rate: %g}, steps: [{call: app/op}]}
`, cores, c, rate)})
			out = append(out, struct{ name, src string }{
				fmt.Sprintf("threads c=%d load=%.1f", c, load),
				fmt.Sprintf(`perfcast: 1
hosts: {h: {cpu: {cores: %d}}, remote: {}}
components:
  front:
    host: h
    operations:
      in: {steps: [{cpu: exp(1ms)}, {call: app/op}]}
  app:
    host: h
    threads: %d
    operations:
      op:
        steps:
          - cpu: exp(2ms)
          - call: svc/q
  svc:
    host: remote
    operations:
      q: {steps: [{delay: exp(8ms)}]}
workload:
  w: {open: {rate: %g}, steps: [{call: front/in}]}
`, cores, c, rate)})
			// A lock held briefly inside the pool, and a closed population.
			users := max(1, int(math.Round(load*float64(c)*3)))
			out = append(out, struct{ name, src string }{
				fmt.Sprintf("closed+lock c=%d users=%d", c, users),
				fmt.Sprintf(`perfcast: 1
hosts: {h: {cpu: {cores: %d}}}
components:
  app:
    host: h
    operations:
      op:
        steps:
          - cpu: exp(1ms)
          - hold:
              resource: pool
              steps:
                - delay: exp(8ms)
                - hold: {resource: lock, steps: [{cpu: exp(%gms)}]}
passive:
  pool: {capacity: %d}
  lock: {capacity: 1}
workload:
  w: {closed: {users: %d, think: exp(20ms)}, steps: [{call: app/op}]}
`, cores, 2/float64(c), c, users)})
		}
	}
	return out
}

// TestLayeredVsSim compares the layered approximation with the simulator
// on the family above and prints the distribution of relative errors of the
// mean response time and the utilizations. Run it with
//
//	go test -run TestLayeredVsSim -v ./solve/mva -args -long
func TestLayeredVsSim(t *testing.T) {
	if !*long {
		t.Skip("comparison with the simulator runs with -args -long")
	}
	var errR, errU []float64
	var lines []string
	for _, tc := range layeredFamily() {
		m, err := model.Parse([]byte(tc.src), tc.name)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		a, err := New().Solve(context.Background(), m, solve.Options{})
		if err != nil {
			t.Fatalf("%s: mva: %v", tc.name, err)
		}
		s, err := sim.New().Solve(context.Background(), m, solve.Options{Seed: 1, Precision: 0.01})
		if err != nil {
			t.Fatalf("%s: sim: %v", tc.name, err)
		}
		if !a.Stable || !s.Stable {
			lines = append(lines, fmt.Sprintf("%-28s unstable (mva %v, sim %v)", tc.name, a.Stable, s.Stable))
			continue
		}
		ra, rs := a.Workloads["w"].ResponseTime.Mean, s.Workloads["w"].ResponseTime.Mean
		eR := (ra - rs) / rs
		errR = append(errR, math.Abs(eR))
		line := fmt.Sprintf("%-28s R mva %.5f sim %.5f err %+6.1f%%", tc.name, ra, rs, 100*eR)
		for _, res := range []string{"pool", "app.threads", "lock", "h.cpu"} {
			ua, ok1 := a.Resources[res]
			us, ok2 := s.Resources[res]
			if !ok1 || !ok2 || us.Utilization < 0.01 {
				continue
			}
			eU := (ua.Utilization - us.Utilization) / us.Utilization
			errU = append(errU, math.Abs(eU))
			line += fmt.Sprintf("  U(%s) %.3f/%.3f %+5.1f%%", res, ua.Utilization, us.Utilization, 100*eU)
		}
		lines = append(lines, line)
	}
	t.Log("\n" + strings.Join(lines, "\n"))
	t.Logf("response time |rel. error|: %s", summary(errR))
	t.Logf("utilization   |rel. error|: %s", summary(errU))
}

func summary(x []float64) string {
	if len(x) == 0 {
		return "no data"
	}
	s := append([]float64(nil), x...)
	sort.Float64s(s)
	q := func(p float64) float64 { return s[int(math.Ceil(p*float64(len(s))))-1] }
	return fmt.Sprintf("n=%d median %.1f%% p90 %.1f%% max %.1f%%", len(s), 100*q(0.5), 100*q(0.9), 100*s[len(s)-1])
}
