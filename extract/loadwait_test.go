package extract_test

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perfcast/perfcast/extract"
	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve"
	"github.com/perfcast/perfcast/solve/sim"
)

// slotStepModel is a Go service with one CPU slot (GOMAXPROCS 1) alone on
// one core: an M/M/1 queue in the slot, nothing off the CPU.
const slotStepModel = `perfcast: 1
hosts:
  app: {cpu: {cores: 1}}
components:
  svc:
    host: app
    operations:
      op:
        steps:
          - hold:
              resource: slot
              steps: [{cpu: exp(5ms)}]
passive:
  slot: {capacity: 1}
workload:
  w:
    open: {rate: 30/s}
    steps: [{call: svc/op}]
`

// Traces of a load test alternating 15 % and 75 % utilization: the waits
// for the CPU slot are taken out at each window's load, so no fixed delay
// is left in the model (at the mean load, 8.5 ms of the 12.6 ms mean wait
// would have stayed as one), and the model predicts the M/M/1 response
// time at a load between the steps.
func TestWaitsAtEachLoad(t *testing.T) {
	cfg := &extract.Config{Hosts: map[string]extract.HostConfig{"app": {Cores: 1}}, CPUSlots: map[string]int{"svc": 1}}
	_, x := extractSteps(t, slotStepModel, []float64{30, 150, 30, 150}, 60, 5, cfg)
	op := x.Model.Component("svc").Operation("op")
	delay := fixedDelay(op)
	// The mean own time of 18 000 executions is known to about 1 %
	// (M/M/1 at 75 %: response-time CV near 1, correlated over a busy
	// period); 0.5 ms is 4 % of the mean wait.
	if delay > 0.5e-3 {
		t.Errorf("a fixed delay of %.3g ms is left in the model:\n%s", delay*1e3, x.Model.Marshal())
	}
	// Poisson at 90/s: the traces' arrivals, alternating, are burstier.
	// M/M/1 at 45 %: 5 ms / (1 − 0.45).
	want := 5e-3 / (1 - 0.45)
	got := meanAt(t, x.Model, 90)
	t.Logf("predicted %.4g ms at 90/s, M/M/1 %.4g ms; delay %.3g ms", got*1e3, want*1e3, delay*1e3)
	// The simulator's 1 %, the extracted demand's ~1 %, and the
	// exponential fit's mean: 5 % in all.
	if math.Abs(got-want)/want > 0.05 {
		t.Errorf("predicted %.4g ms at 90/s, want %.4g ms", got*1e3, want*1e3)
	}
}

// spellModel is a service with 2 ms of CPU and 1 ms off the CPU per
// request.
const spellModel = `perfcast: 1
hosts:
  app: {cpu: {cores: 1}}
components:
  svc:
    host: app
    operations:
      op: {steps: [{cpu: exp(2ms)}, {delay: exp(1ms)}]}
workload:
  w:
    open: {rate: 30/s}
    steps: [{call: svc/op}]
`

// A spell of 6 s in which the operation spends 300 ms off the CPU, in
// 90 s of traces, is named in a warning; the same traces without it are
// not.
func TestSpellWarning(t *testing.T) {
	m, err := model.Parse([]byte(spellModel), "spell.yaml")
	if err != nil {
		t.Fatal(err)
	}
	stalled, err := m.Clone()
	if err != nil {
		t.Fatal(err)
	}
	stalled.Component("svc").Operation("op").Steps[1].Demand = model.Exp(0.3)
	dir := t.TempDir()
	before, spell, after := filepath.Join(dir, "before.jsonl"), filepath.Join(dir, "spell.jsonl"), filepath.Join(dir, "after.jsonl")
	record(t, before, m, 1, 0, 30*60)
	record(t, spell, stalled, 2, 61, 30*6)
	record(t, after, m, 3, 68, 30*30)
	var delay float64 // the last extraction's fixed delay
	warned := func(paths ...string) string {
		x, err := extractRun(context.Background(), paths, "x", &extract.Config{})
		if err != nil {
			t.Fatal(err)
		}
		delay = 0
		for _, s := range x.Model.Component("svc").Operation("op").Steps {
			if s.Kind == model.StepDelay {
				delay += s.Demand.Mean()
			}
		}
		for _, w := range x.Report.Warnings {
			if strings.Contains(w, "spell of overload") {
				return w
			}
		}
		return ""
	}
	if w := warned(before, spell, after); !strings.Contains(w, "svc/op") || !strings.Contains(w, "the mean of the other windows, leaves out") {
		t.Errorf("no warning of the spell: %q", w)
	} else {
		t.Log(w)
	}
	// The fixed delay leaves the spell out: 1 ms, where the mean of every
	// execution is 19.8 ms. The tolerance is 4 standard errors of the
	// mean of 2 700 exponential delays (2 % each) and the
	// CPU wait that the model makes again, about 0.13 ms, taken out by a
	// formula (no more than half of it wrong).
	if math.Abs(delay-1e-3) > 0.08e-3+0.065e-3 {
		t.Errorf("fixed delay %.4g ms with the spell, want 1 ms", delay*1e3)
	}
	spelled := delay
	if w := warned(before, after); w != "" {
		t.Errorf("a spell where there was none: %s", w)
	}
	t.Logf("fixed delay %.4g ms with the spell left out, %.4g ms without a spell", spelled*1e3, delay*1e3)
}

