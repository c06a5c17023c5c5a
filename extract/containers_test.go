package extract_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/perfcast/perfcast/extract"
	"github.com/perfcast/perfcast/metrics"
	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve"
	"github.com/perfcast/perfcast/solve/mva"
	"github.com/perfcast/perfcast/solve/sim"
	"github.com/perfcast/perfcast/tracegen"
	"github.com/perfcast/perfcast/validate"
)

// pods names the pod each of twoOpsModel's hosts becomes, and the
// container its service runs in: web's is named after its service, the
// store's is not.
var pods = map[string]struct{ pod, container string }{
	"app": {"web-5f6c9-x2x7q", "web"},
	"db":  {"store-7d9f8-abcde", "postgres-proxy"},
}

// TestPodMetrics runs extraction on traces from Kubernetes pods (spans
// with k8s.pod.name and a service.instance.id, no host.name) without CPU
// times, and the pods' CPU as cAdvisor gives it in a Prometheus range
// query: each pod's cgroup, its containers (one a sidecar), the pause
// container, the node's root cgroup and the slices that hold the pods. The
// metrics must be found by pod, the sidecar's CPU must not count as the
// web service's, and no cgroup may be counted twice: each operation's CPU
// demand comes back within four standard errors of the truth, as in
// TestMetricsRoundTrip.
func TestPodMetrics(t *testing.T) {
	_, dir, tracesPath, csvPath := recordModel(t, twoOpsModel, "twoops", tracegen.Options{NoCPUTime: true, Seed: 6}, 30000, nil)

	// The spans name their pods, not their hosts.
	data, err := os.ReadFile(tracesPath)
	if err != nil {
		t.Fatal(err)
	}
	for host, p := range pods {
		data = bytes.ReplaceAll(data, []byte(`{"key":"host.name","value":{"stringValue":"`+host+`"}}`),
			[]byte(`{"key":"k8s.pod.name","value":{"stringValue":"`+p.pod+`"}}`))
	}
	if bytes.Contains(data, []byte(`"host.name"`)) {
		t.Fatal("the traces still name hosts")
	}
	if err := os.WriteFile(tracesPath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	promPath := filepath.Join(dir, "cadvisor.json")
	writeCAdvisor(t, csvPath, promPath)

	cfg := &extract.Config{Hosts: map[string]extract.HostConfig{}, Metrics: []string{promPath}}
	for _, p := range pods {
		cfg.Hosts[p.pod] = extract.HostConfig{Cores: 1}
	}
	out, err := extractRun(context.Background(), []string{tracesPath}, "twoops", cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range out.Report.Warnings {
		if strings.Contains(w, "no metrics") || (strings.Contains(w, "no span comes from") && !strings.Contains(w, "node-1")) {
			t.Errorf("warning: %s", w)
		}
	}
	recovered(t, out, map[string]float64{"web/GET /a": 4e-3, "web/GET /b": 10e-3, "store/get": 6e-3})

	// Validation measures each host's utilization by its pod's readings:
	// the truth's 0.36 and 0.24 (twoOpsModel), and the pods' sidecar and
	// pause container on top.
	set, err := metrics.Read([]string{promPath})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := validate.ValidateWith(context.Background(), out.Model, out.State, func(ctx context.Context, m *model.Model) (*solve.Result, error) {
		return mva.New().Solve(ctx, m, solve.Options{})
	}, validate.Options{Metrics: set})
	if err != nil {
		t.Fatal(err)
	}
	for comp, want := range map[string]float64{"web": 0.36, "store": 0.24} {
		res := rep.Measured.Resources[model.CPUResource(out.Model.Component(comp).Host)]
		if res == nil || res.UtilizationCI95 == nil {
			t.Errorf("%s's host: utilization %+v, not from the metrics", comp, res)
			continue
		}
		// The pod's cgroup holds 0.0505 cores more than the service.
		want += 0.0505
		t.Logf("%s's host: utilization %.4f (%.4f to %.4f), truth %.4f", comp, res.Utilization, res.UtilizationCI95[0], res.UtilizationCI95[1], want)
		// Twice the 95 % half-width: four standard errors.
		if hw := res.UtilizationCI95[1] - res.Utilization; math.Abs(res.Utilization-want) > 2*hw {
			t.Errorf("%s's host: utilization %.4f ± %.4f, want %.4f", comp, res.Utilization, hw, want)
		}
	}
}

// writeCAdvisor turns the cumulative CPU seconds per host of csvPath
// (timestamp,host,cpu_seconds,cores) into a Prometheus range query of
// cAdvisor's container_cpu_usage_seconds_total, as the kubelet labels it:
// per pod its cgroup (no container label; the service, a sidecar at 0.05
// cores and the pause container), the service's container, the sidecar and
// the pause container; the node's root cgroup (all of that and 0.5 cores
// more) and the kubepods slice that holds the pods.
func writeCAdvisor(t *testing.T, csvPath, promPath string) {
	t.Helper()
	rows := readCSV(t, csvPath)
	type series struct {
		Metric map[string]string `json:"metric"`
		Values [][2]any          `json:"values"`
	}
	all := map[string]*series{}
	add := func(key string, labels map[string]string, ts float64, v float64) {
		s := all[key]
		if s == nil {
			labels["__name__"] = "container_cpu_usage_seconds_total"
			labels["instance"] = "node-1:10250"
			labels["namespace"] = "shop"
			s = &series{Metric: labels}
			all[key] = s
		}
		s.Values = append(s.Values, [2]any{ts, strconv.FormatFloat(v, 'g', 12, 64)})
	}
	const sidecar, pause, other = 0.05, 0.0005, 0.5
	var t0 float64
	node := map[float64]float64{}
	for i, row := range rows[1:] {
		ts, err1 := strconv.ParseFloat(row[0], 64)
		sec, err2 := strconv.ParseFloat(row[2], 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: row %d: %v %v", csvPath, i+2, err1, err2)
		}
		if i == 0 {
			t0 = ts
		}
		p, ok := pods[row[1]]
		if !ok {
			t.Fatalf("no pod for host %s", row[1])
		}
		el := ts - t0
		add(p.pod, map[string]string{"pod": p.pod, "id": "/kubepods/pod-" + p.pod}, ts, sec+(sidecar+pause)*el)
		add(p.pod+"/c", map[string]string{"pod": p.pod, "container": p.container, "id": "/kubepods/pod-" + p.pod + "/c"}, ts, sec)
		add(p.pod+"/s", map[string]string{"pod": p.pod, "container": "istio-proxy", "id": "/kubepods/pod-" + p.pod + "/s"}, ts, sidecar*el)
		add(p.pod+"/p", map[string]string{"pod": p.pod, "container": "POD", "id": "/kubepods/pod-" + p.pod + "/p"}, ts, pause*el)
		node[ts] += sec + (sidecar+pause)*el
	}
	for _, ts := range slices.Sorted(func(yield func(float64) bool) {
		for k := range node {
			if !yield(k) {
				return
			}
		}
	}) {
		el := ts - t0
		add("kubepods", map[string]string{"id": "/kubepods"}, ts, node[ts])
		add("root", map[string]string{"id": "/"}, ts, node[ts]+other*el)
	}
	var result []*series
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range all {
			if !yield(k) {
				return
			}
		}
	}) {
		result = append(result, all[k])
	}
	out, err := json.Marshal(map[string]any{"status": "success", "data": map[string]any{"resultType": "matrix", "result": result}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(promPath, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// boxModel runs twoOpsModel's two services on one machine of two cores.
const boxModel = `perfcast: 1
name: box
hosts:
  box: {cpu: {cores: 2}}
components:
  web:
    host: box
    operations:
      GET /a: {steps: [{cpu: exp(4ms)}, {call: store/get}]}
      GET /b: {steps: [{cpu: exp(10ms)}]}
  store:
    host: box
    operations:
      get: {steps: [{cpu: exp(6ms)}]}
workload:
  a: {open: {rate: 40/s, cv: 4}, steps: [{call: web/GET /a}]}
  b: {open: {rate: 20/s, cv: 4}, steps: [{call: web/GET /b}]}
`

// TestMachines extracts from traces of two containers on one machine,
// each span naming its container's host name, as Docker gives containers
// host names of their own, without CPU times. Told by the configuration
// that both run on machine box of two cores, extraction makes one host of
// them and estimates the CPU demands from the containers' CPU seconds, per
// component, and, with the machine's metrics instead, from those; either
// way the demands come back within four standard errors and the model puts
// the machine's utilization where the truth has it (0.30).
func TestMachines(t *testing.T) {
	m0, err := model.Parse([]byte(boxModel), "box.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tracesPath, perContainer := filepath.Join(dir, "traces.jsonl"), filepath.Join(dir, "containers.csv")
	containers := map[string]string{"web": "3f4e5d6c7b8a", "store": "c0ffee123456"}
	recordMetrics(t, tracesPath, perContainer, m0, tracegen.Options{NoCPUTime: true, Seed: 8}, 30000, func(s *sim.Span) bool {
		s.Host = containers[s.Component]
		return true
	})
	// The containers' metrics without the cores of the machines the
	// model has (none of them), and the machine's: the containers' summed.
	machine := filepath.Join(dir, "machine.csv")
	rows := readCSV(t, perContainer)
	sums := map[string]float64{}
	var stamps []string
	var each, all strings.Builder
	each.WriteString("timestamp,host,cpu_seconds\n")
	all.WriteString("timestamp,host,cpu_seconds\n")
	for _, r := range rows[1:] {
		if _, ok := sums[r[0]]; !ok {
			stamps = append(stamps, r[0])
		}
		v, err := strconv.ParseFloat(r[2], 64)
		if err != nil {
			t.Fatal(err)
		}
		sums[r[0]] += v
		each.WriteString(strings.Join(r[:3], ",") + "\n")
	}
	for _, ts := range stamps {
		all.WriteString(ts + ",box," + strconv.FormatFloat(sums[ts], 'g', 12, 64) + "\n")
	}
	for path, text := range map[string]string{perContainer: each.String(), machine: all.String()} {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	for _, c := range []struct {
		name, metrics string
		perComponent  bool
	}{{"containers' metrics", perContainer, true}, {"machine's metrics", machine, false}} {
		t.Run(c.name, func(t *testing.T) {
			cfg := &extract.Config{
				Hosts:    map[string]extract.HostConfig{"box": {Cores: 2}},
				Machines: map[string][]string{"box": {"*"}},
				Metrics:  []string{c.metrics},
			}
			out, err := extractRun(context.Background(), []string{tracesPath}, "box", cfg)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range out.Report.Warnings {
				if strings.Contains(w, "metrics") || strings.Contains(w, "assumed") || strings.Contains(w, "configuration") {
					t.Errorf("warning: %s", w)
				}
			}
			if len(out.Model.Hosts) != 1 || out.Model.Hosts[0].Name != "box" || out.Model.Hosts[0].CPU.Cores != 2 {
				t.Fatalf("hosts %+v, want box of 2 cores", out.Model.Hosts)
			}
			if c.perComponent {
				recovered(t, out, map[string]float64{"web/GET /a": 4e-3, "web/GET /b": 10e-3, "store/get": 6e-3})
			} else {
				// Against the machine's CPU alone GET /a and the get it
				// calls each time are collinear: only their sum is
				// identified, which apportion splits by own time.
				a, get, b := opCPU(out.Model, "web/GET /a"), opCPU(out.Model, "store/get"), opCPU(out.Model, "web/GET /b")
				t.Logf("GET /a and get %.4g ms (truth 10), GET /b %.4g ms (truth 10)", (a+get)*1e3, b*1e3)
				if math.Abs(a+get-10e-3) > modelError*10e-3 || math.Abs(b-10e-3) > modelError*10e-3 {
					t.Errorf("GET /a and get %.4g ms, GET /b %.4g ms; want 10 and 10 within %.0f %%", (a+get)*1e3, b*1e3, 100*modelError)
				}
			}
			res, err := mva.New().Solve(context.Background(), out.Model, solve.Options{})
			if err != nil {
				t.Fatal(err)
			}
			u := res.Resources[model.CPUResource("box")].Utilization
			t.Logf("box's utilization %.4f, truth 0.30", u)
			// The demands' standard errors (0.24, 0.34 and 0.04 ms at 40,
			// 20 and 40 requests/s) make 0.006 of the two cores': within
			// 0.015 is two and a half of them.
			if math.Abs(u-0.30) > 0.015 {
				t.Errorf("box's utilization %.4f, want 0.30", u)
			}
		})
	}

	// Without the configuration each container is a host of its own, of
	// cores assumed.
	out, err := extractRun(context.Background(), []string{tracesPath}, "box", &extract.Config{Metrics: []string{perContainer}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Model.Hosts) != 2 {
		t.Errorf("without machines: hosts %+v, want one per container", out.Model.Hosts)
	}
	// A machine whose patterns match no host is warned of.
	out, err = extractRun(context.Background(), []string{tracesPath}, "box", &extract.Config{Machines: map[string][]string{"box": {"web-*"}}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(out.Report.Warnings, "\n"), "configuration: machines: box:") {
		t.Errorf("no warning of a machine that gathers nothing: %q", out.Report.Warnings)
	}
}

// readCSV reads a whole CSV file.
func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// recovered checks that each operation's CPU demand in the model was
// estimated from the metrics and is within four of the estimator's
// standard errors of want (in seconds), or within modelError of it where
// the estimator picked gives none.
func recovered(t *testing.T, out *extract.Result, want map[string]float64) {
	t.Helper()
	if out.Report.Demands == nil {
		t.Fatal("no demands estimated from the metrics")
	}
	var b strings.Builder
	out.Report.Demands.WriteText(&b)
	t.Logf("demands:\n%s", b.String())
	stdErr := map[string]float64{}
	for _, h := range out.Report.Demands.Hosts {
		for i, op := range h.Ops {
			stdErr[op] = 0
			if i < len(h.Result) && h.Result[i].StdErr > 0 {
				stdErr[op] = h.Result[i].StdErr
			}
		}
	}
	for _, id := range slices.Sorted(maps.Keys(want)) {
		if out.Model.Operation(id) == nil {
			t.Errorf("no operation %s", id)
			continue
		}
		cpu := opCPU(out.Model, id)
		se, ok := stdErr[id]
		if !ok {
			t.Errorf("%s: its demand was not estimated from the metrics", id)
			continue
		}
		tol, how := 4*se, "4 SE"
		if se == 0 {
			tol, how = modelError*want[id], "model error"
		}
		t.Logf("%-12s CPU %.4g ms, truth %.4g ms, %s %.3g ms", id, cpu*1e3, want[id]*1e3, how, tol*1e3)
		if math.Abs(cpu-want[id]) > tol {
			t.Errorf("%s: CPU %.4g ms, want %.4g ms ± %.3g", id, cpu*1e3, want[id]*1e3, tol*1e3)
		}
	}
}

// opCPU is the mean CPU demand of an operation's CPU steps, in seconds.
func opCPU(m *model.Model, id string) float64 {
	cpu := 0.0
	if op := m.Operation(id); op != nil {
		model.Walk(op.Steps, func(s *model.Step) {
			if s.Kind == model.StepCPU {
				cpu += s.Demand.Mean()
			}
		})
	}
	return cpu
}
