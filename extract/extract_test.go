package extract

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/perfcast/perfcast/ingest"
	"github.com/perfcast/perfcast/ingest/ingesttest"
	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/trace"
)

// shopGen generates traces of a known system without contention, so that
// every parameter extraction should recover is known exactly:
//
//	front/GET /page (class page, 60 % of arrivals):
//	    cpu exp(2ms) measured; loop {1: 0.5, 3: 0.5} call catalog/GetItem
//	    (network 0.2 ms each way); p 0.3 external db call exp(5ms);
//	    p 0.2 send worker/process
//	front/GET /home (class home): cpu exp(1ms); call catalog/GetItem once
//	catalog/GetItem: cpu gamma(1ms, cv=0.5), 0.5 ms off-CPU wait
//	worker/process: cpu exp(3ms)
//
// catalog runs on two machines; arrivals are Poisson at 50/s.
type shopGen struct {
	r    *rand.Rand
	now  int64
	next uint64
	cpu  bool
}

const (
	genRate    = 50.0
	pageShare  = 0.6
	networkNS  = 200_000
	catalogOff = 0.5e-3
)

func (g *shopGen) id() ingest.SpanID {
	g.next++
	var s ingest.SpanID
	for i := 0; i < 8; i++ {
		s[i] = byte(g.next >> (56 - 8*i))
	}
	return s
}

func (g *shopGen) exp(mean float64) int64 { return int64(g.r.ExpFloat64() * mean * 1e9) }

func (g *shopGen) span(tid ingest.TraceID, parent ingest.SpanID, kind ingest.Kind, svc, host, name string, start int64) *ingest.Span {
	return &ingest.Span{TraceID: tid, SpanID: g.id(), ParentID: parent, Kind: kind, Service: svc, Host: host,
		Name: name, Start: start, CPUTime: math.NaN()}
}

// trace returns the spans of one request arriving now.
func (g *shopGen) trace() []*ingest.Span {
	var tid ingest.TraceID
	g.next++
	tid[0] = 1
	for i := 0; i < 8; i++ {
		tid[8+i] = byte(g.next >> (56 - 8*i))
	}
	var spans []*ingest.Span
	page := g.r.Float64() < pageShare
	name := "GET /home"
	if page {
		name = "GET /page"
	}
	root := g.span(tid, ingest.SpanID{}, ingest.KindServer, "front", "web", name, g.now)
	spans = append(spans, root)
	t := g.now
	cpuMean := 1e-3
	if page {
		cpuMean = 2e-3
	}
	cpu := g.exp(cpuMean)
	t += cpu
	if g.cpu {
		root.CPUTime = float64(cpu) / 1e9
	}
	calls := 1
	if page && g.r.Float64() < 0.5 {
		calls = 3
	}
	for i := 0; i < calls; i++ {
		cl := g.span(tid, root.SpanID, ingest.KindClient, "front", "web", "GET", t)
		// A random balancer: each replica's arrivals stay Poisson. (The
		// parity of the span count, used before, sent runs of requests to
		// one replica, as no balancer does, and so burstier arrivals than
		// the expected waits below assume.)
		host := "cat-1"
		if g.r.Float64() < 0.5 {
			host = "cat-2"
		}
		sv := g.span(tid, cl.SpanID, ingest.KindServer, "catalog", host, "GetItem", t+networkNS)
		c := int64(model.Gamma(1e-3, 0.5).Sample(g.r) * 1e9)
		if g.cpu {
			sv.CPUTime = float64(c) / 1e9
		}
		sv.End = sv.Start + c + int64(catalogOff*1e9)
		cl.End = sv.End + networkNS
		t = cl.End
		spans = append(spans, cl, sv)
	}
	if page && g.r.Float64() < 0.3 {
		db := g.span(tid, root.SpanID, ingest.KindClient, "front", "web", "SELECT items", t)
		db.DBSystem = "postgresql"
		db.End = t + g.exp(5e-3)
		t = db.End
		spans = append(spans, db)
	}
	if page && g.r.Float64() < 0.2 {
		pr := g.span(tid, root.SpanID, ingest.KindProducer, "front", "web", "publish", t)
		pr.End = t + 10_000
		co := g.span(tid, pr.SpanID, ingest.KindConsumer, "worker", "wk", "process", t+1_000_000)
		c := g.exp(3e-3)
		co.End = co.Start + c
		if g.cpu {
			co.CPUTime = float64(c) / 1e9
		}
		t = pr.End
		spans = append(spans, pr, co)
	}
	root.End = t
	return spans
}

