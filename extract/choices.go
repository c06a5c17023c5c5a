package extract

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
)

// choiceMaxReplicas bounds the live replicas a component's choices are
// read over, and choiceMaxSeen the replicas seen over the traces (a
// rolling update names new ones each time): each call compares the load
// of every replica, and a balancer over more is not inferred.
const (
	choiceMaxReplicas = 64
	choiceMaxSeen     = 1024
)

// choiceSweep follows, for one component, how many of its executions were
// in progress on each of its replicas when each call to it began, to tell
// whether its callers send every call to a least loaded replica (see
// inferBalancers). An execution is in progress from its caller's client
// span's start (the moment a balancer in between decides, before the
// network and any queue in front of the server span), or its own span's
// start where no client span precedes it, to its span's end. A call is a
// choice when it comes from another host: a call within the host stays on
// its replica.
//
// A replica is live at a moment when its first execution started by then
// and it starts one later: replicas that start or stop during the traces
// (a rolling update, autoscaling) do not count as idle ones passed over,
// nor one draining its last executions as a loaded one. Calls are judged
// against the live replicas only.
//
// The sweep runs like concurrency's: executions are sorted and swept once
// they are older than concurrencyLag, so memory holds the executions of
// that window.
type choiceSweep struct {
	index    map[string]int32 // replicas by key
	replicas []string
	// first and latest are each replica's first and latest start seen.
	first, latest []int64
	pending       []choiceSpan
	active        minHeap[choiceEnd]
	load          []int32 // executions in progress per replica at the cursor
	top           int64   // the latest start seen
	nextSweep     int
	// recent are the replicas the last choices went to, oldest first, at
	// most choiceMaxReplicas.
	recent []int32
	stats  choiceStats
}

// choiceSpan is one execution: in progress from start to end on replica,
// a balancer's choice or not.
type choiceSpan struct {
	start, end int64
	replica    int32
	choice     bool
}

// compare orders executions by start, then end, replica and choice.
func (x choiceSpan) compare(o choiceSpan) int {
	return cmp.Or(cmp.Compare(x.start, o.start), cmp.Compare(x.end, o.end), cmp.Compare(x.replica, o.replica), cmp.Compare(b2i(x.choice), b2i(o.choice)))
}

// choiceEnd is when an execution in progress on replica ends.
type choiceEnd struct {
	end     int64
	replica int32
}

func (e choiceEnd) before(o choiceEnd) bool {
	return e.end < o.end || e.end == o.end && e.replica < o.replica
}

// choiceStats counts the choices a component's callers made among its live
// replicas.
//
// Uneven counts the choices made while the replicas' loads differed; Least
// those that went to a least loaded replica; AtRandom what a pick at random
// would have sent there (the sum of the least loaded replicas' shares).
//
// Turns counts the choices made after at least as many others as there
// were live replicas, and SameTurn those that went to the replica the
// choice that many before went to: all of them when a balancer hands the
// replicas out in turn. Contested counts the choices, among Turns, made
// while that replica was not among the least loaded, where a balancer in
// turns and one by load part; ContestedLeast and ContestedAtRandom are
// Least and AtRandom over them, and ContestedOfTwo what the lighter of
// two replicas drawn at random would have sent to a least loaded one.
type choiceStats struct {
	Uneven, Least, AtRandom                                      float64
	Turns, SameTurn                                              float64
	Contested, ContestedLeast, ContestedAtRandom, ContestedOfTwo float64
}

func (c *choiceStats) add(o choiceStats) {
	c.Uneven += o.Uneven
	c.Least += o.Least
	c.AtRandom += o.AtRandom
	c.Turns += o.Turns
	c.SameTurn += o.SameTurn
	c.Contested += o.Contested
	c.ContestedLeast += o.ContestedLeast
	c.ContestedAtRandom += o.ContestedAtRandom
	c.ContestedOfTwo += o.ContestedOfTwo
}

func newChoiceSweep() *choiceSweep {
	return &choiceSweep{index: map[string]int32{}, nextSweep: sweepBatch}
}

// add records an execution on replica from start to end.
func (w *choiceSweep) add(replica string, start, end int64, choice bool) {
	if end < start {
		return
	}
	i, ok := w.index[replica]
	if !ok {
		i = int32(len(w.replicas))
		w.index[replica] = i
		w.replicas = append(w.replicas, replica)
		w.first = append(w.first, start)
		w.latest = append(w.latest, start)
		w.load = append(w.load, 0)
	}
	w.first[i] = min(w.first[i], start)
	w.latest[i] = max(w.latest[i], start)
	w.top = max(w.top, start)
	w.pending = append(w.pending, choiceSpan{start: start, end: end, replica: i, choice: choice})
	if len(w.pending) >= w.nextSweep {
		w.sweep(w.top - concurrencyLag)
		w.nextSweep = nextSweepAt(len(w.pending))
	}
}

