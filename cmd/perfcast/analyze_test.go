package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/report"
	"github.com/perfcast/perfcast/solve"
)

func TestAnalyzeExampleData(t *testing.T) {
	files, _ := filepath.Glob("../../examples/data/*.gz")
	if len(files) == 0 {
		t.Fatal("no example trace files")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			args := []string{"analyze", f, "-o", dir, "--requests", "20000"}
			// A data set's metrics and extraction configuration sit beside
			// its traces (NAME-traces.*, NAME-metrics.csv,
			// NAME-config.yaml), and the quickstart passes them.
			var metrics string
			if name, ok := strings.CutSuffix(filepath.Base(f), "-traces.otlp.jsonl.gz"); ok {
				metrics = filepath.Join(filepath.Dir(f), name+"-metrics.csv")
				config := filepath.Join(filepath.Dir(f), name+"-config.yaml")
				for _, p := range []string{metrics, config} {
					if _, err := os.Stat(p); err != nil {
						t.Fatalf("%s: %v", f, err)
					}
				}
				args = append(args, "--metrics", metrics, "--config", config)
			}
			code, out, errs := perfcast(t, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			for _, want := range []string{"bottleneck: ", "predicted mean", "measured mean", "wrote "} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			if !strings.Contains(errs, "extracted ") {
				t.Errorf("no extraction report on standard error:\n%s", errs)
			}
			if metrics != "" && !strings.Contains(errs, "of the CPU time the metrics ("+metrics) {
				t.Errorf("the extraction did not compare the spans' CPU times with %s:\n%s", metrics, errs)
			}
			// The data sets are traced whole: every trace, every replica
			// serving throughout.
			for _, wrong := range []string{"traces may be sampled", "if the traces were sampled", "came and went"} {
				if strings.Contains(errs, wrong) {
					t.Errorf("the extraction says %q of traces taken whole:\n%s", wrong, errs)
				}
			}
			m, err := model.Load(filepath.Join(dir, "model.yaml"))
			if err != nil {
				t.Fatalf("model.yaml: %v", err)
			}
			data, err := os.ReadFile(filepath.Join(dir, "results.json"))
			if err != nil {
				t.Fatal(err)
			}
			var r report.Results
			if err := json.Unmarshal(data, &r); err != nil {
				t.Fatalf("results.json: %v", err)
			}
			if r.Model != m.Name || r.Predicted == nil || r.Measured == nil || r.Extraction == nil || r.Sweep == nil || len(r.Sweep.Points) < 10 || r.Saturation == nil || r.Bottleneck == "" {
				t.Fatalf("results.json lacks parts: model %q, predicted %v, measured %v, extraction %v, sweep %v, saturation %v, bottleneck %q",
					r.Model, r.Predicted != nil, r.Measured != nil, r.Extraction != nil, r.Sweep != nil, r.Saturation, r.Bottleneck)
			}
			if r.Predicted.Solver != "sim" || r.Measured.Solver != "measured" {
				t.Errorf("solvers %q and %q, want sim and measured", r.Predicted.Solver, r.Measured.Solver)
			}
			// The model's open rates are the observed ones, so predicted
			// throughputs match the measured ones within the simulation's
			// confidence interval (and a few standard errors more).
			for name, mw := range r.Measured.Workloads {
				pw := r.Predicted.Workloads[name]
				if pw == nil {
					t.Errorf("workload %s not predicted", name)
					continue
				}
				half := 0.0
				if ci := pw.ThroughputCI95; ci != nil {
					half = (ci[1] - ci[0]) / 2
				}
				if d := pw.Throughput - mw.Throughput; d*d > (2*half+0.01*mw.Throughput)*(2*half+0.01*mw.Throughput) {
					t.Errorf("%s: predicted %g/s, measured %g/s (±%g)", name, pw.Throughput, mw.Throughput, half)
				}
			}
			// The sweep climbs from the observed load towards saturation.
			pts := r.Sweep.Points
			if pts[0].Factor != 1 || pts[len(pts)-1].Factor > r.Saturation.Factor {
				t.Errorf("sweep from %g to %g, saturation at %g", pts[0].Factor, pts[len(pts)-1].Factor, r.Saturation.Factor)
			}
			page, err := os.ReadFile(filepath.Join(dir, "report.html"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(page), "<!DOCTYPE html>") || !strings.Contains(string(page), "</html>") || !strings.Contains(string(page), "The bottleneck is <strong>"+r.Bottleneck+"</strong>") {
				t.Errorf("report.html is not the report")
			}
			if len(page) > 400<<10 {
				t.Errorf("report.html has %d bytes", len(page))
			}
		})
	}
}

