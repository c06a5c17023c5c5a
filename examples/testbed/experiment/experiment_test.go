package main

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/perfcast/perfcast/examples/testbed/loadgen"
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
workload:
  recommend:
    open: {rate: 1}
    steps:
      - call: gateway/GET /recommend/{user}
`

// Every call of the operation to the target is wrapped in a hold, with
// the delay just before it; other calls are left alone; the result
// validates.
func TestWrap(t *testing.T) {
	m, err := model.Parse([]byte(testModel), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := wrap(m, poolOp, poolTarget, poolResource); err != nil {
		t.Fatal(err)
	}
	m.Passive = append(m.Passive, &model.Passive{Name: poolResource, Capacity: 2})
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	holds, calls := 0, 0
	steps := m.Component("gateway").Operation("GET /recommend/{user}").Steps
	model.Walk(steps, func(s *model.Step) {
		switch s.Kind {
		case model.StepHold:
			holds++
			last := s.Steps[len(s.Steps)-1]
			if s.Resource != poolResource || last.Kind != model.StepCall || last.Target != poolTarget {
				t.Errorf("hold %+v", s)
			}
		case model.StepCall:
			calls++
		}
	})
	if holds != 3 || calls != 4 {
		t.Fatalf("%d holds, %d calls; want 3 and 4", holds, calls)
	}
	first := steps[1].Parallel[0]
	if len(first) != 1 || first[0].Kind != model.StepHold || len(first[0].Steps) != 2 || first[0].Steps[0].Kind != model.StepDelay {
		t.Fatalf("the call's latency is not inside the hold: %+v", first)
	}
	if steps[3].Kind != model.StepCall {
		t.Fatal("a call to another operation was wrapped")
	}
	if err := wrap(m, lockOp, lockTarget, lockResource); err == nil {
		t.Fatal("wrapping an operation the model lacks succeeded")
	}
}

// The declared catalog connections wrap every catalog operation; the load
// generator, where it shares the CPUs, loads the host, and servicesCPU
// takes its share out again.
func TestDeclareGenerator(t *testing.T) {
	m, err := model.Parse([]byte(testModel), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := setup{Name: "t", Rate: 100, ModelCores: 1, Pool: 8, GeneratorCPU: 0.002}
	if err := declare(m, s); err != nil {
		t.Fatal(err)
	}
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, op := range m.Component(dbComponent).Operations {
		if len(op.Steps) != 1 || op.Steps[0].Kind != model.StepHold || op.Steps[0].Resource != dbResource {
			t.Fatalf("%s is not held in %s: %+v", op.Name, dbResource, op.Steps)
		}
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
	if err := serviceMetrics(out, dir); err != nil {
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
// alone, or makes the whole file when it has none.
func TestWriteReport(t *testing.T) {
	dir := t.TempDir()
	doc := filepath.Join(dir, "doc.md")
	before, after := "# Doc\n\nhand-written\n\n", "\n\n## More\n"
	if err := os.WriteFile(doc, []byte(before+beginReport+"\n\nold\n\n"+endReport+after), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 2 { // twice: the markers survive a rewrite
		if err := writeReport(doc, []byte("new report\n\n")); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := os.ReadFile(doc)
	if want := before + beginReport + "\n\nnew report\n\n" + endReport + after; string(got) != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	whole := filepath.Join(dir, "new.md")
	if err := writeReport(whole, []byte("report\n")); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(whole); string(got) != beginReport+"\n\nreport\n"+endReport+"\n" {
		t.Fatalf("whole file %q", got)
	}
	broken := filepath.Join(dir, "broken.md")
	os.WriteFile(broken, []byte(endReport+"\n"+beginReport), 0o644)
	if err := writeReport(broken, []byte("x")); err == nil {
		t.Fatal("markers out of order accepted")
	}
}

// The run order is a permutation, the same for a seed, with the last
// configuration last when asked.
func TestRunOrder(t *testing.T) {
	a, b := runOrder(11, 1, true), runOrder(11, 1, true)
	if !slices.Equal(a, b) {
		t.Fatalf("two orders for one seed: %v, %v", a, b)
	}
	if a[10] != 10 {
		t.Fatalf("the last configuration ran at %v", a)
	}
	if slices.Equal(a, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}) {
		t.Fatal("not shuffled")
	}
	sorted := slices.Clone(a)
	slices.Sort(sorted)
	for i, v := range sorted {
		if v != i {
			t.Fatalf("not a permutation: %v", a)
		}
	}
	if len(runOrder(0, 1, true)) != 0 {
		t.Fatal("an order for no configurations")
	}
}

// The gap is the class's measured mean less its root spans' mean over the
// steady phase (child spans and spans outside it left out); as a workload
// delay it adds exactly that to the predicted response time.
func TestClientGaps(t *testing.T) {
	dir := t.TempDir()
	steady := time.Unix(1_700_000_000, 0)
	span := func(id, parent string, start time.Time, d time.Duration) string {
		p := ""
		if parent != "" {
			p = `"parentSpanId":"` + parent + `",`
		}
		return `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"gateway"}}]},"scopeSpans":[{"spans":[{` +
			`"traceId":"5b8efff798038103d269b633813fc6` + id + `","spanId":"eee19b7ec3c1b1` + id + `",` + p +
			`"name":"GET /recommend/{user}","kind":2,"startTimeUnixNano":"` + strconv.FormatInt(start.UnixNano(), 10) +
			`","endTimeUnixNano":"` + strconv.FormatInt(start.Add(d).UnixNano(), 10) + `"}]}]}]}`
	}
	lines := []string{
		span("01", "", steady.Add(-time.Second), 50*time.Millisecond), // before the steady phase
		span("02", "", steady.Add(time.Second), 4*time.Millisecond),
		span("03", "", steady.Add(2*time.Second), 6*time.Millisecond),
		span("04", "eee19b7ec3c1b102", steady.Add(time.Second), 40*time.Millisecond), // not a root
	}
	if err := os.WriteFile(filepath.Join(dir, "gateway.otlp.jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	load := &loadgen.Result{SteadyStart: steady, SteadyEnd: steady.Add(time.Minute),
		Classes: map[string]*loadgen.Summary{"recommend": {Count: 2, Mean: 0.0056}, "browse": {Count: 5, Mean: 0.01}}}
	gaps, err := clientGaps(context.Background(), dir, load)
	if err != nil {
		t.Fatal(err)
	}
	if len(gaps) != 1 || math.Abs(gaps["recommend"]-0.0006) > 1e-12 {
		t.Fatalf("gaps %v, want recommend 0.6 ms only", gaps)
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

func TestStepRates(t *testing.T) {
	for _, c := range []struct{ rate, sat, low, high float64 }{
		{50, 136, 20.4, 88.4},
		{50, 0, 15, 100},
		{100, 120, 18, 150}, // the high never below 1.5 times the rate
		{20, 400, 10, 260},  // the low never above half the rate
	} {
		low, high := stepRates(c.rate, c.sat)
		if math.Abs(low-c.low) > 1e-9 || math.Abs(high-c.high) > 1e-9 {
			t.Errorf("stepRates(%g, %g) = %g, %g; want %g, %g", c.rate, c.sat, low, high, c.low, c.high)
		}
	}
}
