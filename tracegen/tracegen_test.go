package tracegen

import (
	"bytes"
	"context"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perfcast/perfcast/ingest"
	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve/sim"
	"github.com/perfcast/perfcast/trace"
)

// testModel has calls in a loop, a send, a parallel list with a delay, a
// replicated host and a thread pool.
const testModel = `perfcast: 1
hosts:
  web: {replicas: 2, cpu: {cores: 2}}
  app: {cpu: {cores: 2}}
components:
  front:
    host: web
    operations:
      GET /page:
        steps:
          - cpu: exp(1ms)
          - loop: {times: {pmf: {"1": 0.5, "3": 0.5}}, steps: [{call: svc/get}]}
          - branch:
              - {p: 0.3, steps: [{send: svc/notify}]}
              - {p: 0.7, steps: []}
          - parallel:
              - [{call: svc/get}]
              - [{delay: exp(2ms)}, {cpu: exp(0.5ms)}]
  svc:
    host: app
    threads: 2
    operations:
      get: {steps: [{cpu: exp(1ms)}]}
      notify: {steps: [{cpu: exp(0.5ms)}]}
workload:
  users: {open: {rate: 200}, steps: [{call: front/GET /page}]}
`

func simulate(t testing.TB, requests int64, external bool) []*sim.Span {
	t.Helper()
	m, err := model.Parse([]byte(testModel), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var spans []*sim.Span
	r, err := sim.Record(context.Background(), m, sim.RecordOptions{Seed: 4, Requests: requests, ExternalSpans: external},
		func(s *sim.Span) error { spans = append(spans, s); return nil })
	if err != nil || !r.Stable {
		t.Fatalf("record: %v %v", err, r)
	}
	return spans
}

func readAll(t *testing.T, path string, attrs ...string) []*ingest.Span {
	t.Helper()
	r, err := ingest.Open([]string{path}, ingest.Options{Attributes: attrs})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []*ingest.Span
	for {
		s, err := r.Next(context.Background())
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if d := r.Stats().Damage.Total(); d != 0 {
		t.Fatalf("%d damaged records: %+v", d, r.Stats().Damage)
	}
	return out
}

func write(t *testing.T, spans []*sim.Span, opts Options) (string, []byte) {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, spans, opts); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "traces")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, b.Bytes()
}

func TestConvert(t *testing.T) {
	s := &sim.Span{Trace: 7, ID: 9, Parent: 8, Kind: sim.SpanServer, Component: "svc", Operation: "get",
		Host: "app-2", Replica: 1, Start: 1.5, End: 1.5000025, CPU: 0.002}
	o := &Options{Seed: 3}
	got := Convert(s, o)
	if got.Start != DefaultBase+1_500_000_000 || got.End != DefaultBase+1_500_002_500 {
		t.Errorf("times %d %d", got.Start-DefaultBase, got.End-DefaultBase)
	}
	if got.Kind != ingest.KindServer || got.CPUTime != 0.002 || got.Service != "svc" || got.Host != "app-2" ||
		got.Instance != "svc-2" || got.Name != "get" || got.ParentID != SpanID(8) || got.SpanID != SpanID(9) ||
		got.TraceID != TraceID(3, 7) || got.Status != ingest.StatusUnset {
		t.Errorf("converted %+v", *got)
	}
	o.NoCPUTime = true
	if Convert(s, o).HasCPUTime() {
		t.Error("CPU time despite NoCPUTime")
	}
	c := *s
	c.Kind, c.Peer, c.Parent, c.Error = sim.SpanClient, "external", 0, true
	got = Convert(&c, &Options{})
	if got.Kind != ingest.KindClient || got.HasCPUTime() || got.PeerService != "external" || !got.ParentID.IsZero() || got.Status != ingest.StatusError {
		t.Errorf("client span %+v", *got)
	}
	if TraceID(1, 5) == TraceID(2, 5) || TraceID(1, 5) == TraceID(1, 6) {
		t.Error("trace ids collide")
	}
}

