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

// With Poisson's gaps Takács's sum is Erlang's formula, and with one
// server GI/M/1's σ/(1 − σ), for every load that is not a pole of a term.
func TestGIMcClosedForms(t *testing.T) {
	compared := 0
	for _, c := range []int{1, 2, 3, 5, 8, 16, 32, 64} {
		for _, rho := range []float64{0.05, 0.3, 0.55, 0.8, 0.93} {
			a := rho * float64(c)
			got, ok := giMcWait(c, a, 1)
			if !ok {
				continue // a pole: burstyWaitFactor steps around it
			}
			compared++
			want := waitFactor(c, a)
			if math.Abs(got-want) > 1e-9*want+1e-300 {
				t.Errorf("M/M/%d at %.2f: %.12g, Erlang %.12g", c, rho, got, want)
			}
		}
	}
	if compared < 35 {
		t.Errorf("%d of 40 loads compared with Erlang's", compared)
	}
	for _, scv := range []float64{0.25, 2, 4, 9} {
		for _, rho := range []float64{0.1, 0.5, 0.9} {
			k := 1 / scv
			sigma := gapRoot(func(x float64) float64 { return math.Pow(1+(1-x)/(k*rho), -k) })
			want := sigma / (1 - sigma)
			if got := burstyWaitFactor(1, rho, scv); math.Abs(got-want) > 1e-9*want {
				t.Errorf("GI/M/1, scv %g, at %.1f: %.12g, want %.12g", scv, rho, got, want)
			}
		}
	}
}

// Poles: where c(1 − ω) = j for a term j, as at M/M/2 at half load, the
// factor is the limit either side (M/M/2 at half load waits 1/3).
func TestGIMcPole(t *testing.T) {
	if _, ok := giMcWait(2, 1, 1); ok {
		t.Fatal("M/M/2 at half load is a pole of the sum")
	}
	if got := burstyWaitFactor(2, 1, 1.000001); math.Abs(got-1.0/3) > 1e-5 {
		t.Errorf("GI/M/2 at half load with scv 1.000001: %.9g, want 1/3", got)
	}
}

// The factor stays finite, not negative, and grows with the load, on
// hundreds of cores and for bursty and smooth arrivals, where the sum's
// terms overflow a float64 and cancel.
func TestGIMcRange(t *testing.T) {
	for _, c := range []int{1, 7, 48, 256, 1024} {
		for _, scv := range []float64{0.04, 0.5, 2, 25} {
			prev := 0.0
			for i := 1; i <= 99; i++ {
				a := float64(i) / 100 * float64(c)
				f := burstyWaitFactor(c, a, scv)
				if math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
					t.Fatalf("GI/M/%d, scv %g, at %d %%: %g", c, scv, i, f)
				}
				if f < prev*(1-1e-6) {
					t.Errorf("GI/M/%d, scv %g: %g at %d %% after %g", c, scv, f, i, prev)
				}
				prev = f
			}
		}
	}
}

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
