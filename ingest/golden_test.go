package ingest_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/perfcast/perfcast/ingest"
)

var update = flag.Bool("update", false, "rewrite golden files and protobuf fixtures in testdata")

// extras are the extra attributes the golden tests keep.
var extras = []string{"session.id", "http.request.body.size", "customer"}

// dumpSpan renders every field of a span on one line.
func dumpSpan(s *ingest.Span) string {
	var b strings.Builder
	cpu := "-"
	if !math.IsNaN(s.CPUTime) {
		cpu = fmt.Sprint(s.CPUTime)
	}
	fmt.Fprintf(&b, "trace=%s span=%s parent=%s name=%q kind=%s status=%s start=%d end=%d service=%q host=%q instance=%q pod=%q",
		s.TraceID, s.SpanID, s.ParentID, s.Name, s.Kind, s.Status, s.Start, s.End, s.Service, s.Host, s.Instance, s.Pod)
	fmt.Fprintf(&b, " route=%q method=%q path=%q db=%q addr=%q peer=%q cpu=%s followsFrom=%v shared=%v",
		s.HTTPRoute, s.HTTPMethod, s.URLPath, s.DBSystem, s.ServerAddress, s.PeerService, cpu, s.FollowsFrom, s.Shared)
	if p := s.Process; p != nil {
		fmt.Fprintf(&b, " language=%q runtime=%q pid=%q", p.Language, p.Runtime, p.PID)
	}
	for _, l := range s.Links {
		fmt.Fprintf(&b, " link=%s/%s", l.TraceID, l.SpanID)
	}
	for _, e := range s.Extra {
		fmt.Fprintf(&b, " %s=%q", e.Key, e.Value)
	}
	return b.String()
}

// readDump reads paths and renders the spans, the formats and the damage.
func readDump(t *testing.T, opts ingest.Options, paths ...string) (string, error) {
	t.Helper()
	r, err := ingest.Open(paths, opts)
	if err != nil {
		return "", err
	}
	defer r.Close()
	var b strings.Builder
	for {
		s, err := r.Next(context.Background())
		if err == io.EOF {
			break
		}
		if err != nil {
			return b.String(), err
		}
		b.WriteString(dumpSpan(s))
		b.WriteByte('\n')
	}
	st := r.Stats()
	for _, f := range st.Files {
		fmt.Fprintf(&b, "file %s format=%s gzip=%v spans=%d\n", filepath.Base(f.Path), f.Format, f.Gzip, f.Spans)
	}
	for _, k := range st.Damage.Kinds() {
		fmt.Fprintf(&b, "damage %s=%d %q\n", k, st.Damage.Counts[k], st.Damage.Samples[k])
	}
	return b.String(), nil
}

// Hand-encoded protobuf, field numbers from opentelemetry/proto/trace/v1.
func pbBytes(num protowire.Number, v []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), v)
}
func pbVarint(num protowire.Number, v uint64) []byte {
	return protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.VarintType), v)
}
func pbFixed64(num protowire.Number, v uint64) []byte {
	return protowire.AppendFixed64(protowire.AppendTag(nil, num, protowire.Fixed64Type), v)
}
func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
func kvStr(k, v string) []byte {
	return pbBytes(1, cat(pbBytes(1, []byte(k)), pbBytes(2, pbBytes(1, []byte(v)))))
}
func kvInt(k string, v int64) []byte {
	return pbBytes(1, cat(pbBytes(1, []byte(k)), pbBytes(2, pbVarint(3, uint64(v)))))
}
func kvDouble(k string, v float64) []byte {
	return pbBytes(1, cat(pbBytes(1, []byte(k)), pbBytes(2, pbFixed64(4, math.Float64bits(v)))))
}
func hexID(s string) []byte {
	var b []byte
	fmt.Sscanf(s, "%x", &b)
	return b
}