// sweep judges the pending executions that start at or before upTo.
func (w *choiceSweep) sweep(upTo int64) {
	slices.SortFunc(w.pending, choiceSpan.compare)
	n := 0
	for _, x := range w.pending {
		if x.start > upTo {
			break
		}
		// Executions that end as this one starts are no longer in
		// progress.
		for len(w.active) > 0 && w.active[0].end <= x.start {
			w.load[w.active.pop().replica]--
		}
		if x.choice && len(w.replicas) > 1 && len(w.replicas) <= choiceMaxSeen {
			w.judge(x)
		}
		w.load[x.replica]++
		w.active.push(choiceEnd{end: x.end, replica: x.replica})
		n++
	}
	w.pending = append(w.pending[:0], w.pending[n:]...)
}

// judge counts the choice x made among the replicas live as it began.
func (w *choiceSweep) judge(x choiceSpan) {
	live := 0
	least, most := int32(math.MaxInt32), int32(-1)
	for i, l := range w.load {
		if w.live(int32(i), x) {
			live++
			least, most = min(least, l), max(most, l)
		}
	}
	if live < 2 || live > choiceMaxReplicas {
		return
	}
	ties := 0
	for i, l := range w.load {
		if l == least && w.live(int32(i), x) {
			ties++
		}
	}
	atLeast := w.load[x.replica] == least
	share := float64(ties) / float64(live)
	if most > least {
		w.stats.Uneven++
		w.stats.AtRandom += share
		if atLeast {
			w.stats.Least++
		}
	}
	if len(w.recent) >= live {
		prev := w.recent[len(w.recent)-live]
		w.stats.Turns++
		if prev == x.replica {
			w.stats.SameTurn++
		}
		if w.load[prev] > least {
			w.stats.Contested++
			w.stats.ContestedAtRandom += share
			// Two drawn miss the least loaded when both are among the
			// live − ties others.
			others := float64(live - ties)
			w.stats.ContestedOfTwo += 1 - others*(others-1)/float64(live*(live-1))
			if atLeast {
				w.stats.ContestedLeast++
			}
		}
	}
	if len(w.recent) == choiceMaxReplicas {
		w.recent = append(w.recent[:0], w.recent[1:]...)
	}
	w.recent = append(w.recent, x.replica)
}

// live reports whether replica i was live as choice x began: its first
// execution had started, and it starts one later or is the one chosen. A
// replica that starts none later is draining: the balancer has let it go
// while its last executions end.
func (w *choiceSweep) live(i int32, x choiceSpan) bool {
	return w.first[i] <= x.start && (w.latest[i] > x.start || i == x.replica)
}

// finish judges every pending execution.
func (w *choiceSweep) finish() {
	w.sweep(math.MaxInt64)
}

// merge adds the choices of o, folded from other traces. Both are swept
// to the end first: choices in one whose replicas' load the other's
// executions made are judged without them, exact when the two did not run
// at the same time (a split by time).
func (w *choiceSweep) merge(o *choiceSweep) {
	w.finish()
	o.finish()
	w.stats.add(o.stats)
	for i, r := range o.replicas {
		j, ok := w.index[r]
		if !ok {
			j = int32(len(w.replicas))
			w.index[r] = j
			w.replicas = append(w.replicas, r)
			w.first = append(w.first, o.first[i])
			w.latest = append(w.latest, o.latest[i])
			w.load = append(w.load, 0)
			continue
		}
		w.first[j] = min(w.first[j], o.first[i])
		w.latest[j] = max(w.latest[j], o.latest[i])
	}
	w.top = max(w.top, o.top)
}

// savedChoices is a choiceSweep as a state holds it: the replicas in the
// order first seen, the executions pending and in progress, the recent
// choices, the counts. The executions are written in the order of their
// starts (of their ends, for those in progress), each as its start's
// distance from the one before, its length and its replica, twice that
// plus 1 for a choice: nanosecond times in full took a tenth of a state.
type savedChoices struct {
	Replicas  []string    `json:"replicas"`
	First     []int64     `json:"first"`
	Latest    []int64     `json:"latest"`
	Pending   []int64     `json:"pending,omitempty"` // start step, length, 2·replica + choice
	Active    []int64     `json:"active,omitempty"`  // end step, replica
	Top       int64       `json:"top"`
	NextSweep int         `json:"next_sweep"`
	Recent    []int32     `json:"recent,omitempty"`
	Stats     choiceStats `json:"stats"`
}

