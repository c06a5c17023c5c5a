package trace

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/perfcast/perfcast/ingest"
)

// Defaults for Options.
const (
	DefaultIdleSpans     = 100_000
	DefaultMaxOpenTraces = 50_000
)

// Options configure an Assembler. The zero value uses the defaults.
type Options struct {
	// IdleSpans is when a trace is complete: after this many spans of the
	// input have arrived since its last span. Counting spans rather than
	// wall-clock time makes assembly depend only on the input order.
	// Zero means DefaultIdleSpans.
	IdleSpans int
	// MaxOpenTraces bounds memory: when more traces are open, the one idle
	// longest is delivered early (Tree.Evicted, Stats.Evicted). Zero means
	// DefaultMaxOpenTraces.
	MaxOpenTraces int
	// DropOrphans drops spans whose parent is missing, with everything
	// below them, instead of making them roots of partial trees.
	DropOrphans bool
	// NoSkewCorrection leaves span times as read.
	NoSkewCorrection bool
}

// Source yields spans; *ingest.Reader is one. Next returns io.EOF at the end.
type Source interface {
	Next(ctx context.Context) (*ingest.Span, error)
}

// Assembler groups spans into trees as they arrive. It is not safe for
// concurrent use.
type Assembler struct {
	opts Options
	emit func(*Tree) error

	open       map[ingest.TraceID]*openTrace
	head, tail *openTrace // open traces by last arrival, oldest first
	seq        int64      // spans received

	// recently delivered trace ids, to recognize late spans
	done     map[ingest.TraceID]struct{}
	doneRing []ingest.TraceID
	donePos  int

	index  map[ingest.SpanID]int32 // scratch for building a tree
	stats  Stats
	ops    map[opKey]int64
	svcs   map[string]struct{}
	closed bool
}

type openTrace struct {
	id         ingest.TraceID
	spans      []*ingest.Span
	last       int64 // seq of the last span
	late       bool  // seen after the trace was delivered once
	prev, next *openTrace
}

type opKey struct{ service, name string }

// New returns an Assembler that hands each complete tree to emit, in a
// deterministic order: as traces complete while spans arrive, and at Close in
// order of their first span's start. An error from emit stops assembly and is returned by
// Add or Close.
func New(opts Options, emit func(*Tree) error) *Assembler {
	if opts.IdleSpans <= 0 {
		opts.IdleSpans = DefaultIdleSpans
	}
	if opts.MaxOpenTraces <= 0 {
		opts.MaxOpenTraces = DefaultMaxOpenTraces
	}
	ring := min(2*opts.MaxOpenTraces, 1<<20)
	return &Assembler{
		opts:     opts,
		emit:     emit,
		open:     make(map[ingest.TraceID]*openTrace),
		done:     make(map[ingest.TraceID]struct{}, ring),
		doneRing: make([]ingest.TraceID, ring),
		index:    make(map[ingest.SpanID]int32),
		ops:      make(map[opKey]int64),
		svcs:     make(map[string]struct{}),
	}
}

// Add takes ownership of a span; it may complete and deliver traces.
func (a *Assembler) Add(s *ingest.Span) error {
	if a.closed {
		return fmt.Errorf("trace: Add after Close")
	}
	a.seq++
	t := a.open[s.TraceID]
	if t == nil {
		t = &openTrace{id: s.TraceID}
		if _, late := a.done[s.TraceID]; late {
			t.late = true
		}
		a.open[s.TraceID] = t
		a.pushBack(t)
		if n := len(a.open); n > a.stats.MaxOpen {
			a.stats.MaxOpen = n
		}
	} else if t != a.tail {
		a.unlink(t)
		a.pushBack(t)
	}
	t.spans = append(t.spans, s)
	t.last = a.seq
	if t.late {
		a.stats.Damage.Addf(ingest.DamageSplitTrace, "trace %s: span %s arrived after the trace was complete (raise the idle limit)", s.TraceID, s.SpanID)
	}
	for a.head != nil && a.seq-a.head.last >= int64(a.opts.IdleSpans) {
		if err := a.complete(a.head, false); err != nil {
			return err
		}
	}
	for len(a.open) > a.opts.MaxOpenTraces {
		a.stats.Evicted++
		if err := a.complete(a.head, true); err != nil {
			return err
		}
	}
	return nil
}

// Close delivers every open trace, in order of their first span's start
// (then of trace id): what folds the trees, a concurrency profile say,
// sees them in time order, as it does traces that complete while spans
// arrive. A file smaller than the idle limit completes every trace here.
func (a *Assembler) Close() error {
	if a.closed {
		return nil
	}
	a.closed = true
	type pending struct {
		t     *openTrace
		start int64
	}
	rest := make([]pending, 0, len(a.open))
	for t := a.head; t != nil; t = t.next {
		start := int64(math.MaxInt64)
		for _, s := range t.spans {
			start = min(start, s.Start)
		}
		rest = append(rest, pending{t, start})
	}
	slices.SortFunc(rest, func(x, y pending) int {
		if c := cmp.Compare(x.start, y.start); c != 0 {
			return c
		}
		return x.t.id.Compare(y.t.id)
	})
	for _, p := range rest {
		if err := a.complete(p.t, false); err != nil {
			return err
		}
	}
	return nil
}

