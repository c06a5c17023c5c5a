package extract_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perfcast/perfcast/extract"
	"github.com/perfcast/perfcast/metrics"
	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve"
	"github.com/perfcast/perfcast/solve/sim"
	"github.com/perfcast/perfcast/tracegen"
	"github.com/perfcast/perfcast/validate"
)

// limitModel is a service in a pod limited to 1.5 cores of its node's
// two (a Go service sizes GOMAXPROCS by the limit), at 72 % of its limit:
// the quota runs out in about a third of its periods, and the requests
// wait for the next period in stalls of tens of milliseconds.
const limitModel = `perfcast: 1
name: limited
hosts:
  app: {cpu: {cores: 2, limit: 1500m}}
  db: {cpu: {cores: 1}}
components:
  web:
    host: app
    operations:
      GET /a: {steps: [{cpu: exp(6ms)}, {call: store/get}, {delay: 2ms}]}
  store:
    host: db
    operations:
      get: {steps: [{cpu: exp(3ms)}]}
workload:
  a: {open: {rate: 180/s}, steps: [{call: web/GET /a}]}
`

// TestCPULimit extracts a model from the traces and metrics of a service
// under a CPU limit: the limit comes from the metrics, the cores from it,
// and the stalls it makes are taken out of the time off the CPU, so the
// delay is the truth's; the model predicts the observed load and a
// heavier one as the truth does. Without the limit the stalls stay in the
// delay as a fixed time, and the model misses the heavier load by far.
func TestCPULimit(t *testing.T) {
	truth, dir, tracesPath, metricsPath := recordModel(t, limitModel, "limited", tracegen.Options{Seed: 4}, 20000, nil)
	if data := string(mustRead(t, metricsPath)); !strings.Contains(data, ",1.5,100ms") {
		t.Fatalf("the metrics state no limit:\n%.300s", data)
	}
	out, err := extractRun(context.Background(), []string{tracesPath}, "limited", &extract.Config{Metrics: []string{metricsPath}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("model:\n%s", out.Model.Marshal())
	app := out.Model.Host("app")
	if app == nil || app.CPU.Limit != 1.5 || app.CPU.Cores != 2 || app.CPU.LimitPeriod() != 0.1 {
		t.Fatalf("host app: %+v, want 2 cores limited to 1.5", app)
	}
	if mentions(out.Report.Evidence, "CPU limit 1.5 cores every 100 ms per replica") == 0 {
		t.Errorf("no evidence of the limit: %v", out.Report.Evidence)
	}
	delay := func(m *model.Model) float64 { return delayOf(m, "web/GET /a") }
	// The delay is the truth's 2 ms within half a millisecond: the wait
	// taken out for the CPU and its limit's stalls is simulated, at the
	// windows' loads.
	if d := delay(out.Model); math.Abs(d-2e-3) > 0.5e-3 {
		t.Errorf("web/GET /a: delay %.3g ms, truth 2 ms", d*1e3)
	} else {
		t.Logf("web/GET /a: delay %.3g ms, truth 2 ms", d*1e3)
	}
	// Without a simulator the stalls stay in the delay, and the report
	// says so.
	bare, brep, err := extract.Generate(context.Background(), out.State, "limited", &extract.Config{Metrics: []string{metricsPath}})
	if err != nil {
		t.Fatal(err)
	}
	if d := delay(bare); d < delay(out.Model)+0.5e-3 {
		t.Errorf("without a simulator: delay %.3g ms, want the stalls in it (more than %.3g)", d*1e3, delay(out.Model)*1e3+0.5)
	}
	if mentions(brep.Warnings, "no simulator given") == 0 {
		t.Errorf("without a simulator, no warning says so: %q", brep.Warnings)
	}
	solver := func(ctx context.Context, m *model.Model) (*solve.Result, error) {
		return sim.New().Solve(ctx, m, solve.Options{Seed: 1, Precision: 0.02, Workers: 2})
	}
	// Validation with the metrics and the pod's throttling as cAdvisor
	// counts it, at the truth's share of throttled periods.
	tr, err := sim.New().Solve(context.Background(), truth, solve.Options{Seed: 2, Precision: 0.02, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	share := *tr.Resources["app.cpu"].Throttled
	throttlePath := filepath.Join(dir, "throttling.json")
	if err := os.WriteFile(throttlePath, cfsCounters("app", 1700000000, 150, share), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := validate.ValidateWith(context.Background(), out.Model, out.State, solver,
		validate.Options{Metrics: mustMetrics(t, metricsPath, throttlePath)})
	if err != nil {
		t.Fatal(err)
	}
	if e := rep.Errors.Workloads["GET /a"]; e == nil || e.ResponseTime.Mean == nil || math.Abs(*e.ResponseTime.Mean) > 0.1 {
		t.Errorf("validation at the observed load: %+v", e)
	} else {
		t.Logf("validation at the observed load: response time error %+.3f", *e.ResponseTime.Mean)
	}
	// The share of periods throttled: predicted within 5 points of the
	// truth's (both simulated at 2 %).
	if e := rep.Errors.Resources["app.cpu"]; e == nil || e.Throttled == nil || math.Abs(*e.Throttled) > 0.05 {
		t.Errorf("validation of the throttled periods: %+v (truth %.3g)", e, share)
	} else {
		t.Logf("throttled periods: measured %.3g, predicted %+.3g points", share, *e.Throttled*100)
	}
	// At 1.2 times the load (86 % of the limit) against the truth.
	at := func(m *model.Model) float64 { return meanAtLoad(t, m, 1.2, 0.02) }
	want, got := at(truth), at(out.Model)
	// The truth's and the model's 2 % precision, and the model error.
	tol := modelError*want + 2*0.02*want
	t.Logf("at 1.2 times the load: %.4g ms, truth %.4g ms", got*1e3, want*1e3)
	if math.Abs(got-want) > tol {
		t.Errorf("at 1.2 times the load: %.4g ms, truth %.4g ms ± %.3g", got*1e3, want*1e3, tol*1e3)
	}

	// The limit given in the configuration instead of the metrics, and
	// none at all: without it the stalls stay in the delay.
	noLimit := filepath.Join(dir, "nolimit.csv")
	stripped := strings.ReplaceAll(strings.ReplaceAll(string(mustRead(t, metricsPath)), ",1.5,100ms", ",,"), ",cpu_limit,cpu_period", "")
	if err := os.WriteFile(noLimit, []byte(stripped), 0o644); err != nil {
		t.Fatal(err)
	}
	cfgd, err := extractRun(context.Background(), []string{tracesPath}, "limited", &extract.Config{Metrics: []string{noLimit},
		Hosts: map[string]extract.HostConfig{"app": {Cores: 2, Limit: "1.5"}}})
	if err != nil {
		t.Fatal(err)
	}
	if h := cfgd.Model.Host("app"); h.CPU.Limit != 1.5 || math.Abs(delay(cfgd.Model)-delay(out.Model)) > 1e-9 {
		t.Errorf("limit from the configuration: %g cores, delay %.3g ms; want 1.5 and %.3g", h.CPU.Limit, delay(cfgd.Model)*1e3, delay(out.Model)*1e3)
	}
	// A configured limit of 0 is none, whatever the metrics state.
	zero, err := extractRun(context.Background(), []string{tracesPath}, "limited", &extract.Config{Metrics: []string{metricsPath},
		Hosts: map[string]extract.HostConfig{"app": {Cores: 2, Limit: "0"}}})
	if err != nil {
		t.Fatal(err)
	}
	if l := zero.Model.Host("app").CPU.Limit; l != 0 {
		t.Errorf("configured limit 0: the model has %g", l)
	}
	none, err := extractRun(context.Background(), []string{tracesPath}, "limited", &extract.Config{Metrics: []string{noLimit},
		Hosts: map[string]extract.HostConfig{"app": {Cores: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("without the limit: delay %.3g ms, at 1.2 times the load %.4g ms", delay(none.Model)*1e3, at(none.Model)*1e3)
	if miss := math.Abs(at(none.Model)-want) / want; none.Model.Host("app").CPU.Limit != 0 || miss < 2*modelError {
		t.Errorf("without the limit: limit %g, off by %.0f %% at 1.2 times the load: the test shows nothing", none.Model.Host("app").CPU.Limit, miss*100)
	}
}

// TestCPULimitMetricsPath: the same service traced without CPU times, its
// demands estimated from the metrics: the limit and the stalls are
// handled alike, and the model predicts 1.2 times the load. The arrivals
// are bursty (cv 2), so that the metrics' windows vary enough in
// throughput for the regression (see twoOpsModel). The delay comes out at
// 6.3 ms against the truth's 2 (4.7 ms from 40 000 requests): most of the
// excess is the wait for the CPU taken out for bursty arrivals on two
// cores (GI/M/1's ratio to M/M/1 applied to Erlang's formula), which
// leaves 4.2 ms without a limit too (by hand, 40 000 requests with span
// CPU times); so the model is about 8 % slow at 1.2 times the load.
func TestCPULimitMetricsPath(t *testing.T) {
	truth, _, tracesPath, metricsPath := recordModel(t, strings.Replace(limitModel, "rate: 180/s", "rate: 180/s, cv: 2", 1), "limited",
		tracegen.Options{NoCPUTime: true, Seed: 5}, 20000, nil)
	out, err := extractRun(context.Background(), []string{tracesPath}, "limited", &extract.Config{Metrics: []string{metricsPath}})
	if err != nil {
		t.Fatal(err)
	}
	if h := out.Model.Host("app"); h.CPU.Limit != 1.5 || h.CPU.Cores != 2 {
		t.Fatalf("host app: %+v", h.CPU)
	}
	recovered(t, out, map[string]float64{"web/GET /a": 6e-3, "store/get": 3e-3})
	t.Logf("web/GET /a: delay %.3g ms, truth 2 ms", delayOf(out.Model, "web/GET /a")*1e3)
	mean := func(m *model.Model) float64 { return meanAtLoad(t, m, 1.2, 0.03) }
	want, got := mean(truth), mean(out.Model)
	t.Logf("at 1.2 times the load: %.4g ms, truth %.4g ms", got*1e3, want*1e3)
	if tol := (modelError + 2*0.03) * want; math.Abs(got-want) > tol {
		t.Errorf("at 1.2 times the load: %.4g ms, truth %.4g ms ± %.3g", got*1e3, want*1e3, tol*1e3)
	}
}

// cfsCounters is a Prometheus range query of a pod's cgroup counting
// 10 periods a second from start for seconds, a share of them throttled.
func cfsCounters(pod string, start, seconds int, share float64) []byte {
	var periods, throttled []string
	for t := 0; t <= seconds; t += 5 {
		periods = append(periods, fmt.Sprintf(`[%d,"%g"]`, start+t, float64(10*t)))
		throttled = append(throttled, fmt.Sprintf(`[%d,"%g"]`, start+t, share*float64(10*t)))
	}
	series := func(name string, values []string) string {
		return fmt.Sprintf(`{"metric":{"__name__":%q,"pod":%q,"id":"/kubepods/pod1"},"values":[%s]}`, name, pod, strings.Join(values, ","))
	}
	return []byte(`{"status":"success","data":{"resultType":"matrix","result":[` +
		series("container_cpu_cfs_periods_total", periods) + "," + series("container_cpu_cfs_throttled_periods_total", throttled) + `]}}`)
}

func mustMetrics(t *testing.T, paths ...string) *metrics.Set {
	t.Helper()
	set, err := metrics.Read(paths)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// mentions counts the lines of list that contain sub.
func mentions(list []string, sub string) int {
	n := 0
	for _, s := range list {
		if strings.Contains(s, sub) {
			n++
		}
	}
	return n
}

// delayOf is the mean of an operation's delay steps.
func delayOf(m *model.Model, id string) float64 {
	var d float64
	for _, st := range m.Operation(id).Steps {
		if st.Kind == model.StepDelay {
			d += st.Demand.Mean()
		}
	}
	return d
}

// meanAtLoad simulates m with every workload's load times load, at the
// given precision, and returns its one workload's mean response time.
func meanAtLoad(t *testing.T, m *model.Model, load, precision float64) float64 {
	t.Helper()
	r, err := sim.New().Solve(context.Background(), withLoad(t, m, load), solve.Options{Seed: 1, Precision: precision, Workers: 2})
	if err != nil || !r.Stable {
		t.Fatalf("solve at %g times the load: %v %v", load, err, r)
	}
	for _, w := range r.Workloads { // one workload, named a or GET /a
		return w.ResponseTime.Mean
	}
	return 0
}

// TestCPULimitReplicas: the replicas of a host (the pods app-1 and app-2
// of component web) take the largest of their limits, said where they
// differ, and none where one of them has none.
func TestCPULimitReplicas(t *testing.T) {
	src := strings.Replace(limitModel, "app: {cpu: {cores: 2, limit: 1500m}}", "app: {replicas: 2, cpu: {cores: 2, limit: 1500m}}", 1)
	_, dir, tracesPath, metricsPath := recordModel(t, src, "replicas", tracegen.Options{Seed: 3}, 10000, nil)
	data := string(mustRead(t, metricsPath))
	if !strings.Contains(data, ",app-1,") || !strings.Contains(data, ",app-2,") {
		t.Fatalf("no replicas app-1 and app-2 in the metrics:\n%.300s", data)
	}
	extractWith := func(name, metrics string) *extract.Result {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(metrics), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := extractRun(context.Background(), []string{tracesPath}, "replicas", &extract.Config{Metrics: []string{path}})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	// app-2's lines only: its limit lowered, then removed.
	edit := func(old, new string) string {
		var lines []string
		for _, l := range strings.Split(data, "\n") {
			if strings.Contains(l, ",app-2,") {
				l = strings.Replace(l, old, new, 1)
			}
			lines = append(lines, l)
		}
		return strings.Join(lines, "\n")
	}
	for _, tc := range []struct {
		name, metrics string
		limit         float64
		evidence      string
	}{
		{"same.csv", data, 1.5, "host web: CPU limit 1.5 cores every 100 ms per replica"},
		{"differ.csv", edit(",1.5,100ms", ",1,100ms"), 1.5, "host web: its replicas' CPU limits differ (1 to 1.5 cores)"},
		{"missing.csv", edit(",1.5,100ms", ",,"), 0, "host web: no CPU limit in the metrics of app-2"},
	} {
		out := extractWith(tc.name, tc.metrics)
		h := out.Model.Host("web") // a replicated component's host is named after it
		if h == nil || h.Replicas != 2 || h.CPU.Limit != tc.limit || mentions(out.Report.Evidence, tc.evidence) == 0 {
			t.Errorf("%s: host %+v, evidence %q; want limit %g and %q", tc.name, h, out.Report.Evidence, tc.limit, tc.evidence)
		}
	}
}
