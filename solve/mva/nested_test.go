package mva

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/queueing"
	"github.com/perfcast/perfcast/solve"
)

// TestFlowEquivalentExact checks the flow-equivalent server against queues
// whose means are known in closed form.
func TestFlowEquivalentExact(t *testing.T) {
	near := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
			t.Errorf("%s: got %.12g, want %.12g", name, got, want)
		}
	}
	// No delay inside the pool: its holders only queue at the one unit,
	// first come first served, so the whole is an M/M/1 queue however
	// many units the pool has: wait + hold = 1/(μ − λ).
	for _, units := range []int{2, 5} {
		f := &flowEquivalent{units: units, visits: 1, service: 1, second: 2, rate: 0.7}
		inside, wait, ok := f.solve()
		if !ok {
			t.Fatalf("M/M/1: unstable")
		}
		near("M/M/1 sojourn", inside+wait, 1/(1-0.7))
	}
	// Nothing to queue for inside: the pool is an M/M/c queue with the
	// delay as its service, and the wait is Erlang C's.
	f := &flowEquivalent{units: 3, visits: 1e-12, service: 1e-12, second: 2e-24, z: 1, rate: 2.4}
	inside, wait, ok := f.solve()
	if !ok {
		t.Fatalf("M/M/3: unstable")
	}
	near("M/M/3 hold", inside, 1)
	near("M/M/3 wait", wait, queueing.MMcWait(3, 2.4))
	// Beyond the throughput with every unit held: no answer.
	f = &flowEquivalent{units: 2, visits: 1, service: 1, second: 2, z: 1, rate: 1}
	if _, _, ok := f.solve(); ok {
		t.Errorf("overloaded pool: got an answer")
	}
}

// nestedPools are models where a pool of several units encloses a
// one-unit pool its holders queue for: a database's connections around a
// process's CPU slot, a thread pool around a lock.
func nestedPools() map[string]string {
	exp := func(rate string) string {
		return `perfcast: 1
hosts: {h: {}}
components:
  db:
    host: h
    operations:
      q: {steps: [{hold: {resource: conns, steps: [{hold: {resource: slot, steps: [{cpu: exp(1ms)}]}}, {delay: exp(2ms)}]}}]}
passive: {conns: {capacity: 3}, slot: {capacity: 1}}
workload:
  w: {open: {rate: ` + rate + `}, steps: [{call: db/q}]}
`
	}
	return map[string]string{
		// 71 and 86 % of the 789/s the three connections can pass.
		"connections around a slot, 560/s": exp("560"),
		"connections around a slot, 680/s": exp("680"),
		"threads around a lock": `perfcast: 1
hosts: {h: {}}
components:
  svc:
    host: h
    operations:
      a: {steps: [{cpu: 0.2ms}, {hold: {resource: threads, steps: [{hold: {resource: lock, steps: [{cpu: "lognormal(2ms, cv=0.3)"}]}}, {delay: "lognormal(3ms, cv=0.5)"}]}}]}
      b: {steps: [{hold: {resource: threads, steps: [{delay: 1ms}, {hold: {resource: lock, steps: [{cpu: "exp(0.3ms)"}]}}]}}]}
passive: {threads: {capacity: 6}, lock: {capacity: 1}}
workload:
  wa: {open: {rate: 237.5}, steps: [{call: svc/a}]}
  wb: {open: {rate: 760}, steps: [{call: svc/b}]}
`,
		"a catalog's connections around its slot, with a fan-out": catalogFanOut("{}",
			`{hold: {resource: db, steps: [{hold: {resource: slot, steps: [{cpu: "exp(0.1ms)"}]}}]}}`, "", 95, 31.35),
	}
}

// TestNestedPoolsVsSim compares the analytical solver with the simulator
// where a pool of several units encloses a one-unit pool. Solving each
// pool on its own, as before nestedWaits, reported the connections at
// 680/s overloaded (the simulator and a Markov chain of the model agree on
// 8.9 ms), put the one at 560/s at +42 % and the threads around a lock at
// +39 and +81 %. The flow-equivalent server is not exact here (the chain
// of the exponential model gives 5.21 and 8.92 ms where it gives 5.67 and
// 10.4: given the number at the pool, its holders are not spread as in the
// closed network), so the tolerance is 20 % beyond the simulation's 95 %
// confidence interval: the errors were +9, +16, +7, +15, +1 and +17 %.
func TestNestedPoolsVsSim(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates")
	}
	compareWithSim(t, nestedPools(), 0.2)
}

// BenchmarkNestedPools solves the catalog of nestedPools: connections
// around a CPU slot, with a fan-out of six.
func BenchmarkNestedPools(b *testing.B) {
	m, err := model.Parse([]byte(nestedPools()["a catalog's connections around its slot, with a fan-out"]), "catalog")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := New().Solve(context.Background(), m, solve.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSupportsNestedPools: where the waits for a pool around a one-unit
// pool are a large part of a workload's response time, Supports leaves
// the model to the simulator; where they are not, it does not mention
// them.
func TestSupportsNestedPools(t *testing.T) {
	src := nestedPools()["threads around a lock"]
	for _, tc := range []struct {
		load float64
		want bool
	}{{1, true}, {0.02, false}} {
		m, err := model.Parse([]byte(src), "nested")
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range m.Workloads {
			w.Open.Rate *= tc.load
		}
		ok, reasons := Supports(m)
		found := false
		for _, r := range reasons {
			found = found || strings.Contains(r, "flow-equivalent server")
		}
		if found != tc.want || ok == tc.want {
			t.Errorf("load ×%g: ok %v, reasons %q; want the flow-equivalent server reported: %v", tc.load, ok, reasons, tc.want)
		}
	}
}
