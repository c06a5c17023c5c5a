package extract

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"math/bits"
	"slices"

	"github.com/perfcast/perfcast/ingest"
	"github.com/perfcast/perfcast/trace"
)

// shapeBuckets is the number of classes of the time from a client span's
// start to its server span's that the shape sweep counts its probes in:
// class b holds the times of [2^(b−1), 2^b) microseconds (0: under one).
const shapeBuckets = 32

// shapeBucket is the class of a time of ns nanoseconds from a client
// span's start to its server span's.
func shapeBucket(ns int64) int {
	return min(bits.Len64(uint64(ns/1000)), shapeBuckets-1)
}

// shapeBucketLow is the least time, in seconds, of class b.
func shapeBucketLow(b int) float64 {
	if b == 0 {
		return 0
	}
	return math.Ldexp(1e-6, b-1)
}

// shapeSweep measures, on one replica of a component whose spans name
// their processes (ProcessOf), whether the processes serve one queue or
// a queue each. A request that waited before its server span began (the
// time from its client span's start to its server span's, beyond the
// network) waited for its process. Where the processes take requests
// from one queue (workers taking connections from one listening socket
// as they come free), no request waits while another process of the
// replica serves nothing; where each has a queue of its own (a balancer
// handing connections in turn, a caller's keep-alive connection to one
// process), a waiting request finds the others idle as often as they
// are idle at all while its own is busy.
//
// The sweep probes each called execution half way through the time
// before its span (its client span's start to its own, both on the
// caller's and the callee's clocks), counts per class of that time
// (shapeBucket) the probes that met another live process (one between
// its first span's start and its last span's end) and those of them at
// which one had no span in progress, and times how long processes were
// busy beside another live one, and the part of it while another live
// one was idle (busyOtherIdle over busy): what a probe would find were
// the processes independent queues. Probes and times with no other
// process live (a replica of one process) say nothing either way and
// are not counted. Which classes are waits, not the
// network, the network's own time says: a call whose process had no span
// in progress from its client span's start to its own span's start
// waited for nothing, whatever the queues, and its time before the span
// is the network's (network, per class). The sweep runs as
// concurrency's does, over the spans of concurrencyLag.
type shapeSweep struct {
	comp    string
	pending []shapeItem
	active  minHeap[shapeEnd]
	procs   []shapeProc
	index   map[string]int32
	// busy counts the processes with a span in progress at the cursor,
	// live those live there (shapeProc.live).
	busy, live        int
	cursor, latest    int64
	nextSweep         int
	probes, otherIdle [shapeBuckets]int64
	// network counts, per class, the calls whose process was idle from
	// their client span's start to their own span's.
	network [shapeBuckets]int64
	// busyNs sums, over the processes, the time each had a span in
	// progress while another was live; busyOtherIdleNs the part of it
	// during which another live process had none.
	busyNs, busyOtherIdleNs int64
}

// shapeItem is a span of process proc in progress from t to end, or a
// call to it probed at t, or a call to it whose client span began at end
// checked at t (just before its span began), the call of class class.
type shapeItem struct {
	t, end int64
	proc   int32
	kind   shapeKind
	class  int8
}

// shapeKind tells shapeItems apart, in the order the sweep takes those
// of one time.
type shapeKind int8

const (
	shapeSpan shapeKind = iota
	shapeProbe
	shapeCheck
)

// shapeProc is one process of the replica: its name, the latest end of
// its spans seen, its spans in progress at the cursor, and when it last
// had none left (math.MinInt64: never busy).
// It is live at the cursor from its first span's start to its last
// span's end, as far as the spans seen tell: it dies as its last span
// seen ends and lives again where a later span comes, so that the
// sweep's cost does not grow with the processes that came and went
// (workers recycled after so many requests). Spans more than
// concurrencyLag later are not seen yet as the sweep passes: a process
// that served nothing for that long counts as gone until it serves
// again.
type shapeProc struct {
	name       string
	last       int64
	inProgress int32
	idleSince  int64
	live       bool
}

