package mva

import (
	"context"
	"math"
	"testing"

	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve"
	"github.com/perfcast/perfcast/solve/sim"
)

func shopWithUsers(t testing.TB, n int) *model.Model {
	t.Helper()
	m, err := model.Load("../../examples/models/shop.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m.Workload("shoppers").Closed.Users = n
	return m
}

// TestShopPopulationsMonotone: from light load to far beyond saturation the
// solver converges, Little's law holds over the cycle, no pool or station
// is used beyond its capacity, and throughput and response time never
// decrease as users are added (to rounding).
func TestShopPopulationsMonotone(t *testing.T) {
	var prevX, prevR float64
	for _, n := range []int{1, 50, 200, 1000, 2000, 3000, 3500, 4000, 4200, 4400, 4500, 4600, 4800, 5000, 6000, 8000, 10000} {
		r := solveModel(t, shopWithUsers(t, n))
		if r.MVA == nil || !r.MVA.Converged {
			t.Fatalf("N=%d: %+v %v", n, r.MVA, r.Warnings)
		}
		w := r.Workloads["shoppers"]
		x, rt := w.Throughput, w.ResponseTime.Mean
		if e := relErr(x*(5+rt), float64(n)); e > 1e-9 {
			t.Errorf("N=%d: X·(Z + R) = %g (rel. error %.2g)", n, x*(5+rt), e)
		}
		for name, res := range r.Resources {
			if res.Utilization > 1+1e-9 {
				t.Errorf("N=%d: %s utilization %g", n, name, res.Utilization)
			}
		}
		if x < prevX*(1-1e-9) || rt < prevR*(1-1e-9) {
			t.Errorf("N=%d: X %.12g R %.12g after X %.12g R %.12g", n, x, rt, prevX, prevR)
		}
		prevX, prevR = x, rt
	}
}

// TestShopLargePopulationsVsSim compares the throughput at 5 000 and
// 10 000 users (the database disk, the catalog's 16 threads and the front
// end's 100 are then saturated) with the simulator's, within its 95 %
// confidence half-width plus the layered approximation's documented error
// there (2.5 %). A million requests take the simulation far past the
// start, when every user thinks; with 50 000 the run is mostly that
// transient and underestimates the response time. Run it with
//
//	go test -run TestShopLargePopulationsVsSim -v ./solve/mva -args -long
func TestShopLargePopulationsVsSim(t *testing.T) {
	if !*long {
		t.Skip("comparison with the simulator runs with -args -long")
	}
	const approx = 0.025
	for _, n := range []int{5000, 10000} {
		m := shopWithUsers(t, n)
		a := solveModel(t, m)
		s, err := sim.New().Solve(context.Background(), m, solve.Options{Seed: 1, Requests: 1_000_000})
		if err != nil {
			t.Fatal(err)
		}
		xa, ws := a.Workloads["shoppers"].Throughput, s.Workloads["shoppers"]
		half := 0.0
		if ci := ws.ThroughputCI95; ci != nil {
			half = (ci[1] - ci[0]) / 2
		}
		e := (xa - ws.Throughput) / ws.Throughput
		t.Logf("N=%d: X mva %.2f sim %.2f ± %.2f (%+.2f %%); R mva %.4f sim %.4f", n, xa, ws.Throughput, half, 100*e,
			a.Workloads["shoppers"].ResponseTime.Mean, ws.ResponseTime.Mean)
		if math.Abs(xa-ws.Throughput) > approx*ws.Throughput+half {
			t.Errorf("N=%d: throughput %.2f against %.2f ± %.2f simulated", n, xa, ws.Throughput, half)
		}
	}
}
