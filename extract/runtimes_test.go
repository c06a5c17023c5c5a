package extract_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/perfcast/perfcast/extract"
	"github.com/perfcast/perfcast/ingest"
	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve/sim"
	"github.com/perfcast/perfcast/trace"
	"github.com/perfcast/perfcast/tracegen"
)

// loopModel is a store that runs one request's CPU at a time, the way a
// Node.js server's event loop does, and serves other requests while each
// awaits its database: its query computes, calls the database, and
// computes again, each burst holding the store's one slot (the first
// taken before its span starts: a request waits for the loop to run the
// callback that starts its span). Its spans overlap, so no limit shows in
// how many run at once; only the slot keeps its CPU one burst at a time.
// The host's one core is 45 % busy at 50 requests/s.
const loopModel = `perfcast: 1
name: loop
hosts:
  box: {cpu: {cores: 1}}
  dbhost: {cpu: {cores: 4}}
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
              steps: [{cpu: gamma(4ms, cv=0.3)}]
          - call: db/get
          - hold:
              resource: store-procs
              steps: [{cpu: gamma(4ms, cv=0.3)}]
  db:
    host: dbhost
    operations:
      get:
        steps:
          - cpu: exp(500us)
          - delay: exp(4ms)
passive:
  store-procs: {capacity: 1, before_span: true}
workload:
  pages:
    open: {rate: 50/s}
    steps: [{call: front/page}]
`

// pairedModel is loopModel with two processes of the store on a host of
// two cores, each running one request's CPU at a time: two slots, at
// twice the load.
var pairedModel = strings.NewReplacer("box: {cpu: {cores: 1}}", "box: {cpu: {cores: 2}}", "capacity: 1", "capacity: 2", "rate: 50/s", "rate: 100/s").Replace(loopModel)

// pairedLoopsModel is pairedModel with each request bound to one of the
// store's two processes, which run its CPU one request at a time each:
// two queues of one slot, as a Node.js cluster's two workers.
var pairedLoopsModel = strings.Replace(pairedModel, "capacity: 2, before_span: true", "capacity: 2, before_span: true, partitioned: true", 1)

// pairedWorkersModel is pairedModel with the store's two processes each
// serving one request at a time through its call to the database, as
// sync workers taking connections from one listening socket do: a pool
// of two threads held for the whole request, a request waiting for
// whichever frees first. At 60 requests/s the workers are 38 % busy, at
// 1.6 times 60 %.
var pairedWorkersModel = asSyncWorkers(pairedModel)

// asSyncWorkers gives the store of pairedModel, or of a model made from
// it, two threads held for the whole request, at 60 requests/s.
func asSyncWorkers(yaml string) string {
	return strings.NewReplacer("    host: box\n    operations:\n      query:", "    host: box\n    threads: 2\n    operations:\n      query:", "rate: 100/s", "rate: 60/s").Replace(yaml)
}

// runtimeRoundTrip is pageRoundTrip with the store's spans naming rt as
// their runtime and the callers' client spans ending when they run again,
// as those of Node.js and Python do, extracted with the hosts' cores and
// nothing else configured, from the spans' CPU times or without them.
func runtimeRoundTrip(t *testing.T, yaml string, cores int, rt tracegen.Runtime, cpuTimes bool, queues string) (x *extract.Result, base, heavy *observed, cs []comparison) {
	t.Helper()
	topts := func(seed uint64) tracegen.Options {
		return tracegen.Options{Seed: seed, NoCPUTime: !cpuTimes, Runtimes: map[string]tracegen.Runtime{"store": rt}}
	}
	cfg := &extract.Config{Hosts: map[string]extract.HostConfig{"box": {Cores: cores}, "dbhost": {Cores: 4}}}
	if queues != "" {
		cfg.SlotQueues = map[string]string{"store": queues}
	}
	return pageRoundTrip(t, yaml, "runtime", 1.6, sim.RecordOptions{ClientEndsOnResume: true}, topts, cfg)
}