// shapeEnd is the end of a span in progress, in process proc.
type shapeEnd struct {
	end  int64
	proc int32
}

func (e shapeEnd) before(o shapeEnd) bool { return e.end < o.end }

// newShapeSweep returns the empty sweep of a replica of component comp.
func newShapeSweep(comp string) *shapeSweep {
	return &shapeSweep{comp: comp, index: map[string]int32{}, cursor: math.MinInt64, nextSweep: sweepBatch}
}

// proc returns the index of process name, noting a span of it that ends
// at end.
func (w *shapeSweep) proc(name string, end int64) int32 {
	i, ok := w.index[name]
	if !ok {
		i = int32(len(w.procs))
		w.index[name] = i
		w.procs = append(w.procs, shapeProc{name: name, last: end, idleSince: math.MinInt64})
		return i
	}
	p := &w.procs[i]
	p.last = max(p.last, end)
	return i
}

// add notes a span of process name from start to end and, where it was
// called through a client span that began at called (called ≤ start),
// its probe half way from called to start and its check just before
// start of whether the process was idle all along.
func (w *shapeSweep) add(name string, start, end, called int64, hasCall bool) {
	if end < start {
		return
	}
	i := w.proc(name, end)
	w.push(shapeItem{t: start, end: end, proc: i, kind: shapeSpan})
	if gap := start - called; hasCall && called <= start && gap >= 0 { // gap < 0: overflowed
		class := int8(shapeBucket(gap))
		w.push(shapeItem{t: start - gap/2, proc: i, kind: shapeProbe, class: class})
		w.push(shapeItem{t: start - 1, end: called, proc: i, kind: shapeCheck, class: class})
	}
}

// push adds an item, sweeping once enough are pending.
func (w *shapeSweep) push(it shapeItem) {
	w.pending = append(w.pending, it)
	w.latest = max(w.latest, it.t)
	if len(w.pending) >= w.nextSweep {
		w.sweep(w.latest - concurrencyLag)
		w.nextSweep = nextSweepAt(len(w.pending))
	}
}

// sweep accounts for the pending items at or before upTo, in time order:
// at one time, spans end before others begin, then probes, then checks.
// A check comes a nanosecond before its span: a span of the process
// ending as it begins (a worker handing itself on) kept it busy.
func (w *shapeSweep) sweep(upTo int64) {
	slices.SortFunc(w.pending, func(a, b shapeItem) int {
		switch {
		case a.t != b.t:
			return cmp.Compare(a.t, b.t)
		case a.kind != b.kind:
			return int(a.kind) - int(b.kind)
		case a.proc != b.proc:
			return int(a.proc) - int(b.proc)
		}
		return cmp.Compare(a.end, b.end)
	})
	n := 0
	for _, it := range w.pending {
		if it.t > upTo {
			break
		}
		n++
		t := max(it.t, w.cursor)
		w.advance(t)
		own := &w.procs[it.proc]
		switch it.kind {
		case shapeSpan:
			if !own.live {
				own.live = true
				w.live++
			}
			if own.inProgress == 0 {
				w.busy++
			}
			own.inProgress++
			w.active.push(shapeEnd{it.end, it.proc})
			continue
		case shapeCheck:
			if own.inProgress == 0 && own.idleSince <= it.end {
				w.network[it.class]++
			}
			continue
		}
		others := w.live
		if own.live {
			others--
		}
		if others == 0 {
			continue // no other process to find idle: no evidence either way
		}
		b := int(it.class)
		w.probes[b]++
		idle := w.live - w.busy
		if own.inProgress == 0 && own.live {
			idle-- // its own process, idle: not another
		}
		if idle > 0 {
			w.otherIdle[b]++
		}
	}
	w.pending = append(w.pending[:0], w.pending[n:]...)
}

