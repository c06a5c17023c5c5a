package extract_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/perfcast/perfcast/extract"
	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve/sim"
	"github.com/perfcast/perfcast/tracegen"
)

// ioModel is a service on one core whose operations spend much of their
// own time off the CPU: a lookup of 3 ms of CPU around 6 ms of I/O, a
// listing of 4 ms of CPU and a fixed 3 ms wait, 52 % of the core busy.
const ioModel = `perfcast: 1
name: io
hosts:
  app: {cpu: {cores: 1}}
components:
  api:
    host: app
    operations:
      item:
        steps:
          - cpu: exp(2ms)
          - delay: exp(6ms)
          - cpu: exp(1ms)
      list:
        steps:
          - cpu: exp(4ms)
          - delay: 3ms
workload:
  item:
    open: {rate: 120/s}
    steps: [{call: api/item}]
  list:
    open: {rate: 40/s}
    steps: [{call: api/list}]
`

// splitSeeds extracts src's traces without CPU times over seeds, with the
// host's cores given, and returns each operation's CPU demands by seed.
func splitSeeds(t *testing.T, src string, seeds []uint64, requests int64, ops ...string) map[string][]float64 {
	t.Helper()
	out := map[string][]float64{}
	for _, x := range extractSeeds(t, src, nil, seeds, requests) {
		for _, id := range ops {
			out[id] = append(out[id], opCPU(x.Model, id))
		}
	}
	return out
}

// extractSeeds generates requests of src's traces without CPU times for
// each seed and extracts each with cfg (nil: the cores of src's host app
// given), returning the results in the seeds' order.
func extractSeeds(t *testing.T, src string, cfg *extract.Config, seeds []uint64, requests int64) []*extract.Result {
	t.Helper()
	m, err := model.Parse([]byte(src), "split.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg == nil {
		cfg = &extract.Config{Hosts: map[string]extract.HostConfig{"app": {Cores: m.Hosts[0].CPU.Cores}}}
	}
	var out []*extract.Result
	for _, seed := range seeds {
		path := filepath.Join(t.TempDir(), "traces.jsonl")
		recordWith(t, path, m, tracegen.Options{Seed: seed, NoCPUTime: true}, requests, nil)
		x, err := extractRun(context.Background(), []string{path}, "split", cfg)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, x)
	}
	return out
}

// seedList is the seeds a test runs, more when PERFCAST_SEEDS asks.
func seedList(n int) []uint64 {
	if s, err := strconv.Atoi(os.Getenv("PERFCAST_SEEDS")); err == nil && s > 0 {
		n = s
	}
	seeds := make([]uint64, n)
	for i := range seeds {
		seeds[i] = uint64(2 + i)
	}
	return seeds
}

// TestOwnTimeSplit extracts a service whose spans carry no CPU time, with
// no metrics, on a host whose cores are given, and recovers how much of
// each operation's own time is CPU from how the own times grow with the
// load. Taken as CPU whole, as without the cores, the own times make the
// lookup's demand 4.2 ms and the host 66 % busy, and the model saturates
// at 1.6 times the load where the truth is 83 % busy. Over ten seeds the
// lookup's demand came out at 2.88 ms (standard deviation 0.10), the
// listing's at 4.18 (0.21): the lookup's own time without waits is a
// little long where the executions alone leave its tail to an assumption
// (see withinMean), and the listing's growth, where it does not tell its
// share, gives the mean of what it allows, drawn towards the middle. The
// tolerance is that bias plus three standard errors.
func TestOwnTimeSplit(t *testing.T) {
	got := splitSeeds(t, ioModel, seedList(3), 60000, "api/item", "api/list")
	for _, tc := range []struct {
		id          string
		truth, bias float64 // the bias over ten seeds, by hand
		sd          float64 // the standard deviation over those seeds
	}{
		{"api/item", 3e-3, -0.12e-3, 0.10e-3},
		{"api/list", 4e-3, 0.18e-3, 0.21e-3},
	} {
		xs := got[tc.id]
		mean := 0.0
		for _, x := range xs {
			mean += x / float64(len(xs))
		}
		t.Logf("%s: CPU %.3g ms over %d seeds (%.3g s), truth %.3g ms", tc.id, mean*1e3, len(xs), xs, tc.truth*1e3)
		if tol := math.Abs(tc.bias) + 3*tc.sd/math.Sqrt(float64(len(xs))); math.Abs(mean-tc.truth) > tol {
			t.Errorf("%s: CPU %.3g ms over %d seeds, truth %.3g ms ± %.2g", tc.id, mean*1e3, len(xs), tc.truth*1e3, tol*1e3)
		}
	}
}

