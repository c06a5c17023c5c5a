package extract

import (
	"context"
	"maps"
	"math"
	"slices"
	"testing"

	"github.com/perfcast/perfcast/ingest"
	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve/sim"
	"github.com/perfcast/perfcast/tracegen"
)

// TestSoloSweep checks which executions the sweep finds alone: those whose
// own intervals meet no other execution's, touching ends not counting, an
// execution's own gaps (its calls) letting others in; which stay within one
// other and within three; which began within each; and the calm they
// found at levels 0 and 1.
func TestSoloSweep(t *testing.T) {
	type exec struct {
		own  float64
		ivs  []interval
		solo bool
	}
	execs := []exec{
		{1, []interval{{0, 10}}, false},           // overlaps the next
		{2, []interval{{5, 12}}, false},           // overlaps the first
		{3, []interval{{12, 20}}, true},           // touches the second's end
		{4, []interval{{30, 40}, {60, 70}}, true}, // its call (40–60) lets the next in
		{5, []interval{{41, 59}}, true},
		{6, []interval{{80, 90}, {95, 100}}, false}, // met in its second interval
		{7, []interval{{99, 120}}, false},
		{8, []interval{{130, 200}}, false}, // contains the next
		{9, []interval{{140, 150}}, false},
		{10, nil, true},                     // no own time: nothing to meet
		{11, []interval{{300, 400}}, false}, // meets the next two, which do not meet
		{12, []interval{{310, 320}}, false},
		{13, []interval{{330, 340}}, false},
		{14, []interval{{400, 410}}, true},
		{15, []interval{{500, 600}}, false}, // three at once from 515 to 520
		{16, []interval{{510, 520}}, false},
		{17, []interval{{515, 530}}, false},
	}
	calms := map[string]*calmStats{}
	w := newSoloSweep("h", calms)
	op := &opStats{solo: newSample()}
	op.initWithin()
	for _, e := range execs {
		w.add(op, op.component, 0, e.own, e.ivs, soloLevelCount, ingest.TraceID{})
	}
	calm := calms["h"]
	w.finish()
	var want, n float64
	for _, e := range execs {
		if e.solo {
			want += e.own
			n++
		}
	}
	if got := op.solo; float64(got.n) != n || got.sum != want {
		t.Errorf("alone: %d executions with %g s of own time, want %g with %g", got.n, got.sum, n, want)
	}
	// Within one other and not alone: 1, 2, 6, 7, 8, 9, 11, 12 and 13;
	// within three and not one: the last three.
	if got := op.within[1]; got.n != 9 || got.sum != 69 {
		t.Errorf("within one other: %d executions with %g s, want 9 with 69", got.n, got.sum)
	}
	if got := op.within[2]; got.n != 3 || got.sum != 48 {
		t.Errorf("within three others: %d executions with %g s, want 3 with 48", got.n, got.sum)
	}
	// Begun on an idle host: all but 2, 7, 9, 12, 13, 16 and 17, whose
	// first or only interval began inside another's; beside one other,
	// all of those but 17; beside two, 17.
	if want := []int64{10, 6, 1}; op.begun[0] != want[0] || op.begun[1] != want[1] || op.begun[2] != want[2] {
		t.Errorf("begun within 0, 1 and 3 others: %d, want %d", op.begun[:3], want)
	}
	// The calm each execution found, from its first interval's start to
	// the start that put more than the level's others beside it: alone
	// (level 0), 1, 3, 4, 5, 6, 8, 11, 14 and 15 began, and found 5, 18,
	// 11, 19, 19 (6's own second interval does not end it), 10, 10, 100
	// and 10; within one other, all but 10 and 17 began and found 99, 94,
	// 87, 69, 58, 60, 41, 180, 170, 210 (11 has one other until it ends),
	// 20, 180, 110, 15 and 5.
	for _, tc := range []struct {
		level      int
		n          int64
		nanosecond float64
	}{{0, 9, 202}, {1, 15, 1398}} {
		got := calm[tc.level]
		if got.n != tc.n || math.Abs(got.sum-tc.nanosecond/1e9) > 1e-15 {
			t.Errorf("calm found at level %d: %d of %g ns in all, want %d of %g", tc.level, got.n, got.sum*1e9, tc.n, tc.nanosecond)
		}
	}
}

