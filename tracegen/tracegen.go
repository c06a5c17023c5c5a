// Package tracegen writes the spans a simulated system emits (sim.Record) as
// OpenTelemetry traces: OTLP JSON, one ExportTraceServiceRequest per line as
// the Collector's file exporter writes, or OTLP protobuf, each request after
// its 4-byte big-endian length. Spans are batched by simulated time, as the
// Collector's batch processor does.
//
// Each span carries the resource attributes service.name (the component),
// host.name (the machine: the model's host, numbered when replicated) and
// service.instance.id (the component on that machine); its kind and parent;
// peer.service on client and producer spans; and perfcast.cpu.time on server
// and consumer spans, unless left out.
package tracegen

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strconv"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/perfcast/perfcast/ingest"
	"github.com/perfcast/perfcast/solve/sim"
)

// DefaultBase is the Unix time, in nanoseconds, of simulated time zero:
// 2023-11-14T22:13:20Z.
const DefaultBase int64 = 1_700_000_000_000_000_000

// Defaults of Options.
const (
	DefaultBatchSeconds = 0.2
	DefaultBatchSpans   = 8192
)

// Format is a trace file format tracegen writes.
type Format uint8

// Formats.
const (
	OTLPJSON  Format = iota // one ExportTraceServiceRequest in JSON per line
	OTLPProto               // requests in protobuf, each after its 4-byte big-endian length
)

// String returns the format's name as ParseFormat takes it.
func (f Format) String() string {
	switch f {
	case OTLPJSON:
		return "otlp-json"
	case OTLPProto:
		return "otlp-proto"
	}
	return "format(" + strconv.Itoa(int(f)) + ")"
}

// ParseFormat parses otlp-json or otlp-proto.
func ParseFormat(s string) (Format, error) {
	switch s {
	case "otlp-json":
		return OTLPJSON, nil
	case "otlp-proto":
		return OTLPProto, nil
	}
	return 0, fmt.Errorf("unknown trace format %q (otlp-json or otlp-proto)", s)
}

// Options configure the conversion and the writer. The zero value writes
// OTLP JSON with CPU times from DefaultBase.
type Options struct {
	Format Format
	// NoCPUTime leaves out perfcast.cpu.time, as traces of systems that do
	// not measure it are.
	NoCPUTime bool
	// Base is the Unix time in nanoseconds of simulated time zero; 0 means
	// DefaultBase.
	Base int64
	// Seed varies the trace ids, so that trace sets generated with different
	// seeds can be read together; use the seed of the simulation.
	Seed uint64
	// BatchSeconds and BatchSpans bound a request: it is written when the
	// spans it holds reach BatchSpans or when BatchSeconds of simulated time
	// have passed since its first span ended. Zero means the defaults.
	BatchSeconds float64
	BatchSpans   int
	// Sample, when in (0, 1), keeps each trace with that probability, as
	// an OpenTelemetry probability sampler does (by the trace id's
	// randomness), and writes its threshold in every span's trace state.
	Sample float64
	// Runtimes gives, by component, the runtime that its spans' resources
	// name and the processes that run it on each replica.
	Runtimes map[string]Runtime
}

// Runtime is what runs a component's processes, as the resource of their
// spans says: telemetry.sdk.language, process.runtime.name and
// process.pid. With Processes above one, each replica runs that many, an
// execution's spans in one of them, the one its key picks (sim.Span.Key
// mod Processes: the unit of the model's partitioned resource of that
// many units it waited for, where the model has one), named by
// process.pid alone, without service.instance.id, as SDKs without an
// instance detector name them; with one, the replica's spans keep their
// instance and carry one pid. Anonymous spans name no process at all,
// neither instance nor pid, as Python's SDK writes them by default.
// Workers makes each of the replica's threads a process of its own that
// serves one request at a time, as a pre-forking server's workers do
// (gunicorn's sync workers, PHP-FPM's children): a span's pid is that of
// the thread that ran its operation (sim.Span.Thread), named by pid alone;
// Processes is then not read. Instances makes each process name itself
// by a service.instance.id of its own besides its pid, as SDKs that give
// every process a random instance id do (the Java agent's).
type Runtime struct {
	Language, Name string
	Processes      int
	Anonymous      bool
	Workers        bool
	Instances      bool
}

func (o *Options) base() int64 {
	if o.Base == 0 {
		return DefaultBase
	}
	return o.Base
}

