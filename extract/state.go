package extract

import (
	"maps"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/perfcast/perfcast/ingest"
	"github.com/perfcast/perfcast/trace"
)

// State is the aggregate of everything extraction learns from call trees.
// Its memory grows with the size of the model (operations, call variants,
// classes), not with the number of spans; two states folded from disjoint
// sets of traces merge into the state of their union, so extraction can run
// in parts, in parallel, or live.
type State struct {
	Traces int64
	Spans  int64
	// Modeled counts the spans that became part of the model: operations,
	// calls, sends and external calls. The rest were folded into the
	// operation that contains them (internal spans) or skipped.
	Modeled int64
	// Partial counts partial traces (a parent missing).
	Partial int64
	// OutsideWindow counts the traces left out because their request
	// arrived outside the configured time window (Config.From, To); the
	// other counts leave them out.
	OutsideWindow int64
	// WithCPU counts operation executions that carried a measured CPU time.
	WithCPU int64
	// Sampled counts the traces kept with a probability below 1 (their
	// spans said so, or Config.Sampling did); RateLimited those a
	// rate-limiting sampler kept, whose probability is unknown.
	Sampled, RateLimited int64
	// keptMin and keptMax bound the probabilities of the sampled traces.
	keptMin, keptMax float64
	// weights sums, over the requests, the inverse of the probability
	// with which their trace was kept: the requests they stand for.
	weights float64
	// weight is that of the trace being folded.
	weight float64
	// unattributed is, per component, the CPU time outside the spans that
	// the last model generated added to each execution (see
	// unattributedCPU and outsideShare); Measured counts it.
	unattributed map[string]outsideShare
	// First and Last are the earliest and latest request arrival, in Unix
	// nanoseconds.
	First, Last int64

	ops     map[string]*opStats
	entries map[string]*entryStats
	// requests is the sum of the entries' counts.
	requests int64
	// placement records, per component, on which hosts and instances its
	// operations ran.
	placement map[string]*placement
	// conc profiles the concurrency of every operation and of every
	// component replica, to find hidden limits (thread pools, locks).
	conc map[string]*concurrency
	// soleReplica holds, per component, the one replica its spans ran on
	// so far, or "" once they ran on a second. Until then the concurrency
	// of its operations and call sites is profiled over the system alone,
	// which is that replica's (splitReplicas).
	soleReplica map[string]string
	// soleProcess holds, per component replica on a machine (its
	// replicaGroup key), the one process (ProcessOf) its spans ran in so
	// far, or "" once they ran in a second. Until then the replica's
	// profile is that process's, and processes are profiled apart only
	// from the second on (splitProcess): most replicas run one process,
	// whose profile would repeat the replica's at a cost.
	soleProcess map[string]string
	// callers counts the executions of each process of a component on a
	// machine by the process that called it (noteCaller).
	callers map[processPair]int64
	// shapes measures, per component replica on a machine (its
	// replicaGroup key) whose spans name their processes and may have
	// CPU slots (a one-thread runtime's, declared ones), whether the
	// processes serve one queue or a queue each (shapeSweep).
	shapes map[string]*shapeSweep
	// categories holds the text values seen per request parameter.
	categories map[string]map[string]bool
	// sessions aggregates the requests that carry a session id.
	sessions *sessionStats
	// siteTimes holds the durations of the calls of every call site (the
	// caller's side, waits included), and siteBare how many of them had
	// no client span between the caller's span and the callee's (a hop
	// with no client span): what the callee waited for before its span
	// started is then in the caller's own time.
	siteTimes map[string]*sample
	siteBare  map[string]int64
	// choices follows, per component, the load on each of its replicas
	// as each call to it began (see choiceSweep).
	choices map[string]*choiceSweep
	// starts samples, per component replica (keyed as its concurrency
	// profile, replicaGroup), the start times of its server spans: the
	// arrivals its CPU sees, after the network, the balancer's split and
	// the callers' own time have reshaped the workloads' arrivals.
	starts map[string]*arrivalSample
	// Windows holds per host and time window the completions and own
	// times of every operation, for estimating CPU demands from
	// utilization metrics.
	Windows *Windows
	// active caches when the requests arrived (see activity).
	active *activity
	// solo finds, per host, the executions that ran alone; calm holds
	// the calm its executions found, per host and, for components with
	// CPU slots, per component (calmKey).
	solo map[string]*soloSweep
	// peers sweeps the calls to each system seen only by its clients'
	// spans, by the system's name (see peerqueue.go); calls of sampled
	// traces are left out.
	peers map[string]*peerSweep
	// dbPeers holds the systems seen only by their clients that the
	// clients' spans say are databases, with their db.system, by name as
	// externalName writes it: their calls may hold a client's connection
	// pool (metricPools).
	dbPeers map[string]string
	// extSites caches, by operation, target and replica (empty where the
	// component is profiled over the system alone), the durations and
	// profiles a call to a system seen only by its clients adds to
	// (externalCall), whose keys allocated when built for every call. The
	// entries' samples and profiles are those of siteTimes and conc,
	// which merging and splitting replicas never replace.
	extSites map[extSiteKey]*extSite
	// txTimes holds, by the call site of their first call (siteGroup),
	// the durations of the transactions an operation's calls to a
	// database ran in (foldTransactions), and txHeld the part of each
	// that was in none of the operation's calls: its own time while it
	// held the connection.
	txTimes, txHeld map[string]*sample
	// toEnd holds, by operation and database (siteGroup(id, peer)), per
	// execution that called the database, the time from its first call's
	// start to the execution's end, and toEndOwn the execution's own
	// time in it (foldToEnd): how long a connection taken at the first
	// call and kept to the request's end is held.
	toEnd, toEndOwn map[string]*sample
	calm            map[string]*calmStats
	// occupied holds, per host, how long its own times competed for its
	// cores, by how many (see occupancy).
	occupied map[string]*occupancy
	// ownBuf and callBuf are scratch space for an execution's own
	// intervals and its calls' (see ownIntervals).
	ownBuf, callBuf []interval
	// links joins messages consumed in traces of their own to the
	// operations that produced them.
	links links
	// inRequest lists the operations the request being folded ran.
	inRequest []*opStats
	// callerHost is the host (as the windows name it) of the operation
	// whose synchronous calls are being folded, "" outside calls.
	callerHost string
	// clientStart is, while an operation called through a client span is
	// folded, when that client span started; 0 otherwise.
	clientStart int64
	// reqEnds holds, per component replica (the starts' key), when the
	// request being folded last left it.
	reqEnds map[string]int64
}