// TestSoloSweepSlots: an execution of a component with one CPU slot has no
// others of its own component beside it on the cores, so overlapping ones
// of that component run alone as far as the cores go, while another
// component's execution beside them is counted, capped at one for the
// slotted component however many of its own times are active. Their calm
// is kept apart from the host's, under the component's key.
func TestSoloSweepSlots(t *testing.T) {
	calms := map[string]*calmStats{}
	w := newSoloSweep("h", calms)
	slotted := &opStats{component: "s", solo: newSample()}
	slotted.initWithin()
	free := &opStats{component: "u", solo: newSample()}
	free.initWithin()
	w.add(slotted, slotted.component, 1, 1, []interval{{0, 10}}, soloLevelCount, ingest.TraceID{})  // beside the next only: alone
	w.add(slotted, slotted.component, 1, 2, []interval{{5, 15}}, soloLevelCount, ingest.TraceID{})  // alone
	w.add(slotted, slotted.component, 1, 4, []interval{{20, 40}}, soloLevelCount, ingest.TraceID{}) // beside the two next: one other
	w.add(slotted, slotted.component, 1, 8, []interval{{22, 38}}, soloLevelCount, ingest.TraceID{}) // one other
	w.add(free, free.component, 0, 16, []interval{{25, 30}}, soloLevelCount, ingest.TraceID{})      // two of s active, one on the cores: one other
	w.finish()
	if got := slotted.solo; got.n != 2 || got.sum != 3 {
		t.Errorf("slotted alone: %d executions with %g s, want 2 with 3", got.n, got.sum)
	}
	if got := slotted.within[1]; got.n != 2 || got.sum != 12 {
		t.Errorf("slotted within one other: %d executions with %g s, want 2 with 12", got.n, got.sum)
	}
	if got := free.within[1]; got.n != 1 || got.sum != 16 {
		t.Errorf("free within one other: %d executions with %g s, want 1 with 16", got.n, got.sum)
	}
	if calms[calmKey("h", "s", 1)] == nil || calms["h"] == nil {
		t.Fatalf("calm kept under %q, want the host's and the slotted component's", slices.Collect(maps.Keys(calms)))
	}
	// Alone: the slotted four began so, and found calm until the free one
	// began at 25, their own component's others never counting: 25, 20,
	// 5 and 3 ns. The free one began beside one.
	if got := calms[calmKey("h", "s", 1)][0]; got.n != 4 || math.Abs(got.sum-53e-9) > 1e-18 {
		t.Errorf("slotted calm alone: %d of %g ns, want 4 of 53", got.n, got.sum*1e9)
	}
	if got := calms["h"][0]; got.n != 0 {
		t.Errorf("free calm alone: %d, want none", got.n)
	}
}

func TestOwnIntervals(t *testing.T) {
	fs := []found{
		{start: 20, end: 30},
		{start: 25, end: 40},
		{start: 50, end: 55, async: true}, // a send does not hold the caller
		{start: 90, end: 120},             // runs past the span's end
	}
	got, _ := ownIntervals(nil, nil, 10, 100, fs)
	want := []interval{{10, 20}, {40, 90}}
	if len(got) != len(want) {
		t.Fatalf("own intervals %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("own intervals %v, want %v", got, want)
		}
	}
}

// soloModel has a front end whose single CPU slot and its host's core
// (shared with the store) make its executions wait, at about 65 % of the
// core: waits whose spread the own times carry and the CPU does not.
const soloModel = `perfcast: 1
name: solo
hosts:
  box: {cpu: {cores: 1}}
passive:
  front-cpu-slots: {capacity: 1}
  store-cpu-slots: {capacity: 1}
components:
  front:
    host: box
    operations:
      page:
        steps:
          - hold:
              resource: front-cpu-slots
              steps: [{cpu: 'lognormal(3ms, cv=0.2)'}]
          - call: store/get
  store:
    host: box
    operations:
      get:
        steps:
          - hold:
              resource: store-cpu-slots
              steps: [{cpu: 'lognormal(1ms, cv=0.2)'}]
workload:
  pages:
    open: {rate: 170}
    steps: [{call: front/page}]
`

