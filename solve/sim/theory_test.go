package sim

import (
	"fmt"
	"math"
	"testing"

	"github.com/perfcast/perfcast/queueing"
)

// singleQueue is a model with one operation of the given steps on host h,
// called by one open workload.
func singleQueue(host, comp, steps string, rate float64) string {
	return fmt.Sprintf(`perfcast: 1
hosts: {h: %s}
components:
  c: {host: h%s, operations: {op: {steps: %s}}}
workload:
  w: {open: {rate: %g}, steps: [{call: c/op}]}
`, host, comp, steps, rate)
}

func TestMM1FCFS(t *testing.T) {
	const lambda, s = 700.0, 1e-3
	r := run(t, singleQueue(`{cpu: {scheduling: fcfs}}`, "", `[{cpu: exp(1ms)}]`, lambda), 400000)
	w := wl(t, r, "w")
	mean := 1 / (1/s - lambda)
	within(t, "mean response", w.ResponseTime.Mean, w.ResponseTime.CI95, mean, 0)
	within(t, "throughput", w.Throughput, w.ThroughputCI95, lambda, 0)
	cpu := res(t, r, "h.cpu")
	within(t, "utilization", cpu.Utilization, cpu.UtilizationCI95, lambda*s, 0)
	// The sojourn time of M/M/1 FCFS is exponential with rate μ − λ.
	tol := percentileTolerance(halfWidth(w.ResponseTime.CI95) / w.ResponseTime.Mean)
	withinRel(t, "p50", *w.ResponseTime.P50, math.Ln2*mean, tol)
	withinRel(t, "p95", *w.ResponseTime.P95, -math.Log(0.05)*mean, tol)
	// The operation is the whole request here.
	o := op(t, r, "c/op")
	within(t, "operation mean", o.ResponseTime.Mean, o.ResponseTime.CI95, mean, 0)
	// Waiting time in queue: ρ/(μ−λ).
	withinRel(t, "cpu wait", cpu.Wait.Mean, lambda*s*mean, 3*halfWidth(w.ResponseTime.CI95)/(lambda*s*mean))
}

// TestMMc checks Erlang C against every kind of multi-server resource: FCFS
// and PS cores (with exponential demands both have the birth–death process
// of M/M/c, hence its mean by Little's law), disk servers, a thread pool
// whose operation is a delay, and a passive resource of six units taken two
// at a time.
func TestMMc(t *testing.T) {
	const c, lambda, s = 3, 2400.0, 1e-3
	cases := []struct {
		name, host, comp, steps, res string
		util                         float64
	}{
		{"cpu-fcfs", `{cpu: {cores: 3, scheduling: fcfs}}`, "", `[{cpu: exp(1ms)}]`, "h.cpu", lambda * s / c},
		{"cpu-ps", `{cpu: {cores: 3}}`, "", `[{cpu: exp(1ms)}]`, "h.cpu", lambda * s / c},
		{"disk", `{disks: {d: {servers: 3}}}`, "", `[{disk: exp(1ms)}]`, "h.disk.d", lambda * s / c},
		{"threads", `{}`, ", threads: 3", `[{delay: exp(1ms)}]`, "c.threads", lambda * s / c},
		{"units", `{}`, "", `[{hold: {resource: p, units: 2, steps: [{delay: exp(1ms)}]}}]`, "p", lambda * s / c},
	}
	want := mmcResponse(c, lambda, s)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := singleQueue(tc.host, tc.comp, tc.steps, lambda)
			if tc.name == "units" {
				src += "passive: {p: {capacity: 6}}\n"
			}
			r := run(t, src, 300000)
			w := wl(t, r, "w")
			within(t, "mean response", w.ResponseTime.Mean, w.ResponseTime.CI95, want, 0)
			x := res(t, r, tc.res)
			within(t, "utilization", x.Utilization, x.UtilizationCI95, tc.util, 0)
		})
	}
}