// protoFixtures are the protobuf golden inputs.
func protoFixtures() map[string][]byte {
	spanAttr := func(kv []byte) []byte { // re-tag a KeyValue as Span field 9
		_, _, n := protowire.ConsumeTag(kv)
		v, _ := protowire.ConsumeBytes(kv[n:])
		return pbBytes(9, v)
	}
	span1 := cat(
		pbBytes(1, hexID("0102030405060708090a0b0c0d0e0f10")),
		pbBytes(2, hexID("1112131415161718")),
		pbBytes(5, []byte("GET /cart")),
		pbVarint(6, 2), // SERVER
		pbFixed64(7, 1700000000000000000),
		pbFixed64(8, 1700000000009000000),
		spanAttr(kvStr("http.route", "/cart")),
		spanAttr(kvStr("http.request.method", "GET")),
		spanAttr(kvStr("url.path", "/cart")),
		spanAttr(kvDouble("perfcast.cpu.time", 0.003)),
		spanAttr(kvInt("http.request.body.size", 77)),
		pbVarint(12, 3),                                              // dropped_events_count: ignored
		pbBytes(99, []byte("unknown field")),                         // unknown field: skipped
		pbBytes(15, cat(pbBytes(2, []byte("fine")), pbVarint(3, 1))), // status OK
	)
	span2 := cat(
		pbBytes(1, hexID("0102030405060708090a0b0c0d0e0f10")),
		pbBytes(2, hexID("2122232425262728")),
		pbBytes(4, hexID("1112131415161718")),
		pbBytes(5, []byte("cart publish")),
		pbVarint(6, 4), // PRODUCER
		pbFixed64(7, 1700000000001000000),
		pbFixed64(8, 1700000000001500000),
		pbBytes(13, cat(pbBytes(1, hexID("ffffffffffffffffffffffffffffff01")), pbBytes(2, hexID("0000000000000001")))),
		pbBytes(15, pbVarint(3, 2)), // status ERROR
	)
	resource := cat(kvStr("service.name", "cart"), kvStr("host.name", "cart-host"), kvStr("service.instance.id", "cart-0"), kvStr("session.id", "from-resource"),
		kvStr("telemetry.sdk.language", "python"), kvStr("process.runtime.name", "cpython"), kvInt("process.pid", 31337))
	// The resource comes after the scope spans: field order is free on the wire.
	rs := cat(pbBytes(2, cat(pbBytes(1, pbBytes(1, []byte("scope"))), pbBytes(2, span1), pbBytes(2, span2))), pbBytes(1, resource))
	single := pbBytes(1, rs)
	// The same request twice more, each after its varint length; the second
	// copy carries other span ids.
	span1b := bytes.ReplaceAll(span1, hexID("1112131415161718"), hexID("3132333435363738"))
	span2b := bytes.ReplaceAll(span2, hexID("1112131415161718"), hexID("3132333435363738"))
	span2b = bytes.ReplaceAll(span2b, hexID("2122232425262728"), hexID("4142434445464748"))
	rsb := cat(pbBytes(1, resource), pbBytes(2, cat(pbBytes(2, span1b), pbBytes(2, span2b))))
	req2 := pbBytes(1, rsb)
	varint := cat(protowire.AppendVarint(nil, uint64(len(single))), single, protowire.AppendVarint(nil, uint64(len(req2))), req2)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(varint)
	zw.Close()
	return map[string][]byte{"otlp_single.pb": single, "otlp_varint.pb.gz": gz.Bytes()}
}

func TestGolden(t *testing.T) {
	for name, b := range protoFixtures() {
		p := filepath.Join("testdata", name)
		if *update {
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if name == "otlp_varint.pb.gz" {
			continue // gzip output may differ between Go versions
		}
		if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, b) {
			t.Errorf("%s does not match its encoding in protoFixtures (run with -update): %v", p, err)
		}
	}
	inputs := []string{"otlp_lines.jsonl", "otlp_pretty.json", "otlp_single.pb", "otlp_varint.pb.gz",
		"zipkin.json", "zipkin_traces.json", "jaeger_ui.json", "jaeger_query.json"}
	for _, in := range inputs {
		t.Run(in, func(t *testing.T) {
			got, err := readDump(t, ingest.Options{Attributes: extras}, filepath.Join("testdata", in))
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", in+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("mismatch with %s:\n got:\n%s\nwant:\n%s", golden, got, want)
			}
		})
	}
}
