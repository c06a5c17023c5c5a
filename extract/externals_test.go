package extract_test

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/perfcast/perfcast/extract"
	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve"
	"github.com/perfcast/perfcast/solve/sim"
	"github.com/perfcast/perfcast/tracegen"
	"github.com/perfcast/perfcast/validate"
	"github.com/perfcast/perfcast/whatif"
)

// dbModel has a web service calling a database on a machine of its own,
// busy 40 % at the observed load, with arrivals burstier than Poisson's.
const dbModel = `perfcast: 1
name: withdb
hosts:
  app: {cpu: {cores: 2}}
  db: {cpu: {cores: 1}}
components:
  web:
    host: app
    operations:
      GET /a: {steps: [{cpu: exp(3ms)}, {call: db/query}]}
      GET /b: {steps: [{cpu: exp(2ms)}, {call: db/update}]}
  db:
    host: db
    operations:
      query: {steps: [{cpu: exp(4ms)}, {delay: exp(2ms)}]}
      update: {steps: [{cpu: exp(8ms)}, {delay: exp(3ms)}]}
workload:
  a: {open: {rate: 50/s, cv: 1.5}, steps: [{call: web/GET /a}]}
  b: {open: {rate: 25/s, cv: 1.5}, steps: [{call: web/GET /b}]}
`

