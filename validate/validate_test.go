package validate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/perfcast/perfcast/extract"
	"github.com/perfcast/perfcast/ingest"
	"github.com/perfcast/perfcast/ingest/ingesttest"
	"github.com/perfcast/perfcast/metrics"
	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve"
	"github.com/perfcast/perfcast/solve/mva"
	"github.com/perfcast/perfcast/solve/sim"
	"github.com/perfcast/perfcast/trace"
	"github.com/perfcast/perfcast/tracegen"
	"github.com/perfcast/perfcast/validate/validatetest"
)

func fold(t *testing.T, spans []*ingest.Span) *extract.State {
	t.Helper()
	st := extract.NewState()
	a := trace.New(trace.Options{}, func(tr *trace.Tree) error {
		st.Fold(tr, nil)
		return nil
	})
	for _, s := range spans {
		if err := a.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	return st
}

func parse(t *testing.T, text string) *model.Model {
	t.Helper()
	m, err := model.Parse([]byte(text), "vshop.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func withSolver(s solve.Solver) SolveFunc {
	return func(ctx context.Context, m *model.Model) (*solve.Result, error) {
		return s.Solve(ctx, m, solve.Options{Seed: 1, Precision: 0.02, Workers: 2})
	}
}

// withQuartiles is a simulation that also predicts quartiles from n
// recorded requests.
func withQuartiles(n int64) SolveFunc {
	return func(ctx context.Context, m *model.Model) (*solve.Result, error) {
		res, err := sim.New().Solve(ctx, m, solve.Options{Seed: 1, Precision: 0.02, Workers: 2})
		if err != nil {
			return nil, err
		}
		return res, AddSimulatedQuartiles(ctx, m, res, 1, n)
	}
}

// noiseSigmas is how many 95 % half-widths an error may reach before a test
// calls it a difference: 2 half-widths are 3.9 standard errors.
const noiseSigmas = 2

func within(t *testing.T, what string, got *float64, want float64, noise *float64) {
	t.Helper()
	if got == nil {
		t.Errorf("%s: not compared", what)
		return
	}
	tol := 1e-9
	if noise != nil {
		tol += noiseSigmas * *noise
	}
	if math.Abs(*got-want) > tol {
		t.Errorf("%s = %+.4f, want %+.4f ± %.4f", what, *got, want, tol)
	}
}

func validateShop(t *testing.T, sys validatetest.System, pool, n int, s solve.Solver) (*Report, *extract.State, *model.Model) {
	t.Helper()
	return validateShopWith(t, sys, pool, n, withSolver(s))
}

func validateShopWith(t *testing.T, sys validatetest.System, pool, n int, solveFn SolveFunc) (*Report, *extract.State, *model.Model) {
	t.Helper()
	tr := sys.Generate(1, n)
	st := fold(t, tr.Spans)
	m := parse(t, validatetest.Shop().Model(pool))
	rep, err := Validate(context.Background(), m, st, solveFn)
	if err != nil {
		t.Fatal(err)
	}
	return rep, st, m
}

// checkAll checks that every compared mean, throughput and utilization is
// within the noise of zero, except the keys in want, which must be within
// the noise of the given error.
func checkAll(t *testing.T, rep *Report, want map[string]float64) {
	t.Helper()
	seen := map[string]bool{}
	check := func(key string, got, noise *float64) {
		t.Helper()
		seen[key] = true
		within(t, key, got, want[key], noise)
	}
	for name, e := range rep.Errors.Workloads {
		n := rep.Noise.Workloads[name]
		check("workloads."+name+".throughput", e.Throughput, n.Throughput)
		check("workloads."+name+".response_time.mean", e.ResponseTime.Mean, n.ResponseTime.Mean)
	}
	for id, e := range rep.Errors.Operations {
		n := rep.Noise.Operations[id]
		check("operations."+id+".throughput", e.Throughput, n.Throughput)
		check("operations."+id+".response_time.mean", e.ResponseTime.Mean, n.ResponseTime.Mean)
	}
	for r, e := range rep.Errors.Resources {
		check("resources."+r+".utilization", e.Utilization, rep.Noise.Resources[r].Utilization)
	}
	for _, key := range []string{
		"workloads.page.response_time.mean", "workloads.home.response_time.mean",
		"operations.catalog/GetItem.response_time.mean", "resources.web.cpu.utilization", "resources.app.cpu.utilization",
	} {
		if !seen[key] {
			t.Errorf("%s not compared", key)
		}
	}
	for key := range want {
		if !seen[key] {
			t.Errorf("%s not compared", key)
		}
	}
}

func TestValidateSameSystemMVA(t *testing.T) {
	sys := validatetest.Shop()
	rep, st, _ := validateShop(t, sys, 0, 5000, mva.New())
	checkAll(t, rep, nil)
	// The workload is the measured one: rates from the traces, not the
	// model's 1/s.
	dur := st.Duration()
	for _, name := range []string{"page", "home"} {
		w := rep.Model.Workload(name)
		tt, _ := st.EntryTimes(EntryOf(w))
		if got, want := w.Open.Rate, float64(tt.Count())/dur; got != want {
			t.Errorf("workload %s rate %g, want the measured %g", name, got, want)
		}
	}
	if len(rep.Warnings) != 0 {
		t.Errorf("warnings on a matching model: %v", rep.Warnings)
	}
	// The summary agrees with the errors.
	if a := rep.Summary.RTPE; a == nil || a.N != 2 || a.Max < a.Median || a.Max > 2*math.Max(*rep.Noise.Workloads["page"].ResponseTime.Mean, *rep.Noise.Workloads["home"].ResponseTime.Mean)+1e-9 {
		t.Errorf("summary RTPE %+v", a)
	}
	if rep.Summary.CPUPE == nil || rep.Summary.CPUPE.N != 2 {
		t.Errorf("summary CPUPE %+v, want two hosts", rep.Summary.CPUPE)
	}
	if ws := rep.Summary.Workloads["page"]; ws == nil || ws.Host != "web" || ws.CPUPE == nil {
		t.Errorf("page summary %+v", ws)
	}
}

func TestValidateSameSystemSim(t *testing.T) {
	sys := validatetest.Shop()
	const n = 5000
	rep, _, _ := validateShopWith(t, sys, 0, n, withQuartiles(n))
	checkAll(t, rep, nil)
	// Percentiles: the relative standard error of a sample p-quantile is
	// √(p(1−p)/n) / (f(x_p)·x_p); for the sums of exponentials here f·x is
	// above 0.1 up to p95, so 0.1 bounds it, and each side's sketch adds 1 %.
	for name, e := range rep.Errors.Workloads {
		m := rep.Measured.Workloads[name]
		tt := float64(m.Throughput) * rep.Measured.Extra[DurationKey].(float64)
		for _, q := range []struct {
			p   float64
			err *float64
		}{{0.5, e.ResponseTime.P50}, {0.9, e.ResponseTime.P90}, {0.95, e.ResponseTime.P95}} {
			se := math.Sqrt(q.p*(1-q.p)/tt) / 0.1
			tol := 4*se + 0.02 + 4*0.02/1.96 // measured, sketches, the simulation's precision
			if q.err == nil || math.Abs(*q.err) > tol {
				t.Errorf("workload %s p%g error %v, want within ±%.3f", name, 100*q.p, fmtPtr(q.err), tol)
			}
		}
		// The interquartile range: each quartile with the same standard
		// error on both sides, n requests each, and the sketches' 1 %.
		q := quartilesOf(rep.Measured).Workloads[name]
		se := math.Sqrt(0.25*0.75/tt) / 0.1 * math.Sqrt(2)
		tol := (4*se + 0.02) * (q[0] + q[1]) / (q[1] - q[0])
		if e.ResponseTime.IQR == nil || math.Abs(*e.ResponseTime.IQR) > tol {
			t.Errorf("workload %s IQR error %v, want within ±%.3f", name, fmtPtr(e.ResponseTime.IQR), tol)
		}
	}
}

func fmtPtr(p *float64) any {
	if p == nil {
		return "none"
	}
	return *p
}

func TestValidateSlowerOperation(t *testing.T) {
	sys := validatetest.Shop()
	sys.ItemCPU = 3e-3
	rep, _, _ := validateShop(t, sys, 0, 5000, mva.New())
	// GetItem takes 3 ms instead of the 1 ms the model says: its error is
	// 1/3 − 1; a page takes 5 ms instead of 3; the CPU of app is busy
	// three times as long; home and web are unaffected.
	checkAll(t, rep, map[string]float64{
		"operations.catalog/GetItem.response_time.mean": 1.0/3 - 1,
		"operations.front/GET /page.response_time.mean": 3.0/5 - 1,
		"workloads.page.response_time.mean":             3.0/5 - 1,
		"resources.app.cpu.utilization":                 1.0/3 - 1,
	})
	var buf bytes.Buffer
	if err := WriteText(&buf, rep); err != nil {
		t.Fatal(err)
	}
	// The differences are marked as beyond the noise.
	for _, line := range strings.Split(buf.String(), "\n") {
		if strings.Contains(line, "resource app.cpu") && !strings.Contains(line, "*") {
			t.Errorf("app.cpu difference not marked: %q", line)
		}
		if strings.Contains(line, "resource web.cpu") && strings.Contains(line, "*") {
			t.Errorf("web.cpu marked though unchanged: %q", line)
		}
	}
}

// mg1Wait is the mean wait of an M/G/1 FIFO queue whose service is the sum
// of two exponentials of means a and b.
func mg1Wait(lambda, a, b float64) float64 {
	s := a + b
	s2 := 2*a*a + 2*b*b + 2*a*b // E[(X+Y)²] for independent exponentials
	rho := lambda * s
	return lambda * s2 / (2 * (1 - rho))
}

func TestValidateSmallerPool(t *testing.T) {
	sys := validatetest.Shop()
	sys.Rate = 200
	sys.Pool = 1
	// The model has 1000 connections; the system one.
	rep, _, _ := validateShop(t, sys, 1000, 8000, sim.New())
	w := mg1Wait(sys.Rate*sys.PageShare, sys.PageCPU, sys.ItemCPU)
	work := sys.PageCPU + sys.ItemCPU
	want := work/(work+w) - 1
	checkAll(t, rep, map[string]float64{
		"workloads.page.response_time.mean":             want,
		"operations.front/GET /page.response_time.mean": want,
	})
	if *rep.Errors.Workloads["page"].ResponseTime.Mean > -0.2 {
		t.Errorf("page error %.3f: the pool's wait is missed", *rep.Errors.Workloads["page"].ResponseTime.Mean)
	}
}

// batchMeansHalfWidth is the 95 % half-width of the mean of a correlated
// series by 20 batch means.
func batchMeansHalfWidth(x []float64) (mean, hw float64) {
	const k = 20
	size := len(x) / k
	var means [k]float64
	for i := range k {
		var s float64
		for _, v := range x[i*size : (i+1)*size] {
			s += v
		}
		means[i] = s / float64(size)
		mean += means[i] / k
	}
	var ss float64
	for _, m := range means {
		ss += (m - mean) * (m - mean)
	}
	return mean, 2.093 * math.Sqrt(ss/(k-1)/k) // Student t, 19 degrees of freedom
}

func TestValidateQueueingSameSystem(t *testing.T) {
	sys := validatetest.Shop()
	sys.Rate = 200
	sys.Pool = 1
	tr := sys.Generate(2, 8000)
	st := fold(t, tr.Spans)
	m := parse(t, sys.Model(1))
	rep, err := Validate(context.Background(), m, st, withSolver(sim.New()))
	if err != nil {
		t.Fatal(err)
	}
	// Waiting times are correlated: the noise validation reports, from
	// independent samples, is too small; take the measured side's from
	// batch means of the generated response times instead.
	mean, hw := batchMeansHalfWidth(tr.Page)
	pw := rep.Predicted.Workloads["page"]
	noise := math.Hypot(hw/mean, halfWidth(pw.ResponseTime.CI95)/pw.ResponseTime.Mean)
	within(t, "page response time error", rep.Errors.Workloads["page"].ResponseTime.Mean, 0, &noise)
	// M/G/1 theory agrees with the measurement.
	theory := sys.PageCPU + sys.ItemCPU + mg1Wait(sys.Rate*sys.PageShare, sys.PageCPU, sys.ItemCPU)
	if math.Abs(mean-theory) > 2*hw {
		t.Errorf("generated page mean %.4g, M/G/1 gives %.4g ± %.2g", mean, theory, 2*hw)
	}
	within(t, "conn utilization vs CPU", rep.Errors.Resources["web.cpu"].Utilization, 0, rep.Noise.Resources["web.cpu"].Utilization)
}

func TestCalibrate(t *testing.T) {
	sys := validatetest.Shop()
	sys.CPUFactor = 1.3
	sys.Delay = 4e-3
	rep, st, m := validateShop(t, sys, 0, 5000, mva.New())
	cal, c, err := calibrate(t, m, rep, st)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"web", "app"} {
		cf := c.CPU[h]
		if cf == nil {
			t.Fatalf("host %s not calibrated: %+v", h, c)
		}
		// The factor is measured / predicted utilization: its relative
		// noise is that of the measured utilization.
		noise := *rep.Noise.Resources[h+".cpu"].Utilization
		if math.Abs(cf.Factor/sys.CPUFactor-1) > noiseSigmas*noise {
			t.Errorf("host %s factor %.4f, want %.2f ± %.4f", h, cf.Factor, sys.CPUFactor, noiseSigmas*noise*sys.CPUFactor)
		}
	}
	for _, w := range []string{"page", "home"} {
		ed := c.Delay[w]
		if ed == nil {
			t.Fatalf("workload %s: no delay: %+v", w, c)
		}
		ci := rep.Measured.Workloads[w].ResponseTime.CI95
		if tol := noiseSigmas * halfWidth(ci); math.Abs(ed.Seconds-sys.Delay) > tol {
			t.Errorf("workload %s delay %.4g, want %g ± %.2g", w, ed.Seconds, sys.Delay, tol)
		}
	}
	// The calibrated model says what was done, and predicts the system.
	if !strings.Contains(cal.Description, "Calibrated on 5000 traces") || !strings.Contains(cal.Description, "host web ×1.3") {
		t.Errorf("description %q", cal.Description)
	}
	if w := cal.Workload("page"); w.Steps[0].Kind != model.StepDelay || w.Open.Rate != 1 {
		t.Errorf("calibrated page workload %+v: want a leading delay and the model's own rate", w)
	}
	again, err := Validate(context.Background(), cal, st, withSolver(mva.New()))
	if err != nil {
		t.Fatal(err)
	}
	// The delay is the workload's: the entry operations' own measured
	// times keep it, so their errors are what the delay explains.
	home := sys.HomeCPU * sys.CPUFactor
	page := (sys.PageCPU + sys.ItemCPU) * sys.CPUFactor
	checkAll(t, again, map[string]float64{
		"operations.front/GET /home.response_time.mean": home/(home+sys.Delay) - 1,
		"operations.front/GET /page.response_time.mean": page/(page+sys.Delay) - 1,
	})
	// Round trip through the file format.
	back, err := model.Parse(cal.Marshal(), "calibrated.yaml")
	if err != nil {
		t.Fatalf("calibrated model does not load: %v\n%s", err, cal.Marshal())
	}
	if back.Description != cal.Description {
		t.Errorf("description lost in the file")
	}
}

func calibrate(t *testing.T, m *model.Model, rep *Report, st *extract.State) (*model.Model, *Calibration, error) {
	t.Helper()
	return Calibrate(context.Background(), m, rep, st, withSolver(mva.New()))
}

func TestCalibrateMatchingSystemChangesLittle(t *testing.T) {
	rep, st, m := validateShop(t, validatetest.Shop(), 0, 5000, mva.New())
	cal, c, err := calibrate(t, m, rep, st)
	if err != nil {
		t.Fatal(err)
	}
	for h, cf := range c.CPU {
		noise := *rep.Noise.Resources[h+".cpu"].Utilization
		if math.Abs(cf.Factor-1) > noiseSigmas*noise {
			t.Errorf("host %s factor %.4f on a matching system", h, cf.Factor)
		}
	}
	for w, ed := range c.Delay {
		if tol := noiseSigmas * halfWidth(rep.Measured.Workloads[w].ResponseTime.CI95); ed.Seconds > tol {
			t.Errorf("workload %s delay %.3g on a matching system", w, ed.Seconds)
		}
	}
	if len(c.CPU) == 0 && len(c.Delay) == 0 && cal.Description != m.Description {
		t.Errorf("nothing calibrated, but the description changed: %q", cal.Description)
	}
}

func TestCalibrateClampsFactor(t *testing.T) {
	sys := validatetest.Shop()
	sys.CPUFactor = 3
	rep, st, m := validateShop(t, sys, 0, 2000, mva.New())
	_, c, err := calibrate(t, m, rep, st)
	if err != nil {
		t.Fatal(err)
	}
	if cf := c.CPU["web"]; cf == nil || cf.Factor != MaxCPUFactor || !cf.Clamped {
		t.Errorf("web factor %+v, want clamped to %g", cf, MaxCPUFactor)
	}
	if len(c.Notes) == 0 || !strings.Contains(strings.Join(c.Notes, "\n"), "clamped") {
		t.Errorf("notes %v lack the clamping", c.Notes)
	}
}

func TestSetupMatching(t *testing.T) {
	tr := validatetest.Shop().Generate(3, 2000)
	st := fold(t, tr.Spans)
	m := parse(t, validatetest.Shop().Model(0)+`  buyers:
    closed: {users: 7, think: exp(1s)}
    steps: [{call: front/GET /home}, {call: front/GET /page}]
  ghost:
    open: {rate: 3/s}
    steps: [{call: catalog/GetItem}]
`)
	// home is claimed by the open workload home before buyers.
	p, err := Setup(m, st)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(p.Warnings, "\n")
	for _, want := range []string{"buyers enters at front/GET /home like workload home", "ghost (entry catalog/GetItem) matches no traces"} {
		if !strings.Contains(text, want) {
			t.Errorf("warnings lack %q:\n%s", want, text)
		}
	}
	if p.Model.Workload("ghost") != nil || p.Model.Workload("buyers") != nil || len(p.Model.Workloads) != 2 {
		t.Errorf("workloads %v", p.Model.Workloads)
	}
	if m.Workload("ghost") == nil {
		t.Error("Setup changed its input model")
	}

	// A closed workload keeps its users; Little's law flags a population
	// far from the measured one.
	m2 := parse(t, strings.Replace(validatetest.Shop().Model(0), "open: {rate: 1/s}\n    steps: [{call: front/GET /page}]",
		"closed: {users: 7, think: exp(1s)}\n    steps: [{call: front/GET /page}, {delay: 1ms}]", 1))
	p2, err := Setup(m2, st)
	if err != nil {
		t.Fatal(err)
	}
	if u := p2.Model.Workload("page").Closed.Users; u != 7 {
		t.Errorf("users %d, want the model's 7", u)
	}
	text = strings.Join(p2.Warnings, "\n")
	for _, want := range []string{"users thinking 1.00 s (Little's law), the model has 7", "1 step after its entry call"} {
		if !strings.Contains(text, want) {
			t.Errorf("warnings lack %q:\n%s", want, text)
		}
	}

	// Traces of an entry no workload has; no workload at all matches.
	m3 := parse(t, strings.Replace(validatetest.Shop().Model(0), "call: front/GET /home", "call: catalog/GetItem", 1))
	p3, err := Setup(m3, st)
	if err != nil {
		t.Fatal(err)
	}
	if text := strings.Join(p3.Warnings, "\n"); !strings.Contains(text, "match no workload, not compared: front/GET /home (") {
		t.Errorf("warnings %v", p3.Warnings)
	}
	m4 := parse(t, strings.ReplaceAll(strings.Replace(validatetest.Shop().Model(0), "call: front/GET /home", "call: catalog/GetItem", 1),
		"call: front/GET /page}", "call: catalog/GetItem}"))
	if _, err := Setup(m4, st); err == nil || !strings.Contains(err.Error(), "vshop.yaml: no workload matches") {
		t.Errorf("no matching workload: error %v", err)
	}
}

func TestCompare(t *testing.T) {
	m := &solve.Result{
		Workloads: map[string]*solve.WorkloadResult{
			"a": {Throughput: 10, ThroughputCI95: &[2]float64{9, 11}, ResponseTime: solve.Times{Mean: 0.1, P50: solve.Float(0.08), CI95: &[2]float64{0.09, 0.11}}},
			"z": {Throughput: 0, ResponseTime: solve.Times{Mean: 0}},
		},
		Operations: map[string]*solve.OperationResult{"c/o": {Throughput: 20, ResponseTime: solve.Times{Mean: 0.05}}},
		Resources:  map[string]*solve.ResourceResult{"h.cpu": {Utilization: 0.5, UtilizationCI95: &[2]float64{0.45, 0.55}}},
		Extra: map[string]any{QuartilesKey: &Quartiles{Workloads: map[string][2]float64{"a": {0.05, 0.15}}},
			DurationKey: 100.0},
	}
	p := &solve.Result{
		Workloads: map[string]*solve.WorkloadResult{
			"a": {Throughput: 12, ResponseTime: solve.Times{Mean: 0.15, P50: solve.Float(0.1), P90: solve.Float(1)}},
			"z": {Throughput: 1, ResponseTime: solve.Times{Mean: 1}},
			"b": {Throughput: 1},
		},
		Operations: map[string]*solve.OperationResult{"c/o": {Throughput: 20, ResponseTime: solve.Times{Mean: 0.04}}},
		Resources:  map[string]*solve.ResourceResult{"h.cpu": {Utilization: 0.4}, "h.disk.d": {Utilization: 0.1}},
		Extra:      map[string]any{QuartilesKey: &Quartiles{Workloads: map[string][2]float64{"a": {0.05, 0.25}}}},
	}
	e, n := Compare(m, p)
	js, err := json.Marshal(map[string]any{"errors": e, "noise": n})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"errors":{"workloads":{"a":{"throughput":0.2,"response_time":{"mean":0.4999999999999999,"p50":0.25000000000000006,"iqr":1.0000000000000002}},"z":{"response_time":{}}},` +
		`"operations":{"c/o":{"throughput":0,"response_time":{"mean":-0.20000000000000004}}},"resources":{"h.cpu":{"utilization":-0.19999999999999996}}},` +
		`"noise":{"workloads":{"a":{"throughput":0.12,"response_time":{"mean":0.15}},"z":{"response_time":{}}},` +
		`"operations":{"c/o":{"throughput":0.04382612702882908,"response_time":{}}},"resources":{"h.cpu":{"utilization":0.08000000000000003}}}}`
	if string(js) != want {
		t.Errorf("got  %s\nwant %s", js, want)
	}
}

func TestReportJSONPaths(t *testing.T) {
	rep, _, _ := validateShop(t, validatetest.Shop(), 0, 1000, mva.New())
	data, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	get := func(path ...string) any {
		var cur any = v
		for _, p := range path {
			m, ok := cur.(map[string]any)
			if !ok {
				return nil
			}
			cur = m[p]
		}
		return cur
	}
	for _, path := range [][]string{
		{"measured", "workloads", "page", "response_time", "mean"},
		{"predicted", "workloads", "page", "response_time", "mean"},
		{"errors", "workloads", "page", "response_time", "mean"},
		{"errors", "workloads", "page", "throughput"},
		{"errors", "operations", "catalog/GetItem", "response_time", "mean"},
		{"errors", "resources", "web.cpu", "utilization"},
		{"noise", "workloads", "page", "response_time", "mean"},
		{"summary", "rtpe", "max"},
		{"summary", "workloads", "page", "rtpe"},
		{"summary", "hosts", "app", "cpupe"},
		{"measured", "extra", "response_time_quartiles", "workloads", "page"},
	} {
		if _, ok := get(path...).(float64); !ok && path[len(path)-1] != "page" {
			t.Errorf("%s: not a number in %s", strings.Join(path, "."), data)
		} else if get(path...) == nil {
			t.Errorf("%s missing", strings.Join(path, "."))
		}
	}
	// Deterministic: the same input gives the same bytes.
	rep2, _, _ := validateShop(t, validatetest.Shop(), 0, 1000, mva.New())
	data2, _ := json.Marshal(rep2)
	if !bytes.Equal(data, data2) {
		t.Error("same traces, different reports")
	}
}

// recordTraces simulates m and returns the spans it emits, as read from
// trace files, and the response times of the traces entering at entry, in
// the order they completed.
func recordTraces(t *testing.T, m *model.Model, n int64, entry string) ([]*ingest.Span, []float64) {
	t.Helper()
	opts := &tracegen.Options{Seed: 5}
	var spans []*ingest.Span
	var rts []float64
	_, err := sim.Record(context.Background(), m, sim.RecordOptions{Seed: 5, Requests: n}, func(s *sim.Span) error {
		spans = append(spans, tracegen.Convert(s, opts))
		if s.Parent == 0 && s.Component+"/"+s.Operation == entry {
			rts = append(rts, s.End-s.Start)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return spans, rts
}

// TestValidateOnSimulatedTraces validates on traces the simulator records
// from a model with queueing for a pool: the model itself matches them
// within the noise; a model with a larger pool misses the wait, on the
// workload and the operation that hold the pool, and nowhere else.
func TestValidateOnSimulatedTraces(t *testing.T) {
	sys := validatetest.Shop()
	truth := parse(t, strings.Replace(sys.Model(1), "open: {rate: 1/s}", "open: {rate: 120/s}", 1))
	spans, page := recordTraces(t, truth, 4000, "front/GET /page")
	st := fold(t, spans)

	rep, err := Validate(context.Background(), truth, st, withSolver(sim.New()))
	if err != nil {
		t.Fatal(err)
	}
	mean, hw := batchMeansHalfWidth(page)
	pw := rep.Predicted.Workloads["page"]
	noise := math.Hypot(hw/mean, halfWidth(pw.ResponseTime.CI95)/pw.ResponseTime.Mean)
	within(t, "page response time error", rep.Errors.Workloads["page"].ResponseTime.Mean, 0, &noise)
	within(t, "GetItem response time error", rep.Errors.Operations["catalog/GetItem"].ResponseTime.Mean, 0,
		rep.Noise.Operations["catalog/GetItem"].ResponseTime.Mean)
	within(t, "web.cpu utilization error", rep.Errors.Resources["web.cpu"].Utilization, 0, rep.Noise.Resources["web.cpu"].Utilization)

	bigger := parse(t, sys.Model(8))
	rep2, err := Validate(context.Background(), bigger, st, withSolver(sim.New()))
	if err != nil {
		t.Fatal(err)
	}
	rate := rep.Measured.Workloads["page"].Throughput
	work := sys.PageCPU + sys.ItemCPU
	want := work/(work+mg1Wait(rate, sys.PageCPU, sys.ItemCPU)) - 1
	noise2 := math.Hypot(hw/mean, 0.02)
	within(t, "page error with 8 connections", rep2.Errors.Workloads["page"].ResponseTime.Mean, want, &noise2)
	within(t, "GetItem error with 8 connections", rep2.Errors.Operations["catalog/GetItem"].ResponseTime.Mean, 0,
		rep2.Noise.Operations["catalog/GetItem"].ResponseTime.Mean)
	within(t, "home error with 8 connections", rep2.Errors.Workloads["home"].ResponseTime.Mean, 0,
		rep2.Noise.Workloads["home"].ResponseTime.Mean)
}

// metricsCSV writes CPU utilization readings of a host every 5 s over the
// traces' time: a fraction of its cores alternating u ± du.
func metricsCSV(host string, from, to int64, u, du float64) string {
	var b strings.Builder
	b.WriteString("timestamp,host,cpu_utilization\n")
	sign := 1.0
	for ts := from/1e9 - 10; ts <= to/1e9+10; ts += 5 {
		fmt.Fprintf(&b, "%d,%s,%g\n", ts, host, u+sign*du)
		sign = -sign
	}
	return b.String()
}

func TestValidateWithMetrics(t *testing.T) {
	sys := validatetest.Shop()
	st := fold(t, sys.Generate(1, 4000).Spans)
	m := parse(t, sys.Model(0))
	// web's machine is busy 0.2 % of its 64 cores on average (the spans
	// account for about 0.1 %); app has no metrics.
	set, err := metrics.Parse(strings.NewReader(metricsCSV("web", st.First, st.Last, 0.002, 0.0002)), "cpu.csv")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := ValidateWith(context.Background(), m, st, withSolver(mva.New()), Options{Metrics: set})
	if err != nil {
		t.Fatal(err)
	}
	web := rep.Measured.Resources["web.cpu"]
	if math.Abs(web.Utilization-0.002) > 0.0001 || web.UtilizationCI95 == nil {
		t.Errorf("web utilization %+v, want 0.002 from the metrics, with an interval", web)
	}
	if !strings.Contains(strings.Join(rep.Warnings, "\n"), "CPU utilization from metrics on web (spans' CPU time: ") {
		t.Errorf("warnings %v", rep.Warnings)
	}
	// app keeps the spans' figure, within the noise of the prediction.
	within(t, "app.cpu", rep.Errors.Resources["app.cpu"].Utilization, 0, rep.Noise.Resources["app.cpu"].Utilization)
	// Calibration scales web's demands by metrics / prediction.
	_, c, err := calibrate(t, m, rep, st)
	if err != nil {
		t.Fatal(err)
	}
	pred := rep.Predicted.Resources["web.cpu"].Utilization
	if cf := c.CPU["web"]; cf == nil || cf.Factor != round3(web.Utilization/pred) {
		t.Errorf("web factor %+v, want %.3g", cf, web.Utilization/pred)
	}
}

// TestValidateWaitBeforeSpan validates on traces of a service that waits
// for a CPU slot before its span starts (a Go process's GOMAXPROCS, marked
// before_span): the operation is compared by its span time, within the
// noise with either solver, where its response time, slot wait included,
// is about 2.5 times the span.
func TestValidateWaitBeforeSpan(t *testing.T) {
	truth := parse(t, `perfcast: 1
hosts: {web: {cpu: {cores: 4}}, app: {}}
components:
  front: {host: web, operations: {page: {steps: [{cpu: exp(0.5ms)}, {call: back/query}]}}}
  back:
    host: app
    operations:
      query: {steps: [{hold: {resource: back-slot, steps: [{cpu: exp(2ms)}]}}]}
passive: {back-slot: {capacity: 1, before_span: true}}
workload:
  page: {open: {rate: 300/s}, steps: [{call: front/page}]}
`)
	spans, _ := recordTraces(t, truth, 20000, "front/page")
	st := fold(t, spans)
	for _, s := range []solve.Solver{sim.New(), mva.New()} {
		rep, err := Validate(context.Background(), truth, st, withSolver(s))
		if err != nil {
			t.Fatal(err)
		}
		q := rep.Errors.Operations["back/query"]
		if q == nil {
			t.Fatalf("%s: back/query not compared", s.Name())
		}
		t.Logf("%s: back/query span time error %+.4f, noise ±%.4f", s.Name(), *q.ResponseTime.Mean, *rep.Noise.Operations["back/query"].ResponseTime.Mean)
		within(t, s.Name()+" back/query span time error", q.ResponseTime.Mean, 0, rep.Noise.Operations["back/query"].ResponseTime.Mean)
		if !slices.ContainsFunc(rep.Warnings, func(w string) bool { return strings.Contains(w, "before_span") }) {
			t.Errorf("%s: no warning about span times in %q", s.Name(), rep.Warnings)
		}
	}
}

// TestNoiseCoversBunchedCalls validates a model against thirty sets of its
// own traces. Its page calls an item 1 time in 80 % of requests and 20
// times in the rest, so the item's count and its host's CPU vary far more
// than a Poisson count of executions says (twelve times the variance).
// The noise, from the executions' squares per request, must cover the
// error in about 95 % of the sets; a Poisson count's covers about 45 %.
func TestNoiseCoversBunchedCalls(t *testing.T) {
	m := parse(t, `perfcast: 1
hosts: {web: {}, app: {}}
components:
  front:
    host: web
    operations:
      get:
        steps:
          - cpu: exp(1ms)
          - loop: {times: {pmf: {"1": 0.8, "20": 0.2}}, steps: [{call: back/item}]}
  back:
    host: app
    operations:
      item: {steps: [{cpu: exp(2ms)}]}
workload:
  page: {open: {rate: 20/s}, steps: [{call: front/get}]}
`)
	const sets = 30
	rate, util := 0, 0
	for seed := uint64(1); seed <= sets; seed++ {
		opts := &tracegen.Options{Seed: seed}
		var spans []*ingest.Span
		if _, err := sim.Record(context.Background(), m, sim.RecordOptions{Seed: seed, Requests: 1500}, func(s *sim.Span) error {
			spans = append(spans, tracegen.Convert(s, opts))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		rep, err := Validate(context.Background(), m, fold(t, spans), withSolver(mva.New()))
		if err != nil {
			t.Fatal(err)
		}
		e, n := rep.Errors.Operations["back/item"].Throughput, rep.Noise.Operations["back/item"].Throughput
		if e != nil && n != nil && math.Abs(*e) <= *n {
			rate++
		}
		e, n = rep.Errors.Resources["app.cpu"].Utilization, rep.Noise.Resources["app.cpu"].Utilization
		if e != nil && n != nil && math.Abs(*e) <= *n {
			util++
		}
	}
	t.Logf("covered: item throughput %d of %d, app.cpu utilization %d of %d", rate, sets, util, sets)
	// Binomial(30, 0.95) falls below 24 with probability 0.003.
	if rate < 24 || util < 24 {
		t.Errorf("the noise covers the error in %d (throughput) and %d (utilization) of %d sets, want about 95 %%", rate, util, sets)
	}
}

// TestValidateMix validates a model whose closed workload is a mix of two
// entry operations (a branch of calls, as extraction makes of sessions)
// against traces of itself: the workload matches the requests of both
// entries, and its throughput and mean agree within the noise.
func TestValidateMix(t *testing.T) {
	m := parse(t, `perfcast: 1
hosts: {h: {cpu: {cores: 1}}}
components:
  web:
    host: h
    operations:
      GET /a: {steps: [{cpu: exp(5ms)}]}
      GET /b: {steps: [{cpu: exp(20ms)}]}
workload:
  sessions:
    closed: {users: 20, think: exp(500ms)}
    steps:
      - branch:
          - {p: 0.7, steps: [{call: web/GET /a}]}
          - {p: 0.3, steps: [{call: web/GET /b}]}
`)
	spans, _ := recordTraces(t, m, 8000, "")
	rep, err := Validate(context.Background(), m, fold(t, spans), withSolver(mva.New()))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range rep.Warnings {
		if strings.Contains(w, "match") {
			t.Errorf("warning: %s", w)
		}
	}
	e, n := rep.Errors.Workloads["sessions"], rep.Noise.Workloads["sessions"]
	if e == nil || n == nil {
		t.Fatalf("workload sessions not compared: %+v", rep.Errors.Workloads)
	}
	if mw := rep.Measured.Workloads["sessions"]; mw == nil || mw.Throughput < 20 {
		t.Fatalf("measured %+v", mw)
	}
	within(t, "sessions throughput error", e.Throughput, 0, n.Throughput)
	within(t, "sessions response time error", e.ResponseTime.Mean, 0, n.ResponseTime.Mean)
}

// TestValidateConsumerSent validates the model extracted from messages
// consumed in traces of their own: the consumer is a send of the orders
// operation, so its requests are not reported as matching no workload, and
// its throughput is compared.
func TestValidateConsumerSent(t *testing.T) {
	producers, consumers := ingesttest.Messages(400)
	st := fold(t, slices.Concat(producers, consumers))
	m, _ := st.Model("queue", nil)
	p, err := Setup(m, fold(t, slices.Concat(producers, consumers)))
	if err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(p.Warnings, "\n"); strings.Contains(w, "match no workload") {
		t.Errorf("the consumer's requests are said to match no workload:\n%s", w)
	}
	if or := p.Measured.Operations["worker/orders process"]; or == nil || math.Abs(or.Throughput-20) > 0.5 {
		t.Errorf("measured consumer %+v, want 20/s", or)
	}
}