// TestRoundTrip writes simulated spans in both formats, reads them back
// with the ingest readers and checks that every span arrives as converted,
// then assembles them into trees of the expected shape.
func TestRoundTrip(t *testing.T) {
	spans := simulate(t, 3000, true)
	for _, f := range []Format{OTLPJSON, OTLPProto} {
		t.Run(f.String(), func(t *testing.T) {
			opts := Options{Format: f, Seed: 4}
			path, data := write(t, spans, opts)
			got := readAll(t, path)
			if len(got) != len(spans) {
				t.Fatalf("read %d spans, wrote %d", len(got), len(spans))
			}
			// Requests group spans by resource: compare by id.
			byID := map[ingest.SpanID]*ingest.Span{}
			for _, g := range got {
				byID[g.SpanID] = g
			}
			for i, s := range spans {
				want := Convert(s, &opts)
				g := byID[want.SpanID]
				if g == nil || g.TraceID != want.TraceID || !sameSpan(g, want) {
					t.Fatalf("span %d read back as\n%+v\nwant\n%+v", i, g, *want)
				}
			}
			if f == OTLPJSON {
				// Batches of 0.2 s of simulated time, at 200 requests/s of
				// about 8 spans each: far fewer than 8192 spans.
				lines := bytes.Count(data, []byte("\n"))
				dur := spans[len(spans)-1].End
				if want := dur / DefaultBatchSeconds; float64(lines) < want*0.9 || float64(lines) > want*1.1+1 {
					t.Errorf("%d lines over %.1f s of traces, want about %.0f", lines, dur, want)
				}
			}
			checkTrees(t, path, spans)
		})
	}
}

// sameSpan compares the fields a reader fills, CPU times NaN-aware.
func sameSpan(a, b *ingest.Span) bool {
	cpu := a.CPUTime == b.CPUTime || math.IsNaN(a.CPUTime) && math.IsNaN(b.CPUTime)
	return cpu && a.SpanID == b.SpanID && a.ParentID == b.ParentID && a.Start == b.Start && a.End == b.End &&
		a.Name == b.Name && a.Service == b.Service && a.Host == b.Host && a.Instance == b.Instance &&
		a.PeerService == b.PeerService && a.Kind == b.Kind && a.Status == b.Status
}

