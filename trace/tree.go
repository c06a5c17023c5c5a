// Package trace assembles normalized spans into call trees, streaming: spans
// are grouped by trace id, a trace is complete when it has been idle for a
// number of spans or at the end of the input, and each complete trace is
// delivered as a [Tree] whose clock skew between hosts is corrected.
package trace

import (
	"slices"

	"github.com/perfcast/perfcast/ingest"
)

// Node is one span in a call tree.
type Node struct {
	Span     *ingest.Span
	Parent   *Node   // nil for a root
	Children []*Node // sorted by start time, then span id

	// Async is set when the parent does not wait for this span: a CONSUMER
	// span under a non-consumer parent (typically a PRODUCER), or a span
	// whose parent reference is a Jaeger FOLLOWS_FROM.
	Async bool
	// Orphan is set on a root whose parent id names a span missing from the
	// trace: the tree below it is partial.
	Orphan bool
	// Shift is the clock-skew correction added to Span.Start and Span.End,
	// in nanoseconds.
	Shift int64
	// Links are the spans of the same trace that this span links to.
	Links []*Node
}

// Duration is the span's duration in nanoseconds.
func (n *Node) Duration() int64 { return n.Span.End - n.Span.Start }

// SelfTime is the part of the span's duration not covered by any of its
// synchronous children (asynchronous children are not waited for), in
// nanoseconds. Overlapping (parallel) children are counted once.
func (n *Node) SelfTime() int64 {
	start, end := n.Span.Start, n.Span.End
	covered := int64(0)
	cur := start // children are sorted by start: sweep once
	for _, c := range n.Children {
		if c.Async {
			continue
		}
		s, e := max(c.Span.Start, cur), min(c.Span.End, end)
		if e > s {
			covered += e - s
			cur = e
		}
	}
	return (end - start) - covered
}

// Tree is the call tree of one trace.
type Tree struct {
	TraceID ingest.TraceID
	// Roots holds the root span and, in a partial trace, the roots of the
	// pieces whose parents are missing; sorted by start time, then span id.
	Roots []*Node
	// Spans is the number of nodes in the tree.
	Spans int
	// Partial is set when some span's parent is missing from the trace.
	Partial bool
	// Evicted is set when the trace was delivered before it was idle
	// because too many traces were open.
	Evicted bool
	// ExternalLinks counts links from spans of this trace to other traces.
	ExternalLinks int
}

// Root returns the first root, or nil for an empty tree.
func (t *Tree) Root() *Node {
	if len(t.Roots) == 0 {
		return nil
	}
	return t.Roots[0]
}

// Walk visits the nodes depth first, parents before children, in order.
// When fn returns false the node's children are skipped.
func (t *Tree) Walk(fn func(n *Node, depth int) bool) {
	type item struct {
		n     *Node
		depth int
	}
	stack := make([]item, 0, 32)
	for i := len(t.Roots) - 1; i >= 0; i-- {
		stack = append(stack, item{t.Roots[i], 0})
	}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if !fn(it.n, it.depth) {
			continue
		}
		for i := len(it.n.Children) - 1; i >= 0; i-- {
			stack = append(stack, item{it.n.Children[i], it.depth + 1})
		}
	}
}

// Nodes returns all nodes in Walk order.
func (t *Tree) Nodes() []*Node {
	out := make([]*Node, 0, t.Spans)
	t.Walk(func(n *Node, _ int) bool {
		out = append(out, n)
		return true
	})
	return out
}

// compareNodes orders siblings: by start, then span id, a Zipkin client
// before the server span sharing its id.
func compareNodes(a, b *Node) int {
	switch {
	case a.Span.Start < b.Span.Start:
		return -1
	case a.Span.Start > b.Span.Start:
		return 1
	}
	if c := a.Span.SpanID.Compare(b.Span.SpanID); c != 0 {
		return c
	}
	switch {
	case !a.Span.Shared && b.Span.Shared:
		return -1
	case a.Span.Shared && !b.Span.Shared:
		return 1
	}
	return 0
}

func sortNodes(ns []*Node) { slices.SortFunc(ns, compareNodes) }

// Sampling is how the trace came to be kept, as its spans say: the
// probability the first span that gives one gives (the roots first, then
// depth first), else whether a span said a rate limiter kept it; the zero
// value when no span says.
func (t *Tree) Sampling() ingest.Sampling {
	for _, r := range t.Roots {
		if r.Span.Sampling.Probability > 0 {
			return r.Span.Sampling
		}
	}
	var out ingest.Sampling
	for _, r := range t.Roots {
		if p := firstProbability(r, &out.RateLimited); p > 0 {
			return ingest.Sampling{Probability: p}
		}
	}
	return out
}

// firstProbability is the first sampling probability in n's subtree,
// depth first, 0 when none says one; it sets limited when a span it passed
// said a rate limiter kept the trace.
func firstProbability(n *Node, limited *bool) float64 {
	if p := n.Span.Sampling.Probability; p > 0 {
		return p
	}
	*limited = *limited || n.Span.Sampling.RateLimited
	for _, c := range n.Children {
		if p := firstProbability(c, limited); p > 0 {
			return p
		}
	}
	return 0
}