// advance moves the cursor to t, ending the spans that end by then and
// timing the processes' busy and idle stretches on the way.
func (w *shapeSweep) advance(t int64) {
	for len(w.active) > 0 && w.active[0].end <= t {
		e := w.active.pop()
		w.hold(e.end)
		if p := &w.procs[e.proc]; p.inProgress > 0 {
			p.inProgress--
			if p.inProgress == 0 {
				w.busy--
				p.idleSince = e.end
				if p.live && p.last <= e.end {
					p.live = false
					w.live--
				}
			}
		}
	}
	w.hold(t)
}

// hold times the stretch from the cursor to t, at the processes' present
// state (where another process is live beside the busy ones), and moves
// the cursor there.
func (w *shapeSweep) hold(t int64) {
	if t <= w.cursor {
		return
	}
	if w.cursor != math.MinInt64 && w.busy > 0 && w.live > 1 {
		d := t - w.cursor
		w.busyNs += int64(w.busy) * d
		if w.live > w.busy {
			w.busyOtherIdleNs += int64(w.busy) * d
		}
	}
	w.cursor = t
}

// finish sweeps everything.
func (w *shapeSweep) finish() {
	w.sweep(math.MaxInt64)
	w.advance(math.MaxInt64)
}

// clone returns a copy of the sweep that folds on independently of w.
func (w *shapeSweep) clone() *shapeSweep {
	cp := *w
	cp.pending = slices.Clone(w.pending)
	cp.active = slices.Clone(w.active)
	cp.procs = slices.Clone(w.procs)
	cp.index = maps.Clone(w.index)
	return &cp
}

// finished returns a copy of the sweep with everything swept.
func (w *shapeSweep) finished() *shapeSweep {
	cp := w.clone()
	cp.finish()
	return cp
}

// merge adds the counts of a sweep of spans disjoint from w's, on the
// same replica: exact where the two did not run at the same time (a
// split by time); where they did, each saw only its own spans and
// processes. o's processes do not join w's sweep, whose spans may still
// be pending.
func (w *shapeSweep) merge(o *shapeSweep) {
	w.addCounts(o.finished())
}

// addCounts adds the counts of o, swept, to w's.
func (w *shapeSweep) addCounts(o *shapeSweep) {
	for b := range shapeBuckets {
		w.probes[b] += o.probes[b]
		w.otherIdle[b] += o.otherIdle[b]
		w.network[b] += o.network[b]
	}
	w.busyNs += o.busyNs
	w.busyOtherIdleNs += o.busyOtherIdleNs
}

// noteShape puts the execution of component comp in process p of its
// replica rg, rooted at node n, into the replica's shapeSweep, with its
// probe where a client span called it.
func (s *State) noteShape(rg, comp, p string, n *trace.Node) {
	w := s.shapes[rg]
	if w == nil {
		w = newShapeSweep(comp)
		s.shapes[rg] = w
	}
	var called int64
	hasCall := n.Parent != nil && !n.Async && n.Parent.Span.Kind == ingest.KindClient
	if hasCall {
		called = n.Parent.Span.Start
	}
	w.add(p, n.Span.Start, n.Span.End, called, hasCall)
}

// savedShape is a shapeSweep as saved: its processes, its pending items
// and spans in progress, its cursor and counts.
type savedShape struct {
	Comp  string           `json:"comp"`
	Procs []savedShapeProc `json:"procs"`
	// Pending holds t, end, process, kind and class of each pending
	// item; Active the end and process of each span in progress, in heap
	// order.
	Pending         [][5]int64 `json:"pending,omitempty"`
	Active          [][2]int64 `json:"active,omitempty"`
	Cursor          int64      `json:"cursor"`
	Latest          int64      `json:"latest"`
	NextSweep       int        `json:"next_sweep"`
	Probes          []int64    `json:"probes"`
	OtherIdle       []int64    `json:"other_idle"`
	Network         []int64    `json:"network"`
	BusyNs          int64      `json:"busy_ns"`
	BusyOtherIdleNs int64      `json:"busy_other_idle_ns"`
}