// slotsOf is the capacity of the store's CPU slots in m, 0 without them.
func slotsOf(t *testing.T, m *model.Model) int {
	t.Helper()
	p := m.PassiveResource(extract.CPUSlotsResource("store"))
	if p == nil {
		return 0
	}
	if !p.BeforeSpan {
		t.Errorf("the store's CPU slots are not taken before its spans start:\n%s", m.Marshal())
	}
	return p.Capacity
}

// TestRuntimeSlots extracts systems whose store runs one request's CPU at
// a time in each of its processes, with nothing but the hosts' cores
// configured: the spans' resources name the store's runtime (Node.js,
// CPython) and its processes (service.instance.id, process.pid), and the
// model gets one CPU slot per process, as cpu_slots would declare, and
// predicts the response time at the observed load and at 1.6 times it.
// The same traces without the runtime make a model whose processor
// sharing stretches the store's bursts, further from the truth at 1.6
// times the load. Node.js's processes, each its own queue in the truth
// (a cluster's workers), get partitioned slots, which predict 1.6 times
// the load within 1 % where the same slots in one queue are 25 % fast.
// Where the calls' waits show the processes' queues, those win over the
// runtime's default: two sync workers (one queue) named by pid, on
// Node.js too, get one queue; two CPython processes each bound to a queue
// of its own get partitioned slots. slot_queues wins over both.
func TestRuntimeSlots(t *testing.T) {
	for _, c := range []struct {
		name            string
		yaml            string
		cores, slots    int
		partitioned     bool
		rt              tracegen.Runtime
		cpuTimes        bool
		warning, reason string
		queues          string // Config.SlotQueues of the store
		shape           string // the evidence of the processes' queues
	}{
		{name: "nodejs, one process, span CPU times", yaml: loopModel, cores: 1, slots: 1, cpuTimes: true,
			rt: tracegen.Runtime{Language: "nodejs", Name: "nodejs", Processes: 1}},
		{name: "nodejs, one process, own times", yaml: loopModel, cores: 1, slots: 1,
			rt: tracegen.Runtime{Language: "nodejs", Name: "nodejs", Processes: 1}},
		{name: "python, two sync workers by pid, one queue", yaml: pairedWorkersModel, cores: 2, slots: 2, cpuTimes: true,
			rt: tracegen.Runtime{Language: "python", Name: "cpython", Workers: true}, shape: "its processes serve one queue"},
		{name: "nodejs, two sync workers by pid, one queue", yaml: pairedWorkersModel, cores: 2, slots: 2, cpuTimes: true,
			rt: tracegen.Runtime{Language: "nodejs", Name: "nodejs", Workers: true}, shape: "its processes serve one queue"},
		{name: "nodejs, two processes by pid", yaml: pairedLoopsModel, cores: 2, slots: 2, partitioned: true, cpuTimes: true,
			rt: tracegen.Runtime{Language: "nodejs", Name: "nodejs", Processes: 2}, shape: "its processes serve a queue each"},
		{name: "python, two processes by pid, a queue each", yaml: pairedLoopsModel, cores: 2, slots: 2, partitioned: true, cpuTimes: true,
			rt: tracegen.Runtime{Language: "python", Name: "cpython", Processes: 2}, shape: "its processes serve a queue each"},
		{name: "python, two processes, a queue each as configured", yaml: pairedLoopsModel, cores: 2, slots: 2, partitioned: true, cpuTimes: true,
			rt: tracegen.Runtime{Language: "python", Name: "cpython", Processes: 2}, queues: extract.SlotQueuesEach},
		{name: "python, two processes, one queue as configured", yaml: pairedLoopsModel, cores: 2, slots: 2, cpuTimes: true,
			rt: tracegen.Runtime{Language: "python", Name: "cpython", Processes: 2}, queues: extract.SlotQueuesOne,
			warning: "slot_queues says its processes serve one queue, but its calls' waits show a queue each"},
		{name: "python, no process named", yaml: loopModel, cores: 1, cpuTimes: true,
			rt:      tracegen.Runtime{Language: "python", Name: "cpython", Anonymous: true},
			warning: "do not name their process"},
		{name: "jruby", yaml: loopModel, cores: 1, cpuTimes: true,
			rt: tracegen.Runtime{Language: "ruby", Name: "jruby", Processes: 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			x, base, heavy, cs := runtimeRoundTrip(t, c.yaml, c.cores, c.rt, c.cpuTimes, c.queues)
			if got := slotsOf(t, x.Model); got != c.slots {
				t.Fatalf("store's CPU slots %d, want %d:\n%s", got, c.slots, x.Model.Marshal())
			}
			if p := x.Model.PassiveResource(extract.CPUSlotsResource("store")); p != nil && p.Partitioned != c.partitioned {
				t.Errorf("store's CPU slots partitioned %v, want %v", p.Partitioned, c.partitioned)
			}
			warnings := strings.Join(x.Report.Warnings, "\n")
			if c.warning != "" && !strings.Contains(warnings, c.warning) {
				t.Errorf("no warning %q in:\n%s", c.warning, warnings)
			}
			if c.slots == 0 {
				return
			}
			ev := strings.Join(x.Report.Evidence, "\n")
			if !strings.Contains(ev, "component store: runs on "+c.rt.Language) {
				t.Errorf("no evidence of the store's runtime in:\n%s", ev)
			}
			if c.shape != "" && !strings.Contains(ev, "component store: "+c.shape) {
				t.Errorf("no evidence %q in:\n%s", c.shape, ev)
			}
			for _, e := range x.Report.Evidence {
				if strings.Contains(e, "processes serve") || strings.Contains(e, "queue or a queue each") {
					t.Log(e)
				}
			}
			if c.queues == extract.SlotQueuesOne {
				// The configuration, wrong on purpose, wins over the
				// traces: the model is fast at 1.6 times, as the
				// partitioned case's one queue is.
				t.Logf("one queue as configured against the truth's two: %+.1f %% at 1.6x", 100*(cs[1].predicted/heavy.rt.mean-1))
				return
			}
			check(t, cs)
			if c.rt.Workers {
				// Sync workers' pool already keeps two requests on the
				// CPU at once, with slots or without: no comparison.
				return
			}
			if c.partitioned {
				shared, err := x.Model.Clone()
				if err != nil {
					t.Fatal(err)
				}
				shared.PassiveResource(extract.CPUSlotsResource("store")).Partitioned = false
				p := solveSim(t, withLoad(t, shared, 1.6)).Workloads["page"]
				t.Logf("slots in one queue, 1.6x mean response %.4g (measured %.4g)", p.ResponseTime.Mean, heavy.rt.mean)
				if with, without := math.Abs(cs[1].predicted-heavy.rt.mean), math.Abs(p.ResponseTime.Mean-heavy.rt.mean); with >= without {
					t.Errorf("at 1.6x the model with a queue per process is off by %.3g s, no better than one queue (%.3g s)", with, without)
				}
				// Two processes on two cores without slots share the
				// cores about as two slots of their own do (−4 % at 1.6
				// times): no comparison.
				return
			}
			plain, err := extractRun(context.Background(), []string{base.path}, "plain",
				&extract.Config{Hosts: map[string]extract.HostConfig{"box": {Cores: c.cores}, "dbhost": {Cores: 4}}, CPUSlots: map[string]int{"store": 0}})
			if err != nil {
				t.Fatal(err)
			}
			if got := slotsOf(t, plain.Model); got != 0 {
				t.Fatalf("cpu_slots: {store: 0} left %d slots", got)
			}
			p := solveSim(t, withLoad(t, plain.Model, 1.6)).Workloads["page"]
			t.Logf("without slots, 1.6x mean response %.4g (measured %.4g)", p.ResponseTime.Mean, heavy.rt.mean)
			if with, without := math.Abs(cs[1].predicted-heavy.rt.mean), math.Abs(p.ResponseTime.Mean-heavy.rt.mean); with >= without {
				t.Errorf("at 1.6x the model with the runtime's slots is off by %.3g s, no better than without (%.3g s)", with, without)
			}
		})
	}
}

