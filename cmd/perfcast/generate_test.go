package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/perfcast/perfcast/metrics"
)

const shopModel = "../../examples/models/shop.yaml"

// TestGenerateExtractCheck runs the pipeline a user would try first:
// traces from a model, a model from the traces, and that model checked and
// solved.
func TestGenerateExtractCheck(t *testing.T) {
	dir := t.TempDir()
	traces := filepath.Join(dir, "shop.otlp.jsonl.gz")
	code, _, errs := perfcast(t, "generate", shopModel, "-o", traces, "--requests", "1500", "--external-spans")
	if code != 0 {
		t.Fatalf("generate: exit %d: %s", code, errs)
	}
	if !strings.Contains(errs, "1500 requests") {
		t.Errorf("generate summary: %s", errs)
	}
	extracted := filepath.Join(dir, "extracted.yaml")
	if code, _, errs := perfcast(t, "extract", traces, "-o", extracted); code != 0 {
		t.Fatalf("extract: exit %d: %s", code, errs)
	}
	code, out, errs := perfcast(t, "check", extracted)
	if code != 0 {
		t.Fatalf("check: exit %d: %s", code, errs)
	}
	// The shoppers' requests carry session.id, as generated traces do:
	// one closed workload, as in the model they came from.
	for _, want := range []string{"frontend", "catalog", "db", "GET /browse", "POST /checkout", "1 workload", "sessions  closed"} {
		if !strings.Contains(out, want) {
			t.Errorf("extracted model lacks %q:\n%s", want, out)
		}
	}
	if code, _, errs := perfcast(t, "predict", "--solver", "sim", "--requests", "5000", extracted); code != 0 {
		t.Fatalf("predict: exit %d: %s", code, errs)
	}
}