// TestMD1 checks Pollaczek–Khinchine under FCFS and the insensitivity of
// processor sharing (M/D/1-PS has the mean of M/M/1-PS, S/(1−ρ)), a lock
// (capacity 1) held around a constant delay, scoped and unscoped, and a
// round-robin CPU with a quantum of 1/50 of the demand, which approaches PS.
func TestMD1(t *testing.T) {
	const lambda, s = 700.0, 1e-3
	rho := lambda * s
	pk := s + rho*s/(2*(1-rho))
	ps := s / (1 - rho)
	cases := []struct {
		name, host, steps string
		want              float64
		n                 int64
		floor             float64
	}{
		{"fcfs", `{cpu: {scheduling: fcfs}}`, `[{cpu: det(1ms)}]`, pk, 300000, 0},
		{"ps", `{}`, `[{cpu: det(1ms)}]`, ps, 300000, 0},
		{"lock", `{}`, `[{hold: {resource: lock, steps: [{delay: det(1ms)}]}}]`, pk, 300000, 0},
		{"acquire", `{}`, `[{acquire: lock}, {delay: det(1ms)}, {release: lock}]`, pk, 300000, 0},
		// Round robin with quantum q differs from PS by O(q); with q = S/50
		// a 2 % allowance covers that bias.
		{"rr", `{cpu: {scheduling: rr, quantum: 20us}}`, `[{cpu: det(1ms)}]`, ps, 100000, 0.02 * ps},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := singleQueue(tc.host, "", tc.steps, lambda) + "passive: {lock: {capacity: 1}}\n"
			r := run(t, src, tc.n)
			w := wl(t, r, "w")
			within(t, "mean response", w.ResponseTime.Mean, w.ResponseTime.CI95, tc.want, tc.floor)
		})
	}
}

// TestPassivePerReplica: a passive resource declared per replica of a host
// is one lock per replica, taken on the replica the request runs on; random
// balancing makes each an M/D/1 queue with rate λ/2.
func TestPassivePerReplica(t *testing.T) {
	const lambda, s = 1400.0, 1e-3
	r := run(t, `perfcast: 1
hosts: {h: {replicas: 2, balancer: random}}
components:
  c: {host: h, operations: {op: {steps: [{hold: {resource: lock, steps: [{delay: det(1ms)}]}}]}}}
passive: {lock: {capacity: 1, host: h}}
workload:
  w: {open: {rate: 1400/s}, steps: [{call: c/op}]}
`, 300000)
	rho := lambda / 2 * s
	w := wl(t, r, "w")
	within(t, "mean response", w.ResponseTime.Mean, w.ResponseTime.CI95, s+rho*s/(2*(1-rho)), 0)
	lock := res(t, r, "lock")
	within(t, "lock utilization", lock.Utilization, lock.UtilizationCI95, rho, 0)
	within(t, "lock busy", lock.Busy, lock.UtilizationCI95, 2*rho, 2*ciFactor*halfWidth(lock.UtilizationCI95))
	if len(lock.PerReplica) != 2 {
		t.Errorf("lock per_replica %v, want 2 entries", lock.PerReplica)
	}
}

// TestPassivePartitioned: a partitioned resource of three units binds
// each execution to one unit at random, so Poisson arrivals make three
// independent M/M/1 queues with rate λ/3 (where the same three units
// serving one queue make M/M/3, TestMMc); on each of two replicas of its
// host, six M/M/1 queues with rate λ/6. Two holds in a row, each of half
// the time, make each unit a queue whose executions come back once to its
// end (the second hold waits behind those that came meanwhile): with
// exponential holds a Jackson network, whose mean response is M/M/1's of
// the whole time, S/(1−ρ).
func TestPassivePartitioned(t *testing.T) {
	const lambda, s = 2100.0, 1e-3
	rho := lambda / 3 * s
	for _, c := range []struct {
		name, host, passive, steps string
		rate, util                 float64
		replicas                   int
		want                       float64
	}{
		{"one queue each", "{}", "{capacity: 3, partitioned: true}", "[{hold: {resource: p, steps: [{delay: exp(1ms)}]}}]", lambda, rho, 0, s / (1 - rho)},
		{"per replica", "{replicas: 2, balancer: random}", "{capacity: 3, partitioned: true, host: h}", "[{hold: {resource: p, steps: [{delay: exp(1ms)}]}}]", 2 * lambda, rho, 2, s / (1 - rho)},
		{"two holds", "{}", "{capacity: 3, partitioned: true}", "[{hold: {resource: p, steps: [{delay: exp(0.5ms)}]}}, {hold: {resource: p, steps: [{delay: exp(0.5ms)}]}}]", lambda, rho, 0, s / (1 - rho)},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := fmt.Sprintf(`perfcast: 1
hosts: {h: %s}
components:
  c: {host: h, operations: {op: {steps: %s}}}
passive: {p: %s}
workload:
  w: {open: {rate: %g}, steps: [{call: c/op}]}
`, c.host, c.steps, c.passive, c.rate)
			r := run(t, src, 300000)
			w := wl(t, r, "w")
			within(t, "mean response", w.ResponseTime.Mean, w.ResponseTime.CI95, c.want, 0)
			p := res(t, r, "p")
			within(t, "utilization", p.Utilization, p.UtilizationCI95, c.util, 0)
			if len(p.PerReplica) != c.replicas {
				t.Errorf("per_replica %v, want %d entries", p.PerReplica, c.replicas)
			}
		})
	}
}