// Received is the number of spans added so far. A receiver that notes it
// now and again can complete traces by the time they have been quiet (see
// CompleteIdle), where files complete them by the spans that follow.
func (a *Assembler) Received() int64 { return a.seq }

// CompleteIdle delivers the open traces that have received no span since
// the first received spans: those idle since Received returned received.
func (a *Assembler) CompleteIdle(received int64) error {
	if a.closed {
		return fmt.Errorf("trace: CompleteIdle after Close")
	}
	for a.head != nil && a.head.last <= received {
		if err := a.complete(a.head, false); err != nil {
			return err
		}
	}
	return nil
}

// OpenTraces is the number of traces waiting to complete.
func (a *Assembler) OpenTraces() int { return len(a.open) }

func (a *Assembler) pushBack(t *openTrace) {
	t.prev, t.next = a.tail, nil
	if a.tail != nil {
		a.tail.next = t
	} else {
		a.head = t
	}
	a.tail = t
}

func (a *Assembler) unlink(t *openTrace) {
	if t.prev != nil {
		t.prev.next = t.next
	} else {
		a.head = t.next
	}
	if t.next != nil {
		t.next.prev = t.prev
	} else {
		a.tail = t.prev
	}
	t.prev, t.next = nil, nil
}

// complete removes t from the open set, builds its tree and delivers it.
func (a *Assembler) complete(t *openTrace, evicted bool) error {
	a.unlink(t)
	delete(a.open, t.id)
	a.remember(t.id)
	tree := a.build(t.id, t.spans)
	t.spans = nil
	if tree == nil {
		return nil
	}
	tree.Evicted = evicted
	a.count(tree)
	return a.emit(tree)
}

// remember keeps the id of a delivered trace for a while.
func (a *Assembler) remember(id ingest.TraceID) {
	if _, ok := a.done[id]; ok {
		return
	}
	old := a.doneRing[a.donePos]
	if !old.IsZero() {
		delete(a.done, old)
	}
	a.doneRing[a.donePos] = id
	a.donePos = (a.donePos + 1) % len(a.doneRing)
	a.done[id] = struct{}{}
}

func (a *Assembler) count(t *Tree) {
	a.stats.Traces++
	a.stats.Spans += int64(t.Spans)
	if t.Partial {
		a.stats.PartialTraces++
	}
	a.stats.ExternalLinks += int64(t.ExternalLinks)
	t.Walk(func(n *Node, _ int) bool {
		a.ops[opKey{n.Span.Service, n.Span.Name}]++
		if _, ok := a.svcs[n.Span.Service]; !ok {
			a.svcs[n.Span.Service] = struct{}{}
		}
		if n.Async {
			a.stats.AsyncEdges++
		}
		if n.Shift != 0 {
			a.stats.SkewAdjusted++
		}
		return true
	})
}

// Stats returns counts of what was assembled so far.
func (a *Assembler) Stats() Stats {
	st := a.stats
	st.Damage = ingest.Damage{}
	st.Damage.Merge(a.stats.Damage)
	st.Services = len(a.svcs)
	st.Operations = make([]OpCount, 0, len(a.ops))
	for k, n := range a.ops {
		st.Operations = append(st.Operations, OpCount{Service: k.service, Name: k.name, Count: n})
	}
	slices.SortFunc(st.Operations, func(x, y OpCount) int {
		if c := cmp.Compare(y.Count, x.Count); c != 0 {
			return c
		}
		if c := cmp.Compare(x.Service, y.Service); c != 0 {
			return c
		}
		return cmp.Compare(x.Name, y.Name)
	})
	return st
}

// Run reads every span of src into a new Assembler and delivers the trees to
// emit; it returns the assembly statistics. It stops at the first error of
// src or emit, or when ctx is done.
func Run(ctx context.Context, src Source, opts Options, emit func(*Tree) error) (Stats, error) {
	a := New(opts, emit)
	for {
		s, err := src.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return a.Stats(), err
		}
		if err := a.Add(s); err != nil {
			return a.Stats(), err
		}
	}
	if err := ctx.Err(); err != nil {
		return a.Stats(), err
	}
	err := a.Close()
	return a.Stats(), err
}

// Stats counts what an Assembler delivered and what it found broken.
type Stats struct {
	Traces        int64 `json:"traces"`
	Spans         int64 `json:"spans"`
	PartialTraces int64 `json:"partial_traces"`
	// Evicted counts traces delivered early because MaxOpenTraces were open.
	Evicted int64 `json:"evicted"`
	// MaxOpen is the largest number of traces open at once.
	MaxOpen int `json:"max_open"`
	// DroppedSpans counts spans left out of trees: duplicates, cycles, and
	// orphans with their descendants when Options.DropOrphans is set.
	DroppedSpans  int64 `json:"dropped_spans"`
	SkewAdjusted  int64 `json:"skew_adjusted"`
	AsyncEdges    int64 `json:"async_edges"`
	ExternalLinks int64 `json:"external_links"`
	Services      int   `json:"services"`
	// Operations are (service, span name) pairs with their span counts, most
	// frequent first.
	Operations []OpCount     `json:"operations"`
	Damage     ingest.Damage `json:"damage"`
}

// OpCount is the number of spans of one operation.
type OpCount struct {
	Service string `json:"service"`
	Name    string `json:"name"`
	Count   int64  `json:"count"`
}
