// Package otlpfile is an OpenTelemetry span exporter that writes OTLP JSON,
// one ExportTraceServiceRequest per line, as the OpenTelemetry Collector's
// file exporter does; perfcast and other OTLP tools read such files.
package otlpfile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Exporter writes the spans of each export call as one line of OTLP JSON.
// It is safe for concurrent use.
type Exporter struct {
	mu     sync.Mutex
	w      io.Writer
	closer io.Closer
	closed bool
	marsh  ptrace.JSONMarshaler
}

// New returns an exporter writing to w; Shutdown closes w when it is an
// io.Closer.
func New(w io.Writer) *Exporter {
	e := &Exporter{w: w}
	if c, ok := w.(io.Closer); ok {
		e.closer = c
	}
	return e
}

// Create returns an exporter writing to the file at path, created or
// truncated.
func Create(path string) (*Exporter, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("otlpfile: %w", err)
	}
	return New(f), nil
}

// ExportSpans writes spans as one ExportTraceServiceRequest line.
func (e *Exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return nil
	}
	data, err := e.marsh.MarshalTraces(Convert(spans))
	if err != nil {
		return fmt.Errorf("otlpfile: marshal %d spans: %w", len(spans), err)
	}
	data = append(data, '\n')
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return errors.New("otlpfile: export after shutdown")
	}
	if _, err := e.w.Write(data); err != nil {
		return fmt.Errorf("otlpfile: write: %w", err)
	}
	return nil
}

// Shutdown stops the exporter and closes its writer.
func (e *Exporter) Shutdown(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	if e.closer != nil {
		if err := e.closer.Close(); err != nil {
			return fmt.Errorf("otlpfile: close: %w", err)
		}
	}
	return nil
}

// Convert turns SDK spans into OTLP traces, grouped by resource and by
// instrumentation scope in the order they first appear.
func Convert(spans []sdktrace.ReadOnlySpan) ptrace.Traces {
	td := ptrace.NewTraces()
	type scopeKey struct {
		res   attribute.Distinct
		name  string
		vers  string
		attrs attribute.Distinct
	}
	resources := map[attribute.Distinct]ptrace.ResourceSpans{}
	scopes := map[scopeKey]ptrace.ScopeSpans{}
	for _, s := range spans {
		res := s.Resource()
		rkey := res.Equivalent()
		rs, ok := resources[rkey]
		if !ok {
			rs = td.ResourceSpans().AppendEmpty()
			putAttrs(rs.Resource().Attributes(), res.Attributes())
			rs.SetSchemaUrl(res.SchemaURL())
			resources[rkey] = rs
		}
		sc := s.InstrumentationScope()
		skey := scopeKey{rkey, sc.Name, sc.Version, sc.Attributes.Equivalent()}
		ss, ok := scopes[skey]
		if !ok {
			ss = rs.ScopeSpans().AppendEmpty()
			ss.Scope().SetName(sc.Name)
			ss.Scope().SetVersion(sc.Version)
			putAttrs(ss.Scope().Attributes(), sc.Attributes.ToSlice())
			ss.SetSchemaUrl(sc.SchemaURL)
			scopes[skey] = ss
		}
		convertSpan(ss.Spans().AppendEmpty(), s)
	}
	return td
}

func convertSpan(out ptrace.Span, s sdktrace.ReadOnlySpan) {
	sc := s.SpanContext()
	out.SetTraceID(pcommon.TraceID(sc.TraceID()))
	out.SetSpanID(pcommon.SpanID(sc.SpanID()))
	out.TraceState().FromRaw(sc.TraceState().String())
	if p := s.Parent(); p.IsValid() {
		out.SetParentSpanID(pcommon.SpanID(p.SpanID()))
	}
	out.SetName(s.Name())
	out.SetKind(kind(s.SpanKind()))
	out.SetStartTimestamp(pcommon.NewTimestampFromTime(s.StartTime()))
	out.SetEndTimestamp(pcommon.NewTimestampFromTime(s.EndTime()))
	putAttrs(out.Attributes(), s.Attributes())
	out.SetDroppedAttributesCount(uint32(max(0, s.DroppedAttributes())))
	for _, ev := range s.Events() {
		e := out.Events().AppendEmpty()
		e.SetName(ev.Name)
		e.SetTimestamp(pcommon.NewTimestampFromTime(ev.Time))
		putAttrs(e.Attributes(), ev.Attributes)
	}
	for _, l := range s.Links() {
		ol := out.Links().AppendEmpty()
		ol.SetTraceID(pcommon.TraceID(l.SpanContext.TraceID()))
		ol.SetSpanID(pcommon.SpanID(l.SpanContext.SpanID()))
		ol.TraceState().FromRaw(l.SpanContext.TraceState().String())
		putAttrs(ol.Attributes(), l.Attributes)
	}
	st := s.Status()
	switch st.Code {
	case codes.Error:
		out.Status().SetCode(ptrace.StatusCodeError)
		out.Status().SetMessage(st.Description)
	case codes.Ok:
		out.Status().SetCode(ptrace.StatusCodeOk)
	}
}

// kind maps the API's span kinds to OTLP's; both number them alike, but
// the mapping is spelled out rather than assumed.
func kind(k trace.SpanKind) ptrace.SpanKind {
	switch k {
	case trace.SpanKindInternal:
		return ptrace.SpanKindInternal
	case trace.SpanKindServer:
		return ptrace.SpanKindServer
	case trace.SpanKindClient:
		return ptrace.SpanKindClient
	case trace.SpanKindProducer:
		return ptrace.SpanKindProducer
	case trace.SpanKindConsumer:
		return ptrace.SpanKindConsumer
	}
	return ptrace.SpanKindUnspecified
}

func putAttrs(m pcommon.Map, kvs []attribute.KeyValue) {
	m.EnsureCapacity(len(kvs))
	for _, kv := range kvs {
		putValue(m.PutEmpty(string(kv.Key)), kv.Value)
	}
}

func putValue(v pcommon.Value, a attribute.Value) {
	switch a.Type() {
	case attribute.BOOL:
		v.SetBool(a.AsBool())
	case attribute.INT64:
		v.SetInt(a.AsInt64())
	case attribute.FLOAT64:
		v.SetDouble(a.AsFloat64())
	case attribute.STRING:
		v.SetStr(a.AsString())
	case attribute.BOOLSLICE:
		s := v.SetEmptySlice()
		for _, x := range a.AsBoolSlice() {
			s.AppendEmpty().SetBool(x)
		}
	case attribute.INT64SLICE:
		s := v.SetEmptySlice()
		for _, x := range a.AsInt64Slice() {
			s.AppendEmpty().SetInt(x)
		}
	case attribute.FLOAT64SLICE:
		s := v.SetEmptySlice()
		for _, x := range a.AsFloat64Slice() {
			s.AppendEmpty().SetDouble(x)
		}
	case attribute.STRINGSLICE:
		s := v.SetEmptySlice()
		for _, x := range a.AsStringSlice() {
			s.AppendEmpty().SetStr(x)
		}
	default:
		v.SetStr(a.String())
	}
}