// lockModel is a service that holds a lock across its call to a slow
// back end: the lock's wait is time off the CPU in the caller's own time.
const lockModel = `perfcast: 1
hosts:
  app: {cpu: {cores: 4}}
  db: {cpu: {cores: 4}}
components:
  front:
    host: app
    operations:
      op:
        steps:
          - cpu: exp(0.2ms)
          - hold:
              resource: lock
              steps: [{call: back/work}]
  back:
    host: db
    operations:
      work: {steps: [{cpu: exp(0.2ms)}, {delay: exp(8ms)}]}
passive:
  lock: {capacity: 1}
workload:
  w:
    open: {rate: 30/s}
    steps: [{call: front/op}]
`

// A lock the configuration declares around a call: its wait, in the
// caller's own time in the traces, is taken out of the caller's fixed
// delay, since the model's lock makes it again; the model then predicts
// the known system's response time at a load between the traces' steps.
// Left in (as before declared waits were taken out), it would be a delay
// of about 3 ms and count the wait twice.
func TestDeclaredLockWait(t *testing.T) {
	m, err := model.Parse([]byte(lockModel), "lock.yaml")
	if err != nil {
		t.Fatal(err)
	}
	paths := steps(t, m, []float64{25, 75, 25, 75}, 60, 5)
	cfg := &extract.Config{
		Hosts:   map[string]extract.HostConfig{"app": {Cores: 4}, "db": {Cores: 4}},
		Passive: map[string]extract.PassiveConfig{"lock": {Capacity: 1, Calls: []string{"back/work"}}},
	}
	x, err := extractRun(context.Background(), paths, "extracted", cfg)
	if err != nil {
		t.Fatal(err)
	}
	op := x.Model.Component("front").Operation("op")
	delay := fixedDelay(op)
	// The mean wait over the steps is about 4 ms, known to a few per cent
	// from 12 000 executions; 0.4 ms is a tenth of it.
	if delay > 0.4e-3 {
		t.Errorf("a fixed delay of %.3g ms is left in front/op:\n%s", delay*1e3, x.Model.Marshal())
	}
	want, got := meanAt(t, m, 50), meanAt(t, x.Model, 50)
	t.Logf("at 50/s: known %.4g ms, extracted %.4g ms; delay %.3g ms", want*1e3, got*1e3, delay*1e3)
	// Each simulation within 1 %, the extracted demands and delays
	// within a few: 5 % in all.
	if math.Abs(got-want)/want > 0.05 {
		t.Errorf("predicted %.4g ms at 50/s, the known model %.4g ms", got*1e3, want*1e3)
	}
}

// TestDeclaredLockWithBurstyArrivals is TestDeclaredLockWait with 2 ms
// off the CPU after the lock and requests arriving in bursts (cv 1.5) at
// 50 a second: the lock's wait taken out is GI/G/1's for the caller's
// arrivals, about 12 ms, so the delay left is the truth's. Over ten seeds
// by hand it came out at 1.95 ms (standard deviation 0.38); with Poisson's
// wait for the lock (Allen–Cunneen's M/G/1), at 8.1 ms; with the windows'
// loads as measured (see lessChance), at 1.69 ms over six. The tolerance
// is three standard errors of the seeds' mean.
func TestDeclaredLockWithBurstyArrivals(t *testing.T) {
	src := strings.Replace(lockModel, "open: {rate: 30/s}", "open: {rate: 50/s, cv: 1.5}", 1)
	src = strings.Replace(src, "steps: [{call: back/work}]\n", "steps: [{call: back/work}]\n          - delay: exp(2ms)\n", 1)
	m, err := model.Parse([]byte(src), "lock.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := &extract.Config{
		Hosts:   map[string]extract.HostConfig{"app": {Cores: 4}, "db": {Cores: 4}},
		Passive: map[string]extract.PassiveConfig{"lock": {Capacity: 1, Calls: []string{"back/work"}}},
	}
	const seeds, sd = 4, 0.38e-3
	sum := 0.0
	for seed := range uint64(seeds) {
		path := filepath.Join(t.TempDir(), "traces.jsonl")
		record(t, path, m, 51+seed, 0, 20000)
		x, err := extractRun(context.Background(), []string{path}, "lock", cfg)
		if err != nil {
			t.Fatal(err)
		}
		d := fixedDelay(x.Model.Component("front").Operation("op"))
		t.Logf("seed %d: delay %.3g ms, truth 2 ms", 51+seed, d*1e3)
		sum += d
	}
	if mean, tol := sum/seeds, 3*sd/math.Sqrt(seeds); math.Abs(mean-2e-3) > tol {
		t.Errorf("delay %.3g ms over %d seeds, truth 2 ms ± %.2g", mean*1e3, seeds, tol*1e3)
	}
}

