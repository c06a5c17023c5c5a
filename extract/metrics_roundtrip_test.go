package extract_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perfcast/perfcast/extract"
	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve/sim"
	"github.com/perfcast/perfcast/tracegen"
)

// twoOpsModel has two operations on one core and a third on another host,
// at 36 % and 24 % utilization. Arrivals are bursty (cv 4), so that the
// throughputs of the metrics' windows vary: with Poisson arrivals a
// regression's standard errors are 15 to 20 % of the demands.
const twoOpsModel = `perfcast: 1
name: twoops
hosts:
  app: {cpu: {cores: 1}}
  db: {cpu: {cores: 1}}
components:
  web:
    host: app
    operations:
      GET /a: {steps: [{cpu: exp(4ms)}, {call: store/get}]}
      GET /b: {steps: [{cpu: exp(10ms)}]}
  store:
    host: db
    operations:
      get: {steps: [{cpu: exp(6ms)}]}
workload:
  a: {open: {rate: 40/s, cv: 4}, steps: [{call: web/GET /a}]}
  b: {open: {rate: 20/s, cv: 4}, steps: [{call: web/GET /b}]}
`

// TestMetricsRoundTrip generates traces without CPU times and the hosts'
// CPU as metrics, as perfcast generate --no-cpu-time --metrics writes
// them, and extracts with the metrics: each operation's CPU demand comes
// back within four of the estimator's standard errors of the truth (4 to
// 5 % here), or modelError where it gives none.
func TestMetricsRoundTrip(t *testing.T) {
	_, _, tracesPath, metricsPath := recordModel(t, twoOpsModel, "twoops", tracegen.Options{NoCPUTime: true, Seed: 6}, 30000, nil)

	cfg := &extract.Config{Hosts: map[string]extract.HostConfig{"app": {Cores: 1}, "db": {Cores: 1}}, Metrics: []string{metricsPath}}
	out, err := extractRun(context.Background(), []string{tracesPath}, "twoops", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("extracted model:\n%s", out.Model.Marshal())
	if out.Report.Demands == nil {
		t.Fatal("no report of the demands estimated from metrics")
	}
	var b strings.Builder
	out.Report.Demands.WriteText(&b)
	t.Logf("demands:\n%s", b.String())
	// The estimators' standard errors, where they give one.
	stdErr := map[string]float64{}
	for _, h := range out.Report.Demands.Hosts {
		for i, op := range h.Ops {
			if i < len(h.Result) && h.Result[i].StdErr > 0 {
				stdErr[op] = h.Result[i].StdErr
			}
		}
	}
	for id, want := range map[string]float64{"web/GET /a": 4e-3, "web/GET /b": 10e-3, "store/get": 6e-3} {
		op := out.Model.Operation(id)
		if op == nil {
			t.Errorf("no operation %s", id)
			continue
		}
		cpu := 0.0
		for _, s := range op.Steps {
			if s.Kind == model.StepCPU {
				cpu += s.Demand.Mean()
			}
		}
		// Four standard errors where the estimator gives one, else the
		// model error allowed to extraction.
		tol := modelError * want
		if se, ok := stdErr[id]; ok {
			tol = 4 * se
		}
		t.Logf("%-12s CPU %.4g ms, truth %.4g ms, tolerance %.3g ms", id, cpu*1e3, want*1e3, tol*1e3)
		if math.Abs(cpu-want) > tol {
			t.Errorf("%s: CPU %.4g ms, want %.4g ms ± %.3g", id, cpu*1e3, want*1e3, tol*1e3)
		}
	}
}

// recordModel parses the model src and records its traces and metrics as
// recordMetrics does, in files of a temporary directory (dir) it returns.
func recordModel(t testing.TB, src, name string, opts tracegen.Options, requests int64, keep func(*sim.Span) bool) (m *model.Model, dir, tracesPath, metricsPath string) {
	t.Helper()
	m, err := model.Parse([]byte(src), name+".yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	tracesPath, metricsPath = filepath.Join(dir, "traces.jsonl"), filepath.Join(dir, "cpu.csv")
	recordMetrics(t, tracesPath, metricsPath, m, opts, requests, keep)
	return m, dir, tracesPath, metricsPath
}

// recordMetrics is recordWith that also writes to metricsPath the hosts'
// CPU time as perfcast generate --metrics does, from every span, written
// or not, as keep left it.
func recordMetrics(t testing.TB, tracesPath, metricsPath string, m *model.Model, opts tracegen.Options, requests int64, keep func(*sim.Span) bool) {
	t.Helper()
	mw := tracegen.NewMetrics(5, opts)
	recordWith(t, tracesPath, m, opts, requests, func(s *sim.Span) bool {
		kept := keep == nil || keep(s)
		mw.Add(s)
		return kept
	})
	f, err := os.Create(metricsPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := mw.Write(f, tracegen.Machines(m)); err != nil {
		t.Fatal(err)
	}
}

// TestMetricsCores extracts twoOpsModel on four cores for its app host
// with nothing configured but the metrics, which state each machine's
// cores: the model's hosts get them (app 4, db 1) instead of cores
// assumed from their load, with evidence; configured cores still win.
func TestMetricsCores(t *testing.T) {
	src := strings.Replace(twoOpsModel, "app: {cpu: {cores: 1}}", "app: {cpu: {cores: 4}}", 1)
	_, _, tracesPath, metricsPath := recordModel(t, src, "fourcores", tracegen.Options{NoCPUTime: true, Seed: 8}, 6000, nil)
	for _, c := range []struct {
		name    string
		hosts   map[string]extract.HostConfig
		app, db int
	}{
		{"from the metrics", nil, 4, 1},
		{"configured", map[string]extract.HostConfig{"app": {Cores: 2}}, 2, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := extractRun(context.Background(), []string{tracesPath}, "fourcores", &extract.Config{Hosts: c.hosts, Metrics: []string{metricsPath}})
			if err != nil {
				t.Fatal(err)
			}
			for host, want := range map[string]int{"app": c.app, "db": c.db} {
				if h := out.Model.Host(host); h == nil || h.CPU.Cores != want {
					t.Errorf("host %s: %+v, want %d cores", host, h, want)
				}
			}
			if w := strings.Join(out.Report.Warnings, "\n"); strings.Contains(w, "cores per host assumed") {
				t.Errorf("cores assumed where the metrics state them:\n%s", w)
			}
			if ev := strings.Join(out.Report.Evidence, "\n"); !strings.Contains(ev, "host db: 1 core(s), as the metrics state") {
				t.Errorf("no evidence of the metrics' cores:\n%s", ev)
			}
		})
	}
}
