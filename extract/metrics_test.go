package extract

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/perfcast/perfcast/ingest"
	"github.com/perfcast/perfcast/ingest/ingesttest"
	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve"
	"github.com/perfcast/perfcast/solve/sim"
	"github.com/perfcast/perfcast/tracegen"
)

// cpuSecondsCSV writes each host's cumulative CPU seconds once a second as
// the metrics CSV: the CPU times of the spans, plus extra(span) for each,
// charged at their end.
func cpuSecondsCSV(spans []*ingest.Span, extra func(*ingest.Span) float64) []byte {
	return cpuCSV(spans, extra, false)
}

// cpuCSV is cpuSecondsCSV, per service (the service column) when
// perService is set.
func cpuCSV(spans []*ingest.Span, extra func(*ingest.Span) float64, perService bool) []byte {
	type charge struct {
		at  int64
		cpu float64
	}
	type key struct{ host, service string }
	byKey := map[key][]charge{}
	for _, s := range spans {
		if s.HasCPUTime() {
			k := key{host: s.Host}
			if perService {
				k.service = s.Service
			}
			byKey[k] = append(byKey[k], charge{s.End, s.CPUTime + extra(s)})
		}
	}
	var csv bytes.Buffer
	csv.WriteString("timestamp,host,service,cpu_seconds\n")
	keys := make([]key, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].host < keys[j].host || keys[i].host == keys[j].host && keys[i].service < keys[j].service
	})
	for _, k := range keys {
		cs := byKey[k]
		sort.Slice(cs, func(i, j int) bool { return cs[i].at < cs[j].at })
		first, last := cs[0].at/1e9, cs[len(cs)-1].at/1e9+1
		total, n := 0.0, 0
		for sec := first; sec <= last; sec++ {
			for n < len(cs) && cs[n].at < sec*1e9 {
				total += cs[n].cpu
				n++
			}
			fmt.Fprintf(&csv, "%d,%s,%s,%.6f\n", sec, k.host, k.service, total)
		}
	}
	return csv.Bytes()
}

// runWithMetrics writes the spans as OTLP JSON and the metrics CSV to
// files and extracts from them.
func runWithMetrics(t *testing.T, spans []*ingest.Span, csv []byte) *Result {
	t.Helper()
	return runWithConfig(t, spans, csv, &Config{})
}

