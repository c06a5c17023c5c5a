package ingest_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/perfcast/perfcast/ingest"
	"github.com/perfcast/perfcast/ingest/ingesttest"
)

// readBytes reads data as a file named name and returns the spans and stats.
func readBytes(t *testing.T, name string, data []byte) ([]*ingest.Span, ingest.Stats, error) {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return readPaths(t, p)
}

// readPaths reads the spans of files and directories up to the end or the
// first error.
func readPaths(t *testing.T, paths ...string) ([]*ingest.Span, ingest.Stats, error) {
	t.Helper()
	r, err := ingest.Open(paths, ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var spans []*ingest.Span
	for {
		s, err := r.Next(context.Background())
		if err == io.EOF {
			return spans, r.Stats(), nil
		}
		if err != nil {
			return spans, r.Stats(), err
		}
		spans = append(spans, s)
	}
}

func wantDamage(t *testing.T, st ingest.Stats, want map[ingest.DamageKind]int64, samples ...string) {
	t.Helper()
	got := st.Damage.Counts
	if len(got) != len(want) {
		t.Errorf("damage %v, want %v", got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("damage %s = %d, want %d (all: %v)", k, got[k], n, got)
		}
	}
	all := strings.Join(flatten(st.Damage.Samples), "\n")
	for _, s := range samples {
		if !strings.Contains(all, s) {
			t.Errorf("no damage message contains %q; messages:\n%s", s, all)
		}
	}
}

func flatten(m map[ingest.DamageKind][]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v...)
	}
	return out
}

const okLine = `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"a"}}]},"scopeSpans":[{"spans":[` +
	`{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","name":"ok","startTimeUnixNano":"1700000000000000000","endTimeUnixNano":"1700000000001000000"}]}]}]}`

func TestOTLPJSONDamage(t *testing.T) {
	spansLine := `{"resourceSpans":[{"scopeSpans":[{"spans":[` +
		`{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"0000000000000001","name":"backwards","startTimeUnixNano":"1700000000002000000","endTimeUnixNano":"1700000000001000000"},` +
		`{"traceId":"","spanId":"0000000000000002","name":"no trace id","startTimeUnixNano":"1700000000000000000","endTimeUnixNano":"1700000000001000000"},` +
		`{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"0000000000000003","name":"no end"}]}]}]}`
	data := strings.Join([]string{
		okLine,
		`{"resourceSpans": [ this is not json`,
		`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"zz","spanId":"eee19b7ec3c1b174"}]}]}]}`,
		spansLine,
		okLine,
		`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"5b8e`, // cut short, no newline
	}, "\n")
	spans, st, err := readBytes(t, "cut.jsonl", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(spans) != 2 {
		t.Errorf("read %d spans, want 2", len(spans))
	}
	wantDamage(t, st, map[ingest.DamageKind]int64{
		ingest.DamageUnparseable:      2,
		ingest.DamageTruncated:        1,
		ingest.DamageNegativeDuration: 1,
		ingest.DamageMissingID:        1,
		ingest.DamageMissingTime:      1,
	}, "cut.jsonl: line 2:", "cut.jsonl: line 3:", "cut.jsonl: line 6: byte ")
}

func TestOTLPJSONDocumentTruncated(t *testing.T) {
	// A pretty-printed request cut in the middle: nothing complete to read.
	data, _ := os.ReadFile("testdata/otlp_pretty.json")
	_, st, err := readBytes(t, "pretty.json", data[:len(data)/2])
	if err == nil || !strings.Contains(err.Error(), "pretty.json: no readable span") {
		t.Fatalf("error %v, want no readable span", err)
	}
	wantDamage(t, st, map[ingest.DamageKind]int64{ingest.DamageTruncated: 1}, "pretty.json: byte 0:")
}

func TestOTLPProtoTruncated(t *testing.T) {
	spans := ingesttest.NewGenerator(3).Traces(5)
	var buf bytes.Buffer
	if err := ingesttest.WriteOTLPProto(&buf, spans, ingesttest.Varint); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	// Find where the third message starts, and cut ten bytes into it.
	off := 0
	for i := 0; i < 2; i++ {
		n, l := uvarint(data[off:])
		off += l + int(n)
	}
	count := countSpans(t, data[:off])
	got, st, err := readBytes(t, "cut.pb", data[:off+10])
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != count {
		t.Errorf("read %d spans, want the %d of the first two messages", len(got), count)
	}
	wantDamage(t, st, map[ingest.DamageKind]int64{ingest.DamageTruncated: 1}, "cut.pb: byte "+itoa(off)+": input ends inside a message")

	// The same for a single message cut in its last ResourceSpans.
	buf.Reset()
	ingesttest.WriteOTLPProto(&buf, spans, ingesttest.Single)
	data = buf.Bytes()
	got, st, err = readBytes(t, "cut1.pb", data[:len(data)-5])
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 || len(got) >= len(spans) {
		t.Errorf("read %d spans of %d from a cut message", len(got), len(spans))
	}
	wantDamage(t, st, map[ingest.DamageKind]int64{ingest.DamageTruncated: 1}, "cut1.pb: byte ")
}

func uvarint(b []byte) (uint64, int) {
	var x uint64
	for i, c := range b {
		x |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return x, i + 1
		}
	}
	return 0, 0
}

