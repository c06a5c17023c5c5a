package extract_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/perfcast/perfcast/extract"
	"github.com/perfcast/perfcast/model"
)

// usersModel has a closed workload of 40 users who think exp(1 s) and ask
// for a page whose CPU depends on a parameter (small 5 ms, 70 %; large
// 20 ms), and an open workload of 10 API calls a second beside them. The
// CPU is busy about 40 % of the time.
const usersModel = `perfcast: 1
name: users
hosts:
  app: {cpu: {cores: 1}}
components:
  web:
    host: app
    operations:
      GET /page:
        steps:
          - switch:
              on: size
              cases:
                small: [{cpu: exp(5ms)}]
                large: [{cpu: exp(20ms)}]
      GET /api:
        steps: [{cpu: exp(4ms)}]
workload:
  people:
    closed: {users: 40, think: exp(1s)}
    params:
      size: {pmf: {small: 0.7, large: 0.3}}
    steps: [{call: web/GET /page}]
  api:
    open: {rate: 10/s}
    steps: [{call: web/GET /api}]
`

// TestSessionsRoundTrip generates the traces of a closed and an open
// workload, with the request parameter and the users' session.id that
// generated traces carry, and extracts them with params and session
// configured: the users, their think time, the parameter's distribution,
// the CPU of each case and the open rate come back within four standard
// errors of the truth, and the model predicts the traces' response times.
func TestSessionsRoundTrip(t *testing.T) {
	m0, err := model.Parse([]byte(usersModel), "users.yaml")
	if err != nil {
		t.Fatal(err)
	}
	requests := int64(40000)
	if testing.Short() {
		requests = 12000
	}
	dir := t.TempDir()
	obs := generate(t, m0, 3, requests, dir)
	cfg := &extract.Config{
		Hosts:   map[string]extract.HostConfig{"app": {Cores: 1}},
		Params:  []string{"size"},
		Session: "session.id",
	}
	res, err := extractRun(context.Background(), []string{obs.path}, "users", cfg)
	if err != nil {
		t.Fatal(err)
	}
	m := res.Model
	t.Logf("extracted model:\n%s", m.Marshal())
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	var closed, open *model.Workload
	for _, w := range m.Workloads {
		switch {
		case w.Closed != nil && closed == nil:
			closed = w
		case w.Open != nil && open == nil:
			open = w
		default:
			t.Fatalf("workload %s: want one closed and one open workload", w.Name)
		}
	}
	if closed == nil || open == nil {
		t.Fatal("want one closed and one open workload")
	}

	// The page requests: about 38 a second over the run.
	pages := res.State.Measured(m).Workloads[closed.Name]
	if pages == nil {
		t.Fatalf("no measured workload %s", closed.Name)
	}
	n := pages.Throughput * obs.seconds
	if d := closed.Closed.Users - 40; d < -1 || d > 1 {
		t.Errorf("users %d, want 40", closed.Closed.Users)
	}
	near(t, "think mean", closed.Closed.Think.Mean(), 1, 4/math.Sqrt(n))
	if len(closed.Params) != 1 || closed.Params[0].Name != "size" {
		t.Fatalf("closed workload's params %v, want size", closed.Params)
	}
	p := closed.Params[0]
	small := -1.0
	for i, v := range p.Values {
		if v == "small" {
			small = p.Probs[i]
		}
	}
	near(t, "P(small)", small, 0.7, 4*math.Sqrt(0.21/n))

	op := m.Operation("web/GET /page")
	if op == nil || len(op.Steps) == 0 || op.Steps[0].Kind != model.StepSwitch || op.Steps[0].On != "size" {
		t.Fatalf("no switch on size in web/GET /page:\n%s", m.Marshal())
	}
	for _, c := range op.Steps[0].Cases {
		want, share := 5e-3, 0.7
		if c.Value == "large" {
			want, share = 20e-3, 0.3
		}
		cpu := 0.0
		for _, s := range c.Steps {
			if s.Kind == model.StepCPU {
				cpu += s.Demand.Mean()
			}
		}
		near(t, "CPU of "+c.Value, cpu, want, 4*want/math.Sqrt(share*n))
	}
	if len(open.Params) != 0 {
		t.Errorf("open workload has params %v; its requests carry none", open.Params)
	}
	near(t, "open rate", open.Open.Rate, 10, 4*math.Sqrt(10/obs.seconds))

	// The model predicts the page's response time the traces measured.
	pred := solveSim(t, m)
	pw := pred.Workloads[closed.Name]
	check(t, []comparison{
		compare("page mean response", pw.ResponseTime.Mean, pw.ResponseTime.CI95, obs.rtOf["web/GET /page"], pages.ResponseTime.Mean),
	})
	// The throughput of a closed workload follows from its users, think
	// time and response time: N/(Z + R) within the uncertainty of Z.
	want := 40 / (1 + pages.ResponseTime.Mean)
	near(t, "page throughput", pw.Throughput, want, 4*want/math.Sqrt(n)+2*(pw.ThroughputCI95[1]-pw.ThroughputCI95[0]))
}

// near checks an estimate against the truth within tol.
func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	t.Logf("%-18s %.5g, want %.5g ± %.3g", what, got, want, tol)
	if math.Abs(got-want) > tol {
		t.Errorf("%s = %.5g, want %.5g ± %.3g", what, got, want, tol)
	}
}

// TestSessionsByDefault: traces whose requests carry session.id,
// OpenTelemetry's name for a session, make a closed workload with no
// configuration, and the report says how it was found; `session: none`
// leaves every workload open. Without the default the users' requests
// became an open workload, which at other loads answers as a stream that
// does not slow down when its requests do.
func TestSessionsByDefault(t *testing.T) {
	m0, err := model.Parse([]byte(usersModel), "users.yaml")
	if err != nil {
		t.Fatal(err)
	}
	obs := generate(t, m0, 5, 6000, t.TempDir())
	hosts := map[string]extract.HostConfig{"app": {Cores: 1}}
	for _, tc := range []struct {
		name   string
		cfg    *extract.Config
		closed bool
	}{
		{"no configuration", nil, true},
		{"no session named", &extract.Config{Hosts: hosts}, true},
		{"none", &extract.Config{Hosts: hosts, Session: extract.NoSession}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := extractRun(context.Background(), []string{obs.path}, "users", tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			var closed []string
			for _, w := range res.Model.Workloads {
				if w.Closed != nil {
					closed = append(closed, w.Name)
				}
			}
			if got := len(closed) == 1; got != tc.closed || len(closed) > 1 {
				t.Fatalf("closed workloads %v, want one: %v\n%s", closed, tc.closed, res.Model.Marshal())
			}
			said := false
			for _, e := range res.Report.Evidence {
				said = said || strings.Contains(e, "followed where no configuration names one")
			}
			if said != tc.closed {
				t.Errorf("the evidence says the sessions were followed by default: %v, want %v", said, tc.closed)
			}
			for _, w := range res.Report.Warnings {
				if strings.Contains(w, "session") {
					t.Errorf("warning: %s", w)
				}
			}
		})
	}
}