// Keys of concurrency profiles: an operation's and a call site's over the
// whole system and on each replica (the caller's, for a call site).
func opGroup(id string) string { return "op\x00" + id }
func siteGroup(caller, target string) string {
	return "site\x00" + caller + "\x00" + target
}
func opReplicaGroup(id, replica string) string { return "opr\x00" + id + "\x00" + replica }
func siteReplicaGroup(caller, target, replica string) string {
	return "sitr\x00" + caller + "\x00" + target + "\x00" + replica
}

// resourceGroup keys the profile of the spans of the operations the
// configuration declares a passive resource around (Config.Passive);
// where it is declared per replica, resourceCompGroup keys those of one
// component's operations over the system and resourceReplicaGroup those
// on each of its replicas.
func resourceGroup(name string) string { return "res\x00" + name }
func resourceCompGroup(name, comp string) string {
	return "resc\x00" + comp + "\x00" + name
}
func resourceReplicaGroup(name, comp, replica string) string {
	return resourceReplicaPrefix(name) + comp + "\x00" + replica
}

// resourceReplicaPrefix begins the keys of every resourceReplicaGroup of
// declared resource name.
func resourceReplicaPrefix(name string) string { return "resr\x00" + name + "\x00" }

// dbCallsGroup keys the profile of component comp's calls to database
// peer over the system, dbCallsReplicaGroup on each of its replicas.
func dbCallsGroup(comp, peer string) string { return "dbc\x00" + comp + "\x00" + peer }
func dbCallsReplicaGroup(comp, peer, replica string) string {
	return "dbcr\x00" + comp + "\x00" + peer + "\x00" + replica
}

func replicaGroup(comp, replica string) string {
	return "replica\x00" + comp + "\x00" + replica
}

// processGroup keys the profile of a component's spans in one of its
// processes on a machine (ProcessOf: its instance, else its pid), of
// which a replica may run several.
func processGroup(comp, process string) string {
	return "proc\x00" + comp + "\x00" + process
}

// NewState returns an empty state.
func NewState() *State {
	return &State{
		First:       math.MaxInt64,
		Last:        math.MinInt64,
		ops:         map[string]*opStats{},
		entries:     map[string]*entryStats{},
		placement:   map[string]*placement{},
		conc:        map[string]*concurrency{},
		soleReplica: map[string]string{},
		soleProcess: map[string]string{},
		callers:     map[processPair]int64{},
		shapes:      map[string]*shapeSweep{},
		categories:  map[string]map[string]bool{},
		Windows:     NewWindows(),
		siteTimes:   map[string]*sample{},
		siteBare:    map[string]int64{},
		starts:      map[string]*arrivalSample{},
		choices:     map[string]*choiceSweep{},
		solo:        map[string]*soloSweep{},
		peers:       map[string]*peerSweep{},
		dbPeers:     map[string]string{},
		extSites:    map[extSiteKey]*extSite{},
		txTimes:     map[string]*sample{},
		txHeld:      map[string]*sample{},
		toEnd:       map[string]*sample{},
		toEndOwn:    map[string]*sample{},
		calm:        map[string]*calmStats{},
		occupied:    map[string]*occupancy{},
	}
}

// initWithin makes op's samples of the executions within each level, the
// first its solo sample; those not yet there are new and empty.
func (op *opStats) initWithin() {
	op.within[0] = op.solo
	for i := 1; i < soloLevelCount; i++ {
		if op.within[i] == nil {
			op.within[i] = newSample()
		}
	}
}

// occupiedOn returns host's occupancy record, adding it.
func (s *State) occupiedOn(host string) *occupancy {
	o := s.occupied[host]
	if o == nil {
		o = &occupancy{}
		s.occupied[host] = o
	}
	return o
}

// soloOn returns the sweep of host's executions.
func (s *State) soloOn(host string) *soloSweep {
	w := s.solo[host]
	if w == nil {
		w = newSoloSweep(host, s.calm)
		w.occ = s.occupiedOn(host)
		s.solo[host] = w
	}
	return w
}

// finishSolo sweeps the executions still pending, so that every
// operation's solo sample is complete.
func (s *State) finishSolo() {
	for _, w := range s.solo {
		w.finish()
	}
}

// noteReplica records that a span of component comp ran on replica and
// reports whether its operations' and call sites' concurrency is to be
// profiled on each replica: once a second replica is seen, the profiles
// over the system so far become the first replica's (splitReplicas).
func (s *State) noteReplica(comp, replica string) bool {
	several, first := noteSole(s.soleReplica, comp, replica)
	if first != "" {
		s.splitReplicas(comp, first)
	}
	return several
}

// noteSole records value v under key in sole, which holds per key the one
// value seen so far, or "" once a second was seen. It reports whether
// several were seen, and, as the second is, the first.
func noteSole(sole map[string]string, key, v string) (several bool, first string) {
	one, seen := sole[key]
	switch {
	case !seen:
		sole[key] = v
		return false, ""
	case one == "":
		return true, ""
	case one == v:
		return false, ""
	}
	sole[key] = ""
	return true, one
}