// cpuModel is ioModel with no time off the CPU: its own times are all CPU
// and its waits, which extraction reads so without a split.
var cpuModel = strings.NewReplacer(
	"- cpu: exp(2ms)\n          - delay: exp(6ms)\n          - cpu: exp(1ms)", "- cpu: exp(3ms)",
	"- cpu: exp(4ms)\n          - delay: 3ms", "- cpu: gamma(4ms, cv=0.5)",
	"rate: 120/s", "rate: 100/s").Replace(ioModel)

// TestOwnTimeSplitKeepsCPU: where the own times are all CPU (46 % busy),
// the split finds them so, or is not made; either way the demands are the
// truth's within 5 %.
func TestOwnTimeSplitKeepsCPU(t *testing.T) {
	if strings.Contains(cpuModel, "delay") {
		t.Fatalf("cpuModel kept a delay:\n%s", cpuModel)
	}
	got := splitSeeds(t, cpuModel, seedList(2), 40000, "api/item", "api/list")
	for id, truth := range map[string]float64{"api/item": 3e-3, "api/list": 4e-3} {
		for i, x := range got[id] {
			t.Logf("%s, seed %d: CPU %.3g ms, truth %.3g ms", id, i, x*1e3, truth*1e3)
			if math.Abs(x-truth) > 0.05*truth {
				t.Errorf("%s, seed %d: CPU %.3g ms, truth %.3g ms", id, i, x*1e3, truth*1e3)
			}
		}
	}
}

// TestOwnTimeSplitOnCores: four cores, 67 % busy, two operations with time
// off the CPU, about six executions' own times active at once. The
// executions that never had more than three others beside them waited for
// no core. Over ten seeds the demands made the host 2.60 cores busy
// (standard deviation 0.045) for a truth of 2.70; the tolerance is that
// bias plus three standard errors. One operation's split alone is loose
// there (the lookup's demand scattered from 2.9 to 3.7 ms for a truth of
// 3, the listing's from 2.5 to 5.9 for 6), the host's is not. Taken as CPU
// whole, the own times made the host 5.7 cores busy.
func TestOwnTimeSplitOnCores(t *testing.T) {
	src := strings.NewReplacer( // lookups of 2 + 4 + 1 ms, listings of 6 + 3 ms
		"cores: 1", "cores: 4",
		"delay: exp(6ms)", "delay: exp(4ms)",
		"cpu: exp(4ms)", "cpu: exp(6ms)",
		"rate: 120/s", "rate: 600/s",
		"rate: 40/s", "rate: 150/s").Replace(ioModel)
	got := splitSeeds(t, src, seedList(3), 120000, "api/item", "api/list")
	// Cores busy; the bias and standard deviation over ten seeds, by hand.
	const truth, bias, sd = 2.7, -0.10, 0.045
	var busy []float64
	for i := range got["api/item"] {
		busy = append(busy, 600*got["api/item"][i]+150*got["api/list"][i])
	}
	mean := 0.0
	for _, b := range busy {
		mean += b / float64(len(busy))
	}
	t.Logf("busy cores %.3g over %d seeds (%.3g; lookups %.3g s, listings %.3g s), truth %.3g", mean, len(busy), busy, got["api/item"], got["api/list"], truth)
	if tol := math.Abs(bias) + 3*sd/math.Sqrt(float64(len(busy))); math.Abs(mean-truth) > tol {
		t.Errorf("busy cores %.3g over %d seeds, truth %.3g ± %.2g", mean, len(busy), truth, tol)
	}
}