// TestExternalSystem extracts from traces where the database has no spans
// of its own, only its clients' (peer.service db), and no span carries its
// CPU time. Given the metrics of the database's machine, extraction makes
// the database a component on it: each kind of call gets its CPU demand,
// within four standard errors of the truth, and the rest of its latency as
// a delay, so that the model's database queues as the load grows. At
// 1.6 times the load it predicts the database's utilization and the
// response times of both workloads as the truth does; without the
// database's metrics, its station is found from the calls alone.
func TestExternalSystem(t *testing.T) {
	truth, dir, tracesPath, metricsPath := recordModel(t, dbModel, "withdb", tracegen.Options{NoCPUTime: true, Seed: 9}, 30000, func(s *sim.Span) bool {
		return s.Component != "db" // the database has no spans
	})
	cfg := &extract.Config{Hosts: map[string]extract.HostConfig{"app": {Cores: 2}, "db": {Cores: 1}}, Metrics: []string{metricsPath}}
	out, err := extractRun(context.Background(), []string{tracesPath}, "withdb", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("model:\n%s", out.Model.Marshal())
	db := out.Model.Component("db")
	if db == nil || db.Host != "db" {
		t.Fatalf("the database is no component on host db: %+v", db)
	}
	// Its delays, the latency less the CPU and the wait for it, are the
	// truth's (2 and 3 ms) within 2 ms, a tenth of the calls' latency
	// (about 10 and 20 ms): the wait taken out is the windows' M/M/1
	// wait scaled for the arrivals' burstiness, an approximation.
	for op, want := range map[string]float64{"db/query": 2e-3, "db/update": 3e-3} {
		d := delayOf(out.Model, op)
		t.Logf("%s: delay %.3g ms, truth %.3g ms", op, d*1e3, want*1e3)
		if math.Abs(d-want) > 2e-3 {
			t.Errorf("%s: delay %.3g ms, truth %.3g ms", op, d*1e3, want*1e3)
		}
	}
	// Validation compares the workloads as before (the database's
	// operations have no spans to be measured by), simulated: the mean
	// values leave the bursts out.
	rep, err := validate.Validate(context.Background(), out.Model, out.State, func(ctx context.Context, m *model.Model) (*solve.Result, error) {
		return sim.New().Solve(ctx, m, solve.Options{Seed: 1, Precision: 0.02, Workers: 2})
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"GET /a", "GET /b"} {
		e := rep.Errors.Workloads[w]
		if e == nil || e.ResponseTime.Mean == nil {
			t.Fatalf("validation of %s: no error", w)
		}
		t.Logf("validation of %s: response time error %+.3f", w, *e.ResponseTime.Mean)
		if math.Abs(*e.ResponseTime.Mean) > 0.1 {
			t.Errorf("validation of %s: response time error %+.3f", w, *e.ResponseTime.Mean)
		}
	}
	for _, w := range out.Report.Warnings {
		if strings.Contains(w, "metrics") {
			t.Errorf("warning: %s", w)
		}
	}
	recovered(t, out, map[string]float64{"db/query": 4e-3, "db/update": 8e-3, "web/GET /a": 3e-3, "web/GET /b": 2e-3})

	// With the metrics of the application's machine alone, the calls
	// stay delays.
	appOnly := filepath.Join(dir, "app.csv")
	var kept []string
	for _, line := range strings.Split(string(mustRead(t, metricsPath)), "\n") {
		if !strings.Contains(line, ",db,") {
			kept = append(kept, line)
		}
	}
	if err := os.WriteFile(appOnly, []byte(strings.Join(kept, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	delays, err := extractRun(context.Background(), []string{tracesPath}, "withdb", &extract.Config{Hosts: cfg.Hosts, Metrics: []string{appOnly}})
	if err != nil {
		t.Fatal(err)
	}
	// Its calls still show that they wait: the database is found from
	// its clients' calls alone (see TestExternalQueue), not from its CPU.
	if db := delays.Model.Component("db"); db == nil || mentions(delays.Report.Warnings, "db: a system seen only by its clients' spans whose calls took longer") != 1 {
		t.Errorf("without the database's metrics: component %v, warnings %q", db != nil, delays.Report.Warnings)
	}
	if delays.Model.Host("db") == nil || delays.Model.Host("db").CPU.Cores != 1 && len(delays.Model.Host("db").Disks) == 0 {
		t.Errorf("without the database's metrics: no station on host db")
	}

	// Half the calls to a second machine, db-2, without metrics: the
	// system is on two machines and its calls stay delays, said once.
	data := mustRead(t, tracesPath)
	peer := []byte(`{"key":"peer.service","value":{"stringValue":"db"}}`)
	var split []byte
	for i, part := range bytes.Split(data, peer) {
		if i > 0 {
			split = append(split, peer...)
			if i%2 == 0 {
				split = append(split, []byte(`,{"key":"server.address","value":{"stringValue":"db-2"}}`)...)
			}
		}
		split = append(split, part...)
	}
	twoPath := filepath.Join(dir, "two.jsonl")
	if err := os.WriteFile(twoPath, split, 0o644); err != nil {
		t.Fatal(err)
	}
	two, err := extractRun(context.Background(), []string{twoPath}, "withdb", cfg)
	if err != nil {
		t.Fatal(err)
	}
	said := mentions(two.Report.Evidence, "db: a system seen only by its clients' spans, called on several machines")
	if two.Model.Component("db") != nil || said != 1 {
		t.Errorf("calls to two machines: component %v, said %d times in %q", two.Model.Component("db") != nil, said, two.Report.Evidence)
	}

	// The calls to machine db named after the traced component web (a
	// peer.service set wrong): the system stays a delay, said once, and
	// the component web keeps its own operations.
	clash := bytes.ReplaceAll(data, peer, []byte(`{"key":"peer.service","value":{"stringValue":"web"}},{"key":"server.address","value":{"stringValue":"db"}}`))
	clashPath := filepath.Join(dir, "clash.jsonl")
	if err := os.WriteFile(clashPath, clash, 0o644); err != nil {
		t.Fatal(err)
	}
	named, err := extractRun(context.Background(), []string{clashPath}, "withdb", cfg)
	if err != nil {
		t.Fatal(err)
	}
	said = mentions(named.Report.Evidence, "web: a system seen only by its clients' spans, named as a traced component is: its calls stay delays")
	if web := named.Model.Component("web"); said != 1 || web == nil || web.Host != "app" || named.Model.Host("db") != nil {
		t.Errorf("a system named as a traced component: said %d times, component web %+v, host db %v", said, web, named.Model.Host("db") != nil)
	}

	fromCalls := solveAtLoad(t, delays.Model, 1.6)
	want, got := solveAtLoad(t, truth, 1.6), solveAtLoad(t, out.Model, 1.6)
	u0, u1 := want.Resources["db.cpu"].Utilization, got.Resources["db.cpu"].Utilization
	t.Logf("at 1.6 times the load: db.cpu %.3f, truth %.3f", u1, u0)
	if math.Abs(u1-u0) > 0.05*u0 {
		t.Errorf("db.cpu at 1.6 times the load: %.3f, truth %.3f", u1, u0)
	}
	// The extracted workloads are named by their entries.
	for w, entry := range map[string]string{"a": "GET /a", "b": "GET /b"} {
		if want.Workloads[w] == nil || got.Workloads[entry] == nil || fromCalls.Workloads[entry] == nil {
			t.Fatalf("workload %s (%s) missing", w, entry)
		}
		r0, r1, r2 := want.Workloads[w].ResponseTime.Mean, got.Workloads[entry].ResponseTime.Mean, fromCalls.Workloads[entry].ResponseTime.Mean
		t.Logf("at 1.6 times the load: %s %.2f ms, truth %.2f ms; from the calls alone %.2f ms", w, r1*1e3, r0*1e3, r2*1e3)
		if math.Abs(r1-r0) > 0.10*r0 {
			t.Errorf("%s at 1.6 times the load: %.2f ms, truth %.2f ms", w, r1*1e3, r0*1e3)
		}
		// The calls alone: one core shared by the calls answers them,
		// which one station of servers serving in order stands for
		// (−6 and −10 %; as delays they were −34 and −39 %).
		if math.Abs(r2-r0) > 0.15*r0 {
			t.Errorf("%s at 1.6 times the load, from the calls alone: %.2f ms, truth %.2f ms", w, r2*1e3, r0*1e3)
		}
	}
}

// solveAtLoad simulates a copy of m with every workload's load times
// load, to 1 % precision.
func solveAtLoad(t *testing.T, m *model.Model, load float64) *solve.Result {
	t.Helper()
	c, err := model.Parse(m.Marshal(), "copy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := whatif.Set(c, "workload.*.load="+strconv.FormatFloat(load, 'g', -1, 64)); err != nil {
		t.Fatal(err)
	}
	res, err := sim.New().Solve(context.Background(), c, solve.Options{Seed: 1, Precision: 0.01, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