// splitReplicas gives replica, the one component comp's spans ran on so
// far, a copy of each profile over the system of comp's operations, call
// sites, declared per-replica resources and calls to databases, which
// every span folded so far went into (the same intervals in the same
// order: the profile it would have had), and marks comp as running on
// several.
func (s *State) splitReplicas(comp, replica string) {
	copies := map[string]*concurrency{}
	for k, c := range s.conc {
		kind, rest, _ := strings.Cut(k, "\x00")
		caller, target, _ := strings.Cut(rest, "\x00")
		switch op := s.ops[caller]; {
		case kind == "resc" && caller == comp:
			copies[resourceReplicaGroup(target, comp, replica)] = c.clone()
		case kind == "dbc" && caller == comp:
			copies[dbCallsReplicaGroup(comp, target, replica)] = c.clone()
		case op == nil || op.component != comp:
		case kind == "op":
			copies[opReplicaGroup(caller, replica)] = c.clone()
		case kind == "site":
			copies[siteReplicaGroup(caller, target, replica)] = c.clone()
		}
	}
	maps.Copy(s.conc, copies)
	s.soleReplica[comp] = ""
}

// noteProcess records that a span of component comp ran in process p on
// the replica whose profile rg keys, and reports whether the replica's
// processes are profiled apart: from its second process on.
func (s *State) noteProcess(rg, comp, p string) bool {
	several, first := noteSole(s.soleProcess, rg, p)
	if first != "" {
		s.splitProcess(rg, comp, first)
	}
	return several
}

// splitProcess gives process one, the one the replica whose profile rg
// keys ran in so far, a copy of the replica's profile, which every span
// there went into (spans that named no process included), and marks the
// replica as running several.
func (s *State) splitProcess(rg, comp, one string) {
	if c := s.conc[rg]; c != nil {
		s.conc[processGroup(comp, one)] = c.clone()
	}
	s.soleProcess[rg] = ""
}

func (s *State) profile(key string, start, end int64) {
	s.profileOf(key).add(start, end)
}

// profileOf returns the profile of key (conc), made on first use.
func (s *State) profileOf(key string) *concurrency {
	c := s.conc[key]
	if c == nil {
		c = newConcurrency()
		s.conc[key] = c
	}
	return c
}

// opStats aggregates the executions of one operation.
type opStats struct {
	component, name string
	count           int64
	resp            *sample // duration
	self            *sample // own time: duration minus synchronous children
	// solo holds the own times of the executions no other execution
	// overlapped on their host (see soloSweep); it is within[0].
	solo *sample
	// within holds, per level of soloLevels, the own times of the
	// executions whose most other executions' own times beside theirs
	// was within that level and not the one below; begun counts, per
	// level, those whose intervals all began so (the most active at a
	// start within the level, not the one below).
	within [soloLevelCount]*sample
	begun  [soloLevelCount]int64
	// ownAtStart holds the moments of the own times of the executions
	// by how many own times of other requests were under way on the host
	// as they began: per level of soloLevels (the lowest within), the
	// last beyond them all. Arrivals see the host as it is on average, so an
	// execution's own time does not depend on its level unless it waits
	// for something the others hold (see sharedWait).
	ownAtStart [soloLevelCount + 1]moments
	cpu        *sample // measured CPU time, when present
	offCPU     *sample // own time minus CPU time, when CPU time is present
	// preSpan is, for executions called through a client span, the time
	// from the client span's start to the server span's: the network, and
	// whatever the request waited for before the server began it.
	preSpan *sample
	// variants are the observed sequences of calls, by request class (the
	// entry operation of the request) and then by signature.
	variants map[string]map[string]*variant
	// params holds, per request parameter and value bucket, the demand and
	// the variants seen.
	params map[string]map[string]*paramStats
	// countSq and cpuSq are the sums over requests of the squares of the
	// request's executions of the operation and of their CPU time: with
	// requests arriving as a Poisson stream, the variances of the
	// operation's count and CPU time (compound Poisson). reqCount and
	// reqCPU tally the request being folded.
	countSq, cpuSq   float64
	reqCount, reqCPU float64
	// errors counts the executions whose span's status was an error.
	errors int64
	// resumes counts the stretches of own time that began when a
	// synchronous call or an external call ended, not at the span's
	// start, and lasted at least minResume: where the execution went
	// on after it blocked. resumedNs is their own time, nanoseconds.
	resumes, resumedNs int64
	// resumeGap is, for the resumes that followed a call through a client
	// span to a traced server, the time from the server span's end to the
	// client span's: the network back, and whatever the caller waited for
	// before its client saw the reply. Go's HTTP client ends its span only
	// when the caller runs again, so there the caller's wait for a
	// processor after the call shows here, not in its own time. gapCalls
	// counts the calls to traced servers through client spans, whether a
	// resume followed them or not.
	resumeGap *sample
	gapCalls  int64
}

// minResume is the least own time after a call that counts as the
// execution going on after it (a resume): shorter gaps are timestamps'
// rounding.
const minResume = 2_000 // nanoseconds

// variant is one observed control flow of an operation: a sequence of
// elements, consecutive repetitions of one element folded into a loop.
type variant struct {
	count int64
	elems []*elem
}

// elemKind tells what one element of a variant is.
type elemKind uint8

const (
	elemCall elemKind = iota + 1
	elemSend
	elemExternal
	elemParallel
)

// elem is one element of a variant with its statistics.
type elem struct {
	kind elemKind
	// target is `component/operation` for calls and sends, a description
	// for external calls.
	target string
	// lists are the branches of a parallel element.
	lists [][]*elem
	// times counts how often the element repeated in a row.
	times map[int]int64
	// latency is the caller-side time outside the callee: the network for
	// a call, the whole call for an external one.
	latency *sample
}