// TestRandomReplicas: Poisson arrivals split at random over r replicas make
// r independent M/M/1 queues with rate λ/r.
func TestRandomReplicas(t *testing.T) {
	const lambda, s, reps = 2100.0, 1e-3, 3
	r := run(t, singleQueue(`{replicas: 3, balancer: random, cpu: {scheduling: fcfs}}`, "", `[{cpu: exp(1ms)}]`, lambda), 400000)
	w := wl(t, r, "w")
	within(t, "mean response", w.ResponseTime.Mean, w.ResponseTime.CI95, 1/(1/s-lambda/reps), 0)
	cpu := res(t, r, "h.cpu")
	within(t, "utilization", cpu.Utilization, cpu.UtilizationCI95, lambda*s/reps, 0)
	if len(cpu.PerReplica) != reps {
		t.Fatalf("per_replica has %d entries, want %d", len(cpu.PerReplica), reps)
	}
	for i, u := range cpu.PerReplica {
		// A replica's utilization has about √r times the half-width of the
		// average over replicas.
		within(t, fmt.Sprintf("replica %d utilization", i), u, cpu.UtilizationCI95, lambda*s/reps, ciFactor*math.Sqrt(reps)*halfWidth(cpu.UtilizationCI95))
	}
}

// TestLeastBusy sets the least-busy balancer against the exact mean of
// joining the shortest of r M/M/c queues (queueing.JSQChainWait), and
// least-of-two against the shorter of two drawn at random
// (queueing.ChoicesChainWait), on FCFS cores and on processor-sharing
// ones (whose numbers in service are M/M/c's with exponential demands),
// and checks that they keep the replicas evenly loaded. At these loads a
// random split would be 46 to 95 % slower.
func TestLeastBusy(t *testing.T) {
	const s = 1e-3
	cases := []struct {
		balancer        string
		replicas, cores int
		rho             float64
		cpu             string
	}{
		{"least-busy", 2, 1, 0.8, "{scheduling: fcfs}"},
		{"least-busy", 2, 2, 0.75, "{cores: 2}"},
		{"least-busy", 3, 1, 0.7, "{scheduling: fcfs}"},
		{"least-of-two", 3, 1, 0.7, "{scheduling: fcfs}"},
		{"least-of-two", 4, 1, 0.6, "{}"},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s r=%d c=%d rho=%g", tc.balancer, tc.replicas, tc.cores, tc.rho), func(t *testing.T) {
			lambda := tc.rho * float64(tc.replicas*tc.cores) / s
			host := fmt.Sprintf("{replicas: %d, balancer: %s, cpu: %s}", tc.replicas, tc.balancer, tc.cpu)
			r := run(t, singleQueue(host, "", `[{cpu: exp(1ms)}]`, lambda), 400000)
			w := wl(t, r, "w")
			d := tc.replicas
			if tc.balancer == "least-of-two" {
				d = 2
			}
			want := s * (1 + queueing.ChoicesChainWait(tc.replicas, tc.cores, d, tc.rho))
			within(t, "mean response", w.ResponseTime.Mean, w.ResponseTime.CI95, want, 0)
			cpu := res(t, r, "h.cpu")
			if len(cpu.PerReplica) != tc.replicas {
				t.Fatalf("per_replica has %d entries, want %d", len(cpu.PerReplica), tc.replicas)
			}
			for i, u := range cpu.PerReplica {
				within(t, fmt.Sprintf("replica %d utilization", i), u, cpu.UtilizationCI95, tc.rho, ciFactor*math.Sqrt(float64(tc.replicas))*halfWidth(cpu.UtilizationCI95))
			}
		})
	}
}

