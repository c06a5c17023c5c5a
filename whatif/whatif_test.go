package whatif

import (
	"context"
	"maps"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve"
	"github.com/perfcast/perfcast/solve/mva"
	"github.com/perfcast/perfcast/solve/sim"
)

const mm1 = `perfcast: 1
hosts: {app: {cpu: {cores: 1}, disks: {data: {servers: 1}}}}
components:
  svc:
    host: app
    threads: 4
    operations:
      op: {steps: [{cpu: exp(10ms)}]}
passive:
  lock: {capacity: 1}
workload:
  w:
    open: {rate: 50/s}
    steps: [{call: svc/op}]
  u:
    closed: {users: 10, think: exp(1s)}
    steps: [{call: svc/op}]
`

func parse(t *testing.T) *model.Model {
	t.Helper()
	m, err := model.Parse([]byte(mm1), "mm1.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestSet(t *testing.T) {
	m := parse(t)
	for _, s := range []string{
		"hosts.app.cpu.cores=8", "hosts.app.replicas=3", "hosts.app.cpu.speed=1.5",
		"hosts.app.cpu.speed_variation=0.2",
		"hosts.app.cpu.speed_window=500ms",
		"hosts.app.cpu.limit=2500m", "hosts.app.cpu.period=50ms",
		"components.svc.threads=32", "passive.lock.capacity=20", "passive.lock.partitioned=true",
		"workload.w.open.rate=120/s", "workload.u.closed.users=400", "workload.*.load=2",
		"hosts.app.disks.data.servers=4", "hosts.*.disks.*.scheduling=random",
	} {
		if err := Set(m, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	h := m.Host("app")
	if h.CPU.Cores != 8 || h.Replicas != 3 || h.CPU.Speed != 1.5 || h.CPU.SpeedVariation != 0.2 || h.CPU.SpeedWindow != 0.5 || h.CPU.Limit != 2.5 || h.CPU.Period != 0.05 || m.Component("svc").Threads != 32 ||
		m.PassiveResource("lock").Capacity != 20 || !m.PassiveResource("lock").Partitioned || m.Workload("w").Open.Rate != 240 || m.Workload("u").Closed.Users != 800 ||
		h.Disk("data").Servers != 4 || h.Disk("data").Scheduling != model.RandomOrder {
		t.Errorf("not all set:\n%s", m.Marshal())
	}
}

func TestSetErrors(t *testing.T) {
	m := parse(t)
	for s, want := range map[string]string{
		"hosts.db.cpu.cores=2":             `no host named "db" (hosts: app)`,
		"hosts.app.cpu.corez=2":            "unknown key (settable: hosts.NAME.replicas",
		"host.app.cpu.cores=2":             "keys start with hosts, components, passive, workload",
		"hosts.app.cpu.cores=two":          "whole number",
		"hosts.app.cpu.cores":              "KEY=VALUE",
		"workload.u.open.rate=3":           "closed",
		"components.svc.threads=0":         "at least 1",
		"workload.w.open.rate=fast":        "rate",
		"passive.nope.capacity=2":          `no passive resource named "nope" (passive: lock)`,
		"passive.lock.partitioned=maybe":   "want true or false",
		"hosts.app.cpu.speed_variation=-1": "at least 0",
		"hosts.app.disks.log.servers=2":    `no disk named "app.disks.log" (disks: app.disks.data)`,
		"hosts.db.disks.data.servers=2":    `no disk named "db.disks.data"`,
		"hosts.app.disks.data.servers=0":   "at least 1",
		"hosts.app.disks.data.speed=2":     "hosts.NAME.disks.DISK.servers",
		"hosts.*.servers=2":                "unknown key",
		"workload.u.load=1e12":             "1e+13 users are more than perfcast solves",
	} {
		err := Set(m, s)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want it to contain %q", s, err, want)
		}
	}
}

func TestParseVary(t *testing.T) {
	for s, want := range map[string][]float64{
		"workload.w.open.rate=10/s..40/s:10": {10, 20, 30, 40},
		"hosts.app.cpu.cores=1..4":           {1, 2, 3, 4},
		"workload.*.load=1..2":               {1, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8, 1.9, 2},
		"components.svc.threads=10..100":     {10, 19, 28, 37, 46, 55, 64, 73, 82, 91, 100},
	} {
		v, err := ParseVary(s)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		if len(v.Values) != len(want) {
			t.Fatalf("%s: %v, want %v", s, v.Values, want)
		}
		for i := range want {
			if math.Abs(v.Values[i]-want[i]) > 1e-9 {
				t.Errorf("%s: %v, want %v", s, v.Values, want)
				break
			}
		}
	}
	for _, s := range []string{"k=1", "k=2..1", "k=1..2:0", "k=a..b", "k", "k=1..1e9:1"} {
		if _, err := ParseVary(s); err == nil {
			t.Errorf("%s: accepted", s)
		}
	}
}

// TestSweepMM1 checks a load sweep of an open M/M/1 station against
// R = S/(1-ρ), and that the grid of two keys has every combination.
func TestSweepMM1(t *testing.T) {
	m := parse(t)
	m.Workloads = m.Workloads[:1]
	m.Component("svc").Threads = model.Unlimited
	rates, _ := ParseVary("workload.w.open.rate=10..90:20")
	cores, _ := ParseVary("hosts.app.cpu.cores=1..2")
	solver := func(ctx context.Context, m *model.Model) (*solve.Result, error) {
		return mva.New().Solve(ctx, m, solve.Options{})
	}
	points, err := Sweep(context.Background(), m, []Vary{rates, cores}, 3, solver)
	if err != nil {
		t.Fatal(err)
	}
	if len(points) != 10 {
		t.Fatalf("%d points, want 10", len(points))
	}
	prev := 0.0
	for _, p := range points {
		if p.Set["hosts.app.cpu.cores"] != 1 {
			continue
		}
		lambda := p.Set["workload.w.open.rate"]
		want := 0.01 / (1 - lambda*0.01)
		got := p.Result.Workloads["w"].ResponseTime.Mean
		if math.Abs(got-want) > 1e-9*want {
			t.Errorf("λ=%g: R=%g, want %g", lambda, got, want)
		}
		if got <= prev {
			t.Errorf("response time not increasing with load at λ=%g", lambda)
		}
		prev = got
	}
	if _, err := Sweep(context.Background(), m, []Vary{{Key: "hosts.x.cpu.cores", Values: []float64{1}}}, 1, solver); err == nil {
		t.Error("a key naming nothing was accepted")
	}
}

func TestCapacityMM1AndMMc(t *testing.T) {
	solver := func(ctx context.Context, m *model.Model) (*solve.Result, error) {
		return mva.New().Solve(ctx, m, solve.Options{})
	}
	m := parse(t)
	m.Workloads = m.Workloads[:1]
	m.Component("svc").Threads = model.Unlimited
	// M/M/1, S = 10 ms: mean < 50 ms while λ < (1 - S/R)/S = 80/s.
	slo, err := ParseSLO("mean(w) < 50ms")
	if err != nil {
		t.Fatal(err)
	}
	v, _ := ParseVary("workload.w.open.rate=1..200")
	c, err := FindCapacity(context.Background(), m, v, []SLO{slo}, solver)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Found || math.Abs(c.Value-80) > 80*1e-5 {
		t.Errorf("largest rate %g (found %v), want 80", c.Value, c.Found)
	}
	// M/M/c: 50/s of 100 ms on c cores; util < 0.7 needs c ≥ 5/0.7, so 8.
	m.Component("svc").Operations[0].Steps[0].Demand = model.Exp(0.1)
	util, _ := ParseSLO("util(app.cpu) < 0.7")
	cores, _ := ParseVary("hosts.app.cpu.cores=1..64")
	c, err = FindCapacity(context.Background(), m, cores, []SLO{util}, solver)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Found || c.Value != 8 {
		t.Errorf("fewest cores %g (found %v), want 8", c.Value, c.Found)
	}
	// None in range: the answer says where the SLO comes closest (6
	// cores) and what it is there (5 busy cores of 6), or that the
	// model is unstable there.
	few, _ := ParseVary("hosts.app.cpu.cores=1..6")
	if c, err = FindCapacity(context.Background(), m, few, []SLO{util}, solver); err != nil || c.Found {
		t.Fatalf("want none in 1..6, got %+v %v", c, err)
	}
	if c.Value != 6 || c.Binding.Text != util.Text || math.Abs(c.BindingValue-5.0/6) > 1e-9 || c.Result == nil {
		t.Errorf("none in 1..6: at %g, %s is %g, want 6 and 5/6", c.Value, c.Binding.Text, c.BindingValue)
	}
	few, _ = ParseVary("hosts.app.cpu.cores=1..4")
	if c, err = FindCapacity(context.Background(), m, few, []SLO{util}, solver); err != nil || c.Found || !math.IsInf(c.BindingValue, 1) {
		t.Errorf("want none in 1..4, unstable at 4, got %+v %v", c, err)
	}
	if got := util.Format(c.BindingValue); !strings.Contains(got, "unstable") {
		t.Errorf("Format(+Inf) = %q", got)
	}
	if got := util.Format(5.0 / 6); got != "83.3 %" {
		t.Errorf("Format(5/6) = %q, want 83.3 %%", got)
	}
	// The smallest CPU limit: the analytical solver takes a limit L ≤ 1
	// core as one server of speed L, so M/M/1 with S = 10 ms / L keeps
	// mean(w) < 50 ms at 50/s while L > λS + S/R = 0.7.
	m.Component("svc").Operations[0].Steps[0].Demand = model.Exp(0.01)
	m.Host("app").CPU.Cores = 1
	mean, _ := ParseSLO("mean(w) < 50ms")
	limit, _ := ParseVary("hosts.app.cpu.limit=0.1..1")
	if c, err = FindCapacity(context.Background(), m, limit, []SLO{mean}, solver); err != nil || !c.Found || math.Abs(c.Value-0.7) > 1e-6 {
		t.Errorf("smallest limit %g (found %v, %v), want 0.7", c.Value, c.Found, err)
	}
}

func TestParseSLO(t *testing.T) {
	for s, want := range map[string]SLO{
		"p95(checkout) < 200ms": {Stat: "p95", Target: "checkout", Bound: 0.2},
		"mean(db/query)<1.5ms":  {Stat: "mean", Target: "db/query", Bound: 0.0015},
		"util(app.cpu) < 0.8":   {Stat: "util", Target: "app.cpu", Bound: 0.8},
		"util(app.cpu) < 75%":   {Stat: "util", Target: "app.cpu", Bound: 0.75},
	} {
		got, err := ParseSLO(s)
		if err != nil || got.Stat != want.Stat || got.Target != want.Target || math.Abs(got.Bound-want.Bound) > 1e-12 {
			t.Errorf("%s: %+v %v", s, got, err)
		}
	}
	for _, s := range []string{"p97(x) < 1s", "mean(x) > 1s", "mean(x) < fast", "util(x) < -1"} {
		if _, err := ParseSLO(s); err == nil {
			t.Errorf("%s accepted", s)
		}
	}
}

// TestCapacityP95BySimulation: on an M/M/1 FCFS station with S = 10 ms the
// sojourn time is exponential with rate μ - λ, so p95 < 100 ms holds while
// λ < μ + ln(0.05)/0.1 ≈ 70.04/s. The simulated search must land within
// what the p95 estimate's precision allows: a relative error ε of the p95
// moves the threshold by about ε·(μ - λ).
func TestCapacityP95BySimulation(t *testing.T) {
	if testing.Short() {
		t.Skip("simulation")
	}
	m := parse(t)
	m.Workloads = m.Workloads[:1]
	m.Component("svc").Threads = model.Unlimited
	m.Host("app").CPU.Scheduling = model.FCFS
	slo, _ := ParseSLO("p95(w) < 100ms")
	v, _ := ParseVary("workload.w.open.rate=10..95")
	solver := func(ctx context.Context, m *model.Model) (*solve.Result, error) {
		return sim.New().Solve(ctx, m, solve.Options{Seed: 1, Requests: 400000, Workers: 2})
	}
	c, err := FindCapacity(context.Background(), m, v, []SLO{slo}, solver)
	if err != nil {
		t.Fatal(err)
	}
	want := 100 + math.Log(0.05)/0.1
	// 400 000 requests put the p95 within about 2 % (sketch 0.5 % plus
	// sampling); 3 % of μ - λ ≈ 0.9/s.
	if tol := 0.03 * (100 - want); !c.Found || math.Abs(c.Value-want) > tol {
		t.Errorf("largest rate %g, want %g ± %g", c.Value, want, tol)
	}
}

// A search over a continuous key tries values of a few significant digits
// and stops when the next would repeat an end of the bracket.
func TestCapacityDigits(t *testing.T) {
	for _, c := range []struct {
		x    float64
		n    int
		want float64
	}{{3.65826416015625, 4, 3.658}, {80.00004, 7, 80.00004}, {0.000123456, 2, 0.00012}, {-2.5e6, 1, -3e6}, {0, 4, 0}} {
		if got := roundDigits(c.x, c.n); math.Abs(got-c.want) > 1e-12*math.Abs(c.want) {
			t.Errorf("roundDigits(%g, %d) = %g, want %g", c.x, c.n, got, c.want)
		}
	}
	// A threshold at 80 exactly: every value tried has at most seven
	// digits, and the search ends beside it.
	solver := func(ctx context.Context, m *model.Model) (*solve.Result, error) {
		r := solve.NewResult(m, "test")
		r.Workloads["w"] = &solve.WorkloadResult{ResponseTime: solve.Times{Mean: m.Workloads[0].Open.Rate / 1600}}
		return r, nil
	}
	m := parse(t)
	m.Workloads = m.Workloads[:1]
	slo, _ := ParseSLO("mean(w) < 50ms")
	v, _ := ParseVary("workload.w.open.rate=1..200")
	c, err := FindCapacity(context.Background(), m, v, []SLO{slo}, solver)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Found || c.Value >= 80 || c.Value < 80*(1-1e-6) || roundDigits(c.Value, 7) != c.Value {
		t.Errorf("largest rate %v after %d solves, want just below 80 in seven digits", c.Value, c.Evaluations)
	}
	t.Logf("exact: %v after %d solves", c.Value, c.Evaluations)
	// Simulated results: four digits, so fewer solves.
	exact := c.Evaluations
	sim := func(ctx context.Context, m *model.Model) (*solve.Result, error) {
		r, err := solver(ctx, m)
		r.Sim = &solve.SimInfo{}
		return r, err
	}
	if c, err = FindCapacity(context.Background(), m, v, []SLO{slo}, sim); err != nil {
		t.Fatal(err)
	}
	t.Logf("simulated: %v after %d solves", c.Value, c.Evaluations)
	if !c.Found || c.Value >= 80 || c.Value < 79.9 || roundDigits(c.Value, 4) != c.Value || c.Evaluations >= exact {
		t.Errorf("simulated: largest rate %v after %d solves (%d exact), want just below 80 in four digits", c.Value, c.Evaluations, exact)
	}
}

// Swept values reach --set in a form it takes: a million cores is
// "1000000", which a whole-number key accepts, where "1e+06" was refused.
func TestFormatValue(t *testing.T) {
	for v, want := range map[float64]string{1e6: "1000000", 3: "3", 0.5: "0.5", 2.5e-7: "2.5e-07", 1e20: "1e+20", -4: "-4"} {
		if got := FormatValue(v); got != want {
			t.Errorf("FormatValue(%g) = %q, want %q", v, got, want)
		}
	}
	m := parse(t)
	if _, err := Apply(m, map[string]float64{"hosts.app.cpu.cores": 1e6}, []string{"hosts.app.cpu.cores"}); err != nil {
		t.Errorf("a million cores: %v", err)
	}
}

// The resources an SLO may name are those a result reports, and a target
// that is not there is refused before any solving, with the names there
// are.
func TestSLOTargets(t *testing.T) {
	data, err := os.ReadFile("../examples/models/shop.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.Parse(data, "shop.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r, err := mva.New().Solve(context.Background(), m, solve.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := solve.Resources(m)
	if want := slices.Sorted(maps.Keys(r.Resources)); !slices.Equal(got, want) {
		t.Errorf("resource names %q, the result's %q", got, want)
	}
	solved := 0
	count := func(context.Context, *model.Model) (*solve.Result, error) { solved++; return r, nil }
	v, _ := ParseVary("workload.*.load=1..2")
	for text, want := range map[string]string{
		"util(db.cpus) < 0.5":     `no resource "db.cpus" (resources: `,
		"p95(catalog/Get) < 10ms": `no workload or operation "catalog/Get" (shoppers, `,
		"mean(shopper) < 10ms":    `no workload or operation "shopper"`,
	} {
		slo, err := ParseSLO(text)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := FindCapacity(context.Background(), m, v, []SLO{slo}, count); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", text, err, want)
		}
	}
	if solved != 0 {
		t.Errorf("%d models solved before the SLOs were checked", solved)
	}
}

// A `*` key passes over the entries that do not have the field (the open
// rate of a closed workload) and fails only when none has it.
func TestSetStarSkipsWhatDoesNotApply(t *testing.T) {
	m := parse(t)
	if err := Set(m, "workload.*.open.rate=60/s"); err != nil {
		t.Fatal(err)
	}
	if err := Set(m, "workload.*.closed.users=7"); err != nil {
		t.Fatal(err)
	}
	if m.Workload("w").Open.Rate != 60 || m.Workload("u").Closed.Users != 7 {
		t.Errorf("rate %g, users %d; want 60 and 7", m.Workload("w").Open.Rate, m.Workload("u").Closed.Users)
	}
	if err := Set(m, "workload.u.open.rate=60/s"); err == nil || !strings.Contains(err.Error(), "workload u is closed") {
		t.Errorf("a named closed workload's open rate: %v", err)
	}
	m.Workloads = m.Workloads[1:] // only the closed one
	if err := Set(m, "workload.*.open.rate=60/s"); err == nil || !strings.Contains(err.Error(), "no workload has it") {
		t.Errorf("no open workload: %v", err)
	}
}
