package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// perfcast runs the command line in-process and returns its exit status and
// outputs.
func perfcast(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestCheckExamples(t *testing.T) {
	files, _ := filepath.Glob("../../examples/models/*.yaml")
	if len(files) == 0 {
		t.Fatal("no examples")
	}
	for _, f := range files {
		code, out, errs := perfcast(t, "check", f)
		if code != 0 {
			t.Fatalf("check %s: exit %d: %s", f, code, errs)
		}
		for _, want := range []string{"valid", "HOST", "COMPONENT", "WORKLOAD", "service demand per request"} {
			if !strings.Contains(out, want) {
				t.Errorf("check %s: summary lacks %q:\n%s", f, want, out)
			}
		}
	}
}

func TestCheckPrintRoundTrips(t *testing.T) {
	code, out, errs := perfcast(t, "check", "--print", "yaml", "../../examples/models/shop.yaml")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	file := filepath.Join(t.TempDir(), "shop.yaml")
	if err := os.WriteFile(file, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	code, again, errs := perfcast(t, "check", "--print", "yaml", file)
	if code != 0 || again != out {
		t.Fatalf("printed model does not round-trip (exit %d, %s)", code, errs)
	}
}

func TestExitStatus(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("perfcast: 1\nhosts: {a: {cpu: {cores: 0}}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"check", bad}, 1, "bad.yaml:2:"},
		{[]string{"check", "no-such-file.yaml"}, 1, "no-such-file.yaml"},
		{[]string{"check"}, 2, "usage: perfcast check MODEL (0 arguments given)"},
		{[]string{"chek"}, 2, "unknown command"},
		{[]string{"check", "--no-such-flag", bad}, 2, "unknown flag"},
		{[]string{"check", "--print", "xml", "../../examples/models/shop.yaml"}, 2, "yaml or json"},
	}
	for _, tc := range cases {
		code, _, errs := perfcast(t, tc.args...)
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d (%s)", tc.args, code, tc.code, errs)
		}
		if !strings.Contains(errs, tc.err) {
			t.Errorf("%v: stderr %q lacks %q", tc.args, errs, tc.err)
		}
		for _, line := range strings.Split(strings.TrimSpace(errs), "\n") {
			if strings.Contains(line, "panic") || strings.Contains(line, "goroutine") {
				t.Errorf("%v: %s", tc.args, line)
			}
		}
	}
}

func TestPredictExamples(t *testing.T) {
	files, _ := filepath.Glob("../../examples/models/*.yaml")
	for _, f := range files {
		for _, solver := range []string{"auto", "mva", "sim"} {
			code, out, errs := perfcast(t, "predict", "--solver", solver, "--requests", "20000", "--json", f)
			if code != 0 {
				t.Fatalf("predict --solver %s %s: exit %d: %s", solver, f, code, errs)
			}
			if !strings.Contains(out, `"perfcast": 1`) || !strings.Contains(out, `"stable": true`) {
				t.Errorf("predict --solver %s %s: %s", solver, f, out)
			}
		}
	}
	if code, _, _ := perfcast(t, "predict", "--solver", "magic", "../../examples/models/shop.yaml"); code != 2 {
		t.Errorf("unknown solver: exit %d, want 2", code)
	}
}

func TestCapacityAndSweep(t *testing.T) {
	code, out, errs := perfcast(t, "capacity", "../../examples/models/pipeline.yaml", "--slo", "mean(workers/serve) < 20ms",
		"--vary", "workload.clients.open.rate=10..280", "--solver", "mva", "--json")
	if code != 0 || !strings.Contains(out, `"max"`) || !strings.Contains(out, `"binding": "mean(workers/serve) < 20ms"`) {
		t.Errorf("capacity: exit %d: %s %s", code, out, errs)
	}
	// No value keeps the SLO: the answer says where it comes closest and
	// what it is there.
	code, out, errs = perfcast(t, "capacity", "../../examples/models/shop.yaml", "--slo", "util(backend.cpu) < 0.001",
		"--vary", "hosts.backend.cpu.cores=1..2", "--solver", "mva", "--json")
	for _, want := range []string{`"none": true`, `"hosts.backend.cpu.cores": 2`, `"binding": "util(backend.cpu) < 0.001"`, `"binding_value": 0.0`, `"result"`} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("capacity with no answer: exit %d, want %s in %s %s", code, want, out, errs)
		}
	}
	code, out, _ = perfcast(t, "capacity", "../../examples/models/shop.yaml", "--slo", "util(backend.cpu) < 0.001",
		"--vary", "hosts.backend.cpu.cores=1..2", "--solver", "mva")
	if code != 0 || !strings.Contains(out, "at 2, where they come closest: util(backend.cpu) < 0.001 is ") {
		t.Errorf("capacity with no answer: exit %d: %s", code, out)
	}
	code, out, errs = perfcast(t, "sweep", "../../examples/models/shop.yaml", "--vary", "workload.*.load=1..2:1", "--solver", "mva", "--json")
	if code != 0 || strings.Count(out, `"set"`) != 2 {
		t.Errorf("sweep: exit %d: %s %s", code, out, errs)
	}
	if code, _, _ := perfcast(t, "sweep", "../../examples/models/shop.yaml"); code != 2 {
		t.Errorf("sweep without --vary: exit %d, want 2", code)
	}
}

