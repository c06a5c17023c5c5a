package sim

import (
	"fmt"
	"testing"
)

// exactMVA solves a closed product-form network of single-server
// load-independent stations (FCFS with exponential service or PS) and one
// delay (think time) per class, by exact mean value analysis over all
// population vectors: for population n,
//
//	R[c][k](n) = D[c][k] · (1 + Q[k](n − e_c))
//	X[c](n)    = n_c / (Z[c] + Σ_k R[c][k](n))
//	Q[k](n)    = Σ_c X[c](n) · R[c][k](n)
//
// It returns the throughput and the response time (without think time) of
// each class, and the utilization of each station.
func exactMVA(pop []int, think []float64, demand [][]float64) (x, r []float64, util []float64) {
	classes, stations := len(pop), len(demand[0])
	// Index population vectors in mixed radix.
	size, stride := 1, make([]int, classes)
	for c := range classes {
		stride[c] = size
		size *= pop[c] + 1
	}
	q := make([][]float64, size)
	q[0] = make([]float64, stations)
	vec := make([]int, classes)
	for idx := 1; idx < size; idx++ {
		rem := idx
		for c := range classes {
			vec[c] = rem % (pop[c] + 1)
			rem /= pop[c] + 1
		}
		q[idx] = make([]float64, stations)
		xs := make([]float64, classes)
		rs := make([][]float64, classes)
		for c := range classes {
			rs[c] = make([]float64, stations)
			if vec[c] == 0 {
				continue
			}
			prev := q[idx-stride[c]]
			total := think[c]
			for k := range stations {
				rs[c][k] = demand[c][k] * (1 + prev[k])
				total += rs[c][k]
			}
			xs[c] = float64(vec[c]) / total
		}
		for c := range classes {
			for k := range stations {
				q[idx][k] += xs[c] * rs[c][k]
			}
		}
		if idx == size-1 {
			x = xs
			r = make([]float64, classes)
			util = make([]float64, stations)
			for c := range classes {
				for k := range stations {
					r[c] += rs[c][k]
					util[k] += xs[c] * demand[c][k]
				}
			}
		}
	}
	return x, r, util
}

// TestMVAReference checks the reference itself on a case solvable by hand:
// one user, so no queueing: X = 1/(Z + ΣD).
func TestMVAReference(t *testing.T) {
	x, r, _ := exactMVA([]int{1}, []float64{1}, [][]float64{{0.2, 0.3}})
	withinRel(t, "X", x[0], 1/1.5, 1e-12)
	withinRel(t, "R", r[0], 0.5, 1e-12)
	// Two classes of one user each at one station: each user, alone, finds
	// Q = X·R = 0.5/1.5 = 1/3 there, so with both R_c = 0.5·(1 + 1/3) and
	// X_c = 1/(1 + R_c).
	x, r, _ = exactMVA([]int{1, 1}, []float64{1, 1}, [][]float64{{0.5}, {0.5}})
	withinRel(t, "R two classes", r[1], 2.0/3, 1e-12)
	withinRel(t, "X two classes", x[0], 0.6, 1e-12)
}

// TestClosedSingleClass: users with exponential think time over a PS CPU
// and a FCFS disk with exponential service form a product-form network.
func TestClosedSingleClass(t *testing.T) {
	const users, z, dCPU, dDisk = 10, 0.2, 0.02, 0.03
	src := fmt.Sprintf(`perfcast: 1
hosts:
  app: {}
  store: {disks: {d: {}}}
components:
  web: {host: app, operations: {op: {steps: [{cpu: exp(20ms)}, {call: db/io}]}}}
  db: {host: store, operations: {io: {steps: [{disk: exp(30ms)}]}}}
workload:
  users: {closed: {users: %d, think: exp(200ms)}, steps: [{call: web/op}]}
`, users)
	x, rt, util := exactMVA([]int{users}, []float64{z}, [][]float64{{dCPU, dDisk}})
	r := run(t, src, 200000)
	w := wl(t, r, "users")
	within(t, "throughput", w.Throughput, w.ThroughputCI95, x[0], 0)
	within(t, "response", w.ResponseTime.Mean, w.ResponseTime.CI95, rt[0], 0)
	cpu, disk := res(t, r, "app.cpu"), res(t, r, "store.disk.d")
	within(t, "cpu utilization", cpu.Utilization, cpu.UtilizationCI95, util[0], 0)
	within(t, "disk utilization", disk.Utilization, disk.UtilizationCI95, util[1], 0)
}

// TestClosedMultiClass: two classes with different demands at two PS CPUs
// (PS keeps product form with class-dependent demands).
func TestClosedMultiClass(t *testing.T) {
	src := `perfcast: 1
hosts:
  h1: {}
  h2: {}
components:
  c1: {host: h1, operations: {a: {steps: [{cpu: exp(20ms)}]}, b: {steps: [{cpu: exp(5ms)}]}}}
  c2: {host: h2, operations: {a: {steps: [{cpu: exp(10ms)}]}, b: {steps: [{cpu: exp(40ms)}]}}}
workload:
  A: {closed: {users: 5, think: exp(100ms)}, steps: [{call: c1/a}, {call: c2/a}]}
  B: {closed: {users: 3, think: exp(300ms)}, steps: [{call: c1/b}, {call: c2/b}]}
`
	x, rt, util := exactMVA([]int{5, 3}, []float64{0.1, 0.3}, [][]float64{{0.02, 0.01}, {0.005, 0.04}})
	r := run(t, src, 300000)
	for c, name := range []string{"A", "B"} {
		w := wl(t, r, name)
		within(t, name+" throughput", w.Throughput, w.ThroughputCI95, x[c], 0)
		within(t, name+" response", w.ResponseTime.Mean, w.ResponseTime.CI95, rt[c], 0)
	}
	for k, name := range []string{"h1.cpu", "h2.cpu"} {
		u := res(t, r, name)
		within(t, name+" utilization", u.Utilization, u.UtilizationCI95, util[k], 0)
	}
}
