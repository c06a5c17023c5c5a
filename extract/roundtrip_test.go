package extract_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/perfcast/perfcast/extract"
	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve"
	"github.com/perfcast/perfcast/solve/sim"
	"github.com/perfcast/perfcast/tracegen"
	"github.com/perfcast/perfcast/whatif"
)

// extractRun and extractGenerate are extract.Run and extract.Generate with
// the simulator in the configuration, as perfcast's commands give it
// (extract.Config.Simulator); a nil cfg becomes an empty one.
func extractRun(ctx context.Context, paths []string, name string, cfg *extract.Config) (*extract.Result, error) {
	return extract.Run(ctx, paths, name, simulating(cfg))
}

func extractGenerate(ctx context.Context, st *extract.State, name string, cfg *extract.Config) (*model.Model, *extract.Report, error) {
	return extract.Generate(ctx, st, name, simulating(cfg))
}

func simulating(cfg *extract.Config) *extract.Config {
	if cfg == nil {
		cfg = &extract.Config{}
	}
	cfg.Simulator = sim.Solver{}
	return cfg
}

// knownModel is the system the round trip generates traces from: an open
// workload of 50 requests/s on a front end (two replicas of one core) that
// calls a catalog service (one core) in a loop and, in 40 % of requests, an
// orders service (two cores). CPU utilizations are 35 % (front), 38 %
// (catalog) and 30 % (orders); twice the load keeps every host below 80 %.
// Thread pools are unlimited, which traces cannot reveal anyway.
const knownModel = `perfcast: 1
name: known
hosts:
  web: {replicas: 2, cpu: {cores: 1}}
  app: {cpu: {cores: 1}}
  data: {cpu: {cores: 2}}
components:
  front:
    host: web
    operations:
      GET /page:
        steps:
          - cpu: exp(14ms)
          - loop:
              times: {pmf: {"1": 0.5, "2": 0.3, "4": 0.2}}
              steps: [{call: catalog/get}]
          - branch:
              - {p: 0.4, steps: [{call: orders/create}]}
              - {p: 0.6, steps: []}
  catalog:
    host: app
    operations:
      get: {steps: [{cpu: exp(4ms)}]}
  orders:
    host: data
    operations:
      create: {steps: [{cpu: exp(30ms)}]}
workload:
  page:
    open: {rate: 50/s}
    steps: [{call: front/GET /page}]
`

// extractConfig gives extraction the cores of the machines (traces do not
// say): the front end's two machines become a host named after it.
var extractConfig = &extract.Config{Hosts: map[string]extract.HostConfig{
	"front": {Cores: 1}, "app": {Cores: 1}, "data": {Cores: 2},
}}

// modelError is the error allowed to an extracted model beyond statistical
// uncertainty: 10 % of the measured figure, the accuracy the literature
// reports for models extracted from measurements (Brosig et al.: 10–20 %).
const modelError = 0.10

// observed is what one trace set measured, with 95 % half-widths from batch
// means.
type observed struct {
	rt, x estimate            // workload response time and throughput
	util  map[string]estimate // per CPU resource
	// rtOf is the response time of the requests entering at each
	// operation (COMPONENT/OPERATION).
	rtOf map[string]estimate
	// seconds is the simulated time from the first request's start to the
	// last's.
	seconds float64
	// offCPU is, per operation, the mean of its spans' own time (duration
	// minus calls) minus their CPU time: the waiting for a CPU under
	// processor sharing, as the known model has no delays.
	offCPU map[string]float64
	spans  int
	path   string
}

type estimate struct{ mean, hw float64 }

// batchEstimate is the mean and 95 % half-width of a sequence of batch
// values.
func batchEstimate(v []float64) estimate {
	n := float64(len(v))
	mean := 0.0
	for _, x := range v {
		mean += x
	}
	mean /= n
	ss := 0.0
	for _, x := range v {
		ss += (x - mean) * (x - mean)
	}
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: n - 1}.Quantile(0.975)
	return estimate{mean, t * math.Sqrt(ss/(n-1)/n)}
}

// generate simulates m and writes its traces; it measures them on the way,
// in 20 batches of equal simulated time: per batch the mean response time of
// the requests that arrived in it, their rate, and the CPU time per second
// of each host's spans.
func generate(t testing.TB, m *model.Model, seed uint64, requests int64, dir string) *observed {
	t.Helper()
	return generateWith(t, m, sim.RecordOptions{Seed: seed, Requests: requests}, dir)
}

// generateWith is generate with the recorder's options (its seed and
// requests among them).
func generateWith(t testing.TB, m *model.Model, opts sim.RecordOptions, dir string) *observed {
	t.Helper()
	return generateTraces(t, m, opts, tracegen.Options{Seed: opts.Seed}, dir)
}