// entryStats aggregates the requests of one class, named by its entry
// operation.
type entryStats struct {
	op    string
	count int64
	// weight is the requests count stands for (see State.weights).
	weight float64
	// linked counts the requests whose entry span links to a span of
	// another trace: messages a producer sent, consumed in traces of
	// their own.
	linked int64
	resp   *sample
	// perSecond counts arrivals per second since the Unix epoch, to find
	// idle stretches and measure the rate.
	perSecond map[int64]int64
	// arrivals samples the arrival times, to measure the arrivals'
	// burstiness.
	arrivals *arrivalSample
	// params counts requests per parameter and value bucket.
	params map[string]map[string]int64
}

// placement is where one component ran: executions per machine and per
// instance, and when each machine and instance served its first and its
// last.
type placement struct {
	hosts     map[string]int64
	instances map[string]int64
	hostLife  map[string]lifetime
	instLife  map[string]lifetime
	// runtimes counts the executions by their process's
	// telemetry.sdk.language and process.runtime.name (joined by a NUL);
	// procs and procLife count the executions and the lifetimes of the
	// processes of one-thread runtimes that their spans name (ProcessOf).
	// All nil until met.
	runtimes map[string]int64
	procs    map[string]int64
	procLife map[string]lifetime
}

func newPlacement() *placement {
	return &placement{hosts: map[string]int64{}, instances: map[string]int64{},
		hostLife: map[string]lifetime{}, instLife: map[string]lifetime{}}
}

// lifetime is the time from the start of a replica's first execution to
// the end of its last, in Unix nanoseconds.
type lifetime struct {
	First int64 `json:"first"`
	Last  int64 `json:"last"`
}

// widen returns l widened to take in [start, end]; the zero lifetime is
// empty.
func (l lifetime) widen(start, end int64) lifetime {
	if l == (lifetime{}) {
		return lifetime{start, end}
	}
	return lifetime{min(l.First, start), max(l.Last, end)}
}

// Fold adds one call tree to the state.
func (s *State) Fold(t *trace.Tree, cfg *Config) {
	if len(t.Roots) > 0 && !cfg.inWindow(t.Roots[0].Span.Start) {
		s.OutsideWindow++
		return
	}
	s.Traces++
	s.Spans += int64(t.Spans)
	if t.Partial {
		s.Partial++
	}
	s.weight = 1 / s.keptWith(t, cfg)
	for _, root := range t.Roots {
		for _, n := range entryNodes(root) {
			entry := cfg.opID(n.Span)
			params := requestParams(n, cfg, s.categories)
			e := s.entry(entry, n)
			e.foldParams(params)
			if linksOut(n, t.TraceID) {
				e.linked++
				s.links.consume(n, t.TraceID, entry)
			}
			s.foldSession(entry, n, cfg)
			s.operation(n, entry, params, cfg)
			s.endRequest()
		}
	}
}

// linksOut reports whether n's span links to a span of another trace
// than trace.
func linksOut(n *trace.Node, trace ingest.TraceID) bool {
	for _, l := range n.Span.Links {
		if l.TraceID != trace {
			return true
		}
	}
	return false
}

// entryNodes returns the nodes where requests enter the system: the root
// itself, or, when the root is a client (a load generator or a front end
// instrumented only as a client), the operations it calls.
func entryNodes(root *trace.Node) []*trace.Node {
	if root.Span.Kind != ingest.KindClient && root.Span.Kind != ingest.KindProducer {
		return []*trace.Node{root}
	}
	var out []*trace.Node
	for _, c := range root.Children {
		if isOperation(c, root) {
			out = append(out, c)
		} else {
			out = append(out, entryNodes(c)...)
		}
	}
	if len(out) == 0 {
		return []*trace.Node{root}
	}
	return out
}