// replicasModel is an API of three replicas of two cores each, behind a
// round-robin balancer, in front of a database of two cores; its two
// workloads arrive in bursts (cv 2 and 1.5). The API's replicas are 56 %
// busy, the database 46 %.
const replicasModel = `perfcast: 1
hosts:
  api: {replicas: 3, cpu: {cores: 2}}
  db: {cpu: {cores: 2}}
components:
  api:
    host: api
    operations:
      read: {steps: [{cpu: gamma(3ms, cv=1.5)}, {call: db/select}, {cpu: exp(1ms)}]}
      write: {steps: [{cpu: gamma(6ms, cv=1.5)}, {call: db/insert}, {delay: exp(5ms)}]}
  db:
    host: db
    operations:
      select: {steps: [{cpu: exp(1ms)}, {delay: exp(0.5ms)}]}
      insert: {steps: [{cpu: exp(2ms)}, {delay: exp(2ms)}]}
workload:
  read: {open: {rate: 608/s, cv: 2}, steps: [{call: api/read}]}
  write: {open: {rate: 152/s, cv: 1.5}, steps: [{call: api/write}]}
`

// TestWaitsOnReplicas extracts replicasModel. The waits for the CPU taken
// out are those of the arrivals each replica and the database saw, measured
// on their spans' starts: the balancer's turns make each replica's
// arrivals far smoother than the workloads', and the API's own time
// between the workloads' arrivals and the database's calls smooths the
// database's. Taken as bursty as the workloads' arrivals, the waits came
// out so long that the write's 5 ms delay vanished and the database's came
// out at 0.96 and 0.10 ms for 2 and 0.5; the model then predicted the
// write 27 % fast at 1.25 times the load. Over ten seeds by hand the delays
// came out at 4.75, 2.00 and 0.587 ms (standard deviations 0.18, 0.04 and
// 0.02): the write's and the select's are off by more than chance, by what
// the formulas leave out (a round robin's turns are no renewal process;
// processor sharing is not insensitive to bursts of cv 1.5). Each
// tolerance is that bias and three standard deviations. At 1.25 times the
// load the model takes 10.76 and 21.88 ms against the truth's 10.47 and
// 21.86, within the 10 % allowed a model beyond the simulations' own
// intervals.
func TestWaitsOnReplicas(t *testing.T) {
	m, err := model.Parse([]byte(replicasModel), "replicas.yaml")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "traces.jsonl")
	record(t, path, m, 61, 0, 40000)
	cfg := &extract.Config{Hosts: map[string]extract.HostConfig{"api": {Cores: 2}, "db": {Cores: 2}}}
	x, err := extractRun(context.Background(), []string{path}, "replicas", cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		op         string
		delay, tol float64
	}{{"api/write", 5e-3, (0.25 + 3*0.18) * 1e-3}, {"db/insert", 2e-3, 3 * 0.04e-3}, {"db/select", 0.5e-3, (0.09 + 3*0.02) * 1e-3}} {
		d := fixedDelay(x.Model.Operation(c.op))
		t.Logf("%s: delay %.3g ms, truth %.3g ms", c.op, d*1e3, c.delay*1e3)
		if math.Abs(d-c.delay) > c.tol {
			t.Errorf("%s: delay %.3g ms, truth %.3g ms ± %.2g", c.op, d*1e3, c.delay*1e3, c.tol*1e3)
		}
	}
	truth, got := solveAt(t, m, 1.25), solveAt(t, x.Model, 1.25)
	for _, w := range []string{"read", "write"} {
		want, have := truth[w], got[w]
		t.Logf("%s at 1.25 times the load: %.4g ms, truth %.4g ms", w, have.Mean*1e3, want.Mean*1e3)
		half := func(r solve.Times) float64 { return (r.CI95[1] - r.CI95[0]) / 2 }
		if tol := modelError*want.Mean + half(want) + half(have); math.Abs(have.Mean-want.Mean) > tol {
			t.Errorf("%s at 1.25 times the load: %.4g ms, truth %.4g ms ± %.3g", w, have.Mean*1e3, want.Mean*1e3, tol*1e3)
		}
	}
}