// generate makes n requests at Poisson arrivals.
func generate(seed uint64, n int, cpu bool) []*ingest.Span {
	g := &shopGen{r: rand.New(rand.NewPCG(seed, 7)), now: 1_700_000_000_000_000_000, cpu: cpu}
	var all []*ingest.Span
	for i := 0; i < n; i++ {
		g.now += g.exp(1 / genRate)
		all = append(all, g.trace()...)
	}
	return all
}

func fold(t *testing.T, spans []*ingest.Span) *State {
	t.Helper()
	return foldWith(t, spans, nil)
}

// foldWith folds the spans' traces into a new state with the
// configuration cfg.
func foldWith(t testing.TB, spans []*ingest.Span, cfg *Config) *State {
	t.Helper()
	st := NewState()
	a := trace.New(trace.Options{}, func(tr *trace.Tree) error {
		st.Fold(tr, cfg)
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

// within checks an estimate against the truth with a tolerance of z
// standard errors.
func within(t *testing.T, what string, got, want, stderr float64) {
	t.Helper()
	if math.Abs(got-want) > 4*stderr+1e-9 {
		t.Errorf("%s = %g, want %g ± %g (4 standard errors)", what, got, want, 4*stderr)
	}
}

func findStep(steps []model.Step, kind model.StepKind) *model.Step {
	for i := range steps {
		if steps[i].Kind == kind {
			return &steps[i]
		}
	}
	return nil
}

func TestExtractRecoversKnownModel(t *testing.T) {
	const n = 20000
	st := fold(t, generate(1, n, true))
	m, rep := st.Model("shop", nil)
	if err := m.Validate(); err != nil {
		t.Fatalf("invalid model: %v\n%s", err, m.Marshal())
	}
	if !rep.CPUMeasured {
		t.Errorf("report says CPU was not measured")
	}
	// Hosts: catalog on two machines.
	cat := m.Component("catalog")
	if cat == nil {
		t.Fatalf("no catalog component:\n%s", m.Marshal())
	}
	if h := m.Host(cat.Host); h == nil || h.Replicas != 2 {
		t.Errorf("catalog host %+v, want 2 replicas", h)
	}
	// Workloads: rates 50*0.6 and 50*0.4 with binomial standard errors.
	page, home := m.Workload("GET /page"), m.Workload("GET /home")
	if page == nil || home == nil {
		t.Fatalf("workloads %v", m.Workloads)
	}
	within(t, "page rate", page.Open.Rate, genRate*pageShare, genRate*math.Sqrt(pageShare*(1-pageShare)/n)+genRate/math.Sqrt(n))
	within(t, "home rate", home.Open.Rate, genRate*(1-pageShare), genRate*math.Sqrt(pageShare*(1-pageShare)/n)+genRate/math.Sqrt(n))

	// GET /page: cpu exp(2ms), loop {1: .5, 3: .5} of a network delay and
	// a call, branch 0.3 for the database, send with p 0.2.
	op := m.Operation("front/GET /page")
	if op == nil {
		t.Fatalf("no front/GET /page:\n%s", m.Marshal())
	}
	npage := float64(n) * pageShare
	cpu := findStep(op.Steps, model.StepCPU)
	if cpu == nil {
		t.Fatalf("no cpu step:\n%s", m.Marshal())
	}
	within(t, "page cpu mean", cpu.Demand.Mean(), 2e-3, 2e-3/math.Sqrt(npage))
	d := m.Demands(page)
	within(t, "GetItem visits per page", d.Visits["catalog/GetItem"], 2, 1/math.Sqrt(npage))
	within(t, "worker visits per page", d.Visits["worker/process"], 0.2, math.Sqrt(0.16/npage))
	// Delays: the database (p 0.3, mean 5 ms), and per GetItem call the
	// network (0.4 ms) and GetItem's time off the CPU (0.5 ms).
	within(t, "delay per page", d.Delay, 0.3*5e-3+2*(0.4e-3+catalogOff),
		math.Sqrt((0.3*2*25e-6-0.3*0.3*25e-6)/npage)+0.9e-3/math.Sqrt(npage))
	// The loop keeps its PMF, not a mean.
	var loop *model.Step
	model.Walk(op.Steps, func(s *model.Step) {
		if s.Kind == model.StepLoop {
			loop = s
		}
	})
	if loop == nil {
		t.Fatalf("no loop in GET /page:\n%s", m.Marshal())
	}
	values, probs := loop.Times.PMF()
	if len(values) != 2 || values[0] != 1 || values[1] != 3 {
		t.Fatalf("loop pmf values %v, want [1 3]", values)
	}
	within(t, "loop P(1)", probs[0], 0.5, math.Sqrt(0.25/npage))
	// Branch probabilities of the database call and the send: the four
	// variants (db yes/no × send yes/no) for each loop shape are folded
	// into one branch; check the marginals through the demands above and
	// the variant count here.
	// The loop, common to all variants, comes before the branch.
	if op.Steps[1].Kind != model.StepLoop {
		t.Errorf("want the loop factored out of the branch:\n%s", m.Marshal())
	}
	br := findStep(op.Steps, model.StepBranch)
	if br == nil || len(br.Branches) != 4 {
		t.Errorf("want a branch of 4 variants (database × send), got %+v", br)
	}
	// GetItem: gamma(1ms, cv 0.5) CPU and 0.5 ms off the CPU.
	gi := m.Operation("catalog/GetItem")
	ncalls := npage*2 + float64(n)*(1-pageShare)
	gcpu := findStep(gi.Steps, model.StepCPU)
	within(t, "GetItem cpu mean", gcpu.Demand.Mean(), 1e-3, 0.5e-3/math.Sqrt(ncalls))
	within(t, "GetItem cpu cv", gcpu.Demand.CV(), 0.5, 0.02)
	off := findStep(gi.Steps, model.StepDelay)
	if off == nil {
		t.Fatalf("no off-CPU delay in GetItem:\n%s", m.Marshal())
	}
	// The off-CPU time less the wait for the CPU that the model's CPU will
	// produce again: GetItem runs 80/s on two replicas, ρ = 0.04 each, and
	// processor sharing makes 1 ms wait 1 ms·ρ/(1-ρ) on average.
	rho := genRate * (pageShare*2 + (1 - pageShare)) / 2 * 1e-3
	within(t, "GetItem off-cpu", off.Demand.Mean(), catalogOff-1e-3*rho/(1-rho), 1e-6+catalogOff*1e-4)
	// The send goes to the worker, whose CPU is exp(3ms).
	wp := m.Operation("worker/process")
	if wp == nil {
		t.Fatalf("no worker/process")
	}
	within(t, "worker cpu", findStep(wp.Steps, model.StepCPU).Demand.Mean(), 3e-3, 3e-3/math.Sqrt(npage*0.2))
	if share := float64(rep.Modeled) / float64(rep.Spans); share < 0.99 {
		t.Errorf("model accounts for %.3f of the spans, want all", share)
	}
}

func TestExtractMergeEqualsWhole(t *testing.T) {
	for _, c := range []struct {
		name  string
		spans []*ingest.Span
		cfg   *Config
	}{
		{"shop", generate(2, 3000, true), nil},
		{"hops with no client span", withoutClients(generate(2, 3000, true)), &Config{CPUSlots: map[string]int{"*": 2}}},
		{"one-thread runtime", onRuntime(generate(2, 3000, false), "catalog", "nodejs", 2), nil},
		{"workers", asWorkers(generate(2, 3000, true), "catalog"), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			whole := foldWith(t, c.spans, c.cfg)
			m1, _ := whole.Model("x", c.cfg)
			if c.name == "workers" && m1.Component("catalog").Threads == 0 {
				t.Errorf("the catalog's workers make no pool:\n%s", m1.Marshal())
			}
			// Split by trace: the first half of the requests and the
			// rest, and the first few (one process of the workers' in
			// the first part, several in the second) and the rest.
			var a *State
			for _, cut := range []int{len(c.spans) / 2, 10} {
				for cut < len(c.spans) && c.spans[cut].TraceID == c.spans[cut-1].TraceID {
					cut++
				}
				a = foldWith(t, c.spans[:cut], c.cfg)
				a.Merge(foldWith(t, c.spans[cut:], c.cfg))
				m2, _ := a.Model("x", c.cfg)
				if y1, y2 := m1.Marshal(), m2.Marshal(); !bytes.Equal(y1, y2) {
					t.Errorf("merged at span %d, the state gives another model:\n%s\n---\n%s", cut, y1, y2)
				}
				if !maps.Equal(whole.soleProcess, a.soleProcess) {
					t.Errorf("merged at span %d: processes %v, whole %v", cut, a.soleProcess, whole.soleProcess)
				}
				if !maps.Equal(whole.callers, a.callers) {
					t.Errorf("merged at span %d: callers %v, whole %v", cut, a.callers, whole.callers)
				}
				// A worker's executions never overlap: its profile
				// merges exactly.
				for k, wc := range whole.conc {
					if c.name != "workers" || !strings.HasPrefix(k, "proc\x00") {
						continue
					}
					w, m := wc.finished(), a.conc[k]
					if m == nil || !maps.Equal(w.levelTime, m.finished().levelTime) || w.busyPeriods != m.finished().busyPeriods {
						t.Errorf("merged at span %d: profile %q differs", cut, k)
					}
				}
			}
			if !maps.Equal(whole.siteBare, a.siteBare) || c.cfg != nil && len(whole.siteBare) == 0 {
				t.Errorf("calls with no client span: whole %v, merged %v", whole.siteBare, a.siteBare)
			}
			if r1, r2 := resumesOf(whole), resumesOf(a); !maps.Equal(r1, r2) || len(r1) == 0 {
				t.Errorf("resumes after calls: whole %v, merged %v", r1, r2)
			}
		})
	}
}

// onRuntime returns copies of spans whose spans of service svc name
// language as their runtime and one of processes processes (by their
// trace) as theirs, by process.pid alone.
func onRuntime(spans []*ingest.Span, svc, language string, processes int) []*ingest.Span {
	out := make([]*ingest.Span, len(spans))
	for i, s := range spans {
		if s.Service == svc {
			c := *s
			c.Process = &ingest.Process{Language: language, PID: strconv.Itoa(100 + int(s.TraceID[15])%processes)}
			s = &c
		}
		out[i] = s
	}
	return out
}

// asWorkers returns copies of spans whose server spans of service svc
// run in processes that each serve one at a time, as a pre-forking
// server's workers do: each the lowest-numbered process free as it
// starts, named by process.pid alone; the spans inside an execution keep
// its process.
func asWorkers(spans []*ingest.Span, svc string) []*ingest.Span {
	var servers []*ingest.Span
	for _, s := range spans {
		if s.Service == svc && s.Kind == ingest.KindServer {
			servers = append(servers, s)
		}
	}
	slices.SortStableFunc(servers, func(a, b *ingest.Span) int { return cmp.Compare(a.Start, b.Start) })
	var busyUntil []int64
	pid := map[ingest.SpanID]string{}
	for _, s := range servers {
		w := slices.IndexFunc(busyUntil, func(end int64) bool { return end <= s.Start })
		if w < 0 {
			w = len(busyUntil)
			busyUntil = append(busyUntil, 0)
		}
		busyUntil[w] = s.End
		pid[s.SpanID] = strconv.Itoa(200 + w)
	}
	out := make([]*ingest.Span, len(spans))
	for i, s := range spans {
		p, ok := pid[s.SpanID]
		if !ok && s.Service == svc {
			p, ok = pid[s.ParentID]
		}
		if ok {
			c := *s
			c.Instance = ""
			c.Process = &ingest.Process{Language: "python", Runtime: "cpython", PID: p}
			s = &c
		}
		out[i] = s
	}
	return out
}

// resumesOf gives, per operation of s that resumed after its calls, its
// resumes, their own time, the resumes with a gap after a server span and
// the calls to traced servers.
func resumesOf(s *State) map[string][4]int64 {
	out := map[string][4]int64{}
	for id, op := range s.ops {
		if op.resumes > 0 {
			out[id] = [4]int64{op.resumes, op.resumedNs, op.resumeGap.n, op.gapCalls}
		}
	}
	return out
}

func TestExtractWithoutCPUWarns(t *testing.T) {
	st := fold(t, generate(3, 2000, false))
	m, rep := st.Model("x", nil)
	if rep.CPUMeasured || len(rep.Warnings) == 0 {
		t.Errorf("want a warning that CPU is assumed; report %+v", rep)
	}
	// Own time of GetItem is its CPU plus its wait: 1.5 ms. Taken as CPU
	// under processor sharing on one core, it is the demand D plus its wait
	// for the CPU: T = D/(1 − λD) gives D = T/(1 + λT), λT the busy share
	// own times imply per replica (GetItem: 80/s over two replicas, 1.5 ms).
	gi := m.Operation("catalog/GetItem")
	aT := genRate * (pageShare*2 + (1 - pageShare)) / 2 * 1.5e-3
	within(t, "GetItem own time as cpu", findStep(gi.Steps, model.StepCPU).Demand.Mean(), 1.5e-3/(1+aT), 0.5e-3/math.Sqrt(2000))
}

func TestExtractDeterministic(t *testing.T) {
	spans := generate(4, 2000, true)
	m1, _ := fold(t, spans).Model("x", nil)
	m2, _ := fold(t, spans).Model("x", nil)
	if !bytes.Equal(m1.Marshal(), m2.Marshal()) {
		t.Error("same traces, different models")
	}
}

func TestRunOnFile(t *testing.T) {
	spans := generate(5, 500, true)
	var buf bytes.Buffer
	if err := ingesttest.WriteOTLPJSON(&buf, spans, 50); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "traces.jsonl")
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), []string{file}, "shop", nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Report.Traces != 500 || res.Model.Operation("front/GET /page") == nil {
		t.Errorf("traces %d, model:\n%s", res.Report.Traces, res.Model.Marshal())
	}
}