// ioBoundModel is a service whose own time is mostly a wait on a system
// without spans: 1.5 ms of CPU around 20 ms off it, at 400 a second on
// eight cores (0.6 cores busy, about nine executions active at once).
const ioBoundModel = `perfcast: 1
name: iobound
hosts:
  app: {cpu: {cores: 8}}
components:
  api:
    host: app
    operations:
      get:
        steps:
          - cpu: exp(1ms)
          - delay: exp(20ms)
          - cpu: exp(0.5ms)
workload:
  get:
    open: {rate: 400/s}
    steps: [{call: api/get}]
`

// TestOwnTimeSplitLoose: at so light a CPU load the wait for the cores is
// a few microseconds whatever the share of own time that is CPU, below the
// noise of the executions within, so the data cannot tell a share of 7 %
// (the truth) from one of 60 %. Taking the root of the growth's equation,
// as extraction did, made the demand either 20 µs or 12 ms by the seed's
// draw (two seeds each of four). Now the split says that the share is not
// told, its interval covers the truth, and the share taken, the mean of
// the growth's posterior, moves with the noise only: over ten seeds, by
// hand, 0.33 to 0.53, mean 0.393, standard deviation 0.058. Each seed's must
// lie within four standard deviations of that mean.
func TestOwnTimeSplitLoose(t *testing.T) {
	const truth = 1.5 / 21.5
	const shareMean, shareSD = 0.393, 0.058 // over ten seeds, by hand
	seeds := seedList(3)
	for k, x := range extractSeeds(t, ioBoundModel, nil, seeds, 60000) {
		seed := seeds[k]
		s := hostSplit(t, x, seed)
		t.Logf("seed %d: share %.3f (95 %% %.3f to %.3f), busy %.2f, identified %v; demand %.3g ms",
			seed, s.Share, s.Low, s.High, s.Busy, s.Identified, 1e3*opCPU(x.Model, "api/get"))
		if s.Identified {
			t.Errorf("seed %d: the share is reported as told by the data", seed)
		}
		if !(s.Low <= truth && truth <= s.High) {
			t.Errorf("seed %d: the share's 95 %% interval %.3f to %.3f misses the truth %.3f", seed, s.Low, s.High, truth)
		}
		if math.Abs(s.Share-shareMean) > 4*shareSD {
			t.Errorf("seed %d: share %.3f taken, where over ten seeds the posterior's mean was %.3f ± %.3f", seed, s.Share, shareMean, shareSD)
		}
		if !slices.ContainsFunc(x.Report.Warnings, func(w string) bool { return strings.Contains(w, "does not tell what share") }) {
			t.Errorf("seed %d: no warning that the share is not told: %q", seed, x.Report.Warnings)
		}
	}
}

// hostSplit is the one split of x, extracted from the traces of seed.
func hostSplit(t *testing.T, x *extract.Result, seed uint64) *extract.OwnTimeSplit {
	t.Helper()
	if len(x.Report.OwnTimeSplits) != 1 {
		t.Fatalf("seed %d: %d splits, want the host's one; warnings %q", seed, len(x.Report.OwnTimeSplits), x.Report.Warnings)
	}
	return x.Report.OwnTimeSplits[0]
}

