package trace

import (
	"context"
	"errors"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/perfcast/perfcast/ingest"
	"github.com/perfcast/perfcast/ingest/ingesttest"
)

// sp builds a span: trace t, span id s, parent p (0 for none), on host,
// with times in microseconds after a base.
func sp(t, s, p byte, host string, kind ingest.Kind, startUS, endUS int64) *ingest.Span {
	x := &ingest.Span{TraceID: ingest.TraceID{15: t}, SpanID: ingest.SpanID{7: s}, Kind: kind,
		Host: host, Service: "svc-" + host, Name: "op", CPUTime: math.NaN(),
		Start: ingestBase + startUS*1000, End: ingestBase + endUS*1000}
	if p != 0 {
		x.ParentID = ingest.SpanID{7: p}
	}
	return x
}

// assemble runs spans through an Assembler and returns the trees.
func assemble(t *testing.T, opts Options, spans ...*ingest.Span) ([]*Tree, Stats) {
	t.Helper()
	var trees []*Tree
	a := New(opts, func(tr *Tree) error {
		trees = append(trees, tr)
		return nil
	})
	for _, s := range spans {
		if err := a.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	return trees, a.Stats()
}

// shape renders a tree as ids with nesting: "1(2(4) 3)".
func shape(t *Tree) string {
	var b strings.Builder
	var rec func(n *Node)
	rec = func(n *Node) {
		b.WriteString(string('0' + rune(n.Span.SpanID[7])))
		if n.Async {
			b.WriteString("~")
		}
		if n.Orphan {
			b.WriteString("!")
		}
		if len(n.Children) > 0 {
			b.WriteString("(")
			for i, c := range n.Children {
				if i > 0 {
					b.WriteString(" ")
				}
				rec(c)
			}
			b.WriteString(")")
		}
	}
	for i, r := range t.Roots {
		if i > 0 {
			b.WriteString(" ")
		}
		rec(r)
	}
	return b.String()
}

func TestTreeShapeAndOrder(t *testing.T) {
	// Children arrive before parents and out of order; they are sorted by
	// start time, then span id.
	trees, st := assemble(t, Options{},
		sp(1, 4, 2, "h", ingest.KindInternal, 20, 30),
		sp(1, 3, 1, "h", ingest.KindInternal, 50, 60),
		sp(1, 5, 2, "h", ingest.KindInternal, 10, 20),
		sp(1, 6, 2, "h", ingest.KindInternal, 10, 15),
		sp(1, 2, 1, "h", ingest.KindInternal, 5, 40),
		sp(1, 1, 0, "h", ingest.KindServer, 0, 100),
	)
	if len(trees) != 1 {
		t.Fatalf("%d trees", len(trees))
	}
	if got, want := shape(trees[0]), "1(2(5 6 4) 3)"; got != want {
		t.Errorf("shape %s, want %s", got, want)
	}
	tr := trees[0]
	if tr.Spans != 6 || tr.Partial || st.Traces != 1 || st.Spans != 6 || st.Damage.Total() != 0 {
		t.Errorf("tree %+v stats %+v", tr, st)
	}
	// Self time: 1 covers [0,100] minus 2 [5,40] and 3 [50,60] = 55 µs.
	if got := tr.Root().SelfTime(); got != 55_000 {
		t.Errorf("self time of root %d, want 55000", got)
	}
	// 2 covers [5,40] minus the union of [10,20], [10,15], [20,30] = 15 µs.
	if got := tr.Root().Children[0].SelfTime(); got != 15_000 {
		t.Errorf("self time of 2 %d, want 15000", got)
	}
	var order []byte
	tr.Walk(func(n *Node, depth int) bool {
		order = append(order, '0'+n.Span.SpanID[7])
		return n.Span.SpanID[7] != 2 // skip below 2
	})
	if string(order) != "123" {
		t.Errorf("walk order %s, want 123", order)
	}
}

func TestOrphansAndDuplicates(t *testing.T) {
	spans := []*ingest.Span{
		sp(1, 1, 0, "h", ingest.KindServer, 0, 100),
		sp(1, 2, 1, "h", ingest.KindInternal, 10, 20),
		sp(1, 2, 1, "h", ingest.KindInternal, 10, 20), // delivered twice
		sp(1, 3, 9, "h", ingest.KindInternal, 30, 40), // parent 9 missing
		sp(1, 4, 3, "h", ingest.KindInternal, 31, 35), // under the orphan
		sp(1, 5, 8, "h", ingest.KindInternal, 50, 60), // parent 8 missing
		sp(2, 7, 6, "h", ingest.KindInternal, 0, 10),  // a trace without its root
	}
	trees, st := assemble(t, Options{}, spans...)
	if len(trees) != 2 {
		t.Fatalf("%d trees", len(trees))
	}
	if got, want := shape(trees[0]), "1(2) 3!(4) 5!"; got != want {
		t.Errorf("shape %s, want %s", got, want)
	}
	if !trees[0].Partial || !trees[1].Partial || shape(trees[1]) != "7!" {
		t.Errorf("partial flags or shape wrong: %s", shape(trees[1]))
	}
	if st.Damage.Counts[ingest.DamageOrphan] != 3 || st.Damage.Counts[ingest.DamageDuplicateSpan] != 1 ||
		st.DroppedSpans != 1 || st.PartialTraces != 2 || st.Spans != 6 {
		t.Errorf("stats %+v", st)
	}

	trees, st = assemble(t, Options{DropOrphans: true}, spans...)
	if len(trees) != 1 || shape(trees[0]) != "1(2)" {
		t.Fatalf("with DropOrphans: %d trees", len(trees))
	}
	if trees[0].Partial || st.Damage.Counts[ingest.DamageOrphan] != 3 || st.DroppedSpans != 1+4 || st.Spans != 2 {
		t.Errorf("with DropOrphans: stats %+v", st)
	}
}

func TestCycles(t *testing.T) {
	trees, st := assemble(t, Options{},
		sp(1, 1, 0, "h", ingest.KindServer, 0, 100),
		sp(1, 2, 3, "h", ingest.KindInternal, 10, 20),
		sp(1, 3, 2, "h", ingest.KindInternal, 10, 20),
		sp(1, 4, 4, "h", ingest.KindInternal, 10, 20),
	)
	if len(trees) != 1 || shape(trees[0]) != "1 4" {
		t.Fatalf("trees %d %s", len(trees), shape(trees[0]))
	}
	if st.Damage.Counts[ingest.DamageCycle] != 3 || st.DroppedSpans != 2 {
		t.Errorf("stats %+v", st)
	}
}

func TestZipkinSharedSpans(t *testing.T) {
	client := sp(1, 2, 1, "a", ingest.KindClient, 10, 50)
	server := sp(1, 2, 1, "b", ingest.KindServer, 15, 45)
	server.Shared = true
	below := sp(1, 3, 2, "b", ingest.KindClient, 20, 30) // called by the server
	beside := sp(1, 4, 2, "a", ingest.KindInternal, 12, 14)
	for _, order := range [][]*ingest.Span{{client, server, below, beside}, {below, server, beside, client}} {
		root := sp(1, 1, 0, "a", ingest.KindServer, 0, 100)
		trees, st := assemble(t, Options{}, append([]*ingest.Span{root}, order...)...)
		if got, want := shape(trees[0]), "1(2(4 2(3)))"; got != want {
			t.Errorf("shape %s, want %s", got, want)
		}
		if st.Damage.Total() != 0 {
			t.Errorf("damage %v", st.Damage.Counts)
		}
		n := trees[0].Root().Children[0].Children[1]
		if !n.Span.Shared || n.Parent.Span.Shared {
			t.Errorf("server and client mixed up")
		}
	}
}

func TestAsyncAndLinks(t *testing.T) {
	prod := sp(1, 2, 1, "a", ingest.KindProducer, 10, 12)
	cons := sp(1, 3, 2, "b", ingest.KindConsumer, 200, 300)
	ff := sp(1, 4, 1, "a", ingest.KindInternal, 150, 160)
	ff.FollowsFrom = true
	inner := sp(1, 5, 3, "b", ingest.KindConsumer, 210, 220) // consumer under a consumer: sync
	ext := sp(1, 6, 1, "a", ingest.KindInternal, 20, 30)
	ext.Links = []ingest.Link{{TraceID: ingest.TraceID{15: 9}, SpanID: ingest.SpanID{7: 1}}, {TraceID: ext.TraceID, SpanID: prod.SpanID}}
	trees, st := assemble(t, Options{}, sp(1, 1, 0, "a", ingest.KindServer, 0, 100), prod, cons, ff, inner, ext)
	if got, want := shape(trees[0]), "1(2(3~(5)) 6 4~)"; got != want {
		t.Errorf("shape %s, want %s", got, want)
	}
	// Async children are not waited for: the root's self time only loses
	// [10,12] and [20,30].
	if got := trees[0].Root().SelfTime(); got != 88_000 {
		t.Errorf("self time %d, want 88000", got)
	}
	n6 := trees[0].Root().Children[1]
	if trees[0].ExternalLinks != 1 || len(n6.Links) != 1 || n6.Links[0].Span != prod {
		t.Errorf("links: external %d, in-trace %v", trees[0].ExternalLinks, n6.Links)
	}
	if st.AsyncEdges != 2 || st.ExternalLinks != 1 {
		t.Errorf("stats %+v", st)
	}
}

func TestSkewCorrection(t *testing.T) {
	type span struct {
		id, parent byte
		host       string
		kind       ingest.Kind
		start, end int64
	}
	cases := []struct {
		name  string
		spans []span
		want  map[byte][2]int64 // corrected start, end in µs
	}{{
		name: "server before its client is centered in it",
		spans: []span{{1, 0, "a", ingest.KindClient, 100, 200}, {2, 1, "b", ingest.KindServer, 40, 100},
			{3, 2, "b", ingest.KindInternal, 50, 60}, {4, 3, "c", ingest.KindServer, 1000, 1004}},
		// 2 is 60 long in a 100 long client: latency 20 each way, start 120,
		// shift +80; 3 on the same host moves too; 4 on another host is
		// put back into 3's shifted interval [130,140]: centered at 133.
		want: map[byte][2]int64{1: {100, 200}, 2: {120, 180}, 3: {130, 140}, 4: {133, 137}},
	}, {
		name:  "server after its client",
		spans: []span{{1, 0, "a", ingest.KindClient, 100, 200}, {2, 1, "b", ingest.KindServer, 190, 250}},
		want:  map[byte][2]int64{2: {120, 180}},
	}, {
		name:  "a server inside its client is left alone",
		spans: []span{{1, 0, "a", ingest.KindClient, 100, 200}, {2, 1, "b", ingest.KindServer, 101, 130}},
		want:  map[byte][2]int64{2: {101, 130}},
	}, {
		name:  "same host: no correction",
		spans: []span{{1, 0, "a", ingest.KindClient, 100, 200}, {2, 1, "a", ingest.KindServer, 300, 350}},
		want:  map[byte][2]int64{2: {300, 350}},
	}, {
		name:  "a child longer than its parent is left alone",
		spans: []span{{1, 0, "a", ingest.KindClient, 100, 200}, {2, 1, "b", ingest.KindServer, 50, 400}},
		want:  map[byte][2]int64{2: {50, 400}},
	}, {
		name:  "a consumer starting before its producer starts with it",
		spans: []span{{1, 0, "a", ingest.KindProducer, 100, 110}, {2, 1, "b", ingest.KindConsumer, 90, 500}},
		want:  map[byte][2]int64{2: {100, 510}},
	}, {
		name:  "a consumer after its producer is left alone",
		spans: []span{{1, 0, "a", ingest.KindProducer, 100, 110}, {2, 1, "b", ingest.KindConsumer, 900, 1500}},
		want:  map[byte][2]int64{2: {900, 1500}},
	}}
	for _, c := range cases {
		var spans []*ingest.Span
		for _, s := range c.spans {
			spans = append(spans, sp(1, s.id, s.parent, s.host, s.kind, s.start, s.end))
		}
		trees, _ := assemble(t, Options{}, spans...)
		for _, n := range trees[0].Nodes() {
			w, ok := c.want[n.Span.SpanID[7]]
			if !ok {
				continue
			}
			got := [2]int64{(n.Span.Start - ingestBase) / 1000, (n.Span.End - ingestBase) / 1000}
			if got != w {
				t.Errorf("%s: span %d at %v, want %v", c.name, n.Span.SpanID[7], got, w)
			}
			orig := c.spans[n.Span.SpanID[7]-1]
			if n.Shift != (w[0]-orig.start)*1000 {
				t.Errorf("%s: span %d shift %d", c.name, n.Span.SpanID[7], n.Shift)
			}
		}
		// Without correction, times stay as read.
		spans = spans[:0]
		for _, s := range c.spans {
			spans = append(spans, sp(1, s.id, s.parent, s.host, s.kind, s.start, s.end))
		}
		trees, st := assemble(t, Options{NoSkewCorrection: true}, spans...)
		for i, n := range trees[0].Nodes() {
			if n.Shift != 0 || st.SkewAdjusted != 0 {
				t.Errorf("%s: node %d shifted without correction", c.name, i)
			}
		}
	}
}

func TestIdleCompletionAndEviction(t *testing.T) {
	// Traces 1..4 interleaved; with IdleSpans 3 a trace completes once
	// three spans of others arrived after its last one.
	spans := []*ingest.Span{
		sp(1, 1, 0, "h", 0, 0, 10), // seq 1
		sp(2, 1, 0, "h", 0, 0, 10), // 2
		sp(1, 2, 1, "h", 0, 1, 2),  // 3
		sp(3, 1, 0, "h", 0, 0, 10), // 4
		sp(4, 1, 0, "h", 0, 0, 10), // 5: trace 2 idle for 3 -> complete
		sp(3, 2, 1, "h", 0, 1, 2),  // 6: trace 1 idle for 3 -> complete
		sp(2, 2, 1, "h", 0, 1, 2),  // 7: late span of trace 2
	}
	var order []byte
	a := New(Options{IdleSpans: 3}, func(tr *Tree) error {
		order = append(order, '0'+tr.TraceID[15])
		return nil
	})
	for _, s := range spans {
		a.Add(s)
	}
	if string(order) != "21" || a.OpenTraces() != 3 {
		t.Errorf("completed %s with %d open, want 21 with 3 open", order, a.OpenTraces())
	}
	a.Close()
	// At the end the rest completes in order of their first span's start,
	// then of trace id: 3 and 4 start at 0, the late part of 2 at 1.
	if string(order) != "21342" {
		t.Errorf("order %s, want 21342", order)
	}
	st := a.Stats()
	if st.Damage.Counts[ingest.DamageSplitTrace] != 1 || st.Traces != 5 {
		t.Errorf("stats %+v", st)
	}

	// With at most 2 open traces the oldest is delivered early.
	order = order[:0]
	var evicted []bool
	a = New(Options{MaxOpenTraces: 2}, func(tr *Tree) error {
		order = append(order, '0'+tr.TraceID[15])
		evicted = append(evicted, tr.Evicted)
		return nil
	})
	for _, s := range spans[:5] {
		a.Add(s)
	}
	a.Close()
	if string(order) != "2134" || a.Stats().Evicted != 2 || !evicted[0] || !evicted[1] || evicted[2] || a.Stats().MaxOpen != 3 {
		t.Errorf("order %s evicted %v stats %+v", order, evicted, a.Stats())
	}
}

func TestCompleteIdle(t *testing.T) {
	// A receiver notes Received after the third span; traces quiet since
	// then complete, the others stay open.
	var order []byte
	a := New(Options{}, func(tr *Tree) error {
		order = append(order, '0'+tr.TraceID[15])
		return nil
	})
	add := func(s *ingest.Span) {
		if err := a.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	add(sp(1, 1, 0, "h", 0, 0, 10))
	add(sp(2, 1, 0, "h", 0, 0, 10))
	add(sp(1, 2, 1, "h", 0, 1, 2))
	noted := a.Received()
	add(sp(2, 2, 1, "h", 0, 1, 2))
	add(sp(3, 1, 0, "h", 0, 0, 10))
	if err := a.CompleteIdle(noted); err != nil {
		t.Fatal(err)
	}
	if string(order) != "1" || a.OpenTraces() != 2 || noted != 3 {
		t.Errorf("completed %s with %d open (noted %d), want 1 with 2 open (3)", order, a.OpenTraces(), noted)
	}
	if err := a.CompleteIdle(a.Received()); err != nil {
		t.Fatal(err)
	}
	if string(order) != "123" || a.OpenTraces() != 0 {
		t.Errorf("completed %s with %d open, want 123 with none", order, a.OpenTraces())
	}
	a.Close()
	if a.CompleteIdle(0) == nil {
		t.Error("CompleteIdle after Close: no error")
	}
}

func TestEmitErrorAndCancel(t *testing.T) {
	boom := errors.New("boom")
	a := New(Options{IdleSpans: 1}, func(*Tree) error { return boom })
	a.Add(sp(1, 1, 0, "h", 0, 0, 10))
	if err := a.Add(sp(2, 1, 0, "h", 0, 0, 10)); !errors.Is(err, boom) {
		t.Errorf("Add: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	src := &sliceSource{spans: []*ingest.Span{sp(1, 1, 0, "h", 0, 0, 10)}}
	if _, err := Run(ctx, src, Options{}, func(*Tree) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("Run after cancel: %v", err)
	}
}

type sliceSource struct{ spans []*ingest.Span }

func (s *sliceSource) Next(ctx context.Context) (*ingest.Span, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(s.spans) == 0 {
		return nil, io.EOF
	}
	x := s.spans[0]
	s.spans = s.spans[1:]
	return x, nil
}

// TestStreamDeterministic assembles an interleaved stream twice with a small
// idle limit and checks the trees are the same and complete.
func TestStreamDeterministic(t *testing.T) {
	run := func() (string, Stats) {
		var b strings.Builder
		s := ingesttest.NewStream(5, 20_000, 50)
		st, err := Run(context.Background(), streamSource{s}, Options{IdleSpans: 2000}, func(tr *Tree) error {
			b.WriteString(dumpTree(tr, true))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return b.String(), st
	}
	a, st := run()
	b, _ := run()
	if a != b {
		t.Error("two runs differ")
	}
	if st.Damage.Total() != 0 || st.PartialTraces != 0 || st.Evicted != 0 || st.Spans < 20_000 {
		t.Errorf("stats %+v", st)
	}
	if st.Services != 3 || len(st.Operations) != 7 {
		t.Errorf("services %d operations %v", st.Services, st.Operations)
	}
}

type streamSource struct{ s *ingesttest.Stream }

func (s streamSource) Next(context.Context) (*ingest.Span, error) {
	if x := s.s.Next(); x != nil {
		return x, nil
	}
	return nil, io.EOF
}
