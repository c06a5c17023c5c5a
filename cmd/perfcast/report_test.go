package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReportShop(t *testing.T) {
	out := filepath.Join(t.TempDir(), "x.html")
	code, _, errs := perfcast(t, "report", "../../examples/models/shop.yaml", "-o", out, "--requests", "20000")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	page, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	// The catalog's 16 threads run out first: the simulator confirms it in
	// the report package's tests.
	if !strings.Contains(string(page), "The bottleneck is <strong>catalog.threads</strong>") {
		t.Errorf("the summary does not name catalog.threads as the bottleneck")
	}
	if len(page) > 400<<10 {
		t.Errorf("report of %d bytes", len(page))
	}
}

func TestReportFromResults(t *testing.T) {
	dir := t.TempDir()
	// The results of analyze give the same page as analyze wrote.
	code, _, errs := perfcast(t, "-q", "analyze", "../../examples/data/synthetic-shop.otlp.jsonl.gz", "-o", dir, "--requests", "20000")
	if code != 0 {
		t.Fatalf("analyze: exit %d: %s", code, errs)
	}
	again := filepath.Join(dir, "again.html")
	code, _, errs = perfcast(t, "report", filepath.Join(dir, "model.yaml"), "--results", filepath.Join(dir, "results.json"), "-o", again)
	if code != 0 {
		t.Fatalf("report: exit %d: %s", code, errs)
	}
	want, _ := os.ReadFile(filepath.Join(dir, "report.html"))
	got, _ := os.ReadFile(again)
	if len(want) == 0 || string(got) != string(want) {
		t.Errorf("report --results differs from analyze's report (%d and %d bytes)", len(got), len(want))
	}

	// A result of predict --json makes a report without a sweep.
	code, pred, errs := perfcast(t, "predict", "--json", "--solver", "mva", "../../examples/models/shop.yaml")
	if code != 0 {
		t.Fatalf("predict: exit %d: %s", code, errs)
	}
	predFile := filepath.Join(dir, "pred.json")
	if err := os.WriteFile(predFile, []byte(pred), 0o644); err != nil {
		t.Fatal(err)
	}
	code, page, errs := perfcast(t, "report", "../../examples/models/shop.yaml", "--results", predFile, "-o", "-")
	if code != 0 {
		t.Fatalf("report from predict: exit %d: %s", code, errs)
	}
	if !strings.Contains(page, "The bottleneck is <strong>") || strings.Contains(page, `id="sweep"`) {
		t.Errorf("report from a prediction: bottleneck named %v, sweep shown %v", strings.Contains(page, "The bottleneck is"), strings.Contains(page, `id="sweep"`))
	}

	// Results of another model are refused.
	code, _, errs = perfcast(t, "report", "../../examples/models/pipeline.yaml", "--results", predFile, "-o", filepath.Join(dir, "p.html"))
	if code != 1 || !strings.Contains(errs, `not of "pipeline"`) {
		t.Errorf("results of another model: exit %d: %s", code, errs)
	}
	code, _, errs = perfcast(t, "report", "../../examples/models/shop.yaml")
	if code != 2 || !strings.Contains(errs, "-o FILE.html") {
		t.Errorf("no -o: exit %d: %s", code, errs)
	}
}