func TestAnalyzeDeterministic(t *testing.T) {
	f := "../../examples/data/synthetic-shop.otlp.jsonl.gz"
	var pages []string
	dir := filepath.Join(t.TempDir(), "out")
	for _, workers := range []string{"1", "2"} {
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		code, _, errs := perfcast(t, "-q", "analyze", f, "-o", dir, "--requests", "20000", "--workers", workers)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		if errs != "" {
			t.Errorf("--quiet, but standard error holds %q", errs)
		}
		var all []byte
		for _, name := range []string{"model.yaml", "results.json", "report.html"} {
			data, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, data...)
		}
		pages = append(pages, string(all))
	}
	if pages[0] != pages[1] {
		t.Error("analyze wrote different files with 1 and 2 workers")
	}
}

func TestAnalyzeUsage(t *testing.T) {
	f := "../../examples/data/synthetic-shop.otlp.jsonl.gz"
	for _, tc := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"analyze", f}, 2, "-o DIR"},
		{[]string{"analyze", "-o", t.TempDir()}, 2, "TRACES or --state"},
		{[]string{"analyze", f, "-o", t.TempDir(), "--set", "hosts.x.cpu.cores=2"}, 2, "what-if"},
		{[]string{"analyze", f, "-o", t.TempDir(), "--points", "1"}, 2, "--points"},
		{[]string{"analyze", "no-such-file.json", "-o", t.TempDir()}, 1, "no-such-file.json"},
	} {
		code, _, errs := perfcast(t, tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.err) {
			t.Errorf("%v: exit %d (%s), want %d and %q", tc.args, code, errs, tc.code, tc.err)
		}
	}
}

// TestFindingsNameTenWorkloads: a model with many workloads gets the first
// ten in the findings and a count of the rest.
func TestFindingsNameTenWorkloads(t *testing.T) {
	m := &model.Model{}
	pred := &solve.Result{Stable: true, Workloads: map[string]*solve.WorkloadResult{}}
	for i := range 12 {
		name := fmt.Sprintf("w%02d", i)
		m.Workloads = append(m.Workloads, &model.Workload{Name: name})
		pred.Workloads[name] = &solve.WorkloadResult{Throughput: 1, ResponseTime: solve.Times{Mean: 0.01}}
	}
	var b strings.Builder
	writeFindings(&b, m, &report.Results{Predicted: pred})
	out := b.String()
	if n := strings.Count(out, ": predicted mean"); n != 10 || !strings.Contains(out, "and 2 workloads more") {
		t.Errorf("%d workload lines:\n%s", n, out)
	}
}

// TestFindingsSayWhySimulated prints, where the load levels were
// simulated because the analytical solver does not take the model, why,
// and how to have them solved analytically.
func TestFindingsSayWhySimulated(t *testing.T) {
	m := &model.Model{}
	pred := &solve.Result{Stable: true, Workloads: map[string]*solve.WorkloadResult{}}
	for _, fallback := range [][]string{nil, {"workload w: arrivals with cv 1.06 are not Poisson"}} {
		var b strings.Builder
		writeFindings(&b, m, &report.Results{Predicted: pred, Sweep: &report.Sweep{Fallback: fallback}})
		said := strings.Contains(b.String(), "load levels simulated, outside the analytical solver's reach: workload w: arrivals with cv 1.06") &&
			strings.Contains(b.String(), "--solver mva")
		if said != (fallback != nil) {
			t.Errorf("reasons %q: the findings say\n%s", fallback, b.String())
		}
	}
}

// TestSweepPrecision: the load levels are simulated to 5 % unless
// --precision says otherwise, and never finer than the observed load.
func TestSweepPrecision(t *testing.T) {
	for _, c := range []struct {
		p    float64
		set  bool
		want float64
	}{{0.02, false, 0.05}, {0.1, false, 0.1}, {0.02, true, 0.02}, {0.1, true, 0.1}} {
		if got := sweepPrecision(c.p, c.set); got != c.want {
			t.Errorf("precision %g (given: %v): levels at %g, want %g", c.p, c.set, got, c.want)
		}
	}
}