// mix is the SplitMix64 finalizer: a bijection that spreads bits.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// TraceID is the id of trace number n: n in the high half, a hash of the
// seed and n in the low half, so that ids are unique per seed and their
// rightmost seven bytes are random, as W3C trace context asks and
// OpenTelemetry's samplers take them.
func TraceID(seed, n uint64) ingest.TraceID {
	var id ingest.TraceID
	binary.BigEndian.PutUint64(id[:8], n)
	binary.BigEndian.PutUint64(id[8:], mix(mix(seed)^n))
	return id
}

// SpanID is the id of span number n.
func SpanID(n uint64) ingest.SpanID {
	var id ingest.SpanID
	binary.BigEndian.PutUint64(id[:], n)
	return id
}

// Instance is the service.instance.id of a component on one replica.
func Instance(component string, replica int) string {
	return component + "-" + strconv.Itoa(replica+1)
}

// Convert turns a simulated span into the span a reader would yield from
// the written file.
func Convert(s *sim.Span, opts *Options) *ingest.Span {
	base := opts.base()
	out := &ingest.Span{
		TraceID:  TraceID(opts.Seed, s.Trace),
		SpanID:   SpanID(s.ID),
		Start:    base + int64(math.Round(s.Start*1e9)),
		End:      base + int64(math.Round(s.End*1e9)),
		CPUTime:  math.NaN(),
		Name:     s.Operation,
		Service:  s.Component,
		Host:     s.Host,
		Instance: Instance(s.Component, s.Replica),
	}
	if s.Parent != 0 {
		out.ParentID = SpanID(s.Parent)
	}
	switch s.Kind {
	case sim.SpanServer:
		out.Kind = ingest.KindServer
	case sim.SpanClient:
		out.Kind = ingest.KindClient
	case sim.SpanProducer:
		out.Kind = ingest.KindProducer
	case sim.SpanConsumer:
		out.Kind = ingest.KindConsumer
	default:
		out.Kind = ingest.KindInternal
	}
	if (s.Kind == sim.SpanServer || s.Kind == sim.SpanConsumer) && !opts.NoCPUTime {
		out.CPUTime = s.CPU
	}
	if rt, ok := opts.Runtimes[s.Component]; ok {
		out.Process = &ingest.Process{Language: rt.Language, Runtime: rt.Name}
		pid := 1000 * (s.Replica + 1)
		switch {
		case rt.Workers:
			out.Instance = ""
			pid += int(s.Thread)
		case rt.Processes > 1 || rt.Anonymous:
			out.Instance = ""
			pid += int(s.Key % uint32(max(rt.Processes, 1)))
		}
		if !rt.Anonymous {
			out.Process.PID = strconv.Itoa(pid)
			if rt.Instances {
				out.Instance = s.Component + "-" + out.Process.PID
			}
		}
	}
	out.PeerService = s.Peer
	for _, a := range s.Attrs {
		out.Extra = append(out.Extra, ingest.Attr{Key: a.Key, Value: a.Value})
	}
	if s.Error {
		out.Status = ingest.StatusError
	}
	return out
}

// Writer writes spans in batches. It is not safe for concurrent use.
type Writer struct {
	w     io.Writer
	opts  Options
	batch []*ingest.Span
	open  float64 // when the batch's first span ended
	clock float64 // the latest end seen
	err   error
	// spans and traces count what was written (kept, when sampling).
	spans, traces int64
}

// Written returns how many spans and traces (root spans) the writer kept.
func (w *Writer) Written() (spans, traces int64) { return w.spans, w.traces }

// NewWriter returns a writer of spans to w.
func NewWriter(w io.Writer, opts Options) *Writer {
	if !(opts.BatchSeconds > 0) {
		opts.BatchSeconds = DefaultBatchSeconds
	}
	if opts.BatchSpans <= 0 {
		opts.BatchSpans = DefaultBatchSpans
	}
	return &Writer{w: w, opts: opts}
}

// Add adds one span, writing the batch first when it is due.
func (w *Writer) Add(s *sim.Span) error {
	if w.err != nil {
		return w.err
	}
	w.clock = math.Max(w.clock, s.End)
	if len(w.batch) > 0 && (len(w.batch) >= w.opts.BatchSpans || w.clock-w.open >= w.opts.BatchSeconds) {
		if err := w.Flush(); err != nil {
			return err
		}
	}
	if len(w.batch) == 0 {
		w.open = w.clock
	}
	sp := Convert(s, &w.opts)
	if w.opts.Sample > 0 && w.opts.Sample < 1 {
		if ingest.TraceRandomness(sp.TraceID) < ingest.SamplingThreshold(w.opts.Sample) {
			return nil
		}
		sp.Sampling.Probability = w.opts.Sample
	}
	w.spans++
	if s.Parent == 0 {
		w.traces++
	}
	w.batch = append(w.batch, sp)
	return nil
}

