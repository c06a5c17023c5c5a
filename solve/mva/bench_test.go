package mva

import (
	"context"
	"fmt"
	"testing"

	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve"
)

// benchDemand is a fixed spread of demands in [1 ms, 10 ms).
func benchDemand(i, j int) float64 {
	return 0.001 * (1 + float64((i*7919+j*104729)%900)/100)
}

// BenchmarkExactSingleClass is exact MVA for one class of 10 000 users on
// 50 single-server stations.
func BenchmarkExactSingleClass(b *testing.B) {
	benchExactSingle(b, 0)
}

// BenchmarkExactSingleClassMultiServer is the same with 10 of the 50
// stations having 4 servers (load-dependent).
func BenchmarkExactSingleClassMultiServer(b *testing.B) {
	benchExactSingle(b, 10)
}

func benchExactSingle(b *testing.B, multi int) {
	K := 50
	st := make([]station, K)
	d := make([]float64, K)
	for k := range st {
		st[k] = station{servers: 1, copies: 1}
		if k < multi {
			st[k].servers = 4
		}
		d[k] = benchDemand(k, 0)
	}
	cn := &closedNet{stations: st, users: []float64{10000}, think: []float64{1}, demand: [][]float64{d}}
	b.ResetTimer()
	for b.Loop() {
		cn.solve(defaultSolveOptions())
	}
}

// BenchmarkApproxMultiClass is approximate MVA for 20 classes of 50 users
// each on 100 stations, 20 of them with 4 servers.
func BenchmarkApproxMultiClass(b *testing.B) {
	K, C := 100, 20
	st := make([]station, K)
	for k := range st {
		st[k] = station{servers: 1, copies: 1}
		if k%5 == 0 {
			st[k].servers = 4
		}
	}
	cn := &closedNet{stations: st, users: make([]float64, C), think: make([]float64, C), demand: matrix(C, K)}
	for c := 0; c < C; c++ {
		cn.users[c] = 50
		cn.think[c] = 0.5
		for k := 0; k < K; k++ {
			cn.demand[c][k] = benchDemand(k, c+1) / 4
		}
	}
	b.ResetTimer()
	for b.Loop() {
		s := cn.solve(defaultSolveOptions())
		if !s.converged || s.method != methodSchweitzer {
			b.Fatal(s.method, s.converged)
		}
	}
}

// BenchmarkSolveShop is a whole Solve of the shop example (closed, pools,
// fork/join, a send).
func BenchmarkSolveShop(b *testing.B) { benchSolve(b, "../../examples/models/shop.yaml") }

// BenchmarkSolveTestbedVaried is BenchmarkSolveTestbed with the host's
// speed varying (speed_variation 0.1): five solves and their mixture.
func BenchmarkSolveTestbedVaried(b *testing.B) {
	benchSolve(b, "../testdata/testbed-reference.yaml", func(m *model.Model) {
		for _, h := range m.Hosts {
			h.CPU.SpeedVariation = 0.1
		}
	})
}

// BenchmarkSolveTestbedBursty is BenchmarkSolveTestbed with every open
// workload's arrivals of cv 1.06, as the example data's browse shows:
// the arrivals' squared cvs are followed through the model, and Supports
// weighs what rides on them with two more solutions (arrivalMisjudged).
func BenchmarkSolveTestbedBursty(b *testing.B) {
	benchSolve(b, "../testdata/testbed-reference.yaml", func(m *model.Model) {
		for _, w := range m.Workloads {
			if w.Open != nil {
				w.Open.CV = 1.06
			}
		}
	})
}

// benchSolve times whole Solves of the model in the file at path, changed
// by edit first when given.
func benchSolve(b *testing.B, path string, edit ...func(*model.Model)) {
	m, err := model.Load(path)
	if err != nil {
		b.Fatal(err)
	}
	for _, e := range edit {
		e(m)
	}
	for b.Loop() {
		if _, err := New().Solve(context.Background(), m, solve.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkShopUsers is a whole Solve of the shop example at growing
// closed populations, below (1 000, 2 500), near (5 000) and far beyond
// (10 000) the saturation of its database disk and thread pools.
func BenchmarkShopUsers(b *testing.B) {
	base, err := model.Load("../../examples/models/shop.yaml")
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{1000, 2500, 5000, 10000} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			m, err := base.Clone()
			if err != nil {
				b.Fatal(err)
			}
			m.Workload("shoppers").Closed.Users = n
			for b.Loop() {
				r, err := New().Solve(context.Background(), m, solve.Options{})
				if err != nil {
					b.Fatal(err)
				}
				if !r.MVA.Converged {
					b.Fatalf("N=%d: not converged: %+v", n, r.MVA)
				}
			}
		})
	}
}

// BenchmarkSolveTestbed is a whole Solve of a model extracted from the
// testbed (solve/testdata/testbed-reference.yaml: four services limited to
// one thread each on one core, whose occupancy chain gives the stretches,
// connections around the catalog's slot, a fan-out of six).
func BenchmarkSolveTestbed(b *testing.B) { benchSolve(b, "../testdata/testbed-reference.yaml") }

