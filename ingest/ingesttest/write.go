package ingesttest

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"io"
	"strconv"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/perfcast/perfcast/ingest"
)

// groupByTrace splits spans into runs of one trace each, keeping order.
func groupByTrace(spans []*ingest.Span) [][]*ingest.Span {
	var out [][]*ingest.Span
	index := map[ingest.TraceID]int{}
	for _, s := range spans {
		i, ok := index[s.TraceID]
		if !ok {
			i = len(out)
			index[s.TraceID] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], s)
	}
	return out
}

type resourceKey struct{ service, host, instance, pod string }

func resOf(s *ingest.Span) resourceKey { return resourceKey{s.Service, s.Host, s.Instance, s.Pod} }

// floatText is how doubles are written as text tags.
func floatText(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// pdataTraces builds one request holding spans, one ResourceSpans per resource.
func pdataTraces(spans []*ingest.Span) ptrace.Traces {
	td := ptrace.NewTraces()
	byRes := map[resourceKey]ptrace.SpanSlice{}
	for _, s := range spans {
		ss, ok := byRes[resOf(s)]
		if !ok {
			rs := td.ResourceSpans().AppendEmpty()
			attrs := rs.Resource().Attributes()
			attrs.PutStr("service.name", s.Service)
			if s.Host != "" {
				attrs.PutStr("host.name", s.Host)
			}
			if s.Instance != "" {
				attrs.PutStr("service.instance.id", s.Instance)
			}
			if s.Pod != "" {
				attrs.PutStr("k8s.pod.name", s.Pod)
			}
			sc := rs.ScopeSpans().AppendEmpty()
			sc.Scope().SetName("perfcast-test")
			ss = sc.Spans()
			byRes[resOf(s)] = ss
		}
		ps := ss.AppendEmpty()
		ps.SetTraceID(pcommon.TraceID(s.TraceID))
		ps.SetSpanID(pcommon.SpanID(s.SpanID))
		ps.SetParentSpanID(pcommon.SpanID(s.ParentID))
		ps.SetName(s.Name)
		ps.SetKind(ptrace.SpanKind([]int32{1, 2, 3, 4, 5}[s.Kind]))
		ps.SetStartTimestamp(pcommon.Timestamp(s.Start))
		ps.SetEndTimestamp(pcommon.Timestamp(s.End))
		ps.Status().SetCode(ptrace.StatusCode(s.Status))
		a := ps.Attributes()
		putStr := func(k, v string) {
			if v != "" {
				a.PutStr(k, v)
			}
		}
		putStr("http.route", s.HTTPRoute)
		putStr("http.request.method", s.HTTPMethod)
		putStr("url.path", s.URLPath)
		putStr("db.system", s.DBSystem)
		putStr("server.address", s.ServerAddress)
		putStr("peer.service", s.PeerService)
		if s.HasCPUTime() {
			a.PutDouble("perfcast.cpu.time", s.CPUTime)
		}
		for _, e := range s.Extra {
			if i, err := strconv.ParseInt(e.Value, 10, 64); err == nil {
				a.PutInt(e.Key, i)
			} else {
				a.PutStr(e.Key, e.Value)
			}
		}
		for _, l := range s.Links {
			pl := ps.Links().AppendEmpty()
			pl.SetTraceID(pcommon.TraceID(l.TraceID))
			pl.SetSpanID(pcommon.SpanID(l.SpanID))
		}
	}
	return td
}

// WriteOTLPJSON writes spans as OTLP JSON, one ExportTraceServiceRequest per
// line holding up to perLine traces, as the Collector's file exporter does.
func WriteOTLPJSON(w io.Writer, spans []*ingest.Span, perLine int) error {
	var m ptrace.JSONMarshaler
	groups := groupByTrace(spans)
	for i := 0; i < len(groups); i += perLine {
		var batch []*ingest.Span
		for _, g := range groups[i:min(i+perLine, len(groups))] {
			batch = append(batch, g...)
		}
		b, err := m.MarshalTraces(pdataTraces(batch))
		if err != nil {
			return err
		}
		if _, err := w.Write(append(b, '\n')); err != nil {
			return err
		}
	}
	return nil
}

// Framing selects how WriteOTLPProto lays out requests.
type Framing int

// Protobuf framings.
const (
	Single Framing = iota // one request for all spans
	Varint                // one request per trace, each after its varint length
	Uint32                // one request per trace, each after a 4-byte big-endian length
)

// ProtoRequest returns spans as one ExportTraceServiceRequest in protobuf.
func ProtoRequest(spans []*ingest.Span) []byte {
	td := &tracepb.TracesData{}
	byRes := map[resourceKey]*tracepb.ScopeSpans{}
	str := func(k, v string) *commonpb.KeyValue {
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
	}
	for _, s := range spans {
		ss, ok := byRes[resOf(s)]
		if !ok {
			res := &resourcepb.Resource{Attributes: []*commonpb.KeyValue{str("service.name", s.Service)}}
			if s.Host != "" {
				res.Attributes = append(res.Attributes, str("host.name", s.Host))
			}
			if s.Instance != "" {
				res.Attributes = append(res.Attributes, str("service.instance.id", s.Instance))
			}
			if s.Pod != "" {
				res.Attributes = append(res.Attributes, str("k8s.pod.name", s.Pod))
			}
			ss = &tracepb.ScopeSpans{}
			td.ResourceSpans = append(td.ResourceSpans, &tracepb.ResourceSpans{Resource: res, ScopeSpans: []*tracepb.ScopeSpans{ss}})
			byRes[resOf(s)] = ss
		}
		ps := &tracepb.Span{
			TraceId: s.TraceID[:], SpanId: s.SpanID[:], Name: s.Name,
			Kind:              tracepb.Span_SpanKind([]int32{1, 2, 3, 4, 5}[s.Kind]),
			StartTimeUnixNano: uint64(s.Start), EndTimeUnixNano: uint64(s.End),
			Status: &tracepb.Status{Code: tracepb.Status_StatusCode(s.Status)},
		}
		if !s.ParentID.IsZero() {
			ps.ParentSpanId = s.ParentID[:]
		}
		add := func(k, v string) {
			if v != "" {
				ps.Attributes = append(ps.Attributes, str(k, v))
			}
		}
		add("http.route", s.HTTPRoute)
		add("http.request.method", s.HTTPMethod)
		add("url.path", s.URLPath)
		add("db.system", s.DBSystem)
		add("server.address", s.ServerAddress)
		add("peer.service", s.PeerService)
		if s.HasCPUTime() {
			ps.Attributes = append(ps.Attributes, &commonpb.KeyValue{Key: "perfcast.cpu.time",
				Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: s.CPUTime}}})
		}
		for _, e := range s.Extra {
			if i, err := strconv.ParseInt(e.Value, 10, 64); err == nil {
				ps.Attributes = append(ps.Attributes, &commonpb.KeyValue{Key: e.Key,
					Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: i}}})
			} else {
				add(e.Key, e.Value)
			}
		}
		for _, l := range s.Links {
			ps.Links = append(ps.Links, &tracepb.Span_Link{TraceId: l.TraceID[:], SpanId: l.SpanID[:]})
		}
		ss.Spans = append(ss.Spans, ps)
	}
	b, err := proto.Marshal(td)
	if err != nil {
		panic(err) // a well-formed message always marshals
	}
	return b
}

