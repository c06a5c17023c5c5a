package ingest

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

func TestTraceStateSampling(t *testing.T) {
	cases := []struct {
		ts   string
		want float64
	}{
		{"", 0},
		{"ot=th:0", 1},
		{"ot=th:8", 0.5},
		{"ot=th:c", 0.25},
		{"ot=th:e666666666666", 0.1},
		{"ot=th:fd70a3d70a3d71", 0.01},
		{"ot=rv:0123456789abcd;th:8", 0.5},
		{"vendor=x:1, ot=th:c ,other=y", 0.25},
		{"ot=p:3", 0.125},
		{"ot=p:0", 1},
		{"ot=rv:0123456789abcd", 0},
		{"ot=th:", 0},
		{"ot=th:0123456789abcde", 0}, // 15 digits
		{"ot=th:xyz", 0},
		{"ot=p:63", 0},
		{"ot=p:-1", 0},
		{"vendor=th:8", 0},
	}
	for _, c := range cases {
		if got := traceStateSampling(c.ts); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("traceStateSampling(%q) = %v, want %v", c.ts, got, c.want)
		}
	}
}

func TestSamplingTraceStateRoundTrip(t *testing.T) {
	for _, p := range []float64{0.5, 0.25, 0.1, 0.01, 1.0 / 3, 1e-6} {
		ts := SamplingTraceState(p)
		if got := traceStateSampling(ts); math.Abs(got-p) > 1e-14 {
			t.Errorf("p %v: trace state %q reads back as %v", p, ts, got)
		}
	}
	if ts := SamplingTraceState(0.5); ts != "ot=th:8" {
		t.Errorf("SamplingTraceState(0.5) = %q, want ot=th:8", ts)
	}
	if ts := SamplingTraceState(1); ts != "ot=th:0" {
		t.Errorf("SamplingTraceState(1) = %q, want ot=th:0", ts)
	}
}

func TestTraceRandomness(t *testing.T) {
	id, err := ParseTraceID("ffffffffffffffffff00000000000001")
	if err != nil {
		t.Fatal(err)
	}
	if r := TraceRandomness(id); r != 1 {
		t.Errorf("randomness %x, want 1", r)
	}
	id[9] = 0x80
	if r := TraceRandomness(id); r != 1<<55|1 {
		t.Errorf("randomness %x, want 1<<55|1", r)
	}
}

func TestSamplingRead(t *testing.T) {
	// OTLP JSON and protobuf carry the probability in the trace state.
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "svc")
	ps := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	ps.SetTraceID([16]byte{1})
	ps.SetSpanID([8]byte{1})
	ps.SetStartTimestamp(1e18)
	ps.SetEndTimestamp(1e18 + 1e6)
	ps.TraceState().FromRaw("ot=th:c")
	var jm ptrace.JSONMarshaler
	js, err := jm.MarshalTraces(td)
	if err != nil {
		t.Fatal(err)
	}
	var pm ptrace.ProtoMarshaler
	pb, err := pm.MarshalTraces(td)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := map[string][]byte{
		"otlp.json": js,
		"otlp.pb":   pb,
		// Jaeger's SDKs tag root spans with their sampler.
		"jaeger.json": []byte(`{"data":[{"traceID":"01","spans":[
			{"traceID":"01","spanID":"01","operationName":"a","startTime":1000000,"duration":5,"processID":"p1",
			 "tags":[{"key":"sampler.type","type":"string","value":"probabilistic"},{"key":"sampler.param","type":"float64","value":0.25}]},
			{"traceID":"01","spanID":"02","operationName":"b","startTime":1000000,"duration":5,"processID":"p1",
			 "tags":[{"key":"sampler.type","type":"string","value":"ratelimiting"},{"key":"sampler.param","type":"float64","value":2}]},
			{"traceID":"01","spanID":"03","operationName":"c","startTime":1000000,"duration":5,"processID":"p1",
			 "tags":[{"key":"sampler.type","type":"string","value":"const"},{"key":"sampler.param","type":"bool","value":true}]},
			{"traceID":"01","spanID":"04","operationName":"d","startTime":1000000,"duration":5,"processID":"p1",
			 "tags":[{"key":"sampler.type","type":"string","value":"probabilistic"},{"key":"sampler.param","type":"float64","value":1.5}]}],
			"processes":{"p1":{"serviceName":"svc","tags":[]}}}]}`),
	}
	want := map[string][]Sampling{
		"otlp.json":   {{Probability: 0.25}},
		"otlp.pb":     {{Probability: 0.25}},
		"jaeger.json": {{Probability: 0.25}, {RateLimited: true}, {Probability: 1}, {}},
	}
	for name, data := range files {
		path := filepath.Join(dir, name)
		if name == "otlp.pb" {
			data = append([]byte{0, 0, 0, byte(len(data))}, data...)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		spans := readAll(t, path)
		if len(spans) != len(want[name]) {
			t.Fatalf("%s: %d spans, want %d", name, len(spans), len(want[name]))
		}
		for i, s := range spans {
			if s.Sampling != want[name][i] {
				t.Errorf("%s: span %s: sampling %+v, want %+v", name, s.Name, s.Sampling, want[name][i])
			}
		}
	}
}
