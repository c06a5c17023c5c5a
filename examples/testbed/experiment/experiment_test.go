package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/perfcast/perfcast/examples/testbed/loadgen"
	"github.com/perfcast/perfcast/extract"
	"github.com/perfcast/perfcast/metrics"
	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve"
	"github.com/perfcast/perfcast/solve/mva"
)

const testModel = `perfcast: 1
hosts:
  testbed: {}
components:
  gateway:
    host: testbed
    operations:
      GET /recommend/{user}:
        steps:
          - cpu: 1ms
          - parallel:
              - - delay: 1ms
                - call: catalog/GET /products/{id}
              - - call: catalog/GET /products/{id}
          - loop:
              times: 2
              steps:
                - call: catalog/GET /products/{id}
          - call: catalog/GET /products
  catalog:
    host: testbed
    operations:
      GET /products/{id}:
        steps: [{cpu: 1ms}]
      GET /products:
        steps: [{cpu: 1ms}]
      outside spans:
        steps: [{cpu: 1ms}]
workload:
  recommend:
    open: {rate: 1}
    steps:
      - call: gateway/GET /recommend/{user}
`

// heldModel is an extracted model with the reference's pool, lock and
// database connections, as extraction wraps the declared calls and
// operations.
const heldModel = `perfcast: 1
hosts:
  testbed: {}
components:
  gateway:
    host: testbed
    operations:
      GET /recommend/{user}:
        steps:
          - parallel:
              - - hold: {resource: gateway-pool, steps: [{delay: 1ms}, {call: "catalog/GET /products/{id}"}]}
              - - hold: {resource: gateway-pool, steps: [{call: "catalog/GET /products/{id}"}]}
  catalog:
    host: testbed
    operations:
      GET /products/{id}: {steps: [{hold: {resource: catalog-db, steps: [{cpu: 1ms}]}}]}
  orders:
    host: testbed
    operations:
      POST /orders:
        steps:
          - cpu: 1ms
          - hold: {resource: stock-lock, steps: [{delay: 0.2ms}, {call: payments/POST /charge}]}
          - delay: 0.5ms
  payments:
    host: testbed
    operations:
      POST /charge: {steps: [{delay: 10ms}]}
passive:
  gateway-pool: {capacity: 8}
  stock-lock: {capacity: 1}
  catalog-db: {capacity: 4}
workload:
  recommend:
    open: {rate: 1}
    steps: [{call: "gateway/GET /recommend/{user}"}]
  order:
    open: {rate: 1}
    steps: [{call: orders/POST /orders}]
`

