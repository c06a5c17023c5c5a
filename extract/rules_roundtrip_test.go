package extract_test

import (
	"context"
	"math"
	"testing"

	"github.com/perfcast/perfcast/extract"
	"github.com/perfcast/perfcast/model"
)

// oneServiceModel is one service that is, in the eyes of its owners, three
// components: its admin pages, its pages on canary pods (the requests
// marked tier=canary) and the rest.
const oneServiceModel = `perfcast: 1
name: one
hosts:
  app: {cpu: {cores: 2}}
components:
  web:
    host: app
    operations:
      GET /admin/users: {steps: [{cpu: exp(10ms)}]}
      GET /page: {steps: [{cpu: exp(2ms)}]}
workload:
  pages:
    open: {rate: 20/s}
    params:
      tier: {pmf: {canary: 0.25, stable: 0.75}}
    steps: [{call: web/GET /page}]
  admins:
    open: {rate: 5/s}
    steps: [{call: web/GET /admin/users}]
`

// TestRulesRoundTrip extracts traces of oneServiceModel with
// rules that split its service by span name and by attribute: the three
// components come out on the one host, each with its own operations and
// rate.
func TestRulesRoundTrip(t *testing.T) {
	m0, err := model.Parse([]byte(oneServiceModel), "one.yaml")
	if err != nil {
		t.Fatal(err)
	}
	obs := generate(t, m0, 4, 12000, t.TempDir())
	cfg := &extract.Config{
		Hosts: map[string]extract.HostConfig{"app": {Cores: 2}},
		Components: []extract.Rule{
			{Component: "admin", Span: "GET /admin/*"},
			{Component: "web-canary", Attributes: map[string]string{"tier": "canary"}},
		},
	}
	res, err := extractRun(context.Background(), []string{obs.path}, "one", cfg)
	if err != nil {
		t.Fatal(err)
	}
	m := res.Model
	t.Logf("extracted model:\n%s", m.Marshal())
	for _, w := range res.Report.Warnings {
		if len(w) > 14 && w[:14] == "configuration:" {
			t.Errorf("warning %s", w)
		}
	}
	rates := map[string]float64{}
	for _, w := range m.Workloads {
		if len(w.Steps) == 1 && w.Steps[0].Kind == model.StepCall && w.Open != nil {
			rates[w.Steps[0].Target] = w.Open.Rate
		}
	}
	for id, want := range map[string]float64{"admin/GET /admin/users": 5, "web-canary/GET /page": 5, "web/GET /page": 15} {
		if m.Operation(id) == nil {
			t.Errorf("no operation %s", id)
			continue
		}
		got := rates[id]
		if tol := 4 * math.Sqrt(want/obs.seconds); math.Abs(got-want) > tol {
			t.Errorf("%s: rate %.4g, want %g ± %.2g", id, got, want, tol)
		}
	}
	for _, c := range m.Components {
		if c.Host != "app" {
			t.Errorf("component %s on host %s, want app", c.Name, c.Host)
		}
	}
	if len(m.Components) != 3 {
		t.Errorf("%d components, want admin, web-canary and web", len(m.Components))
	}
}