func saveChoices(w *choiceSweep) *savedChoices {
	v := &savedChoices{Replicas: w.replicas, First: w.first, Latest: w.latest, Top: w.top, NextSweep: w.nextSweep, Recent: w.recent, Stats: w.stats}
	pending := slices.Clone(w.pending)
	slices.SortFunc(pending, choiceSpan.compare)
	var at int64
	for _, x := range pending {
		v.Pending = append(v.Pending, x.start-at, x.end-x.start, 2*int64(x.replica)+b2i(x.choice))
		at = x.start
	}
	active := slices.Clone(w.active)
	slices.SortFunc(active, func(a, b choiceEnd) int {
		return cmp.Or(cmp.Compare(a.end, b.end), cmp.Compare(a.replica, b.replica))
	})
	at = 0
	for _, e := range active {
		v.Active = append(v.Active, e.end-at, int64(e.replica))
		at = e.end
	}
	return v
}

// b2i is 1 for true, 0 for false.
func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func (v *savedChoices) restore() (*choiceSweep, error) {
	if v == nil {
		return nil, errors.New("missing")
	}
	n := len(v.Replicas)
	if len(v.First) != n || len(v.Latest) != n {
		return nil, fmt.Errorf("%d replicas, %d first and %d latest starts", n, len(v.First), len(v.Latest))
	}
	w := newChoiceSweep()
	w.top, w.nextSweep = v.Top, max(v.NextSweep, sweepBatch)
	for i, r := range v.Replicas {
		if _, dup := w.index[r]; dup {
			return nil, fmt.Errorf("replica %q twice", r)
		}
		if v.First[i] > v.Latest[i] {
			return nil, fmt.Errorf("replica %q: first start %d after the latest %d", r, v.First[i], v.Latest[i])
		}
		w.index[r] = int32(i)
	}
	w.replicas, w.first, w.latest = v.Replicas, v.First, v.Latest
	w.load = make([]int32, n)
	if len(v.Pending)%3 != 0 || len(v.Active)%2 != 0 {
		return nil, fmt.Errorf("%d numbers for the pending executions, %d for those in progress: want threes and pairs", len(v.Pending), len(v.Active))
	}
	var at int64
	for i := 0; i < len(v.Pending); i += 3 {
		step, length, rc := v.Pending[i], v.Pending[i+1], v.Pending[i+2]
		if step < 0 && i > 0 || length < 0 || rc < 0 || rc/2 >= int64(n) {
			return nil, fmt.Errorf("pending execution %d: %d after the one before, %d long, replica %d", i/3, step, length, rc/2)
		}
		at += step
		w.pending = append(w.pending, choiceSpan{start: at, end: at + length, replica: int32(rc / 2), choice: rc%2 == 1})
	}
	at = 0
	for i := 0; i < len(v.Active); i += 2 {
		step, r := v.Active[i], v.Active[i+1]
		if step < 0 && i > 0 || r < 0 || r >= int64(n) {
			return nil, fmt.Errorf("execution in progress %d: ends %d after the one before, replica %d", i/2, step, r)
		}
		at += step
		w.active = append(w.active, choiceEnd{end: at, replica: int32(r)})
		w.load[r]++
	}
	w.active.init()
	if len(v.Recent) > choiceMaxReplicas {
		return nil, fmt.Errorf("%d recent choices, at most %d", len(v.Recent), choiceMaxReplicas)
	}
	for i, r := range v.Recent {
		if r < 0 || int(r) >= n {
			return nil, fmt.Errorf("recent choice %d: replica %d", i, r)
		}
	}
	w.recent = v.Recent
	st := v.Stats
	for _, x := range []float64{st.Uneven, st.Least, st.AtRandom, st.Turns, st.SameTurn, st.Contested, st.ContestedLeast, st.ContestedAtRandom, st.ContestedOfTwo} {
		if !(x >= 0) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("counts %+v", st)
		}
	}
	if st.Least > st.Uneven || st.AtRandom > st.Uneven || st.SameTurn > st.Turns || st.Contested > st.Turns ||
		st.ContestedLeast > st.Contested || st.ContestedAtRandom > st.Contested || st.ContestedOfTwo > st.Contested {
		return nil, fmt.Errorf("counts %+v do not hold together", st)
	}
	w.stats = st
	return w, nil
}
