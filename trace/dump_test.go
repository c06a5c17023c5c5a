package trace

import (
	"fmt"
	"math"
	"strings"
)

// dumpTree renders a tree as text, one line per span, for comparisons.
func dumpTree(t *Tree, withLinks bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "trace %s spans=%d partial=%v", t.TraceID, t.Spans, t.Partial)
	if withLinks {
		fmt.Fprintf(&b, " extlinks=%d", t.ExternalLinks)
	}
	b.WriteByte('\n')
	t.Walk(func(n *Node, depth int) bool {
		s := n.Span
		cpu := "-"
		if !math.IsNaN(s.CPUTime) {
			cpu = fmt.Sprint(s.CPUTime)
		}
		fmt.Fprintf(&b, "%s%s parent=%s %s %s %q svc=%s host=%s inst=%s [%d,%d] shift=%d async=%v orphan=%v route=%s method=%s path=%s db=%s addr=%s peer=%s cpu=%s self=%d",
			strings.Repeat("  ", depth+1), s.SpanID, s.ParentID, s.Kind, s.Status, s.Name, s.Service, s.Host, s.Instance,
			s.Start-ingestBase, s.End-ingestBase, n.Shift, n.Async, n.Orphan, s.HTTPRoute, s.HTTPMethod, s.URLPath, s.DBSystem,
			s.ServerAddress, s.PeerService, cpu, n.SelfTime())
		for _, e := range s.Extra {
			fmt.Fprintf(&b, " %s=%s", e.Key, e.Value)
		}
		if withLinks {
			for _, l := range s.Links {
				fmt.Fprintf(&b, " link=%s/%s", l.TraceID, l.SpanID)
			}
		}
		b.WriteByte('\n')
		return true
	})
	return b.String()
}

const ingestBase = 1_700_000_000_000_000_000