func itoa(i int) string { return strconv.Itoa(i) }

func countSpans(t *testing.T, data []byte) int {
	t.Helper()
	spans, _, err := readBytes(t, "whole.pb", data)
	if err != nil {
		t.Fatal(err)
	}
	return len(spans)
}

func TestOTLPProtoBadIDs(t *testing.T) {
	// One good span and one whose span id has 7 bytes: only that span is
	// dropped.
	spans, st, err := readBytes(t, "ids.pb", rebuildWithShortID(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(spans) != 1 {
		t.Errorf("read %d spans, want 1", len(spans))
	}
	wantDamage(t, st, map[ingest.DamageKind]int64{ingest.DamageMissingID: 1}, "wrong length")
}

// rebuildWithShortID encodes a request with one good span and one whose
// span id has 7 bytes.
func rebuildWithShortID(t *testing.T) []byte {
	t.Helper()
	good := cat(pbBytes(1, hexID("0102030405060708090a0b0c0d0e0f10")), pbBytes(2, hexID("1112131415161718")),
		pbFixed64(7, 1700000000000000000), pbFixed64(8, 1700000000000000001))
	short := cat(pbBytes(1, hexID("0102030405060708090a0b0c0d0e0f10")), pbBytes(2, hexID("11121314151617")),
		pbFixed64(7, 1700000000000000000), pbFixed64(8, 1700000000000000001))
	return pbBytes(1, pbBytes(2, cat(pbBytes(2, good), pbBytes(2, short))))
}

func TestGzipTruncated(t *testing.T) {
	spans := ingesttest.NewGenerator(5).Traces(400)
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err := ingesttest.WriteOTLPProto(zw, spans, ingesttest.Varint); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	got, st, err := readBytes(t, "cut.pb.gz", buf.Bytes()[:buf.Len()/2])
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 || len(got) >= len(spans) {
		t.Errorf("read %d of %d spans from half a gzip stream", len(got), len(spans))
	}
	wantDamage(t, st, map[ingest.DamageKind]int64{ingest.DamageTruncated: 1}, "cut.pb.gz: byte ")
	if !st.Files[0].Gzip {
		t.Error("gzip not noted")
	}
}

func TestZipkinAndJaegerTruncated(t *testing.T) {
	spans := ingesttest.NewGenerator(4).Traces(3)
	var z, j bytes.Buffer
	ingesttest.WriteZipkin(&z, spans)
	ingesttest.WriteJaeger(&j, spans)
	got, st, err := readBytes(t, "z.json", z.Bytes()[:z.Len()*2/3])
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 || len(got) >= len(spans) {
		t.Errorf("zipkin: read %d of %d spans", len(got), len(spans))
	}
	wantDamage(t, st, map[ingest.DamageKind]int64{ingest.DamageTruncated: 1}, "z.json: byte ")

	// Jaeger is read a trace at a time: a cut in the last trace loses it.
	got, st, err = readBytes(t, "j.json", j.Bytes()[:j.Len()-40])
	if err != nil {
		t.Fatal(err)
	}
	first2 := 0
	for _, s := range spans {
		if s.TraceID != spans[len(spans)-1].TraceID {
			first2++
		}
	}
	if len(got) != first2 {
		t.Errorf("jaeger: read %d spans, want %d", len(got), first2)
	}
	wantDamage(t, st, map[ingest.DamageKind]int64{ingest.DamageTruncated: 1}, "j.json: byte ")
}

func TestZipkinBadElements(t *testing.T) {
	data := `[{"traceId":"1","id":"1","timestamp":1700000000000000,"duration":3},
	{"traceId":"1","id":"2","timestamp":"soon","duration":3},
	{"traceId":"1","id":"3","tags":{"n":1},"timestamp":1700000000000000,"duration":3},
	{"traceId":"xyz","id":"4","timestamp":1700000000000000,"duration":3},
	{"traceId":"1","id":"5","timestamp":1700000000000000},
	{"traceId":"1","id":"6","timestamp":1700000000000000,"duration":-3},
	{"traceId":"1","id":"7","timestamp":1700000000000000,"duration":3}]`
	spans, st, err := readBytes(t, "z.json", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(spans) != 2 {
		t.Errorf("read %d spans, want 2", len(spans))
	}
	wantDamage(t, st, map[ingest.DamageKind]int64{
		ingest.DamageUnparseable:      2,
		ingest.DamageMissingID:        1,
		ingest.DamageMissingTime:      1,
		ingest.DamageNegativeDuration: 1,
	})
}

func TestUnreadableFiles(t *testing.T) {
	cases := []struct{ name, data, err string }{
		{"empty.json", "", "empty.json: empty input"},
		{"blank.json", "  \n\t\n", "blank.json: not a trace file"},
		{"text.txt", "hello, world\n", "text.txt: not a trace file"},
		{"csv.csv", "timestamp,host,cpu_utilization\n1,a,0.5\n", "csv.csv: not a trace file"},
		{"obj.json", `{"kind":"something else"}`, "obj.json: not a trace file"},
		{"metrics.json", `{"resourceMetrics":[]}`, "metrics.json: OTLP metrics, not traces"},
		{"none.json", `[]`, "none.json: no spans found in zipkin-json input"},
		{"nodata.json", `{"data":[]}`, "nodata.json: no spans found in jaeger-json input"},
		{"noreq.json", `{"resourceSpans":[]}`, "noreq.json: no spans found in otlp-json input"},
		{"bad.jsonl", "{\"resourceSpans\":[}\n", "bad.jsonl: no readable span (byte 18: invalid character"},
		{"gz.gz", "\x1f\x8b\x08garbage", "gz.gz: gzip:"},
	}
	for _, c := range cases {
		_, _, err := readBytes(t, c.name, []byte(c.data))
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.err)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error spans lines: %q", c.name, err)
		}
	}
	if _, err := ingest.Open([]string{"testdata/does-not-exist"}, ingest.Options{}); err == nil {
		t.Error("Open of a missing file succeeded")
	}
}

func TestDirectoryAndStdin(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "b", ".hidden"), 0o755)
	for _, f := range []string{"b/2.jsonl", "a.jsonl", "b/1.jsonl", ".skip.jsonl", "b/.hidden/x.jsonl"} {
		os.WriteFile(filepath.Join(dir, f), []byte(okLine+"\n"), 0o644)
	}
	r, err := ingest.Open([]string{dir, "-"}, ingest.Options{Stdin: strings.NewReader(okLine)})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range r.Paths() {
		rel, _ := filepath.Rel(dir, p)
		got = append(got, rel)
	}
	want := "a.jsonl b/1.jsonl b/2.jsonl ../../-"
	if g := strings.Join(got, " "); !strings.HasPrefix(g, "a.jsonl b/1.jsonl b/2.jsonl ") || len(got) != 4 || r.Paths()[3] != "-" {
		t.Errorf("paths %q, want %q", g, want)
	}
	n := 0
	for {
		_, err := r.Next(context.Background())
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 4 {
		t.Errorf("read %d spans, want 4", n)
	}
	st := r.Stats()
	if len(st.Files) != 4 || st.Files[3].Path != "<stdin>" || st.Spans != 4 {
		t.Errorf("stats %+v", st)
	}
}

