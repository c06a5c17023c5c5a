package mva

import (
	"fmt"
	"math"
	"testing"
)

// stretchOf solves the occupancy chain of pools with utilizations u per
// server, mean bursts d and units at servers, keeping levels queue levels
// beyond each pool's units (0: as many as queueLevels keeps).
func stretchOf(t *testing.T, u, d []float64, units []int, servers, levels int) []float64 {
	t.Helper()
	mean, _ := momentsOf(t, u, d, units, servers, levels)
	return mean
}

// momentsOf is stretchOf with the second moments of the stretch factors.
func momentsOf(t *testing.T, u, d []float64, units []int, servers, levels int) (mean, square []float64) {
	t.Helper()
	lambda, mu := make([]float64, len(u)), make([]float64, len(u))
	for g := range u {
		lambda[g] = u[g] * float64(servers) / d[g]
		mu[g] = 1 / d[g]
	}
	load, cap := make([]float64, len(u)+1), make([]float64, len(u)+1)
	for g := range u {
		load[g], cap[g] = u[g], float64(units[g])
	}
	cap[len(u)] = math.Inf(1)
	guess := meanValueStretch(load, cap, servers)
	busy := make([]float64, len(u))
	for g := range u {
		busy[g] = u[g] * float64(servers) * guess[g] / cap[g]
	}
	q := queueLevels(busy, units, 1)
	if levels > 0 {
		q = make([]int, len(u))
		for g := range q {
			q[g] = levels
		}
	}
	o := newOccupancy(servers, lambda, mu, units, q)
	if o == nil {
		t.Fatalf("u %v: chain too large", u)
	}
	if !o.solve() {
		t.Fatalf("u %v: chain did not converge", u)
	}
	square = o.squares()
	if square == nil {
		t.Fatalf("u %v: the tagged bursts' moments did not converge", u)
	}
	return o.stretches(), square
}

// TestOccupancyAgainstExactChain compares the truncated chain with the
// stretches of the full chain (numpy, every pool's queue up to 70
// requests deep for two pools, 30 for three and 16 for four; stationary
// distribution by a dense solve for two, by power iteration for more):
// with many queue levels the truncated chain is that chain (to its three
// printed digits); with two queue levels its error is the truncation's,
// at most 1.4 % in these cases, and with the levels queueLevels keeps
// (4 to 32), 0.3 %.
func TestOccupancyAgainstExactChain(t *testing.T) {
	cases := []struct {
		u, d, exact []float64
	}{
		{[]float64{.3, .3}, []float64{2, 1}, []float64{1.380, 1.380}},
		{[]float64{.6, .3}, []float64{2, 1}, []float64{1.421, 1.843}},
		{[]float64{.55, .14}, []float64{5, .7}, []float64{1.161, 1.633}},
		{[]float64{.2, .35}, []float64{5, .7}, []float64{1.469, 1.268}},
		{[]float64{.05, .45}, []float64{2, 1}, []float64{1.517, 1.057}},
		{[]float64{.4, .15, .1}, []float64{5, .7, .3}, []float64{1.328, 1.687, 1.775}},
		{[]float64{.5, .15, .05}, []float64{5, .7, .3}, []float64{1.247, 1.702, 1.876}},
		{[]float64{.3, .2, .2}, []float64{1, 1, 1}, []float64{1.629, 1.809, 1.809}},
		{[]float64{.25, .25, .25}, []float64{2, 1, .5}, []float64{1.876, 1.871, 1.878}},
		{[]float64{.55, .12, .05}, []float64{5, .7, .2}, []float64{1.204, 1.744, 1.868}},
		{[]float64{.2, .2, .2, .2}, []float64{1, 1, 1, 1}, []float64{2.280, 2.280, 2.280, 2.280}},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.u), func(t *testing.T) {
			units := make([]int, len(c.u))
			for g := range units {
				units[g] = 1
			}
			deep := map[int]int{2: 24, 3: 16, 4: 8}[len(c.u)]
			full := stretchOf(t, c.u, c.d, units, 1, deep)
			short := stretchOf(t, c.u, c.d, units, 1, 2)
			kept := stretchOf(t, c.u, c.d, units, 1, 0)
			for g, e := range c.exact {
				if math.Abs(kept[g]/e-1) > 0.003 {
					t.Errorf("pool %d: the chain with the levels queueLevels keeps gives %.4f, %+.2f %% from the exact chain's %.3f", g, kept[g], 100*(kept[g]/e-1), e)
				}
				if math.Abs(full[g]-e) > 0.0015 {
					t.Errorf("pool %d: %d queue levels give %.4f, the exact chain %.3f", g, deep, full[g], e)
				}
				if math.Abs(short[g]/e-1) > 0.014 {
					t.Errorf("pool %d: %d queue levels give %.4f, %+.1f %% from the exact chain's %.3f", g, 2, short[g], 100*(short[g]/e-1), e)
				}
			}
		})
	}
}

// TestOccupancyLevelsKept: for pools of several units and stations of
// several servers, the levels queueLevels keeps give the stretches of the
// chain with 24, 16 or 8 queue levels per pool (two, three or four pools)
// to 0.6 % (four pools of two units at 90 % of one server; 0.3 % where the
// chain has room for more levels).
func TestOccupancyLevelsKept(t *testing.T) {
	cases := []struct {
		u, d    []float64
		units   []int
		servers int
	}{
		{[]float64{.35, .3, .2}, []float64{5, .7, .3}, []int{2, 2, 2}, 1},
		{[]float64{.3, .3, .2, .1}, []float64{2, 1, 1, .5}, []int{2, 2, 2, 2}, 1},
		{[]float64{.4, .3, .15}, []float64{5, .7, .3}, []int{2, 1, 3}, 2},
		{[]float64{.45, .4}, []float64{2, 1}, []int{4, 1}, 4},
	}
	for _, c := range cases {
		deep := stretchOf(t, c.u, c.d, c.units, c.servers, map[int]int{2: 24, 3: 16, 4: 8}[len(c.u)])
		kept := stretchOf(t, c.u, c.d, c.units, c.servers, 0)
		for g := range c.u {
			if math.Abs(kept[g]/deep[g]-1) > 0.006 {
				t.Errorf("%v, units %v, %d servers: pool %d stretched %.4f with the levels kept, %.4f with many", c.u, c.units, c.servers, g, kept[g], deep[g])
			}
		}
	}
}

