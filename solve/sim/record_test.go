package sim

import (
	"cmp"
	"context"
	"errors"
	"math"
	"reflect"
	"slices"
	"testing"

	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve"
)

// record runs Record on a model given as YAML and returns the spans.
func record(t *testing.T, m *model.Model, opts RecordOptions) ([]*Span, *solve.Result) {
	t.Helper()
	var spans []*Span
	r, err := Record(context.Background(), m, opts, func(s *Span) error {
		spans = append(spans, s)
		return nil
	})
	if err != nil {
		t.Fatalf("record: %v", err)
	}
	return spans, r
}

// batchMean is the mean of a sequence of correlated observations (response
// times in completion order) with the 95 % half-width from the means of 20
// consecutive batches, which are nearly independent when a batch is much
// longer than the correlation of the sequence.
func batchMean(xs []float64) (mean, hw float64) {
	const batches = 20
	n := len(xs) / batches
	means := make([]float64, batches)
	for b := range means {
		s := 0.0
		for _, x := range xs[b*n : (b+1)*n] {
			s += x
		}
		means[b] = s / float64(n)
	}
	e := estimateOf(means)
	return e.mean, e.hw
}

// traceIndex holds the spans of a run by id and their children.
type traceIndex struct {
	byID     map[uint64]*Span
	children map[uint64][]*Span
	roots    map[uint64][]*Span // by trace
}

func index(spans []*Span) *traceIndex {
	x := &traceIndex{byID: map[uint64]*Span{}, children: map[uint64][]*Span{}, roots: map[uint64][]*Span{}}
	for _, s := range spans {
		x.byID[s.ID] = s
		if s.Parent == 0 {
			x.roots[s.Trace] = append(x.roots[s.Trace], s)
		} else {
			x.children[s.Parent] = append(x.children[s.Parent], s)
		}
	}
	return x
}

// checkShapes checks the span semantics Record documents on every span:
// unique ids, one root per trace, complete traces, client/server and
// producer/consumer pairs, children within their synchronous parents, and
// spans of a trace emitted in the order they end. Where requests were
// dropped (lenient), a call may have no server span.
func checkShapes(t *testing.T, spans []*Span, lenient bool) *traceIndex {
	t.Helper()
	return checkShapesOn(t, spans, lenient, false)
}

// checkShapesOn is checkShapes for spans recorded with or without
// RecordOptions.ClientEndsOnResume (onResume): with it a client span may
// end after its server span.
func checkShapesOn(t *testing.T, spans []*Span, lenient, onResume bool) *traceIndex {
	t.Helper()
	x := index(spans)
	if len(x.byID) != len(spans) {
		t.Fatalf("%d spans but %d distinct ids", len(spans), len(x.byID))
	}
	lastEnd := map[uint64]float64{}
	errs := 0
	fail := func(format string, args ...any) {
		t.Helper()
		if errs++; errs <= 10 {
			t.Errorf(format, args...)
		}
	}
	for _, s := range spans {
		if s.ID == 0 || s.Trace == 0 || s.End < s.Start || s.Component == "" || s.Operation == "" || s.Host == "" {
			fail("malformed span %+v", *s)
			continue
		}
		if s.End < lastEnd[s.Trace] {
			fail("span %d of trace %d emitted after a span that ended later", s.ID, s.Trace)
		}
		lastEnd[s.Trace] = s.End
		kids := x.children[s.ID]
		var p *Span
		if s.Parent != 0 {
			if p = x.byID[s.Parent]; p == nil {
				fail("span %d: parent %d missing", s.ID, s.Parent)
				continue
			}
			if p.Trace != s.Trace {
				fail("span %d: parent in another trace", s.ID)
			}
		}
		switch s.Kind {
		case SpanServer:
			if p == nil {
				break
			}
			if p.Kind != SpanClient || p.Peer != s.Component || p.Operation != s.Operation {
				fail("server span %s/%s under %s span %s/%s of peer %s", s.Component, s.Operation, p.Kind, p.Component, p.Operation, p.Peer)
			}
			if s.Start < p.Start || s.End > p.End || (!onResume && s.End != p.End) {
				fail("server span [%g, %g] not ending with its client [%g, %g]", s.Start, s.End, p.Start, p.End)
			}
		case SpanConsumer:
			if p == nil {
				break
			}
			if p.Kind != SpanProducer || p.Peer != s.Component || p.Operation != s.Operation || s.Start < p.End {
				fail("consumer span %s/%s at %g under %s span %s/%s of peer %s at %g", s.Component, s.Operation, s.Start, p.Kind, p.Component, p.Operation, p.Peer, p.End)
			}
		case SpanClient, SpanProducer:
			if p == nil || (p.Kind != SpanServer && p.Kind != SpanConsumer) || p.Component != s.Component || p.Host != s.Host {
				fail("%s span %d has no server or consumer parent in its component", s.Kind, s.ID)
				continue
			}
			if s.Start < p.Start || s.End > p.End {
				fail("%s span [%g, %g] outside its parent [%g, %g]", s.Kind, s.Start, s.End, p.Start, p.End)
			}
			if s.CPU != 0 {
				fail("%s span with CPU time %g", s.Kind, s.CPU)
			}
			want := 1
			if s.Peer == ExternalPeer {
				want = 0
				if s.Kind != SpanClient || s.Operation != p.Operation {
					fail("external span %s/%s under %s", s.Component, s.Operation, p.Operation)
				}
			}
			if len(kids) != want && !(lenient && len(kids) == 0) {
				fail("%s span %s -> %s/%s has %d children, want %d", s.Kind, s.Component, s.Peer, s.Operation, len(kids), want)
			}
		default:
			fail("span of kind %s", s.Kind)
		}
	}
	for tr, roots := range x.roots {
		if len(roots) != 1 {
			fail("trace %d has %d roots", tr, len(roots))
		}
	}
	if len(x.roots) != len(lastEnd) {
		fail("%d traces but %d roots", len(lastEnd), len(x.roots))
	}
	return x
}