// TestGenerateDeterministic checks that the same seed gives the same bytes,
// compressed or not, and another seed other bytes.
func TestGenerateDeterministic(t *testing.T) {
	dir := t.TempDir()
	gen := func(name string, extra ...string) []byte {
		t.Helper()
		path := filepath.Join(dir, name)
		args := append([]string{"generate", shopModel, "-o", path, "--requests", "300", "-q"}, extra...)
		if code, _, errs := perfcast(t, args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, name := range []string{"a.jsonl", "a.jsonl.gz", "a.pb"} {
		var format []string
		if name == "a.pb" {
			format = []string{"--format", "otlp-proto"}
		}
		first := gen(name, format...)
		again := gen("again-"+name, format...)
		if !bytes.Equal(first, again) {
			t.Errorf("%s: same seed, different bytes", name)
		}
		other := gen("other-"+name, append(format, "--seed", "2")...)
		if bytes.Equal(first, other) {
			t.Errorf("%s: different seeds, same bytes", name)
		}
	}
}

// TestGenerateOptions checks what each flag changes in the file, through
// perfcast stats, which reads it back.
func TestGenerateOptions(t *testing.T) {
	dir := t.TempDir()
	stats := func(path string) statsReport {
		t.Helper()
		code, out, errs := perfcast(t, "stats", "--json", path)
		if code != 0 {
			t.Fatalf("stats %s: exit %d: %s", path, code, errs)
		}
		var r statsReport
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	plain := filepath.Join(dir, "plain.jsonl")
	proto := filepath.Join(dir, "proto.pb")
	noCPU := filepath.Join(dir, "nocpu.jsonl")
	for _, args := range [][]string{
		{"-o", plain},
		{"-o", proto, "--format", "otlp-proto", "--external-spans"},
		{"-o", noCPU, "--no-cpu-time", "--set", "workload.shoppers.closed.users=50"},
	} {
		args = append([]string{"generate", shopModel, "--requests", "400", "-q"}, args...)
		if code, _, errs := perfcast(t, args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
	}
	p, pb := stats(plain), stats(proto)
	if p.Files[0].Format != "otlp-json" || pb.Files[0].Format != "otlp-proto" {
		t.Errorf("formats %s and %s", p.Files[0].Format, pb.Files[0].Format)
	}
	if p.PartialTraces != 0 || pb.PartialTraces != 0 || p.Damage.Total() != 0 || pb.Damage.Total() != 0 {
		t.Errorf("partial or damaged traces: %+v %+v", p, pb)
	}
	// External spans: one per checkout (its payment delay), none in the
	// plain file; the traces themselves are the same.
	if pb.Traces != p.Traces || pb.Spans <= p.Spans {
		t.Errorf("external spans: %d traces %d spans, plain %d traces %d spans", pb.Traces, pb.Spans, p.Traces, p.Spans)
	}
	b, err := os.ReadFile(noCPU)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte("perfcast.cpu.time")) {
		t.Error("--no-cpu-time file carries perfcast.cpu.time")
	}
	if b, _ := os.ReadFile(plain); !bytes.Contains(b, []byte("perfcast.cpu.time")) {
		t.Error("default file lacks perfcast.cpu.time")
	}
	code, out, errs := perfcast(t, "generate", shopModel, "-o", "-", "--requests", "10", "-q")
	if code != 0 || !strings.HasPrefix(out, `{"resourceSpans"`) {
		t.Errorf("to standard output: exit %d: %.80s %s", code, out, errs)
	}
}

func TestGenerateErrors(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "t.jsonl")
	cases := []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"generate", shopModel}, 2, "-o"},
		{[]string{"generate", shopModel, "-o", out, "--format", "zipkin"}, 2, "otlp-json"},
		{[]string{"generate", shopModel, "-o", out, "--requests", "0"}, 2, "--requests"},
		{[]string{"generate", shopModel, "-o", out, "--set", "nothing.here=1"}, 2, "nothing"},
		{[]string{"generate", "no-such-model.yaml", "-o", out}, 1, "no-such-model.yaml"},
		{[]string{"generate", "../../examples/models/pipeline.yaml", "-o", out, "--set", "workload.*.load=100"}, 1, "steady state"},
		{[]string{"generate", shopModel, "-o", filepath.Join(dir, "missing", "t.jsonl")}, 1, "missing"},
		{[]string{"generate", shopModel, "-o", out, "--metrics", "-"}, 2, "--metrics needs a file"},
		{[]string{"generate", shopModel, "-o", out, "--metrics", out}, 2, "--metrics needs a file"},
		{[]string{"generate", shopModel, "-o", out, "--metrics", filepath.Join(dir, "missing", "m.csv")}, 1, "missing"},
		{[]string{"generate", shopModel, "-o", out, "--metrics", filepath.Join(dir, "m.csv"), "--metrics-interval", "0s"}, 2, "--metrics-interval"},
	}
	for _, tc := range cases {
		code, _, errs := perfcast(t, tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.err) {
			t.Errorf("%v: exit %d, want %d; stderr %q lacks %q", tc.args, code, tc.code, errs, tc.err)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 0 {
		t.Errorf("failed runs left files: %v", left)
	}
}

// An overloaded model generates nothing; the error says which resource,
// by how much, and what to do, once.
func TestGenerateOverloaded(t *testing.T) {
	dir := t.TempDir()
	m := filepath.Join(dir, "overload.yaml")
	if err := os.WriteFile(m, []byte(`perfcast: 1
hosts: {a: {}}
components:
  c: {host: a, operations: {o: {steps: [{cpu: 1ms}]}}}
workload:
  w: {open: {rate: 2000/s}, steps: [{call: c/o}]}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := perfcast(t, "generate", m, "-o", filepath.Join(dir, "t.json"), "--requests", "10")
	want := "no steady state at this load (bottleneck a.cpu, asked 2 times what it can serve): generate at a lower one"
	if code != 1 || !strings.Contains(errs, want) || strings.Count(errs, "steady state") != 1 {
		t.Errorf("exit %d, %q; want 1 and %q", code, errs, want)
	}
}

// TestGenerateMetrics: --metrics writes the hosts' CPU as a metrics file
// that extract reads, for every machine with CPU time, and the busy time
// it gives the CPU of the spans.
func TestGenerateMetrics(t *testing.T) {
	dir := t.TempDir()
	traces, cpu := filepath.Join(dir, "t.jsonl"), filepath.Join(dir, "cpu.csv")
	if code, _, errs := perfcast(t, "generate", shopModel, "-o", traces, "--requests", "3000", "--metrics", cpu, "--metrics-interval", "2s"); code != 0 {
		t.Fatalf("generate: exit %d: %s", code, errs)
	}
	set, err := metrics.Read([]string{cpu})
	if err != nil {
		t.Fatal(err)
	}
	var hosts []string
	for _, s := range set.Series {
		hosts = append(hosts, s.Host)
	}
	slices.Sort(hosts)
	if strings.Join(hosts, ",") != "backend,db,web-1,web-2" {
		t.Errorf("series of %v", hosts)
	}
	code, _, errs := perfcast(t, "extract", traces, "--metrics", cpu, "-o", filepath.Join(dir, "m.yaml"))
	if code != 0 || strings.Contains(errs, "no span comes from it") || strings.Contains(errs, "do not overlap its spans") {
		t.Errorf("extract with the metrics: exit %d: %s", code, errs)
	}
}

// TestStatsWithConfig: stats --config lists the operations as extraction
// names them and the traces that carry the configuration's attributes.
func TestStatsWithConfig(t *testing.T) {
	dir := t.TempDir()
	traces, cfg := filepath.Join(dir, "t.jsonl"), filepath.Join(dir, "cfg.yaml")
	if code, _, errs := perfcast(t, "generate", shopModel, "-o", traces, "--requests", "500"); code != 0 {
		t.Fatalf("generate: exit %d: %s", code, errs)
	}
	if err := os.WriteFile(cfg, []byte("session: session.id\nparams: [size]\noperations:\n  - {name: browse, span: \"GET /browse\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := perfcast(t, "stats", traces, "--config", cfg)
	if code != 0 {
		t.Fatalf("stats: exit %d: %s", code, errs)
	}
	for _, want := range []string{"OPERATION AS EXTRACTED", "frontend/browse", "session.id", "size        0 of "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = perfcast(t, "stats", traces, "--config", cfg, "--json")
	var rep statsReport
	if err := json.Unmarshal([]byte(out), &rep); code != 0 || err != nil {
		t.Fatalf("stats --json: exit %d, %v", code, err)
	}
	if rep.Attributes["session.id"] != rep.Traces || rep.Attributes["size"] != 0 || len(rep.Extracted) == 0 {
		t.Errorf("attributes %v of %d traces, %d operations", rep.Attributes, rep.Traces, len(rep.Extracted))
	}
}

// TestGenerateSampled keeps about a tenth of the traces; stats says so,
// and extract scales the rates back up.
func TestGenerateSampled(t *testing.T) {
	dir := t.TempDir()
	full, sampled := filepath.Join(dir, "full.jsonl"), filepath.Join(dir, "sampled.jsonl")
	if code, _, errs := perfcast(t, "generate", shopModel, "-o", full, "--requests", "3000"); code != 0 {
		t.Fatalf("generate: exit %d: %s", code, errs)
	}
	code, _, errs := perfcast(t, "generate", shopModel, "-o", sampled, "--requests", "3000", "--sample", "0.1")
	if code != 0 || !strings.Contains(errs, "kept of") {
		t.Fatalf("generate --sample: exit %d: %s", code, errs)
	}
	if code, _, errs := perfcast(t, "generate", shopModel, "-o", sampled, "--sample", "1.5"); code != 2 {
		t.Errorf("generate --sample 1.5: exit %d, want 2: %s", code, errs)
	}
	code, out, _ := perfcast(t, "stats", sampled, "--json")
	var rep statsReport
	if err := json.Unmarshal([]byte(out), &rep); code != 0 || err != nil {
		t.Fatalf("stats --json: exit %d, %v", code, err)
	}
	if rep.Sampling.Sampled != rep.Traces || math.Abs(rep.Sampling.MinKept-0.1) > 1e-12 || rep.Sampling.MaxKept != rep.Sampling.MinKept {
		t.Errorf("sampling %+v of %d traces, want all at 0.1", rep.Sampling, rep.Traces)
	}
	if _, out, _ := perfcast(t, "stats", sampled); !strings.Contains(out, "sampled traces") {
		t.Errorf("stats does not say the traces were sampled:\n%s", out)
	}
	rates := func(path string) float64 {
		model := filepath.Join(dir, filepath.Base(path)+".yaml")
		if code, _, errs := perfcast(t, "extract", path, "-o", model); code != 0 {
			t.Fatalf("extract %s: exit %d: %s", path, code, errs)
		}
		code, out, errs := perfcast(t, "predict", model, "--json", "--solver", "mva")
		var res struct {
			Workloads map[string]struct {
				Throughput float64 `json:"throughput"`
			} `json:"workloads"`
		}
		if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil {
			t.Fatalf("predict %s: exit %d, %v: %s", model, code, err, errs)
		}
		sum := 0.0
		for _, w := range res.Workloads {
			sum += w.Throughput
		}
		return sum
	}
	// About 300 traces kept: the rate is within ±6 % (one standard error)
	// of the full traces'; a tenth of it would be far off.
	if f, s := rates(full), rates(sampled); math.Abs(s/f-1) > 0.25 {
		t.Errorf("total rate %g from the sampled traces, %g from all", s, f)
	}
}

// TestTimeWindow reads the requests of a part of a recording: stats gives
// its range, --from and --to cut it.
func TestTimeWindow(t *testing.T) {
	dir := t.TempDir()
	traces := filepath.Join(dir, "t.jsonl")
	if code, _, errs := perfcast(t, "generate", shopModel, "-o", traces, "--requests", "2000"); code != 0 {
		t.Fatalf("generate: exit %d: %s", code, errs)
	}
	code, out, _ := perfcast(t, "stats", traces, "--json")
	var rep statsReport
	if err := json.Unmarshal([]byte(out), &rep); code != 0 || err != nil {
		t.Fatalf("stats --json: exit %d, %v", code, err)
	}
	first, err1 := time.Parse(time.RFC3339Nano, rep.FirstRequest)
	last, err2 := time.Parse(time.RFC3339Nano, rep.LastRequest)
	if err1 != nil || err2 != nil || !last.After(first) {
		t.Fatalf("stats: requests from %q to %q", rep.FirstRequest, rep.LastRequest)
	}
	mid := first.Add(last.Sub(first) / 2).Format(time.RFC3339Nano)
	traceCount := func(args ...string) (int, string) {
		t.Helper()
		code, out, errs := perfcast(t, append([]string{"extract", traces, "-o", filepath.Join(dir, "m.yaml"), "--json"}, args...)...)
		if code != 0 {
			t.Fatalf("extract %v: exit %d: %s", args, code, errs)
		}
		var r struct {
			Traces   int      `json:"traces"`
			Evidence []string `json:"evidence"`
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		return r.Traces, strings.Join(r.Evidence, "\n")
	}
	all, _ := traceCount()
	early, ev := traceCount("--to", mid)
	late, _ := traceCount("--from", mid)
	if early+late != all || early == 0 || late == 0 {
		t.Errorf("%d traces before the middle and %d after, of %d", early, late, all)
	}
	if !strings.Contains(ev, "outside the time window") {
		t.Errorf("the report does not say traces were left out: %s", ev)
	}
	after := last.Add(time.Hour).Format(time.RFC3339)
	if code, _, errs := perfcast(t, "extract", traces, "-o", filepath.Join(dir, "m.yaml"), "--from", after); code != 1 || !strings.Contains(errs, "outside it") {
		t.Errorf("extract after the last request: exit %d: %s", code, errs)
	}
	for _, bad := range [][]string{{"--from", "yesterday"}, {"--from", mid, "--to", mid}, {"--from", mid, "--state", dir}} {
		if code, _, errs := perfcast(t, append([]string{"extract", traces, "-o", filepath.Join(dir, "m.yaml")}, bad...)...); code != 2 {
			t.Errorf("extract %v: exit %d, want 2: %s", bad, code, errs)
		}
	}
}