// TestDemandShapeFromExecutionsAlone extracts a model from traces without
// CPU times, with the host's CPU seconds as metrics, and checks that the
// estimated demands keep the spread of the CPU (a coefficient of
// variation of 0.2) rather than that of the own times, which hold the
// waits for the core and the slot. Taken from all own times, the demands'
// coefficients of variation were 0.82 (front) and 0.40 (store).
func TestDemandShapeFromExecutionsAlone(t *testing.T) {
	known, err := model.Parse([]byte(soloModel), "solo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// Two load levels, so that utilization tells demand from background.
	var spans []*ingest.Span
	for i, rate := range []float64{80, 170} {
		seed := uint64(5 + i)
		known.Workloads[0].Open.Rate = rate
		opts := &tracegen.Options{Seed: seed, Base: tracegen.DefaultBase + int64(i)*1000e9}
		_, err = sim.Record(context.Background(), known, sim.RecordOptions{Seed: seed, Requests: 20000}, func(s *sim.Span) error {
			spans = append(spans, tracegen.Convert(s, opts))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	csv := cpuCSV(spans, func(*ingest.Span) float64 { return 0 }, true)
	for _, s := range spans {
		s.CPUTime = math.NaN()
	}
	res := runWithConfig(t, spans, csv, &Config{CPUSlots: map[string]int{"*": 1}, Hosts: map[string]HostConfig{"box": {Cores: 1}}})
	for id, want := range map[string]float64{"front/page": 3e-3, "store/get": 1e-3} {
		var cpu model.Dist
		model.Walk(res.Model.Operation(id).Steps, func(s *model.Step) {
			if s.Kind == model.StepCPU {
				cpu = s.Demand
			}
		})
		if math.Abs(cpu.Mean()-want) > 0.1*want {
			t.Errorf("%s: CPU demand %.4g, want %.4g", id, cpu.Mean(), want)
		}
		own := res.Report.Fits[id+" own time alone"]
		if own == nil {
			t.Errorf("%s: the shape was not taken from executions alone (fits %v)", id, res.Report.Fits)
		}
		// The selection favours short executions: a little narrower.
		if cv := cpu.CV(); cv < 0.12 || cv > 0.3 {
			t.Errorf("%s: CPU demand's coefficient of variation %.3g, want about 0.2", id, cv)
		}
	}
}

// TestOwnAtStartLeavesOutItsRequest checks how many others the sweep
// counts beside an execution as it begins (opStats.ownAtStart): those of
// other requests only, so that a request's parallel calls, which begin
// beside each other and cost alike where the request does, do not read
// as waiting for each other.
func TestOwnAtStartLeavesOutItsRequest(t *testing.T) {
	w := newSoloSweep("h", map[string]*calmStats{})
	ops := map[string]*opStats{}
	for _, name := range []string{"first", "sibling", "stranger"} {
		ops[name] = &opStats{component: "c", solo: newSample()}
		ops[name].initWithin()
	}
	one, two := ingest.TraceID{1}, ingest.TraceID{2}
	w.add(ops["first"], ops["first"].component, 0, 10, []interval{{0, 10}}, soloLevelCount, one)
	w.add(ops["sibling"], ops["sibling"].component, 0, 6, []interval{{2, 8}}, soloLevelCount, one)   // beside the first, of its request
	w.add(ops["stranger"], ops["stranger"].component, 0, 6, []interval{{3, 9}}, soloLevelCount, two) // beside both, of another
	w.add(ops["first"], ops["first"].component, 0, 5, []interval{{20, 25}}, soloLevelCount, one)     // alone again
	w.finish()
	for name, want := range map[string][soloLevelCount + 1]float64{
		"first":    {2},          // both alone
		"sibling":  {1},          // alone: its sibling left out
		"stranger": {0, 0, 1, 0}, // two others: within three
	} {
		for i, m := range ops[name].ownAtStart {
			if m.n != want[i] {
				t.Errorf("%s: %g executions at level %d, want %g", name, m.n, i, want[i])
			}
		}
	}
	if len(w.traces) != 0 {
		t.Errorf("requests still counted active: %v", w.traces)
	}
}

// TestOccupancy checks the record of how long the host had each number
// of own times competing for its cores, from the epoch on: a component of
// one CPU slot counts at most one, one without slots every own time; and
// each component's part in it.
func TestOccupancy(t *testing.T) {
	w := newSoloSweep("h", map[string]*calmStats{})
	a := &opStats{component: "a", solo: newSample()}
	b := &opStats{component: "b", solo: newSample()}
	a.initWithin()
	b.initWithin()
	const s = int64(1e9)
	w.add(a, "a", 1, 4, []interval{{0, 4 * s}}, soloLevelCount, ingest.TraceID{1})
	w.add(a, "a", 1, 2, []interval{{1 * s, 3 * s}}, soloLevelCount, ingest.TraceID{2})
	w.add(b, "b", 0, 4, []interval{{2 * s, 6 * s}}, soloLevelCount, ingest.TraceID{3})
	w.finish()
	// 0–2 s: a alone, capped at one; 2–4 s: a and b; 4–6 s: b.
	want := []float64{0, 4, 2}
	if !slices.Equal(w.occ.seconds, want) {
		t.Errorf("occupancy %v, want %v", w.occ.seconds, want)
	}
	if got := w.occ.busy(1); got != 6 {
		t.Errorf("busy on one core %g, want 6", got)
	}
	if got := w.occ.busy(4); got != 8 {
		t.Errorf("busy on four cores %g, want 8", got)
	}
	// Each component's own times active: a from 0 to 4 s, b from 2 to
	// 6 s; without a, b alone keeps one core busy for 4 s, and without b,
	// a does.
	for key, want := range map[string]occupancyPart{"a": {with: []float64{0, 2, 2}, without: []float64{2, 2}}, "b": {with: []float64{0, 2, 2}, without: []float64{2, 2}}} {
		p := w.occ.parts[key]
		if p == nil || !slices.Equal(p.with, want.with) || !slices.Equal(p.without, want.without) {
			t.Errorf("%s: record %+v, want %+v", key, p, want)
		}
		if got := w.occ.busy(1) - w.occ.leftOut(key, 1); got != 4 {
			t.Errorf("without %s, busy on one core %g, want 4", key, got)
		}
	}
}