// checkTrees assembles the file's traces and checks their shape: one
// complete tree per trace, a server root, every client span with one server
// child of its peer (or none when external), every producer with one
// asynchronous consumer child, and no clock-skew correction.
func checkTrees(t *testing.T, path string, spans []*sim.Span) {
	r, err := ingest.Open([]string{path}, ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	traces := map[uint64]bool{}
	for _, s := range spans {
		traces[s.Trace] = true
	}
	trees, sends, externals := 0, 0, 0
	_, err = trace.Run(context.Background(), r, trace.Options{}, func(tr *trace.Tree) error {
		trees++
		if tr.Partial || len(tr.Roots) != 1 || tr.Root().Span.Kind != ingest.KindServer || tr.Root().Span.Name != "GET /page" {
			t.Fatalf("tree %s: partial %v, %d roots", tr.TraceID, tr.Partial, len(tr.Roots))
		}
		tr.Walk(func(n *trace.Node, _ int) bool {
			if n.Shift != 0 {
				t.Errorf("span %s shifted by %d ns", n.Span.SpanID, n.Shift)
			}
			switch n.Span.Kind {
			case ingest.KindClient:
				if n.Span.PeerService == "external" {
					externals++
					if len(n.Children) != 0 {
						t.Errorf("external span with children")
					}
				} else if len(n.Children) != 1 || n.Children[0].Span.Kind != ingest.KindServer || n.Children[0].Async ||
					n.Children[0].Span.Service != n.Span.PeerService || n.Children[0].Span.End != n.Span.End {
					t.Errorf("client span %s: children %v", n.Span.Name, n.Children)
				}
			case ingest.KindProducer:
				sends++
				if len(n.Children) != 1 || n.Children[0].Span.Kind != ingest.KindConsumer || !n.Children[0].Async {
					t.Errorf("producer span %s: children %v", n.Span.Name, n.Children)
				}
			case ingest.KindServer, ingest.KindConsumer:
				if n.Parent != nil && n.Parent.Span.Host != n.Span.Host && n.Span.Service == "front" {
					t.Errorf("front span on another host than its parent")
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if trees != len(traces) || sends == 0 || externals != trees {
		t.Errorf("%d trees of %d traces, %d sends, %d external spans", trees, len(traces), sends, externals)
	}
}

func TestNoCPUTime(t *testing.T) {
	spans := simulate(t, 200, false)
	path, data := write(t, spans, Options{NoCPUTime: true})
	if bytes.Contains(data, []byte("perfcast.cpu.time")) {
		t.Error("perfcast.cpu.time written")
	}
	for _, s := range readAll(t, path) {
		if s.HasCPUTime() || s.PeerService == "external" {
			t.Fatalf("span %+v", *s)
		}
	}
}

func TestDeterministic(t *testing.T) {
	for _, f := range []Format{OTLPJSON, OTLPProto} {
		_, a := write(t, simulate(t, 500, true), Options{Format: f, Seed: 4})
		_, b := write(t, simulate(t, 500, true), Options{Format: f, Seed: 4})
		if !bytes.Equal(a, b) {
			t.Errorf("%s: same spans, different bytes", f)
		}
	}
}

func TestBatchSpans(t *testing.T) {
	spans := simulate(t, 300, false)
	_, data := write(t, spans, Options{BatchSpans: 100, BatchSeconds: 1e9})
	lines := strings.Count(string(data), "\n")
	if want := (len(spans) + 99) / 100; lines != want {
		t.Errorf("%d lines for %d spans in batches of 100, want %d", lines, len(spans), want)
	}
}

func TestParseFormat(t *testing.T) {
	for _, f := range []Format{OTLPJSON, OTLPProto} {
		if g, err := ParseFormat(f.String()); err != nil || g != f {
			t.Errorf("%s: %v %v", f, g, err)
		}
	}
	if _, err := ParseFormat("zipkin"); err == nil {
		t.Error("zipkin accepted")
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }

func TestWriteError(t *testing.T) {
	if err := Write(failWriter{}, simulate(t, 10, false), Options{}); err == nil {
		t.Error("no error from a failing writer")
	}
}

// TestRootAttributes checks that the root span of each trace carries the
// request's parameter and, for a closed workload, the user's session.id,
// in both formats, and that no other span does.
func TestRootAttributes(t *testing.T) {
	m, err := model.Parse([]byte(`perfcast: 1
hosts: {h: {}}
components:
  web:
    host: h
    operations:
      get: {steps: [{cpu: exp(1ms)}, {call: web/part}]}
      part: {steps: [{cpu: exp(1ms)}]}
workload:
  people:
    closed: {users: 5, think: exp(50ms)}
    params: {size: {pmf: {small: 0.5, large: 0.5}}}
    steps: [{call: web/get}]
  bots: {open: {rate: 20/s}, steps: [{call: web/part}]}
`), "attrs.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var spans []*sim.Span
	if _, err := sim.Record(context.Background(), m, sim.RecordOptions{Seed: 2, Requests: 600},
		func(s *sim.Span) error { spans = append(spans, s); return nil }); err != nil {
		t.Fatal(err)
	}
	for _, f := range []Format{OTLPJSON, OTLPProto} {
		path, _ := write(t, spans, Options{Format: f})
		users, sizes, bots := map[string]int{}, map[string]int{}, 0
		for _, s := range readAll(t, path, "size", sim.SessionAttr) {
			user, hasUser := s.Lookup(sim.SessionAttr)
			size, hasSize := s.Lookup("size")
			switch {
			case !s.ParentID.IsZero():
				if hasUser || hasSize {
					t.Fatalf("%s: span %s under a parent carries %v", f, s.Name, s.Extra)
				}
			case s.Name == "get":
				if !hasUser || !hasSize {
					t.Fatalf("%s: root span of people's request carries %v", f, s.Extra)
				}
				users[user]++
				sizes[size]++
			default:
				if hasUser || hasSize {
					t.Fatalf("%s: root span of an open request carries %v", f, s.Extra)
				}
				bots++
			}
		}
		if len(users) != 5 || users["people-1"] == 0 || users["people-5"] == 0 {
			t.Errorf("%s: users %v, want people-1 to people-5", f, users)
		}
		if len(sizes) != 2 || sizes["small"] == 0 || sizes["large"] == 0 {
			t.Errorf("%s: sizes %v", f, sizes)
		}
		if bots == 0 {
			t.Errorf("%s: no open requests", f)
		}
	}
}