func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r, err := ingest.Open([]string{"testdata/zipkin.json"}, ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Next after cancel: %v", err)
	}
}

func TestDetect(t *testing.T) {
	cases := map[string]ingest.Format{
		"testdata/otlp_lines.jsonl":  ingest.FormatOTLPJSON,
		"testdata/otlp_pretty.json":  ingest.FormatOTLPJSON,
		"testdata/otlp_single.pb":    ingest.FormatOTLPProto,
		"testdata/otlp_varint.pb.gz": ingest.FormatOTLPProto,
		"testdata/zipkin.json":       ingest.FormatZipkin,
		"testdata/jaeger_ui.json":    ingest.FormatJaeger,
		"testdata/jaeger_query.json": ingest.FormatJaeger,
	}
	for p, want := range cases {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ingest.Detect(f)
		f.Close()
		if err != nil || got != want {
			t.Errorf("%s: %v %v, want %v", p, got, err, want)
		}
	}
	var u32 bytes.Buffer
	ingesttest.WriteOTLPProto(&u32, ingesttest.NewGenerator(1).Traces(2), ingesttest.Uint32)
	if got, err := ingest.Detect(&u32); err != nil || got != ingest.FormatOTLPProto {
		t.Errorf("uint32-framed protobuf: %v %v", got, err)
	}
}