// Flush writes the spans added since the last batch as one request.
func (w *Writer) Flush() error {
	if w.err != nil || len(w.batch) == 0 {
		return w.err
	}
	td := Traces(w.batch)
	var b []byte
	var err error
	switch w.opts.Format {
	case OTLPProto:
		var m ptrace.ProtoMarshaler
		if b, err = m.MarshalTraces(td); err == nil {
			b = append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
		}
	default:
		var m ptrace.JSONMarshaler
		if b, err = m.MarshalTraces(td); err == nil {
			b = append(b, '\n')
		}
	}
	if err != nil {
		w.err = fmt.Errorf("encode %d spans as %s: %w", len(w.batch), w.opts.Format, err)
		return w.err
	}
	if _, err := w.w.Write(b); err != nil {
		w.err = err
		return err
	}
	clear(w.batch)
	w.batch = w.batch[:0]
	return nil
}

// Close writes what is left; it does not close the underlying writer.
func (w *Writer) Close() error { return w.Flush() }

// Write writes spans to w in the given options' format.
func Write(w io.Writer, spans []*sim.Span, opts Options) error {
	tw := NewWriter(w, opts)
	for _, s := range spans {
		if err := tw.Add(s); err != nil {
			return err
		}
	}
	return tw.Close()
}

type resourceKey struct {
	service, host, instance string
	process                 ingest.Process
}

// scopeName names the instrumentation scope of generated spans.
const scopeName = "perfcast/tracegen"

// Traces builds one OTLP request of spans: a ResourceSpans per resource in
// order of first appearance, spans in the order given.
func Traces(spans []*ingest.Span) ptrace.Traces {
	td := ptrace.NewTraces()
	byRes := map[resourceKey]ptrace.SpanSlice{}
	for _, s := range spans {
		key := resourceKey{service: s.Service, host: s.Host, instance: s.Instance}
		if p := s.Process; p != nil {
			key.process = *p
		}
		ss, ok := byRes[key]
		if !ok {
			rs := td.ResourceSpans().AppendEmpty()
			a := rs.Resource().Attributes()
			a.PutStr("service.name", s.Service)
			if s.Host != "" {
				a.PutStr("host.name", s.Host)
			}
			if s.Instance != "" {
				a.PutStr("service.instance.id", s.Instance)
			}
			if p := key.process; p.Language != "" {
				a.PutStr("telemetry.sdk.language", p.Language)
			}
			if p := key.process; p.Runtime != "" {
				a.PutStr("process.runtime.name", p.Runtime)
			}
			if pid, err := strconv.ParseInt(key.process.PID, 10, 64); err == nil {
				a.PutInt("process.pid", pid)
			}
			sc := rs.ScopeSpans().AppendEmpty()
			sc.Scope().SetName(scopeName)
			ss = sc.Spans()
			byRes[key] = ss
		}
		ps := ss.AppendEmpty()
		ps.SetTraceID(pcommon.TraceID(s.TraceID))
		ps.SetSpanID(pcommon.SpanID(s.SpanID))
		ps.SetParentSpanID(pcommon.SpanID(s.ParentID))
		ps.SetName(s.Name)
		ps.SetKind(spanKind(s.Kind))
		ps.SetStartTimestamp(pcommon.Timestamp(s.Start))
		ps.SetEndTimestamp(pcommon.Timestamp(s.End))
		if p := s.Sampling.Probability; p > 0 && p < 1 {
			ps.TraceState().FromRaw(ingest.SamplingTraceState(p))
		}
		if s.Status == ingest.StatusError {
			ps.Status().SetCode(ptrace.StatusCodeError)
		}
		a := ps.Attributes()
		if s.PeerService != "" {
			a.PutStr("peer.service", s.PeerService)
		}
		if s.HasCPUTime() {
			a.PutDouble("perfcast.cpu.time", s.CPUTime)
		}
		for _, x := range s.Extra {
			a.PutStr(x.Key, x.Value)
		}
	}
	return td
}

func spanKind(k ingest.Kind) ptrace.SpanKind {
	switch k {
	case ingest.KindServer:
		return ptrace.SpanKindServer
	case ingest.KindClient:
		return ptrace.SpanKindClient
	case ingest.KindProducer:
		return ptrace.SpanKindProducer
	case ingest.KindConsumer:
		return ptrace.SpanKindConsumer
	}
	return ptrace.SpanKindInternal
}