type savedShapeProc struct {
	Name      string `json:"name"`
	Last      int64  `json:"last"`
	IdleSince int64  `json:"idle_since"`
	Live      bool   `json:"live,omitempty"`
}

func saveShape(w *shapeSweep) *savedShape {
	v := &savedShape{Comp: w.comp, Cursor: w.cursor, Latest: w.latest, NextSweep: w.nextSweep,
		Probes: slices.Clone(w.probes[:]), OtherIdle: slices.Clone(w.otherIdle[:]), Network: slices.Clone(w.network[:]),
		BusyNs: w.busyNs, BusyOtherIdleNs: w.busyOtherIdleNs}
	for _, p := range w.procs {
		v.Procs = append(v.Procs, savedShapeProc{p.name, p.last, p.idleSince, p.live})
	}
	for _, it := range w.pending {
		v.Pending = append(v.Pending, [5]int64{it.t, it.end, int64(it.proc), int64(it.kind), int64(it.class)})
	}
	for _, e := range w.active {
		v.Active = append(v.Active, [2]int64{e.end, int64(e.proc)})
	}
	return v
}

// restore checks a saved sweep and rebuilds it: the processes' spans in
// progress are counted again from the active ends.
func (v *savedShape) restore() (*shapeSweep, error) {
	if v == nil {
		return nil, fmt.Errorf("no sweep")
	}
	if len(v.Probes) != shapeBuckets || len(v.OtherIdle) != shapeBuckets || len(v.Network) != shapeBuckets {
		return nil, fmt.Errorf("%d, %d and %d classes of calls, want %d", len(v.Probes), len(v.OtherIdle), len(v.Network), shapeBuckets)
	}
	if v.BusyNs < 0 || v.BusyOtherIdleNs < 0 || v.BusyOtherIdleNs > v.BusyNs {
		return nil, fmt.Errorf("busy %d ns, %d of them beside an idle process", v.BusyNs, v.BusyOtherIdleNs)
	}
	w := newShapeSweep(v.Comp)
	w.cursor, w.latest = v.Cursor, v.Latest
	w.busyNs, w.busyOtherIdleNs = v.BusyNs, v.BusyOtherIdleNs
	for b := range shapeBuckets {
		if v.Probes[b] < 0 || v.OtherIdle[b] < 0 || v.OtherIdle[b] > v.Probes[b] || v.Network[b] < 0 {
			return nil, fmt.Errorf("class %d: %d probes, %d beside an idle process, %d the network's", b, v.Probes[b], v.OtherIdle[b], v.Network[b])
		}
		w.probes[b], w.otherIdle[b], w.network[b] = v.Probes[b], v.OtherIdle[b], v.Network[b]
	}
	for _, p := range v.Procs {
		if _, dup := w.index[p.Name]; dup || p.Name == "" {
			return nil, fmt.Errorf("process %q: repeated or unnamed", p.Name)
		}
		q := &w.procs[w.proc(p.Name, p.Last)]
		q.idleSince, q.live = p.IdleSince, p.Live
		if p.Live {
			w.live++
		}
	}
	known := func(i int64) bool { return i >= 0 && i < int64(len(w.procs)) }
	for _, it := range v.Pending {
		kind := shapeKind(it[3])
		if !known(it[2]) || kind < shapeSpan || kind > shapeCheck || it[4] < 0 || it[4] >= shapeBuckets || kind == shapeSpan && it[1] < it[0] {
			return nil, fmt.Errorf("pending item %v: no such process, kind or class, or a span ending before it begins", it)
		}
		w.pending = append(w.pending, shapeItem{t: it[0], end: it[1], proc: int32(it[2]), kind: kind, class: int8(it[4])})
	}
	for _, e := range v.Active {
		if !known(e[1]) {
			return nil, fmt.Errorf("span in progress in process %d: no such process", e[1])
		}
		p := &w.procs[e[1]]
		if p.inProgress == 0 {
			w.busy++
		}
		p.inProgress++
		w.active.push(shapeEnd{e[0], int32(e[1])})
	}
	for _, p := range w.procs {
		if p.inProgress > 0 && !p.live {
			return nil, fmt.Errorf("process %q: a span in progress but not live", p.name)
		}
	}
	w.nextSweep = max(v.NextSweep, sweepBatch)
	return w, nil
}

