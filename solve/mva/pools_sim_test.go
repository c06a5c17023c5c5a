package mva

import (
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve"
	"github.com/perfcast/perfcast/solve/sim"
)

// poolsAndJoins are models where limited pools enclose CPU work on a
// shared host, the case the bounded stretch and the in-line waits for pools
// are for: locks and thread pools of one to four units at 70 % busy, and a
// one-unit pool held briefly by one workload and long by another, beside
// work outside it, as in a process limited to one thread; a fan-out to
// lists far less variable than exponential, the case the join of gamma
// distributions is for; a fan-out whose lists queue together at a
// one-unit pool another workload holds long, and the same through a pool
// of fewer units than lists, sending work to the one-unit pool.
func poolsAndJoins(t *testing.T) map[string]string {
	out := map[string]string{}
	for _, f := range layeredFamily() {
		for _, c := range []int{1, 2, 4} {
			for _, kind := range []string{"passive", "threads"} {
				if f.name == fmt.Sprintf("%s c=%d load=0.7", kind, c) {
					out[f.name] = f.src
				}
			}
		}
	}
	// oneSlot is a one-unit slot held briefly by lookups and, after some
	// CPU outside it, by a listing whose steps there are list, with its
	// bursts' distribution for BURST.
	oneSlot := func(burst, list string) string {
		return fmt.Sprintf(`perfcast: 1
hosts: {h: {}}
components:
  app:
    host: h
    operations:
      list: {steps: [{cpu: "lognormal(0.5ms, cv=0.2)"}, %s]}
      get: {steps: [{hold: {resource: slot, steps: [{cpu: exp(0.2ms)}]}}, {delay: 1ms}]}
passive:
  slot: {capacity: 1}
workload:
  browse: {open: {rate: 60}, steps: [{call: app/list}]}
  lookup: {open: {rate: 300}, steps: [{call: app/get}]}
`, strings.ReplaceAll(list, "BURST", burst))
	}
	out["one slot, short and long"] = oneSlot("lognormal(5ms, cv=0.2)", `{hold: {resource: slot, steps: [{cpu: "BURST"}]}}`)
	// A request that takes the slot again after letting it go (a Go
	// handler resuming after it blocked) finds the holder it let in just
	// begun, not half done (see reentry): bursts less variable than
	// exponential wait longer than an outside arrival, more variable ones
	// less. (Without that, the bursts of cv 0.2 were 11.5 % short of the
	// simulator, those of cv 2 16 % long, the geometric loop 10 % short.)
	const resumes = `{hold: {resource: slot, steps: [{cpu: "BURST"}]}}, {loop: {times: {pmf: {"0": 0.2, "1": 0.5, "2": 0.3}}, steps: [{delay: "exp(0.2ms)"}, {hold: {resource: slot, steps: [{cpu: "BURST"}]}}]}}, {delay: 0.2ms}`
	out["one slot, taken again"] = oneSlot("lognormal(3ms, cv=0.2)", resumes)
	out["one slot, taken again, bursts of cv 2"] = oneSlot("hyperexp(3ms, cv=2)", resumes)
	out["one slot, taken a geometric number of times"] = oneSlot("gamma(1.5ms, cv=0.3)",
		`{loop: {times: "geometric(mean=3)", steps: [{hold: {resource: slot, steps: [{cpu: "BURST"}]}}, {delay: "exp(0.3ms)"}]}}`)
	out["fan-out through one slot"] = `perfcast: 1
hosts: {h: {}}
components:
  app:
    host: h
    operations:
      list: {steps: [{hold: {resource: slot, steps: [{cpu: "lognormal(4ms, cv=0.2)"}]}}]}
      get: {steps: [{delay: 0.2ms}, {hold: {resource: slot, steps: [{cpu: "exp(0.15ms)"}]}}, {delay: "lognormal(0.1ms, cv=2)"}]}
      rec: {steps: [{cpu: 0.3ms}, {parallel: [[{call: app/get}], [{call: app/get}], [{call: app/get}], [{call: app/get}], [{call: app/get}], [{call: app/get}]]}]}
passive:
  slot: {capacity: 1}
workload:
  browse: {open: {rate: 100}, steps: [{call: app/list}]}
  rec: {open: {rate: 30}, steps: [{call: app/rec}]}
`
	// The catalog's pattern: six lookups through four connections to a
	// CPU slot, each sending work to the slot before it lets its
	// connection go, which the lookups still waiting for one then queue
	// behind.
	out["fan-out through connections, sending"] = catalogFanOut("{cores: 8}",
		`{delay: 0.135ms}, {hold: {resource: db, steps: [{hold: {resource: slot, steps: [{cpu: "exp(0.1ms)"}]}}, {send: cat/bg}]}}`,
		`      bg: {steps: [{hold: {resource: slot, steps: [{cpu: "exp(0.167ms)"}]}}]}
`, 23, 7.67)
	// The same lookups sending their work just after they let their
	// connection go: it reaches the slot behind the lookup the release
	// lets in (sentAhead's work sent after a release; without it −22 %).
	bg := `      bg: {steps: [{hold: {resource: slot, steps: [{cpu: "exp(0.52ms)"}]}}]}
`
	out["fan-out through connections, sending after"] = catalogFanOut("{cores: 8}",
		`{delay: 0.135ms}, {hold: {resource: db, steps: [{hold: {resource: slot, steps: [{cpu: "exp(0.22ms)"}]}}, {delay: 0.13ms}]}}, {send: cat/bg}`, bg, 23, 7.67)
	// The listing and the lookups both sending work to the slot from
	// inside their connections, as extracted services do with their CPU
	// outside spans: the slot's holds inside the connections (the
	// flow-equivalent server's) are told apart from the sent ones (taken
	// together, the listing's were half as long: −5.6 %).
	both := catalogFanOut("{cores: 8}",
		`{delay: 0.135ms}, {hold: {resource: db, steps: [{hold: {resource: slot, steps: [{cpu: "exp(0.22ms)"}]}}, {delay: 0.13ms}, {send: cat/bg}]}}`, bg, 23, 7.67)
	out["fan-out through connections, all sending"] = strings.Replace(both, `{delay: "hyperexp(1.76ms, cv=1.9)"}]}}]}`, `{delay: "hyperexp(1.76ms, cv=1.9)"}, {send: cat/bg}]}}]}`, 1)
	out["fan-out of four"] = `perfcast: 1
hosts: {h: {cpu: {cores: 4}}, r1: {}, r2: {}, r3: {}, r4: {}}
components:
  front:
    host: h
    operations:
      fan: {steps: [{cpu: exp(0.5ms)}, {parallel: [[{call: s1/q}], [{call: s2/q}], [{call: s3/q}], [{call: s4/q}]]}]}
  s1: {host: r1, operations: {q: {steps: [{cpu: "lognormal(4ms, cv=0.3)"}, {delay: "lognormal(6ms, cv=0.2)"}]}}}
  s2: {host: r2, operations: {q: {steps: [{cpu: "lognormal(4ms, cv=0.3)"}, {delay: "lognormal(6ms, cv=0.2)"}]}}}
  s3: {host: r3, operations: {q: {steps: [{cpu: "lognormal(4ms, cv=0.3)"}, {delay: "lognormal(6ms, cv=0.2)"}]}}}
  s4: {host: r4, operations: {q: {steps: [{delay: "lognormal(12ms, cv=0.1)"}]}}}
workload:
  w: {open: {rate: 50}, steps: [{call: front/fan}]}
`
	// Two services limited to one thread each on one core, the busier
	// slot 82 and 85 % busy, with bursts of one shape other than
	// exponential: the occupancy chain's runs (runsFactor) scale the
	// waits for the bursts as they are (without them, the holding times
	// taken as independent, the first's a was 10 % short and the
	// second's b 29 %).
	out["coupled slots, bursts of cv 2"] = coupledSlots(t, "hyperexp(2ms, cv=2)", "hyperexp(1ms, cv=2)", 300, 300)
	out["coupled slots, bursts of cv 0.5"] = coupledSlots(t, "gamma(2ms, cv=0.5)", "gamma(1ms, cv=0.5)", 200, 500)
	// The same two services beside work in no pool (a third process
	// without a slot): the occupancy chain with that work as a group
	// whose bursts never wait. (The closed form, which such stations had
	// before, put a and b at +120 and +25 % in the first, a at +162 %
	// in the second.)
	free := func(a, b, f string, rates ...float64) string {
		return withFreeWork(t, coupledSlots(t, a, b, rates[0], rates[1]), f, rates[2])
	}
	out["coupled slots and free work"] = free("exp(2ms)", "exp(1ms)", "exp(1ms)", 200, 200, 200)
	out["coupled slots and free work, uneven"] = free("exp(5ms)", "exp(0.5ms)", "exp(1ms)", 100, 300, 150)
	// On two cores (the closed form: a at 4.6 times the simulator's).
	out["coupled slots and free work, two cores"] = strings.Replace(free("exp(2ms)", "exp(1ms)", "exp(1ms)", 300, 300, 600),
		"hosts: {h: {}}", "hosts: {h: {cpu: {cores: 2}}}", 1)
	// Three event-loop processes of one service on four cores, each
	// request bound to one of them (a partitioned slot), computing
	// before and after a call, the slots 70 % busy.
	out["event-loop processes, partitioned slots"] = `perfcast: 1
hosts: {h: {cpu: {cores: 4}}, db: {}}
components:
  api: {host: h, operations: {get: {steps: [{hold: {resource: slots, steps: [{cpu: exp(2ms)}]}}, {call: store/q}, {hold: {resource: slots, steps: [{cpu: exp(1ms)}]}}]}}}
  store: {host: db, operations: {q: {steps: [{delay: exp(8ms)}]}}}
passive: {slots: {capacity: 3, partitioned: true, before_span: true}}
workload:
  w: {open: {rate: 700}, steps: [{call: api/get}]}
`
	// Two Go services with GOMAXPROCS 1 on one core (a CPU slot each),
	// driven by closed users: at most two bursts share the core, whatever
	// the number of users waiting for the slots.
	for _, n := range []int{5, 10} {
		out[fmt.Sprintf("closed slots, %d users", n)] = fmt.Sprintf(`perfcast: 1
hosts: {box: {}}
components:
  front: {host: box, operations: {page: {steps: [{hold: {resource: front-slot, steps: [{cpu: exp(1ms)}]}}, {call: store/query}]}}}
  store: {host: box, operations: {query: {steps: [{hold: {resource: store-slot, steps: [{cpu: exp(4ms)}]}}, {delay: exp(2ms)}]}}}
passive: {front-slot: {capacity: 1}, store-slot: {capacity: 1}}
workload:
  users: {closed: {users: %d, think: exp(100ms)}, steps: [{call: front/page}]}
`, n)
	}
	return out
}