// A --set that lets more run at once than the model file says comes with
// a warning that contention the model never saw is not in it; one that
// lowers a limit does not.
func TestSetMoreParallelWarns(t *testing.T) {
	const model = "../../examples/models/pipeline.yaml"
	const want = "passive.index-lock.capacity raised from 1 to 2"
	code, out, errs := perfcast(t, "predict", "--solver", "mva", "--json", "--set", "passive.index-lock.capacity=2", model)
	if code != 0 || !strings.Contains(out, want) {
		t.Errorf("predict with the lock raised: exit %d, no %q in %s %s", code, want, out, errs)
	}
	code, out, errs = perfcast(t, "predict", "--solver", "mva", "--json", "--set", "passive.index-lock.capacity=1", model)
	if code != 0 || strings.Contains(out, "raised from") {
		t.Errorf("predict with the lock as it is: exit %d: %s %s", code, out, errs)
	}
	code, out, errs = perfcast(t, "sweep", model, "--vary", "passive.index-lock.capacity=1..2", "--solver", "mva", "--json")
	if code != 0 || strings.Count(out, want) != 1 {
		t.Errorf("sweep of the lock: exit %d, want %q once: %s %s", code, want, out, errs)
	}
}

// A flag given a value it cannot take is a usage error that says which
// flag and what it wants, not Go's parser.
func TestFlagValueErrors(t *testing.T) {
	const model = "../../examples/models/pipeline.yaml"
	for flag, want := range map[string]string{
		"--seed=-1":       `--seed: want a whole number, at least 0, not "-1"`,
		"--requests=x":    `--requests: want a whole number, not "x"`,
		"--precision=abc": `--precision: want a number, not "abc"`,
		"--workers=0":     "--workers must be at least 1, not 0",
		"--requests=-2":   "--requests must not be negative, not -2",
	} {
		code, _, errs := perfcast(t, "predict", model, flag)
		if code != 2 || !strings.Contains(errs, want) || strings.Contains(errs, "strconv") {
			t.Errorf("%s: exit %d, %q; want 2 and %q", flag, code, errs, want)
		}
	}
}

// An output path whose directory does not exist fails before any work,
// naming the path; standard output needs no directory.
func TestOutputDirChecked(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-dir", "out")
	for _, args := range [][]string{
		{"report", "../../examples/models/pipeline.yaml", "-o", missing + ".html"},
		{"generate", "../../examples/models/pipeline.yaml", "-o", missing + ".json"},
		{"extract", "../../examples/data/synthetic-shop.otlp.jsonl.gz", "-o", missing + ".yaml"},
	} {
		code, _, errs := perfcast(t, args...)
		if code != 1 || !strings.Contains(errs, "cannot write there: no directory") || !strings.Contains(errs, filepath.Base(args[len(args)-1])) {
			t.Errorf("%v: exit %d, %q", args, code, errs)
		}
	}
	if err := outputDir("-"); err != nil {
		t.Errorf("standard output: %v", err)
	}
	// A directory where a file is wanted fails before any work too.
	dir := t.TempDir()
	code, _, errs := perfcast(t, "extract", "../../examples/data/synthetic-shop.otlp.jsonl.gz", "-o", dir)
	if code != 1 || !strings.Contains(errs, "it is a directory") {
		t.Errorf("extract -o DIRECTORY: exit %d, %q", code, errs)
	}
	if es, _ := os.ReadDir(dir); len(es) != 0 {
		t.Errorf("extract -o DIRECTORY left %v", es)
	}
}