// TestRecordQueueBeforeSpan checks the timing of spans on a call to an
// M/M/1 queue whose wait comes before the callee's span starts: a thread
// pool of one, or a CPU slot marked before_span. Either way the server
// span covers the service only and the client span the wait too; both
// agree with the simulator's own figures and with the theory.
func TestRecordQueueBeforeSpan(t *testing.T) {
	cases := []struct{ name, back, passive, wait string }{
		{"threads", `{host: be, threads: 1, operations: {work: {steps: [{cpu: exp(2ms)}]}}}`, "", "back.threads"},
		{"before_span", `{host: be, operations: {work: {steps: [{hold: {resource: slot, steps: [{cpu: exp(2ms)}]}}]}}}`,
			"passive: {slot: {capacity: 1, before_span: true}}\n", "slot"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { recordQueue(t, tc.back, tc.passive, tc.wait) })
	}
}

// recordQueue runs TestRecordQueueBeforeSpan's case: back is the callee
// component, passive its passive resources, waitRes the resource its wait
// is reported on.
func recordQueue(t *testing.T, back, passive, waitRes string) {
	const lambda, s = 500.0, 1e-3 // back: demand 2ms at speed 2
	m := parse(t, `perfcast: 1
hosts: {fe: {cpu: {cores: 4}}, be: {cpu: {speed: 2}}}
components:
  front: {host: fe, operations: {page: {steps: [{cpu: exp(0.2ms)}, {call: back/work}]}}}
  back: `+back+`
`+passive+`workload:
  w: {open: {rate: 500}, steps: [{call: front/page}]}
`)
	n := requests(80000)
	spans, r := record(t, m, RecordOptions{Seed: 3, Requests: n})
	x := checkShapes(t, spans, false)
	if len(x.roots) != int(n) || len(spans) != 3*int(n) {
		t.Fatalf("%d traces and %d spans, want %d and %d", len(x.roots), len(spans), n, 3*n)
	}
	var server, client, root []float64
	for _, sp := range spans {
		d := sp.End - sp.Start
		switch {
		case sp.Kind == SpanServer && sp.Component == "back":
			server = append(server, d)
			// One at a time on one core: the span is its CPU service,
			// demand divided by the speed.
			if math.Abs(d-sp.CPU) > 1e-12 {
				t.Fatalf("back span lasts %g s but consumed %g s of CPU", d, sp.CPU)
			}
		case sp.Kind == SpanClient:
			client = append(client, d)
		case sp.Kind == SpanServer:
			root = append(root, d)
			// Four cores, 0.1 busy on average and never more jobs than
			// cores: no sharing, so the root is its CPU plus the call.
			c := x.children[sp.ID][0]
			if sp.Host != "fe" || len(x.children[sp.ID]) != 1 || math.Abs(d-sp.CPU-(c.End-c.Start)) > 1e-9 {
				t.Fatalf("root span %+v: not its CPU time plus its call %+v", *sp, *c)
			}
		}
	}
	sMean, sHW := batchMean(server)
	cMean, cHW := batchMean(client)
	// The simulator's operation response time includes the wait before
	// the span; the client span minus the server span is that wait, and
	// the operation's span time is the server span. The spans and the
	// simulator's statistics cover the same run, apart from the few
	// requests still running at its end, so they agree far within the
	// statistical uncertainty of either.
	o := op(t, r, "back/work")
	wait := res(t, r, waitRes).Wait.Mean
	if o.Span == nil {
		t.Fatal("back/work: no span time in the result")
	}
	within(t, "server span mean vs operation response minus wait", sMean, &[2]float64{sMean - sHW, sMean + sHW}, o.ResponseTime.Mean-wait, 0)
	within(t, "server span mean vs operation span time", sMean, &[2]float64{sMean - sHW, sMean + sHW}, o.Span.Mean, 0)
	within(t, "client span mean vs operation response", cMean, &[2]float64{cMean - cHW, cMean + cHW}, o.ResponseTime.Mean, 0)
	// M/M/1: service s, sojourn 1/(μ − λ).
	mu := 1 / s
	within(t, "server span mean vs service time", sMean, &[2]float64{sMean - sHW, sMean + sHW}, 1/mu, 0)
	within(t, "client span mean vs M/M/1 sojourn", cMean, &[2]float64{cMean - cHW, cMean + cHW}, 1/(mu-lambda), 0)
	rMean, rHW := batchMean(root)
	within(t, "root span mean vs workload response", rMean, &[2]float64{rMean - rHW, rMean + rHW}, wl(t, r, "w").ResponseTime.Mean, 0)
	if f := op(t, r, "front/page"); f.Span != nil {
		t.Errorf("front/page: span time %v, want none (no wait before its span)", f.Span.Mean)
	}
}

