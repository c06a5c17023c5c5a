package trace

// correctSkew shifts spans whose host clock disagrees with their parent's,
// in the manner of Jaeger's clock-skew adjuster. Walking from the root, a
// child on a different host than its parent that does not lie within the
// parent's interval is shifted into it, centered: for a CLIENT→SERVER pair
// this splits the network latency evenly between request and response. A
// child longer than its parent is left alone (it cannot fit). An
// asynchronous child (a consumer) is only moved when it starts before its
// parent, to start with it. Every span below a shifted span on the same host
// moves by the same amount, since it shares that clock.
func correctSkew(root *Node) {
	type item struct {
		n     *Node
		shift int64 // correction of the host clock the parent ran on
	}
	stack := []item{{root, 0}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		n, shift := it.n, it.shift
		if p := n.Parent; p != nil && n.Span.HostKey() != p.Span.HostKey() {
			shift = skewOf(n, p)
		}
		if shift != 0 {
			n.Span.Start += shift
			n.Span.End += shift
			n.Shift = shift
		}
		for _, c := range n.Children {
			stack = append(stack, item{c, shift})
		}
	}
}

// skewOf is the shift that puts child (times as read) into parent (times
// already corrected).
func skewOf(child, parent *Node) int64 {
	c, p := child.Span, parent.Span
	if child.Async {
		if c.Start < p.Start {
			return p.Start - c.Start
		}
		return 0
	}
	if c.Start >= p.Start && c.End <= p.End {
		return 0
	}
	cd, pd := c.End-c.Start, p.End-p.Start
	if cd > pd {
		return 0
	}
	return p.Start + (pd-cd)/2 - c.Start
}