// WriteOTLPProto writes spans as OTLP protobuf in the given framing.
func WriteOTLPProto(w io.Writer, spans []*ingest.Span, f Framing) error {
	if f == Single {
		_, err := w.Write(ProtoRequest(spans))
		return err
	}
	for _, g := range groupByTrace(spans) {
		b := ProtoRequest(g)
		var hdr []byte
		if f == Varint {
			hdr = protowire.AppendVarint(nil, uint64(len(b)))
		} else {
			hdr = binary.BigEndian.AppendUint32(nil, uint32(len(b)))
		}
		if _, err := w.Write(append(hdr, b...)); err != nil {
			return err
		}
	}
	return nil
}

type zipkinEndpoint struct {
	ServiceName string `json:"serviceName,omitempty"`
	IPv4        string `json:"ipv4,omitempty"`
}

type zipkinSpan struct {
	TraceID       string            `json:"traceId"`
	ID            string            `json:"id"`
	ParentID      string            `json:"parentId,omitempty"`
	Name          string            `json:"name,omitempty"`
	Kind          string            `json:"kind,omitempty"`
	Timestamp     int64             `json:"timestamp"`
	Duration      int64             `json:"duration"`
	LocalEndpoint *zipkinEndpoint   `json:"localEndpoint,omitempty"`
	Tags          map[string]string `json:"tags,omitempty"`
	Shared        bool              `json:"shared,omitempty"`
}

func tagMap(s *ingest.Span) map[string]string {
	t := map[string]string{}
	put := func(k, v string) {
		if v != "" {
			t[k] = v
		}
	}
	put("host.name", s.Host)
	put("service.instance.id", s.Instance)
	put("k8s.pod.name", s.Pod)
	put("http.route", s.HTTPRoute)
	put("http.method", s.HTTPMethod)
	put("http.target", s.URLPath)
	put("db.system", s.DBSystem)
	put("server.address", s.ServerAddress)
	put("peer.service", s.PeerService)
	if s.HasCPUTime() {
		t["perfcast.cpu.time"] = floatText(s.CPUTime)
	}
	for _, e := range s.Extra {
		t[e.Key] = e.Value
	}
	switch s.Status {
	case ingest.StatusError:
		t["error"] = "true"
	case ingest.StatusOK:
		t["otel.status_code"] = "OK"
	}
	return t
}

