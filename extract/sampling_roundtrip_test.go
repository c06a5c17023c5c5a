package extract_test

import (
	"bytes"
	"context"
	"math"
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

// sampledModel has two open workloads on a host of two cores, one calling
// a database twice.
const sampledModel = `perfcast: 1
name: sampled
hosts:
  app: {cpu: {cores: 2}}
  data: {cpu: {cores: 1}}
components:
  web:
    host: app
    operations:
      GET /a:
        steps: [{cpu: exp(10ms)}, {call: db/query}, {call: db/query}]
      GET /b:
        steps: [{cpu: exp(20ms)}]
  db:
    host: data
    operations:
      query:
        steps: [{cpu: exp(4ms)}]
workload:
  a:
    open: {rate: 30/s}
    steps: [{call: web/GET /a}]
  b:
    open: {rate: 10/s}
    steps: [{call: web/GET /b}]
`

// TestSampledRoundTrip generates the model's traces, keeps each with
// probability 0.2 as an OpenTelemetry probability sampler does (the
// threshold in the spans' trace state), and extracts them: the rates, the
// demands and the utilizations come back within four standard errors of
// the truth, and so do the rates Measured reports. Read without the trace
// state's say, the rates would be a fifth of the truth.
func TestSampledRoundTrip(t *testing.T) {
	m0, err := model.Parse([]byte(sampledModel), "sampled.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const p = 0.2
	requests := int64(40000)
	if testing.Short() {
		requests = 15000
	}
	path := filepath.Join(t.TempDir(), "sampled.otlp.jsonl")
	var first, last float64 = math.Inf(1), 0
	roots := map[string]float64{}
	w := recordWith(t, path, m0, tracegen.Options{Seed: 5, Sample: p}, requests, func(s *sim.Span) bool {
		if s.Parent == 0 {
			first, last = math.Min(first, s.Start), math.Max(last, s.Start)
			roots[s.Operation]++
		}
		return true
	})
	_, kept := w.Written()
	t.Logf("%d of %.0f traces kept", kept, roots["GET /a"]+roots["GET /b"])

	res, err := extractRun(context.Background(), []string{path}, "sampled", &extract.Config{
		Hosts: map[string]extract.HostConfig{"app": {Cores: 2}, "data": {Cores: 1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	m := res.Model
	if err := m.Validate(); err != nil {
		t.Fatalf("invalid model: %v\n%s", err, m.Marshal())
	}
	st := res.State
	if st.Sampled != st.Traces || math.Abs(st.Kept()-p) > 1e-12 {
		t.Errorf("%d of %d traces sampled, kept %g; want all, %g", st.Sampled, st.Traces, st.Kept(), p)
	}
	if !strings.Contains(strings.Join(res.Report.Evidence, "\n"), "kept with probability 0.2") {
		t.Errorf("the report does not say the traces were sampled: %q", res.Report.Evidence)
	}

	// A rate estimated from n kept traces of the seconds generated: its
	// variance is the sampling's, rate/(p·T), plus the generation's own
	// Poisson noise about the nominal rate, rate/T.
	seconds := last - first
	rateSE := func(rate float64) float64 { return math.Sqrt(rate/(p*seconds) + rate/seconds) }
	for _, c := range []struct {
		name string
		rate float64
	}{{"GET /a", 30}, {"GET /b", 10}} {
		wl := m.Workload(c.name)
		if wl == nil || wl.Open == nil {
			t.Fatalf("no open workload %s:\n%s", c.name, m.Marshal())
		}
		near(t, "rate of "+c.name, wl.Open.Rate, c.rate, 4*(rateSE(c.rate)))
	}
	demand := func(id string) float64 {
		cpu := 0.0
		for _, s := range m.Operation(id).Steps {
			if s.Kind == model.StepCPU {
				cpu += s.Demand.Mean()
			}
		}
		return cpu
	}
	// Exponential demands: the standard error of a mean of n is mean/√n.
	for _, c := range []struct {
		id      string
		mean, n float64
	}{{"web/GET /a", 0.010, 30 * p * seconds}, {"web/GET /b", 0.020, 10 * p * seconds}, {"db/query", 0.004, 60 * p * seconds}} {
		near(t, "CPU demand of "+c.id, demand(c.id), c.mean, 4*(c.mean/math.Sqrt(c.n)))
	}

	pred, err := mva.New().Solve(context.Background(), m, solve.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Utilization: a rate times a demand; their relative errors add.
	for _, c := range []struct {
		res  string
		util float64
		rel  float64
	}{
		{"app.cpu", (30*0.010 + 10*0.020) / 2, math.Hypot(rateSE(30)/30, 1/math.Sqrt(30*p*seconds))},
		{"data.cpu", 60 * 0.004, math.Hypot(rateSE(30)/30, 1/math.Sqrt(60*p*seconds))},
	} {
		rr := pred.Resources[c.res]
		if rr == nil {
			t.Fatalf("no resource %s in %v", c.res, pred.Resources)
		}
		near(t, "utilization of "+c.res, rr.Utilization, c.util, 4*(c.util*c.rel))
	}

	// What validate compares with: the measured rates.
	meas := st.Measured(m)
	near(t, "measured throughput of db/query", meas.Operations["db/query"].Throughput, 60, 4*(2*rateSE(30)))
	near(t, "measured throughput of a", meas.Workloads["GET /a"].Throughput, 30, 4*(rateSE(30)))
}

// TestSamplingConfigured folds traces that do not say they were sampled
// with sampling set in the configuration: each stands for 1/p requests.
// Traces whose spans say their probability keep it.
func TestSamplingConfigured(t *testing.T) {
	m0, err := model.Parse([]byte(sampledModel), "sampled.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name string, seed uint64, sample float64) string {
		path := filepath.Join(dir, name)
		recordWith(t, path, m0, tracegen.Options{Seed: seed, Sample: sample}, 4000, nil)
		return path
	}
	full := write("full.jsonl", 9, 1)
	said := write("said.jsonl", 10, 0.5)
	cfg := &extract.Config{Sampling: 0.25}
	plain, err := extractRun(context.Background(), []string{full}, "plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	configured, err := extractRun(context.Background(), []string{full}, "configured", cfg)
	if err != nil {
		t.Fatal(err)
	}
	rate := func(r *extract.Result) float64 { return r.Model.Workload("GET /a").Open.Rate }
	if got, want := rate(configured), 4*rate(plain); math.Abs(got-want) > 1e-3*want {
		t.Errorf("rate with sampling 0.25 configured: %g, want four times %g", got, rate(plain))
	}
	if k := configured.State.Kept(); k != 0.25 {
		t.Errorf("kept %g, want 0.25", k)
	}
	// The trace state's probability wins over the configuration's.
	both, err := extractRun(context.Background(), []string{said}, "both", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if k := both.State.Kept(); k != 0.5 {
		t.Errorf("kept %g with traces saying 0.5 and 0.25 configured, want 0.5", k)
	}
	// Saved and loaded, and merged, a state keeps what its traces stand
	// for.
	var buf bytes.Buffer
	if err := both.State.Save(&buf); err != nil {
		t.Fatal(err)
	}
	loaded, err := extract.LoadState(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if loaded.Kept() != 0.5 || loaded.Sampled != both.State.Sampled {
		t.Errorf("loaded state: kept %g, %d sampled; want 0.5, %d", loaded.Kept(), loaded.Sampled, both.State.Sampled)
	}
	loaded.Merge(plain.State)
	if want := float64(both.State.Traces+plain.State.Traces) / float64(2*both.State.Traces+plain.State.Traces); math.Abs(loaded.Kept()-want) > 1e-12 {
		t.Errorf("merged state: kept %g, want %g", loaded.Kept(), want)
	}
	// Traces of both kinds: the rates are exact per workload, and the
	// report warns that the probabilities differ.
	mixed, err := extractRun(context.Background(), []string{full, said}, "mixed", nil)
	if err != nil {
		t.Fatal(err)
	}
	if k := mixed.State.Kept(); !(k > 0.5 && k < 1) {
		t.Errorf("kept %g from traces of probabilities 1 and 0.5, want between", k)
	}
	if !strings.Contains(strings.Join(mixed.Report.Warnings, "\n"), "probabilities from 0.5 to 0.5, the rest with 1") {
		t.Errorf("no warning of probabilities that differ: %q", mixed.Report.Warnings)
	}
}

// TestSamplingUnsaid keeps a fifth of the traces without saying so, with
// the hosts' CPU metrics of every request: the spans' CPU covers a fifth of
// the metrics', and extraction warns that the traces may be sampled.
// Told the probability in the configuration, it finds the spans cover the
// metrics' CPU, adds no CPU outside the spans, and gets the rates right.
func TestSamplingUnsaid(t *testing.T) {
	m0, err := model.Parse([]byte(sampledModel), "sampled.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tracesPath, metricsPath := filepath.Join(dir, "traces.jsonl"), filepath.Join(dir, "cpu.csv")
	var first, last float64 = math.Inf(1), 0
	recordMetrics(t, tracesPath, metricsPath, m0, tracegen.Options{Seed: 12}, 20000, func(s *sim.Span) bool {
		if s.Parent == 0 {
			first, last = math.Min(first, s.Start), math.Max(last, s.Start)
		}
		return s.Trace%5 == 0
	})

	cfg := &extract.Config{Hosts: map[string]extract.HostConfig{"app": {Cores: 2}, "data": {Cores: 1}}, Metrics: []string{metricsPath}}
	unsaid, err := extractRun(context.Background(), []string{tracesPath}, "unsaid", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(unsaid.Report.Warnings, "\n"), "if the traces were sampled") {
		t.Errorf("no warning that the traces may be sampled: %q", unsaid.Report.Warnings)
	}
	cfg.Sampling = 0.2
	said, err := extractRun(context.Background(), []string{tracesPath}, "said", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(said.Report.Warnings, "\n"); strings.Contains(w, "if the traces were sampled") {
		t.Errorf("warned of sampling with sampling configured: %q", w)
	}
	for _, c := range said.Report.CPUCoverage {
		t.Logf("%s: spans cover %.3f ± %.3f of the metrics' CPU", c.Host, c.Share, c.ShareSE)
		if c.Skipped == "" && math.Abs(c.Share-1) > 4*c.ShareSE+0.02 {
			t.Errorf("%s: the spans cover %.3f ± %.3f of the metrics' CPU, want 1", c.Host, c.Share, c.ShareSE)
		}
	}
	if r := said.Model.Workload("GET /a").Open.Rate; math.Abs(r-30) > 4*math.Sqrt(30/(0.2*(last-first))) {
		t.Errorf("rate of GET /a %g, want 30", r)
	}
}