// TestOccupancyClosedForms checks the chain where queueing theory gives
// the answer: a pool with as many units as servers never shares them
// (stretch 1, and so E[F²] = 1); two pools of one unit each at two servers
// never share; a pool of many units alone at one server is an M/M/1
// processor-sharing queue as long as its units are seldom all taken:
// stretch 1/(1−ρ), and the sojourn time T of a job of exponential size
// has E[T²]·μ² = 4/((1−ρ)²(2−ρ)), so E[F²] = 2/((1−ρ)²(2−ρ)).
func TestOccupancyClosedForms(t *testing.T) {
	if s, f2 := momentsOf(t, []float64{.7}, []float64{1}, []int{2}, 2, 0); math.Abs(s[0]-1) > 1e-9 || math.Abs(f2[0]-1) > 1e-9 {
		t.Errorf("two units at two servers: stretch %.6f, E[F²] %.6f, want 1", s[0], f2[0])
	}
	if s, f2 := momentsOf(t, []float64{.4, .3}, []float64{1, 3}, []int{1, 1}, 2, 0); math.Abs(s[0]-1) > 1e-9 || math.Abs(s[1]-1) > 1e-9 ||
		math.Abs(f2[0]-1) > 1e-9 || math.Abs(f2[1]-1) > 1e-9 {
		t.Errorf("two one-unit pools at two servers: stretches %v, E[F²] %v, want 1", s[:2], f2[:2])
	}
	for _, rho := range []float64{.3, .5, .8} {
		// P(n ≥ 120) = ρ^120 is below 1e-11.
		s, f2 := momentsOf(t, []float64{rho}, []float64{1}, []int{120}, 1, 0)
		if want := 1 / (1 - rho); math.Abs(s[0]/want-1) > 1e-6 {
			t.Errorf("ρ = %g, 120 units at one server: stretch %.6f, M/M/1 %.6f", rho, s[0], want)
		}
		if want := 2 / ((1 - rho) * (1 - rho) * (2 - rho)); math.Abs(f2[0]/want-1) > 1e-6 {
			t.Errorf("ρ = %g, 120 units at one server: E[F²] %.6f, M/M/1 processor sharing %.6f", rho, f2[0], want)
		}
	}
}

// TestCoupledSlotsAgainstExactChain solves two services limited to one
// thread each on one core (solve/testdata/coupled-slots.yaml: bursts of
// 2 and 1 ms) and compares with the exact chain (the occupancy chain with
// 60 queue levels, whose tail is then below 1e-9 of the mass here). The
// pools' utilizations, the bursts' stretch times the load, and the
// response times are within 0.5 %. (Before the pool's wait was scaled by
// the chain's runs, it took successive holding times as independent,
// while bursts stretched by the other service's presence come in runs:
// 1.5–4.2 % short at 55–60 % of the core in all, and at 80–90 % the
// busier pool's 11–32 % short. Before the chain's levels were sized by
// the pools' busy time rather than their demand alone, 200 and 500/s was
// 9.6 % short on b.)
func TestCoupledSlotsAgainstExactChain(t *testing.T) {
	cases := []struct{ rateA, rateB float64 }{
		{150, 250}, {150, 300}, {300, 300}, {200, 500}, {100, 600},
	}
	for _, c := range cases {
		r := solveStable(t, coupledSlots(t, "exp(2ms)", "exp(1ms)", c.rateA, c.rateB))
		la, lb := c.rateA/1000, c.rateB/1000 // per ms
		o := newOccupancy(1, []float64{la, lb}, []float64{1. / 2, 1}, []int{1, 1}, []int{60, 60})
		if !o.solve() {
			t.Fatalf("%v: the exact chain did not converge", c)
		}
		for g, name := range []string{"a", "b"} {
			var n, busy float64
			for s, p := range o.pi {
				l := o.level[2*s+g]
				n += p * float64(l)
				if l > 0 {
					busy += p
				}
			}
			wantR := n / o.lambda[g] / 1000
			gotR := r.Workloads["w"+name].ResponseTime.Mean
			gotU := r.Resources[name+"-slot"].Utilization
			t.Logf("rates %g and %g/s, %s: R %.2f ms, exact %.2f ms (%+.1f %%); pool %.3f, exact %.3f", c.rateA, c.rateB, name, 1e3*gotR, 1e3*wantR, 100*(gotR/wantR-1), gotU, busy)
			if math.Abs(gotU/busy-1) > 0.005 {
				t.Errorf("rates %g and %g/s: pool %s %.4f busy, exact chain %.4f", c.rateA, c.rateB, name, gotU, busy)
			}
			if math.Abs(gotR/wantR-1) > 0.005 {
				t.Errorf("rates %g and %g/s: %s's response time %.3f ms, exact chain %.3f ms (%+.2f %%)", c.rateA, c.rateB, name, 1e3*gotR, 1e3*wantR, 100*(gotR/wantR-1))
			}
		}
	}
}
