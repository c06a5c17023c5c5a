package sim

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve"
)

// TestLimitSaturated: users who never think keep a limited CPU busy, so
// each period does exactly its quota of work and the throughput is the
// limit over the demand, whatever the cores, the period and the
// scheduling; the quota runs out in every period.
func TestLimitSaturated(t *testing.T) {
	cases := []struct {
		name, cpu string
		users     int
		limit, d  float64
		period    float64
	}{
		{"one core", "{limit: 0.5}", 1, 0.5, 0.030, 0.1},
		{"two cores", "{cores: 2, limit: 1500m, period: 50ms}", 3, 1.5, 0.030, 0.05},
		{"fcfs", "{scheduling: fcfs, limit: 0.25}", 4, 0.25, 0.007, 0.1},
		{"rr", "{scheduling: rr, quantum: 2ms, limit: 0.4}", 2, 0.4, 0.011, 0.1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := "perfcast: 1\nhosts: {h: {cpu: " + tc.cpu + "}}\n" +
				"components: {c: {host: h, operations: {op: {steps: [{cpu: " + model.FormatDuration(tc.d) + "}]}}}}\n" +
				"workload: {w: {closed: {users: " + strconv.Itoa(tc.users) + ", think: 0s}, steps: [{call: c/op}]}}\n"
			r := run(t, src, 20000)
			w := wl(t, r, "w")
			want := tc.limit / tc.d
			// The throughput is exact but for the periods cut at the
			// ends of each replication's measured time: at most two
			// periods' work in each.
			tol := 2 * tc.period * float64(r.Sim.Replications) / r.Sim.SimTime
			withinRel(t, "throughput", w.Throughput, want, tol)
			cpu := res(t, r, "h.cpu")
			if cpu.LimitUtilization == nil || cpu.Throttled == nil {
				t.Fatalf("no limit utilization or throttled fraction: %+v", cpu)
			}
			withinRel(t, "limit utilization", *cpu.LimitUtilization, 1, tol)
			withinRel(t, "throttled periods", *cpu.Throttled, 1, tol)
			if r.Bottleneck != "h.cpu" {
				t.Errorf("bottleneck %q, want h.cpu", r.Bottleneck)
			}
		})
	}
}

// TestLimitOpen checks the simulator's limited CPU under Poisson arrivals
// against a queue written here independently: one FCFS server whose
// quota of CPU time per period, once spent, stalls it until the period
// ends. With exponential demands the number of jobs present evolves alike
// under FCFS and processor sharing (every job leaves at rate 1/D while the
// server works, and the server works at the same moments), so by Little's
// law both have the reference's mean response time. The load, 0.4 cores
// against a limit of 0.5, throttles often: the response time is several
// times M/M/1's.
func TestLimitOpen(t *testing.T) {
	const lambda, d, limit, period = 40.0, 0.010, 0.5, 0.1
	ref, refHW := limitedQueue(lambda, d, limit*period, period, 2_000_000, 3)
	mm1 := d / (1 - lambda*d)
	if ref < 2*mm1 {
		t.Fatalf("reference %.4g s is not far above M/M/1's %.4g s: the limit does not bind enough to test", ref, mm1)
	}
	for _, sched := range []string{"ps", "fcfs"} {
		t.Run(sched, func(t *testing.T) {
			r := run(t, singleQueue("{cpu: {scheduling: "+sched+", limit: 0.5}}", "", "[{cpu: exp(10ms)}]", lambda), 400000)
			w := wl(t, r, "w")
			// The reference's own uncertainty widens the tolerance.
			within(t, "mean response", w.ResponseTime.Mean, w.ResponseTime.CI95, ref, ciFactor*refHW)
			cpu := res(t, r, "h.cpu")
			within(t, "utilization", cpu.Utilization, cpu.UtilizationCI95, lambda*d, 0)
			withinRel(t, "limit utilization", *cpu.LimitUtilization, cpu.Utilization/limit, 1e-12)
			if f := *cpu.Throttled; !(f > 0.2 && f < 1) {
				t.Errorf("throttled in %.3g of the periods: want a good share, not all", f)
			}
		})
	}
}

