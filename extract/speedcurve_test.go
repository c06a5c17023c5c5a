package extract_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perfcast/perfcast/extract"
	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve"
	"github.com/perfcast/perfcast/solve/mva"
	"github.com/perfcast/perfcast/solve/sim"
	"github.com/perfcast/perfcast/tracegen"
)

// curveModel is one service on one core whose CPU work costs less CPU time
// the busier the core is: ×0.85 the speed at 20 % utilization, ×1.1 at 70 %.
const curveModel = `perfcast: 1
hosts:
  app: {cpu: {speed_curve: [{utilization: 0.2, factor: 0.85}, {utilization: 0.7, factor: 1.1}]}}
components:
  svc:
    host: app
    operations:
      op: {steps: [{cpu: exp(5ms)}]}
workload:
  w:
    open: {rate: 40/s}
    steps: [{call: svc/op}]
`

// steps writes the traces of m at the given rates for the given seconds
// each, one after the other in time with pause seconds between them, and
// returns their files. A pause of 5 s is a stepped load test; one of a
// minute, separate runs.
func steps(t *testing.T, m *model.Model, rates []float64, seconds, pause float64) []string {
	t.Helper()
	dir := t.TempDir()
	var paths []string
	for i, rate := range rates {
		mi, err := m.Clone()
		if err != nil {
			t.Fatal(err)
		}
		mi.Workloads[0].Open.Rate = rate
		path := filepath.Join(dir, fmt.Sprintf("step-%d.otlp.jsonl", i))
		record(t, path, mi, uint64(i+1), float64(i)*(seconds+pause), int64(rate*seconds))
		paths = append(paths, path)
	}
	return paths
}

