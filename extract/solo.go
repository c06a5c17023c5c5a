package extract

import (
	"cmp"
	"container/heap"
	"math"
	"slices"
	"sort"
)

// soloMin is the least number of executions that ran alone on their host
// for their own times to give an operation's shape (see soloSweep).
const soloMin = 30

// soloSweep finds, on one host, the executions that ran alone: no other
// execution's own time (its span less its synchronous calls) overlapped
// theirs. An execution's own time holds its CPU time and whatever it
// waited for on the way: the CPU other executions held, a CPU slot, a
// lock. The waits vary more than the work, so own times as a whole are far
// more variable than the work they carry (on the testbed, the catalog's
// listing: own times with a coefficient of variation of 0.66, CPU times
// 0.11). Executions that ran alone had nothing to wait for on their host,
// and their own times show the spread of the work with its I/O (the
// listing's: 0.15). Where CPU time is not measured, extraction takes the
// demand's shape from them, since the model makes the waits again.
//
// Selecting the executions that ran alone favours short ones, which are
// less likely to meet another; the shape so found is somewhat narrower
// than the work's. Only the shape is taken from them, never the mean.
//
// The sweep runs like concurrency's: intervals are sorted and swept once
// they are older than concurrencyLag, so memory holds the spans of that
// window.
type soloSweep struct {
	pending []soloInterval
	active  soloHeap
	// lone is the execution of the interval that began while no other
	// was active, until another begins.
	lone      *soloExec
	latest    int64
	seq       int64
	nextSweep int
}

// soloExec is one execution: the sample its own time goes to when it ran
// alone, its own time, how many of its intervals are not yet swept past,
// and whether another execution overlapped it. empty counts, for its
// operation, the executions all of whose intervals began while no other
// execution was active; crowded says one of its intervals did not.
type soloExec struct {
	to      *sample
	empty   *int64
	own     float64
	left    int
	shared  bool
	crowded bool
}

// soloInterval is one interval of an execution's own time; seq orders
// intervals that start and end together by their arrival.
type soloInterval struct {
	start, end, seq int64
	x               *soloExec
}

func newSoloSweep() *soloSweep { return &soloSweep{nextSweep: sweepBatch} }

// add records an execution whose own time, own seconds, is the union of
// intervals (disjoint, within its span). Its own time goes to to once
// the sweep has passed it, if no other execution overlapped it; empty is
// counted up if none of its intervals began while another was active.
func (w *soloSweep) add(to *sample, empty *int64, own float64, intervals []interval) {
	x := &soloExec{to: to, empty: empty, own: own, left: len(intervals)}
	if x.left == 0 {
		to.add(own) // nothing of its own to overlap
		*empty++
		return
	}
	for _, iv := range intervals {
		w.seq++
		w.pending = append(w.pending, soloInterval{start: iv.start, end: iv.end, seq: w.seq, x: x})
		w.latest = max(w.latest, iv.start)
	}
	if len(w.pending) >= w.nextSweep {
		w.sweep(w.latest - concurrencyLag)
		w.nextSweep = max(sweepBatch, 2*len(w.pending))
	}
}

// sweep places the pending intervals that start at or before upTo.
func (w *soloSweep) sweep(upTo int64) {
	sort.Slice(w.pending, func(i, j int) bool {
		a, b := w.pending[i], w.pending[j]
		if a.start != b.start {
			return a.start < b.start
		}
		if a.end != b.end {
			return a.end < b.end
		}
		return a.seq < b.seq
	})
	n := 0
	for _, iv := range w.pending {
		if iv.start > upTo {
			break
		}
		w.advance(iv.start)
		// Every active interval but the one that began alone was marked
		// when it began: marking the one that did, once, marks them all.
		if len(w.active) == 0 {
			w.lone = iv.x
		} else {
			iv.x.shared, iv.x.crowded = true, true
			if w.lone != nil {
				w.lone.shared, w.lone = true, nil
			}
		}
		heap.Push(&w.active, iv)
		n++
	}
	w.pending = append(w.pending[:0], w.pending[n:]...)
}

// advance ends the active intervals that end by t; an execution whose
// last interval ends is done.
func (w *soloSweep) advance(t int64) {
	for len(w.active) > 0 && w.active[0].end <= t {
		x := heap.Pop(&w.active).(soloInterval).x
		x.left--
		if x.left == 0 && !x.shared {
			x.to.add(x.own)
		}
		if x.left == 0 && !x.crowded {
			*x.empty++
		}
	}
}

// finish sweeps everything.
func (w *soloSweep) finish() {
	w.sweep(math.MaxInt64)
	w.advance(math.MaxInt64)
}

// soloHeap is a min-heap of intervals by end.
type soloHeap []soloInterval

func (h soloHeap) Len() int { return len(h) }
func (h soloHeap) Less(i, j int) bool {
	if h[i].end != h[j].end {
		return h[i].end < h[j].end
	}
	return h[i].seq < h[j].seq
}
func (h soloHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *soloHeap) Push(x any)   { *h = append(*h, x.(soloInterval)) }
func (h *soloHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// ownIntervals appends to dst the parts of [start, end] outside the
// synchronous elements fs: where the execution was on its own. calls is
// scratch space for the elements' intervals, returned for reuse.
func ownIntervals(dst, calls []interval, start, end int64, fs []found) (own, scratch []interval) {
	calls = calls[:0]
	for _, f := range fs {
		if f.async {
			continue
		}
		if s, e := max(f.start, start), min(f.end, end); e > s {
			calls = append(calls, interval{s, e})
		}
	}
	slices.SortFunc(calls, func(a, b interval) int { return cmp.Compare(a.start, b.start) })
	cur := start
	for _, c := range calls {
		if c.start > cur {
			dst = append(dst, interval{cur, c.start})
		}
		cur = max(cur, c.end)
	}
	if end > cur {
		dst = append(dst, interval{cur, end})
	}
	return dst, calls
}