// slotsModel is two Go services on one core, each with GOMAXPROCS 1: a
// request waits for its service's one slot before its span starts, then
// shares the core with the other service's request only. The lookup is
// 3 ms of CPU and 6 ms of I/O at 80 a second, the listing 4 ms of CPU and
// 3 ms of waiting at 60 a second: each service 24 % busy, the core 48 %.
const slotsModel = `perfcast: 1
name: slots
hosts:
  app: {cpu: {cores: 1}}
components:
  a:
    host: app
    operations:
      item:
        steps:
          - hold: {resource: a-slots, steps: [{cpu: exp(3ms)}]}
          - delay: exp(6ms)
  b:
    host: app
    operations:
      list:
        steps:
          - hold: {resource: b-slots, steps: [{cpu: exp(4ms)}]}
          - delay: 3ms
passive:
  a-slots: {capacity: 1, before_span: true}
  b-slots: {capacity: 1, before_span: true}
workload:
  item:
    open: {rate: 80/s}
    steps: [{call: a/item}]
  list:
    open: {rate: 60/s}
    steps: [{call: b/list}]
`

// TestOwnTimeSplitSlots: where each service has one CPU slot, its own
// requests queue for it before their spans, and inside a span only the
// other service's work shares the core. The sweep counts, beside an
// execution, its own service's others only up to its slots less one (none
// here), and times its calm apart from the host's; the split takes the
// wait a span grows by at the load beside it, as the model makes it.
// Before, the executions alone were no fair sample (while one held its
// slot none of its service could start a span, so a long burst kept it
// alone longer than the calm said: the lookup's weighted mean 10.35 ms ±
// 0.55 for a truth of 9) and the waits were taken at the core's whole
// load: the demands came out at 1.04 and 0.86 ms for 3 and 4. Each
// service's demand is told only through the other's load here, so neither
// operation counts as told (the lookup came out at 3.7 to 4.5 ms, the
// listing at 2.8 to 3.7); over ten seeds, by hand, the host came out 0.504
// cores busy (standard deviation 0.022) for a truth of 0.48, and before
// 0.135. The tolerance is that bias plus three standard errors.
func TestOwnTimeSplitSlots(t *testing.T) {
	const truth, bias, sd = 0.48, 0.024, 0.022 // busy cores; bias and sd over ten seeds, by hand
	cfg := &extract.Config{Hosts: map[string]extract.HostConfig{"app": {Cores: 1}}, CPUSlots: map[string]int{"*": 1}}
	var busy []float64
	seeds := seedList(3)
	for k, x := range extractSeeds(t, slotsModel, cfg, seeds, 60000) {
		seed := seeds[k]
		s := hostSplit(t, x, seed)
		item, list := opCPU(x.Model, "a/item"), opCPU(x.Model, "b/list")
		busy = append(busy, 80*item+60*list)
		t.Logf("seed %d: share %.3f (95 %% %.3f to %.3f), loose %q; lookup %.3g ms, listing %.3g ms, busy %.3f",
			seed, s.Share, s.Low, s.High, s.Loose, 1e3*item, 1e3*list, busy[len(busy)-1])
		if !slices.Equal(s.Loose, []string{"a/item", "b/list"}) {
			t.Errorf("seed %d: operations named as untold: %q, want both", seed, s.Loose)
		}
	}
	mean := 0.0
	for _, b := range busy {
		mean += b / float64(len(busy))
	}
	if tol := math.Abs(bias) + 3*sd/math.Sqrt(float64(len(busy))); math.Abs(mean-truth) > tol {
		t.Errorf("busy cores %.3f over %d seeds, truth %.3f ± %.3f", mean, len(busy), truth, tol)
	}
}