// A file that begins with a UTF-8 byte-order mark, as editors on Windows
// save JSON, reads as the same file without it, in every JSON format.
func TestByteOrderMark(t *testing.T) {
	spans := ingesttest.NewGenerator(5).Traces(3)
	var z, j bytes.Buffer
	ingesttest.WriteZipkin(&z, spans)
	ingesttest.WriteJaeger(&j, spans)
	otlp, err := os.ReadFile("testdata/otlp_lines.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"z.json": z.Bytes(), "j.json": j.Bytes(), "o.jsonl": otlp} {
		plain, _, err := readBytes(t, name, data)
		if err != nil || len(plain) == 0 {
			t.Fatalf("%s: %d spans, %v", name, len(plain), err)
		}
		marked, st, err := readBytes(t, name, append([]byte("\xef\xbb\xbf"), data...))
		if err != nil || len(marked) != len(plain) || len(st.Damage.Counts) != 0 {
			t.Errorf("%s with a byte-order mark: %d spans of %d, damage %v, %v", name, len(marked), len(plain), st.Damage.Counts, err)
		}
	}
}

// In a directory, files that hold no traces (a README, metrics, an empty
// export) are skipped and Stats says why; a damaged trace file there is
// still an error, and so is a file named on its own that holds none.
func TestDirectorySkipsWhatHoldsNoTraces(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string]string{
		"a.jsonl":      okLine + "\n",
		"README.md":    "# traces\n",
		"cpu.csv":      "timestamp,host,cpu_utilization\n1,a,0.5\n",
		"metrics.json": `{"resourceMetrics":[]}`,
		"empty.json":   "",
		"none.json":    `{"resourceSpans":[]}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	spans, st, err := readPaths(t, dir)
	if err != nil || len(spans) != 1 {
		t.Fatalf("read %d spans, %v", len(spans), err)
	}
	skipped := map[string]string{}
	for _, f := range st.Files {
		if f.Skipped != "" {
			skipped[filepath.Base(f.Path)] = f.Skipped
		}
	}
	for name, why := range map[string]string{"README.md": "not a trace file", "cpu.csv": "not a trace file", "metrics.json": "OTLP metrics", "empty.json": "empty input", "none.json": "no spans found"} {
		if !strings.Contains(skipped[name], why) {
			t.Errorf("%s: skipped %q, want %q", name, skipped[name], why)
		}
	}
	if len(skipped) != 5 || len(st.Files) != 6 {
		t.Errorf("%d of %d files skipped: %v", len(skipped), len(st.Files), skipped)
	}
	if _, _, err := readPaths(t, filepath.Join(dir, "README.md")); err == nil || !strings.Contains(err.Error(), "not a trace file") {
		t.Errorf("a named file that holds no traces: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "z.gz"), []byte("\x1f\x8b\x08garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := readPaths(t, dir); err == nil || !strings.Contains(err.Error(), "z.gz: gzip") {
		t.Errorf("a damaged gzip file in the directory: %v", err)
	}
}