// Thresholds of the queues' measured shape (slotShape).
const (
	// shapeMinWait is the least time before a span, in seconds, that
	// counts as a wait: below it the kernel's wake-up and the runtime's
	// dispatch of a request take the time, not a queue.
	shapeMinWait = 100e-6
	// shapeNetworkQuantile is the quantile of the network's time (the
	// time before the span of calls whose process was idle all along)
	// twice which a call's time before its span must be for its probe,
	// half way through, to fall in its wait rather than the network.
	shapeNetworkQuantile = 0.99
	// shapeMinNetwork is the fewest calls whose process was idle all
	// along for their times to give the network's quantile.
	shapeMinNetwork = 100
	// shapeMinExpected is the least number of probes that would have
	// found another process idle were the processes independent queues:
	// with one queue they find none, and a count with this mean is zero
	// with a probability of e^−20.
	shapeMinExpected = 20
	// shapeEach and shapeOne bound the share of that expected number
	// found: at shapeEach or more the processes are a queue each; at
	// shapeOne or less, one queue; between, the traces do not say.
	// A balancer's turns make the processes' loads move together, so that
	// a queue each finds the others idle less often than independent
	// queues would.
	shapeEach = 1.0 / 3
	shapeOne  = 0.1
)

// shapeMeasure is what a component's sweeps measured of its processes'
// queues, over the probes of its calls that waited (slotShape).
type shapeMeasure struct {
	// probes is the number of calls that waited, otherIdle those of them
	// that found another process of their replica idle half way through.
	probes, otherIdle int64
	// idleShare is the share of the time the processes were busy during
	// which another was idle: what a probe finds where they are
	// independent queues.
	idleShare float64
	// from is the least wait counted, in seconds.
	from float64
	// network is the number of calls whose process was idle all along,
	// networkHigh the upper end of the class of their times' quantile
	// shapeNetworkQuantile, in seconds.
	network     int64
	networkHigh float64
}

// expected is the number of probes that would have found another
// process idle were the processes independent queues.
func (m shapeMeasure) expected() float64 { return float64(m.probes) * m.idleShare }

// slotShape measures whether component comp's processes serve one queue
// or a queue each (shapeSweep): each reports the processes are a queue
// each, ok that the traces say either. The waits counted are the times
// before the component's spans of at least twice the network's
// shapeNetworkQuantile (the upper end of its class) and shapeMinWait.
func (g *generator) slotShape(comp string) (m shapeMeasure, each, ok bool) {
	var all shapeSweep // the counts of comp's sweeps
	for _, w := range g.s.shapes {
		if w.comp == comp {
			all.addCounts(w.finished())
		}
	}
	for _, n := range all.network {
		m.network += n
	}
	if m.network < shapeMinNetwork || all.busyNs == 0 {
		return m, false, false
	}
	var below int64
	for b, n := range all.network {
		if below += n; float64(below) >= shapeNetworkQuantile*float64(m.network) {
			m.networkHigh = shapeBucketLow(b + 1)
			break
		}
	}
	m.from = math.Max(shapeMinWait, 2*m.networkHigh)
	for b := range shapeBuckets {
		if shapeBucketLow(b) >= m.from {
			m.probes += all.probes[b]
			m.otherIdle += all.otherIdle[b]
		}
	}
	m.idleShare = float64(all.busyOtherIdleNs) / float64(all.busyNs)
	e := m.expected()
	if e < shapeMinExpected {
		return m, false, false
	}
	r := float64(m.otherIdle) / e
	switch {
	case r >= shapeEach:
		return m, true, true
	case r <= shapeOne:
		return m, false, true
	}
	return m, false, false
}