// solveAt simulates m at load times its workloads' rates and returns their
// response times by workload.
func solveAt(t *testing.T, m *model.Model, load float64) map[string]solve.Times {
	t.Helper()
	r, err := sim.New().Solve(context.Background(), withLoad(t, m, load), solve.Options{Seed: 1, Precision: 0.02, Workers: 2})
	if err != nil || !r.Stable {
		t.Fatalf("solve at %g times the load: %v %v", load, err, r)
	}
	out := map[string]solve.Times{}
	for name, w := range r.Workloads {
		out[name] = w.ResponseTime
	}
	return out
}

// fixedDelay is the mean time op spends in delays per execution.
func fixedDelay(op *model.Operation) float64 { return meanDelay(op.Steps) }

// meanDelay is the mean time steps spend in delays per execution: loops
// count their mean times, branches their probabilities, holds their body
// (parallel lists and switches are summed as if each ran once).
func meanDelay(steps []model.Step) float64 {
	sum := 0.0
	for _, s := range steps {
		switch s.Kind {
		case model.StepDelay:
			sum += s.Demand.Mean()
		case model.StepLoop:
			sum += s.Times.Mean() * meanDelay(s.Steps)
		case model.StepBranch:
			for _, b := range s.Branches {
				sum += b.P * meanDelay(b.Steps)
			}
		case model.StepHold:
			sum += meanDelay(s.Steps)
		case model.StepParallel:
			for _, l := range s.Parallel {
				sum += meanDelay(l)
			}
		case model.StepSwitch:
			for _, c := range s.Cases {
				sum += meanDelay(c.Steps)
			}
			sum += meanDelay(s.Default)
		}
	}
	return sum
}

