package otlpfile

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/perfcast/perfcast/ingest"
)

// Spans written by the exporter read back through perfcast's OTLP JSON
// reader, an independent decoder, with their ids, parents, kinds, times,
// resource attributes and CPU time intact.
func TestRoundTripThroughIngest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "traces.jsonl")
	exp, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	res := resource.NewSchemaless(
		attribute.String("service.name", "shop"),
		attribute.String("host.name", "node-1"),
		attribute.String("service.instance.id", "shop-7"),
	)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithResource(res))
	tr := tp.Tracer("test")
	t0 := time.Unix(1700000000, 0)
	ctx, server := tr.Start(context.Background(), "GET /item/{id}", trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(t0))
	server.SetAttributes(attribute.String("http.route", "/item/{id}"), attribute.String("http.request.method", "GET"),
		attribute.Float64("perfcast.cpu.time", 0.0025), attribute.Int64Slice("ints", []int64{1, 2}))
	_, client := tr.Start(ctx, "db query", trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(t0.Add(time.Millisecond)))
	client.SetStatus(codes.Error, "boom")
	client.End(trace.WithTimestamp(t0.Add(3 * time.Millisecond)))
	_, prod := tr.Start(ctx, "events publish", trace.WithSpanKind(trace.SpanKindProducer), trace.WithTimestamp(t0.Add(4*time.Millisecond)))
	prod.End(trace.WithTimestamp(t0.Add(5 * time.Millisecond)))
	server.End(trace.WithTimestamp(t0.Add(10 * time.Millisecond)))
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}

	r, err := ingest.Open([]string{path}, ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := map[string]*ingest.Span{}
	for {
		s, err := r.Next(context.Background())
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got[s.Name] = s
	}
	if len(got) != 3 {
		t.Fatalf("read %d spans, want 3", len(got))
	}
	s := got["GET /item/{id}"]
	if s == nil || s.Kind != ingest.KindServer || s.HTTPRoute != "/item/{id}" || s.HTTPMethod != "GET" {
		t.Fatalf("server span = %+v", s)
	}
	if s.Service != "shop" || s.Host != "node-1" || s.Instance != "shop-7" {
		t.Fatalf("resource: service %q host %q instance %q", s.Service, s.Host, s.Instance)
	}
	if !s.HasCPUTime() || s.CPUTime != 0.0025 {
		t.Fatalf("cpu time = %v", s.CPUTime)
	}
	if s.Start != t0.UnixNano() || s.End != t0.Add(10*time.Millisecond).UnixNano() {
		t.Fatalf("server times %d..%d", s.Start, s.End)
	}
	c := got["db query"]
	if c.Kind != ingest.KindClient || c.ParentID != s.SpanID || c.TraceID != s.TraceID {
		t.Fatalf("client span = %+v, server id %v", c, s.SpanID)
	}
	if c.Status != ingest.StatusError {
		t.Fatalf("client status = %v, want error", c.Status)
	}
	if p := got["events publish"]; p.Kind != ingest.KindProducer || p.ParentID != s.SpanID {
		t.Fatalf("producer span = %+v", p)
	}
}

func TestExportAfterShutdown(t *testing.T) {
	exp := New(io.Discard)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	_, sp := tp.Tracer("t").Start(context.Background(), "x")
	sp.End()
	if err := exp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	var spans []sdktrace.ReadOnlySpan
	rec := &collect{spans: &spans}
	tp2 := sdktrace.NewTracerProvider(sdktrace.WithSyncer(rec))
	_, sp2 := tp2.Tracer("t").Start(context.Background(), "y")
	sp2.End()
	if err := exp.ExportSpans(context.Background(), spans); err == nil {
		t.Fatal("export after shutdown succeeded")
	}
}

type collect struct{ spans *[]sdktrace.ReadOnlySpan }

func (c *collect) ExportSpans(_ context.Context, s []sdktrace.ReadOnlySpan) error {
	*c.spans = append(*c.spans, s...)
	return nil
}
func (c *collect) Shutdown(context.Context) error { return nil }