// shapesModel has every construct that makes spans: loops, branches,
// parallel lists, sends from operations and from a workload, delays,
// replicas.
const shapesModel = `perfcast: 1
hosts:
  web: {replicas: 2, cpu: {cores: 2}}
  app: {cpu: {cores: 2}}
components:
  front:
    host: web
    operations:
      page:
        steps:
          - cpu: exp(1ms)
          - loop: {times: {pmf: {"1": 0.5, "3": 0.5}}, steps: [{call: svc/get}]}
          - branch:
              - {p: 0.3, steps: [{send: svc/notify}]}
              - {p: 0.7, steps: []}
          - parallel:
              - [{call: svc/get}]
              - [{delay: exp(2ms)}, {cpu: exp(0.5ms)}]
  svc:
    host: app
    threads: 4
    operations:
      get: {steps: [{cpu: exp(1ms)}]}
      notify: {steps: [{cpu: exp(0.5ms)}, {delay: 1ms}]}
workload:
  users: {open: {rate: 100}, steps: [{call: front/page}]}
  jobs: {open: {rate: 20}, steps: [{send: svc/notify}]}
`

// TestRecordShapes checks span counts per request against the model's
// expected visits, the kinds and nesting of every span, external spans,
// parallel calls, replica host names and the CPU time of a span with a
// parallel list.
func TestRecordShapes(t *testing.T) {
	m := parse(t, shapesModel)
	n := requests(20000)
	spans, _ := record(t, m, RecordOptions{Seed: 5, Requests: n, ExternalSpans: true})
	x := checkShapes(t, spans, false)

	// Per users trace (rooted at front/page): spans of each operation.
	visits := m.Demands(m.Workload("users")).Visits
	counts := map[string][]float64{}
	var pageCPU []float64
	jobs := 0
	hosts := map[string]bool{}
	for _, roots := range x.roots {
		root := roots[0]
		if root.Kind == SpanConsumer {
			jobs++
			if root.Operation != "notify" || len(x.children[root.ID]) != 1 || x.children[root.ID][0].Peer != ExternalPeer {
				t.Errorf("job trace root %+v: want notify with one external span", *root)
			}
			continue
		}
		hosts[root.Host] = true
		pageCPU = append(pageCPU, root.CPU)
		per := map[string]float64{}
		var walk func(s *Span)
		walk = func(s *Span) {
			if s.Kind == SpanServer || s.Kind == SpanConsumer {
				per[s.Component+"/"+s.Operation]++
			}
			for _, c := range x.children[s.ID] {
				walk(c)
			}
		}
		walk(root)
		for id := range visits {
			counts[id] = append(counts[id], per[id])
		}
		// The parallel step: the external span and the last call start at
		// the same instant.
		var ext *Span
		for _, c := range x.children[root.ID] {
			if c.Peer == ExternalPeer {
				ext = c
			}
		}
		par := false
		for _, c := range x.children[root.ID] {
			if c.Peer == "svc" && ext != nil && c.Start == ext.Start && c.Kind == SpanClient {
				par = true
			}
		}
		if !par {
			t.Fatalf("page span %d: no call in parallel with its external span", root.ID)
		}
	}
	for id, v := range visits {
		c := counts[id]
		e := estimateOf(c)
		// Requests are independent in their counts: the half-width of the
		// mean count is that of independent observations.
		within(t, "spans per request of "+id, e.mean, e.ci(), v, 0)
	}
	// Open workloads of 100/s and 20/s: a sixth of the requests are jobs.
	share := float64(jobs) / float64(len(x.roots))
	sd := math.Sqrt(share * (1 - share) / float64(len(x.roots)))
	if math.Abs(share-1.0/6) > 4*sd {
		t.Errorf("jobs are %.4f of the traces, want 1/6 (± %.4f)", share, 4*sd)
	}
	if !hosts["web-1"] || !hosts["web-2"] || len(hosts) != 2 {
		t.Errorf("front ran on %v, want web-1 and web-2", hosts)
	}
	// page's CPU: exp(1ms) plus exp(0.5ms) in its parallel list.
	e := estimateOf(pageCPU)
	within(t, "CPU time of page spans", e.mean, e.ci(), 1.5e-3, 0)
}