// WriteZipkin writes spans as a Zipkin v2 JSON array (links are not carried).
func WriteZipkin(w io.Writer, spans []*ingest.Span) error {
	out := make([]zipkinSpan, 0, len(spans))
	for _, s := range spans {
		z := zipkinSpan{
			TraceID: hex.EncodeToString(s.TraceID[:]), ID: hex.EncodeToString(s.SpanID[:]),
			Name: s.Name, Timestamp: s.Start / 1000, Duration: (s.End - s.Start) / 1000,
			LocalEndpoint: &zipkinEndpoint{ServiceName: s.Service}, Tags: tagMap(s), Shared: s.Shared,
		}
		if !s.ParentID.IsZero() {
			z.ParentID = hex.EncodeToString(s.ParentID[:])
		}
		if s.Kind != ingest.KindInternal {
			z.Kind = []string{"", "SERVER", "CLIENT", "PRODUCER", "CONSUMER"}[s.Kind]
		}
		out = append(out, z)
	}
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	if err := enc.Encode(out); err != nil {
		return err
	}
	return bw.Flush()
}

type jaegerTag struct {
	Key   string `json:"key"`
	Type  string `json:"type"`
	Value any    `json:"value"`
}

type jaegerRef struct {
	RefType string `json:"refType"`
	TraceID string `json:"traceID"`
	SpanID  string `json:"spanID"`
}

type jaegerSpan struct {
	TraceID       string      `json:"traceID"`
	SpanID        string      `json:"spanID"`
	OperationName string      `json:"operationName"`
	References    []jaegerRef `json:"references"`
	StartTime     int64       `json:"startTime"`
	Duration      int64       `json:"duration"`
	Tags          []jaegerTag `json:"tags"`
	ProcessID     string      `json:"processID"`
}

type jaegerProcess struct {
	ServiceName string      `json:"serviceName"`
	Tags        []jaegerTag `json:"tags"`
}

type jaegerTrace struct {
	TraceID   string                   `json:"traceID"`
	Spans     []jaegerSpan             `json:"spans"`
	Processes map[string]jaegerProcess `json:"processes"`
}

// WriteJaeger writes spans as the Jaeger UI's JSON download, one trace per
// element of "data". Parents are CHILD_OF references (FOLLOWS_FROM when the
// span says so), links FOLLOWS_FROM references after it.
func WriteJaeger(w io.Writer, spans []*ingest.Span) error {
	var doc struct {
		Data []jaegerTrace `json:"data"`
	}
	for _, g := range groupByTrace(spans) {
		t := jaegerTrace{TraceID: hex.EncodeToString(g[0].TraceID[:]), Processes: map[string]jaegerProcess{}}
		procs := map[resourceKey]string{}
		for _, s := range g {
			pid, ok := procs[resOf(s)]
			if !ok {
				pid = "p" + strconv.Itoa(len(procs)+1)
				procs[resOf(s)] = pid
				p := jaegerProcess{ServiceName: s.Service}
				if s.Host != "" {
					p.Tags = append(p.Tags, jaegerTag{"hostname", "string", s.Host})
				}
				if s.Instance != "" {
					p.Tags = append(p.Tags, jaegerTag{"service.instance.id", "string", s.Instance})
				}
				if s.Pod != "" {
					p.Tags = append(p.Tags, jaegerTag{"k8s.pod.name", "string", s.Pod})
				}
				t.Processes[pid] = p
			}
			js := jaegerSpan{TraceID: t.TraceID, SpanID: hex.EncodeToString(s.SpanID[:]), OperationName: s.Name,
				StartTime: s.Start / 1000, Duration: (s.End - s.Start) / 1000, ProcessID: pid, References: []jaegerRef{}}
			if !s.ParentID.IsZero() {
				ref := jaegerRef{"CHILD_OF", t.TraceID, hex.EncodeToString(s.ParentID[:])}
				if s.FollowsFrom {
					ref.RefType = "FOLLOWS_FROM"
				}
				js.References = append(js.References, ref)
			}
			for _, l := range s.Links {
				js.References = append(js.References, jaegerRef{"FOLLOWS_FROM", hex.EncodeToString(l.TraceID[:]), hex.EncodeToString(l.SpanID[:])})
			}
			if s.Kind != ingest.KindInternal {
				js.Tags = append(js.Tags, jaegerTag{"span.kind", "string", s.Kind.String()})
			}
			for k, v := range tagMap(s) {
				if k == "host.name" || k == "service.instance.id" {
					continue
				}
				tag := jaegerTag{k, "string", v}
				switch {
				case k == "perfcast.cpu.time":
					tag.Type, tag.Value = "float64", s.CPUTime
				case k == "error":
					tag.Type, tag.Value = "bool", true
				}
				if i, err := strconv.ParseInt(v, 10, 64); err == nil && k != "error" {
					tag.Type, tag.Value = "int64", i
				}
				js.Tags = append(js.Tags, tag)
			}
			sortTags(js.Tags)
			t.Spans = append(t.Spans, js)
		}
		doc.Data = append(doc.Data, t)
	}
	bw := bufio.NewWriter(w)
	if err := json.NewEncoder(bw).Encode(doc); err != nil {
		return err
	}
	return bw.Flush()
}

func sortTags(t []jaegerTag) {
	for i := 1; i < len(t); i++ {
		for j := i; j > 0 && t[j].Key < t[j-1].Key; j-- {
			t[j], t[j-1] = t[j-1], t[j]
		}
	}
}
