package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perfcast/perfcast/ingest/ingesttest"
	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/validate/validatetest"
)

// validateFiles writes the model of the test system and traces of sys.
func validateFiles(t *testing.T, sys validatetest.System, n int) (modelFile, traceFile string) {
	t.Helper()
	dir := t.TempDir()
	modelFile = filepath.Join(dir, "vshop.yaml")
	if err := os.WriteFile(modelFile, []byte(validatetest.Shop().Model(0)), 0o644); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := ingesttest.WriteOTLPJSON(&buf, sys.Generate(1, n).Spans, 100); err != nil {
		t.Fatal(err)
	}
	traceFile = filepath.Join(dir, "traces.jsonl")
	if err := os.WriteFile(traceFile, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return modelFile, traceFile
}

func TestValidateJSON(t *testing.T) {
	mf, tf := validateFiles(t, validatetest.Shop(), 4000)
	code, out, errs := perfcast(t, "validate", mf, "--traces", tf, "--solver", "mva", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var v struct {
		Measured struct {
			Solver    string `json:"solver"`
			Workloads map[string]struct {
				Throughput float64 `json:"throughput"`
			} `json:"workloads"`
		} `json:"measured"`
		Predicted struct {
			Solver    string `json:"solver"`
			Workloads map[string]struct {
				Throughput float64 `json:"throughput"`
			} `json:"workloads"`
		} `json:"predicted"`
		Errors struct {
			Workloads map[string]struct {
				ResponseTime struct {
					Mean *float64 `json:"mean"`
				} `json:"response_time"`
			} `json:"workloads"`
			Resources map[string]struct {
				Utilization *float64 `json:"utilization"`
			} `json:"resources"`
		} `json:"errors"`
		Noise struct {
			Workloads map[string]struct {
				ResponseTime struct {
					Mean *float64 `json:"mean"`
				} `json:"response_time"`
			} `json:"workloads"`
		} `json:"noise"`
		Summary struct {
			RTPE *struct{ Max float64 } `json:"rtpe"`
		} `json:"summary"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	if v.Measured.Solver != "measured" || v.Predicted.Solver != "mva" {
		t.Errorf("solvers %q, %q", v.Measured.Solver, v.Predicted.Solver)
	}
	for _, w := range []string{"page", "home"} {
		e, n := v.Errors.Workloads[w].ResponseTime.Mean, v.Noise.Workloads[w].ResponseTime.Mean
		if e == nil || n == nil || math.Abs(*e) > 2**n {
			t.Errorf("workload %s: error %v, noise %v", w, e, n)
		}
		if m, p := v.Measured.Workloads[w].Throughput, v.Predicted.Workloads[w].Throughput; m == 0 || math.Abs(p-m) > 1e-9*m {
			t.Errorf("workload %s: predicted at %g/s, measured %g/s", w, p, m)
		}
	}
	if v.Errors.Resources["web.cpu"].Utilization == nil || v.Summary.RTPE == nil {
		t.Errorf("no CPU error or summary:\n%s", out)
	}
	// Same input, same bytes.
	_, again, _ := perfcast(t, "validate", mf, "--traces", tf, "--solver", "mva", "--json")
	if again != out {
		t.Error("validate --json is not deterministic")
	}
}

func TestValidateText(t *testing.T) {
	sys := validatetest.Shop()
	sys.ItemCPU = 3e-3
	mf, tf := validateFiles(t, sys, 4000)
	// Traces as further arguments.
	code, out, errs := perfcast(t, "validate", mf, tf, "--solver", "mva")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"validation of model vshop on 4000 traces", "MEASURED", "PREDICTED", "ERROR", "NOISE",
		"workload page", "operation catalog/GetItem", "resource app.cpu", "RTPE (workloads)", "CPUPE (hosts)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "resource app.cpu") && !strings.Contains(line, "-66.") {
			t.Errorf("app.cpu should be predicted a third of the measurement: %q", line)
		}
	}
}

func TestValidateCalibrate(t *testing.T) {
	sys := validatetest.Shop()
	sys.CPUFactor = 1.25
	sys.Delay = 5e-3
	mf, tf := validateFiles(t, sys, 8000)
	cal := filepath.Join(t.TempDir(), "calibrated.yaml")
	code, out, errs := perfcast(t, "validate", mf, "--traces", tf, "--solver", "mva", "--calibrate", "-o", cal)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"calibration written to " + cal, "host web: CPU demands ×1.2", "workload page: delay 5", "after calibration:"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	m, err := model.Load(cal)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(m.Description, "Calibrated on 8000 traces") {
		t.Errorf("description %q", m.Description)
	}
	if w := m.Workload("home"); w.Steps[0].Kind != model.StepDelay || math.Abs(w.Steps[0].Demand.Mean()-sys.Delay) > 0.5e-3 {
		t.Errorf("home starts with %v %v, want a delay of about 5 ms", w.Steps[0].Kind, w.Steps[0].Demand)
	}
	// The calibrated model validates within the noise.
	code, js, errs := perfcast(t, "validate", cal, "--traces", tf, "--solver", "mva", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var v struct {
		Errors, Noise struct {
			Workloads map[string]struct {
				ResponseTime struct{ Mean *float64 } `json:"response_time"`
			} `json:"workloads"`
		}
	}
	if err := json.Unmarshal([]byte(js), &v); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"page", "home"} {
		e, n := v.Errors.Workloads[w].ResponseTime.Mean, v.Noise.Workloads[w].ResponseTime.Mean
		if e == nil || n == nil || math.Abs(*e) > 2**n {
			t.Errorf("calibrated workload %s: error %v, noise %v", w, e, n)
		}
	}
	// With --json, the calibration and the second validation are in it.
	code, js, errs = perfcast(t, "validate", mf, "--traces", tf, "--solver", "mva", "--calibrate", "-o", cal, "--json")
	if code != 0 || !strings.Contains(js, `"calibration": {`) || !strings.Contains(js, `"calibrated": {`) {
		t.Errorf("exit %d (%s), JSON lacks calibration:\n%.400s", code, errs, js)
	}
}

func TestValidateSimulated(t *testing.T) {
	mf, tf := validateFiles(t, validatetest.Shop(), 3000)
	code, out, errs := perfcast(t, "validate", mf, "--traces", tf, "--solver", "sim", "--requests", "20000", "--workers", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	// Simulation gives percentiles, and the recorded run quartiles.
	for _, want := range []string{" p95 ", " iqr ", "solver sim"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestValidateUsage(t *testing.T) {
	mf, tf := validateFiles(t, validatetest.Shop(), 200)
	other := filepath.Join(t.TempDir(), "other.yaml")
	if err := os.WriteFile(other, []byte(strings.NewReplacer("{call: front/GET /page}", "{call: catalog/GetItem}", "{call: front/GET /home}", "{call: catalog/GetItem}").Replace(validatetest.Shop().Model(0))), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"validate", mf}, 2, "needs --traces"},
		{[]string{"validate", mf, "--traces", tf, "--calibrate"}, 2, "--calibrate needs -o"},
		{[]string{"validate", mf, "--traces", tf, "-o", "x.yaml"}, 2, "give --calibrate"},
		{[]string{"validate", mf, "--traces", tf, "--solver", "nope"}, 2, "--solver"},
		{[]string{"validate", mf, "--traces", "no-such-traces.json"}, 1, "no-such-traces.json"},
		{[]string{"validate", "no-such-model.yaml", "--traces", tf}, 1, "no-such-model.yaml"},
		{[]string{"validate", other, "--traces", tf, "--solver", "mva"}, 1, "no workload matches"},
	} {
		code, _, errs := perfcast(t, tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.err) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, errs, tc.code, tc.err)
		}
	}
}

func TestValidateMetrics(t *testing.T) {
	mf, tf := validateFiles(t, validatetest.Shop(), 2000)
	// The traces start at Unix second 1.7e9 and last about 40 s; web is
	// 0.5 % busy.
	var b strings.Builder
	b.WriteString("timestamp,host,cpu_utilization\n")
	for ts := 1_699_999_990; ts <= 1_700_000_100; ts += 5 {
		fmt.Fprintf(&b, "%d,web,0.005\n", ts)
	}
	mfile := filepath.Join(t.TempDir(), "cpu.csv")
	if err := os.WriteFile(mfile, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := perfcast(t, "validate", mf, "--traces", tf, "--metrics", mfile, "--solver", "mva", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var v struct {
		Measured struct {
			Resources map[string]struct{ Utilization float64 } `json:"resources"`
		} `json:"measured"`
		Warnings []string `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	if u := v.Measured.Resources["web.cpu"].Utilization; math.Abs(u-0.005) > 1e-9 {
		t.Errorf("web utilization %g, want 0.005 from the metrics", u)
	}
	if !strings.Contains(strings.Join(v.Warnings, "\n"), "CPU utilization from metrics on web") {
		t.Errorf("warnings %v", v.Warnings)
	}
	if code, _, errs := perfcast(t, "validate", mf, "--traces", tf, "--metrics", tf); code != 1 || !strings.Contains(errs, "read metrics") {
		t.Errorf("traces as metrics: exit %d, %s", code, errs)
	}
}