// TestRecordClientEndsOnResume records the same runs with and without
// ClientEndsOnResume: the spans are the same but for the ends of client
// and external spans, which move to the moment their caller goes on. On a
// front end whose CPU after its call holds its one slot on a host of
// spare cores, that moment is the start of that CPU: the page's span ends
// exactly its deterministic 0.3 ms after its client span, and the client
// span has moved by the wait for the slot that the run without the option
// shows between the two.
func TestRecordClientEndsOnResume(t *testing.T) {
	for _, c := range []struct {
		name, yaml string
		external   bool
	}{
		{"shapes", shapesModel, true},
		{"slot after the call", `perfcast: 1
hosts: {fe: {cpu: {cores: 4}}, be: {cpu: {cores: 2}}}
components:
  front:
    host: fe
    operations:
      page:
        steps:
          - hold: {resource: slot, steps: [{cpu: 0.2ms}]}
          - call: back/work
          - hold: {resource: slot, steps: [{cpu: 0.3ms}]}
  back: {host: be, operations: {work: {steps: [{cpu: exp(1ms)}]}}}
passive: {slot: {capacity: 1, before_span: true}}
workload:
  w: {open: {rate: 900}, steps: [{call: front/page}]}
`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := parse(t, c.yaml)
			n := requests(20000)
			before, _ := record(t, m, RecordOptions{Seed: 4, Requests: n, ExternalSpans: c.external})
			after, _ := record(t, m, RecordOptions{Seed: 4, Requests: n, ExternalSpans: c.external, ClientEndsOnResume: true})
			checkShapesOn(t, after, false, true)
			if len(before) != len(after) {
				t.Fatalf("%d spans with the option, %d without", len(after), len(before))
			}
			was := index(before).byID
			x := index(after)
			moved, waited := 0, 0.0
			for _, s := range after {
				b := was[s.ID]
				if b == nil {
					t.Fatalf("span %d only with the option", s.ID)
				}
				o := *s
				o.End = b.End
				if !reflect.DeepEqual(&o, b) || s.End < b.End || (s.End != b.End && s.Kind != SpanClient) {
					t.Fatalf("span %+v with the option, %+v without", *s, *b)
				}
				if s.End > b.End {
					moved++
				}
				if c.external || s.Kind != SpanServer || s.Parent != 0 {
					continue
				}
				call := x.children[s.ID][0]
				if d := s.End - call.End; math.Abs(d-0.3e-3) > 1e-9 {
					t.Fatalf("page ends %g s after its call, want 0.3 ms", d)
				}
				w := b.End - was[call.ID].End - 0.3e-3
				if math.Abs(call.End-was[call.ID].End-w) > 1e-9 {
					t.Fatalf("call moved by %g s, the wait for the slot was %g", call.End-was[call.ID].End, w)
				}
				waited += w
			}
			// The shapes have no wait after a call: nothing moves.
			if !c.external && (moved == 0 || waited <= 0) {
				t.Fatalf("%d client spans moved, %g s waited for the slot after the call: the case tests nothing", moved, waited)
			}
			if c.external && moved != 0 {
				t.Fatalf("%d client spans moved where no caller waits to go on", moved)
			}
		})
	}
}

