package ingest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// otlpJSONDecoder reads OTLP JSON: one ExportTraceServiceRequest per line
// (the Collector file exporter's layout), or, when the first line is not a
// whole JSON value, one or more pretty-printed requests decoded one top-level
// value at a time.
type otlpJSONDecoder struct {
	br   *bufio.Reader
	k    *sink
	um   ptrace.JSONUnmarshaler
	line int   // number of the last line read
	off  int64 // byte offset of the next line
	buf  []byte

	doc     *json.Decoder // document mode, once chosen
	eof     bool
	content bool // a non-blank line was seen
}

func newOTLPJSONDecoder(br *bufio.Reader, k *sink) *otlpJSONDecoder {
	return &otlpJSONDecoder{br: br, k: k}
}

// readLine returns the next line, its newline included, or io.EOF. The
// slice is valid until the next call.
func (d *otlpJSONDecoder) readLine() ([]byte, error) {
	if d.eof {
		return nil, io.EOF
	}
	d.buf = d.buf[:0]
	for {
		chunk, err := d.br.ReadSlice('\n')
		d.buf = append(d.buf, chunk...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == io.EOF {
			d.eof = true
			if len(d.buf) == 0 {
				return nil, io.EOF
			}
			break
		}
		if err != nil {
			return nil, err
		}
		break
	}
	d.line++
	d.off += int64(len(d.buf))
	return d.buf, nil
}

func (d *otlpJSONDecoder) decode() error {
	if d.doc != nil {
		return d.decodeDocValue()
	}
	for {
		start := d.off
		line, err := d.readLine()
		if err == io.EOF {
			return io.EOF
		}
		if err != nil {
			d.k.damagef(DamageTruncated, "%s: byte %d: %v", d.k.file, start, err)
			return io.EOF
		}
		text := bytes.TrimSpace(line)
		if len(text) == 0 {
			continue
		}
		td, uerr := d.um.UnmarshalTraces(text)
		if uerr == nil {
			d.content = true
			convertTraces(d.k, td)
			return nil
		}
		first := !d.content
		d.content = true
		if !json.Valid(text) {
			if first {
				// Not a line-per-request file: decode JSON values across lines.
				rest := io.MultiReader(bytes.NewReader(append([]byte(nil), line...)), d.br)
				d.doc = json.NewDecoder(rest)
				d.off = start
				return d.decodeDocValue()
			}
			if d.eof {
				d.k.damagef(DamageTruncated, "%s: line %d: byte %d: input ends inside a JSON value", d.k.file, d.line, start)
				return io.EOF
			}
		}
		d.k.damagef(DamageUnparseable, "%s: line %d: %v", d.k.file, d.line, oneLine(uerr))
	}
}

// decodeDocValue decodes the next top-level JSON value of a document.
func (d *otlpJSONDecoder) decodeDocValue() error {
	var raw json.RawMessage
	start := d.off + d.doc.InputOffset()
	if err := d.doc.Decode(&raw); err != nil {
		if err == io.EOF {
			return io.EOF
		}
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			d.k.damagef(DamageUnparseable, "%s: byte %d: %v", d.k.file, d.off+max(syn.Offset-1, 0), err)
		} else {
			d.k.damagef(DamageTruncated, "%s: byte %d: input ends inside a JSON value starting here", d.k.file, start)
		}
		return io.EOF
	}
	td, err := d.um.UnmarshalTraces(raw)
	if err != nil {
		d.k.damagef(DamageUnparseable, "%s: byte %d: %v", d.k.file, start, oneLine(err))
		return nil
	}
	convertTraces(d.k, td)
	return nil
}

