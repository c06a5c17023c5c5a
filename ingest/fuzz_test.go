package ingest

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

var updateCorpus = flag.Bool("update-corpus", false, "rewrite the seed corpora in testdata/fuzz")

// fuzzExtras are kept attributes during fuzzing, to exercise that path.
var fuzzExtras = []string{"session.id", "http.request.body.size", "k"}

// drain reads every span of data and checks the invariants every span
// handed out must meet.
func drain(t *testing.T, data []byte) {
	r, err := Open([]string{"-"}, Options{Stdin: bytes.NewReader(data), Attributes: fuzzExtras})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for n := 0; ; n++ {
		s, err := r.Next(context.Background())
		if err == io.EOF {
			if n == 0 {
				t.Fatal("io.EOF without a span and without an error")
			}
			break
		}
		if err != nil {
			if !strings.HasPrefix(err.Error(), "<stdin>: ") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error not of one line naming the input: %q", err)
			}
			break
		}
		if s.TraceID.IsZero() || s.SpanID.IsZero() || s.Start <= 0 || s.End < s.Start {
			t.Fatalf("bad span handed out: %+v", s)
		}
		if s.HasCPUTime() && (s.CPUTime < 0 || math.IsInf(s.CPUTime, 0)) {
			t.Fatalf("bad CPU time %v", s.CPUTime)
		}
	}
	st := r.Stats()
	for _, k := range st.Damage.Kinds() {
		for _, m := range st.Damage.Samples[k] {
			if strings.Contains(m, "\n") {
				t.Fatalf("damage message spans lines: %q", m)
			}
		}
	}
}

// addSeeds adds the seed files of testdata/fuzz/name through f.Add as well,
// so that they run even where the corpus directory is missing.
func addFiles(f *testing.F, paths ...string) {
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

func FuzzDetect(f *testing.F) {
	addFiles(f, "testdata/otlp_lines.jsonl", "testdata/zipkin.json", "testdata/otlp_single.pb")
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := Detect(bytes.NewReader(data)); err != nil && strings.Contains(err.Error(), "\n") {
			t.Fatalf("error spans lines: %q", err)
		}
		drain(t, data)
	})
}

func FuzzOTLPJSON(f *testing.F) {
	addFiles(f, "testdata/otlp_lines.jsonl", "testdata/otlp_pretty.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		drain(t, data)
	})
}

func FuzzZipkin(f *testing.F) {
	addFiles(f, "testdata/zipkin.json", "testdata/zipkin_traces.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		drain(t, data)
	})
}

func FuzzJaeger(f *testing.F) {
	addFiles(f, "testdata/jaeger_ui.json", "testdata/jaeger_query.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		drain(t, data)
	})
}

// FuzzOTLPProto reads data as a file, and also decodes it as one request
// both with the direct wire decoder and through pdata's full unmarshal:
// whenever pdata and the reference protobuf library both accept the request
// (pdata alone tolerates some malformed groups), both must yield the same
// spans.
func FuzzOTLPProto(f *testing.F) {
	addFiles(f, "testdata/otlp_single.pb")
	f.Fuzz(func(t *testing.T, data []byte) {
		drain(t, data)
		td, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(data)
		if err != nil || proto.Unmarshal(data, &tracepb.TracesData{}) != nil {
			return
		}
		want := decodeWith(func(k *sink) error { convertTraces(k, td); return nil })
		got := decodeWith(func(k *sink) error { w := wireDecoder{k: k}; return w.request(data) })
		if got != want {
			t.Fatalf("wire decoder differs from pdata:\n got: %s\nwant: %s", got, want)
		}
	})
}

// decodeWith runs a decoding function into a fresh sink and renders what it
// produced: spans, then damage counts.
func decodeWith(run func(*sink) error) string {
	in := newAttrSet(fuzzExtras)
	k := &sink{file: "f", attrs: in, stats: &FileStats{}, alloc: func() *Span { return &Span{CPUTime: math.NaN()} }}
	if err := run(k); err != nil {
		return "error: " + err.Error()
	}
	var b strings.Builder
	for _, s := range k.out {
		fmt.Fprintf(&b, "%+v\n", *s)
	}
	fmt.Fprintf(&b, "%v", k.stats.Damage.Counts)
	return b.String()
}

// TestWriteCorpus writes the seed corpora of the fuzz targets, in the
// corpus file format of go test, when run with -update-corpus.
func TestWriteCorpus(t *testing.T) {
	if !*updateCorpus {
		t.Skip("run with -update-corpus to rewrite testdata/fuzz")
	}
	read := func(p string) []byte {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	lines := read("testdata/otlp_lines.jsonl")
	seeds := map[string][][]byte{
		"FuzzOTLPJSON": {
			lines, read("testdata/otlp_pretty.json"),
			lines[:len(lines)/2],
			[]byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","kind":"SPAN_KIND_SERVER","startTimeUnixNano":"1","endTimeUnixNano":"2","status":{"code":"STATUS_CODE_OK"}}]}]}]}`),
			[]byte(`{"resource_spans":[]}` + "\n" + `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"AAAA","spanId":"00"}]}]}]}`),
		},
		"FuzzOTLPProto": {
			read("testdata/otlp_single.pb"), []byte{0x0a, 0x02, 0x12, 0x00}, []byte{0x05, 0x0a, 0x03, 0x12, 0x01, 0x12},
			[]byte{0x00, 0x00, 0x00, 0x04, 0x0a, 0x02, 0x12, 0x00}, []byte{0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f},
		},
		"FuzzZipkin": {
			read("testdata/zipkin.json"), read("testdata/zipkin_traces.json"), []byte(`[]`), []byte(`[[],[{"traceId":"1","id":"2","timestamp":1,"duration":1}]]`),
			[]byte(`[{"traceId":"1","id":"2","timestamp":1.5e3,"duration":"7","shared":true,"kind":"CONSUMER"}, 3, "x"]`),
		},
		"FuzzJaeger": {
			read("testdata/jaeger_ui.json"), read("testdata/jaeger_query.json"), []byte(`{"data":null}`),
			[]byte(`{"traceID":"1","spans":[{"spanID":"2","startTime":1,"duration":1,"references":[{"refType":"FOLLOWS_FROM","spanID":"1"}]}]}`),
			[]byte(`{"data":[{"spans":[{"traceID":"1","spanID":"2","startTime":1,"duration":1,"processID":"p","tags":[{"key":"perfcast.cpu.time","type":"float64","value":"1e400"}]}],"processes":{"p":{"serviceName":"s","tags":[{"key":"ip","value":1}]}}}]}`),
		},
		"FuzzDetect": {
			lines, read("testdata/otlp_single.pb"), read("testdata/otlp_varint.pb.gz"), read("testdata/zipkin.json"), read("testdata/jaeger_ui.json"),
			[]byte("\xef\xbb\xbf  {\"data\": []}"), []byte("{\"resourceMetrics\":[]}"), []byte("plain text"), []byte{0x1f, 0x8b},
		},
	}
	for name, list := range seeds {
		dir := filepath.Join("testdata", "fuzz", name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for i, b := range list {
			body := "go test fuzz v1\n[]byte(" + strconv.Quote(string(b)) + ")\n"
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed%02d", i)), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}
