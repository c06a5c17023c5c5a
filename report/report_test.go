package report

import (
	"bytes"
	"context"
	"math"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve"
	"github.com/perfcast/perfcast/solve/mva"
	"github.com/perfcast/perfcast/solve/sim"
	"github.com/perfcast/perfcast/whatif"
)

// maxReportBytes bounds a report's size.
const maxReportBytes = 400 << 10

func solveMVA(ctx context.Context, m *model.Model) (*solve.Result, error) {
	return mva.New().Solve(ctx, m, solve.Options{})
}

// analyzeMVA analyzes a model with the analytical solver throughout.
func analyzeMVA(t *testing.T, path string) (*model.Model, *Results) {
	t.Helper()
	m, err := model.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Analyze(context.Background(), m, Options{Solve: solveMVA, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	return m, r
}

func render(t *testing.T, m *model.Model, r *Results) string {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, m, r); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestShopBottleneck checks that the report names the bottleneck of the
// example shop, and checks that answer with the simulator: past the load
// the report gives, the named resource is saturated and no other is.
func TestShopBottleneck(t *testing.T) {
	m, r := analyzeMVA(t, "../examples/models/shop.yaml")
	if r.Saturation == nil {
		t.Fatal("no saturation found")
	}
	page := render(t, m, r)
	summary := section(t, page, "summary")
	if !strings.Contains(summary, "The bottleneck is <strong>"+r.Bottleneck+"</strong>") {
		t.Errorf("summary does not name the bottleneck %s:\n%s", r.Bottleneck, summary)
	}
	// The simulator, at 1.25 times the saturating population.
	f := r.Saturation.Factor * 1.25
	pm, err := whatif.Apply(m, map[string]float64{LoadKey: f}, []string{LoadKey})
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.New().Solve(context.Background(), pm, solve.Options{Seed: 1, Requests: 30000, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	top, busiest := 0.0, ""
	for name, rr := range res.Resources {
		if rr.Utilization > top || (rr.Utilization == top && name < busiest) {
			top, busiest = rr.Utilization, name
		}
	}
	got := res.Resources[r.Bottleneck]
	if got == nil || got.Utilization < 0.99 {
		t.Fatalf("simulated at %.3g× the load, %s is not saturated: %+v (busiest %s at %.3f)", f, r.Bottleneck, got, busiest, top)
	}
	// Anything else at full utilization only waits for the bottleneck: a
	// pool whose holders call it. Active resources must have room left.
	for name, rr := range res.Resources {
		if name != r.Bottleneck && rr.Utilization >= 0.99 && m.Servers(name) > 0 {
			t.Errorf("simulated at %.3g× the load, %s is saturated too (%.3f)", f, name, rr.Utilization)
		}
	}
	// Below it, at 0.7 times, nothing is saturated.
	pm, _ = whatif.Apply(m, map[string]float64{LoadKey: r.Saturation.Factor * 0.7}, []string{LoadKey})
	res, err = sim.New().Solve(context.Background(), pm, solve.Options{Seed: 1, Requests: 30000, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	for name, rr := range res.Resources {
		if rr.Utilization >= 0.95 {
			t.Errorf("simulated at 0.7 of the saturating load, %s is at %.3f", name, rr.Utilization)
		}
	}
}

// section returns the HTML of the section with the given id.
func section(t *testing.T, page, id string) string {
	t.Helper()
	start := strings.Index(page, `<section id="`+id+`">`)
	if start < 0 {
		t.Fatalf("no section %s", id)
	}
	end := strings.Index(page[start:], "</section>")
	return page[start : start+end]
}

// TestReportContent checks what the page holds and that it fetches nothing.
func TestReportContent(t *testing.T) {
	for _, path := range []string{"../examples/models/shop.yaml", "../examples/models/pipeline.yaml"} {
		m, r := analyzeMVA(t, path)
		page := render(t, m, r)
		if len(page) > maxReportBytes {
			t.Errorf("%s: report of %d bytes, more than %d", path, len(page), maxReportBytes)
		}
		for _, id := range []string{"summary", "architecture", "response-time", "utilization", "comparison", "operations", "sweep", "evidence"} {
			section(t, page, id)
		}
		for _, want := range []string{`id="diagram"`, `id="util-observed"`, `id="util-sweep"`, `id="rt-0"`, "<table class=\"sortable\"", "prefers-color-scheme: dark", "@media print"} {
			if !strings.Contains(page, want) {
				t.Errorf("%s: no %s", path, want)
			}
		}
		// Every component and every operation is on the page.
		for _, c := range m.Components {
			if !strings.Contains(page, ">"+c.Name+"<") {
				t.Errorf("%s: component %s missing", path, c.Name)
			}
			for _, op := range c.Operations {
				if !strings.Contains(page, ">"+escaped(op.ID())+"<") {
					t.Errorf("%s: operation %s missing", path, op.ID())
				}
			}
		}
		assertSelfContained(t, path, page)
		if again := render(t, m, r); again != page {
			t.Errorf("%s: two renderings differ", path)
		}
	}
}

// escaped escapes text as html/template does in element content.
func escaped(s string) string {
	r := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;", "+", "&#43;")
	return r.Replace(s)
}

// assertSelfContained fails when a page would fetch anything: links go to
// the page itself or to data, and the only web address is the SVG
// namespace, which names and fetches nothing.
func assertSelfContained(t *testing.T, name, page string) {
	t.Helper()
	for _, h := range regexp.MustCompile(`(?i)href\s*=\s*"([^"]*)"`).FindAllStringSubmatch(page, -1) {
		if !strings.HasPrefix(h[1], "#") && !strings.HasPrefix(h[1], "data:") {
			t.Errorf("%s: link to %q", name, h[1])
		}
	}
	for _, u := range regexp.MustCompile(`(?i)\b[a-z]+://[^"'\s)]*`).FindAllString(page, -1) {
		if u != "http://www.w3.org/2000/svg" {
			t.Errorf("%s: address %q", name, u)
		}
	}
	if regexp.MustCompile(`url\(\s*[^#\s]`).MatchString(page) {
		t.Errorf("%s: url() to something but the page's own elements", name)
	}
	for _, bad := range []string{" src=", "@import", "fetch(", "XMLHttpRequest", "WebSocket", "<iframe", "<object", "<embed"} {
		if strings.Contains(strings.ToLower(page), strings.ToLower(bad)) {
			t.Errorf("%s: the page holds %q", name, bad)
		}
	}
}

func TestLargeModelReport(t *testing.T) {
	m := generatedModel(t, 30, 2)
	r, err := Analyze(context.Background(), m, Options{Solve: solveMVA, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	page := render(t, m, r)
	if len(page) > maxReportBytes {
		t.Errorf("report of a 30-component model: %d bytes, more than %d", len(page), maxReportBytes)
	}
	assertSelfContained(t, "generated", page)
}

func TestSaturateOpen(t *testing.T) {
	// One core, 10 ms per request at 50/s: half busy, saturated at twice
	// the load. The disk: 4 ms at 50/s on one server, 20 % busy.
	m, err := model.Parse([]byte(`perfcast: 1
hosts:
  h: {cpu: {cores: 1}, disks: {d: {servers: 1}}}
components:
  c:
    host: h
    operations:
      op: {steps: [{cpu: det(10ms)}, {disk: det(4ms)}]}
workload:
  w: {open: {rate: 50/s}, steps: [{call: c/op}]}
`), "one.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := Saturate(m, nil)
	if s == nil || s.Resource != "h.cpu" || math.Abs(s.Factor-2) > 1e-12 || math.Abs(s.At["workload.w.open.rate"]-100) > 1e-9 || s.ClosedOnly {
		t.Fatalf("saturation %+v, want h.cpu at 2× (100/s)", s)
	}
	f := LoadFactors(s, 13)
	if len(f) != 13 || f[0] != 1 || math.Abs(f[len(f)-1]-1.96) > 1e-9 {
		t.Errorf("load factors %v: want 13 from 1 to 1.96", f)
	}
	for i := 1; i < len(f); i++ {
		if f[i] <= f[i-1] {
			t.Errorf("load factors not increasing: %v", f)
		}
	}
	// Near saturation the sweep still starts below the observed load.
	f = LoadFactors(&Saturation{Factor: 0.5}, 5)
	if f[len(f)-1] >= 0.5 || f[0] >= f[len(f)-1] {
		t.Errorf("load factors %v for a model saturated at 0.5×", f)
	}
}

// tenMillisAt50 is one host with the given CPU (YAML) serving 10 ms of
// CPU per request at 50 requests per second.
func tenMillisAt50(t *testing.T, cpu string) *model.Model {
	t.Helper()
	m, err := model.Parse([]byte(`perfcast: 1
hosts:
  h: {cpu: `+cpu+`}
components:
  c:
    host: h
    operations:
      op: {steps: [{cpu: det(10ms)}]}
workload:
  w: {open: {rate: 50/s}, steps: [{call: c/op}]}
`), "ten.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// A CPU limited to 0.8 of its 4 cores saturates when the limit is used
// up: at 1.6 times 0.5 cores (80/s); the utilization at the observed load
// is the share of the limit, 62.5 %, from the result as from the law.
func TestSaturateLimit(t *testing.T) {
	m := tenMillisAt50(t, `{cores: 4, limit: 800m}`)
	s := Saturate(m, nil)
	if s == nil || s.Resource != "h.cpu" || math.Abs(s.At["workload.w.open.rate"]-80) > 1e-9 || math.Abs(s.Utilization-0.625) > 1e-12 {
		t.Fatalf("saturation %+v, want h.cpu at 80/s, 62.5 %% of its limit", s)
	}
	lu := 0.625
	res := &solve.Result{Resources: map[string]*solve.ResourceResult{"h.cpu": {Utilization: 0.125, Busy: 0.5, LimitUtilization: &lu}}}
	if s := Saturate(m, res); s == nil || math.Abs(s.Utilization-0.625) > 1e-12 {
		t.Errorf("saturation with a result %+v, want 62.5 %% of the limit", s)
	}
}

// A CPU that runs 1.25 times faster when fully used saturates at 1.25
// times the load the utilization law gives at its nominal speed.
func TestSaturateSpeedCurve(t *testing.T) {
	m := tenMillisAt50(t, `{speed_curve: [{utilization: 0.2, factor: 0.9}, {utilization: 0.8, factor: 1.25}]}`)
	s := Saturate(m, nil)
	if s == nil || s.Resource != "h.cpu" || math.Abs(s.At["workload.w.open.rate"]-125) > 1e-9 {
		t.Fatalf("saturation %+v, want h.cpu at 125/s", s)
	}
}

// TestSaturateSpeedVariation: a host whose speed varies saturates at the
// slowest of its speeds, where the solvers report the overload: 10 ms at
// 50/s, with a variation of 0.2 whose slowest stratum takes about 1.3
// times as long, saturates at 100/s over that multiplier, and the sweep's
// factors stay below it.
func TestSaturateSpeedVariation(t *testing.T) {
	m := tenMillisAt50(t, `{speed_variation: 0.2}`)
	mult := solve.SpeedMultipliers(0.2)
	slowest := mult[len(mult)-1]
	if !(slowest > 1.2 && slowest < 1.35) {
		t.Fatalf("slowest stratum ×%g", slowest)
	}
	s := Saturate(m, nil)
	if s == nil || s.Resource != "h.cpu" || math.Abs(s.At["workload.w.open.rate"]-100/slowest) > 1e-9 {
		t.Fatalf("saturation %+v, want h.cpu at %g/s", s, 100/slowest)
	}
	f := LoadFactors(s, 5)
	c, err := m.Clone()
	if err != nil {
		t.Fatal(err)
	}
	c.Workloads[0].Open.Rate *= f[len(f)-1]
	c.Hosts[0].CPU.Speed /= slowest
	c.Hosts[0].CPU.SpeedVariation = 0
	if b := solve.Bounds(c); !b.Stable {
		t.Errorf("the sweep's last factor %g overloads the slowest speed: %+v", f[len(f)-1], b.Utilization)
	}
}

// TestSaturateSpeedWindow: a host that changes speed over time saturates,
// for the simulator, at the mean of its speeds, 1 + v² times its speed:
// 100/s × 1.04 at a variation of 0.2; for a solver that mixes steady
// states, at the slowest.
func TestSaturateSpeedWindow(t *testing.T) {
	m := tenMillisAt50(t, `{speed_variation: 0.2, speed_window: 1s}`)
	s := Saturate(m, solve.NewResult(m, "sim"))
	if s == nil || math.Abs(s.At["workload.w.open.rate"]-104) > 1e-9 {
		t.Fatalf("saturation %+v, want h.cpu at 104/s", s)
	}
	mult := solve.SpeedMultipliers(0.2)
	if s := Saturate(m, solve.NewResult(m, "mva")); s == nil || math.Abs(s.At["workload.w.open.rate"]-100/mult[len(mult)-1]) > 1e-9 {
		t.Fatalf("saturation for mva %+v, want h.cpu at %g/s", s, 100/mult[len(mult)-1])
	}
}

// The report gives the bottleneck's utilization at the observed load as
// solved, and says why it does not set the saturating load where the CPU's
// speed varies: at 50/s of 10 ms the CPU is about half busy, but it
// saturates where its slowest speed does.
func TestAnalyzeSpeedVariationUtilization(t *testing.T) {
	m := tenMillisAt50(t, `{speed_variation: 0.2}`)
	r, err := Analyze(context.Background(), m, Options{Solve: solveMVA, Points: -1})
	if err != nil {
		t.Fatal(err)
	}
	s, u := r.Saturation, r.Predicted.Resources["h.cpu"].Utilization
	if s == nil || s.Utilization != u {
		t.Fatalf("saturation %+v, want the solved utilization %g", s, u)
	}
	mult := solve.SpeedMultipliers(0.2)
	if want := 1 / (0.5 * mult[len(mult)-1]); math.Abs(s.Factor-want) > 1e-9 || s.Factor*u > 0.98 {
		t.Errorf("factor %g at utilization %g, want %g", s.Factor, u, want)
	}
	page := render(t, m, r)
	for _, want := range []string{"it is " + fmtUtil(u) + " busy at the observed load", "Where it saturates follows from its speed when fully busy, which its speed_variation sets", fmtUtil(1/s.Factor) + " busy."} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	// Without a speed that changes, the law's utilization is the solved
	// one and needs no word.
	m = tenMillisAt50(t, `{}`)
	if r, err = Analyze(context.Background(), m, Options{Solve: solveMVA, Points: -1}); err != nil {
		t.Fatal(err)
	}
	if page := render(t, m, r); strings.Contains(page, "Where it saturates follows") {
		t.Errorf("the page explains a speed that does not change")
	}
}

func TestSaturateClosed(t *testing.T) {
	m, err := model.Load("../examples/models/shop.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// At 40 requests per second, the demands of one request decide every
	// active resource's utilization; the busiest sets the factor.
	res := solve.NewResult(m, "mva")
	res.Workloads["shoppers"] = &solve.WorkloadResult{Throughput: 40}
	s := Saturate(m, res)
	if s == nil || !s.ClosedOnly {
		t.Fatalf("saturation %+v", s)
	}
	d := m.Demands(m.Workload("shoppers"))
	top := 0.0
	for r, v := range d.Service {
		top = math.Max(top, 40*v/float64(m.Servers(r)))
	}
	if math.Abs(s.Factor-1/top) > 1e-9 {
		t.Errorf("factor %g, want %g", s.Factor, 1/top)
	}
	if got := s.At["workload.shoppers.closed.users"]; math.Abs(got-200/top) > 1e-6 {
		t.Errorf("users at saturation %g, want %g", got, 200/top)
	}
	f := LoadFactors(s, 13)
	if f[0] != 1 || math.Abs(f[len(f)-1]-roundFactor(1.5*s.Factor)) > 1e-9 {
		t.Errorf("closed load factors %v: want 1 to 1.5× saturation", f)
	}
}

func TestRefineSaturation(t *testing.T) {
	m, err := model.Load("../examples/models/shop.yaml")
	if err != nil {
		t.Fatal(err)
	}
	bound := &Saturation{Resource: "db.disk.data", Factor: 10, ClosedOnly: true, Source: "bounds"}
	point := func(f, disk, pool float64) SweepPoint {
		r := solve.NewResult(m, "mva")
		r.Resources["db.disk.data"] = &solve.ResourceResult{Utilization: disk}
		r.Resources["catalog.threads"] = &solve.ResourceResult{Utilization: pool}
		return SweepPoint{Factor: f, Result: r}
	}
	// The pool fills up between 6× (60 %) and 8× (100 %) while the disk
	// stays below 98 %: it saturates first, where it reaches 98 %, at
	// 6 + 2·0.38/0.4 = 7.9.
	sw := &Sweep{Points: []SweepPoint{point(1, 0.1, 0.05), point(6, 0.6, 0.6), point(8, 0.8, 1.0), point(12, 0.85, 1.0)}}
	s := refineSaturation(m, bound, sw)
	if s.Resource != "catalog.threads" || math.Abs(s.Factor-7.9) > 1e-9 || s.Source != "sweep" || s.Bound == nil || s.Bound.Resource != "db.disk.data" {
		t.Errorf("refined %+v, want catalog.threads at 7.9×", s)
	}
	if got := s.At["workload.shoppers.closed.users"]; math.Abs(got-200*7.9) > 1e-9 {
		t.Errorf("users at saturation %g, want %g", got, 200*7.9)
	}
	// Never beyond the law's factor.
	sw = &Sweep{Points: []SweepPoint{point(1, 0.1, 0.05), point(9, 0.9, 0.9), point(12, 0.95, 0.99)}}
	if s := refineSaturation(m, bound, sw); s.Resource != "catalog.threads" || s.Factor != 10 {
		t.Errorf("refined %+v, want catalog.threads at the law's 10×", s)
	}
	// When the law's bottleneck saturates too, it stands.
	sw = &Sweep{Points: []SweepPoint{point(1, 0.1, 0.05), point(9.8, 0.98, 0.99)}}
	if s := refineSaturation(m, bound, sw); s != bound {
		t.Errorf("refined %+v, want the bound kept", s)
	}
}

// Traces measure spans: where a request waits for a CPU slot before its
// span starts, the operations table sets the predicted span, not the
// response time from the request's arrival, next to the measured span.
func TestOperationTableSpans(t *testing.T) {
	m, err := model.Parse([]byte(`perfcast: 1
hosts: {h: {}}
components:
  c:
    host: h
    operations:
      op: {steps: [{hold: {resource: slot, steps: [{cpu: exp(2ms)}]}}]}
passive: {slot: {capacity: 1, before_span: true}}
workload:
  w: {open: {rate: 300/s}, steps: [{call: c/op}]}
`), "slot.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p95 := func(v float64) *float64 { return &v }
	pred := solve.NewResult(m, "sim")
	pred.Stable = true
	pred.Operations["c/op"] = &solve.OperationResult{Throughput: 300,
		ResponseTime: solve.Times{Mean: 5e-3, P95: p95(15e-3)}, Span: &solve.Times{Mean: 2e-3, P95: p95(6e-3)}}
	meas := solve.NewResult(m, "measured")
	meas.Operations["c/op"] = &solve.OperationResult{Throughput: 300, ResponseTime: solve.Times{Mean: 2.1e-3, P95: p95(6.2e-3)}}
	r := &Results{Predicted: pred, Measured: meas, Operations: map[string]OperationLoad{}}
	tab := operationTable(m, r)
	var head []string
	for _, c := range tab.Head {
		head = append(head, c.Label)
	}
	want := []string{"Operation", "Calls/s", "CPU per call", "Delay per call", "Mean", "Span mean", "Mean measured", "p95", "p95 measured"}
	if !slices.Equal(head, want) {
		t.Fatalf("columns %q, want %q", head, want)
	}
	var row []string
	for _, c := range tab.Rows[0] {
		row = append(row, c.Text)
	}
	if got := row[4:]; !slices.Equal(got, []string{"5.00 ms", "2.00 ms", "2.10 ms", "6.00 ms", "6.20 ms"}) {
		t.Errorf("row %q: want the response time 5ms, then the span's 2ms and p95 6ms beside the measured", row)
	}
	// Without measurements there is nothing to set the span beside.
	r.Measured = nil
	if tab := operationTable(m, r); len(tab.Head) != 6 || tab.Rows[0][4].Text != "5.00 ms" {
		t.Errorf("without measurements: %d columns, mean %q", len(tab.Head), tab.Rows[0][4].Text)
	}
}

// A hand-written model without a name that cannot carry its own load:
// the page takes its name from the file, says that nothing was solved at
// the observed load, and does not speak of a measured system it never saw.
func TestUnnamedUnstableModel(t *testing.T) {
	page := renderOneOperation(t, "{open: {rate: 2000/s}, steps: [{call: c/o}]}", "dir/overload.yaml")
	for _, want := range []string{"<h1>Performance report: overload</h1>", "Model <strong>overload</strong>:", "unstable at the observed load, where mean-value analysis has nothing to solve", "saturates at <strong>0.5×</strong>"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(page, "measured system") {
		t.Error("the page speaks of a measured system for a model without measurements")
	}
}

// TestNoLoadModel: a model whose workloads send nothing gets a report that
// says so, with no response time and no chart of load that cannot grow.
func TestNoLoadModel(t *testing.T) {
	page := renderOneOperation(t, "{closed: {users: 0, think: 1s}, steps: [{call: c/o}]}", "idle.yaml")
	if !strings.Contains(page, "No workload sends requests") {
		t.Error("the page does not say that nothing is sent")
	}
	for _, bad := range []string{"mean 0 s", "Mean response", "The dotted line marks"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page has %q", bad)
		}
	}
}

// renderOneOperation analyzes, with the analytical solver, an unnamed
// model of one 1 ms operation on one core with the workload w given, read
// from file, and renders its page.
func renderOneOperation(t *testing.T, w, file string) string {
	t.Helper()
	m, err := model.Parse([]byte(`perfcast: 1
hosts: {a: {}}
components:
  c: {host: a, operations: {o: {steps: [{cpu: 1ms}]}}}
workload:
  w: `+w+"\n"), file)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Analyze(context.Background(), m, Options{Solve: solveMVA, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	return render(t, m, r)
}

// TestSweepFallbackSaysWhy sweeps a model whose arrivals are not Poisson,
// which the analytical solver's Supports rejects: every load level goes to
// the fallback, and the sweep and the page say why.
func TestSweepFallbackSaysWhy(t *testing.T) {
	m := tenMillisAt50(t, `{}`)
	m.Workloads[0].Open.CV = 3
	var fallbacks atomic.Int64
	r, err := Analyze(context.Background(), m, Options{Solve: solveMVA, Points: 4, Workers: 2,
		SweepSupported: mva.Supports,
		SweepFallback: func(ctx context.Context, m *model.Model) (*solve.Result, error) {
			fallbacks.Add(1)
			return solveMVA(ctx, m)
		}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Sweep == nil || len(r.Sweep.Points) != 4 || fallbacks.Load() != 4 {
		t.Fatalf("sweep %+v: %d levels by the fallback, want all 4", r.Sweep, fallbacks.Load())
	}
	if len(r.Sweep.Fallback) != 1 || !strings.Contains(r.Sweep.Fallback[0], "cv 3") {
		t.Errorf("the sweep's reasons %q, want the arrivals' cv", r.Sweep.Fallback)
	}
	if page := render(t, m, r); !strings.Contains(page, "The load levels were simulated") {
		t.Error("the page does not say why the load levels were simulated")
	}
	// Poisson arrivals: the analytical solver, no reasons.
	m.Workloads[0].Open.CV = 1
	fallbacks.Store(0)
	if r, err = Analyze(context.Background(), m, Options{Solve: solveMVA, Points: 4, SweepSupported: mva.Supports,
		SweepFallback: func(ctx context.Context, m *model.Model) (*solve.Result, error) {
			fallbacks.Add(1)
			return solveMVA(ctx, m)
		}}); err != nil {
		t.Fatal(err)
	}
	if fallbacks.Load() != 0 || r.Sweep == nil || r.Sweep.Fallback != nil {
		t.Errorf("Poisson arrivals: %d levels by the fallback, reasons %q", fallbacks.Load(), r.Sweep.Fallback)
	}
}