// runWithConfig is runWithMetrics with cfg (its Metrics set here).
func runWithConfig(t *testing.T, spans []*ingest.Span, csv []byte, cfg *Config) *Result {
	t.Helper()
	dir := t.TempDir()
	metricsFile := filepath.Join(dir, "cpu.csv")
	if err := os.WriteFile(metricsFile, csv, 0o644); err != nil {
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
	cfg.Metrics = []string{metricsFile}
	res, err := Run(context.Background(), []string{tracesFile}, "x", cfg)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestExtractWithMetrics removes the CPU times from the known-model traces,
// writes each host's cumulative CPU seconds once a second as the metrics
// CSV, and checks that extraction estimates the CPU demands back from them.
func TestExtractWithMetrics(t *testing.T) {
	spans := generate(21, 30000, true)
	csv := cpuSecondsCSV(spans, func(*ingest.Span) float64 { return 0 })
	for _, s := range spans {
		s.CPUTime = math.NaN()
	}
	res := runWithMetrics(t, spans, csv)
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

// TestUnattributedCPU keeps the spans' CPU times but lets the metrics of
// the front end's host measure 0.4 ms more per execution (CPU outside the
// spans), and checks that extraction finds that much per execution there,
// models it as an operation the front end's executions send to, counts it
// in the measured utilization, and adds nothing where spans and metrics
// agree.
func TestUnattributedCPU(t *testing.T) {
	const extra = 0.4e-3
	spans := generate(22, 30000, true)
	csv := cpuSecondsCSV(spans, func(s *ingest.Span) float64 {
		if s.Host == "web" {
			return extra
		}
		return 0
	})
	res := runWithMetrics(t, spans, csv)
	byHost := map[string]*Coverage{}
	for _, c := range res.Report.CPUCoverage {
		byHost[c.Host] = c
		t.Logf("%+v", *c)
	}
	web := byHost["web"]
	if web == nil || web.Skipped != "" || web.Split != "execution" || math.Abs(web.PerExecution-extra) > 0.02*extra {
		t.Fatalf("web coverage %+v, want %.3g s per execution", web, extra)
	}
	for _, h := range []string{"cat-1", "cat-2", "wk"} {
		if c := byHost[h]; c == nil || c.PerExecution != 0 || math.Abs(c.Share-1) > 0.01 {
			t.Errorf("%s coverage %+v, want the spans' CPU to be all", h, c)
		}
	}
	m := res.Model
	for _, id := range []string{"front/GET /page", "front/GET /home"} {
		if got := outsideCPU(t, m, id, OutsideBackground); math.Abs(got-extra) > 0.02*extra {
			t.Errorf("%s sends %.4g s of CPU to the background, want %.3g", id, got, extra)
		}
	}
	for _, id := range []string{"catalog/GetItem", "worker/process"} {
		cpu := 0
		model.Walk(m.Operation(id).Steps, func(s *model.Step) {
			if s.Kind == model.StepCPU {
				cpu++
			}
		})
		if cpu != 1 {
			t.Errorf("%s has %d CPU steps where spans and metrics agree, want 1:\n%s", id, cpu, m.Marshal())
		}
	}
	// Measured utilization of the front end's host: the metrics' figure.
	meas := res.State.Measured(m).Resources[model.CPUResource(m.Component("front").Host)]
	want := web.Measured / (float64(web.Windows) * web.Window) / float64(m.Servers(model.CPUResource(m.Component("front").Host)))
	if meas == nil || math.Abs(meas.Utilization-want) > 0.03*want {
		t.Errorf("measured utilization %+v, want the metrics' %.4g", meas, want)
	}
}

// TestUnattributedCPUPerService puts every service on one host whose
// metrics measure each service's processes: the front end's spans miss
// 0.4 ms per execution, the catalog's 0.1 ms, the worker's nothing.
// Extraction finds each component's own share, where the host's total
// would have spread one figure over all.
func TestUnattributedCPUPerService(t *testing.T) {
	want := map[string]float64{"front": 0.4e-3, "catalog": 0.1e-3, "worker": 0}
	spans := generate(23, 30000, true)
	for _, s := range spans {
		s.Host = "box"
	}
	csv := cpuCSV(spans, func(s *ingest.Span) float64 {
		if s.Kind == ingest.KindServer || s.Kind == ingest.KindConsumer {
			return want[s.Service]
		}
		return 0
	}, true)
	res := runWithMetrics(t, spans, csv)
	got := map[string]*Coverage{}
	for _, c := range res.Report.CPUCoverage {
		if c.Component == "" {
			t.Errorf("host-wide coverage %+v where every service has its metrics", *c)
			continue
		}
		got[c.Component] = c
	}
	for comp, w := range want {
		c := got[comp]
		if c == nil || c.Skipped != "" {
			t.Errorf("%s: coverage %+v", comp, c)
			continue
		}
		if math.Abs(c.PerExecution-w) > 0.02*w+1e-9 {
			t.Errorf("%s: %.4g s per execution outside spans, want %.4g", comp, c.PerExecution, w)
		}
	}
	if got := outsideCPU(t, res.Model, "catalog/GetItem", OutsideBackground); math.Abs(got-want["catalog"]) > 0.02*want["catalog"] {
		t.Errorf("catalog/GetItem sends %.4g s of CPU to the background, want %.3g", got, want["catalog"])
	}
}

// TestUnattributedCPUPerCPUSecond charges the front end's host, beyond
// its spans' CPU time, a quarter of it again (as garbage collection
// follows what a request allocates), then that and 0.2 ms per execution
// more. Its two operations take 1 and 2 ms of CPU on average (each
// exponential), so its windows tell the laws apart (splitOutside): the
// first is taken per second of CPU, each operation sending its own share
// (0.25 and 0.5 ms) to a background operation of its own; the second as
// both. The worker's host is charged a quarter of its one operation's CPU
// time: that operation sends its share to the plain outside spans. The
// charges are exact, so that only the windows' edges (a span's
// charge falls where it ended, the metrics' samples are spread over their
// seconds) could blur them: the coefficients come out within 2 % (they
// came out within 0.01 %).
func TestUnattributedCPUPerCPUSecond(t *testing.T) {
	const perCPU, perExec = 0.25, 0.2e-3
	spans := generate(25, 30000, true)
	mean := map[string]float64{}
	count := map[string]float64{}
	for _, s := range spans {
		switch {
		case s.Host == "web" && s.Kind == ingest.KindServer:
			mean[s.Name] += s.CPUTime
			count[s.Name]++
		case s.Host == "wk" && s.Kind == ingest.KindConsumer:
			mean["worker/"+s.Name] += s.CPUTime
			count["worker/"+s.Name]++
		}
	}
	for name := range mean {
		mean[name] /= count[name]
	}
	for _, c := range []struct {
		split           string
		perExec, perCPU float64
		tolExec, tolCPU float64
	}{
		{"cpu", 0, perCPU, 0, 0.02},
		{"both", perExec, perCPU, 0.02, 0.02},
	} {
		t.Run(c.split, func(t *testing.T) {
			csv := cpuSecondsCSV(spans, func(s *ingest.Span) float64 {
				switch {
				case s.Host == "web" && s.Kind == ingest.KindServer:
					return c.perExec + c.perCPU*s.CPUTime
				case s.Host == "wk" && s.Kind == ingest.KindConsumer:
					return perCPU * s.CPUTime
				}
				return 0
			})
			res := runWithMetrics(t, spans, csv)
			var web *Coverage
			for _, cv := range res.Report.CPUCoverage {
				if cv.Host == "web" {
					web = cv
				}
			}
			if web == nil || web.Split != c.split ||
				math.Abs(web.PerCPUSecond-c.perCPU) > c.tolCPU*c.perCPU ||
				math.Abs(web.PerExecution-c.perExec) > c.tolExec*c.perExec {
				t.Fatalf("web coverage %+v, want %s: %.3g s per execution, %.3g per second of CPU", web, c.split, c.perExec, c.perCPU)
			}
			targets := map[string]bool{}
			for _, name := range []string{"GET /home", "GET /page"} {
				id := "front/" + name
				want := c.perExec + c.perCPU*mean[name]
				if got := outsideCPU(t, res.Model, id, OutsideBackground); math.Abs(got-want) > 0.05*want {
					t.Errorf("%s sends %.4g s of CPU to the background, want %.4g", id, got, want)
				}
				targets[innermostLast(res.Model.Operation(id).Steps).Target] = true
			}
			if len(targets) != 2 {
				t.Errorf("the front end's operations send to %v, want a background operation each", targets)
			}
			// The worker's one operation sends its share to the plain
			// name: no other's differs from it.
			id := "worker/process"
			if got, want := outsideCPU(t, res.Model, id, OutsideBackground), perCPU*mean[id]; math.Abs(got-want) > 0.05*want {
				t.Errorf("%s sends %.4g s of CPU to the background, want %.4g", id, got, want)
			}
			if to := innermostLast(res.Model.Operation(id).Steps).Target; to != "worker/"+OutsideSpansOperation {
				t.Errorf("%s sends to %s, want worker/%s", id, to, OutsideSpansOperation)
			}
		})
	}
}

// innermostLast is the last of steps (not empty), inside the holds that
// end them.
func innermostLast(steps []model.Step) model.Step {
	last := steps[len(steps)-1]
	for last.Kind == model.StepHold && len(last.Steps) > 0 {
		last = last.Steps[len(last.Steps)-1]
	}
	return last
}

// outsideCPU is the mean CPU time outside spans that operation id of m
// starts with: sent to its component's background operation, or its own
// first step (inline); it fails the test when the operation starts with
// neither.
func outsideCPU(t *testing.T, m *model.Model, id, how string) float64 {
	t.Helper()
	op := m.Operation(id)
	if op == nil || len(op.Steps) == 0 {
		t.Fatalf("no operation %s", id)
	}
	first := op.Steps[0]
	if how == OutsideInline && first.Kind == model.StepCPU {
		return first.Demand.Mean()
	}
	// In the background the execution sends it when it ends, inside the
	// holds that wrap the whole execution.
	last := innermostLast(op.Steps)
	if how == OutsideBackground && last.Kind == model.StepSend && strings.HasPrefix(last.Target, op.Component+"/"+OutsideSpansOperation) {
		bg := m.Operation(last.Target)
		if bg == nil {
			t.Fatalf("%s sends to no operation %s", id, last.Target)
		}
		cpu, n := 0.0, 0
		model.Walk(bg.Steps, func(s *model.Step) {
			if s.Kind == model.StepCPU {
				cpu, n = cpu+s.Demand.Mean(), n+1
			}
		})
		if n != 1 {
			t.Fatalf("%s sends to %+v, not to one CPU step", id, bg)
		}
		return cpu
	}
	t.Fatalf("%s starts with %+v and ends with %+v, not with its CPU outside spans (%s)", id, first, last, how)
	return 0
}

// fanOutModel fans a request out to six parallel calls of a service with
// one CPU slot; every call leaves 0.5 ms of CPU work behind it in the
// service (its "gc"), which no span shows.
const fanOutModel = `perfcast: 1
hosts:
  box: {cpu: {cores: 2}}
components:
  gateway:
    host: box
    operations:
      fanout:
        steps:
          - hold: {resource: gateway-slot, steps: [{cpu: 'exp(0.3ms)'}]}
          - parallel:
              - [{call: catalog/item}]
              - [{call: catalog/item}]
              - [{call: catalog/item}]
              - [{call: catalog/item}]
              - [{call: catalog/item}]
              - [{call: catalog/item}]
  catalog:
    host: box
    operations:
      item:
        steps:
          - hold: {resource: catalog-slot, steps: [{cpu: 'exp(0.5ms)'}]}
          - send: catalog/gc
      gc:
        steps:
          - hold: {resource: catalog-slot, steps: [{cpu: 'exp(0.5ms)'}]}
passive:
  gateway-slot: {capacity: 1}
  catalog-slot: {capacity: 1}
workload:
  req:
    open: {rate: 40}
    steps: [{call: gateway/fanout}]
`

// Background work outside spans delays other executions by queueing, never
// the execution that sends it nor its siblings. From traces of fanOutModel
// without the gc spans, extraction with the host's CPU time (the gc's
// included) and without it gives two models: the first's predicted response
// time is longer by less than half of one execution's share of the work
// (0.43 ms): 0.10 ms. Sent at the start of each call, the work took the
// slot between siblings' CPU bursts and added 0.46 ms.
func TestOutsideSpansDoNotDelayTheirSender(t *testing.T) {
	known, err := model.Parse([]byte(fanOutModel), "fanout.yaml")
	if err != nil {
		t.Fatal(err)
	}
	opts := &tracegen.Options{Seed: 3}
	var spans []*ingest.Span
	// The gc's CPU time, per its producer span, and the producers' parents
	// (the item spans that sent it).
	gc, sender := map[uint64]float64{}, map[uint64]uint64{}
	_, err = sim.Record(context.Background(), known, sim.RecordOptions{Seed: 3, Requests: 30000}, func(s *sim.Span) error {
		if s.Operation == "gc" {
			if s.Kind == sim.SpanProducer {
				sender[s.ID] = s.Parent
			} else {
				gc[s.Parent] += s.CPU
			}
			return nil
		}
		spans = append(spans, tracegen.Convert(s, opts))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(gc) == 0 {
		t.Fatal("no gc work recorded")
	}
	// The host's CPU time holds the gc's, charged with the item that sent
	// it, or not.
	extra := map[ingest.SpanID]float64{}
	for producer, c := range gc {
		extra[tracegen.SpanID(sender[producer])] += c
	}
	cfg := func() *Config {
		return &Config{CPUSlots: map[string]int{"*": 1}, Hosts: map[string]HostConfig{"box": {Cores: 2}}}
	}
	with := runWithConfig(t, spans, cpuSecondsCSV(spans, func(s *ingest.Span) float64 { return extra[s.SpanID] }), cfg())
	without := runWithConfig(t, spans, cpuSecondsCSV(spans, func(*ingest.Span) float64 { return 0 }), cfg())
	// Spread over the host's executions, gateway's and catalog's alike.
	perExecution := with.Report.CPUCoverage[0].PerExecution
	if got := outsideCPU(t, with.Model, "catalog/item", OutsideBackground); got < 0.3e-3 || math.Abs(got-perExecution) > 1e-9 {
		t.Fatalf("catalog/item sends %.4g s outside spans, want the host's %.4g s per execution (about 0.43 ms)", got, perExecution)
	}
	mean := func(m *model.Model) float64 {
		res, err := sim.New().Solve(context.Background(), m, solve.Options{Seed: 1, Precision: 0.005})
		if err != nil {
			t.Fatal(err)
		}
		return res.Workloads[m.Workloads[0].Name].ResponseTime.Mean
	}
	a, b := mean(with.Model), mean(without.Model)
	t.Logf("predicted %.4g s with the work outside spans, %.4g s without", a, b)
	// The work queues behind the calls and delays later requests only: the
	// catalog's slot is about 10 % busy with it and a request arrives every
	// 25 ms.
	if d := a - b; d > perExecution/2 {
		t.Errorf("the work outside spans adds %.3g s to the predicted response time, want under %.3g (half of one execution's share)", d, perExecution/2)
	}
}

// Inline, the CPU outside spans starts each execution and comes out of
// the callers' time outside the callee's span; in the background it adds
// nothing to any response time and the callers' time stays as measured.
func TestOutsideSpansInlineAndBackground(t *testing.T) {
	const extra = 0.1e-3
	spans := generate(24, 20000, true)
	csv := cpuSecondsCSV(spans, func(s *ingest.Span) float64 {
		if s.Service == "catalog" && s.Kind == ingest.KindServer {
			return extra
		}
		return 0
	})
	callDelay := func(m *model.Model) float64 {
		d := 0.0
		model.Walk(m.Operation("front/GET /page").Steps, func(s *model.Step) {
			if s.Kind == model.StepDelay {
				d += s.Demand.Mean()
			}
		})
		return d
	}
	bg := runWithConfig(t, spans, csv, &Config{})
	in := runWithConfig(t, spans, csv, &Config{OutsideSpans: OutsideInline})
	for _, c := range []struct {
		how string
		res *Result
	}{{OutsideBackground, bg}, {OutsideInline, in}} {
		if got := outsideCPU(t, c.res.Model, "catalog/GetItem", c.how); math.Abs(got-extra) > 0.05*extra {
			t.Errorf("%s: %.4g s outside spans per GetItem, want %.3g", c.how, got, extra)
		}
	}
	// GET /page calls GetItem in a loop whose body has the call's
	// latency as a delay: inline takes the callee's CPU out of it.
	if d := callDelay(bg.Model) - callDelay(in.Model); math.Abs(d-extra) > 0.05*extra {
		t.Errorf("the call's delay is %.4g s longer in the background than inline, want %.3g", d, extra)
	}
	// Only the background model has the operation that receives it.
	if bg.Model.Operation("catalog/"+OutsideSpansOperation) == nil || in.Model.Operation("catalog/"+OutsideSpansOperation) != nil {
		t.Errorf("the background operation should be in the background model only")
	}
	// The evidence on the metrics' coverage says where the rest went.
	for _, c := range []struct {
		res       *Result
		want, not string
	}{{bg, "in the background", "at the start of every operation"}, {in, "at the start of every operation", "in the background"}} {
		found := false
		for _, e := range c.res.Report.Evidence {
			if strings.HasPrefix(e, "host cat-1:") {
				found = true
				if !strings.Contains(e, c.want) || strings.Contains(e, c.not) {
					t.Errorf("evidence %q: want %q in it, not %q", e, c.want, c.not)
				}
			}
		}
		if !found {
			t.Errorf("no evidence on the catalog's coverage in %q", c.res.Report.Evidence)
		}
	}
}

// Metrics that extraction cannot use are warned about, not passed over in
// silence: readings of a machine no span comes from (most often a name
// other than the spans' host.name), and readings at other times than the
// spans (another run, a clock off).
func TestMetricsThatMatchNothing(t *testing.T) {
	spans := generate(22, 2000, true)
	csv := string(cpuSecondsCSV(spans, func(*ingest.Span) float64 { return 0 }))
	var host string
	for _, s := range spans {
		if s.Service == "catalog" {
			host = s.Host
			break
		}
	}
	lines := strings.Split(strings.TrimSpace(csv), "\n")
	var moved strings.Builder
	moved.WriteString(lines[0] + "\n")
	for _, l := range lines[1:] {
		f := strings.SplitN(l, ",", 2)
		sec, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		rest := f[1]
		if strings.HasPrefix(rest, host+",") {
			sec -= 86400 // the catalog's host a day early
		} else {
			rest = "renamed-" + rest // the others under other names
		}
		fmt.Fprintf(&moved, "%d,%s\n", sec, rest)
	}
	res := runWithMetrics(t, spans, []byte(moved.String()))
	var early, renamed int
	for _, w := range res.Report.Warnings {
		if strings.HasPrefix(w, "metrics: host "+host+": its readings (") && strings.Contains(w, "do not overlap its spans") {
			early++
		}
		if strings.HasPrefix(w, "metrics: no span comes from 3 of their hosts (renamed-") {
			renamed++
		}
	}
	if early != 1 || renamed != 1 {
		t.Errorf("%d warnings of readings at other times, %d of unknown hosts; want 1 and 1: %q", early, renamed, res.Report.Warnings)
	}
}