// TestForkJoin: the join of two independent exponential delays waits for
// the larger, whose mean is 1.5/μ.
func TestForkJoin(t *testing.T) {
	r := run(t, `perfcast: 1
workload:
  w:
    open: {rate: 200/s}
    steps:
      - parallel:
          - [{delay: exp(10ms)}]
          - [{delay: exp(10ms)}]
`, 200000)
	w := wl(t, r, "w")
	within(t, "mean response", w.ResponseTime.Mean, w.ResponseTime.CI95, 0.015, 0)
	// P(max ≤ x) = (1 − e^{−μx})², so the median solves it = 1/2.
	median := -0.01 * math.Log(1-math.Sqrt(0.5))
	withinRel(t, "p50", *w.ResponseTime.P50, median, percentileTolerance(halfWidth(w.ResponseTime.CI95)/w.ResponseTime.Mean))
}

// TestGammaArrivals checks open arrivals with cv ≠ 1 against GI/M/1: the
// sojourn time is exponential with rate μ(1−σ), σ the root in (0, 1) of
// σ = A*(μ(1−σ)), where A*(s) = (1+θs)^(−k) is the Laplace transform of the
// gamma interarrival time with shape k = 1/cv² and scale θ = cv²/λ.
func TestGammaArrivals(t *testing.T) {
	const lambda, mu = 600.0, 1000.0
	for _, cv := range []float64{0.5, 2} {
		t.Run(fmt.Sprintf("cv=%g", cv), func(t *testing.T) {
			k, theta := 1/(cv*cv), cv*cv/lambda
			sigma := 0.5
			for range 10000 {
				sigma = math.Pow(1+theta*mu*(1-sigma), -k)
			}
			src := fmt.Sprintf(`perfcast: 1
hosts: {h: {cpu: {scheduling: fcfs}}}
components:
  c: {host: h, operations: {op: {steps: [{cpu: exp(1ms)}]}}}
workload:
  w: {open: {rate: %g, cv: %g}, steps: [{call: c/op}]}
`, lambda, cv)
			r := run(t, src, 300000)
			w := wl(t, r, "w")
			within(t, "mean response", w.ResponseTime.Mean, w.ResponseTime.CI95, 1/(mu*(1-sigma)), 0)
			within(t, "throughput", w.Throughput, w.ThroughputCI95, lambda, 0)
		})
	}
}

// TestNearlyDeterministicArrivals: arrivals every 10 ms (cv 0.001) at a
// server that needs 8 ms never queue, so the response is exactly 8 ms.
func TestNearlyDeterministicArrivals(t *testing.T) {
	r := run(t, `perfcast: 1
hosts: {h: {cpu: {scheduling: fcfs}}}
components:
  c: {host: h, operations: {op: {steps: [{cpu: det(8ms)}]}}}
workload:
  w: {open: {rate: 100/s, cv: 0.001}, steps: [{call: c/op}]}
`, 20000)
	w := wl(t, r, "w")
	withinRel(t, "mean response", w.ResponseTime.Mean, 0.008, numFloor)
	// With Poisson arrivals the same server makes requests wait.
	p := wl(t, run(t, singleQueue(`{cpu: {scheduling: fcfs}}`, "", `[{cpu: det(8ms)}]`, 100), 20000), "w")
	if !(p.ResponseTime.Mean > 0.008*1.5) {
		t.Errorf("Poisson arrivals: mean %.4g, want the M/D/1 value %.4g", p.ResponseTime.Mean, 0.008+0.8*0.008/(2*0.2))
	}
}