// TestRecordNoExternalSpans checks that delays make no spans by default.
func TestRecordNoExternalSpans(t *testing.T) {
	spans, _ := record(t, parse(t, shapesModel), RecordOptions{Seed: 5, Requests: 2000})
	checkShapes(t, spans, false)
	for _, s := range spans {
		if s.Peer == ExternalPeer {
			t.Fatalf("external span without ExternalSpans: %+v", *s)
		}
	}
}

// TestRecordDeterministic checks that a seed fixes the spans, on the
// example shop (closed users with two entry calls, locks, a parallel
// delay, sends).
func TestRecordDeterministic(t *testing.T) {
	m := exampleModel(t, "shop.yaml")
	a, ra := record(t, m, RecordOptions{Seed: 9, Requests: 3000, ExternalSpans: true})
	b, rb := record(t, m, RecordOptions{Seed: 9, Requests: 3000, ExternalSpans: true})
	checkShapes(t, a, false)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same seed, different spans")
	}
	ra.Sim.WallSeconds, rb.Sim.WallSeconds = 0, 0
	if !reflect.DeepEqual(ra, rb) {
		t.Fatal("same seed, different results")
	}
	c, _ := record(t, m, RecordOptions{Seed: 10, Requests: 3000, ExternalSpans: true})
	if reflect.DeepEqual(a, c) {
		t.Fatal("different seeds, same spans")
	}
	// Closed users with a second call in 10 % of requests: about 1.1
	// traces per request.
	traces := len(index(a).roots)
	if traces < 3000 || traces > 3600 {
		t.Errorf("%d traces for 3000 requests, want about 3300", traces)
	}
}

// TestRecordRootsOnly checks that RecordOptions.RootsOnly emits the root
// spans a full recording emits, field for field, and nothing else, on the
// example shop (sends, a parallel delay, closed users), with and without
// client spans ending on resume.
func TestRecordRootsOnly(t *testing.T) {
	m := exampleModel(t, "shop.yaml")
	for _, onResume := range []bool{false, true} {
		opts := RecordOptions{Seed: 9, Requests: 3000, ExternalSpans: true, ClientEndsOnResume: onResume}
		all, ra := record(t, m, opts)
		opts.RootsOnly = true
		roots, rb := record(t, m, opts)
		var want []*Span
		for _, s := range all {
			if s.Parent == 0 {
				want = append(want, s)
			}
		}
		if len(want) < 3000 || !reflect.DeepEqual(roots, want) {
			t.Errorf("resume %v: %d spans recorded with RootsOnly, want the %d roots of %d spans", onResume, len(roots), len(want), len(all))
		}
		ra.Sim.WallSeconds, rb.Sim.WallSeconds = 0, 0
		if !reflect.DeepEqual(ra, rb) {
			t.Errorf("resume %v: RootsOnly changed the run's result", onResume)
		}
	}
}