// generateTraces is generateWith with the trace writer's options.
func generateTraces(t testing.TB, m *model.Model, opts sim.RecordOptions, topts tracegen.Options, dir string) *observed {
	t.Helper()
	seed := opts.Seed
	path := filepath.Join(dir, fmt.Sprintf("traces-%d.otlp.jsonl", seed))
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := tracegen.NewWriter(f, topts)
	var spans []*sim.Span
	r, err := sim.Record(context.Background(), m, opts,
		func(s *sim.Span) error {
			spans = append(spans, s)
			return w.Add(s)
		})
	if err != nil || !r.Stable {
		t.Fatalf("record: %v %v", err, r)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	const batches = 20
	first, last := math.Inf(1), math.Inf(-1)
	for _, s := range spans {
		if s.Parent == 0 {
			first, last = math.Min(first, s.Start), math.Max(last, s.Start)
		}
	}
	width := (last - first) / batches
	batch := func(x float64) int { return min(int((x-first)/width), batches-1) }
	rtSum, count := make([]float64, batches), make([]float64, batches)
	rtSumOf, countOf := map[string][]float64{}, map[string][]float64{}
	cpu := map[string][]float64{}
	hostOf := map[string]string{}
	for _, c := range m.Components {
		hostOf[c.Name] = model.CPUResource(c.Host)
	}
	for _, s := range spans {
		if s.Parent == 0 {
			b := batch(s.Start)
			rtSum[b] += s.End - s.Start
			count[b]++
			id := s.Component + "/" + s.Operation
			if rtSumOf[id] == nil {
				rtSumOf[id], countOf[id] = make([]float64, batches), make([]float64, batches)
			}
			rtSumOf[id][b] += s.End - s.Start
			countOf[id][b]++
		}
		if s.CPU > 0 && s.Start >= first && s.Start <= last {
			res := hostOf[s.Component]
			if cpu[res] == nil {
				cpu[res] = make([]float64, batches)
			}
			cpu[res][batch(s.Start)] += s.CPU
		}
	}
	o := &observed{util: map[string]estimate{}, offCPU: map[string]float64{}, spans: len(spans), path: path,
		rtOf: map[string]estimate{}, seconds: last - first}
	calls := map[uint64]float64{}
	for _, s := range spans {
		if s.Kind == sim.SpanClient {
			calls[s.Parent] += s.End - s.Start
		}
	}
	n := map[string]float64{}
	for _, s := range spans {
		if s.Kind == sim.SpanServer {
			id := s.Component + "/" + s.Operation
			o.offCPU[id] += s.End - s.Start - calls[s.ID] - s.CPU
			n[id]++
		}
	}
	for id := range o.offCPU {
		o.offCPU[id] /= n[id]
	}
	rt, x := make([]float64, batches), make([]float64, batches)
	for b := range rt {
		rt[b] = rtSum[b] / count[b]
		x[b] = count[b] / width
	}
	o.rt, o.x = batchEstimate(rt), batchEstimate(x)
	for id, sum := range rtSumOf {
		v := make([]float64, batches)
		for b := range v {
			v[b] = sum[b] / countOf[id][b]
		}
		o.rtOf[id] = batchEstimate(v)
	}
	for res, v := range cpu {
		servers := float64(m.Servers(res))
		u := make([]float64, batches)
		for b := range u {
			u[b] = v[b] / width / servers
		}
		o.util[res] = batchEstimate(u)
	}
	return o
}

// comparison is one figure predicted and measured.
type comparison struct {
	what                 string
	predicted, measured  float64
	tolerance, relError  float64
	predictedHW, batchHW float64
}

func (c comparison) ok() bool { return math.Abs(c.predicted-c.measured) <= c.tolerance }

// compare sets a prediction (with its 95 % half-width) against the figure
// the extraction state measured; the half-width of the measurement is that
// of the batch estimate over the same spans. The tolerance is twice the
// half-width of the difference (about four standard errors) plus
// modelError.
func compare(what string, pred float64, pci *[2]float64, batch estimate, measured float64) comparison {
	phw := 0.0
	if pci != nil {
		phw = (pci[1] - pci[0]) / 2
	}
	c := comparison{what: what, predicted: pred, measured: measured, predictedHW: phw, batchHW: batch.hw}
	c.tolerance = 2*math.Hypot(phw, batch.hw) + modelError*math.Abs(measured)
	c.relError = (pred - measured) / measured
	return c
}

func check(t *testing.T, cs []comparison) {
	t.Helper()
	for _, c := range cs {
		t.Logf("%-34s predicted %-10.5g measured %-10.5g error %+6.1f %%  tolerance %5.1f %%",
			c.what, c.predicted, c.measured, 100*c.relError, 100*c.tolerance/math.Abs(c.measured))
	}
	for _, c := range cs {
		if !c.ok() {
			t.Errorf("%s: predicted %.5g, measured %.5g (%+.1f %%), tolerance %.3g", c.what, c.predicted, c.measured, 100*c.relError, c.tolerance)
		}
	}
}

func solveSim(t testing.TB, m *model.Model) *solve.Result {
	t.Helper()
	r, err := sim.New().Solve(context.Background(), m, solve.Options{Seed: 11, Requests: 60000})
	if err != nil || !r.Stable {
		t.Fatalf("solve %s: %v %+v", m.Name, err, r)
	}
	return r
}

// withLoad returns a copy of m with every workload's load multiplied.
func withLoad(t testing.TB, m *model.Model, factor float64) *model.Model {
	t.Helper()
	c, err := m.Clone()
	if err != nil {
		t.Fatal(err)
	}
	if err := whatif.Set(c, fmt.Sprintf("workload.*.load=%g", factor)); err != nil {
		t.Fatal(err)
	}
	return c
}

// experiment holds the traces of the known model at its load and at twice
// its load, and what extraction made of them.
type experiment struct {
	known          *model.Model
	base, double   *observed
	extracted      *extract.Result // from the base traces
	doubled        *extract.Result // from the traces at twice the load
	measured       *solve.Result   // base traces
	measuredDouble *solve.Result   // traces at twice the load
}

var (
	shared    *experiment
	sharedErr string
)

// roundTrip generates both trace sets and extracts from them, once per test
// binary.
func roundTrip(t *testing.T) *experiment {
	t.Helper()
	if sharedErr != "" {
		t.Fatal(sharedErr)
	}
	if shared != nil {
		return shared
	}
	sharedErr = "the round trip failed in an earlier test"
	m0, err := model.Parse([]byte(knownModel), "known.yaml")
	if err != nil {
		t.Fatal(err)
	}
	requests := int64(4000)
	if testing.Short() {
		requests = 1500
	}
	dir, err := os.MkdirTemp("", "roundtrip")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	x := &experiment{known: m0}
	x.base = generate(t, m0, 1, requests, dir)
	x.double = generate(t, withLoad(t, m0, 2), 2, requests, dir)
	ctx := context.Background()
	if x.extracted, err = extractRun(ctx, []string{x.base.path}, "extracted", extractConfig); err != nil {
		t.Fatal(err)
	}
	if x.doubled, err = extractRun(ctx, []string{x.double.path}, "extracted2", extractConfig); err != nil {
		t.Fatal(err)
	}
	x.measured = x.extracted.State.Measured(x.extracted.Model)
	x.measuredDouble = x.doubled.State.Measured(x.extracted.Model)
	shared, sharedErr = x, ""
	return x
}

// entry is the workload extraction names after the entry operation.
const entry = "GET /page"

// hostPairs maps the extracted CPU resources to the known ones.
var hostPairs = []struct{ extracted, known string }{{"front.cpu", "web.cpu"}, {"app.cpu", "app.cpu"}, {"data.cpu", "data.cpu"}}

// predictions solves m at the observed load and at twice the load and
// compares with both trace sets.
func (x *experiment) predictions(t *testing.T, m *model.Model, response, rest bool) []comparison {
	var out []comparison
	for _, c := range []struct {
		label string
		pred  *solve.Result
		meas  *solve.Result
		obs   *observed
	}{
		{"1x", solveSim(t, m), x.measured, x.base},
		{"2x", solveSim(t, withLoad(t, m, 2)), x.measuredDouble, x.double},
	} {
		pw, mw := c.pred.Workloads[entry], c.meas.Workloads[entry]
		if pw == nil || mw == nil {
			t.Fatalf("%s: workload %q missing: predicted %v, measured %v", c.label, entry, c.pred.Workloads, c.meas.Workloads)
		}
		if response {
			out = append(out, compare(c.label+" mean response", pw.ResponseTime.Mean, pw.ResponseTime.CI95, c.obs.rt, mw.ResponseTime.Mean))
		}
		if !rest {
			continue
		}
		out = append(out, compare(c.label+" throughput", pw.Throughput, pw.ThroughputCI95, c.obs.x, mw.Throughput))
		for _, h := range hostPairs {
			pr, mr := c.pred.Resources[h.extracted], c.meas.Resources[h.extracted]
			if pr == nil || mr == nil {
				t.Fatalf("%s: resource %s missing: predicted %v, measured %v", c.label, h.extracted, pr, mr)
			}
			out = append(out, compare(c.label+" utilization "+h.extracted, pr.Utilization, pr.UtilizationCI95, c.obs.util[h.known], mr.Utilization))
		}
	}
	return out
}

// TestRoundTripStructure checks what extraction recovered of the known
// model: placement, the loop's counts, the branch, CPU demands and the rate,
// each within four standard errors of the truth.
func TestRoundTripStructure(t *testing.T) {
	x := roundTrip(t)
	m := x.extracted.Model
	t.Logf("extracted model:\n%s", m.Marshal())
	for _, w := range x.extracted.Report.Warnings {
		t.Logf("extraction warning: %s", w)
	}
	if len(m.Hosts) != 3 || m.Host("front") == nil || m.Host("front").Replicas != 2 || m.Host("data").CPU.Cores != 2 {
		t.Fatalf("hosts %v", m.Hosts)
	}
	near := func(what string, got, want, se float64) {
		t.Helper()
		if math.Abs(got-want) > 4*se {
			t.Errorf("%s = %.5g, want %.5g ± %.3g", what, got, want, 4*se)
		}
	}
	requests := float64(x.extracted.State.Traces)
	page := m.Operation("front/GET /page")
	if page == nil || len(page.Steps) < 3 {
		t.Fatalf("front/GET /page: %+v", page)
	}
	cpu := page.Steps[0]
	near("front CPU demand", cpu.Demand.Mean(), 14e-3, 14e-3/math.Sqrt(requests))
	loop, branch := page.Steps[1], page.Steps[2]
	if loop.Kind != model.StepLoop || branch.Kind != model.StepBranch {
		t.Fatalf("front steps %v", page.Steps)
	}
	values, probs := loop.Times.PMF()
	got := map[int]float64{}
	for i, v := range values {
		got[v] = probs[i]
	}
	for k, p := range map[int]float64{1: 0.5, 2: 0.3, 4: 0.2} {
		near(fmt.Sprintf("P(loop = %d)", k), got[k], p, math.Sqrt(p*(1-p)/requests))
	}
	for _, b := range branch.Branches {
		p := 0.6
		if len(b.Steps) > 0 {
			p = 0.4
		}
		near("branch probability", b.P, p, math.Sqrt(p*(1-p)/requests))
	}
	get := m.Operation("catalog/get")
	near("catalog CPU demand", get.Steps[0].Demand.Mean(), 4e-3, 4e-3/math.Sqrt(1.9*requests))
	create := m.Operation("orders/create")
	near("orders CPU demand", create.Steps[0].Demand.Mean(), 30e-3, 30e-3/math.Sqrt(0.4*requests))
	rate := m.Workload(entry).Open.Rate
	near("arrival rate", rate, 50, 50/math.Sqrt(requests))
}

// TestRoundTrip compares the extracted model's predictions of throughput
// and CPU utilization with what the traces measured, at the observed load
// and at twice that load.
func TestRoundTrip(t *testing.T) {
	x := roundTrip(t)
	check(t, x.predictions(t, x.extracted.Model, false, true))
}

// withoutDelays removes the delay steps extraction appended to each
// operation for its off-CPU time (the known model has none).
func withoutDelays(t *testing.T, m *model.Model) *model.Model {
	c, err := m.Clone()
	if err != nil {
		t.Fatal(err)
	}
	for _, comp := range c.Components {
		for _, op := range comp.Operations {
			op.Steps = slices.DeleteFunc(op.Steps, func(s model.Step) bool { return s.Kind == model.StepDelay })
		}
	}
	return c
}

// TestRoundTripResponseWithoutOffCPU predicts response times with the
// extracted model stripped of its off-CPU delays: what remains (CPU demands,
// loop, branch, placement, cores) predicts the mean response at both loads.
// Compare TestRoundTripResponse.
func TestRoundTripResponseWithoutOffCPU(t *testing.T) {
	x := roundTrip(t)
	check(t, x.predictions(t, withoutDelays(t, x.extracted.Model), true, false))
}

// TestRoundTripResponse compares the extracted model's mean response time
// with the traces' at the observed load and at twice the load.
func TestRoundTripResponse(t *testing.T) {
	x := roundTrip(t)
	check(t, x.predictions(t, x.extracted.Model, true, false))
}

// TestRoundTripOffCPU checks that the time operations spent off the CPU,
// which in the known model is all waiting for the CPU, does not come back
// as a delay: the model's CPU makes requests wait again. What remains is
// the error of the processor-sharing correction, a small part of the
// observed off-CPU time.
func TestRoundTripOffCPU(t *testing.T) {
	x := roundTrip(t)
	for id, observed := range x.base.offCPU {
		op := x.extracted.Model.Operation(id)
		var got float64
		for _, s := range op.Steps {
			if s.Kind == model.StepDelay {
				got += s.Demand.Mean()
			}
		}
		if got > 0.15*observed {
			t.Errorf("%s: off-CPU delay of mean %.4g remains of the spans' %.4g off the CPU (%.0f %%)", id, got, observed, 100*got/observed)
		} else {
			t.Logf("%s: off-CPU delay mean %.4g of the spans' %.4g", id, got, observed)
		}
	}
}
