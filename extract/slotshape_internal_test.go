package extract

import (
	"bytes"
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

// shapeCase is two processes' spans: a's second execution called 6 ms
// before it began, waiting while b served nothing; b's second called 4
// ms before it began, waiting while a was busy and no other process
// idle. Times in milliseconds.
func shapeCase() (first, second func(w *shapeSweep)) {
	const ms = int64(1e6)
	first = func(w *shapeSweep) {
		w.add("a", 0, 10*ms, 0, false)
		w.add("b", 0, 2*ms, 0, false)
		w.add("a", 10*ms, 20*ms, 4*ms, true)
	}
	second = func(w *shapeSweep) {
		w.add("b", 15*ms, 25*ms, 11*ms, true)
	}
	return first, second
}

// TestShapeSweepCounts checks the sweep's counts on shapeCase by hand:
// from 0 to 2 ms both busy, 2 to 15 a alone (b idle), 15 to 20 both, 20
// to 25 b alone, a no longer live (not counted: no other process): 27 ms
// busy beside another process, 13 of them beside an idle one. The probe of a's call (at 7 ms, class 13: 6 ms) found b idle;
// that of b's (at 13 ms, class 12: 4 ms) found only itself idle. b was
// idle from 2 ms on, before its call began: the network's time; a was
// busy when its call began.
func TestShapeSweepCounts(t *testing.T) {
	first, second := shapeCase()
	check := func(t *testing.T, w *shapeSweep) {
		t.Helper()
		w = w.finished()
		const ms = int64(1e6)
		if w.busyNs != 27*ms || w.busyOtherIdleNs != 13*ms {
			t.Errorf("busy %d ns, %d beside an idle process; want %d and %d", w.busyNs, w.busyOtherIdleNs, 27*ms, 13*ms)
		}
		for b := range shapeBuckets {
			wantN, wantIdle, wantNet := int64(0), int64(0), int64(0)
			switch b {
			case 13:
				wantN, wantIdle = 1, 1
			case 12:
				wantN, wantNet = 1, 1
			}
			if w.probes[b] != wantN || w.otherIdle[b] != wantIdle || w.network[b] != wantNet {
				t.Errorf("class %d: %d probes, %d finding another idle, %d the network's; want %d, %d and %d",
					b, w.probes[b], w.otherIdle[b], w.network[b], wantN, wantIdle, wantNet)
			}
		}
	}
	t.Run("one sweep", func(t *testing.T) {
		w := newShapeSweep("store")
		first(w)
		second(w)
		check(t, w)
	})
	t.Run("saved between", func(t *testing.T) {
		w := newShapeSweep("store")
		first(w)
		w.sweep(3e6) // b's first span swept, a's first in progress
		got, err := saveShape(w).restore()
		if err != nil {
			t.Fatal(err)
		}
		second(got)
		check(t, got)
	})
	t.Run("arriving out of order", func(t *testing.T) {
		w := newShapeSweep("store")
		second(w)
		first(w)
		check(t, w)
	})
}

// TestShapeSweepOneProcess checks that a replica of one process, whose
// calls can find no other process idle whatever the queues, adds no probe
// and no busy time to its component's measure (which would take it for
// one queue), while its calls still time the network.
func TestShapeSweepOneProcess(t *testing.T) {
	const ms = int64(1e6)
	w := newShapeSweep("store")
	w.add("a", 0, 10*ms, 0, false)
	w.add("a", 10*ms, 20*ms, 4*ms, true)  // waited 6 ms
	w.add("a", 30*ms, 40*ms, 29*ms, true) // found it idle: the network
	w = w.finished()
	var probes, network int64
	for b := range shapeBuckets {
		probes += w.probes[b]
		network += w.network[b]
	}
	if probes != 0 || w.busyNs != 0 {
		t.Errorf("%d probes, %d ns busy, want none", probes, w.busyNs)
	}
	if network != 1 {
		t.Errorf("%d calls timed the network, want 1", network)
	}
}

// TestShapeSweepMerge merges two sweeps of one replica split by time:
// their counts add up.
func TestShapeSweepMerge(t *testing.T) {
	const ms = int64(1e6)
	w, o := newShapeSweep("store"), newShapeSweep("store")
	w.add("a", 0, 10*ms, 0, false)
	w.add("b", 3*ms, 10*ms, 1*ms, true) // waited while a was busy
	o.add("a", 100*ms, 110*ms, 95*ms, true)
	o.add("b", 90*ms, 120*ms, 0, false) // busy while a waited
	o.add("a", 80*ms, 85*ms, 0, false)
	w.merge(o)
	w = w.finished()
	if w.probes[11] != 1 || w.otherIdle[11] != 0 || w.probes[13] != 1 || w.otherIdle[13] != 0 {
		t.Errorf("probes %v, finding another idle %v", w.probes, w.otherIdle)
	}
	// w: 0–3 a alone, b not yet live (not counted); 3–10 both. o: 80–85
	// a alone, b not yet live (not counted); 90–100 b, a live and idle;
	// 100–110 both; 110–120 b, a no longer live (not counted).
	if want := (14 + 10 + 20) * ms; w.busyNs != want || w.busyOtherIdleNs != 10*ms {
		t.Errorf("busy %d ns, %d beside an idle process; want %d and %d", w.busyNs, w.busyOtherIdleNs, want, 10*ms)
	}
}

// TestLoadStateRefusesShapes checks that a saved sweep that does not
// hold together is refused, in one line.
func TestLoadStateRefusesShapes(t *testing.T) {
	first, _ := shapeCase()
	for name, spoil := range map[string]func(v *savedShape){
		"more idle than probes": func(v *savedShape) { v.OtherIdle[13] = 5 },
		"classes":               func(v *savedShape) { v.Probes = v.Probes[:3] },
		"busy":                  func(v *savedShape) { v.BusyOtherIdleNs = v.BusyNs + 1 },
		"no process":            func(v *savedShape) { v.Pending[0][2] = 7 },
		"class":                 func(v *savedShape) { v.Pending[0][4] = shapeBuckets },
		"kind":                  func(v *savedShape) { v.Pending[0][3] = 3 },
		"network":               func(v *savedShape) { v.Network[2] = -1 },
		"repeated process":      func(v *savedShape) { v.Procs = append(v.Procs, v.Procs[0]) },
	} {
		t.Run(name, func(t *testing.T) {
			w := newShapeSweep("store")
			first(w)
			w.busyNs = 10
			v := saveShape(w)
			spoil(v)
			if _, err := v.restore(); err == nil {
				t.Fatal("restored")
			} else if bytes.ContainsRune([]byte(err.Error()), '\n') {
				t.Fatalf("error spans lines: %q", err)
			}
		})
	}
}

// TestShapeSweepAgainstBruteForce feeds the sweep random processes that
// come and go (recycled workers) and random calls, in random order, and
// checks its counts against their definitions computed for every
// stretch between two events.
func TestShapeSweepAgainstBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	type span struct {
		proc       int
		start, end int64
		called     int64
		hasCall    bool
	}
	var spans []span
	procs := 60
	first, last := make([]int64, procs), make([]int64, procs)
	for p := range procs {
		at := int64(p)*40_000 + r.Int64N(20_000)
		first[p], last[p] = math.MaxInt64, math.MinInt64
		for range 1 + r.IntN(6) {
			at += r.Int64N(30_000)
			end := at + 1 + r.Int64N(25_000)
			s := span{proc: p, start: at, end: end}
			if r.IntN(3) > 0 {
				s.hasCall, s.called = true, at-r.Int64N(40_000)
			}
			spans = append(spans, s)
			first[p], last[p] = min(first[p], at), max(last[p], end)
		}
	}
	w := newShapeSweep("store")
	for _, i := range r.Perm(len(spans)) {
		s := spans[i]
		w.add(strconv.Itoa(s.proc), s.start, s.end, s.called, s.hasCall)
	}
	w = w.finished()

	busyAt := func(p int, t int64) bool {
		for _, s := range spans {
			if s.proc == p && s.start <= t && t < s.end {
				return true
			}
		}
		return false
	}
	liveAt := func(p int, t int64) bool { return first[p] <= t && t < last[p] }
	var times []int64
	for _, s := range spans {
		times = append(times, s.start, s.end)
	}
	slices.Sort(times)
	var busyNs, otherIdleNs int64
	for i := 1; i < len(times); i++ {
		a, b := times[i-1], times[i]
		if a == b {
			continue
		}
		busy, live := 0, 0
		for p := range procs {
			if busyAt(p, a) {
				busy++
			}
			if liveAt(p, a) {
				live++
			}
		}
		if live < 2 {
			continue // no other process beside the busy one
		}
		busyNs += int64(busy) * (b - a)
		if live > busy {
			otherIdleNs += int64(busy) * (b - a)
		}
	}
	var probes, otherIdle, network [shapeBuckets]int64
	for _, s := range spans {
		if !s.hasCall {
			continue
		}
		gap := s.start - s.called
		b := shapeBucket(gap)
		at := s.start - gap/2
		others := false
		for p := range procs {
			others = others || p != s.proc && liveAt(p, at)
		}
		if others {
			probes[b]++
		}
		for p := range procs {
			if p != s.proc && liveAt(p, at) && !busyAt(p, at) {
				otherIdle[b]++
				break
			}
		}
		idle := true
		for _, o := range spans {
			if o.proc == s.proc && o.end > s.called && o.start <= s.start-1 {
				idle = false
			}
		}
		if idle {
			network[b]++
		}
	}
	if w.busyNs != busyNs || w.busyOtherIdleNs != otherIdleNs {
		t.Errorf("busy %d ns, %d beside an idle process; by definition %d and %d", w.busyNs, w.busyOtherIdleNs, busyNs, otherIdleNs)
	}
	if w.probes != probes || w.otherIdle != otherIdle || w.network != network {
		t.Errorf("probes %v, %v, %v; by definition %v, %v, %v", w.probes, w.otherIdle, w.network, probes, otherIdle, network)
	}
	if w.live != 0 || w.busy != 0 {
		t.Errorf("after the last span: %d live, %d busy", w.live, w.busy)
	}

	// In time order, swept and saved half way: the same counts.
	slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.start, b.start) })
	half := newShapeSweep("store")
	for i, s := range spans {
		half.add(strconv.Itoa(s.proc), s.start, s.end, s.called, s.hasCall)
		if i != len(spans)/2 {
			continue
		}
		// Up to before every item still to come, and before the last
		// end seen of every process with spans to come: a process's
		// spans arrive within the lag of each other.
		upTo := int64(math.MaxInt64)
		for _, o := range spans[i+1:] {
			upTo = min(upTo, o.start-1)
			if o.hasCall {
				upTo = min(upTo, o.start-(o.start-o.called)/2)
			}
			if p, ok := half.index[strconv.Itoa(o.proc)]; ok {
				upTo = min(upTo, half.procs[p].last)
			}
		}
		half.sweep(upTo - 1)
		if len(half.active) == 0 {
			t.Fatal("no span in progress half way: the restore of those is not tried")
		}
		var err error
		if half, err = saveShape(half).restore(); err != nil {
			t.Fatal(err)
		}
	}
	half = half.finished()
	if half.busyNs != w.busyNs || half.busyOtherIdleNs != w.busyOtherIdleNs || half.probes != w.probes || half.otherIdle != w.otherIdle || half.network != w.network {
		t.Errorf("swept and saved half way: other counts")
	}
}