// TestRecordDrops checks the spans of requests dropped at a full queue: the
// call and the operations that made it end in error.
func TestRecordDrops(t *testing.T) {
	m := parse(t, `perfcast: 1
hosts: {fe: {cpu: {cores: 4}}, be: {}}
components:
  front: {host: fe, operations: {page: {steps: [{cpu: exp(0.2ms)}, {call: back/work}]}}}
  back: {host: be, threads: 1, queue: 0, on_full: drop, operations: {work: {steps: [{cpu: exp(1ms)}]}}}
workload:
  w: {open: {rate: 500}, steps: [{call: front/page}]}
`)
	spans, r := record(t, m, RecordOptions{Seed: 2, Requests: 5000})
	x := checkShapes(t, spans, true)
	failed := 0
	for _, roots := range x.roots {
		root := roots[0]
		kids := x.children[root.ID]
		if root.Error {
			failed++
			if len(kids) != 1 || !kids[0].Error || len(x.children[kids[0].ID]) != 0 {
				t.Fatalf("dropped request: %+v with calls %v", *root, kids)
			}
		} else if len(kids) != 1 || len(x.children[kids[0].ID]) != 1 {
			t.Fatalf("served request without its back span")
		}
	}
	// M/M/1/1: an arrival is dropped when the server is busy, with
	// probability ρ/(1+ρ) = 1/3 at ρ = 0.5.
	share := float64(failed) / float64(len(x.roots))
	sd := math.Sqrt(share * (1 - share) / float64(len(x.roots)))
	if math.Abs(share-1.0/3) > 4*sd {
		t.Errorf("%.4f of the requests dropped, want 1/3 ± %.4f", share, 4*sd)
	}
	if d := wl(t, r, "w").Dropped; !(d > 0) {
		t.Errorf("the simulator counted no drops: %v", d)
	}
}