// BenchmarkClosedReplicas is a whole Solve of two closed workloads of 200
// users each (the damped iteration) or of the first alone (solved by its
// throughput) on sixteen replicas of four cores, at the CPU and at a pool
// of four in each replica, balanced random (each replica queues apart)
// and least-busy (one queue of all of them and the excess of joining the
// shortest as a delay: closedNet.solveJoined's fixed point, or
// state.joinedPool and the joined curves).
func BenchmarkClosedReplicas(b *testing.B) {
	for _, bc := range []struct {
		balancer  model.Balancer
		workloads int
	}{{model.Random, 2}, {model.LeastBusy, 2}, {model.Random, 1}, {model.LeastBusy, 1}} {
		second := "\n  b: {closed: {users: 200, think: exp(80ms)}, steps: [{call: app/op}]}"
		if bc.workloads == 1 {
			second = ""
		}
		b.Run(fmt.Sprintf("%s/workloads=%d", bc.balancer, bc.workloads), func(b *testing.B) {
			benchConverged(b, fmt.Sprintf(`perfcast: 1
hosts: {h: {replicas: 16, balancer: %s, cpu: {cores: 4}}}
components:
  app: {host: h, operations: {op: {steps: [{cpu: exp(10ms)}, {hold: {resource: conn, steps: [{delay: exp(20ms)}]}}]}}}
passive: {conn: {capacity: 4, host: h}}
workload:
  a: {closed: {users: 200, think: exp(50ms)}, steps: [{call: app/op}]}%s
`, bc.balancer, second))
		})
	}
}

// BenchmarkMixed is a whole Solve of an open workload (400 requests/s)
// beside one closed workload of 40 users (solved by its throughput, the
// pool's curve on the rates the open requests leave, sharedServers) or
// two of 40 and 20 (the damped iteration), on sixteen cores and a pool
// of eight that both kinds take.
func BenchmarkMixed(b *testing.B) {
	for _, workloads := range []int{1, 2} {
		second := "\n  c: {closed: {users: 20, think: exp(80ms)}, steps: [{call: app/op}]}"
		if workloads == 1 {
			second = ""
		}
		b.Run(fmt.Sprintf("closed=%d", workloads), func(b *testing.B) {
			benchConverged(b, fmt.Sprintf(`perfcast: 1
hosts: {h: {cpu: {cores: 16}}}
components:
  app: {host: h, operations: {op: {steps: [{cpu: exp(10ms)}, {hold: {resource: conn, steps: [{delay: exp(10ms)}]}}]}}}
passive: {conn: {capacity: 8}}
workload:
  o: {open: {rate: 400}, steps: [{call: app/op}]}
  a: {closed: {users: 40, think: exp(50ms)}, steps: [{call: app/op}]}%s
`, second))
		})
	}
}

// benchConverged is a whole Solve of the model src, which must converge.
func benchConverged(b *testing.B, src string) {
	m, err := model.Parse([]byte(src), "bench.yaml")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		r, err := New().Solve(context.Background(), m, solve.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if !r.MVA.Converged {
			b.Fatalf("not converged: %+v", r.MVA)
		}
	}
}

// BenchmarkSharedPool solves an open workload through a thread pool whose
// holders share fewer cores than it has threads, 80 % of what the pool
// can serve: the pool's chain (sharedWait) at 8 and 24 threads, its
// flow-equivalent server at 48.
func BenchmarkSharedPool(b *testing.B) {
	for _, tc := range []struct{ threads, cores int }{{8, 2}, {24, 6}, {48, 12}} {
		b.Run(fmt.Sprintf("threads=%d/cores=%d", tc.threads, tc.cores), func(b *testing.B) {
			// 5 ms of CPU and 5 ms off it per request: the cores bound
			// the rate at cores/5 ms, under what the threads allow.
			rate := 0.8 * float64(tc.cores) / 0.005
			benchConverged(b, sharedPoolModel(tc.cores, tc.threads, 0.005, fmt.Sprintf("open: {rate: %g}", rate)))
		})
	}
}

// BenchmarkSharedPoolClosed solves one closed workload through a thread
// pool whose holders share fewer cores than it has threads: the pool is a
// flow-equivalent server of its holders in the workload's layer, whose
// curve and marginal (closedBusy) are built again at every throughput the
// root search tries, in O(users · threads). The think time puts the cores
// near 80 % busy at the larger populations.
func BenchmarkSharedPoolClosed(b *testing.B) {
	for _, tc := range []struct{ threads, cores, users int }{{8, 2, 40}, {24, 6, 500}, {200, 50, 5000}} {
		b.Run(fmt.Sprintf("threads=%d/cores=%d/users=%d", tc.threads, tc.cores, tc.users), func(b *testing.B) {
			// 5 ms of CPU and 5 ms off it per request; users/think is
			// about the cores' capacity, cores/5 ms.
			think := float64(tc.users) * 0.005 / float64(tc.cores) * 1000
			benchConverged(b, sharedPoolModel(tc.cores, tc.threads, 0.005, fmt.Sprintf("closed: {users: %d, think: exp(%gms)}", tc.users, think)))
		})
	}
}