// TestSpeed: a CPU twice as fast halves the demand: M/M/1 with μ = 2/S.
func TestSpeed(t *testing.T) {
	const lambda = 1400.0
	r := run(t, singleQueue(`{cpu: {scheduling: fcfs, speed: 2}}`, "", `[{cpu: exp(1ms)}]`, lambda), 300000)
	w := wl(t, r, "w")
	within(t, "mean response", w.ResponseTime.Mean, w.ResponseTime.CI95, 1/(2000-lambda), 0)
}

// TestRandomOrderDisk: serving in random order keeps the M/M/1 mean (it is
// work-conserving and blind to service times) but spreads the times: its
// p99 lies above FCFS's, whose sojourn is exponential.
func TestRandomOrderDisk(t *testing.T) {
	const lambda = 800.0
	r := run(t, singleQueue(`{disks: {d: {scheduling: random}}}`, "", `[{disk: exp(1ms)}]`, lambda), 400000)
	w := wl(t, r, "w")
	mean := 1 / (1000 - lambda)
	within(t, "mean response", w.ResponseTime.Mean, w.ResponseTime.CI95, mean, 0)
	fcfsP99 := -math.Log(0.01) * mean
	if !(*w.ResponseTime.P99 > fcfsP99*1.1) {
		t.Errorf("random order p99 %.4g is not above the FCFS p99 %.4g", *w.ResponseTime.P99, fcfsP99)
	}
}

// TestBlockingQueue: a single thread with no queue that blocks the sender is
// a FCFS server with the senders waiting in order: M/M/1.
func TestBlockingQueue(t *testing.T) {
	const lambda = 700.0
	r := run(t, singleQueue(`{}`, ", threads: 1, queue: 0, on_full: block", `[{delay: exp(1ms)}]`, lambda), 300000)
	w := wl(t, r, "w")
	within(t, "mean response", w.ResponseTime.Mean, w.ResponseTime.CI95, 1/(1000-lambda), 0)
	th := res(t, r, "c.threads")
	within(t, "thread utilization", th.Utilization, th.UtilizationCI95, 0.7, 0)
}

// TestBlockingSend: a send to a busy thread with no queue space makes the
// sender wait. One user without think time sends jobs of 10 ms to a single
// thread: each send waits for the previous job, so every response lasts
// exactly 10 ms.
func TestBlockingSend(t *testing.T) {
	r := run(t, `perfcast: 1
hosts: {h: {}}
components:
  a: {host: h, operations: {x: {steps: [{send: b/y}]}}}
  b: {host: h, threads: 1, queue: 0, on_full: block, operations: {y: {steps: [{delay: det(10ms)}]}}}
workload:
  w: {closed: {users: 1, think: 0}, steps: [{call: a/x}]}
`, 20000)
	w := wl(t, r, "w")
	withinRel(t, "response", w.ResponseTime.Mean, 0.01, 1e-9)
	withinRel(t, "throughput", w.Throughput, 100, 1e-6)
	withinRel(t, "completion", w.CompletionTime.Mean, 0.02, 1e-9)
}