func TestRecordErrors(t *testing.T) {
	m := parse(t, singleQueue(`{}`, "", `[{cpu: exp(1ms)}]`, 2000))
	called := false
	r, err := Record(context.Background(), m, RecordOptions{Requests: 100}, func(*Span) error { called = true; return nil })
	if err != nil || r.Stable || called {
		t.Errorf("saturated model: err %v, stable %v, spans emitted %v", err, r != nil && r.Stable, called)
	}
	if _, err := Record(context.Background(), m, RecordOptions{}, nil); err == nil {
		t.Error("no error for zero requests")
	}
	m = parse(t, singleQueue(`{}`, "", `[{cpu: exp(1ms)}]`, 100))
	stop := errors.New("stop")
	n := 0
	_, err = Record(context.Background(), m, RecordOptions{Requests: 100}, func(*Span) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Errorf("emit error: got %v after %d spans", err, n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Record(ctx, m, RecordOptions{Requests: 1 << 40}, func(*Span) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// TestEntryStarts checks EntryStarts and EntrySpans against Record: the
// starts (and ends) of the root server spans, by entry operation, in the
// order Record emits them;
// none, and not stable, where the open load is more than a CPU can give.
func TestEntryStarts(t *testing.T) {
	m := exampleModel(t, "shop.yaml")
	roots, _ := record(t, m, RecordOptions{Seed: 9, Requests: 3000, RootsOnly: true})
	want := map[string][]float64{}
	wantSpans := map[string][][2]float64{}
	for _, s := range roots {
		if s.Kind == SpanServer {
			id := s.Component + "/" + s.Operation
			want[id] = append(want[id], s.Start)
			wantSpans[id] = append(wantSpans[id], [2]float64{s.Start, s.End})
		}
	}
	spans, stable, err := Solver{}.EntrySpans(context.Background(), m, 9, 3000)
	if err != nil || !stable || !reflect.DeepEqual(spans, wantSpans) {
		t.Errorf("EntrySpans: the spans of %d operations (stable %v, error %v), want those of Record's roots, by operation (%d)", len(spans), stable, err, len(wantSpans))
	}
	got, stable, err := Solver{}.EntryStarts(context.Background(), m, 9, 3000)
	if err != nil || !stable {
		t.Fatalf("stable %v, error %v", stable, err)
	}
	if len(want) < 2 || !reflect.DeepEqual(got, want) {
		t.Errorf("got the starts of %d operations, want those of Record's %d roots, by operation (%d)", len(got), len(roots), len(want))
	}
	over := parse(t, singleQueue(`{cpu: {cores: 2}}`, "", `[{cpu: exp(10ms)}]`, 250))
	if got, stable, err := (Solver{}).EntryStarts(context.Background(), over, 1, 1000); err != nil || stable || got != nil {
		t.Errorf("overloaded: starts of %d operations, stable %v, error %v; want none, not stable, no error", len(got), stable, err)
	}
}

// TestRecordThreads checks Span.Thread on the example shop: a server span's
// thread is within its component's pool, no two spans of one replica
// overlap on one thread, the spans inside an operation carry its thread,
// and more than one thread serves where requests overlap.
func TestRecordThreads(t *testing.T) {
	m := exampleModel(t, "shop.yaml")
	spans, _ := record(t, m, RecordOptions{Seed: 3, Requests: 3000, ExternalSpans: true})
	x := index(spans)
	pools := map[string]int{}
	for _, c := range m.Components {
		pools[c.Name] = c.Threads
	}
	type key struct {
		host   string
		thread int32
	}
	byThread := map[key][]*Span{}
	most := map[string]int32{}
	for _, s := range spans {
		if s.Kind != SpanServer && s.Kind != SpanConsumer {
			if p := x.byID[s.Parent]; p != nil && s.Thread != p.Thread {
				t.Fatalf("%s span %d on thread %d inside an operation on thread %d", s.Kind, s.ID, s.Thread, p.Thread)
			}
			continue
		}
		if k := pools[s.Component]; k > 0 && int(s.Thread) >= k {
			t.Fatalf("%s span on thread %d of a pool of %d", s.Component, s.Thread, k)
		}
		most[s.Component] = max(most[s.Component], s.Thread)
		k := key{s.Component + "@" + s.Host, s.Thread}
		byThread[k] = append(byThread[k], s)
	}
	for k, ss := range byThread {
		slices.SortFunc(ss, func(a, b *Span) int { return cmp.Compare(a.Start, b.Start) })
		for i := 1; i < len(ss); i++ {
			if ss[i].Start < ss[i-1].End {
				t.Fatalf("%s thread %d: spans %d (%.6f to %.6f) and %d (%.6f to %.6f) overlap", k.host, k.thread,
					ss[i-1].ID, ss[i-1].Start, ss[i-1].End, ss[i].ID, ss[i].Start, ss[i].End)
			}
		}
	}
	if most["catalog"] == 0 || most["frontend"] == 0 {
		t.Errorf("highest threads used %v: requests overlap, more than one thread should serve", most)
	}
}

// TestRecordKeys: an execution's spans carry the key it drew, and the
// unit of a partitioned resource it waited for is its key mod the
// capacity: held around the whole operation, two units serve one
// execution each at a time, so spans of one unit never overlap, while
// those of the two do.
func TestRecordKeys(t *testing.T) {
	m, err := model.Parse([]byte(`perfcast: 1
hosts: {h: {cpu: {cores: 2}}, db: {}}
components:
  api: {host: h, operations: {get: {steps: [{hold: {resource: loops, steps: [{cpu: exp(2ms)}, {call: store/q}]}}]}}}
  store: {host: db, operations: {q: {steps: [{delay: exp(3ms)}]}}}
passive: {loops: {capacity: 2, partitioned: true, before_span: true}}
workload:
  w: {open: {rate: 200}, steps: [{call: api/get}]}
`), "keys.yaml")
	if err != nil {
		t.Fatal(err)
	}
	spans, _ := record(t, m, RecordOptions{Seed: 5, Requests: 4000})
	x := index(spans)
	byUnit := map[uint32][]*Span{}
	for _, s := range spans {
		if s.Kind == SpanClient {
			if p := x.byID[s.Parent]; p == nil || s.Key != p.Key {
				t.Fatalf("client span %d with key %d inside an operation with another", s.ID, s.Key)
			}
		}
		if s.Kind == SpanServer && s.Component == "api" {
			byUnit[s.Key%2] = append(byUnit[s.Key%2], s)
		}
	}
	var all []*Span
	for u, ss := range byUnit {
		all = append(all, ss...)
		slices.SortFunc(ss, func(a, b *Span) int { return cmp.Compare(a.Start, b.Start) })
		for i := 1; i < len(ss); i++ {
			if ss[i].Start < ss[i-1].End {
				t.Fatalf("unit %d: spans %d and %d overlap", u, ss[i-1].ID, ss[i].ID)
			}
		}
	}
	slices.SortFunc(all, func(a, b *Span) int { return cmp.Compare(a.Start, b.Start) })
	overlaps := 0
	for i := 1; i < len(all); i++ {
		if all[i].Start < all[i-1].End {
			overlaps++
		}
	}
	if len(byUnit) != 2 || overlaps == 0 {
		t.Errorf("%d units used, %d overlaps between them: want 2 units, serving at once", len(byUnit), overlaps)
	}
}