// coupledSlots is solve/testdata/coupled-slots.yaml with bursts a and b
// at the rates given.
func coupledSlots(t *testing.T, a, b string, rateA, rateB float64) string {
	t.Helper()
	tmpl, err := os.ReadFile("../testdata/coupled-slots.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src := fmt.Sprintf(string(tmpl), rateA, rateB)
	for _, e := range [][2]string{{"exp(2ms)", a}, {"exp(1ms)", b}} {
		edited := strings.Replace(src, "cpu: "+e[0], fmt.Sprintf("cpu: %q", e[1]), 1)
		if edited == src {
			t.Fatalf("the fixture has no cpu: %s", e[0])
		}
		src = edited
	}
	return src
}

// withFreeWork adds to a coupledSlots model a third service, f, without a
// slot, whose bursts of the given distribution workload wf sends at rate.
func withFreeWork(t *testing.T, src, burst string, rate float64) string {
	t.Helper()
	edited := strings.Replace(src, "passive:", fmt.Sprintf("  f: {host: h, operations: {op: {steps: [{cpu: %q}]}}}\npassive:", burst), 1)
	if edited == src {
		t.Fatal("the model has no passive section")
	}
	return edited + fmt.Sprintf("  wf: {open: {rate: %g}, steps: [{call: f/op}]}\n", rate)
}

// catalogFanOut is the testbed catalog's shape: a listing (browse) and six
// parallel lookups (rec) hold a pool of four connections around a one-unit
// CPU slot, on host h with the given cpu; get is the lookup's steps and
// ops further operations of the catalog.
func catalogFanOut(cpu, get, ops string, browse, rec float64) string {
	return fmt.Sprintf(`perfcast: 1
hosts: {h: {cpu: %s}}
components:
  gw:
    host: h
    operations:
      rec: {steps: [{cpu: 0.26ms}, {parallel: [[{call: cat/get}], [{call: cat/get}], [{call: cat/get}], [{call: cat/get}], [{call: cat/get}], [{call: cat/get}]]}]}
  cat:
    host: h
    operations:
      list: {steps: [{hold: {resource: db, steps: [{hold: {resource: slot, steps: [{cpu: "lognormal(4.9ms, cv=0.17)"}]}}, {delay: "hyperexp(1.76ms, cv=1.9)"}]}}]}
      get: {steps: [%s]}
%spassive: {db: {capacity: 4}, slot: {capacity: 1}}
workload:
  browse: {open: {rate: %g}, steps: [{call: cat/list}]}
  rec: {open: {rate: %g}, steps: [{call: gw/rec}]}
`, cpu, get, ops, browse, rec)
}

// TestPoolsAndJoinsVsSim compares the analytical solver with the
// simulator on poolsAndJoins: every workload's mean response time must be
// within 5 % of the simulated one, beyond the simulation's 95 % confidence
// interval. (Counting the holders of a pool as competing with each other
// at the CPU, apportioning waits for a pool in proportion to the holding
// time, and joining lists as exponential, as an earlier version did, was
// off by 9 to 35 % on the pools here; counting the closed users that wait
// for the CPU slots as competing at the CPU, +13 and +53 % on the closed
// slots; leaving out the work the lists send ahead of each other, −21 %
// on the fan-out through connections.)
func TestPoolsAndJoinsVsSim(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates")
	}
	compareWithSim(t, poolsAndJoins(t), 0.05)
}

