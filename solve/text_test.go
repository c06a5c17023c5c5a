package solve

import (
	"errors"
	"strings"
	"testing"
)

func textSample() *Result {
	r := &Result{
		Perfcast: 1, Model: "shop", Solver: "sim", Stable: true, Bottleneck: "app.cpu",
		Warnings: []string{"something to know"},
		Workloads: map[string]*WorkloadResult{
			"browse": {
				Throughput: 39.97, ThroughputCI95: &[2]float64{39.8, 40.14},
				ResponseTime: Times{Mean: 0.0213, P50: Float(0.017), P90: Float(0.039), P95: Float(0.051), P99: Float(0.083),
					CI95: &[2]float64{0.0209, 0.0217}},
				CompletionTime: &Times{Mean: 0.0251},
			},
			"buyers": {Throughput: 2.5, ResponseTime: Times{Mean: 1.5}, Dropped: 0.25},
		},
		Operations: map[string]*OperationResult{
			"catalog/GetItem": {Throughput: 119.9, ResponseTime: Times{Mean: 0.0000123, P95: Float(0.0082)}},
		},
		Resources: map[string]*ResourceResult{
			"app.cpu":         {Utilization: 0.53, UtilizationCI95: &[2]float64{0.52, 0.54}, Busy: 2.12, PerReplica: []float64{0.52, 0.54}},
			"catalog.threads": {Utilization: 0.12, Busy: 1.92, Wait: &Times{Mean: 0}},
			"dbpool":          {Utilization: 0.0004, Busy: 0.004, Wait: &Times{Mean: 0.0004}},
		},
		Sim: &SimInfo{Seed: 1, Replications: 8, Requests: 400000, Events: 5200000, SimTime: 10000, WallSeconds: 0.41, WarmupCut: 100},
	}
	return r
}

func TestWriteText(t *testing.T) {
	var b strings.Builder
	if err := WriteText(&b, textSample()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	t.Log("\n" + out)
	for _, want := range []string{
		"model shop, solver sim: stable, bottleneck app.cpu",
		"warning: something to know",
		"40.0/s ±0.170",      // throughput with its half-width
		"21.3 ms ±0.400",     // mean and half-width in the mean's unit
		"17.0 ms", "83.0 ms", // percentiles
		"25.1 ms",                // completion time
		"1.50 s",                 // seconds
		"0.250/s",                // dropped rate
		"12.3 µs",                // microseconds
		"53.0 % ±1.0 %",          // utilization with its interval
		"52.0 % 54.0 %",          // per replica
		"0.04 %",                 // tiny utilization keeps two digits
		"400 µs",                 // waiting time
		"seed 1, 8 replications", // run summary
		"167 min simulated",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	// Missing figures are dashes, not zeros.
	if !strings.Contains(lineWith(out, "catalog/GetItem"), "-") {
		t.Error("missing percentiles are not shown as -")
	}
	// Columns are aligned: each header starts where its cells start.
	header := lineWith(out, "WORKLOAD")
	col := strings.Index(header, "THROUGHPUT")
	for _, name := range []string{"browse ", "buyers "} {
		line := lineWith(out, name)
		if line == "" || len(line) <= col || line[col-1] != ' ' || line[col] == ' ' {
			t.Errorf("row %q is not aligned with the header (column %d):\n%s\n%s", name, col, header, line)
		}
	}
}

// TestWriteTextSpan: a SPAN column appears when an operation has a span
// time, with a dash for the operations without one.
func TestWriteTextSpan(t *testing.T) {
	var b strings.Builder
	if err := WriteText(&b, textSample()); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "SPAN") {
		t.Errorf("a SPAN column without span times:\n%s", b.String())
	}
	r := textSample()
	r.Operations["catalog/Wait"] = &OperationResult{Throughput: 10, ResponseTime: Times{Mean: 0.004}, Span: &Times{Mean: 0.0015}}
	b.Reset()
	if err := WriteText(&b, r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if h := lineWith(out, "OPERATION"); !strings.HasSuffix(strings.TrimSpace(h), "SPAN") {
		t.Errorf("no SPAN column last in %q", h)
	}
	if l := lineWith(out, "catalog/Wait"); !strings.HasSuffix(strings.TrimSpace(l), "1.50 ms") {
		t.Errorf("span time missing from %q", l)
	}
	if l := lineWith(out, "catalog/GetItem"); !strings.HasSuffix(strings.TrimSpace(l), "-") {
		t.Errorf("no dash for an operation without a span time in %q", l)
	}
}

func TestWriteTextUnstable(t *testing.T) {
	r := &Result{Model: "m", Solver: "sim", Stable: false, Bottleneck: "app.cpu",
		Saturation: &Saturation{Resource: "app.cpu", At: map[string]float64{"workload.w.open.rate": 93.1}},
		Warnings:   []string{"not simulated"}}
	var b strings.Builder
	if err := WriteText(&b, r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"UNSTABLE", "saturation: app.cpu is fully used at workload.w.open.rate = 93.1/s"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestWriteTextNoRequests(t *testing.T) {
	r := &Result{Model: "m", Solver: "mva", Stable: true,
		Workloads: map[string]*WorkloadResult{"idle": {}, "busy": {Throughput: 2, ResponseTime: Times{Mean: 0.5}}}}
	var b strings.Builder
	if err := WriteText(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(b.String(), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 2 && f[0] == "idle" && f[2] != "-":
			t.Errorf("a workload with no request has a mean response time: %q", line)
		case len(f) > 2 && f[0] == "busy" && f[2] != "500":
			t.Errorf("busy workload: %q", line)
		}
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteTextError(t *testing.T) {
	if err := WriteText(failingWriter{}, textSample()); err == nil || err.Error() != "disk full" {
		t.Errorf("got %v, want the writer's error", err)
	}
}

func lineWith(text, s string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}
