package trace

import (
	"github.com/perfcast/perfcast/ingest"
)

// build makes the tree of one trace from its spans in arrival order; nil
// when nothing is left of it.
func (a *Assembler) build(id ingest.TraceID, spans []*ingest.Span) *Tree {
	nodes := make([]Node, 0, len(spans))
	idx := a.index
	defer clear(idx)
	var shared map[ingest.SpanID]int32 // Zipkin server spans sharing their client's id
	for _, s := range spans {
		j, dup := idx[s.SpanID]
		if dup {
			o := nodes[j].Span
			if s.Shared != o.Shared {
				if shared == nil {
					shared = make(map[ingest.SpanID]int32)
				}
				if _, twice := shared[s.SpanID]; !twice {
					nodes = append(nodes, Node{Span: s})
					k := int32(len(nodes) - 1)
					if s.Shared {
						shared[s.SpanID] = k
					} else { // the client came second: it owns the id
						shared[s.SpanID] = j
						idx[s.SpanID] = k
					}
					continue
				}
			}
			a.stats.DroppedSpans++
			a.stats.Damage.Addf(ingest.DamageDuplicateSpan, "trace %s: span %s appears more than once", id, s.SpanID)
			continue
		}
		nodes = append(nodes, Node{Span: s})
		idx[s.SpanID] = int32(len(nodes) - 1)
	}

	// Resolve parents as indices; -1 for a root.
	parent := make([]int32, len(nodes))
	nkids := make([]int32, len(nodes))
	for i := range nodes {
		n := &nodes[i]
		s := n.Span
		p := int32(-1)
		if s.Shared && shared != nil {
			if c, ok := idx[s.SpanID]; ok && c != int32(i) {
				p = c // a server span goes under the client sharing its id
			}
		}
		if p < 0 && !s.ParentID.IsZero() {
			if j, ok := shared[s.ParentID]; ok && j != int32(i) && nodes[j].Span.Service == s.Service {
				p = j // same local endpoint as the shared server span
			} else if j, ok := idx[s.ParentID]; ok {
				p = j
			}
			switch {
			case p == int32(i):
				a.stats.Damage.Addf(ingest.DamageCycle, "trace %s: span %s is its own parent", id, s.SpanID)
				p = -1
			case p < 0:
				n.Orphan = true
			}
		}
		parent[i] = p
		if p >= 0 {
			nkids[p]++
		}
	}

	// Children share one backing array.
	children := make([]*Node, len(nodes))
	off := int32(0)
	for i := range nodes {
		nodes[i].Children = children[off : off : off+nkids[i]]
		off += nkids[i]
	}
	var roots []*Node
	for i := range nodes {
		if p := parent[i]; p >= 0 {
			nodes[i].Parent = &nodes[p]
			nodes[p].Children = append(nodes[p].Children, &nodes[i])
		} else {
			roots = append(roots, &nodes[i])
		}
	}
	if reached := countReachable(roots); reached < len(nodes) {
		roots = a.breakCycles(id, nodes, roots)
	}

	tree := &Tree{TraceID: id}
	for _, r := range roots {
		if r.Orphan {
			if a.opts.DropOrphans {
				a.stats.Damage.Addf(ingest.DamageOrphan, "trace %s: span %s: parent %s not in the trace (dropped)", id, r.Span.SpanID, r.Span.ParentID)
				a.stats.DroppedSpans += int64(countReachable([]*Node{r}))
				continue
			}
			a.stats.Damage.Addf(ingest.DamageOrphan, "trace %s: span %s: parent %s not in the trace", id, r.Span.SpanID, r.Span.ParentID)
			tree.Partial = true
		}
		tree.Roots = append(tree.Roots, r)
	}
	if len(tree.Roots) == 0 {
		return nil
	}
	for _, r := range tree.Roots {
		markAsync(r)
		if !a.opts.NoSkewCorrection {
			correctSkew(r)
		}
	}
	sortNodes(tree.Roots)
	tree.Walk(func(n *Node, _ int) bool {
		tree.Spans++
		if len(n.Children) > 1 {
			sortNodes(n.Children)
		}
		for _, l := range n.Span.Links {
			if l.TraceID == id {
				if j, ok := idx[l.SpanID]; ok {
					n.Links = append(n.Links, &nodes[j])
					continue
				}
			}
			tree.ExternalLinks++
		}
		return true
	})
	return tree
}

// countReachable counts the nodes in the subtrees of roots.
func countReachable(roots []*Node) int {
	n := 0
	stack := append([]*Node(nil), roots...)
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		n++
		stack = append(stack, x.Children...)
	}
	return n
}

// breakCycles drops the spans that no root reaches: they hang in parent
// loops (a is the parent of b, b of a), or below one.
func (a *Assembler) breakCycles(id ingest.TraceID, nodes []Node, roots []*Node) []*Node {
	seen := make(map[*Node]bool, len(nodes))
	stack := append([]*Node(nil), roots...)
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		seen[x] = true
		stack = append(stack, x.Children...)
	}
	for i := range nodes {
		if !seen[&nodes[i]] {
			a.stats.DroppedSpans++
			a.stats.Damage.Addf(ingest.DamageCycle, "trace %s: span %s: its parent links form a loop", id, nodes[i].Span.SpanID)
		}
	}
	return roots
}

// markAsync flags the spans their parents do not wait for.
func markAsync(root *Node) {
	stack := []*Node{root}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if p := n.Parent; p != nil {
			s := n.Span
			n.Async = s.FollowsFrom || (s.Kind == ingest.KindConsumer && p.Span.Kind != ingest.KindConsumer)
		}
		stack = append(stack, n.Children...)
	}
}