// TestOwnTimeSplitNoCoreWait splits the own times of goAloneModel's
// service, two CPU slots alone on two cores: no burst ever waits for a
// core, so the growth of its own times (the slots' waits inside the item's
// spans) says nothing of the share that is CPU. Only the cores' capacity
// bounds it (the own times would keep 4.2 cores busy), and a posterior
// that is the prior over the shares the cores hold must not pass for a
// told one: the host's share is reported untold, both operations loose,
// its interval covering the truth's 35 %: 24 % (1 to 44 %) for two
// seeds. Before, with a wait for the cores taken at the host's load less
// half the service's, the growth was read as little CPU: 9 % (0 to 19 %),
// 0.39 cores busy for 1.48.
func TestOwnTimeSplitNoCoreWait(t *testing.T) {
	const truth = 1.48 / (250*13.6e-3 + 120*7.0e-3) // the CPU over the own times, which hold no wait for a core
	cfg := &extract.Config{Hosts: map[string]extract.HostConfig{"app": {Cores: 2}}, CPUSlots: map[string]int{"api": 2}}
	seeds := seedList(2)
	for k, x := range extractSeeds(t, goAloneModel, cfg, seeds, 60000) {
		s := hostSplit(t, x, seeds[k])
		t.Logf("seed %d: share %.3f (95 %% %.3f to %.3f), identified %v, loose %q", seeds[k], s.Share, s.Low, s.High, s.Identified, s.Loose)
		if s.Identified {
			t.Errorf("seed %d: the share is reported told", seeds[k])
		}
		if !slices.Equal(s.Loose, []string{"api/item", "api/list"}) {
			t.Errorf("seed %d: operations named as untold: %q, want both", seeds[k], s.Loose)
		}
		if s.Low > truth || s.High < truth {
			t.Errorf("seed %d: 95 %% interval %.3f to %.3f misses the truth %.3f", seeds[k], s.Low, s.High, truth)
		}
	}
}

// hiddenLoadModel is a service on one core with a listing of 4 ms of CPU
// and a charge of 0.4 ms of CPU before a 10 ms sleep, beside a process
// whose spans are dropped: load that no span shows, as a runtime's or an
// untraced neighbour's.
const hiddenLoadModel = `perfcast: 1
name: hidden
hosts:
  app: {cpu: {cores: 1}}
components:
  api:
    host: app
    operations:
      list: {steps: [{cpu: exp(4ms)}]}
      charge: {steps: [{cpu: exp(0.4ms)}, {delay: 10ms}]}
  batch:
    host: app
    operations:
      work: {steps: [{cpu: exp(3ms)}]}
workload:
  list: {open: {rate: 60/s}, steps: [{call: api/list}]}
  charge: {open: {rate: 3/s}, steps: [{call: api/charge}]}
  work: {open: {rate: 120/s}, steps: [{call: batch/work}]}
`

