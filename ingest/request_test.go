package ingest

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// spansOf renders spans for comparison.
func spansOf(spans []*Span) string {
	var b strings.Builder
	for _, s := range spans {
		fmt.Fprintf(&b, "%+v\n", *s)
	}
	return b.String()
}

// readAll reads a trace file through Open.
func readAll(t *testing.T, path string) []*Span {
	t.Helper()
	r, err := Open([]string{path}, Options{Attributes: fuzzExtras})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []*Span
	for {
		s, err := r.Next(context.Background())
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
}

func TestDecodeRequest(t *testing.T) {
	body, err := os.ReadFile("testdata/otlp_single.pb")
	if err != nil {
		t.Fatal(err)
	}
	want := spansOf(readAll(t, "testdata/otlp_single.pb"))
	got, st, err := DecodeRequest(body, FormatOTLPProto, "10.0.0.1:5000", Options{Attributes: fuzzExtras})
	if err != nil || st.Rejected() != 0 || st.Spans != int64(len(got)) {
		t.Fatalf("protobuf: %v, %+v", err, st)
	}
	if s := spansOf(got); s != want {
		t.Errorf("protobuf request:\n%s\nthe file read:\n%s", s, want)
	}
	// The same request as OTLP JSON.
	td, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(body)
	if err != nil {
		t.Fatal(err)
	}
	js, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err = DecodeRequest(js, FormatOTLPJSON, "10.0.0.1:5000", Options{Attributes: fuzzExtras})
	if err != nil {
		t.Fatal(err)
	}
	if s := spansOf(got); s != want {
		t.Errorf("JSON request:\n%s\nthe file read:\n%s", s, want)
	}
}

func TestDecodeRequestRejects(t *testing.T) {
	td := ptrace.NewTraces()
	ss := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	ok := ss.AppendEmpty()
	ok.SetTraceID([16]byte{1})
	ok.SetSpanID([8]byte{1})
	ok.SetStartTimestamp(1e18)
	ok.SetEndTimestamp(1e18 + 1e6)
	noID := ss.AppendEmpty()
	noID.SetStartTimestamp(1e18)
	noID.SetEndTimestamp(1e18 + 1e6)
	body, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	if err != nil {
		t.Fatal(err)
	}
	got, st, err := DecodeRequest(body, FormatOTLPProto, "client", Options{})
	if err != nil || len(got) != 1 || st.Rejected() != 1 {
		t.Errorf("%d spans kept, %d rejected, error %v; want 1, 1, none", len(got), st.Rejected(), err)
	}
	for _, c := range []struct {
		body   string
		format Format
	}{
		{"\x0a\xff\xff\xff\x0f", FormatOTLPProto},
		{`{"resourceSpans": [`, FormatOTLPJSON},
		{"{}", FormatZipkin},
	} {
		got, st, err := DecodeRequest([]byte(c.body), c.format, "client", Options{})
		if err == nil || len(got) != 0 || !strings.HasPrefix(err.Error(), "client: ") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s %q: %d spans, error %v; want none and one line naming the client", c.format, c.body, len(got), err)
		}
		if st.Damage.Counts[DamageUnparseable] != 1 {
			t.Errorf("%s %q: damage %v, want one unparseable", c.format, c.body, st.Damage.Counts)
		}
	}
}

// FuzzDecodeRequest decodes data as an OTLP/HTTP request body in both
// encodings: it must not crash, errors are one line, and every span kept is
// whole.
func FuzzDecodeRequest(f *testing.F) {
	addFiles(f, "testdata/otlp_single.pb", "testdata/otlp_pretty.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, format := range []Format{FormatOTLPProto, FormatOTLPJSON} {
			spans, st, err := DecodeRequest(data, format, "fuzz", Options{Attributes: fuzzExtras})
			if err != nil && (strings.Contains(err.Error(), "\n") || len(spans) != 0) {
				t.Fatalf("%s: error %q with %d spans", format, err, len(spans))
			}
			if st.Spans != int64(len(spans)) {
				t.Fatalf("%s: %d spans counted, %d handed out", format, st.Spans, len(spans))
			}
			for _, s := range spans {
				if s.TraceID.IsZero() || s.SpanID.IsZero() || s.Start <= 0 || s.End < s.Start {
					t.Fatalf("bad span handed out: %+v", s)
				}
			}
		}
	})
}

// TestOlderAndNewerNames reads the peer of a client span from
// net.peer.name where server.address is missing, and its database from
// db.system.name where db.system is; the older and newer conventions'
// names, each taken only where the other is absent.
func TestOlderAndNewerNames(t *testing.T) {
	const body = `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"web"}}]},"scopeSpans":[{"spans":[` +
		`{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060708","name":"SELECT items","kind":3,"startTimeUnixNano":"1700000000000000000","endTimeUnixNano":"1700000000001000000",` +
		`"attributes":[{"key":"db.system.name","value":{"stringValue":"postgresql"}},{"key":"net.peer.name","value":{"stringValue":"db-1"}}]},` +
		`{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060709","name":"GET","kind":3,"startTimeUnixNano":"1700000000000000000","endTimeUnixNano":"1700000000001000000",` +
		`"attributes":[{"key":"net.peer.name","value":{"stringValue":"old"}},{"key":"server.address","value":{"stringValue":"new"}},{"key":"db.system","value":{"stringValue":"redis"}},{"key":"db.system.name","value":{"stringValue":"valkey"}}]}]}]}]}`
	spans, _, err := DecodeRequest([]byte(body), FormatOTLPJSON, "test", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(spans) != 2 {
		t.Fatalf("%d spans", len(spans))
	}
	if s := spans[0]; s.ServerAddress != "db-1" || s.DBSystem != "postgresql" {
		t.Errorf("older and newer names alone: server %q, db %q", s.ServerAddress, s.DBSystem)
	}
	if s := spans[1]; s.ServerAddress != "new" || s.DBSystem != "redis" {
		t.Errorf("both names: server %q, db %q; want server.address and db.system", s.ServerAddress, s.DBSystem)
	}
}