// TestDropMM1K: one thread, a queue of K−1 and drop on full is M/M/1/K. The
// thread is entered while the caller holds a pool of its own component,
// which the drops must give back (a leak would exhaust it and stall the
// run).
func TestDropMM1K(t *testing.T) {
	const lambda, mu, k = 900.0, 1000.0, 4
	src := fmt.Sprintf(`perfcast: 1
hosts: {h: {}}
components:
  front:
    host: h
    operations:
      x: {steps: [{hold: {resource: conn, steps: [{call: c/op}]}}]}
  c:
    host: h
    threads: 1
    queue: %d
    on_full: drop
    operations:
      op: {steps: [{delay: exp(1ms)}]}
passive:
  conn: {capacity: 50}
workload:
  w: {open: {rate: %g}, steps: [{call: front/x}]}
`, k-1, lambda)
	r := run(t, src, 300000)
	rho := lambda / mu
	pk := (1 - rho) * math.Pow(rho, k) / (1 - math.Pow(rho, k+1))
	w := wl(t, r, "w")
	within(t, "throughput", w.Throughput, w.ThroughputCI95, lambda*(1-pk), 0)
	// The arrivals are Poisson: the dropped rate's relative standard error
	// is about that of a count of λ·P_K·T events; four of them, on top of
	// the throughput's own interval, bound the check.
	T := r.Sim.SimTime
	se := math.Sqrt(lambda * pk / T)
	if d := math.Abs(w.Dropped - lambda*pk); d > 4*se+ciFactor*halfWidth(w.ThroughputCI95) {
		t.Errorf("dropped %.4g/s, theory %.4g/s (blocking probability %.4f)", w.Dropped, lambda*pk, pk)
	}
	// Mean number in M/M/1/K over the accepted rate gives the mean sojourn.
	var n, norm float64
	for j := 0; j <= k; j++ {
		p := math.Pow(rho, float64(j))
		n += float64(j) * p
		norm += p
	}
	within(t, "mean response", w.ResponseTime.Mean, w.ResponseTime.CI95, n/norm/(lambda*(1-pk)), 0)
}

// TestVisits: operation throughputs are the workload rates times the
// expected visits through loops, branches, switches on a request parameter
// and on the class, and sends.
func TestVisits(t *testing.T) {
	src := `perfcast: 1
hosts: {h: {cpu: {cores: 64}}}
components:
  a:
    host: h
    operations:
      x:
        steps:
          - loop: {times: geometric(3), steps: [{call: b/y}]}
          - branch:
              - {p: 0.3, steps: [{call: b/z}]}
              - {p: 0.7, steps: []}
          - switch:
              on: size
              cases:
                small: [{call: b/s}]
                large: [{loop: {times: 2, steps: [{call: b/l}]}}]
          - switch: {on: class, cases: {w1: [{call: b/c1}]}}
  b:
    host: h
    operations:
      y: {steps: [{cpu: exp(1ms)}]}
      z: {steps: [{cpu: exp(1ms)}]}
      s: {steps: [{cpu: exp(1ms)}]}
      l: {steps: [{cpu: exp(1ms)}]}
      c1: {steps: [{cpu: exp(1ms)}]}
      s2: {steps: [{cpu: exp(1ms)}]}
      sw: {steps: [{switch: {on: size, cases: {small: [{call: b/s2}]}}}]}
workload:
  w1:
    open: {rate: 100/s}
    params: {size: {pmf: {small: 0.8, large: 0.2}}}
    steps: [{call: a/x}]
  w2:
    open: {rate: 50/s}
    params: {size: {pmf: {small: 0.8, large: 0.2}}}
    steps: [{call: a/x}, {send: b/y}, {send: b/sw}]
`
	r := run(t, src, 200000)
	m := parse(t, src)
	const l1, l2 = 100.0, 50.0
	// Expected visits and second moments of the visit count per request.
	// geometric(3) from 1: mean 3, variance 2·3 = 6, E[V²] = 15; plus one
	// send in w2: E[(G+1)²] = 15 + 2·3 + 1 = 22.
	type want struct{ rate, m2 float64 }
	wants := map[string]want{
		"a/x":  {l1 + l2, l1 + l2},
		"b/y":  {3*l1 + 4*l2, 15*l1 + 22*l2},
		"b/z":  {0.3 * (l1 + l2), 0.3 * (l1 + l2)},
		"b/s":  {0.8 * (l1 + l2), 0.8 * (l1 + l2)},
		"b/l":  {2 * 0.2 * (l1 + l2), 4 * 0.2 * (l1 + l2)},
		"b/c1": {l1, l1},
		// A parameter stays visible through a send: w2's sends switch on it.
		"b/sw": {l2, l2},
		"b/s2": {0.8 * l2, 0.8 * l2},
	}
	// The expected visits agree with the model's own demand walk.
	for _, w := range m.Workloads {
		for id, v := range m.Demands(w).Visits {
			_ = v
			if _, ok := wants[id]; !ok {
				t.Errorf("model visits %s, not expected", id)
			}
		}
	}
	dw1, dw2 := m.Demands(m.Workload("w1")), m.Demands(m.Workload("w2"))
	for id, x := range wants {
		if got := l1*dw1.Visits[id] + l2*dw2.Visits[id]; math.Abs(got-x.rate) > 1e-9*x.rate {
			t.Errorf("%s: model demand walk gives %.6g visits/s, hand count %.6g", id, got, x.rate)
		}
	}
	// An operation's count over the measured time T is compound Poisson:
	// variance Σ λ·E[V²]·T. Four standard errors bound the rate.
	T := r.Sim.SimTime
	for id, x := range wants {
		o := op(t, r, id)
		se := math.Sqrt(x.m2 / T)
		if d := math.Abs(o.Throughput - x.rate); d > 4*se {
			t.Errorf("%s throughput %.5g, want %.5g (%.1f standard errors)", id, o.Throughput, x.rate, d/se)
		}
	}
	if _, ok := r.Operations["b/missing"]; ok {
		t.Error("unexpected operation")
	}
}