func (s *State) entry(id string, root *trace.Node) *entryStats {
	e := s.entries[id]
	if e == nil {
		e = &entryStats{op: id, resp: newSample(), perSecond: map[int64]int64{}, arrivals: newArrivalSample()}
		s.entries[id] = e
	}
	e.count++
	e.weight += s.weight
	s.requests++
	s.weights += s.weight
	e.resp.add(seconds(root.Duration()))
	e.perSecond[floorDiv(root.Span.Start, 1e9)]++
	e.arrivals.add(root.Span.Start)
	s.First = min(s.First, root.Span.Start)
	s.Last = max(s.Last, root.Span.Start)
	return e
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func seconds(ns int64) float64 { return float64(ns) / 1e9 }

// endRequest adds the squares of the request's tallies (see
// opStats.countSq).
func (s *State) endRequest() {
	for _, op := range s.inRequest {
		op.countSq += op.reqCount * op.reqCount
		op.cpuSq += op.reqCPU * op.reqCPU
		op.reqCount, op.reqCPU = 0, 0
	}
	s.inRequest = s.inRequest[:0]
	clear(s.reqEnds)
}

// addStart records, in the starts of component replica key on host, an
// execution from start to end, when it is an arrival there that can queue
// behind others: not a synchronous call from the same host, which comes
// when its caller's work there stops, and not one that starts after the
// same request's last execution on the replica ended (sequential calls, as
// a loop makes them), which comes when the request's own work there has
// stopped. Both would make the replica's arrivals look burstier than the
// queues they form.
func (s *State) addStart(key, host string, start, end int64) {
	last, seen := s.reqEnds[key]
	if s.reqEnds == nil {
		s.reqEnds = map[string]int64{}
	}
	s.reqEnds[key] = max(last, end)
	if s.callerHost == host || seen && start >= last {
		return
	}
	st := s.starts[key]
	if st == nil {
		st = newStartSample()
		s.starts[key] = st
	}
	st.add(start)
}

// operationCalled is operation for an operation called from an operation
// on host caller ("" for sends), through a client span that started at
// clientStart (0 for none).
func (s *State) operationCalled(n *trace.Node, class string, params map[string]string, cfg *Config, caller string, clientStart int64) {
	prevHost, prevStart := s.callerHost, s.clientStart
	s.callerHost, s.clientStart = caller, clientStart
	s.operation(n, class, params, cfg)
	s.callerHost, s.clientStart = prevHost, prevStart
}

// choicesOf returns the choice sweep of component comp, made on first use.
func (s *State) choicesOf(comp string) *choiceSweep {
	w := s.choices[comp]
	if w == nil {
		w = newChoiceSweep()
		s.choices[comp] = w
	}
	return w
}

// operation folds one execution of an operation, rooted at node n, into the
// state, then the operations it calls.
func (s *State) operation(n *trace.Node, class string, params map[string]string, cfg *Config) {
	id := cfg.opID(n.Span)
	comp, name := splitID(id)
	op := s.ops[id]
	if op == nil {
		op = &opStats{component: comp, name: name, resp: newSample(), self: newSample(), solo: newSample(),
			cpu: newSample(), offCPU: newSample(), preSpan: newSample(), resumeGap: newSample(), variants: map[string]map[string]*variant{},
			params: map[string]map[string]*paramStats{}}
		op.initWithin()
		s.ops[id] = op
	}
	op.count++
	if n.Span.Status == ingest.StatusError {
		op.errors++
	}
	s.Modeled++
	pl := s.placement[comp]
	if pl == nil {
		pl = newPlacement()
		s.placement[comp] = pl
	}
	// The host the execution's windows are kept under: its machine, where
	// the configuration gathers hosts on one (Config.Machines).
	spanHost := WindowHost(n.Span, comp)
	host := cfg.machineOf(spanHost)
	var machine string // the machine the model places the execution on
	switch {
	case host != spanHost:
		machine = host
		s.Windows.addMember(host, spanHost, comp)
	case n.Span.Host != "":
		machine = n.Span.Host
	}
	if machine != "" {
		pl.hosts[machine]++
		pl.hostLife[machine] = pl.hostLife[machine].widen(n.Span.Start, n.Span.End)
	}
	if i := n.Span.Replica(); i != "" {
		pl.instances[i]++
		pl.instLife[i] = pl.instLife[i].widen(n.Span.Start, n.Span.End)
	}
	pl.noteRuntime(n.Span)
	// The replica is what the model makes one: the machine, where the
	// spans name one (instances on it are its processes), else the
	// instance (placeComponents). Before the span goes into the profiles
	// over the system: a second replica's first span must not go into
	// the first's (splitReplicas).
	replica := machine + "\x00"
	if machine == "" {
		replica += n.Span.Replica()
	}
	perReplica := s.noteReplica(comp, replica)
	s.profile(opGroup(id), n.Span.Start, n.Span.End)
	for _, name := range cfg.declaredAround(id) {
		s.profile(resourceGroup(name), n.Span.Start, n.Span.End)
		if pr := cfg.Passive[name].PerReplica; pr != nil && *pr {
			s.profile(resourceCompGroup(name, comp), n.Span.Start, n.Span.End)
			if perReplica {
				s.profile(resourceReplicaGroup(name, comp, replica), n.Span.Start, n.Span.End)
			}
		}
	}
	if perReplica {
		s.profile(opReplicaGroup(id, replica), n.Span.Start, n.Span.End)
	}
	rg := replicaGroup(comp, replica)
	if machine != "" {
		// Before the span goes into the replica's profile, which a
		// second process's first span splits (splitProcess).
		if p := ProcessOf(n.Span); p != "" {
			s.noteCaller(comp, p, n)
			if _, declared := cfg.declaredSlots(comp); declared || oneThread(runtimeOf(n.Span)) {
				s.noteShape(rg, comp, p, n)
			}
			if s.noteProcess(rg, comp, p) {
				s.profile(processGroup(comp, p), n.Span.Start, n.Span.End)
			}
		}
	}
	s.profile(rg, n.Span.Start, n.Span.End)
	s.addStart(rg, host, n.Span.Start, n.Span.End)
	// A balancer in front of the replicas counts the call from its
	// client span's start, where the clocks agree that it came first.
	from := n.Span.Start
	if s.clientStart != 0 && s.clientStart < from {
		from = s.clientStart
	}
	s.choicesOf(comp).add(replica, from, n.Span.End, s.callerHost != host)

	// Collect the elements: calls, sends and external calls, looking
	// through spans internal to this operation.
	var found []found
	var cpu float64
	var hasCPU bool
	if n.Span.HasCPUTime() {
		cpu, hasCPU = n.Span.CPUTime, true
	}
	if op.reqCount == 0 {
		s.inRequest = append(s.inRequest, op)
	}
	op.reqCount++
	op.reqCPU += cpu
	var walk func(parent *trace.Node)
	walk = func(parent *trace.Node) {
		for _, c := range parent.Children {
			switch {
			case c.Async && isOperation(c, parent):
				found = append(found, foundElem(elemSend, c, cfg.opID(c.Span)))
				s.operationCalled(c, class, params, cfg, "", 0)
			case isOperation(c, parent):
				f := foundElem(elemCall, c, cfg.opID(c.Span))
				f.bare = true
				found = append(found, f)
				s.operationCalled(c, class, params, cfg, host, 0)
			case c.Span.Kind == ingest.KindClient || c.Span.Kind == ingest.KindProducer:
				servers := 0
				for _, g := range c.Children {
					if isOperation(g, c) {
						servers++
					}
				}
				if servers == 0 {
					if c.Span.Kind == ingest.KindClient {
						s.Modeled++
						found = append(found, foundElem(elemExternal, c, externalName(c.Span)))
						if c.Span.DBSystem != "" {
							s.dbPeers[peerOf(c.Span)] = c.Span.DBSystem
						}
						if h, id := externalHost(c.Span), externalID(peerOf(c.Span), c.Span.Name); h != "" && id != "" {
							s.Windows.addExternal(h, id, c.Span.End, seconds(c.Duration()), s.weight)
						}
						s.peerCall(c.Span)
					} else {
						// A message sent to no consumer in this trace
						// costs only the producer's own time here; a
						// consumer in a trace of its own may link to it.
						s.links.produce(c.Span.SpanID, id)
						walk(c)
					}
					continue
				}
				s.Modeled++
				for _, g := range c.Children {
					if !isOperation(g, c) {
						continue
					}
					kind := elemCall
					if g.Async || c.Span.Kind == ingest.KindProducer {
						kind = elemSend
					}
					f := foundElem(kind, g, cfg.opID(g.Span))
					caller, clientStart := "", int64(0)
					if kind == elemCall {
						// The caller waits for the whole client span: the
						// network and queueing outside the server count as
						// latency of the call.
						f.start, f.end = c.Span.Start, c.Span.End
						f.latency = math.Max(0, seconds(c.Duration()-g.Duration()))
						f.post = math.Max(0, seconds(c.Span.End-g.Span.End))
						caller, clientStart = host, c.Span.Start
					}
					found = append(found, f)
					s.operationCalled(g, class, params, cfg, caller, clientStart)
					if kind == elemCall {
						s.ops[f.target].preSpan.add(seconds(g.Span.Start - c.Span.Start))
					}
				}
			default:
				// An internal span: its time is the operation's own, its
				// children are the operation's calls.
				s.Modeled++
				if !hasCPU && c.Span.HasCPUTime() {
					cpu += c.Span.CPUTime
				}
				walk(c)
			}
		}
	}
	walk(n)
	// Call sites: the caller's calls to one operation, whose concurrency
	// shows a lock the caller holds around them.
	rep := ""
	if perReplica {
		rep = replica
	}
	inTx := s.foldTransactions(op, id, found, rep)
	s.foldToEnd(op, id, found, rep, n.Span.End)
	for i, f := range found {
		if f.kind == elemExternal && strings.Contains(f.target, ": ") {
			s.externalCall(op, id, f, rep, inTx != nil && inTx[i])
			continue
		}
		if f.kind == elemCall {
			key := siteGroup(id, f.target)
			s.profile(key, f.start, f.end)
			if perReplica {
				s.profile(siteReplicaGroup(id, f.target, replica), f.start, f.end)
			}
			s.siteSample(key).add(seconds(f.end - f.start))
			if f.bare {
				s.siteBare[key]++
			}
		}
	}

	dur := n.Duration()
	op.resp.add(seconds(dur))
	var own []interval
	own, s.callBuf = ownIntervals(s.ownBuf[:0], s.callBuf, n.Span.Start, n.Span.End, found)
	s.ownBuf = own
	var ownNs int64
	for _, iv := range own {
		ownNs += iv.end - iv.start
	}
	self := seconds(ownNs)
	op.self.add(self)
	for _, f := range found {
		if f.post >= 0 {
			op.gapCalls++
		}
	}
	for _, iv := range own {
		if iv.start > n.Span.Start && iv.end-iv.start >= minResume {
			op.resumes++
			op.resumedNs += iv.end - iv.start
			if p := postGap(found, iv.start); p >= 0 {
				op.resumeGap.add(p)
			}
		}
	}
	slots, slotKey := cfg.foldSlots(n.Span, op.component)
	s.soloOn(host).add(op, slotKey, slots, self, own, cfg.soloDepth(), n.Span.TraceID)
	spanCPU := math.NaN()
	if hasCPU || cpu > 0 {
		spanCPU = cpu
	}
	s.Windows.Add(host, id, n.Span.End, self, spanCPU, s.weight)
	if hasCPU || cpu > 0 {
		s.WithCPU++
		op.cpu.add(cpu)
		op.offCPU.add(self - cpu)
	}

	elems := sequence(found)
	sig := signature(elems)
	byClass := op.variants[class]
	if byClass == nil {
		byClass = map[string]*variant{}
		op.variants[class] = byClass
	}
	v := byClass[sig]
	if v == nil {
		v = &variant{elems: shape(elems)}
		byClass[sig] = v
	}
	v.count++
	v.record(elems)
	if len(params) > 0 {
		demand := self
		if hasCPU || cpu > 0 {
			demand = cpu
		}
		op.foldParams(params, demand, sig, elems)
	}
}

// extSiteKey keys State.extSites.
type extSiteKey struct{ op, target, replica string }

// extSite is what a call to a system seen only by its clients adds to,
// and, where it begins a transaction, or an execution's calls to its
// database, what those add to.
type extSite struct {
	times               *sample
	calls, replicaCalls *concurrency
	txTimes, txHeld     *sample
	toEnd, toEndOwn     *sample
}

// extSiteOf returns the call site of operation op (id) to target on
// replica (empty where its component is profiled over the system alone),
// made on first use.
func (s *State) extSiteOf(op *opStats, id, target, replica string) *extSite {
	key := extSiteKey{id, target, replica}
	e := s.extSites[key]
	if e == nil {
		e = &extSite{times: s.siteSample(siteGroup(id, target))}
		s.extSites[key] = e
	}
	if e.calls == nil {
		// A database once any call to it says it is one (db.system).
		if peer, _, _ := strings.Cut(target, ": "); s.dbPeers[peer] != "" {
			e.calls = s.profileOf(dbCallsGroup(op.component, peer))
			if replica != "" {
				e.replicaCalls = s.profileOf(dbCallsReplicaGroup(op.component, peer, replica))
			}
		}
	}
	return e
}

// externalCall records call f, to a system seen only by its clients, of
// an execution of operation op (id), on replica (empty where its
// component is profiled over the system alone): its duration, which
// weighs a pool held around such calls (callHold), and, for a database,
// its span in the profiles of the component's calls to it, whose
// concurrency shows a connection pool (inferPools). A call in a
// transaction (inTx) holds its connection as part of the transaction,
// which foldTransactions records in their place.
func (s *State) externalCall(op *opStats, id string, f found, replica string, inTx bool) {
	e := s.extSiteOf(op, id, f.target, replica)
	if inTx {
		return
	}
	e.times.add(seconds(f.end - f.start))
	e.addCall(f.start, f.end)
}

// addCall adds a connection's use, from start to end, to the profiles of
// the calls to a database.
func (e *extSite) addCall(start, end int64) {
	if e.calls != nil {
		e.calls.add(start, end)
	}
	if e.replicaCalls != nil {
		e.replicaCalls.add(start, end)
	}
}

// siteSample returns the durations of the call site key (siteTimes),
// made on first use.
func (s *State) siteSample(key string) *sample { return sampleAt(s.siteTimes, key) }

// sampleAt returns m's sample at key, made on first use.
func sampleAt(m map[string]*sample, key string) *sample {
	d := m[key]
	if d == nil {
		d = newSample()
		m[key] = d
	}
	return d
}

// isOperation reports whether node c, a child of parent, starts an
// operation of its own: a server or consumer span, a root, or a span of
// another service than its parent's (a hop with no client span).
func isOperation(c, parent *trace.Node) bool {
	switch c.Span.Kind {
	case ingest.KindServer, ingest.KindConsumer:
		return true
	case ingest.KindClient, ingest.KindProducer:
		return false
	}
	return parent != nil && c.Span.Service != parent.Span.Service
}

// found is one element of one execution, before loops are folded.
type found struct {
	kind       elemKind
	target     string
	start, end int64
	latency    float64
	// post is, for a call to a traced server, the time from the server
	// span's end to the client span's (negative for none).
	post float64
	// async elements do not hold the caller.
	async bool
	// bare is set on a call with no client span (see State.siteBare).
	bare bool
}

// postGap is the post of the call to a traced server among found that
// ended at t, the start of a resume; negative where none did.
func postGap(found []found, t int64) float64 {
	for _, f := range found {
		if f.end == t && f.post >= 0 {
			return f.post
		}
	}
	return -1
}

func foundElem(kind elemKind, n *trace.Node, target string) found {
	f := found{kind: kind, target: target, start: n.Span.Start, end: n.Span.End, async: kind == elemSend, post: -1}
	if kind == elemExternal {
		f.latency = seconds(n.Duration())
	}
	return f
}

// occurrence is one element of one execution after folding: what it is and
// how many times it repeated.
type occurrence struct {
	kind    elemKind
	target  string
	times   int
	latency []float64
	lists   [][]occurrence
}

// sequence orders one execution's elements by start time, groups the
// synchronous ones that overlap into parallel elements, and folds
// consecutive repetitions of one element into a count.
func sequence(fs []found) []occurrence {
	sort.SliceStable(fs, func(i, j int) bool {
		if fs[i].start != fs[j].start {
			return fs[i].start < fs[j].start
		}
		return fs[i].target < fs[j].target
	})
	var raw []occurrence
	for i := 0; i < len(fs); {
		f := fs[i]
		if f.async {
			raw = append(raw, occurrence{kind: f.kind, target: f.target, times: 1})
			i++
			continue
		}
		// Gather the synchronous elements overlapping this one.
		group := []found{f}
		end := f.end
		j := i + 1
		for ; j < len(fs); j++ {
			g := fs[j]
			if g.async {
				continue
			}
			if g.start >= end {
				break
			}
			group = append(group, g)
			end = max(end, g.end)
		}
		// Async elements inside the group's span stay in order after it.
		var asyncs []found
		for k := i + 1; k < j; k++ {
			if fs[k].async {
				asyncs = append(asyncs, fs[k])
			}
		}
		if len(group) == 1 {
			raw = append(raw, occurrence{kind: f.kind, target: f.target, times: 1, latency: []float64{f.latency}})
		} else {
			par := occurrence{kind: elemParallel, times: 1}
			for _, g := range group {
				par.lists = append(par.lists, []occurrence{{kind: g.kind, target: g.target, times: 1, latency: []float64{g.latency}}})
			}
			// Lists in a canonical order, so that the same fork reads the
			// same whichever branch started first.
			sort.SliceStable(par.lists, func(a, b int) bool { return par.lists[a][0].target < par.lists[b][0].target })
			raw = append(raw, par)
		}
		for _, a := range asyncs {
			raw = append(raw, occurrence{kind: a.kind, target: a.target, times: 1})
		}
		i = j
	}
	var out []occurrence
	for _, o := range mergeFanOut(raw) {
		out = appendOcc(out, o)
	}
	return out
}

// mergeFanOut joins a run of calls to one operation into one parallel block
// when some of them overlap: a fan-out whose calls did not all start before
// the first ended (a pool that starts them one by one, a slow scheduler) is
// still one fan-out, and reads the same in every execution.
func mergeFanOut(raw []occurrence) []occurrence {
	target := func(o occurrence) (string, bool) {
		switch o.kind {
		case elemCall:
			return o.target, true
		case elemParallel:
			t := ""
			for _, l := range o.lists {
				if len(l) != 1 || l[0].kind != elemCall || (t != "" && l[0].target != t) {
					return "", false
				}
				t = l[0].target
			}
			return t, t != ""
		}
		return "", false
	}
	var out []occurrence
	for i := 0; i < len(raw); {
		t, ok := target(raw[i])
		j := i + 1
		parallel := raw[i].kind == elemParallel
		for ok && j < len(raw) {
			u, same := target(raw[j])
			if !same || u != t {
				break
			}
			parallel = parallel || raw[j].kind == elemParallel
			j++
		}
		if !ok || j == i+1 || !parallel {
			out = append(out, raw[i:j]...)
			i = j
			continue
		}
		par := occurrence{kind: elemParallel, times: 1}
		for _, o := range raw[i:j] {
			if o.kind == elemParallel {
				par.lists = append(par.lists, o.lists...)
			} else {
				par.lists = append(par.lists, []occurrence{o})
			}
		}
		out = append(out, par)
		i = j
	}
	return out
}

// appendOcc appends o, folding it into the last occurrence when it repeats
// it.
func appendOcc(out []occurrence, o occurrence) []occurrence {
	if n := len(out); n > 0 && out[n-1].kind != elemParallel && o.kind != elemParallel &&
		out[n-1].kind == o.kind && out[n-1].target == o.target {
		out[n-1].times++
		out[n-1].latency = append(out[n-1].latency, o.latency...)
		return out
	}
	return append(out, o)
}

// signature is a text key for the shape of a sequence: its elements
// without repetition counts.
func signature(occ []occurrence) string {
	var b strings.Builder
	writeSig(&b, occ)
	return b.String()
}

func writeSig(b *strings.Builder, occ []occurrence) {
	for i, o := range occ {
		if i > 0 {
			b.WriteByte(';')
		}
		switch o.kind {
		case elemParallel:
			b.WriteString("P[")
			for j, l := range o.lists {
				if j > 0 {
					b.WriteByte('|')
				}
				writeSig(b, l)
			}
			b.WriteByte(']')
		default:
			b.WriteString(strconv.Itoa(int(o.kind)))
			b.WriteByte(':')
			b.WriteString(o.target)
		}
	}
}

// shape makes the aggregate elements for a new variant.
func shape(occ []occurrence) []*elem {
	out := make([]*elem, len(occ))
	for i, o := range occ {
		e := &elem{kind: o.kind, target: o.target, times: map[int]int64{}, latency: newSample()}
		for _, l := range o.lists {
			e.lists = append(e.lists, shape(l))
		}
		out[i] = e
	}
	return out
}

// record adds one execution's occurrences to the variant's elements.
func (v *variant) record(occ []occurrence) {
	recordElems(v.elems, occ)
}

func recordElems(elems []*elem, occ []occurrence) {
	for i, o := range occ {
		e := elems[i]
		e.times[o.times]++
		for _, l := range o.latency {
			e.latency.add(l)
		}
		for j, l := range o.lists {
			recordElems(e.lists[j], l)
		}
	}
}

// externalName describes a call to an uninstrumented system.
func externalName(sp *ingest.Span) string {
	peer := peerOf(sp)
	if peer == "" {
		return sp.Name
	}
	return peer + ": " + sp.Name
}

func splitID(id string) (component, operation string) {
	i := strings.IndexByte(id, '/')
	if i < 0 {
		return id, ""
	}
	return id[:i], id[i+1:]
}

// foldIDs makes one operation of requests that differ only in the
// identifiers in their path: it drops a query string or fragment, and
// replaces by `{id}` the path segments that are identifiers (see isID),
// so that `/item/42` and `/item/43?ref=mail` are one operation.
func foldIDs(name string) string {
	slash := strings.IndexByte(name, '/')
	if slash < 0 {
		return name
	}
	// A URL path ("GET /item/42", "/item/42"), not an RPC name such as
	// "shop.Catalog/GetItem", whose parts are never tokens or queries.
	path := slash == 0 || name[slash-1] == ' '
	if q := strings.IndexAny(name[slash:], "?#"); q >= 0 && path {
		name = name[:slash+q]
	}
	// Segments are scanned in place; a name is built only when one of
	// them is an identifier (this runs for every span).
	var b *strings.Builder
	rest, done := name[slash+1:], slash+1
	for start := slash + 1; ; {
		end := strings.IndexByte(rest, '/')
		seg := rest
		if end >= 0 {
			seg = rest[:end]
		}
		if isID(seg, path) {
			if b == nil {
				b = &strings.Builder{}
				b.Grow(len(name))
			}
			b.WriteString(name[done:start])
			b.WriteString("{id}")
			done = start + len(seg)
		}
		if end < 0 {
			break
		}
		rest, start = rest[end+1:], start+end+1
	}
	if b == nil {
		return name
	}
	b.WriteString(name[done:])
	return name[:slash+1] + b.String()
}

// isID reports whether a segment is an identifier rather than a name: a
// number, a UUID, 16 or more hex digits, or, in a URL path, an e-mail
// address or a token of 8 or more letters, digits and -_.~: with at least
// 3 digits among them (a date, a ULID, a database key such as
// order_12345); not "v2", "oauth2" or "index.html".
func isID(seg string, path bool) bool {
	if seg == "" {
		return false
	}
	digits, hex, other := 0, 0, 0
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F':
			hex++
		case c >= 'g' && c <= 'z' || c >= 'G' && c <= 'Z' || c == '-' || c == '_' || c == '.' || c == '~' || c == ':':
		case c == '@':
			return path && len(seg) > 2
		default:
			other++
		}
	}
	switch {
	case other > 0:
		return false
	case digits == len(seg):
		return true
	case digits+hex == len(seg) && len(seg) >= 16:
		return true
	case uuidRE.MatchString(seg):
		return true
	}
	return path && len(seg) >= 8 && digits >= 3
}

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// opID is the reference of an aggregated operation.
func (s *State) opID(op *opStats) string { return op.component + "/" + op.name }

// cpuVariances returns, per operation whose spans carried CPU times, the
// variance of its CPU time per execution as the windows count executions:
// one of a trace kept with probability p counts 1/p times and adds 1/p²
// times the variance, so per execution counted the variance is over p
// (over Kept, the mean fraction kept).
func (s *State) cpuVariances() map[string]float64 {
	out := map[string]float64{}
	kept := s.Kept()
	for id, op := range s.ops {
		if op.cpu.n > 0 {
			out[id] = op.cpu.variance() / kept
		}
	}
	return out
}