// oneLine keeps error messages on one line.
func oneLine(err error) string {
	s := err.Error()
	if i := bytes.IndexAny([]byte(s), "\r\n"); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// convertTraces turns the spans of a decoded request into Spans.
func convertTraces(sk *sink, td ptrace.Traces) {
	a := sk.attrs
	var res Span
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		res = Span{}
		var rst spanState
		rs.Resource().Attributes().Range(func(key string, v pcommon.Value) bool {
			k, ix := a.classify(key)
			if k != keyNone && isResourceKey(k) {
				a.apply(&res, &rst, k, pdataValue(v))
			}
			if ix >= 0 {
				a.keep(&res, ix, pdataValue(v))
			}
			return true
		})
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			spans := sss.At(j).Spans()
			for n := 0; n < spans.Len(); n++ {
				convertSpan(sk, spans.At(n), &res)
			}
		}
	}
}

func convertSpan(sk *sink, ps ptrace.Span, res *Span) {
	a := sk.attrs
	sp := sk.newSpan()
	sp.TraceID = TraceID(ps.TraceID())
	sp.SpanID = SpanID(ps.SpanID())
	sp.ParentID = SpanID(ps.ParentSpanID())
	sp.Name = a.in.str(ps.Name())
	sp.Kind = otlpKind(int32(ps.Kind()))
	sp.Start = clampTime(uint64(ps.StartTimestamp()))
	sp.End = clampTime(uint64(ps.EndTimestamp()))
	sp.Status = otlpStatus(int32(ps.Status().Code()))
	if ts := ps.TraceState().AsRaw(); ts != "" {
		sp.Sampling.Probability = traceStateSampling(ts)
	}
	sp.setResource(res)
	var st spanState
	ps.Attributes().Range(func(key string, v pcommon.Value) bool {
		k, ix := a.classify(key)
		if k != keyNone && !isResourceKey(k) && !isTagKey(k) {
			a.apply(sp, &st, k, pdataValue(v))
		}
		if ix >= 0 {
			a.keep(sp, ix, pdataValue(v))
		}
		return true
	})
	for _, e := range res.Extra {
		if _, ok := sp.Lookup(e.Key); !ok {
			a.keep(sp, a.extraIx[e.Key], value{s: e.Value})
		}
	}
	if links := ps.Links(); links.Len() > 0 {
		for i := 0; i < links.Len(); i++ {
			l := Link{TraceID: TraceID(links.At(i).TraceID()), SpanID: SpanID(links.At(i).SpanID())}
			if !l.TraceID.IsZero() && !l.SpanID.IsZero() {
				sp.Links = append(sp.Links, l)
			}
		}
	}
	sk.push(sp, &st)
}

// pdataValue converts a pdata attribute value.
func pdataValue(v pcommon.Value) value {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return value{kind: valString, s: v.Str()}
	case pcommon.ValueTypeInt:
		return value{kind: valInt, i: v.Int()}
	case pcommon.ValueTypeDouble:
		return value{kind: valDouble, f: v.Double()}
	case pcommon.ValueTypeBool:
		return value{kind: valBool, b: v.Bool()}
	}
	return value{kind: valOther}
}

// isResourceKey reports keys read from resource attributes (and Jaeger
// process tags) rather than span attributes.
func isResourceKey(k attrKey) bool {
	switch k {
	case keyServiceName, keyHostName, keyHostnameTag, keyIP, keyInstanceID, keyPodName,
		keyLanguage, keyRuntimeName, keyPID, keyJaegerVersion:
		return true
	}
	return false
}

// isTagKey reports keys that only Jaeger and Zipkin tags carry meaning in.
func isTagKey(k attrKey) bool {
	return k == keySpanKind || k == keyStatusCode || k == keyError
}

// otlpKind maps OTLP SpanKind numbers.
func otlpKind(k int32) Kind {
	switch k {
	case 2:
		return KindServer
	case 3:
		return KindClient
	case 4:
		return KindProducer
	case 5:
		return KindConsumer
	}
	return KindInternal
}

// otlpStatus maps OTLP status code numbers.
func otlpStatus(c int32) Status {
	switch c {
	case 1:
		return StatusOK
	case 2:
		return StatusError
	}
	return StatusUnset
}

// clampTime converts unsigned nanoseconds, treating values past int64 as
// missing.
func clampTime(t uint64) int64 {
	if t > 1<<63-1 {
		return 0
	}
	return int64(t)
}