// workersModel is a web tier behind a proxy: three processes on one
// replica, each serving one request at a time through its call to the
// database, as a pre-forking server's sync workers do, a pool of three
// held for the whole request. Requests wait for a worker inside the
// proxy's client span. At 60 requests/s the workers are 39 % busy, too
// little for the hidden limits to see the pool full (Poisson's count of
// 1.2 exceeds three 3 % of the time); at twice the load they are 78 % busy
// and requests queue for a worker.
const workersModel = `perfcast: 1
name: workers
hosts:
  edge: {cpu: {cores: 2}}
  app: {cpu: {cores: 4}}
  dbhost: {cpu: {cores: 4}}
components:
  proxy:
    host: edge
    operations:
      page:
        steps:
          - cpu: exp(300us)
          - call: web/render
  web:
    host: app
    threads: 3
    operations:
      render:
        steps:
          - cpu: gamma(4ms, cv=0.5)
          - call: db/query
          - cpu: gamma(2ms, cv=0.5)
  db:
    host: dbhost
    operations:
      query:
        steps:
          - cpu: exp(1ms)
          - delay: exp(12ms)
workload:
  pages:
    open: {rate: 60/s}
    steps: [{call: proxy/page}]
`

// TestWorkers extracts the web tier's pool from its processes' spans:
// named by pid, each served one request at a time, so the model gets a
// pool of three threads, and predicts the response time at twice the
// observed load, where the same model without the pool is fast. The same
// tier as event-loop processes (no pool, a request's spans in a process
// by its trace) gets none.
func TestWorkers(t *testing.T) {
	cfg := &extract.Config{Hosts: map[string]extract.HostConfig{"edge": {Cores: 2}, "app": {Cores: 4}, "dbhost": {Cores: 4}}}
	for _, c := range []struct {
		name    string
		yaml    string
		rt      tracegen.Runtime
		threads int
	}{
		{"python sync workers", workersModel, tracegen.Runtime{Language: "python", Name: "cpython", Workers: true}, 3},
		{"php workers, an instance id each", workersModel, tracegen.Runtime{Language: "php", Name: "php", Workers: true, Instances: true}, 3},
		{"node event loops", strings.Replace(workersModel, "    threads: 3\n", "", 1), tracegen.Runtime{Language: "nodejs", Name: "nodejs", Processes: 3}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			topts := func(seed uint64) tracegen.Options {
				return tracegen.Options{Seed: seed, Runtimes: map[string]tracegen.Runtime{"web": c.rt}}
			}
			x, _, heavy, cs := pageRoundTrip(t, c.yaml, "workers", 2, sim.RecordOptions{}, topts, cfg)
			web := x.Model.Component("web")
			if web == nil || web.Threads != c.threads {
				t.Fatalf("web's threads %v, want %d:\n%s", web, c.threads, x.Model.Marshal())
			}
			found := false
			for _, e := range x.Report.Evidence {
				if strings.Contains(e, "pre-forking server's workers") {
					found = true
					t.Log(e)
				}
			}
			if found != (c.threads > 0) {
				t.Errorf("evidence of workers %v, want %v:\n%s", found, c.threads > 0, strings.Join(x.Report.Evidence, "\n"))
			}
			check(t, cs)
			if c.threads == 0 {
				return
			}
			free, err := x.Model.Clone()
			if err != nil {
				t.Fatal(err)
			}
			free.Component("web").Threads = 0
			p := solveSim(t, withLoad(t, free, 2)).Workloads["page"]
			t.Logf("without the pool, 2x mean response %.4g (measured %.4g)", p.ResponseTime.Mean, heavy.rt.mean)
			if with, without := math.Abs(cs[1].predicted-heavy.rt.mean), math.Abs(p.ResponseTime.Mean-heavy.rt.mean); with >= without {
				t.Errorf("at 2x the model with the workers' pool is off by %.3g s, no better than without (%.3g s)", with, without)
			}
		})
	}
}

