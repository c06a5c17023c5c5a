package ingest

import (
	"bytes"
	"fmt"
	"math"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// RequestStats is what DecodeRequest made of one request.
type RequestStats struct {
	// Spans counts the spans decoded and kept.
	Spans int64
	// Damage holds the spans rejected (no ids, no times) and, for a body
	// that does not decode, why.
	Damage Damage
}

// Rejected is the number of spans in the request that were not kept:
// those without ids or times, or ending before they start. (A span with a
// known attribute of the wrong type is kept, without that attribute.)
func (s RequestStats) Rejected() int64 {
	return s.Damage.Counts[DamageMissingID] + s.Damage.Counts[DamageMissingTime] + s.Damage.Counts[DamageNegativeDuration]
}

// DecodeRequest decodes the body of one OTLP ExportTraceServiceRequest, as
// a receiver gets it over OTLP/HTTP: protobuf, or JSON (the Protobuf JSON
// mapping OTLP specifies) when format is FormatOTLPJSON. Spans are checked
// as a trace file's are; source names the request in damage messages (a
// client address, say). A body that does not decode keeps none of its
// spans and gives an error that says where it broke, in one line.
// DecodeRequest is safe for concurrent use.
func DecodeRequest(body []byte, format Format, source string, opts Options) ([]*Span, RequestStats, error) {
	k := requestSink(source, opts)
	stats := k.stats
	var err error
	switch format {
	case FormatOTLPProto:
		w := &wireDecoder{k: k}
		if werr := w.request(body); werr != nil {
			err = fmt.Errorf("%s: %w", source, werr)
		}
	case FormatOTLPJSON:
		var um ptrace.JSONUnmarshaler
		td, uerr := um.UnmarshalTraces(bytes.TrimSpace(body))
		if uerr != nil {
			err = fmt.Errorf("%s: %s", source, oneLine(uerr))
		} else {
			convertTraces(k, td)
		}
	default:
		err = fmt.Errorf("%s: %q is not an OTLP request format", source, format)
	}
	if err != nil {
		stats.Damage.Add(DamageUnparseable, err.Error())
		return nil, RequestStats{Damage: stats.Damage}, err
	}
	return k.out, RequestStats{Spans: stats.Spans, Damage: stats.Damage}, nil
}

// ConvertTraces takes the spans of a request already decoded by pdata (as
// an OTLP/gRPC server gets it), checked as DecodeRequest checks them.
func ConvertTraces(td ptrace.Traces, source string, opts Options) ([]*Span, RequestStats) {
	k := requestSink(source, opts)
	convertTraces(k, td)
	return k.out, RequestStats{Spans: k.stats.Spans, Damage: k.stats.Damage}
}

// requestSink is a sink for the spans of one request.
func requestSink(source string, opts Options) *sink {
	var slab []Span
	return &sink{file: source, attrs: newAttrSet(opts.Attributes), stats: &FileStats{}, alloc: func() *Span {
		if len(slab) == 0 {
			slab = make([]Span, slabSize)
		}
		s := &slab[0]
		slab = slab[1:]
		s.CPUTime = math.NaN()
		return s
	}}
}
