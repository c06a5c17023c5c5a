package trace

import (
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/perfcast/perfcast/ingest"
	"github.com/perfcast/perfcast/ingest/ingesttest"
)

// assembleFile reads one file and returns the dumps of its trees.
func assembleFile(t *testing.T, path string, opts ingest.Options, withLinks bool) []string {
	t.Helper()
	r, err := ingest.Open([]string{path}, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []string
	st, err := Run(context.Background(), r, Options{}, func(tr *Tree) error {
		out = append(out, dumpTree(tr, withLinks))
		return nil
	})
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if d := r.Stats().Damage; d.Total() != 0 {
		t.Errorf("%s: reader damage %v", path, d.Counts)
	}
	if st.Damage.Total() != 0 {
		t.Errorf("%s: assembly damage %v", path, st.Damage.Counts)
	}
	return out
}

// TestSameTreesInEveryFormat writes generated traces in every format and
// checks that they assemble into identical trees.
func TestSameTreesInEveryFormat(t *testing.T) {
	g := ingesttest.NewGenerator(7)
	g.Skew = 3_000_000 // the catalog host runs 3 ms ahead
	g.Extras = true
	spans := g.Traces(40)
	dir := t.TempDir()
	write := func(name string, f func(*bytes.Buffer) error) string {
		var b bytes.Buffer
		if err := f(&b); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	files := map[string]string{
		"otlp-json":     write("a.json", func(b *bytes.Buffer) error { return ingesttest.WriteOTLPJSON(b, spans, 3) }),
		"otlp-json-one": write("b.json", func(b *bytes.Buffer) error { return ingesttest.WriteOTLPJSON(b, spans, 1000) }),
		"otlp-proto":    write("c.pb", func(b *bytes.Buffer) error { return ingesttest.WriteOTLPProto(b, spans, ingesttest.Single) }),
		"otlp-varint":   write("d.pb", func(b *bytes.Buffer) error { return ingesttest.WriteOTLPProto(b, spans, ingesttest.Varint) }),
		"otlp-uint32":   write("e.pb", func(b *bytes.Buffer) error { return ingesttest.WriteOTLPProto(b, spans, ingesttest.Uint32) }),
		"zipkin":        write("f.json", func(b *bytes.Buffer) error { return ingesttest.WriteZipkin(b, spans) }),
		"jaeger":        write("g.json", func(b *bytes.Buffer) error { return ingesttest.WriteJaeger(b, spans) }),
		"jaeger-gzip": write("h.json.gz", func(b *bytes.Buffer) error {
			zw := gzip.NewWriter(b)
			if err := ingesttest.WriteJaeger(zw, spans); err != nil {
				return err
			}
			return zw.Close()
		}),
	}
	opts := ingest.Options{Attributes: []string{"http.request.body.size", "session.id"}}
	want := assembleFile(t, files["otlp-proto"], opts, true)
	if len(want) != 40 {
		t.Fatalf("got %d trees, want 40", len(want))
	}
	wantNoLinks := assembleFile(t, files["otlp-proto"], opts, false)
	for name, path := range files {
		withLinks := name != "zipkin"
		got := assembleFile(t, path, opts, withLinks)
		w := want
		if !withLinks {
			w = wantNoLinks
		}
		if len(got) != len(w) {
			t.Errorf("%s: %d trees, want %d", name, len(got), len(w))
			continue
		}
		for i := range got {
			if got[i] != w[i] {
				t.Errorf("%s: tree %d differs:\n got:\n%s\nwant:\n%s", name, i, got[i], w[i])
				break
			}
		}
	}
	// The skew was corrected: the catalog server spans were shifted back.
	if !bytes.Contains([]byte(want[0]), []byte("shift=-")) {
		t.Errorf("no skew correction in\n%s", want[0])
	}
	t.Log(want[0])
}