// TestSendCompletion: a send does not delay the response but does delay
// the completion time, here exactly (delays only, no queueing).
func TestSendCompletion(t *testing.T) {
	r := run(t, `perfcast: 1
hosts: {h: {}}
components:
  a: {host: h, operations: {x: {steps: [{delay: det(1ms)}, {send: a/y}]}, y: {steps: [{delay: det(5ms)}]}}}
workload:
  w: {open: {rate: 100/s}, steps: [{call: a/x}]}
`, 20000)
	w := wl(t, r, "w")
	withinRel(t, "response", w.ResponseTime.Mean, 0.001, numFloor)
	withinRel(t, "completion", w.CompletionTime.Mean, 0.006, numFloor)
	// a/y lags a/x by the sends still running when a replication stops
	// (about rate × 5 ms ≈ 0.5 each), a few in the 20000 requests.
	n := float64(r.Sim.Requests)
	withinRel(t, "a/y throughput", op(t, r, "a/y").Throughput, wl(t, r, "w").Throughput, 3*float64(r.Sim.Replications)/n)
}

// TestSpanTime checks the span time of an operation that waits before its
// span starts, for a CPU slot marked before_span: an M/M/1 queue whose
// span is the exponential service alone. Without the mark, or with a lock
// that is not the operation's first step, the span is the response time
// and the result carries none.
func TestSpanTime(t *testing.T) {
	const lambda, s = 700.0, 1e-3
	src := func(beforeSpan bool, steps string) string {
		return fmt.Sprintf(`perfcast: 1
hosts: {h: {}}
components:
  c: {host: h, operations: {op: {steps: %s}}}
passive: {slot: {capacity: 1, before_span: %t}}
workload:
  w: {open: {rate: %g}, steps: [{call: c/op}]}
`, steps, beforeSpan, lambda)
	}
	const held = `[{hold: {resource: slot, steps: [{cpu: exp(1ms)}]}}]`
	r := run(t, src(true, held), 400000)
	o := op(t, r, "c/op")
	mean := 1 / (1/s - lambda)
	within(t, "operation mean", o.ResponseTime.Mean, o.ResponseTime.CI95, mean, 0)
	if o.Span == nil {
		t.Fatal("no span time")
	}
	within(t, "span mean", o.Span.Mean, o.Span.CI95, s, 0)
	tol := percentileTolerance(halfWidth(o.Span.CI95) / o.Span.Mean)
	withinRel(t, "span p50", *o.Span.P50, math.Ln2*s, tol)
	withinRel(t, "span p95", *o.Span.P95, -math.Log(0.05)*s, tol)
	for _, tc := range []struct{ name, src string }{
		{"unmarked", src(false, held)},
		{"not first", src(true, `[{delay: 0.1ms}, {hold: {resource: slot, steps: [{cpu: exp(1ms)}]}}]`)},
	} {
		if o := op(t, run(t, tc.src, 20000), "c/op"); o.Span != nil {
			t.Errorf("%s: span time %v, want none", tc.name, o.Span.Mean)
		}
	}
}