func TestFoldIDs(t *testing.T) {
	for in, want := range map[string]string{
		"GET /item/42":       "GET /item/{id}",
		"GET /item/42/parts": "GET /item/{id}/parts",
		"GET /u/0f8fad5b-d9cb-469f-a165-70867728950e": "GET /u/{id}",
		"GET /items":                         "GET /items",
		"GetItem":                            "GetItem",
		"GET /a/1/b/2":                       "GET /a/{id}/b/{id}",
		"GET /v2/items":                      "GET /v2/items",
		"/blob/deadbeefcafe0123":             "/blob/{id}",
		"GET /search?q=shoes&page=2":         "GET /search",
		"GET /item/42?ref=mail#top":          "GET /item/{id}",
		"GET /users/bob@example.com/orders":  "GET /users/{id}/orders",
		"GET /o/01ARZ3NDEKTSV4RRFFQ69G5FAV":  "GET /o/{id}",
		"GET /reports/2024-01-31":            "GET /reports/{id}",
		"GET /orders/order_12345":            "GET /orders/{id}",
		"GET /api/v1beta1/oauth2/index.html": "GET /api/v1beta1/oauth2/index.html",
		"GET /item/{id}":                     "GET /item/{id}",
		"POST /":                             "POST /",
		"GET /a//b/":                         "GET /a//b/",
		"GET /doc/5f2b8c9e1a4d3e7f6a8b9c0d":  "GET /doc/{id}",
		"GET /files/report 2024-01.pdf":      "GET /files/report 2024-01.pdf",
		"what? /x":                           "what? /x",
	} {
		if got := foldIDs(in); got != want {
			t.Errorf("foldIDs(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestFitSample(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for _, tc := range []struct {
		truth model.Dist
		kind  model.DistKind
	}{
		{model.Exp(2e-3), model.DistExp},
		{model.Det(1e-3), model.DistDet},
		{model.Gamma(1e-3, 0.3), model.DistGamma},
		{model.Lognormal(1e-3, 2), model.DistLognormal},
	} {
		s := newSample()
		for i := 0; i < 20000; i++ {
			s.add(tc.truth.Sample(r))
		}
		f := fitSample(s)
		if f.dist.Kind != tc.kind {
			t.Errorf("%v: fitted %v (distances %v)", tc.truth, f.dist, f.alternatives)
		}
		within(t, tc.truth.String()+" mean", f.dist.Mean(), tc.truth.Mean(), math.Sqrt(tc.truth.Var()/20000)+tc.truth.Mean()*5e-4)
	}
}

func TestMeasured(t *testing.T) {
	const n = 5000
	st := fold(t, generate(6, n, true))
	m, _ := st.Model("x", nil)
	r := st.Measured(m)
	page := r.Workloads["GET /page"]
	if page == nil {
		t.Fatalf("no measured workload: %+v", r.Workloads)
	}
	within(t, "measured page rate", page.Throughput, genRate*pageShare, genRate*math.Sqrt(pageShare*(1-pageShare)/n)+genRate/math.Sqrt(n))
	gi := r.Operations["catalog/GetItem"]
	// GetItem takes its CPU (mean 1 ms) plus 0.5 ms: 1.5 ms on average.
	within(t, "GetItem response", gi.ResponseTime.Mean, 1.5e-3, 0.5e-3/math.Sqrt(n))
	// web's CPU: 50/s × (0.6 × 2 ms + 0.4 × 1 ms) on one core = 8 %.
	within(t, "web cpu utilization", r.Resources["web.cpu"].Utilization, 50*(0.6*2e-3+0.4*1e-3), 0.08*4/math.Sqrt(n))
}

func TestSequenceFanOut(t *testing.T) {
	call := func(s, e int64) found { return found{kind: elemCall, target: "c/x", start: s, end: e} }
	// The first call ends before the others start, but the others
	// overlap: one fan-out of four.
	occ := sequence([]found{call(0, 10), call(12, 20), call(15, 25), call(16, 30)})
	if len(occ) != 1 || occ[0].kind != elemParallel || len(occ[0].lists) != 4 {
		t.Errorf("fan-out: got %s", signature(occ))
	}
	// Calls one after the other: a loop of two.
	occ = sequence([]found{call(0, 10), call(12, 20)})
	if len(occ) != 1 || occ[0].kind != elemCall || occ[0].times != 2 {
		t.Errorf("sequential calls: got %s (times %d)", signature(occ), occ[0].times)
	}
	// Another target between them keeps them apart.
	occ = sequence([]found{call(0, 10), {kind: elemCall, target: "c/y", start: 11, end: 12}, call(13, 20), call(14, 21)})
	if len(occ) != 3 || occ[2].kind != elemParallel {
		t.Errorf("interleaved: got %s", signature(occ))
	}
}

// A component whose spans come from more machines than a model may have
// replicas (serverless functions, each instance living for a few
// requests) is modeled with the most replicas allowed, with a warning, and
// the evidence names a few machines, not all of them.
func TestExtractTooManyReplicas(t *testing.T) {
	spans := generate(5, 12000, true)
	n := 0
	for _, s := range spans {
		if s.Service == "catalog" {
			s.Host = fmt.Sprintf("fn-%05d", n%(model.MaxReplicas+1))
			n++
		}
	}
	if n <= model.MaxReplicas {
		t.Fatalf("only %d catalog spans", n)
	}
	m, rep := fold(t, spans).Model("x", nil)
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	if h := m.Host(m.Component("catalog").Host); h == nil || h.Replicas != model.MaxReplicas {
		t.Errorf("catalog's host %+v, want %d replicas", h, model.MaxReplicas)
	}
	warned := false
	for _, w := range rep.Warnings {
		warned = warned || strings.Contains(w, "replicas are more than a model may have")
	}
	if !warned {
		t.Errorf("no warning of the replicas left out: %q", rep.Warnings)
	}
	for _, e := range rep.Evidence {
		if len(e) > 2000 {
			t.Errorf("evidence of %d bytes: %.200s…", len(e), e)
		}
	}
}

func TestOperationFromPath(t *testing.T) {
	for _, c := range []struct {
		sp   ingest.Span
		want string
	}{
		{ingest.Span{Name: "GET /items/{id}", HTTPRoute: "/items/{id}", HTTPMethod: "GET", URLPath: "/items/7"}, "GET /items/{id}"},
		{ingest.Span{Name: "GET", HTTPMethod: "GET", URLPath: "/items/7"}, "GET /items/{id}"},
		{ingest.Span{Name: "HTTP POST", URLPath: "/orders?dry=1"}, "POST /orders"},
		{ingest.Span{Name: "HTTP", HTTPMethod: "_OTHER", URLPath: "/x"}, "_OTHER /x"},
		{ingest.Span{Name: "GET"}, "GET"},
		{ingest.Span{Name: "get", URLPath: "/item/12"}, "GET /item/{id}"},
		{ingest.Span{Name: "shop.Catalog/Get", URLPath: "/shop.Catalog/Get"}, "shop.Catalog/Get"},
		{ingest.Span{Name: "GET /home", URLPath: "/home"}, "GET /home"},
	} {
		if got := (*Config)(nil).operation(&c.sp); got != c.want {
			t.Errorf("%+v: operation %q, want %q", c.sp, got, c.want)
		}
	}
}
