package extract

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzExtract runs extraction on arbitrary trace files: it must not crash,
// its errors are one line, and a model it returns is valid.
func FuzzExtract(f *testing.F) {
	for _, p := range []string{"../ingest/testdata/otlp_lines.jsonl", "../ingest/testdata/zipkin.json", "../ingest/testdata/jaeger_ui.json"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "traces")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		res, err := Run(context.Background(), []string{path}, "fuzz", &Config{CPUSlots: map[string]int{"*": 1}})
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error spans lines: %q", err)
			}
			return
		}
		if err := res.Model.Validate(); err != nil {
			t.Fatalf("invalid model: %v\n%s", err, res.Model.Marshal())
		}
	})
}
