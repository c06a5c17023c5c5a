package extract

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/perfcast/perfcast/ingest/ingesttest"
	"github.com/perfcast/perfcast/model"
)

// TestExtractWithMetrics removes the CPU times from the known-model traces,
// writes each host's cumulative CPU seconds once a second as the metrics
// CSV, and checks that extraction estimates the CPU demands back from them.
func TestExtractWithMetrics(t *testing.T) {
	spans := generate(21, 30000, true)
	// Cumulative CPU seconds per host at each whole second, from the CPU
	// times of the spans, charged at their end.
	type charge struct {
		at  int64
		cpu float64
	}
	byHost := map[string][]charge{}
	for _, s := range spans {
		if s.HasCPUTime() {
			byHost[s.Host] = append(byHost[s.Host], charge{s.End, s.CPUTime})
			s.CPUTime = math.NaN()
		}
	}
	var csv bytes.Buffer
	csv.WriteString("timestamp,host,cpu_seconds\n")
	hosts := make([]string, 0, len(byHost))
	for h := range byHost {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	for _, h := range hosts {
		cs := byHost[h]
		sort.Slice(cs, func(i, j int) bool { return cs[i].at < cs[j].at })
		first, last := cs[0].at/1e9, cs[len(cs)-1].at/1e9+1
		total, k := 0.0, 0
		for sec := first; sec <= last; sec++ {
			for k < len(cs) && cs[k].at < sec*1e9 {
				total += cs[k].cpu
				k++
			}
			fmt.Fprintf(&csv, "%d,%s,%.6f\n", sec, h, total)
		}
	}
	dir := t.TempDir()
	metricsFile := filepath.Join(dir, "cpu.csv")
	if err := os.WriteFile(metricsFile, csv.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var traces bytes.Buffer
	if err := ingesttest.WriteOTLPJSON(&traces, spans, 200); err != nil {
		t.Fatal(err)
	}
	tracesFile := filepath.Join(dir, "traces.jsonl")
	if err := os.WriteFile(tracesFile, traces.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), []string{tracesFile}, "x", &Config{Metrics: []string{metricsFile}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Report.Demands == nil {
		t.Fatal("no demand estimation in the report")
	}
	stderr := map[string]float64{}
	for _, h := range res.Report.Demands.Hosts {
		for i, op := range h.Ops {
			if i < len(h.Result) && !math.IsNaN(h.Result[i].StdErr) {
				stderr[op] = h.Result[i].StdErr
			}
		}
	}
	m := res.Model
	cpuOf := func(id string) float64 {
		var c float64
		model.Walk(m.Operation(id).Steps, func(s *model.Step) {
			if s.Kind == model.StepCPU {
				c += s.Demand.Mean()
			}
		})
		return c
	}
	// Within 4 of the estimator's standard errors, and within 10 % where
	// the data pin the demand down that far (the worker's host is 2 % busy,
	// where the background intercept leaves the demand looser).
	for id, want := range map[string]float64{
		"front/GET /page": 2e-3,
		"front/GET /home": 1e-3,
		"catalog/GetItem": 1e-3,
		"worker/process":  3e-3,
	} {
		se, ok := stderr[id]
		if !ok {
			t.Errorf("%s: no estimate in the report", id)
			continue
		}
		got := cpuOf(id)
		if math.Abs(got-want) > math.Max(4*se, 0.02*want) || (4*se < 0.1*want && math.Abs(got-want) > 0.1*want) {
			t.Errorf("%s: CPU demand %.4g, want %.4g (standard error %.2g)", id, got, want, se)
		}
	}
	// GetItem's 0.5 ms of waiting stays as a delay instead of CPU.
	var off float64
	for _, s := range m.Operation("catalog/GetItem").Steps {
		if s.Kind == model.StepDelay {
			off += s.Demand.Mean()
		}
	}
	if math.Abs(off-catalogOff) > 0.15*catalogOff {
		t.Errorf("GetItem off-CPU delay %.4g, want about %.4g", off, catalogOff)
	}
}