// TestLimitUnstable: an open load above the limit, though below the
// cores, has no steady state.
func TestLimitUnstable(t *testing.T) {
	m := parse(t, singleQueue("{cpu: {limit: 300m}}", "", "[{cpu: exp(10ms)}]", 35))
	r, err := New().Solve(t.Context(), m, solve.Options{Seed: 7, Requests: 20000})
	if err != nil {
		t.Fatal(err)
	}
	if r.Stable {
		t.Fatalf("0.35 cores offered to a limit of 0.3 came out stable: %+v", r.Workloads["w"])
	}
}

// limitedQueue simulates n jobs of a single FCFS server with Poisson
// arrivals at rate lambda, exponential work of mean d, and a quota of
// CPU time per period, and returns the mean response time with the
// half-width of its 95 % interval from 20 batch means.
func limitedQueue(lambda, d, quota, period float64, n int, seed uint64) (mean, hw float64) {
	rng := rand.New(rand.NewPCG(seed, 0))
	var (
		now, used float64
		boundary  = period
		nextArr   = rng.ExpFloat64() / lambda
		arrivals  []float64 // of the jobs present, in order
		headLeft  float64   // work left of the first
		done      int
		sums      []float64 // batch means
		bsum      float64
	)
	for done < n {
		// The next event: an arrival, the head's end, the quota's end,
		// or the period's.
		next, kind := nextArr, 0
		if len(arrivals) > 0 && used < quota {
			if t := now + headLeft; t < next {
				next, kind = t, 1
			}
			if t := now + (quota - used); t < next {
				next, kind = t, 2
			}
		}
		if boundary < next {
			next, kind = boundary, 3
		}
		if len(arrivals) > 0 && used < quota {
			headLeft -= next - now
			used += next - now
		}
		now = next
		switch kind {
		case 0:
			if len(arrivals) == 0 {
				headLeft = rng.ExpFloat64() * d
			}
			arrivals = append(arrivals, now)
			nextArr = now + rng.ExpFloat64()/lambda
		case 1:
			bsum += now - arrivals[0]
			arrivals = arrivals[1:]
			done++
			if done%(n/20) == 0 {
				sums = append(sums, bsum/float64(n/20))
				bsum = 0
			}
			if len(arrivals) > 0 {
				headLeft = rng.ExpFloat64() * d
			}
		case 2:
			used = quota
		case 3:
			used = 0
			boundary += period
		}
	}
	var m, v float64
	for _, s := range sums {
		m += s
	}
	m /= float64(len(sums))
	for _, s := range sums {
		v += (s - m) * (s - m)
	}
	v /= float64(len(sums) - 1)
	return m, 2.093 * math.Sqrt(v/float64(len(sums)))
}

// TestLimitThrottledCountsActivePeriods: as cgroup's nr_periods, the
// periods counted are those in which the CPU ran. A request of 400 ms of
// CPU under a limit of 50 ms a period runs in eight or nine periods and
// is throttled in all but the last one or two, so at least 7/9 of the
// counted periods are throttled, although with 2 s of thinking between
// requests most periods pass idle.
func TestLimitThrottledCountsActivePeriods(t *testing.T) {
	src := "perfcast: 1\nhosts: {h: {cpu: {limit: 0.5}}}\n" +
		"components: {c: {host: h, operations: {op: {steps: [{cpu: 400ms}]}}}}\n" +
		"workload: {w: {closed: {users: 1, think: exp(2s)}, steps: [{call: c/op}]}}\n"
	r := run(t, src, 4000)
	cpu := res(t, r, "h.cpu")
	if cpu.Throttled == nil || !(*cpu.Throttled >= 7.0/9) {
		t.Errorf("throttled in %v of the periods, want at least 7/9", cpu.Throttled)
	}
	if lu := *cpu.LimitUtilization; !(lu < 0.4) {
		t.Errorf("limit utilization %.3g: the CPU should idle most of the time", lu)
	}
}
