package extract_test

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/perfcast/perfcast/extract"
	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve"
	"github.com/perfcast/perfcast/solve/sim"
	"github.com/perfcast/perfcast/tracegen"
)

// slottedModel is a host of one core shared by two services, the way a
// Go service with GOMAXPROCS 1 shares a machine: the store runs one
// request's CPU at a time (a slot of capacity 1, FIFO), while the host's
// processor sharing divides the core between the services. CPU
// utilization is 45 % at 50 requests/s.
const slottedModel = `perfcast: 1
name: slotted
hosts:
  box: {cpu: {cores: 1}}
components:
  front:
    host: box
    operations:
      page:
        steps:
          - cpu: exp(1ms)
          - call: store/query
  store:
    host: box
    operations:
      query:
        steps:
          - hold:
              resource: store-procs
              steps: [{cpu: gamma(8ms, cv=0.3)}]
passive:
  store-procs: {capacity: 1}
workload:
  pages:
    open: {rate: 50/s}
    steps: [{call: front/page}]
`

// slottedRoundTrip records the system of yaml at its load and at 1.6
// times it, extracts a model from the first with the store's one CPU slot
// declared, and compares the model's mean response time of page with the
// measured one at both loads.
func slottedRoundTrip(t *testing.T, yaml, name string) (x *extract.Result, cfg *extract.Config, base, heavy *observed, cs []comparison) {
	t.Helper()
	cfg = &extract.Config{Hosts: map[string]extract.HostConfig{"box": {Cores: 1}}, CPUSlots: map[string]int{"store": 1}}
	x, base, heavy, cs = pageRoundTrip(t, yaml, name, 1.6, sim.RecordOptions{}, nil, cfg)
	return x, cfg, base, heavy, cs
}

