package extract

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve"
	"github.com/perfcast/perfcast/solve/sim"
)

// Against the simulator: a host of c cores under processor sharing,
// exponential demands of 5 ms, gamma gaps. The simulated mean wait
// (response time less the demand) holds the formula within twice its 95 %
// interval (about four standard errors) in every case. Erlang's wait is
// far off each time: it is the formula the arrivals' cv corrects.
func TestGIMcAgainstSimulator(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates six queues")
	}
	for _, tc := range []struct {
		c       int
		rho, cv float64
	}{{1, 0.5, 2}, {2, 0.55, 2}, {2, 0.3, 2}, {4, 0.55, 2}, {4, 0.8, 1.5}, {8, 0.7, 2}} {
		const demand = 5e-3
		src := fmt.Sprintf(`perfcast: 1
hosts:
  app: {cpu: {cores: %d}}
components:
  svc:
    host: app
    operations:
      op: {steps: [{cpu: exp(5ms)}]}
workload:
  w:
    open: {rate: %g/s, cv: %g}
    steps: [{call: svc/op}]
`, tc.c, tc.rho*float64(tc.c)/demand, tc.cv)
		m, err := model.Parse([]byte(src), "gimc.yaml")
		if err != nil {
			t.Fatal(err)
		}
		res, err := sim.New().Solve(context.Background(), m, solve.Options{Seed: 1, Precision: 0.01})
		if err != nil {
			t.Fatal(err)
		}
		r := res.Workloads["w"].ResponseTime
		got := (r.Mean - demand) / demand
		half := (r.CI95[1] - r.CI95[0]) / 2 / demand
		a := tc.rho * float64(tc.c)
		want := burstyWaitFactor(tc.c, a, tc.cv*tc.cv)
		t.Logf("GI/M/%d at %.2f, cv %g: simulated %.4f ± %.4f, formula %.4f, Erlang %.4f", tc.c, tc.rho, tc.cv, got, half, want, waitFactor(tc.c, a))
		if math.Abs(got-want) > 2*half {
			t.Errorf("GI/M/%d at %.2f, cv %g: simulated %.4f ± %.4f, formula %.4f", tc.c, tc.rho, tc.cv, got, half, want)
		}
	}
}

// BenchmarkBurstyWaitFactor is one window's CPU wait for bursty arrivals,
// on 2 and 64 cores.
func BenchmarkBurstyWaitFactor(b *testing.B) {
	for _, c := range []int{2, 64} {
		b.Run(fmt.Sprintf("cores=%d", c), func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				burstyWaitFactor(c, float64(c)*(0.3+0.001*float64(i%500)), 4)
			}
		})
	}
}