// TestOwnTimeSplitSingle: with 36 % of the core busy with load that no
// span shows, the listing's own time grows more than processor sharing
// at the traced load makes CPU grow, and where the charge is rare the
// host's operations, pooled, look all CPU (seeds 2, 3 and 4 of 2 to 5).
// There the charge by itself grows far less than that reading says even
// with its first slice free of waits, and it alone is split (0.6 to
// 1.0 ms of CPU, the hidden load making its wait look short); elsewhere
// the pooled split takes it (0.7 ms). Either way its CPU comes out under
// a fifth of its own time, 0.4 ms of 10.4, where taken as CPU less the
// wait that implies it was 6 to 8 ms.
func TestOwnTimeSplitSingle(t *testing.T) {
	m, err := model.Parse([]byte(hiddenLoadModel), "hidden.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := &extract.Config{Hosts: map[string]extract.HostConfig{"app": {Cores: 1}}}
	singles := 0
	for _, seed := range seedList(4) {
		path := filepath.Join(t.TempDir(), "traces.jsonl")
		recordWith(t, path, m, tracegen.Options{Seed: seed, NoCPUTime: true}, 100000, func(s *sim.Span) bool { return s.Component != "batch" })
		x, err := extractRun(context.Background(), []string{path}, "hidden", cfg)
		if err != nil {
			t.Fatal(err)
		}
		charge, list := opCPU(x.Model, "api/charge"), opCPU(x.Model, "api/list")
		var only []string
		for _, s := range x.Report.OwnTimeSplits {
			only = append(only, s.Only...)
		}
		t.Logf("seed %d: charge %.3g ms, list %.3g ms, split alone: %q", seed, 1e3*charge, 1e3*list, only)
		switch {
		case slices.Equal(only, []string{"api/charge"}):
			singles++
		case len(only) > 0:
			t.Errorf("seed %d: split alone %q, want the charge or none", seed, only)
		}
		if charge > 0.2*10.4e-3 {
			t.Errorf("seed %d: the charge's CPU %.3g ms, truth 0.4 of an own time of 10.4", seed, 1e3*charge)
		}
	}
	if singles == 0 {
		t.Errorf("no seed had the charge split by itself")
	}
}

// runQueueYAML is two Go services on one core, each with GOMAXPROCS 1,
// at the rates given, with the extra components, passive resources and
// workload lines given after theirs (already indented). The listing runs
// 2 ms of CPU, waits 0.5 ms for I/O, and runs 2 ms more, and waits for
// its service's one slot inside its span both times, as goroutines that
// block and wake do: its own time holds waits for the slot while the
// service's other listings run. The lookup waits for its slot before its
// span.
func runQueueYAML(name string, itemRate, listRate int, components, passive, workload string) string {
	return fmt.Sprintf(`perfcast: 1
name: %s
hosts:
  app: {cpu: {cores: 1}}
components:
  a:
    host: app
    operations:
      item:
        steps:
          - hold: {resource: a-slots, steps: [{cpu: exp(2ms)}]}
  b:
    host: app
    operations:
      list:
        steps:
          - hold: {resource: b-slots, steps: [{cpu: exp(2ms)}]}
          - delay: exp(0.5ms)
          - hold: {resource: b-slots, steps: [{cpu: exp(2ms)}]}
%spassive:
  a-slots: {capacity: 1, before_span: true}
  b-slots: {capacity: 1}
%sworkload:
  item: {open: {rate: %d/s}, steps: [{call: a/item}]}
  list: {open: {rate: %d/s}, steps: [{call: b/list}]}
%s`, name, components, passive, itemRate, listRate, workload)
}

// runQueueModel is runQueueYAML's two services, 80 lookups and 120
// listings a second.
var runQueueModel = runQueueYAML("runqueue", 80, 120, "", "", "")

// TestOwnTimeSplitBound: the listing's second burst waits for its
// service's slot inside its span while the service's other listings run,
// so the own times grow more than processor sharing makes CPU grow and
// overlap more than one slot can run. The growth alone put the host at
// 0.93 busy cores (list 7.6 ms for 4, by hand, 2026-12-02); the own
// times' occupancy, at most 0.66 busy, holds it at 0.68 to 0.69 for a
// truth of 0.64. The tolerance is the bound's margin over the truth plus
// the slack it allows. A lock inside the span is not caught: with 2 ms
// of CPU and then a lock held around a call of hyperexp(5ms, cv=3), 120 a
// second beside 100 of 1 ms of CPU, the waits for the lock count in the
// occupancy in full, all CPU stays within the bound, and the listing came
// out 6.8 ms for 2 (by hand, three seeds).
func TestOwnTimeSplitBound(t *testing.T) {
	const truth = 120*4e-3 + 80*2e-3 // busy cores
	cfg := &extract.Config{Hosts: map[string]extract.HostConfig{"app": {Cores: 1}}, CPUSlots: map[string]int{"*": 1}}
	seeds := seedList(3)
	for k, x := range extractSeeds(t, runQueueModel, cfg, seeds, 60000) {
		s := hostSplit(t, x, seeds[k])
		list, item := opCPU(x.Model, "b/list"), opCPU(x.Model, "a/item")
		busy := 120*list + 80*item
		t.Logf("seed %d: list %.3g ms, item %.3g ms: %.3f cores busy; bound %.3f, bounded %v, identified %v",
			seeds[k], 1e3*list, 1e3*item, busy, s.Bound, s.Bounded, s.Identified)
		if !s.Bounded || s.Identified {
			t.Errorf("seed %d: bounded %v, identified %v: want a share the bound holds, not told", seeds[k], s.Bounded, s.Identified)
		}
		if s.Bound < truth {
			t.Errorf("seed %d: bound %.3f below the truth %.3f", seeds[k], s.Bound, truth)
		}
		if busy > s.Bound*1.05*(1+1e-6) {
			t.Errorf("seed %d: %.3f cores busy, beyond the bound %.3f and its margin", seeds[k], busy, s.Bound)
		}
		if tol := (s.Bound - truth) + 0.05*s.Bound; math.Abs(busy-truth) > tol {
			t.Errorf("seed %d: %.3f cores busy for a truth of %.3f, beyond %.3f", seeds[k], busy, truth, tol)
		}
	}
}

// runQueueChargeModel is runQueueModel at a lighter load with a third
// Go service, whose charge runs 0.2 ms of CPU on either side of a 10 ms
// sleep, as the testbed's payments do.
var runQueueChargeModel = runQueueYAML("runqueue-charge", 40, 100, `  c:
    host: app
    operations:
      charge:
        steps:
          - hold: {resource: c-slots, steps: [{cpu: exp(0.2ms)}]}
          - delay: 10ms
          - hold: {resource: c-slots, steps: [{cpu: exp(0.2ms)}]}
`, `  c-slots: {capacity: 1}
`, `  charge: {open: {rate: 20/s}, steps: [{call: c/charge}]}
`)

// TestOwnTimeSplitApart: where the bound holds the host's split
// (TestOwnTimeSplitBound), the charge, 0.4 ms of CPU around a 10 ms
// sleep, grows by itself far less than all-CPU own times would and is
// split apart from the rest, whose CPU its sleep, left out of the
// occupancy, no longer lets grow. Before, the pooled split gave the
// charge 0.38, 1.78 and 2.54 ms on seeds 2 to 4 (2026-12-02); now 0.19
// to 0.45 ms over seeds 2 to 7, short because its bursts, 0.2 ms each,
// wait less than processor sharing says (singleSplit's first slice), so
// the test allows a factor of 2.5 either way. The host's busy cores may
// exceed the truth by what the listing's I/O (0.5 ms at 100/s) adds to
// the rest's bound, and the bound's margin; over six seeds they came out
// 0.489 to 0.532 for 0.488.
func TestOwnTimeSplitApart(t *testing.T) {
	const truth = 100*4e-3 + 40*2e-3 + 20*0.4e-3 // busy cores
	cfg := &extract.Config{Hosts: map[string]extract.HostConfig{"app": {Cores: 1}}, CPUSlots: map[string]int{"*": 1}}
	seeds := seedList(3)
	for k, x := range extractSeeds(t, runQueueChargeModel, cfg, seeds, 60000) {
		s := hostSplit(t, x, seeds[k])
		list, item, charge := opCPU(x.Model, "b/list"), opCPU(x.Model, "a/item"), opCPU(x.Model, "c/charge")
		busy := 100*list + 40*item + 20*charge
		t.Logf("seed %d: list %.3g ms, item %.3g ms, charge %.3g ms: %.3f cores busy; bound %.3f, bounded %v, apart %q",
			seeds[k], 1e3*list, 1e3*item, 1e3*charge, busy, s.Bound, s.Bounded, s.Apart)
		if !slices.Equal(s.Apart, []string{"c/charge"}) {
			t.Errorf("seed %d: split apart %q, want the charge", seeds[k], s.Apart)
		}
		if charge < 0.4e-3/2.5 || charge > 0.4e-3*2.5 {
			t.Errorf("seed %d: the charge's CPU %.3g ms, truth 0.4", seeds[k], 1e3*charge)
		}
		if tol := 100*0.5e-3 + boundMargin*(truth+100*0.5e-3); math.Abs(busy-truth) > tol {
			t.Errorf("seed %d: %.3f cores busy for a truth of %.3f, beyond %.3f", seeds[k], busy, truth, tol)
		}
	}
}

// boundMargin is the margin the split allows beyond the bound (the
// extraction's boundSlack).
const boundMargin = 0.05