// A configuration's pool size replaces the reference's; without the coarse
// lock its holds give way to the steps they held, and the resource goes;
// the database connections stay as extraction made them.
func TestDeclare(t *testing.T) {
	for _, lock := range []bool{true, false} {
		m, err := model.Parse([]byte(heldModel), "held.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if err := declare(m, setup{Name: "t", Pool: 2, CoarseLock: lock, ModelCores: 1}); err != nil {
			t.Fatal(err)
		}
		if err := m.Validate(); err != nil {
			t.Fatal(err)
		}
		if p := m.PassiveResource(poolResource); p == nil || p.Capacity != 2 {
			t.Fatalf("pool %+v, want capacity 2", p)
		}
		if p := m.PassiveResource(dbResource); p == nil || p.Capacity != dbConns {
			t.Fatalf("database connections %+v, want capacity %d", p, dbConns)
		}
		if steps := m.Component(dbComponent).Operation("GET /products/{id}").Steps; len(steps) != 1 || steps[0].Kind != model.StepHold ||
			steps[0].Resource != dbResource || len(steps[0].Steps) != 1 || steps[0].Steps[0].Kind != model.StepCPU {
			t.Fatalf("the lookup's steps %+v, want the CPU held in %s once", steps, dbResource)
		}
		holds := 0
		steps := m.Component("orders").Operation("POST /orders").Steps
		model.Walk(steps, func(s *model.Step) {
			if s.Kind == model.StepHold && s.Resource == lockResource {
				holds++
			}
		})
		if lock != (holds == 1) || lock != (m.PassiveResource(lockResource) != nil) {
			t.Fatalf("coarse lock %v: %d holds of the lock, resource %v", lock, holds, m.PassiveResource(lockResource))
		}
		if !lock {
			want := []model.StepKind{model.StepCPU, model.StepDelay, model.StepCall, model.StepDelay}
			var got []model.StepKind
			for _, s := range steps {
				got = append(got, s.Kind)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("steps without the lock %v, want %v", got, want)
			}
		}
	}
	// A model without the pool is not one extraction made with it.
	m, err := model.Parse([]byte(testModel), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := declare(m, setup{Name: "t", Pool: 2, CoarseLock: true}); err == nil {
		t.Fatal("declared on a model without the pool")
	}
	// Nor is one without the database connections.
	if _, err = model.Parse([]byte(strings.Replace(heldModel, "  catalog-db: {capacity: 4}\n", "", 1)), "held.yaml"); err == nil {
		t.Fatal("a hold of an undeclared resource parsed")
	}
	m, err = model.Parse([]byte(strings.NewReplacer("  catalog-db: {capacity: 4}\n", "",
		"{hold: {resource: catalog-db, steps: [{cpu: 1ms}]}}", "{cpu: 1ms}").Replace(heldModel)), "held.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := declare(m, setup{Name: "t", Pool: 2, CoarseLock: true}); err == nil || !strings.Contains(err.Error(), dbResource) {
		t.Fatalf("declared on a model without the database connections: %v", err)
	}
}

// The load generator, where it shares the CPUs, loads the host, and
// servicesCPU takes its share out again.
func TestDeclareGenerator(t *testing.T) {
	m, err := model.Parse([]byte(testModel), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := setup{Name: "t", Rate: 100, ModelCores: 1, Pool: 8, GeneratorCPU: 0.002}
	m.Passive = append(m.Passive, &model.Passive{Name: poolResource, Capacity: 8}, &model.Passive{Name: dbResource, Capacity: dbConns})
	if err := declare(m, s); err != nil {
		t.Fatal(err)
	}
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	res, err := mva.New().Solve(context.Background(), m, solve.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Recommend: 1 request/s of 6 ms on one core; the generator 100/s of 2 ms.
	if host := res.Resources[hostName+".cpu"].Utilization; math.Abs(host-0.206) > 1e-9 {
		t.Fatalf("host utilization %g, want 0.206", host)
	}
	if got := servicesCPU(res, s); math.Abs(got-0.006) > 1e-9 {
		t.Fatalf("services' CPU %g, want 0.006", got)
	}
}

func TestCPUSeries(t *testing.T) {
	dir := t.TempDir()
	csv := "timestamp,host,cpu_seconds\n" +
		"2024-01-01T00:00:00.000Z,h,1.0\n" +
		"2024-01-01T00:00:01.000Z,h,1.5\n" +
		"2024-01-01T00:00:03.000Z,h,2.5\n"
	for _, svc := range services {
		if err := os.WriteFile(filepath.Join(dir, svc+".csv"), []byte(csv), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := readCPU(filepath.Join(dir, "gateway.csv"))
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	got, err := s.between(t0.Add(500*time.Millisecond), t0.Add(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if want := 2.0 - 1.25; got < want-1e-9 || got > want+1e-9 {
		t.Fatalf("between = %g, want %g", got, want)
	}
	if _, err := s.at(t0.Add(4 * time.Second)); err == nil {
		t.Fatal("a time after the samples was interpolated")
	}
	out := filepath.Join(dir, "services.csv")
	if err := serviceMetrics(out, nil, dir); err != nil {
		t.Fatal(err)
	}
	set, err := metrics.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	// The host is the services' sum (0.5 busy cores each); each service
	// keeps its own series.
	if h := set.Series["h"]; h == nil || len(h.Samples) != 2 || math.Abs(h.Samples[0].Value-2) > 1e-9 {
		t.Fatalf("host series %+v", h)
	}
	if len(set.Services["h"]) != len(services) {
		t.Fatalf("services %v", set.Services["h"])
	}
	if _, err := readCPU(filepath.Join(dir, "missing.csv")); err == nil || !strings.Contains(err.Error(), "missing.csv") {
		t.Fatalf("error for a missing file: %v", err)
	}
}

// The report goes between the markers of a document, leaving the rest
// alone, at the end of one without them, or makes a missing file.
func TestWriteReport(t *testing.T) {
	dir := t.TempDir()
	doc := filepath.Join(dir, "doc.md")
	before, after := "# Doc\n\nhand-written\n\n", "\n\n## More\n"
	if err := os.WriteFile(doc, []byte(before+beginReport+"\n\nold\n\n"+endReport+after), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 2 { // twice: the markers survive a rewrite
		if err := writeReport(doc, []byte("new report\n\n"), beginReport, endReport); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := os.ReadFile(doc)
	if want := before + beginReport + "\n\nnew report\n\n" + endReport + after; string(got) != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	whole := filepath.Join(dir, "new.md")
	if err := writeReport(whole, []byte("report\n"), beginReport, endReport); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(whole); string(got) != beginReport+"\n\nreport\n"+endReport+"\n" {
		t.Fatalf("whole file %q", got)
	}
	// A second section of its own markers goes at the end of a document
	// without them, and then between them.
	for range 2 {
		if err := writeReport(doc, []byte("pooled\n"), beginPooled, endPooled); err != nil {
			t.Fatal(err)
		}
	}
	got, _ = os.ReadFile(doc)
	if want := before + beginReport + "\n\nnew report\n\n" + endReport + after + "\n" + beginPooled + "\n\npooled\n" + endPooled + "\n"; string(got) != want {
		t.Fatalf("second section: got\n%s\nwant\n%s", got, want)
	}
	broken := filepath.Join(dir, "broken.md")
	os.WriteFile(broken, []byte(endReport+"\n"+beginReport), 0o644)
	if err := writeReport(broken, []byte("x"), beginReport, endReport); err == nil {
		t.Fatal("markers out of order accepted")
	}
}

// Each round's order is a permutation, the same for a seed, shuffled
// differently from round to round, with the reference first in the first.
func TestRoundOrder(t *testing.T) {
	a, b := roundOrder(11, 3, 1), roundOrder(11, 3, 1)
	if len(a) != 3 {
		t.Fatalf("%d rounds, want 3", len(a))
	}
	for r := range a {
		if !slices.Equal(a[r], b[r]) {
			t.Fatalf("round %d: two orders for one seed: %v, %v", r+1, a[r], b[r])
		}
		sorted := slices.Clone(a[r])
		slices.Sort(sorted)
		for i, v := range sorted {
			if v != i {
				t.Fatalf("round %d: not a permutation: %v", r+1, a[r])
			}
		}
		if slices.IsSorted(a[r]) {
			t.Fatalf("round %d: not shuffled: %v", r+1, a[r])
		}
	}
	if a[0][0] != 0 {
		t.Fatalf("the reference ran at %v in the first round", a[0])
	}
	if slices.Equal(a[1], a[2]) {
		t.Fatalf("rounds 2 and 3 in one order: %v", a[1])
	}
	if o := roundOrder(0, 2, 1); len(o) != 2 || len(o[0]) != 0 {
		t.Fatalf("no configurations: %v", o)
	}
}

// Segments' measurements: the merged result is over all segments' steady
// phases, the CPU time over their steady seconds, each segment's CPU per
// request kept.
func TestMeasureSegments(t *testing.T) {
	root := t.TempDir()
	e := &env{work: root, rounds: 2}
	dirs := e.segments("load-40")
	if len(dirs) != 2 || dirs[1] != filepath.Join(root, "load-40", "round-2") {
		t.Fatalf("segments %v", dirs)
	}
	start := time.Unix(1_700_000_000, 0).UTC()
	for i, dir := range dirs {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		from := start.Add(time.Duration(i) * 10 * time.Minute)
		// 10 s steady, 100 requests of 10 ms (segment 1) or 30 ms.
		lat := 0.01 + 0.02*float64(i)
		var reqs []loadgen.Request
		for k := range 100 {
			reqs = append(reqs, loadgen.Request{Class: "browse", At: float64(k) / 10, Latency: lat})
		}
		res := &loadgen.Result{Mode: "open", Rate: 10, SteadySeconds: 10, Start: from.Add(-time.Second), SteadyStart: from,
			SteadyEnd: from.Add(10 * time.Second), Sent: 100, Requests: reqs,
			Classes: map[string]*loadgen.Summary{"browse": {Count: 100, Mean: lat}}, All: &loadgen.Summary{Count: 100, Mean: lat}}
		if err := os.WriteFile(filepath.Join(dir, "load.json"), mustJSON(res), 0o644); err != nil {
			t.Fatal(err)
		}
		// Each service used 0.1 (segment 1) or 0.2 CPU seconds per second.
		for _, svc := range services {
			var b strings.Builder
			b.WriteString("timestamp,host,cpu_seconds\n")
			for s := -2; s <= 12; s++ {
				fmt.Fprintf(&b, "%s,testbed,%.3f\n", from.Add(time.Duration(s)*time.Second).Format(time.RFC3339), float64(s+2)*0.1*float64(i+1))
			}
			if err := os.WriteFile(filepath.Join(dir, svc+".csv"), []byte(b.String()), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		// Segment 1 has samples of the services' CPU: busy 0.5 s per
		// second, 0.1 more than the services used.
		if i == 0 {
			var b strings.Builder
			b.WriteString("timestamp,host,cpu_seconds\n")
			for s := -2; s <= 12; s++ {
				fmt.Fprintf(&b, "%s,testbed,%.3f\n", from.Add(time.Duration(s)*time.Second).Format(time.RFC3339), 100+float64(s+2)*0.5)
			}
			if err := os.WriteFile(filepath.Join(dir, machineFile), []byte(b.String()), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		// The catalog's threads waited 0.05 (segment 1) or 0.25 s per
		// second for a CPU; the gateway's were sampled in segment 2 only,
		// 0.1 s per second.
		waits := map[string]float64{"catalog": 0.05 + 0.2*float64(i)}
		if i == 1 {
			waits["gateway"] = 0.1
		}
		for svc, per := range waits {
			var b strings.Builder
			b.WriteString("timestamp,host,cpu_seconds\n")
			for s := -2; s <= 12; s++ {
				fmt.Fprintf(&b, "%s,testbed,%.3f\n", from.Add(time.Duration(s)*time.Second).Format(time.RFC3339), 3+float64(s+2)*per)
			}
			if err := os.WriteFile(filepath.Join(dir, waitFile(svc)), []byte(b.String()), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		// The catalog's processor was held 0.6 of the time in segment 1
		// and 0.8 in segment 2, whose processors' time grows half as fast:
		// the mean over the two is weighted by the processors' time.
		{
			held, span := 0.6+0.2*float64(i), 1.0/float64(i+1)
			var busy, total strings.Builder
			busy.WriteString("timestamp,host,cpu_seconds\n")
			total.WriteString("timestamp,host,cpu_seconds\n")
			for s := -2; s <= 12; s++ {
				at := from.Add(time.Duration(s) * time.Second).Format(time.RFC3339)
				step := float64(s+2) * span
				fmt.Fprintf(&busy, "%s,testbed,%.3f\n", at, 50+step*held)
				fmt.Fprintf(&total, "%s,testbed,%.3f\n", at, 80+step)
			}
			if err := os.WriteFile(filepath.Join(dir, procsFile("catalog")), []byte(busy.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, procsTotalFile("catalog")), []byte(total.String()), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		// Segment 2 has steal samples: 0.03 s per second.
		if i == 1 {
			var b strings.Builder
			b.WriteString("timestamp,host,cpu_seconds\n")
			for s := -2; s <= 12; s++ {
				fmt.Fprintf(&b, "%s,testbed,%.3f\n", from.Add(time.Duration(s)*time.Second).Format(time.RFC3339), 7+float64(s+2)*0.03)
			}
			if err := os.WriteFile(filepath.Join(dir, stealFile), []byte(b.String()), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	m, err := e.measure(setup{Name: "load-40", ModelCores: 1, GOMAXPROCS: 1}, dirs)
	if err != nil {
		t.Fatal(err)
	}
	if m.Load.All.Count != 200 || math.Abs(m.Load.All.Mean-0.02) > 1e-12 || m.Load.SteadySeconds != 20 {
		t.Errorf("merged %+v over %g s, want 200 requests, mean 20 ms, 20 s", *m.Load.All, m.Load.SteadySeconds)
	}
	// Four services: 0.4 and 0.8 CPU seconds per second, 0.6 on average.
	if math.Abs(m.CPUSeconds-0.6) > 1e-9 || math.Abs(m.CPU-0.6) > 1e-9 {
		t.Errorf("CPU %g s/s, utilization %g; want 0.6", m.CPUSeconds, m.CPU)
	}
	if len(m.PartPerRequest) != 2 || math.Abs(m.PartPerRequest[0]-0.04) > 1e-9 || math.Abs(m.PartPerRequest[1]-0.08) > 1e-9 {
		t.Errorf("CPU per request per segment %v, want 40 and 80 ms", m.PartPerRequest)
	}
	// Other work only where the machine was sampled: 0.1 of a CPU.
	if math.Abs(m.Other-0.1) > 1e-9 || m.OtherSteady != 10 || len(m.PartOther) != 1 {
		t.Errorf("other work %g over %g s, segments %v; want 0.1 over 10 s in one", m.Other, m.OtherSteady, m.PartOther)
	}
	// Steal only where it was sampled.
	if len(m.PartSteal) != 2 || !math.IsNaN(m.PartSteal[0]) || math.Abs(m.PartSteal[1]-0.03) > 1e-9 {
		t.Errorf("steal per segment %v, want NaN and 0.03", m.PartSteal)
	}
	// Waits per service over the segments that sampled them, with the
	// service's CPU over the same segments: the catalog 0.15 s per second
	// with 0.15 of CPU, the gateway 0.1 with 0.2; none for the others.
	for svc, want := range map[string][2]float64{"catalog": {0.15, 0.15}, "gateway": {0.2, 0.1}} {
		if cpu, wait := m.ServiceCPU[svc], m.ServiceWait[svc]; math.Abs(cpu-want[0]) > 1e-9 || math.Abs(wait-want[1]) > 1e-9 {
			t.Errorf("%s: CPU %g, wait %g s/s, want %g and %g", svc, cpu, wait, want[0], want[1])
		}
	}
	if len(m.ServiceCPU) != 2 || len(m.ServiceWait) != 2 {
		t.Errorf("services with waits: %v, %v; want the catalog and the gateway", m.ServiceCPU, m.ServiceWait)
	}
	// Processors: 0.6 over 10 s of their time and 0.8 over 5 s.
	if p, ok := m.ServiceProcs["catalog"]; !ok || math.Abs(p-(0.6*10+0.8*5)/15) > 1e-9 || len(m.ServiceProcs) != 1 {
		t.Errorf("processors held %v, want the catalog's %g", m.ServiceProcs, (0.6*10+0.8*5)/15)
	}
}

// The gap is the class's measured mean less its root spans' mean over the
// steady phase (child spans and spans outside it left out); as a workload
// delay it adds exactly that to the predicted response time.
func TestClientGaps(t *testing.T) {
	dir := t.TempDir()
	steady := time.Unix(1_700_000_000, 0)
	span := func(id, parent string, start time.Time, d time.Duration) string {
		return otlpSpan("gateway", id, id, parent, "GET /recommend/{user}", 2, start, d)
	}
	lines := []string{
		span("01", "", steady.Add(-time.Second), 50*time.Millisecond), // before the steady phase
		span("02", "", steady.Add(time.Second), 4*time.Millisecond),
		span("03", "", steady.Add(2*time.Second), 6*time.Millisecond),
		span("04", "02", steady.Add(time.Second), 40*time.Millisecond), // not a root
	}
	if err := os.WriteFile(filepath.Join(dir, "gateway.otlp.jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	load := &loadgen.Result{SteadyStart: steady, SteadyEnd: steady.Add(time.Minute),
		Classes: map[string]*loadgen.Summary{"recommend": {Count: 2, Mean: 0.0056}, "browse": {Count: 5, Mean: 0.01}}}
	gaps, err := clientGaps(context.Background(), []string{dir}, []*loadgen.Result{load}, load)
	if err != nil {
		t.Fatal(err)
	}
	if len(gaps) != 1 || math.Abs(gaps["recommend"]-0.0006) > 1e-12 {
		t.Fatalf("gaps %v, want recommend 0.6 ms only", gaps)
	}
	// A second segment ten minutes later, with a root span of 8 ms in its
	// steady phase and one in the first segment's, which it leaves out:
	// root spans of 6 ms on average, 6.6 ms measured over all three.
	dir2 := t.TempDir()
	later := steady.Add(10 * time.Minute)
	lines2 := []string{span("05", "", later.Add(time.Second), 8*time.Millisecond), span("06", "", steady.Add(time.Second), 90*time.Millisecond)}
	if err := os.WriteFile(filepath.Join(dir2, "gateway.otlp.jsonl"), []byte(strings.Join(lines2, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	load2 := &loadgen.Result{SteadyStart: later, SteadyEnd: later.Add(time.Minute)}
	merged := &loadgen.Result{Classes: map[string]*loadgen.Summary{"recommend": {Count: 3, Mean: 0.0066}}}
	both, err := clientGaps(context.Background(), []string{dir, dir2}, []*loadgen.Result{load, load2}, merged)
	if err != nil {
		t.Fatal(err)
	}
	if len(both) != 1 || math.Abs(both["recommend"]-0.0006) > 1e-12 {
		t.Fatalf("two segments: gaps %v, want recommend 0.6 ms", both)
	}

	solveRT := func(m *model.Model) float64 {
		t.Helper()
		res, err := mva.New().Solve(context.Background(), m, solve.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return res.Workloads["recommend"].ResponseTime.Mean
	}
	m, err := model.Parse([]byte(testModel), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	before := solveRT(m)
	addClientDelays(m, gaps)
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := workloadOf(m)["recommend"]; got != "recommend" {
		t.Fatalf("workloadOf after the delay: %q", got)
	}
	if after := solveRT(m); math.Abs(after-before-0.0006) > 1e-9 {
		t.Fatalf("response time %g with the delay, %g without: want 0.6 ms more", after, before)
	}
}

// The load levels' saturation rate is the lower of the warm-up's and the
// first segment's (the dearer CPU time per request); without a warm-up the
// first segment's alone, and the report says which.
func TestSaturationRate(t *testing.T) {
	for _, c := range []struct{ first, warm, want float64 }{
		{168, 148, 148}, // a cheap first segment: the warm-up's
		{149, 143, 143},
		{137, 153, 137}, // a cheap warm-up: the first segment's
		{150, 0, 150},   // -quick: no warm-up
		{150, math.Inf(1), 150},
		{150, math.NaN(), 150},
	} {
		if got := saturationRate(c.first, c.warm); got != c.want {
			t.Errorf("saturationRate(%g, %g) = %g, want %g", c.first, c.warm, got, c.want)
		}
	}
	if got := saturationText(125, 0); !strings.Contains(got, "first segment (8.00 ms)") || strings.Contains(got, "warm-up") {
		t.Errorf("without a warm-up: %q", got)
	}
	if got := saturationText(125, 100); !strings.Contains(got, "warm-up (10.00 ms)") || !strings.Contains(got, "first segment (8.00 ms)") {
		t.Errorf("with a warm-up: %q", got)
	}
}

func TestSchedulerSlice(t *testing.T) {
	for list, want := range map[string]int{"0-1\n": 2, "0": 1, "0,2-3": 3, "0-3,8,10-11": 7} {
		if n, err := countCPUs(list); err != nil || n != want {
			t.Errorf("countCPUs(%q) = %d, %v; want %d", list, n, err, want)
		}
	}
	for _, bad := range []string{"", "a", "3-1", "0-", "-1"} {
		if n, err := countCPUs(bad); err == nil {
			t.Errorf("countCPUs(%q) = %d, want an error", bad, n)
		}
	}
	// 0.75 ms × (1 + ⌊log₂ n⌋), n at most 8.
	for cpus, want := range map[int]time.Duration{1: 750 * time.Microsecond, 2: 1500 * time.Microsecond, 3: 1500 * time.Microsecond,
		4: 2250 * time.Microsecond, 8: 3 * time.Millisecond, 64: 3 * time.Millisecond} {
		if got := scaledSlice(cpus); got != want {
			t.Errorf("scaledSlice(%d) = %s, want %s", cpus, got, want)
		}
	}
	if d, from := schedulerSlice(); d <= 0 || from == "" {
		t.Errorf("schedulerSlice() = %s, %q", d, from)
	}
}

// The report's known sources of error name the host's scheduling and the
// place of the CPU outside spans the models were built with.
func TestKnownSources(t *testing.T) {
	for _, c := range []struct {
		got, want, not string
	}{
		{schedulerSource(1500 * time.Microsecond), "Round robin", "Processor sharing"},
		{schedulerSource(0), "Processor sharing", "Round robin"},
		{outsideSource(extract.OutsideBackground), "background work", "at\n  the start of each"},
		{outsideSource(extract.OutsideInline), "the start of each", "background work"},
		{outsideText(extract.OutsideBackground), "10th percentile", "inline"},
		{outsideText(extract.OutsideInline), "inline", "background"},
	} {
		if !strings.Contains(c.got, c.want) || strings.Contains(c.got, c.not) {
			t.Errorf("%q: want %q in it and not %q", c.got, c.want, c.not)
		}
	}
}

// hostConfig declares round-robin with the slice as its quantum, in a
// form the model's durations read, and processor sharing without a slice.
func TestHostConfig(t *testing.T) {
	if h := hostConfig(setup{ModelCores: 2}, 0); h != (extract.HostConfig{Cores: 2}) {
		t.Errorf("no slice: %+v, want 2 cores and nothing else", h)
	}
	h := hostConfig(setup{ModelCores: 1}, 1500*time.Microsecond)
	q, err := model.ParseDuration(h.Quantum)
	if h.Cores != 1 || h.Scheduling != string(model.RR) || err != nil || math.Abs(q-1.5e-3) > 1e-12 {
		t.Errorf("slice 1.5ms: %+v (quantum %g s, %v), want 1 core, rr, 1.5 ms", h, q, err)
	}
	// A slice whose milliseconds %g would write with an exponent.
	if q, err := model.ParseDuration(hostConfig(setup{}, time.Nanosecond).Quantum); err != nil || math.Abs(q-1e-9) > 1e-18 {
		t.Errorf("slice 1ns: quantum %g s, %v", q, err)
	}
}

func TestSettle(t *testing.T) {
	// A prediction of 100 is within 15 % of true means from 100/1.15 =
	// 86.96 to 100/0.85 = 117.65.
	for _, c := range []struct {
		name             string
		pred, mean, half float64
		want             settlement
	}{
		{"interval inside the band", 100, 100, 5, settledWithin},
		{"interval across both edges", 100, 100, 20, unsettled},
		{"interval above the band", 100, 140, 10, settledBeyond},
		{"interval below the band", 100, 80, 5, settledBeyond},
		{"point beyond, interval reaching in", 100, 125, 10, unsettled},
		{"point within, interval reaching out", 100, 110, 10, unsettled},
		{"no interval", 100, 100, 0, unsettled},
		{"unknown prediction", math.NaN(), 100, 5, unsettled},
		{"unknown interval", 100, 100, math.NaN(), unsettled},
		// Two rows of the invocation of 2026-11-26 12:18: the two CPUs'
		// browse (−64 %) and GOMAXPROCS 2's (−26 %, its interval reaching
		// 28.3 ms, below 26.9/0.85 = 31.6).
		{"two CPUs, browse", 19.9, 55.2, 16.7, settledBeyond},
		{"GOMAXPROCS 2, browse", 26.9, 36.2, 7.9, unsettled},
	} {
		if got := settle(c.pred, c.mean, c.half, meanLimit); got != c.want {
			t.Errorf("%s: settle(%g, %g ± %g) = %d, want %d", c.name, c.pred, c.mean, c.half, got, c.want)
		}
	}
}

func TestTallyText(t *testing.T) {
	var ta tally
	ta.add("a browse", 0.02, settle(102, 100, 5, meanLimit), meanLimit)
	ta.add("b browse", -0.64, settle(19.9, 55.2, 16.7, meanLimit), meanLimit)
	ta.add("c browse", -0.26, settle(26.9, 36.2, 7.9, meanLimit), meanLimit)
	ta.add("d browse", 0.05, settle(105, 100, 30, meanLimit), meanLimit)
	got := ta.text(4, meanLimit)
	want := "1 of 4 within 15 % for every value in the interval; 1 beyond it for every one (b browse (-64 %)); " +
		"2 not settled, of which beyond 15 % by the point estimate: c browse (-26 %)"
	if got != want {
		t.Errorf("text:\n got %s\nwant %s", got, want)
	}
}

// pooledReport is a report of one invocation with one configuration: its
// browse class measured at meas and predicted at pred (seconds), its CPU
// measured at cpuMeas and predicted at cpuPred.
func pooledReport(name string, meas, pred, cpuMeas, cpuPred float64) *report {
	res := &solve.Result{
		Stable:    true,
		Workloads: map[string]*solve.WorkloadResult{"w-browse": {ResponseTime: solve.Times{Mean: pred}}},
		Resources: map[string]*solve.ResourceResult{hostName + ".cpu": {Utilization: cpuPred}},
	}
	m := &measured{Load: &loadgen.Result{Classes: map[string]*loadgen.Summary{"browse": {Mean: meas}}}, CPU: cpuMeas}
	return &report{rows: []reportRow{{
		setup:     setup{Name: name, ModelCores: 1},
		measured:  m,
		predicted: &predicted{res: res, names: map[string]string{"browse": "w-browse"}},
	}}}
}

// Pooled over invocations, a row's error is the geometric mean of its
// ratios with Student's t interval, and the interval settles the row.
func TestPooled(t *testing.T) {
	// Four invocations, the model 20 % fast on browse in two and 30 % in
	// two; the CPU within 2 % in all, either way.
	reps := []*report{
		pooledReport("load-80", 0.050, 0.040, 0.70, 0.70*1.02),
		pooledReport("load-80", 0.100, 0.080, 0.70, 0.70*0.98),
		pooledReport("load-80", 0.100, 0.070, 0.70, 0.70*1.02),
		pooledReport("load-80", 0.040, 0.028, 0.70, 0.70*0.98),
		// Saturated in this invocation: not held out, left out.
		pooledReport("load-80", 0.100, 0.010, 0.85, 0.85),
	}
	rows, keys := pooledOf(reps)
	if want := []pooledKey{{"load-80", "browse"}, {"load-80", cpuClass}}; !slices.Equal(keys, want) {
		t.Fatalf("keys %v, want %v", keys, want)
	}
	browse := rows[keys[0]]
	if len(browse) != 4 {
		t.Fatalf("%d browse ratios, want 4 (the saturated run left out)", len(browse))
	}
	mean, lo, hi := pooledError(browse)
	// The geometric mean of 0.8, 0.8, 0.7, 0.7; the log ratios' standard
	// deviation is (ln 0.8 − ln 0.7)/√3 over four, t(3) = 3.182.
	wantMean := math.Sqrt(0.8*0.7) - 1
	h := 3.182 * (math.Log(0.8) - math.Log(0.7)) / math.Sqrt(3) / 2
	if math.Abs(mean-wantMean) > 1e-9 || math.Abs(lo-math.Expm1(math.Log1p(wantMean)-h)) > 1e-3 || math.Abs(hi-math.Expm1(math.Log1p(wantMean)+h)) > 1e-3 {
		t.Errorf("browse: %g [%g, %g], want %g ± %g in logs", mean, lo, hi, wantMean, h)
	}
	if s := settleErrors(lo, hi, meanLimit); s != settledBeyond {
		t.Errorf("browse settled %d, want beyond (interval %g to %g)", s, lo, hi)
	}
	cmean, clo, chi := pooledError(rows[keys[1]])
	if s := settleErrors(clo, chi, cpuLimit); s != settledWithin || math.Abs(cmean) > 1e-3 {
		t.Errorf("CPU %g [%g, %g] settled %d, want about 0 and within", cmean, clo, chi, s)
	}
	if _, lo1, hi1 := pooledError(browse[:1]); !math.IsNaN(lo1) || !math.IsNaN(hi1) || settleErrors(lo1, hi1, meanLimit) != unsettled {
		t.Errorf("one invocation: interval %g to %g, want none and unsettled", lo1, hi1)
	}
	var b strings.Builder
	writePooled(&b, []string{"a", "b", "c", "d", "e"}, reps, []string{"-pool", "a,b,c,d,e"}, time.Now())
	for _, want := range []string{
		"| load-80 | browse | 4 | -25 % | -34 % to -15 % | 4 | 0 | beyond |",
		"- Mean response times: 0 of 1 within 15 % for every value in the interval; 1 beyond it for every one (load-80 browse (-25 %))",
		"- Utilizations: 1 of 1 within 5 %",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("pooled report lacks %q:\n%s", want, b.String())
		}
	}
}

// A finished segment keeps its measurements and loses its databases.
func TestRemoveDatabases(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"catalog.db", "catalog.db-wal", "orders.db", "orders.db-journal", "load.json", "catalog.otlp.jsonl"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := removeDatabases(dir); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if want := []string{"catalog.otlp.jsonl", "load.json"}; !slices.Equal(left, want) {
		t.Errorf("left %v, want %v", left, want)
	}
	if err := removeDatabases(dir); err != nil {
		t.Errorf("again, with nothing to remove: %v", err)
	}
}

// slottedGatewayModel is a gateway with one CPU slot, taken before its
// span, alone on four cores, and a catalog holding one of its database
// connections for 1 ms (four of them, half of one busy on average: they
// hardly ever run out): at 500 requests/s its 1 ms bursts keep the slot
// half busy, and a request waits for it before the span starts as an
// M/D/1 queue does, ρS/(2(1 − ρ)) = 0.5 ms.
const slottedGatewayModel = `perfcast: 1
hosts:
  testbed: {cpu: {cores: 4}}
components:
  gateway:
    host: testbed
    operations:
      GET /recommend/{user}:
        steps:
          - hold: {resource: gateway-cpu-slots, steps: [{cpu: 1ms}]}
          - hold: {resource: gateway-pool, steps: [{call: "catalog/GET /products/{id}"}]}
  catalog:
    host: testbed
    operations:
      GET /products/{id}: {steps: [{hold: {resource: catalog-db, steps: [{delay: 1ms}]}}]}
passive:
  gateway-pool: {capacity: 8}
  gateway-cpu-slots: {capacity: 1, before_span: true}
  catalog-cpu-slots: {capacity: 1, before_span: true}
  catalog-db: {capacity: 4}
workload:
  recommend:
    open: {rate: 1}
    steps: [{call: "gateway/GET /recommend/{user}"}]
`

// TestLessModeled checks that the client's gap keeps only what the model
// does not put outside the gateway's span itself: a measured gap of 2 ms
// keeps 1.5 ms, the model's 0.5 ms wait for the slot taken out, and one
// shorter than that wait keeps none. The tolerance, 2 × 2 % of the 2.5 ms
// response time, is 14 times the simulation's 95 % half-width at 400 000
// requests (0.007 ms).
func TestLessModeled(t *testing.T) {
	m, err := model.Parse([]byte(slottedGatewayModel), "gateway.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := setup{Name: "reference", Rate: 500, GOMAXPROCS: 1, ModelCores: 4, Pool: 8}
	got, err := lessModeled(context.Background(), m, s, map[string]float64{"recommend": 1}, 400000,
		map[string]float64{"recommend": 2e-3, "order": 1e-3})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("recommend's 2 ms gap keeps %.4g ms", got["recommend"]*1e3)
	if g := got["recommend"]; math.Abs(g-1.5e-3) > 2*0.02*2.5e-3 {
		t.Errorf("recommend's gap of 2 ms keeps %.3g ms, want 1.5 (less the slot's M/D/1 wait)", g*1e3)
	}
	if g := got["order"]; g != 1e-3 {
		t.Errorf("order, which the model has no workload of, keeps %.3g ms of its 1 ms gap", g*1e3)
	}
	got, err = lessModeled(context.Background(), m, s, map[string]float64{"recommend": 1}, 400000,
		map[string]float64{"recommend": 0.3e-3})
	if err != nil {
		t.Fatal(err)
	}
	if g := got["recommend"]; g != 0 {
		t.Errorf("a gap shorter than the slot's wait keeps %.3g ms, want none", g*1e3)
	}
}

// The steal paragraph gives correlations only where steal varied between
// the segments; constant steal (a machine without it) is said plainly
// rather than as r = NaN.
func TestWriteSteal(t *testing.T) {
	seg := func(mean float64) *loadgen.Result {
		return &loadgen.Result{All: &loadgen.Summary{Mean: mean, Throughput: 10}}
	}
	rep := func(steal []float64) string {
		m := &measured{
			Load:           seg(0.02),
			CPUSeconds:     0.1,
			Parts:          []*loadgen.Result{seg(0.018), seg(0.020), seg(0.025)},
			PartPerRequest: []float64{0.009, 0.010, 0.012},
			PartSteal:      steal,
		}
		r := &report{rows: []reportRow{{setup: setup{Name: "reference", GOMAXPROCS: 1, SpanCPU: true, ModelCores: 1}, measured: m}}}
		var b strings.Builder
		r.writeSteal(&b)
		return b.String()
	}
	if got := rep([]float64{0, 0, 0}); strings.Contains(got, "NaN") || !strings.Contains(got, "did not vary") {
		t.Errorf("constant steal: %q", got)
	}
	if got := rep([]float64{0.001, 0.002, 0.004}); !strings.Contains(got, "(r = 1.00)") || strings.Contains(got, "did not vary") {
		t.Errorf("varying steal: %q", got)
	}
}