// meanAt is the mean response time the simulator predicts for m's first
// workload at Poisson arrivals of rate per second.
func meanAt(t *testing.T, m *model.Model, rate float64) float64 {
	t.Helper()
	c, err := m.Clone()
	if err != nil {
		t.Fatal(err)
	}
	c.Workloads[0].Open.Rate, c.Workloads[0].Open.CV = rate, 1
	res, err := sim.New().Solve(context.Background(), c, solve.Options{Seed: 1, Precision: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	return res.Workloads[c.Workloads[0].Name].ResponseTime.Mean
}

// burstyModel is a service with 5 ms of CPU and 2 ms off it per request,
// 40 % busy, its requests arriving in bursts (cv 2).
const burstyModel = `perfcast: 1
hosts:
  app: {cpu: {cores: 1}}
components:
  svc:
    host: app
    operations:
      op: {steps: [{cpu: exp(5ms)}, {delay: exp(2ms)}]}
workload:
  w:
    open: {rate: 80/s, cv: 2}
    steps: [{call: svc/op}]
`

// burstySlotModel is slotStepModel on two cores, with 2 ms off the CPU
// after the slot and requests arriving in bursts (cv 2) at 100 a second:
// the slot half busy. As in a Go server, a request waits for the slot
// before its span starts.
var burstySlotModel = strings.NewReplacer(
	"cores: 1", "cores: 2",
	"steps: [{cpu: exp(5ms)}]\n", "steps: [{cpu: exp(5ms)}]\n          - delay: exp(2ms)\n",
	"open: {rate: 30/s}", "open: {rate: 100/s, cv: 2}",
	"slot: {capacity: 1}", "slot: {capacity: 1, before_span: true}",
).Replace(slotStepModel)

// TestSlotWaitsWithBurstyArrivals extracts the slotted service of
// burstySlotModel, whose requests wait for the slot before their spans
// start and enter the system from no traced client: no trace shows that
// wait, so none of it is taken out of the own time, and the delay left is
// the truth's 2 ms. Taking GI/G/1's wait out, as extraction did before,
// left none of it (16 ms of wait against 18 ms off the CPU, when the spans
// hold 2). The service is alone on two cores with one slot, so its bursts
// wait for no core either. Over ten seeds by hand the delay came out at
// 2.00 ms (standard deviation 0.012); the tolerance is three standard
// errors of the seeds' mean.
func TestSlotWaitsWithBurstyArrivals(t *testing.T) {
	m, err := model.Parse([]byte(burstySlotModel), "slot.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if h, op := m.Host("app"), m.Operation("svc/op"); h.CPU.Cores != 2 || len(op.Steps) != 2 || m.Workloads[0].Open.CV != 2 {
		t.Fatalf("burstySlotModel is not slotStepModel changed:\n%s", burstySlotModel)
	}
	const seeds, sd = 4, 0.012e-3
	sum := 0.0
	for seed := range uint64(seeds) {
		path := filepath.Join(t.TempDir(), "traces.jsonl")
		record(t, path, m, 41+seed, 0, 40000)
		x, err := extractRun(context.Background(), []string{path}, "slot", &extract.Config{
			Hosts: map[string]extract.HostConfig{"app": {Cores: 2}}, CPUSlots: map[string]int{"svc": 1}})
		if err != nil {
			t.Fatal(err)
		}
		d := fixedDelay(x.Model.Component("svc").Operation("op"))
		t.Logf("seed %d: arrival cv %.3g, delay %.3g ms, truth 2 ms", 41+seed, x.Model.Workloads[0].Open.CV, d*1e3)
		sum += d
	}
	if mean, tol := sum/seeds, 3*sd/math.Sqrt(seeds); math.Abs(mean-2e-3) > tol {
		t.Errorf("delay %.3g ms over %d seeds, truth 2 ms ± %.2g", mean*1e3, seeds, tol*1e3)
	}
}

// TestWaitsWithBurstyArrivals extracts from traces whose requests arrive
// in bursts, on one, two and four cores: the wait for the CPU taken out of
// the time off the CPU is GI/M/c's at the windows' loads for the arrivals'
// cv, so that the delay left is the truth's 2 ms. Taken at the windows'
// loads alone, the wait would fall short by the bursts' share and the
// delay keep it (11.1 ms on one core). Over ten seeds by hand the delay
// came out at 2.05 ms (standard deviation 0.42) on one core, 40 % busy,
// 2.01 (0.34) on two and 2.01 (0.18) on four, 55 % busy; the estimated cv,
// whose error the wait amplifies, scatters by about 0.03. The tolerance
// is three standard errors of the seeds' mean. With Erlang's wait scaled
// by GI/M/1's ratio at the load per core, the delays were 3.13 and 3.23 ms
// on two and four cores.
func TestWaitsWithBurstyArrivals(t *testing.T) {
	for _, tc := range []struct {
		cores, rate int
		seeds       uint64
		sd          float64
	}{{1, 80, 4, 0.42e-3}, {2, 220, 4, 0.34e-3}, {4, 440, 2, 0.18e-3}} {
		src := strings.Replace(burstyModel, "cores: 1", fmt.Sprintf("cores: %d", tc.cores), 1)
		src = strings.Replace(src, "rate: 80/s", fmt.Sprintf("rate: %d/s", tc.rate), 1)
		m, err := model.Parse([]byte(src), "bursty.yaml")
		if err != nil {
			t.Fatal(err)
		}
		sum := 0.0
		for seed := range tc.seeds {
			path := filepath.Join(t.TempDir(), "traces.jsonl")
			record(t, path, m, 31+seed, 0, 40000)
			x, err := extractRun(context.Background(), []string{path}, "bursty", &extract.Config{Hosts: map[string]extract.HostConfig{"app": {Cores: tc.cores}}})
			if err != nil {
				t.Fatal(err)
			}
			d := fixedDelay(x.Model.Component("svc").Operation("op"))
			cv := x.Model.Workloads[0].Open.CV
			t.Logf("%d cores, seed %d: arrival cv %.3g, delay %.3g ms, truth 2 ms", tc.cores, 31+seed, cv, d*1e3)
			if math.Abs(cv-2) > 0.2 {
				t.Errorf("%d cores, seed %d: arrival cv %.3g, truth 2", tc.cores, 31+seed, cv)
			}
			sum += d
		}
		mean := sum / float64(tc.seeds)
		if tol := 3 * tc.sd / math.Sqrt(float64(tc.seeds)); math.Abs(mean-2e-3) > tol {
			t.Errorf("%d cores: delay %.3g ms over %d seeds, truth 2 ms ± %.2g", tc.cores, mean*1e3, tc.seeds, tol*1e3)
		}
	}
}
