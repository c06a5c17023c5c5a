package sim

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve"
)

// SpanKind is the role of a recorded span in a call, as OpenTelemetry
// defines span kinds.
type SpanKind uint8

// Span kinds.
const (
	SpanInternal SpanKind = iota
	SpanServer
	SpanClient
	SpanProducer
	SpanConsumer
)

var spanKindNames = [...]string{"internal", "server", "client", "producer", "consumer"}

// String returns the lowercase name of the kind.
func (k SpanKind) String() string {
	if int(k) < len(spanKindNames) {
		return spanKindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// ExternalPeer is the peer service of the client spans that stand for delay
// steps (RecordOptions.ExternalSpans).
const ExternalPeer = "external"

// SessionAttr is the attribute that names the user of a closed workload on
// the root spans of its requests, as OpenTelemetry's session.id does.
const SessionAttr = "session.id"

// Attr is an attribute of a recorded span.
type Attr struct {
	Key, Value string
}

// Span is one span the simulated system emits, as OpenTelemetry
// instrumentation of its components would record it. Times are simulated
// seconds since the start of the run.
//
//   - The entry call of a workload request gives a SERVER span of the entry
//     operation, the root of a new trace.
//   - A synchronous call gives a CLIENT span in the caller, from the call to
//     the reply (waiting for a thread of the callee included), and a SERVER
//     span of the callee, its child, from the moment the callee got a thread
//     (and, when its steps begin with a hold of a resource marked
//     before_span, that resource) to its end.
//   - A send gives a PRODUCER span in the sender, which lasts no time, and a
//     CONSUMER span of the receiving operation, its child, from the moment
//     the operation got a thread to its end. A send at workload level gives
//     only the CONSUMER span, the root of a new trace.
//   - With RecordOptions.ExternalSpans, a delay step inside an operation
//     gives a CLIENT span with no child, named after the operation, whose
//     peer is ExternalPeer: an uninstrumented external call.
//   - The root span of a trace carries the request's parameters (the
//     workload's params, one attribute each, named as in the model) and,
//     for a closed workload, SessionAttr naming the user: the workload's
//     name, a hyphen and the user's number from 1. Every trace a request
//     starts carries the same values.
type Span struct {
	// Trace numbers the trace, from 1; every workload-level call or send
	// starts a new one.
	Trace uint64
	// ID numbers the span, from 1, unique in a run; Parent is the ID of the
	// parent span, 0 for a root.
	ID, Parent uint64
	Kind       SpanKind
	// Error is set on the spans of an execution that failed because a queue
	// it had to enter was full (on_full: drop).
	Error bool
	// Component is the component the span ran in (its service).
	Component string
	// Operation names the span: for server and consumer spans the operation
	// they run, for client and producer spans the operation called, for
	// external spans the operation that waited.
	Operation string
	// Peer is the component called by a client or producer span
	// (ExternalPeer for an external span), empty otherwise.
	Peer string
	// Host is the machine: the model's host name, followed by -1, -2, ...
	// when the host has several replicas. Replica is its index, from 0.
	Host    string
	Replica int
	// Start and End are in simulated seconds.
	Start, End float64
	// CPU is the CPU time the execution consumed in its own cpu steps
	// (demands divided by the host's speed), including the steps of its
	// parallel lists; 0 for client and producer spans.
	CPU float64
	// Thread numbers, from 0, the thread of its component replica that
	// ran the span's operation: the one freed last as the operation
	// began, else the next unused (a pool of k threads numbers them 0 to
	// k − 1). A span inside an operation (a client, producer or external
	// span) carries its operation's.
	Thread int32
	// Key is the key its operation's execution drew: of a partitioned
	// passive resource of n units (model.Passive.Partitioned), the
	// execution waits for unit Key mod n. A span inside an operation
	// carries its operation's.
	Key uint32
	// Attrs are the request's parameters and session, on root spans only.
	Attrs []Attr
}

// RecordOptions configure Record.
type RecordOptions struct {
	// Seed of the random streams; 0 means 1.
	Seed uint64
	// Requests is the number of workload requests whose spans are emitted;
	// it must be positive.
	Requests int64
	// ExternalSpans makes delay steps inside operations appear as client
	// spans with no server child.
	ExternalSpans bool
	// ClientEndsOnResume ends a client span (and an external span) when the
	// caller goes on after the reply, not when the reply comes: at the
	// start of its next cpu step, or of whatever it records first (a call,
	// a send, a fork, a delay, its own end). The caller's wait for a
	// thread or a CPU slot to run again is then inside the client span, as
	// Go's HTTP client shows it: the connection's reader goroutine waits
	// for a processor to read the reply and hands it to the caller, whose
	// span ends the call when it runs.
	ClientEndsOnResume bool
	// RootsOnly emits only the root span of each trace: the other spans
	// are not built, which makes a run that needs only when requests
	// started and ended cheaper.
	RootsOnly bool
}

// Record simulates m and hands emit the spans of each workload request, in
// the order the requests complete (when the main path and every
// asynchronous descendant have ended), and within a request in the order the
// spans end. It stops after opts.Requests requests; requests still running
// then are left out whole, so that every emitted trace is complete.
//
// The run is one replication that starts empty: its first requests see a
// less loaded system than in steady state, as a system just started does;
// no warm-up is cut. The result holds what the simulator measured over the
// whole run (means and percentiles without confidence intervals). Output is
// the same for the same model and seed. An error from emit stops the run
// and is returned.
//
// A host's speed variation (model.CPU.SpeedVariation) is simulated when
// it has a speed window: the spans' durations follow the speed, and so do
// their CPU times, each burst's taken at the speed it starts at (exact
// for a burst that ends before the speed changes). Without a window it is
// not: the traces run at the host's mean speed, and the result's warnings
// say so.
//
// When the open workloads need more than a resource can give, or the run
// finds no steady state, the result says stable: false and emit may not have
// been called at all.
func Record(ctx context.Context, m *model.Model, opts RecordOptions, emit func(*Span) error) (*solve.Result, error) {
	start := time.Now()
	if opts.Requests <= 0 {
		return nil, fmt.Errorf("record %s: the number of requests must be positive, not %d", modelName(m), opts.Requests)
	}
	// Speed curves: the factors at the load of a steady state.
	resolved, factors, err := solve.ResolveSpeeds(ctx, m, func(ctx context.Context, c *model.Model) (*solve.Result, error) {
		return New().Solve(ctx, c, solve.Options{Seed: opts.Seed, Precision: 0.05})
	})
	if err != nil {
		return nil, fmt.Errorf("record %s: %w", modelName(m), err)
	}
	m = resolved
	seed := opts.Seed
	if seed == 0 {
		seed = 1
	}
	res := solve.NewResult(m, "sim")
	res.SpeedFactors = factors
	for _, h := range m.Hosts {
		if h.CPU.SpeedVariation > 0 && !h.CPU.VariesOverTime() {
			res.Warnings = append(res.Warnings, fmt.Sprintf("host %s: its speed variation (%.3g) is not in the traces, which run at its mean speed throughout (it needs a speed_window)", h.Name, h.CPU.SpeedVariation))
		}
	}
	res.Warnings = append(res.Warnings, speedWindows(m)...)
	if overloaded(m, res, seed, start) {
		return res, nil
	}
	p, err := compile(m)
	if err != nil {
		return nil, fmt.Errorf("record %s: %w", modelName(m), err)
	}
	descs := resources(p)
	if !solve.HasLoad(m) {
		solve.FillIdle(res, m)
		res.Sim = &solve.SimInfo{Seed: seed, WallSeconds: time.Since(start).Seconds()}
		return res, nil
	}

	e := newEngine(p, seed, 0, 0, math.MaxInt64, liveLimit(m))
	rec := newRecorder(p, opts, emit)
	e.rec = rec
	if err := e.run(ctx); err != nil {
		return nil, err
	}
	if rec.err != nil {
		return nil, rec.err
	}
	o := collect(e, descs)
	r := &runner{p: p, descs: descs, outs: []*repOut{o}, wlSk: o.st.wlSk, opSk: o.st.opSk, opSpanSk: o.st.opSpanSk,
		requests: o.requests, events: o.events, simTime: o.t}
	if o.unstable != nil {
		reportUnstable(res, m, o.unstable)
	} else {
		r.fill(res)
	}
	res.Sim = &solve.SimInfo{Seed: seed, Replications: 1, Requests: o.requests, Events: o.events,
		SimTime: o.t, WallSeconds: time.Since(start).Seconds()}
	return res, nil
}

// ReplicaHost is the machine name recorded spans give replica i (from 0)
// of a host with the given replicas: the host's name, followed by -1, -2,
// ... when it has several.
func ReplicaHost(host string, replicas, i int) string {
	if replicas == 1 {
		return host
	}
	return host + "-" + strconv.Itoa(i+1)
}

// recorder turns the engine's progress into spans. The engine calls it
// through the hooks marked "span recording"; it is nil when not recording.
type recorder struct {
	p         *program
	external  bool
	onResume  bool // RecordOptions.ClientEndsOnResume
	rootsOnly bool // RecordOptions.RootsOnly
	// scratch stands for every span below a root where only roots are
	// recorded: its fields are written and never read.
	scratch Span
	emit    func(*Span) error
	err     error
	want    int64 // requests to emit
	emitted int64

	hostNames [][]string // per host, per replica
	opNames   []string   // operation name without its component

	traces uint64
	ids    uint64
	tasks  []taskRec // per task id
	buf    [][]*Span // ended spans per request id, until the request is done
	// threads holds, per thread pool (one component replica's), the
	// threads that ran operations (Span.Thread).
	threads []threadIDs
}

// threadIDs numbers the threads of one pool: those used so far, and the
// free ones among them, the last freed on top.
type threadIDs struct {
	used int32
	free []int32
}

// callRec is one operation a task is running: its server (or consumer) span
// and the client span of the call that started it, if any.
type callRec struct {
	client, server *Span
	// pool and thread are the thread pool and the thread the operation
	// holds.
	pool, thread int32
}

// taskRec is what the recorder knows of one task.
type taskRec struct {
	trace uint64
	// base is the operation span the calls of a forked list hang under.
	base  *Span
	stack []callRec
	// pending is the client span of a call waiting for a thread.
	pending *Span
	// producer is the producer span a send task's consumer span hangs under
	// (0 at workload level).
	producer uint64
	// ext is the external span of a delay in progress.
	ext *Span
	// resume is the client or external span of a call that has returned,
	// which ends when the task goes on (RecordOptions.ClientEndsOnResume).
	resume *Span
}

// current is the span the task's steps run in, nil at workload level.
func (tr *taskRec) current() *Span {
	if n := len(tr.stack); n > 0 {
		return tr.stack[n-1].server
	}
	return tr.base
}

func newRecorder(p *program, opts RecordOptions, emit func(*Span) error) *recorder {
	r := &recorder{p: p, external: opts.ExternalSpans, onResume: opts.ClientEndsOnResume, rootsOnly: opts.RootsOnly, emit: emit, want: opts.Requests}
	for _, h := range p.hosts {
		names := make([]string, h.replicas)
		for i := range names {
			names[i] = ReplicaHost(h.name, int(h.replicas), i)
		}
		r.hostNames = append(r.hostNames, names)
	}
	for _, op := range p.ops {
		r.opNames = append(r.opNames, op.id[len(p.comps[op.comp].name)+1:])
	}
	return r
}

func (r *recorder) task(id int32) *taskRec {
	for int(id) >= len(r.tasks) {
		r.tasks = append(r.tasks, taskRec{})
	}
	return &r.tasks[id]
}

func (r *recorder) newID() uint64 {
	r.ids++
	return r.ids
}

// span starts a span of operation op (the one running, for placement) on
// replica rep. Where only roots are recorded, a span with a parent is the
// recorder's scratch span, given the ID the span would have had.
func (r *recorder) span(e *engine, tr *taskRec, kind SpanKind, runs, rep int32, parent uint64) *Span {
	if r.rootsOnly && parent != 0 {
		r.scratch.ID = r.newID()
		return &r.scratch
	}
	c := &r.p.comps[r.p.ops[runs].comp]
	s := &Span{Trace: tr.trace, ID: r.newID(), Parent: parent, Kind: kind, Component: c.name,
		Operation: r.opNames[runs], Host: r.hostNames[c.host][rep], Replica: int(rep), Start: e.now}
	if cur := tr.current(); cur != nil {
		s.Thread, s.Key = cur.Thread, cur.Key
	}
	return s
}

// takeThread takes a thread of pool for an operation: the one freed
// last, else one not used before.
func (r *recorder) takeThread(pool int32) int32 {
	for int(pool) >= len(r.threads) {
		r.threads = append(r.threads, threadIDs{})
	}
	ids := &r.threads[pool]
	if n := len(ids.free); n > 0 {
		th := ids.free[n-1]
		ids.free = ids.free[:n-1]
		return th
	}
	ids.used++
	return ids.used - 1
}

// ended buffers a span that has ended with its request.
func (r *recorder) ended(req int32, s *Span) {
	if s == &r.scratch {
		return
	}
	for int(req) >= len(r.buf) {
		r.buf = append(r.buf, nil)
	}
	r.buf[req] = append(r.buf[req], s)
}

// newTask forgets what the task's previous use left.
func (r *recorder) newTask(t *task) {
	tr := r.task(t.id)
	*tr = taskRec{stack: tr.stack[:0]}
}

// fork starts forked list c of task t inside t's operation.
func (r *recorder) fork(e *engine, t, c *task) {
	pt := r.task(t.id)
	r.goOn(e, t, pt)
	ct := r.task(c.id)
	ct.trace, ct.base = pt.trace, pt.current()
}

// send records a send by task t that started task c: a producer span in the
// sender, or, at workload level, a new trace.
func (r *recorder) send(e *engine, t, c *task, op int32) {
	pt := r.task(t.id)
	r.goOn(e, t, pt)
	ct := r.task(c.id)
	cur := pt.current()
	if cur == nil {
		r.traces++
		ct.trace = r.traces
		return
	}
	s := r.span(e, pt, SpanProducer, t.op, t.rep, cur.ID)
	s.Operation = r.opNames[op]
	s.Peer = r.p.comps[r.p.ops[op].comp].name
	s.End = e.now
	r.ended(t.req, s)
	ct.trace, ct.producer = pt.trace, s.ID
}

// enter records that task t calls operation op (t's state is still the
// caller's): a client span, or, at workload level, a new trace.
func (r *recorder) enter(e *engine, t *task, op int32) {
	tr := r.task(t.id)
	r.goOn(e, t, tr)
	tr.pending = nil
	if t.kind == taskSend && len(tr.stack) == 0 && tr.base == nil {
		return // the send's own entry: its consumer span follows
	}
	cur := tr.current()
	if cur == nil {
		r.traces++
		tr.trace = r.traces
		return
	}
	s := r.span(e, tr, SpanClient, t.op, t.rep, cur.ID)
	s.Operation = r.opNames[op]
	s.Peer = r.p.comps[r.p.ops[op].comp].name
	tr.pending = s
}

// begin records that task t got a thread for its pending operation, which
// it now runs.
func (r *recorder) begin(e *engine, t *task) {
	tr := r.task(t.id)
	kind, parent := SpanServer, uint64(0)
	switch {
	case tr.pending != nil:
		parent = tr.pending.ID
	case t.kind == taskSend && len(tr.stack) == 0 && tr.base == nil:
		kind, parent = SpanConsumer, tr.producer
	}
	s := r.span(e, tr, kind, t.op, t.rep, parent)
	if parent == 0 {
		s.Attrs = r.rootAttrs(e.reqs[t.req])
	}
	pool := r.p.comps[r.p.ops[t.op].comp].pool + t.rep
	thread := r.takeThread(pool)
	s.Thread, s.Key = thread, t.key
	tr.stack = append(tr.stack, callRec{client: tr.pending, server: s, pool: pool, thread: thread})
	tr.pending = nil
}

// rootAttrs are the attributes of the root spans of request q.
func (r *recorder) rootAttrs(q *request) []Attr {
	w := &r.p.workloads[q.wl]
	var a []Attr
	for i, v := range q.params {
		prm := w.paramDefs[i]
		a = append(a, Attr{Key: prm.Name, Value: prm.Values[v]})
	}
	if q.user >= 0 {
		a = append(a, Attr{Key: SessionAttr, Value: w.name + "-" + strconv.Itoa(int(q.user)+1)})
	}
	return a
}

// started moves the start of t's operation span to now: the operation has
// just taken the resource it waits for before its span starts.
func (r *recorder) started(e *engine, t *task) {
	tr := r.task(t.id)
	if n := len(tr.stack); n > 0 {
		tr.stack[n-1].server.Start = e.now
	}
}

// leave records the end of the operation t runs (t's state is still the
// callee's).
func (r *recorder) leave(e *engine, t *task, failed bool) {
	tr := r.task(t.id)
	r.goOn(e, t, tr)
	n := len(tr.stack)
	if n == 0 {
		return
	}
	c := tr.stack[n-1]
	tr.stack = tr.stack[:n-1]
	ids := &r.threads[c.pool]
	ids.free = append(ids.free, c.thread)
	c.server.End, c.server.Error = e.now, failed
	r.ended(t.req, c.server)
	if c.client != nil {
		c.client.End, c.client.Error = e.now, failed
		if r.onResume && !failed {
			tr.resume = c.client
			return
		}
		r.ended(t.req, c.client)
	}
}

// taskEnd ends, as task t ends, the span of the call it returned from
// last, if it is still open (RecordOptions.ClientEndsOnResume).
func (r *recorder) taskEnd(e *engine, t *task) {
	r.goOn(e, t, r.task(t.id))
}

// goOn ends the span of the call task t has returned from, now that t goes
// on (RecordOptions.ClientEndsOnResume).
func (r *recorder) goOn(e *engine, t *task, tr *taskRec) {
	if s := tr.resume; s != nil {
		s.End = e.now
		r.ended(t.req, s)
		tr.resume = nil
	}
}

// fail records that task t failed: a call waiting for a thread ends in
// error (the operations it runs end through leave as they unwind).
func (r *recorder) fail(e *engine, t *task) {
	tr := r.task(t.id)
	if s := tr.pending; s != nil {
		s.End, s.Error = e.now, true
		r.ended(t.req, s)
		tr.pending = nil
	}
}

// cpu adds the CPU time of a cpu step to the span it runs in.
func (r *recorder) cpu(e *engine, t *task, w float64) {
	tr := r.task(t.id)
	r.goOn(e, t, tr)
	if s := tr.current(); s != nil {
		s.CPU += w
	}
}

// delay records the start of a delay step of d seconds.
func (r *recorder) delay(e *engine, t *task, d float64) {
	tr := r.task(t.id)
	r.goOn(e, t, tr)
	if !r.external {
		return
	}
	cur := tr.current()
	if cur == nil || t.op < 0 {
		return
	}
	s := r.span(e, tr, SpanClient, t.op, t.rep, cur.ID)
	s.Peer = ExternalPeer
	s.End = e.now + d
	tr.ext = s
}

// wake records the end of a delay step.
func (r *recorder) wake(t *task) {
	tr := r.task(t.id)
	if s := tr.ext; s != nil {
		tr.ext = nil
		if r.onResume {
			tr.resume = s
			return
		}
		r.ended(t.req, s)
	}
}

// done emits the spans of a request whose tasks have all ended, and stops
// the run when enough requests were emitted.
func (r *recorder) done(e *engine, req int32) {
	if int(req) >= len(r.buf) {
		r.buf = append(r.buf, make([][]*Span, int(req)+1-len(r.buf))...)
	}
	spans := r.buf[req]
	r.buf[req] = spans[:0]
	if r.err != nil || r.emitted >= r.want {
		return
	}
	for i, s := range spans {
		if err := r.emit(s); err != nil {
			r.err = err
			e.done = true
			break
		}
		spans[i] = nil
	}
	r.emitted++
	if r.emitted >= r.want {
		e.done = true
	}
}

// EntryStarts simulates m for the given number of workload requests, from
// empty, with the given seed, and returns, by entry operation
// ("component/operation"), when the root server spans of its requests
// started, in simulated seconds, in the order the requests completed.
// stable is false when the open workloads need more than a resource can
// give or the run finds no steady state; the starts are then nil.
func (s Solver) EntryStarts(ctx context.Context, m *model.Model, seed uint64, requests int64) (starts map[string][]float64, stable bool, err error) {
	spans, stable, err := s.EntrySpans(ctx, m, seed, requests)
	if err != nil || !stable {
		return nil, stable, err
	}
	starts = make(map[string][]float64, len(spans))
	for id, ivs := range spans {
		for _, iv := range ivs {
			starts[id] = append(starts[id], iv[0])
		}
	}
	return starts, true, nil
}

// EntrySpans is EntryStarts with each root server span's start and end.
func (Solver) EntrySpans(ctx context.Context, m *model.Model, seed uint64, requests int64) (spans map[string][][2]float64, stable bool, err error) {
	spans = map[string][][2]float64{}
	res, err := Record(ctx, m, RecordOptions{Seed: seed, Requests: requests, RootsOnly: true}, func(s *Span) error {
		if s.Parent == 0 && s.Kind == SpanServer {
			id := s.Component + "/" + s.Operation
			spans[id] = append(spans[id], [2]float64{s.Start, s.End})
		}
		return nil
	})
	if err != nil || !res.Stable {
		return nil, false, err
	}
	return spans, true, nil
}