// pinnedModel is a web tier of three sync workers, each of which calls
// an event-loop service that runs three processes: every worker keeps a
// connection of its own to one of them and waits for each reply, so each
// process serves one request at a time without a pool of its own.
const pinnedModel = `perfcast: 1
name: pinned
hosts:
  app: {cpu: {cores: 4}}
  apihost: {cpu: {cores: 4}}
components:
  web:
    host: app
    threads: 3
    operations:
      render:
        steps:
          - cpu: gamma(3ms, cv=0.5)
          - call: api/get
          - cpu: gamma(2ms, cv=0.5)
  api:
    host: apihost
    operations:
      get:
        steps:
          - cpu: exp(2ms)
          - delay: exp(10ms)
workload:
  pages:
    open: {rate: 60/s}
    steps: [{call: web/render}]
`

// TestWorkersPinnedCallers extracts pinnedModel's traces, in which each
// of api's processes served the calls of one of web's workers only: api's
// processes never ran two executions at once, but their callers explain
// it, so api gets no pool (before the callers were counted it got one of
// three, which binds as soon as web has more workers than api processes),
// while web, called by the workload, gets its pool of three.
func TestWorkersPinnedCallers(t *testing.T) {
	m, err := model.Parse([]byte(pinnedModel), "pinned.yaml")
	if err != nil {
		t.Fatal(err)
	}
	opts := tracegen.Options{Seed: 7, Runtimes: map[string]tracegen.Runtime{
		"web": {Language: "python", Name: "cpython", Workers: true},
		"api": {Language: "nodejs", Name: "nodejs", Processes: 3},
	}}
	var spans []*sim.Span
	requests := int64(20000)
	if testing.Short() {
		requests = 6000
	}
	if _, err := sim.Record(context.Background(), m, sim.RecordOptions{Seed: 7, Requests: requests},
		func(s *sim.Span) error { spans = append(spans, s); return nil }); err != nil {
		t.Fatal(err)
	}
	byID := map[uint64]*sim.Span{}
	for _, s := range spans {
		byID[s.ID] = s
	}
	out := make([]*ingest.Span, len(spans))
	for i, s := range spans {
		out[i] = tracegen.Convert(s, &opts)
		if s.Component == "api" && s.Kind == sim.SpanServer {
			// The process the caller's worker keeps its connection to.
			out[i].Process.PID = strconv.Itoa(2000 + int(byID[s.Parent].Thread))
		}
	}
	path := filepath.Join(t.TempDir(), "pinned.otlp.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	var enc ptrace.JSONMarshaler
	for batch := range slices.Chunk(out, 2000) {
		b, err := enc.MarshalTraces(tracegen.Traces(batch))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(append(b, '\n')); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	cfg := &extract.Config{Hosts: map[string]extract.HostConfig{"app": {Cores: 4}, "apihost": {Cores: 4}}}
	x, err := extractRun(context.Background(), []string{path}, "pinned", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if web, api := x.Model.Component("web"), x.Model.Component("api"); web == nil || api == nil || web.Threads != 3 || api.Threads != 0 {
		t.Fatalf("want web's pool of 3 and none for api:\n%s\n%s", x.Model.Marshal(), strings.Join(x.Report.Evidence, "\n"))
	}
	found := false
	for _, e := range x.Report.Evidence {
		if strings.HasPrefix(e, "component api:") && strings.Contains(e, "no pool inferred") {
			found = true
			t.Log(e)
		}
	}
	if !found {
		t.Errorf("no evidence of api's callers keeping to its processes:\n%s", strings.Join(x.Report.Evidence, "\n"))
	}
}

// hopModel is pairedModel with the network in the way: the front's calls
// reach the store through net, whose hop spends an exponential 0.5 ms
// each way (the network's time, with a tail) and whose spans hopTraces
// leaves out, as the network writes none. The store runs as slots.
var hopModel = strings.NewReplacer(
	"          - call: store/query\n  store:", "          - call: net/hop\n  net:\n    host: wire\n    operations:\n      hop:\n        steps:\n          - delay: exp(500us)\n          - call: store/query\n          - delay: exp(500us)\n  store:",
	"  dbhost: {cpu: {cores: 4}}", "  dbhost: {cpu: {cores: 4}}\n  wire: {cpu: {cores: 1}}",
).Replace(pairedModel)

// hopTraces records m's traces and leaves the spans of component net out,
// hanging the spans below them on the client span that called net, or,
// with bare, the client spans that called net out too, hanging them on
// the caller's server span (a hop with no client span).
func hopTraces(t *testing.T, m *model.Model, rt tracegen.Runtime, bare bool) []*ingest.Span {
	t.Helper()
	opts := tracegen.Options{Seed: 9, Runtimes: map[string]tracegen.Runtime{"store": rt}}
	var spans []*ingest.Span
	_, err := sim.Record(context.Background(), m, sim.RecordOptions{Seed: 9, Requests: 20000, ClientEndsOnResume: true}, func(s *sim.Span) error {
		spans = append(spans, tracegen.Convert(s, &opts))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	parent := map[ingest.SpanID]ingest.SpanID{}
	dropped := func(s *ingest.Span) bool {
		return s.Service == "net" || bare && s.Service == "front" && s.Kind == ingest.KindClient
	}
	for _, s := range spans {
		if dropped(s) {
			parent[s.SpanID] = s.ParentID
		}
	}
	var out []*ingest.Span
	for _, s := range spans {
		if dropped(s) {
			continue
		}
		p := s.ParentID
		for {
			up, ok := parent[p]
			if !ok {
				break
			}
			p = up
		}
		s.ParentID = p
		out = append(out, s)
	}
	return out
}

// TestSlotQueuesThroughNetwork measures the store's queues where the
// network's time, with its tail, comes before every server span: the
// calls that did not wait must not pass for waits. Sync workers by pid
// (one queue) and processes each bound to a queue of its own (the slots
// partitioned) are told apart; both with the network's own time out of
// the way. Without client spans the traces do not say, and CPython's
// default, one queue, stands.
func TestSlotQueuesThroughNetwork(t *testing.T) {
	for _, c := range []struct {
		name  string
		yaml  string
		rt    tracegen.Runtime
		shape string
		each  bool
		bare  bool
	}{
		{"sync workers", asSyncWorkers(hopModel),
			tracegen.Runtime{Language: "nodejs", Name: "nodejs", Workers: true}, "its processes serve one queue", false, false},
		{"a queue each", strings.Replace(hopModel, "capacity: 2, before_span: true", "capacity: 2, before_span: true, partitioned: true", 1),
			tracegen.Runtime{Language: "python", Name: "cpython", Processes: 2}, "its processes serve a queue each", true, false},
		{"a queue each, no client span", strings.Replace(hopModel, "capacity: 2, before_span: true", "capacity: 2, before_span: true, partitioned: true", 1),
			tracegen.Runtime{Language: "python", Name: "cpython", Processes: 2}, "whether its processes serve one queue or a queue each the traces do not say (0 calls found their process idle", false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := model.Parse([]byte(c.yaml), "hop.yaml")
			if err != nil {
				t.Fatal(err)
			}
			spans := hopTraces(t, m, c.rt, c.bare)
			st := extract.NewState()
			asm := trace.New(trace.Options{}, func(tr *trace.Tree) error {
				st.Fold(tr, nil)
				return nil
			})
			for _, s := range spans {
				if err := asm.Add(s); err != nil {
					t.Fatal(err)
				}
			}
			if err := asm.Close(); err != nil {
				t.Fatal(err)
			}
			cfg := &extract.Config{Hosts: map[string]extract.HostConfig{"box": {Cores: 2}, "dbhost": {Cores: 4}}}
			x, rep := st.Model("hop", cfg)
			ev := strings.Join(rep.Evidence, "\n")
			for _, e := range rep.Evidence {
				if strings.Contains(e, "processes serve") || strings.Contains(e, "queue or a queue each") {
					t.Log(e)
				}
			}
			p := x.PassiveResource(extract.CPUSlotsResource("store"))
			if p == nil || p.Capacity != 2 {
				t.Fatalf("the store's slots: %+v\n%s", p, x.Marshal())
			}
			if p.Partitioned != c.each || !strings.Contains(ev, "component store: "+c.shape) {
				t.Errorf("partitioned %v, want %v; no evidence %q", p.Partitioned, c.each, c.shape)
			}
		})
	}
}