// pageRoundTrip records the system of yaml at its load and at factor
// times it (20 000 requests each, 6 000 in short mode), with the recorder's
// options rec and, where topts is not nil, the trace writer's options it
// gives for a seed; extracts a model from the first with cfg; and
// compares the model's mean response time of page with the measured one
// at both loads.
func pageRoundTrip(t *testing.T, yaml, name string, factor float64, rec sim.RecordOptions, topts func(seed uint64) tracegen.Options, cfg *extract.Config) (x *extract.Result, base, heavy *observed, cs []comparison) {
	t.Helper()
	m0, err := model.Parse([]byte(yaml), name+".yaml")
	if err != nil {
		t.Fatal(err)
	}
	rec.Requests = 20000
	if testing.Short() {
		rec.Requests = 6000
	}
	if topts == nil {
		topts = func(seed uint64) tracegen.Options { return tracegen.Options{Seed: seed} }
	}
	dir := t.TempDir()
	record := func(m *model.Model, seed uint64) *observed {
		rec.Seed = seed
		return generateTraces(t, m, rec, topts(seed), dir)
	}
	base = record(m0, 5)
	heavy = record(withLoad(t, m0, factor), 6)
	x, err = extractRun(context.Background(), []string{base.path}, name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("extracted:\n%s", x.Model.Marshal())
	for _, l := range []struct {
		label  string
		factor float64
		obs    *observed
	}{{"1x", 1, base}, {fmt.Sprintf("%gx", factor), factor, heavy}} {
		pred := solveSim(t, withLoad(t, x.Model, l.factor)).Workloads["page"]
		if pred == nil {
			t.Fatal("no workload page")
		}
		cs = append(cs, compare(l.label+" mean response", pred.ResponseTime.Mean, pred.ResponseTime.CI95, l.obs.rt, l.obs.rt.mean))
	}
	return x, base, heavy, cs
}

// TestCPUSlotsRoundTrip extracts the slotted system with cpu_slots
// declared and predicts its response time at the observed load and at 1.6
// times that load (72 % CPU) within the round trip's tolerance, and closer
// to the truth than the model extracted without the slots, whose processor
// sharing stretches the store's long bursts.
func TestCPUSlotsRoundTrip(t *testing.T) {
	x, cfg, base, heavy, cs := slottedRoundTrip(t, slottedModel, "slotted")
	if p := x.Model.PassiveResource("store-cpu-slots"); p == nil || p.Capacity != 1 || !p.BeforeSpan {
		t.Fatalf("no store-cpu-slots of capacity 1 taken before spans start:\n%s", x.Model.Marshal())
	}
	check(t, cs)
	cfg.CPUSlots = nil
	plain, err := extractRun(context.Background(), []string{base.path}, "plain", cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := solveSim(t, withLoad(t, plain.Model, 1.6)).Workloads["page"]
	t.Logf("without cpu_slots, 1.6x mean response %.4g (measured %.4g)", p.ResponseTime.Mean, heavy.rt.mean)
	if withSlots, without := math.Abs(cs[1].predicted-heavy.rt.mean), math.Abs(p.ResponseTime.Mean-heavy.rt.mean); withSlots >= without {
		t.Errorf("at 1.6x the model with cpu_slots is off by %.3g s, no better than without (%.3g s)", withSlots, without)
	}
}

// slottedIOModel is slottedModel with 2 ms off the CPU in every query
// after its CPU burst (a read, say), which the slot does not cover: the
// store's own time off the CPU holds the wait for its slot, the wait for
// the CPU while the front runs, and that read.
const slottedIOModel = `perfcast: 1
name: slotted-io
hosts:
  box: {cpu: {cores: 1}}
components:
  front:
    host: box
    operations:
      page:
        steps:
          - cpu: exp(1ms)
          - call: store/query
  store:
    host: box
    operations:
      query:
        steps:
          - hold:
              resource: store-procs
              steps: [{cpu: gamma(8ms, cv=0.3)}]
          - delay: exp(2ms)
passive:
  store-procs: {capacity: 1}
workload:
  pages:
    open: {rate: 50/s}
    steps: [{call: front/page}]
`

// queuedIOModel is the same store serving one request at a time, a
// request waiting for it before the store's span starts, the way a server
// that needs its one thread (a Go server its one GOMAXPROCS) to begin a
// request does: the wait is in the front's time outside the store's span,
// not in the store's own time.
const queuedIOModel = `perfcast: 1
name: queued-io
hosts:
  box: {cpu: {cores: 1}}
components:
  front:
    host: box
    operations:
      page:
        steps:
          - cpu: exp(1ms)
          - call: store/query
  store:
    host: box
    threads: 1
    operations:
      query:
        steps:
          - cpu: gamma(8ms, cv=0.3)
          - delay: exp(2ms)
workload:
  pages:
    open: {rate: 50/s}
    steps: [{call: front/page}]
`

// TestCPUSlotWaitsTakenOutOnce extracts stores whose queries spend 2 ms
// off the CPU besides waiting, with cpu_slots declared, and checks that
// the waits the model makes again are taken out of their own time once,
// and only those. The store's own load is not CPU a burst of it waits for
// (its one slot runs one at a time), so the CPU wait is the front's share
// of the core, about 0.4 ms, not the 6.5 ms the whole core's load would
// give; where the slot is waited for before the span starts, it is in the
// front's time outside the span, where extraction takes it out, and not in
// the store's own time. Taking either out of the own time, the query's
// 2 ms off the CPU went: the extracted model had no delay there. It now
// keeps more than half of it, and predicts the response time at the
// observed load and at 1.6 times it (72 % CPU).
func TestCPUSlotWaitsTakenOutOnce(t *testing.T) {
	for _, c := range []struct{ name, yaml string }{
		{"slot in the span", slottedIOModel},
		{"thread before the span", queuedIOModel},
		{"slot before the span", strings.Replace(slottedIOModel, "store-procs: {capacity: 1}", "store-procs: {capacity: 1, before_span: true}", 1)},
	} {
		t.Run(c.name, func(t *testing.T) {
			x, _, base, _, cs := slottedRoundTrip(t, c.yaml, c.name)
			q := x.Model.Operation("store/query")
			if q == nil {
				t.Fatal("no store/query")
			}
			if d := fixedDelay(q); d < 1e-3 {
				t.Errorf("store/query keeps %.3g ms off the CPU of the 2 ms it spends there besides waiting (its own time off the CPU: %.3g ms)", d*1e3, base.offCPU["store/query"]*1e3)
			}
			check(t, cs)
		})
	}
}

// goAloneModel is a Go service alone on a machine of two cores with
// GOMAXPROCS 2, 74 % busy: a request waits for a slot before its span
// starts, and its bursts, never more than the cores, wait for no core.
// An item resumes on the CPU after 6 ms off it and waits for a slot again
// inside its span; a listing ends with 3 ms off the CPU.
const goAloneModel = `perfcast: 1
name: go-alone
hosts:
  app: {cpu: {cores: 2}}
components:
  api:
    host: app
    operations:
      item:
        steps:
          - hold: {resource: procs, steps: [{cpu: exp(3ms)}]}
          - delay: exp(6ms)
          - hold: {resource: procs, steps: [{cpu: exp(1ms)}]}
      list:
        steps:
          - hold: {resource: procs, steps: [{cpu: exp(4ms)}]}
          - delay: 3ms
passive:
  procs: {capacity: 2, before_span: true}
workload:
  item:
    open: {rate: 250/s}
    steps: [{call: api/item}]
  list:
    open: {rate: 120/s}
    steps: [{call: api/list}]
`

// TestGoServiceAlone extracts goAloneModel's traces with its two cores and
// two CPU slots declared. No trace shows the wait for the first slot,
// before the spans start, and no burst waits for a core, so nothing is
// taken out of the time off the CPU: the listing keeps its 3 ms, and the
// model predicts each operation's span and the CPU's utilization at the
// observed load within the round trip's tolerance. Taking out the wait
// for the slot and a wait for the CPU at the host's load (as extraction
// did before), the listing kept no delay, the item 0.86 ms of its 9.6 off
// the CPU, and the spans came out 43 and 64 % short.
func TestGoServiceAlone(t *testing.T) {
	_, obs, x := extractTruth(t, goAloneModel, "go-alone", 60000, 20000, &extract.Config{
		Hosts: map[string]extract.HostConfig{"app": {Cores: 2}}, CPUSlots: map[string]int{"api": 2}})
	if d := fixedDelay(x.Model.Operation("api/list")); math.Abs(d-3e-3) > 0.1e-3 {
		t.Errorf("api/list keeps %.3g ms off the CPU of the 3 ms it spends there (its own time off the CPU: %.3g ms)", d*1e3, obs.offCPU["api/list"]*1e3)
	}
	cs, pred := spanComparisons(t, x.Model, obs, "api/item", "api/list")
	u := pred.Resources[model.CPUResource("app")]
	cs = append(cs, compare("app CPU utilization", u.Utilization, u.UtilizationCI95, obs.util[model.CPUResource("app")], obs.util[model.CPUResource("app")].mean))
	check(t, cs)
}

// bareHopModel is a Go front end on two cores calling a Go store on two
// others, each service with GOMAXPROCS 2: the store's requests wait for
// its slots (70 % busy) before its spans start.
const bareHopModel = `perfcast: 1
name: bare-hop
hosts:
  edge: {cpu: {cores: 2}}
  back: {cpu: {cores: 2}}
components:
  front:
    host: edge
    operations:
      page:
        steps:
          - hold: {resource: front-procs, steps: [{cpu: exp(2ms)}]}
          - call: store/get
          - hold: {resource: front-procs, steps: [{cpu: exp(1ms)}]}
  store:
    host: back
    operations:
      get:
        steps:
          - hold: {resource: store-procs, steps: [{cpu: exp(4ms)}]}
          - delay: exp(2ms)
passive:
  front-procs: {capacity: 2, before_span: true}
  store-procs: {capacity: 2, before_span: true}
workload:
  pages:
    open: {rate: 350/s}
    steps: [{call: front/page}]
`

// TestBareHopSlotWait extracts bareHopModel from traces whose front end
// calls the store with no client span, the store's server span a child of
// the front's: the store's wait for its slot, before its span, then falls
// in the front's own time, and the model makes it again in the store. So
// it is taken out of the front's time off the CPU (bareCallWait), and the
// model predicts the front's span within the round trip's tolerance.
// Before, the front kept the store's 3.9 ms wait as a delay of its own,
// and its span came out 26 % slow.
func TestBareHopSlotWait(t *testing.T) {
	obs, x := extractBare(t, bareHopModel, "bare-hop", &extract.Config{
		Hosts: map[string]extract.HostConfig{"edge": {Cores: 2}, "back": {Cores: 2}}, CPUSlots: map[string]int{"*": 2}})
	cs, _ := spanComparisons(t, x.Model, obs, "front/page")
	check(t, cs)
}

// barePoolModel is two services calling a store of four threads (76 %
// busy), whose requests wait for a thread before their spans start.
const barePoolModel = `perfcast: 1
name: bare-pool
hosts:
  edge: {cpu: {cores: 4}}
  mid: {cpu: {cores: 4}}
  back: {cpu: {cores: 4}}
components:
  front:
    host: edge
    operations:
      page:
        steps:
          - cpu: exp(1ms)
          - call: store/get
  admin:
    host: mid
    operations:
      report:
        steps:
          - cpu: exp(1ms)
          - call: store/get
  store:
    host: back
    threads: 4
    operations:
      get:
        steps:
          - cpu: exp(3ms)
          - delay: exp(5ms)
workload:
  pages:
    open: {rate: 250/s}
    steps: [{call: front/page}]
  reports:
    open: {rate: 130/s}
    steps: [{call: admin/report}]
`

// TestBarePoolWait extracts barePoolModel from traces with no client
// spans: the store's pool is found from its spans' concurrency, its wait,
// before the spans, falls in the callers' own time, and is taken out
// there (poolWait, 3.4 ms against the simulator's 3.3), so that both
// callers' spans are predicted within the round trip's tolerance. The
// bound the callers' calls show is the pool's, not a lock of theirs.
// Before, the wait stayed in both callers' delays and the model made it
// again: +28 and +20 %; and the front's calls, bounded by the pool, were
// read as a lock of four it held.
func TestBarePoolWait(t *testing.T) {
	obs, x := extractBare(t, barePoolModel, "bare-pool", &extract.Config{
		Hosts: map[string]extract.HostConfig{"edge": {Cores: 4}, "mid": {Cores: 4}, "back": {Cores: 4}}})
	if c := x.Model.Component("store"); c == nil || c.Threads != 4 {
		t.Fatalf("no pool of 4 threads found in the store:\n%s", x.Model.Marshal())
	}
	if len(x.Model.Passive) > 0 {
		t.Errorf("passive resources %q found where there is none", x.Model.Passive[0].Name)
	}
	cs, _ := spanComparisons(t, x.Model, obs, "front/page", "admin/report")
	check(t, cs)
}

// bareLockModel is barePoolModel with the store on two replicas of three
// threads each, and the front end holding a lock of three around its
// calls to it.
var bareLockModel = strings.Replace(strings.NewReplacer(
	"back: {cpu: {cores: 4}}", "back: {replicas: 2, cpu: {cores: 4}}",
	"threads: 4", "threads: 3",
	"rate: 250/s", "rate: 220/s",
	"rate: 130/s", "rate: 330/s",
	"workload:", "passive:\n  front-lock: {capacity: 3}\nworkload:",
).Replace(barePoolModel), "- call: store/get", "- hold: {resource: front-lock, steps: [{call: store/get}]}", 1)

// TestBareLockReplicatedPool extracts bareLockModel from traces with no
// client spans. The front's calls never run more than three at once: its
// lock's bound, not the store's, whose pools allow six over both
// replicas. Before, the bound was set against one replica's pool and
// dropped, and the front's page came out 11 % fast.
func TestBareLockReplicatedPool(t *testing.T) {
	obs, x := extractBare(t, bareLockModel, "bare-lock", &extract.Config{
		Hosts: map[string]extract.HostConfig{"edge": {Cores: 4}, "mid": {Cores: 4}, "store": {Cores: 4}}})
	if c := x.Model.Component("store"); c == nil || c.Threads != 3 {
		t.Fatalf("no pool of 3 threads found in the store:\n%s", x.Model.Marshal())
	}
	if len(x.Model.Passive) != 1 || x.Model.Passive[0].Capacity != 3 || x.Model.Passive[0].Host != "" {
		t.Fatalf("want the front's lock of 3 over the system, got:\n%s", x.Model.Marshal())
	}
	cs, _ := spanComparisons(t, x.Model, obs, "front/page", "admin/report")
	check(t, cs)
}

// extractBare extracts, with cfg, the traces of 60 000 requests of the
// model of src written without client spans (recordBare), the model named
// name; it returns what generate measured too.
func extractBare(t *testing.T, src, name string, cfg *extract.Config) (*observed, *extract.Result) {
	t.Helper()
	obs, path := recordBare(t, src, 60000)
	x, err := extractRun(context.Background(), []string{path}, name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("extracted:\n%s", x.Model.Marshal())
	return obs, x
}

// recordBare records the model of src at its load, as generate does, and
// writes the same run's traces again without client spans, each child of
// a client span hung on the client's parent (as callers whose HTTP client
// is not instrumented emit them). It returns what generate measured and
// the second file's path.
func recordBare(t *testing.T, src string, requests int64) (*observed, string) {
	t.Helper()
	m, err := model.Parse([]byte(src), "bare.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if testing.Short() {
		requests /= 3
	}
	dir := t.TempDir()
	obs := generate(t, m, 3, requests, dir)
	var spans []*sim.Span
	if _, err := sim.Record(context.Background(), m, sim.RecordOptions{Seed: 3, Requests: requests}, func(s *sim.Span) error {
		spans = append(spans, s)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	parent := map[uint64]uint64{}
	for _, s := range spans {
		if s.Kind == sim.SpanClient {
			parent[s.ID] = s.Parent
		}
	}
	var bare []*sim.Span
	for _, s := range spans {
		if s.Kind == sim.SpanClient {
			continue
		}
		if p, ok := parent[s.Parent]; ok {
			s.Parent = p
		}
		bare = append(bare, s)
	}
	path := filepath.Join(dir, "bare.otlp.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := tracegen.Write(f, bare, tracegen.Options{Seed: 3}); err != nil {
		t.Fatal(err)
	}
	return obs, path
}

// spanComparisons sets the spans of the entry operations ids that m
// predicts (by simulation) against those obs measured; it returns the
// prediction too.
func spanComparisons(t *testing.T, m *model.Model, obs *observed, ids ...string) ([]comparison, *solve.Result) {
	t.Helper()
	pred := solveSim(t, m)
	var cs []comparison
	for _, id := range ids {
		op := pred.Operations[id]
		if op == nil {
			t.Fatalf("nothing predicted for %s", id)
		}
		span := op.Span
		if span == nil { // nothing waited for before the span
			span = &op.ResponseTime
		}
		cs = append(cs, compare(id+" span", span.Mean, span.CI95, obs.rtOf[id], obs.rtOf[id].mean))
	}
	return cs, pred
}

// resumeModel is a Go front end on two cores calling a Go store on two
// others, each with GOMAXPROCS 2: the front runs 1 ms before its call and
// 2 ms after it, when it has its answer back, and needs one of its
// processors again for that, inside its span. Its slots are 68 % busy.
const resumeModel = `perfcast: 1
name: resume
hosts:
  edge: {cpu: {cores: 2}}
  back: {cpu: {cores: 2}}
components:
  front:
    host: edge
    operations:
      page:
        steps:
          - hold: {resource: front-procs, steps: [{cpu: exp(1ms)}]}
          - call: store/get
          - hold: {resource: front-procs, steps: [{cpu: exp(2ms)}]}
  store:
    host: back
    operations:
      get:
        steps:
          - hold: {resource: store-procs, steps: [{cpu: exp(2ms)}]}
          - delay: exp(2ms)
passive:
  front-procs: {capacity: 2, before_span: true}
  store-procs: {capacity: 2, before_span: true}
workload:
  pages:
    open: {rate: 450/s}
    steps: [{call: front/page}]
`

// TestResumeAfterCall extracts resumeModel's traces with the slots
// declared and predicts the page's span at 0.6, 1 and 1.2 times the load
// within the round trip's tolerance. The front's CPU is split around its
// call (resumeSplit) in about the truth's shares, each burst holding a
// slot, and its wait for a slot after the call is not kept as a fixed
// delay. Before, the CPU was one burst before the call and that wait, 1.2
// ms at the observed load, a fixed delay: the page came out 13 % slow at
// 0.6 times the load and 17 % fast at 1.2 times. A front whose time after
// its call is off the CPU (50 µs, shorter than the wait a slot would make
// there) keeps its CPU whole (slotBursts), as its truth does: split, it
// would wait for a slot it does not take.
func TestResumeAfterCall(t *testing.T) {
	noStoreSlots := strings.Replace(resumeModel, "- hold: {resource: store-procs, steps: [{cpu: exp(2ms)}]}", "- cpu: exp(2ms)", 1)
	twoCalls := strings.Replace(strings.Replace(noStoreSlots, "- call: store/get", "- call: store/get\n          - hold: {resource: front-procs, steps: [{cpu: 1us}]}\n          - call: store/get", 1),
		"- cpu: exp(2ms)", "- cpu: exp(1ms)", 1)
	offAfter := strings.Replace(strings.Replace(resumeModel, "exp(1ms)}]}", "exp(3ms)}]}", 1),
		"- hold: {resource: front-procs, steps: [{cpu: exp(2ms)}]}", "- delay: 50us", 1)
	for _, c := range []struct {
		name, yaml string
		bursts     []float64 // the truth's, by mean
		goClient   bool      // sim.RecordOptions.ClientEndsOnResume
		slots      map[string]int
		delay      [2]float64 // the page's fixed delay allowed, 0.25 ms at most if zero
	}{
		{"CPU after the call", resumeModel, []float64{1e-3, 2e-3}, false, nil, [2]float64{}},
		{"off the CPU after the call", offAfter, []float64{3e-3}, false, nil, [2]float64{}},
		{"wait after the call in the client span", resumeModel, []float64{1e-3, 2e-3}, true, nil, [2]float64{}},
		{"callee without slots", noStoreSlots, []float64{1e-3, 2e-3}, true, map[string]int{"front": 2}, [2]float64{}},
		// The wait for the slot between the calls (1 µs of CPU there, no
		// resume of 2 µs or more) the model does not make: it stays in the
		// calls' latency at the observed load, 1.05 ms per execution, and
		// the page comes out 10 % slow at 0.6 times the load. Taken out
		// with the wait after the second call, which the model makes, it
		// kept 0.11 ms and came out 5 and 12 % fast at 1 and 1.2 times.
		{"two calls, one resume", twoCalls, []float64{1e-3, 2e-3}, true, map[string]int{"front": 2}, [2]float64{0.8e-3, 1.4e-3}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := model.Parse([]byte(c.yaml), "resume.yaml")
			if err != nil {
				t.Fatal(err)
			}
			requests := int64(40000)
			if testing.Short() {
				requests = 15000
			}
			dir := t.TempDir()
			base := generateWith(t, m, sim.RecordOptions{Seed: 3, Requests: requests, ClientEndsOnResume: c.goClient}, dir)
			slots := c.slots
			if slots == nil {
				slots = map[string]int{"*": 2}
			}
			x, err := extractRun(context.Background(), []string{base.path}, "resume", &extract.Config{
				Hosts: map[string]extract.HostConfig{"edge": {Cores: 2}, "back": {Cores: 2}}, CPUSlots: slots})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("extracted:\n%s", x.Model.Marshal())
			page := x.Model.Operation("front/page")
			if page == nil {
				t.Fatal("no front/page")
			}
			var bursts []float64
			model.Walk(page.Steps, func(s *model.Step) {
				if s.Kind == model.StepCPU {
					bursts = append(bursts, s.Demand.Mean())
				}
			})
			ok := len(bursts) == len(c.bursts)
			for i := range bursts {
				ok = ok && math.Abs(bursts[i]-c.bursts[i]) <= 0.25e-3
			}
			if !ok {
				t.Errorf("front/page's CPU in bursts of %.3g s, want %.3g", bursts, c.bursts)
			}
			if d, want := fixedDelay(page), cmp.Or(c.delay, [2]float64{0, 0.25e-3}); d < want[0] || d > want[1] {
				t.Errorf("front/page keeps a delay of %.3g ms, want %.3g to %.3g", d*1e3, want[0]*1e3, want[1]*1e3)
			}
			var cs []comparison
			for i, f := range []float64{0.6, 1, 1.2} {
				obs := base
				if f != 1 {
					obs = generateWith(t, withLoad(t, m, f), sim.RecordOptions{Seed: uint64(4 + i), Requests: requests, ClientEndsOnResume: c.goClient}, dir)
				}
				c, _ := spanComparisons(t, withLoad(t, x.Model, f), obs, "front/page")
				c[0].what = fmt.Sprintf("%gx %s", f, c[0].what)
				cs = append(cs, c...)
			}
			check(t, cs)
		})
	}
}

// arrivalsModel is a Go front end with one CPU slot, 60 % busy, whose
// requests come in bursts (gamma gaps of cv 2) and wait for the slot
// before their spans start.
const arrivalsModel = `perfcast: 1
name: arrivals
hosts:
  edge: {cpu: {cores: 2}}
components:
  front:
    host: edge
    operations:
      page:
        steps:
          - hold: {resource: front-procs, steps: [{cpu: exp(1ms)}]}
          - delay: exp(1ms)
passive:
  front-procs: {capacity: 1, before_span: true}
workload:
  pages:
    open: {rate: 600/s, cv: 2}
    steps: [{call: front/page}]
`

// TestArrivalsBeforeSlot extracts arrivalsModel's traces with its slot
// declared. The spans start after the wait for the slot, which evens them
// out (their gaps' cv about 1.47); the workload's cv is the one whose
// simulated starts show that (unsmoothArrivals), within a tenth of the
// truth's 2, and the model predicts the requests' response time, the
// wait before the span included, at 0.8, 1 and 1.2 times the load within
// the round trip's tolerance of the truth's. With the starts' cv the
// model came out 25 to 29 % fast.
func TestArrivalsBeforeSlot(t *testing.T) {
	cfg := &extract.Config{Hosts: map[string]extract.HostConfig{"edge": {Cores: 2}}, CPUSlots: map[string]int{"*": 1}}
	m, _, x := extractTruth(t, arrivalsModel, "arrivals", 60000, 30000, cfg)
	if len(x.Model.Workloads) != 1 || x.Model.Workloads[0].Open == nil {
		t.Fatal("want one open workload")
	}
	w := x.Model.Workloads[0]
	if cv := w.Open.CV; cv < 1.8 || cv > 2.2 {
		t.Errorf("workload %s: interarrival cv %.3g, want 2 within a tenth", w.Name, cv)
	}
	cs := loadComparisons(t, m, "pages", x.Model, w.Name, 0.8, 1, 1.2)
	check(t, cs)

	// The state makes the same model again; a cancelled extraction stops
	// in its simulations with the context's error.
	again, _, err := extractGenerate(context.Background(), x.State, "arrivals", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.Marshal(), x.Model.Marshal()) {
		t.Error("the state made another model the second time")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if m, _, err := extractGenerate(ctx, x.State, "arrivals", cfg); !errors.Is(err, context.Canceled) || m != nil {
		t.Errorf("cancelled: got a model %v and error %v, want none and context.Canceled", m != nil, err)
	}

	// Without a simulator the workload keeps its starts' cv, and the
	// report says so.
	bare := &extract.Config{Hosts: cfg.Hosts, CPUSlots: cfg.CPUSlots}
	unsmoothed, rep, err := extract.Generate(context.Background(), x.State, "arrivals", bare)
	if err != nil {
		t.Fatal(err)
	}
	if cv := unsmoothed.Workloads[0].Open.CV; cv < 1.3 || cv > 1.65 {
		t.Errorf("without a simulator: interarrival cv %.3g, want the starts' (about 1.47)", cv)
	}
	if !slices.ContainsFunc(rep.Warnings, func(w string) bool { return strings.Contains(w, "no simulator given") }) {
		t.Errorf("without a simulator, no warning says so: %q", rep.Warnings)
	}
}

// extractTruth parses the truth model text (named name), writes its traces
// of requests (short under -short, seed 3) and extracts them with cfg.
func extractTruth(t *testing.T, text, name string, requests, short int64, cfg *extract.Config) (*model.Model, *observed, *extract.Result) {
	t.Helper()
	m, requests := parseTruth(t, text, name, requests, short)
	obs := generate(t, m, 3, requests, t.TempDir())
	x, err := extractRun(context.Background(), []string{obs.path}, name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("extracted:\n%s", x.Model.Marshal())
	return m, obs, x
}

// parseTruth parses the truth model text (named name) and returns it with
// the requests to record: short under -short.
func parseTruth(t *testing.T, text, name string, requests, short int64) (*model.Model, int64) {
	t.Helper()
	m, err := model.Parse([]byte(text), name+".yaml")
	if err != nil {
		t.Fatal(err)
	}
	if testing.Short() {
		requests = short
	}
	return m, requests
}

// loadComparisons sets the mean response time of workload predWL of the
// extracted model against that of workload truthWL of the truth, both
// simulated at each factor of their loads.
func loadComparisons(t *testing.T, truth *model.Model, truthWL string, extracted *model.Model, predWL string, factors ...float64) []comparison {
	t.Helper()
	var cs []comparison
	for _, f := range factors {
		want, ok := solveSim(t, withLoad(t, truth, f)).Workloads[truthWL]
		got, found := solveSim(t, withLoad(t, extracted, f)).Workloads[predWL]
		if !ok || !found {
			t.Fatalf("%gx: no result for workload %s or %s (saturated?)", f, truthWL, predWL)
		}
		hw := 0.0
		if want.ResponseTime.CI95 != nil {
			hw = (want.ResponseTime.CI95[1] - want.ResponseTime.CI95[0]) / 2
		}
		cs = append(cs, compare(fmt.Sprintf("%gx response time", f), got.ResponseTime.Mean, got.ResponseTime.CI95,
			estimate{want.ResponseTime.Mean, hw}, want.ResponseTime.Mean))
	}
	return cs
}

// pooledModel is arrivalsModel's bursty requests at a thread-per-request
// server with a pool of four threads, about 70 % busy, whose queue is
// before the span.
const pooledModel = `perfcast: 1
name: pooled
hosts:
  app: {cpu: {cores: 4}}
components:
  api:
    host: app
    threads: 4
    operations:
      get:
        steps:
          - cpu: exp(0.5ms)
          - delay: gamma(20ms, cv=0.5)
workload:
  gets:
    open: {rate: 140/s, cv: 2}
    steps: [{call: api/get}]
`

// TestArrivalsBeforePool is TestArrivalsBeforeSlot for a thread pool that
// extraction infers: the requests wait for one of its four threads before
// their spans start, which evens out the starts (cv 1.42 at seed 3). The
// cv comes back within 0.25 of the truth's 2: over six data sets of 60 000
// requests (perfcast generate, seeds 1 to 6) it came out at 1.97 to 2.23,
// mean 2.08 and standard deviation 0.09, and 0.25 is about three of those. With
// the starts' cv the model came out 25 to 46 % fast.
func TestArrivalsBeforePool(t *testing.T) {
	m, _, x := extractTruth(t, pooledModel, "pooled", 60000, 30000, &extract.Config{})
	if got := x.Model.Component("api").Threads; got != 4 {
		t.Fatalf("api threads %d, want the pool of 4 inferred", got)
	}
	for _, e := range x.Report.Evidence {
		if strings.Contains(e, "evens out") {
			t.Log(e)
		}
	}
	if len(x.Model.Workloads) != 1 || x.Model.Workloads[0].Open == nil {
		t.Fatal("want one open workload")
	}
	w := x.Model.Workloads[0]
	if cv := w.Open.CV; cv < 1.75 || cv > 2.25 {
		t.Errorf("workload %s: interarrival cv %.3g, want 2 within 0.25", w.Name, cv)
	}
	cs := loadComparisons(t, m, "gets", x.Model, w.Name, 0.8, 1, 1.2)
	check(t, cs)
}

// bareLimitModel is two services calling, with no client span, a store
// operation limited to two executions at once (75 % busy), whose requests
// wait for the limit before their spans start; the store's other
// operation is not limited, so the bound is the operation's, not a pool's.
const bareLimitModel = `perfcast: 1
name: bare-limit
hosts:
  edge: {cpu: {cores: 4}}
  back: {cpu: {cores: 4}}
components:
  front:
    host: edge
    operations:
      page:
        steps:
          - cpu: exp(1ms)
          - call: store/get
      quick:
        steps:
          - cpu: exp(500us)
          - call: store/ping
  admin:
    host: edge
    operations:
      report:
        steps:
          - cpu: exp(1ms)
          - call: store/get
  store:
    host: back
    operations:
      get:
        steps:
          - hold: {resource: get-limit, steps: [{cpu: exp(2ms)}, {delay: exp(4ms)}]}
      ping:
        steps:
          - cpu: exp(1ms)
          - delay: exp(3ms)
passive:
  get-limit: {capacity: 2, before_span: true}
workload:
  pages:
    open: {rate: 170/s}
    steps: [{call: front/page}]
  reports:
    open: {rate: 80/s}
    steps: [{call: admin/report}]
  quicks:
    open: {rate: 300/s}
    steps: [{call: front/quick}]
`

// TestBareOpLimitWait extracts bareLimitModel from traces with no client
// spans: the limit on store/get is found from its spans' concurrency, not
// as a lock of its busier caller's (calleeBoundsBareSite), its wait, before
// the spans, falls in the callers' own time, and is taken out there
// (opLimitWait), so that both callers' spans are predicted within the
// round trip's tolerance (−4 and −5 %). Left in, they came out +42 and
// +39 %.
func TestBareOpLimitWait(t *testing.T) {
	obs, x := extractBare(t, bareLimitModel, "bare-limit", &extract.Config{
		Hosts: map[string]extract.HostConfig{"edge": {Cores: 4}, "back": {Cores: 4}}})
	if c := x.Model.Component("store"); c == nil || c.Threads != model.Unlimited {
		t.Fatalf("a pool found in the store:\n%s", x.Model.Marshal())
	}
	if len(x.Model.Passive) != 1 || x.Model.Passive[0].Capacity != 2 {
		t.Fatalf("want one passive resource of capacity 2 around store/get:\n%s", x.Model.Marshal())
	}
	cs, _ := spanComparisons(t, x.Model, obs, "front/page", "admin/report", "front/quick")
	check(t, cs)
}

// limitedEntryModel is bursty requests to a store operation limited to
// two executions at once (about 66 % busy), waited for before its span
// starts, beside an operation without a limit.
const limitedEntryModel = `perfcast: 1
name: limited-entry
hosts:
  back: {cpu: {cores: 4}}
components:
  store:
    host: back
    operations:
      get:
        steps:
          - hold: {resource: get-limit, steps: [{cpu: exp(2ms)}, {delay: exp(4ms)}]}
      ping:
        steps:
          - cpu: exp(1ms)
          - delay: exp(3ms)
passive:
  get-limit: {capacity: 2, before_span: true}
workload:
  gets:
    open: {rate: 220/s, cv: 2}
    steps: [{call: store/get}]
  pings:
    open: {rate: 300/s}
    steps: [{call: store/ping}]
`

// TestArrivalsBeforeOpLimit is TestArrivalsBeforePool for a limit on one
// operation, which extraction infers or the configuration declares
// (passive, operations): the limit is waited for before the operation's
// span (before_span), as its spans, never more than two at once, show,
// so the span is predicted without the wait; the requests' cv comes back
// within the pool's band, the Poisson workload's stays 1, and the limited
// requests' response time, the wait before the span included, is
// predicted within the round trip's tolerance. With the inferred limit
// taken inside the span, the simulated starts were the arrivals and
// showed the traces' cv 1.4 back: the model came out 33 to 37 % fast;
// with the declared one left out of entryQueue, the cv stays the
// traces'.
func TestArrivalsBeforeOpLimit(t *testing.T) {
	for _, c := range []struct {
		name    string
		passive map[string]extract.PassiveConfig
	}{
		{"inferred", nil},
		{"declared", map[string]extract.PassiveConfig{"get-limit": {Capacity: 2, Operations: []string{"store/get"}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, obs, x := extractTruth(t, limitedEntryModel, "limited-entry", 60000, 30000, &extract.Config{
				Hosts: map[string]extract.HostConfig{"back": {Cores: 4}}, Passive: c.passive})
			if len(x.Model.Passive) != 1 || x.Model.Passive[0].Capacity != 2 {
				t.Fatalf("want one passive resource of capacity 2 around store/get:\n%s", x.Model.Marshal())
			}
			for _, e := range x.Report.Evidence {
				if strings.Contains(e, "evens out") {
					t.Log(e)
				}
			}
			gets, pings := x.Model.Workload("get"), x.Model.Workload("ping")
			if gets == nil || gets.Open == nil || pings == nil || pings.Open == nil {
				t.Fatalf("want open workloads get and ping:\n%s", x.Model.Marshal())
			}
			if cv := gets.Open.CV; cv < 1.75 || cv > 2.25 {
				t.Errorf("workload get: interarrival cv %.3g, want 2 within 0.25", cv)
			}
			if cv := pings.Open.CV; cv != 1 {
				t.Errorf("workload ping: interarrival cv %.3g, want Poisson's", cv)
			}
			cs := loadComparisons(t, m, "gets", x.Model, "get", 0.8, 1, 1.2)
			if p := x.Model.Passive[0]; !p.BeforeSpan {
				t.Errorf("passive %s: not waited for before the span", p.Name)
			}
			spans, _ := spanComparisons(t, x.Model, obs, "store/get")
			check(t, append(cs, spans...))
		})
	}
}

// TestProcessorSlots extracts slottedModel with nothing declared but the
// host's core and a metrics file in which the store's Go runtime states
// GOMAXPROCS 1 (go.processor.limit): the store gets its one CPU slot, as
// cpu_slots would declare it, and the model predicts the observed load
// and 1.6 times it within the round trip's tolerance. A GOMAXPROCS the
// configuration overrides (cpu_slots: {store: 0}) makes none.
func TestProcessorSlots(t *testing.T) {
	path := filepath.Join(t.TempDir(), "go-runtime.json")
	if err := os.WriteFile(path, []byte(`{"resourceMetrics":[{"resource":{"attributes":[{"key":"host.name","value":{"stringValue":"box"}},{"key":"service.name","value":{"stringValue":"store"}}]},"scopeMetrics":[{"metrics":[{"name":"go.processor.limit","unit":"{thread}","gauge":{"dataPoints":[{"timeUnixNano":"1700000000000000000","asInt":"1"}]}}]}]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := &extract.Config{Hosts: map[string]extract.HostConfig{"box": {Cores: 1}}, Metrics: []string{path}}
	x, _, _, cs := pageRoundTrip(t, slottedModel, "processors", 1.6, sim.RecordOptions{}, nil, cfg)
	if p := x.Model.PassiveResource(extract.CPUSlotsResource("store")); p == nil || p.Capacity != 1 {
		t.Fatalf("no store-cpu-slots of capacity 1:\n%s", x.Model.Marshal())
	}
	if x.Model.PassiveResource(extract.CPUSlotsResource("front")) != nil {
		t.Errorf("front, of which the metrics say nothing, got slots:\n%s", x.Model.Marshal())
	}
	if ev := strings.Join(x.Report.Evidence, "\n"); !strings.Contains(ev, "component store: runs Go code on at most 1 thread(s) at once") {
		t.Errorf("no evidence of the store's GOMAXPROCS:\n%s", ev)
	}
	check(t, cs)
	cfg.CPUSlots = map[string]int{"store": 0}
	off, _, _, _ := pageRoundTrip(t, slottedModel, "processors-off", 1.6, sim.RecordOptions{}, nil, cfg)
	if off.Model.PassiveResource(extract.CPUSlotsResource("store")) != nil {
		t.Errorf("cpu_slots: {store: 0} left slots:\n%s", off.Model.Marshal())
	}
}