// compareWithSim solves each model of cases (name to YAML) with both
// solvers and requires every workload's analytical mean response time
// within the relative tolerance tol beyond the simulation's 95 %
// confidence interval (simulated to a precision of 1 %).
func compareWithSim(t *testing.T, cases map[string]string, tol float64) {
	t.Helper()
	for _, name := range slices.Sorted(maps.Keys(cases)) {
		m, err := model.Parse([]byte(cases[name]), name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		a, err := New().Solve(context.Background(), m, solve.Options{})
		if err != nil {
			t.Fatalf("%s: mva: %v", name, err)
		}
		s, err := sim.New().Solve(context.Background(), m, solve.Options{Seed: 1, Precision: 0.01})
		if err != nil {
			t.Fatalf("%s: sim: %v", name, err)
		}
		if !a.Stable || !s.Stable {
			t.Fatalf("%s: stable: mva %v, sim %v", name, a.Stable, s.Stable)
		}
		for _, w := range slices.Sorted(maps.Keys(s.Workloads)) {
			want := s.Workloads[w].ResponseTime
			got := a.Workloads[w].ResponseTime.Mean
			lo, hi := want.Mean, want.Mean
			if want.CI95 != nil {
				lo, hi = want.CI95[0], want.CI95[1]
			}
			off := 100 * (got - want.Mean) / want.Mean
			if !(got >= lo*(1-tol) && got <= hi*(1+tol)) {
				t.Errorf("%s: workload %s: mva %.4g ms, sim %.4g ms (95 %% CI %.4g–%.4g), off by %+.1f %%", name, w, 1e3*got, 1e3*want.Mean, 1e3*lo, 1e3*hi, off)
			} else {
				t.Logf("%s: workload %s: mva %.4g ms, sim %.4g ms, %+.1f %%", name, w, 1e3*got, 1e3*want.Mean, off)
			}
		}
	}
}

// TestNoUsersNoLoad: a closed workload without users changes nothing, also
// at a processor-sharing station where a pool bounds the open workload's
// CPU work. (The bounded stretch was dropped there for the whole station:
// the slot's holders competed with each other at the CPU, and the slot
// came out overloaded at 300/s, saturating at 222/s.)
func TestNoUsersNoLoad(t *testing.T) {
	const src = `perfcast: 1
hosts: {h: {}}
components:
  app:
    host: h
    operations:
      get: {steps: [{cpu: 0.5ms}, {hold: {resource: slot, steps: [{cpu: exp(2ms)}]}}]}
passive: {slot: {capacity: 1}}
workload:
  w: {open: {rate: 300}, steps: [{call: app/get}]}
`
	want := solveStable(t, src).Workloads["w"].ResponseTime.Mean
	got := solveStable(t, src+"  idle: {closed: {users: 0, think: 1s}, steps: [{call: app/get}]}\n").Workloads["w"].ResponseTime.Mean
	if math.Abs(got-want) > 1e-9*want {
		t.Errorf("with a closed workload of 0 users: %.6g ms, without: %.6g ms", 1e3*got, 1e3*want)
	}
}
