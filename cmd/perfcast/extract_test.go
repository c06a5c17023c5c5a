package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perfcast/perfcast/ingest/ingesttest"
)

func TestExtractThenCheck(t *testing.T) {
	dir := t.TempDir()
	var buf bytes.Buffer
	if err := ingesttest.WriteOTLPJSON(&buf, ingesttest.NewGenerator(1).Traces(300), 20); err != nil {
		t.Fatal(err)
	}
	traces := filepath.Join(dir, "traces.json")
	if err := os.WriteFile(traces, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "model.yaml")
	code, _, errs := perfcast(t, "extract", traces, "-o", out)
	if code != 0 {
		t.Fatalf("extract: exit %d: %s", code, errs)
	}
	if !strings.Contains(errs, "extracted") || !strings.Contains(errs, "300 traces") {
		t.Errorf("report: %s", errs)
	}
	code, sum, errs := perfcast(t, "check", out)
	if code != 0 {
		t.Fatalf("check of the extracted model: exit %d: %s", code, errs)
	}
	if !strings.Contains(sum, "valid") {
		t.Errorf("summary: %s", sum)
	}
	code, _, errs = perfcast(t, "extract", filepath.Join(dir, "missing.json"), "-o", out)
	if code != 1 || !strings.Contains(errs, "missing.json") {
		t.Errorf("missing input: exit %d: %s", code, errs)
	}
	code, _, _ = perfcast(t, "extract", traces)
	if code != 2 {
		t.Errorf("no -o: exit %d, want 2", code)
	}
}