// extractSteps parses the model yaml, writes its traces at the given rates
// (see steps) and extracts a model from them with cfg.
func extractSteps(t *testing.T, yaml string, rates []float64, seconds, pause float64, cfg *extract.Config) (*model.Model, *extract.Result) {
	t.Helper()
	m, err := model.Parse([]byte(yaml), "known.yaml")
	if err != nil {
		t.Fatal(err)
	}
	x, err := extractRun(context.Background(), steps(t, m, rates, seconds, pause), "extracted", cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m, x
}

// record writes to path the traces of the given number of requests of m,
// simulated with seed, starting offset seconds after tracegen's base time.
func record(t *testing.T, path string, m *model.Model, seed uint64, offset float64, requests int64) {
	t.Helper()
	recordWith(t, path, m, tracegen.Options{Seed: seed, Base: tracegen.DefaultBase + int64(offset*1e9)}, requests, nil)
}

// recordWith writes to path the traces of the given number of requests of
// m, simulated with opts.Seed and written with opts. Each span goes
// through keep first, when given, which may change it and says whether to
// write it. It returns the writer, to tell what it kept.
func recordWith(t testing.TB, path string, m *model.Model, opts tracegen.Options, requests int64, keep func(*sim.Span) bool) *tracegen.Writer {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := tracegen.NewWriter(f, opts)
	r, err := sim.Record(context.Background(), m, sim.RecordOptions{Seed: opts.Seed, Requests: requests}, func(s *sim.Span) error {
		if keep != nil && !keep(s) {
			return nil
		}
		return w.Add(s)
	})
	if err != nil || !r.Stable {
		t.Fatalf("record: %v %v", err, r)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return w
}

// An extraction from a load test alternating two rates recovers the curve
// well enough that the model predicts the utilization at both loads and
// between them.
func TestSpeedCurveRecovered(t *testing.T) {
	m, err := model.Parse([]byte(curveModel), "curve.yaml")
	if err != nil {
		t.Fatal(err)
	}
	paths := steps(t, m, []float64{40, 120, 40, 120}, 60, 5)
	cfg := &extract.Config{Hosts: map[string]extract.HostConfig{"svc": {Cores: 1}, "app": {Cores: 1}}}
	x, err := extractRun(context.Background(), paths, "extracted", cfg)
	if err != nil {
		t.Fatal(err)
	}
	found := foundCurve(t, x)
	predictsUtilization(t, m, x.Model, found.Host, 0.03)
}

// Without a curve in the system, the two loads show none.
func TestSpeedCurveNotInvented(t *testing.T) {
	m, err := model.Parse([]byte(curveModel), "curve.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m.Hosts[0].CPU.SpeedCurve = nil
	paths := steps(t, m, []float64{40, 120, 40, 120}, 60, 5)
	x, err := extractRun(context.Background(), paths, "extracted", &extract.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range x.Report.SpeedCurves {
		if len(c.Points) > 0 || !strings.Contains(c.Skipped, "no significant slope") {
			t.Errorf("host %s: %+v", c.Host, *c)
		}
	}
	for _, h := range x.Model.Hosts {
		if len(h.CPU.SpeedCurve) > 0 {
			t.Errorf("host %s got a speed curve", h.Name)
		}
	}
}

// A CPU whose speed is redrawn every second (a lognormal CPU time of
// coefficient of variation 0.15) shows in the spans' CPU times, and
// extraction puts it back: speed_variation within four standard errors of
// the truth (√(2(τ² + σ̄²)²/k)/(2τ²) relative, for k windows of sampling
// variance σ̄²; the estimate runs a little low, the operations' variances
// holding part of it), no speed curve, and speed_window a second when the
// configuration asks for it.
func TestSpeedVariationRoundTrip(t *testing.T) {
	m, err := model.Parse([]byte(curveModel), "varied.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const cv = 0.15
	m.Hosts[0].CPU.SpeedCurve = nil
	m.Hosts[0].CPU.SpeedVariation, m.Hosts[0].CPU.SpeedWindow = cv, 1
	paths := steps(t, m, []float64{40, 120, 40, 120}, 60, 5)
	x, err := extractRun(context.Background(), paths, "extracted", &extract.Config{SpeedWindow: true})
	if err != nil {
		t.Fatal(err)
	}
	var v *extract.SpeedVariation
	for _, c := range x.Report.SpeedCurves {
		if len(c.Points) > 0 {
			t.Errorf("host %s: a speed curve where there is none: %+v", c.Host, c.Points)
		}
		if c.Variation != nil && c.Variation.CV > 0 {
			v = c.Variation
		}
	}
	if v == nil {
		t.Fatalf("no speed variation found: %+v", x.Report.SpeedCurves)
	}
	tau2 := cv * cv
	se := math.Sqrt(2*(tau2+v.Within)*(tau2+v.Within)/float64(v.Windows)) / tau2 / 2 * cv
	t.Logf("cv %.4f over %d windows (standard error %.4f), truth %g", v.CV, v.Windows, se, cv)
	if v.Method != extract.VariationWindows || math.Abs(v.CV-cv) > 4*se {
		t.Errorf("cv %.4f by %q, truth %g (4 standard errors %.4f)", v.CV, v.Method, cv, 4*se)
	}
	found := false
	for _, h := range x.Model.Hosts {
		if h.CPU.SpeedVariation > 0 {
			found = true
			if h.CPU.SpeedVariation != v.CV || h.CPU.SpeedWindow != 1 {
				t.Errorf("host %s: speed_variation %g, speed_window %g; want %g and 1", h.Name, h.CPU.SpeedVariation, h.CPU.SpeedWindow, v.CV)
			}
		}
	}
	if !found {
		t.Error("no host of the model has a speed variation")
	}
	// Without speed_window in the configuration, steady states are mixed.
	x, err = extractRun(context.Background(), paths, "extracted", &extract.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range x.Model.Hosts {
		if h.CPU.SpeedVariation > 0 && h.CPU.SpeedWindow != 0 {
			t.Errorf("host %s: speed_window %g without it in the configuration", h.Name, h.CPU.SpeedWindow)
		}
	}
}

// Separate runs, each at one rate and so at one CPU speed, show the curve
// between them and none within: it is fitted over the runs' means, and
// the model predicts the utilization at both loads and between them.
func TestSpeedCurveAcrossRuns(t *testing.T) {
	m, err := model.Parse([]byte(curveModel), "curve.yaml")
	if err != nil {
		t.Fatal(err)
	}
	paths := steps(t, m, []float64{40, 120, 40, 120, 40, 120, 40, 120}, 40, 60)
	x, err := extractRun(context.Background(), paths, "extracted", &extract.Config{Hosts: map[string]extract.HostConfig{"app": {Cores: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	found := foundCurve(t, x)
	if found.Method != extract.CurveSegments || found.Segments != len(paths) {
		t.Errorf("fitted by %q over %d segments, want %q over %d", found.Method, found.Segments, extract.CurveSegments, len(paths))
	}
	// Each run's cost ratio is its requests' mean CPU time (exponential,
	// so a coefficient of variation of 1) over the mean of all: ±1/√1600
	// at 40/s and ±1/√4800 at 120/s, which puts the line's ends within
	// about ±1.5 % (one standard error); 5 % is over three.
	predictsUtilization(t, m, x.Model, found.Host, 0.05)
}

// foundCurve returns the speed curve extraction put in its model, failing
// the test when there is none.
func foundCurve(t *testing.T, x *extract.Result) *extract.SpeedCurve {
	t.Helper()
	for _, c := range x.Report.SpeedCurves {
		if len(c.Points) > 0 {
			t.Logf("curve %+v", *c)
			return c
		}
	}
	t.Fatalf("no speed curve found: %+v", x.Report.SpeedCurves[0])
	return nil
}

// predictsUtilization checks that the extracted model, whose CPU is on
// host, predicts the known model's utilization at 40, 80 and 120
// requests/s to within the relative tolerance tol.
func predictsUtilization(t *testing.T, known, extracted *model.Model, host string, tol float64) {
	t.Helper()
	for _, rate := range []float64{40, 80, 120} {
		k, _ := known.Clone()
		k.Workloads[0].Open.Rate = rate
		got, _ := extracted.Clone()
		got.Workloads[0].Open.Rate = rate
		want := utilization(t, k, "app.cpu")
		pred := utilization(t, got, model.CPUResource(host))
		if math.Abs(pred-want)/want > tol {
			t.Errorf("at %g/s: predicted utilization %.4f, the known model's %.4f", rate, pred, want)
		}
	}
}

func utilization(t *testing.T, m *model.Model, res string) float64 {
	t.Helper()
	r, err := mva.New().Solve(context.Background(), m, solve.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Resources[res] == nil {
		t.Fatalf("no resource %s in %v", res, r.Resources)
	}
	return r.Resources[res].Utilization
}
