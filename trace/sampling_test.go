package trace

import (
	"testing"

	"github.com/perfcast/perfcast/ingest"
)

func TestTreeSampling(t *testing.T) {
	node := func(s ingest.Sampling, children ...*Node) *Node {
		return &Node{Span: &ingest.Span{Sampling: s}, Children: children}
	}
	said := func(p float64) ingest.Sampling { return ingest.Sampling{Probability: p} }
	limited := ingest.Sampling{RateLimited: true}
	cases := []struct {
		name  string
		roots []*Node
		want  ingest.Sampling
	}{
		{"none says", []*Node{node(ingest.Sampling{}, node(ingest.Sampling{}))}, ingest.Sampling{}},
		{"the root", []*Node{node(said(0.5), node(said(0.25)))}, said(0.5)},
		{"a child, depth first", []*Node{node(ingest.Sampling{}, node(ingest.Sampling{}, node(said(0.1))), node(said(0.2)))}, said(0.1)},
		{"a second root before a child", []*Node{node(ingest.Sampling{}, node(said(0.1))), node(said(0.3))}, said(0.3)},
		{"rate limited", []*Node{node(limited, node(ingest.Sampling{}))}, limited},
		{"a probability over a rate limit", []*Node{node(limited, node(said(0.2)))}, said(0.2)},
	}
	for _, c := range cases {
		tr := &Tree{Roots: c.roots}
		if got := tr.Sampling(); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}
