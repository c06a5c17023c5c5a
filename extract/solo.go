package extract

import (
	"cmp"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/perfcast/perfcast/ingest"
)

// soloMin is the least number of executions that ran alone on their host
// for their own times to give an operation's shape (see soloSweep).
const soloMin = 30

// soloLevels are the numbers of other executions' own times beside an
// execution's own that the sweep tells apart. An execution that never had
// more than L others beside it never waited for the CPU on L + 1 or more
// cores; level 0 is the executions that ran alone.
var soloLevels = [...]int{0, 1, 3, 7, 15, 31}

// soloLevelCount is the number of soloLevels; soloBeyond stands for more
// others than the highest level.
const (
	soloLevelCount = len(soloLevels)
	soloBeyond     = 32
	// soloActiveMax bounds the own times active that the sweep follows
	// one by one: beyond it every execution active is taken as beyond the
	// levels, however few of those it competes with for the cores (a
	// component of few CPU slots and many requests waiting on I/O), so
	// that each new one costs no more than that.
	soloActiveMax = 256
)

// soloSweep finds, on one host, the executions that ran alone: no other
// execution's own time (its span less its synchronous calls) overlapped
// theirs; and, for each of soloLevels, those that never had more than
// that many others beside them. An execution's own time holds its CPU
// time and whatever it waited for on the way: the CPU other executions
// held, a CPU slot, a lock. The waits vary more than the work, so own
// times as a whole are far more variable than the work they carry (on the
// testbed, the catalog's listing: own times with a coefficient of
// variation of 0.66, CPU times 0.11). Executions that ran alone had
// nothing to wait for on their host, and their own times show the spread
// of the work with its I/O (the listing's: 0.15). Where CPU time is not
// measured, extraction takes the demand's shape from them, since the model
// makes the waits again, and splits the own times into CPU and time off
// the CPU by them (ownsplit.go).
//
// Selecting the executions that ran alone favours short ones, which are
// less likely to meet another; the shape so found is somewhat narrower
// than the work's. Only the shape is taken from them, never the mean. For
// the split, the sweep also measures that selection: for each execution
// that began with at most a level's others active, how long they stayed
// so (calmStats), and per operation how many began so.
//
// The sweep runs like concurrency's: intervals are sorted and swept once
// they are older than concurrencyLag, so memory holds the spans of that
// window.
type soloSweep struct {
	pending   []soloInterval
	active    minHeap[soloInterval]
	latest    int64
	seq       int64
	nextSweep int
	// overflow counts the intervals that began with more than the highest
	// level's others active: an interval active across one had that many
	// beside it.
	overflow int64
	// open holds, per level and component (comps' index), the executions
	// that began with at most the level's others active and still have no
	// more (see calmStats), in the order they began.
	open [soloLevelCount][][]*soloExec
	// calms is the state's record of the calm the executions found,
	// timed at the first depth levels, keyed by calmKey: host for the
	// executions of components without CPU slots, host and component for
	// each component with them.
	calms map[string]*calmStats
	host  string
	depth int
	// comps are the components met (or, for the processes of one-thread
	// runtimes, the processes: Config.foldSlots' keys), each with its CPU
	// slots (0: none) and its own times active now; eff is what those
	// active compete with on the cores: each one's count, capped at its
	// slots.
	comps []soloComp
	index map[string]int32
	keys  []string // comps' keys, as index has them
	eff   int
	// traces counts the own times active of each request with any:
	// an execution's others as it begins leave its own request's out
	// (soloExec.first), whose parallel calls begin beside each other
	// and are alike in cost where the request is.
	traces map[ingest.TraceID]int32
	// occ records how long the host had each number of own times
	// competing for its cores (eff), and occAt when it last changed.
	occ   *occupancy
	occAt int64
	// parts holds each component's record in occ, as comps.
	parts []*occupancyPart
}

// occupancyMax is the most own times competing for the cores that
// occupancy tells apart: more count as that many.
const occupancyMax = 256

// occupancy is how long, in seconds, a host had k own times competing for
// its cores (soloSweep.eff: every component's active own times, each
// capped at its CPU slots), at index k. On c cores the CPU is busy at
// most min(k, c) then, since a thread runs on the CPU only within its
// execution's own time; so the time average of min(k, c) bounds the busy
// cores that the operations' CPU makes, whatever the scheduling, and
// equals it where the own times are all CPU and their waits (see
// splitHost.bound).
type occupancy struct {
	seconds []float64
	// parts holds, per key of the sweep's components (soloSweep.keys),
	// the same record over the time its own times were active, and
	// another with them left out (occupancyPart).
	parts map[string]*occupancyPart
}

// occupancyPart is a component's share of a host's occupancy: how long
// its own times were active with k own times competing in all (with) and
// with k competing besides its own (without). Leaving its own times out
// of the host's record lowers the bound by busy(with) − busy(without)
// (occupancy.leftOut).
type occupancyPart struct {
	with, without []float64
}

// part returns the record of key, adding it.
func (o *occupancy) part(key string) *occupancyPart {
	p := o.parts[key]
	if p == nil {
		if o.parts == nil {
			o.parts = map[string]*occupancyPart{}
		}
		p = &occupancyPart{}
		o.parts[key] = p
	}
	return p
}

func (o *occupancy) merge(x *occupancy) {
	addSeconds(&o.seconds, x.seconds)
	for key, xp := range x.parts {
		p := o.part(key)
		addSeconds(&p.with, xp.with)
		addSeconds(&p.without, xp.without)
	}
}

// addSeconds adds the seconds of x to those of dst, count by count.
func addSeconds(dst *[]float64, x []float64) {
	if len(x) > len(*dst) {
		*dst = append(*dst, make([]float64, len(x)-len(*dst))...)
	}
	for k, v := range x {
		(*dst)[k] += v
	}
}

// addAt adds d seconds at count k of secs.
func addAt(secs *[]float64, k int, d float64) {
	if len(*secs) <= k {
		*secs = append(*secs, make([]float64, k+1-len(*secs))...)
	}
	(*secs)[k] += d
}

// busy returns the time integral of min(k, c): core-seconds at most busy.
func (o *occupancy) busy(c int) float64 { return busyOf(o.seconds, c) }

// busyOf is the time integral of min(k, c) over a record of seconds by
// count k.
func busyOf(secs []float64, c int) float64 {
	var sum float64
	for k, v := range secs {
		sum += v * float64(min(k, c))
	}
	return sum
}

// leftOut returns the core-seconds by which the bound on c cores falls
// with the own times of key left out of the record. For several keys
// left out, the sum of theirs falls short of what leaving them all out
// at once takes off (min(k, c) is concave in k), so the bound it leaves
// is looser than the exact one, never tighter.
func (o *occupancy) leftOut(key string, c int) float64 {
	p := o.parts[key]
	if p == nil {
		return 0
	}
	return busyOf(p.with, c) - busyOf(p.without, c)
}

// tick records the time since the sweep's last event, at t, at the
// number of own times competing now, and for each component with own
// times active, at that number with and without its own. Every change
// of eff is preceded by a tick at its time, so while eff is positive
// occAt is the last event's time, whatever its value (the epoch
// included).
func (w *soloSweep) tick(t int64) {
	if t > w.occAt && w.eff > 0 {
		d := float64(t-w.occAt) / 1e9
		k := min(w.eff, occupancyMax)
		addAt(&w.occ.seconds, k, d)
		for len(w.parts) < len(w.comps) {
			w.parts = append(w.parts, w.occ.part(w.keys[len(w.parts)]))
		}
		for i, c := range w.comps {
			if c.active == 0 {
				continue
			}
			p := w.parts[i]
			addAt(&p.with, k, d)
			addAt(&p.without, min(w.eff-c.capped(c.active), occupancyMax), d)
		}
	}
	w.occAt = max(w.occAt, t)
}

// soloComp is one component in a sweep: its CPU slots and its own times
// active now.
type soloComp struct {
	slots  int
	active int
}

// calmKey is the key of calmStats in State.calm for the executions of
// component comp on host with slots CPU slots: the host alone where the
// component has none.
func calmKey(host, comp string, slots int) string {
	if slots <= 0 {
		return host
	}
	return host + "\x00" + comp
}

// splitCalmKey is the inverse of calmKey: the host and, for a component
// with CPU slots, the component.
func splitCalmKey(key string) (host, comp string) {
	host, comp, _ = strings.Cut(key, "\x00")
	return host, comp
}

// capped is component c's own times active, as many as can be on the
// cores at once: at most its slots.
func (c soloComp) capped(active int) int {
	if c.slots > 0 {
		return min(active, c.slots)
	}
	return active
}

// others is the number of other executions' own times that x competes
// with for the cores now: every other component's active ones, each
// capped at its slots, and its own component's others, capped at one less
// than its slots (with one slot, a Go service at GOMAXPROCS 1, its other
// requests are not on the cores while x is).
func (w *soloSweep) others(x *soloExec) int { return w.othersOf(x.comp, x.active) }

// othersOf is others for an execution of component i, active or not.
func (w *soloSweep) othersOf(i int32, active bool) int {
	c := w.comps[i]
	self := 0
	if active {
		self = 1
	}
	mine := c.active - self
	if c.slots > 0 {
		mine = min(mine, c.slots-1)
	}
	return w.eff - c.capped(c.active) + mine
}

// compOf returns the index of the component (or process) of key comp with
// slots CPU slots, adding it.
func (w *soloSweep) compOf(comp string, slots int) int32 {
	if i, ok := w.index[comp]; ok {
		return i
	}
	if w.index == nil {
		w.index = map[string]int32{}
	}
	w.comps = append(w.comps, soloComp{slots: slots})
	w.keys = append(w.keys, comp)
	for i := range w.open {
		w.open[i] = append(w.open[i], nil)
	}
	w.index[comp] = int32(len(w.comps) - 1)
	return int32(len(w.comps) - 1)
}

// calmOf returns the calm that executions of component comp record.
func (w *soloSweep) calmOf(comp string, slots int) *calmStats {
	key := calmKey(w.host, comp, slots)
	c := w.calms[key]
	if c == nil {
		c = newCalmStats()
		w.calms[key] = c
	}
	return c
}

// setActive counts one more (d = 1) or one fewer (d = −1) own time of
// component i active.
func (w *soloSweep) setActive(i int32, d int) {
	c := &w.comps[i]
	w.eff -= c.capped(c.active)
	c.active += d
	w.eff += c.capped(c.active)
}

// calmStats holds, per level of soloLevels, the calm that executions
// beginning on a host with at most that many others' own times active
// found: how long, in seconds from their first interval's start, the
// others' own times active stayed at most that many. An execution of own
// time x stayed within the level exactly when its calm lasted x, so the
// share of calm longer than x is its chance to (see withinMean). Calm of
// more than idleMinSeconds counts as that long; calm still running when
// the traces end is not known and not counted.
type calmStats [soloLevelCount]*sample

func newCalmStats() *calmStats {
	var c calmStats
	for i := range c {
		c[i] = newSample()
	}
	return &c
}

func (c *calmStats) merge(o *calmStats) {
	for i := range c {
		c[i].merge(o[i])
	}
}

// soloExec is one execution: the operation it belongs to, its own time,
// how many of its intervals are not yet swept past, the most other
// executions' intervals that were active beside its own (soloBeyond: more
// than every level) and the most that were when one of its intervals
// began; when its first interval began (begun says it has), whether one
// of its intervals is active now, and the levels (bits) whose calm it is
// still timing.
type soloExec struct {
	op                *opStats
	calm              *calmStats // where its calm goes
	comp              int32      // its component, in the sweep's comps
	own               float64
	left              int
	most, mostAtStart int
	// first is how many others of other requests were beside it when
	// its first interval began (at most soloBeyond); trace is its
	// request's.
	first         int
	trace         ingest.TraceID
	start         int64
	begun, active bool
	open          uint8
}

// soloInterval is one interval of an execution's own time; seq orders
// intervals that start and end together by their arrival; overflow is the
// sweep's when it began.
type soloInterval struct {
	start, end, seq int64
	x               *soloExec
	overflow        int64
}

// newSoloSweep returns the sweep of host, which records the calm its
// executions find in calms (State.calm).
func newSoloSweep(host string, calms map[string]*calmStats) *soloSweep {
	return &soloSweep{nextSweep: sweepBatch, host: host, calms: calms, traces: map[ingest.TraceID]int32{}, occ: &occupancy{}}
}

// add records an execution of op, of a component with slots CPU slots (0:
// none) that it shares with the executions of the same key (its
// component's, or its process's: Config.foldSlots), whose own time, own
// seconds, is the union of intervals (disjoint, within its span). Once the sweep has passed it, its own time goes to
// op's sample of the level it stayed within (see opStats.within). The
// calm executions find is timed at the first depth levels from now on.
func (w *soloSweep) add(op *opStats, key string, slots int, own float64, intervals []interval, depth int, trace ingest.TraceID) {
	w.depth = max(w.depth, min(depth, soloLevelCount))
	c := w.compOf(key, slots) // the slots it was first met with
	x := &soloExec{op: op, own: own, left: len(intervals), comp: c, calm: w.calmOf(op.component, w.comps[c].slots), trace: trace}
	if x.left == 0 {
		x.done() // nothing of its own to overlap
		return
	}
	for _, iv := range intervals {
		w.seq++
		w.pending = append(w.pending, soloInterval{start: iv.start, end: iv.end, seq: w.seq, x: x})
		w.latest = max(w.latest, iv.start)
	}
	if len(w.pending) >= w.nextSweep {
		w.sweep(w.latest - concurrencyLag)
		w.nextSweep = nextSweepAt(len(w.pending))
	}
}

// done records a swept execution in its operation's sample and count of
// the lowest level it stayed, and began, within, and its own time by the
// others beside it as it began (opStats.ownAtStart).
func (x *soloExec) done() {
	if i := levelOf(x.most); i >= 0 {
		x.op.within[i].add(x.own)
	}
	if i := levelOf(x.mostAtStart); i >= 0 {
		x.op.begun[i]++
	}
	if x.begun {
		i := levelOf(x.first)
		if i < 0 {
			i = soloLevelCount
		}
		x.op.ownAtStart[i].add(x.own)
	}
}

// moments are a count of values and their sum and sum of squares.
type moments struct{ n, sum, sq float64 }

func (m *moments) add(v float64) { m.n, m.sum, m.sq = m.n+1, m.sum+v, m.sq+v*v }

func (m *moments) merge(o moments) { m.n, m.sum, m.sq = m.n+o.n, m.sum+o.sum, m.sq+o.sq }

func (m moments) mean() float64 {
	if m.n == 0 {
		return 0
	}
	return m.sum / m.n
}

// meanVariance is the variance of the mean: the values' sample variance
// over their count.
func (m moments) meanVariance() float64 {
	if m.n < 2 {
		return 0
	}
	mean := m.sum / m.n
	return math.Max(m.sq/m.n-mean*mean, 0) / (m.n - 1)
}

// levelOf is the lowest level of soloLevels that others others are
// within, -1 for none.
func levelOf(others int) int {
	for i, l := range soloLevels {
		if others <= l {
			return i
		}
	}
	return -1
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
		others := w.others(iv.x)
		w.tick(iv.start)
		iv.x.active = true
		w.setActive(iv.x.comp, 1)
		w.endCalm(iv.start)
		if !iv.x.begun {
			iv.x.begun, iv.x.start = true, iv.start
			iv.x.first = min(max(others-int(w.traces[iv.x.trace]), 0), soloBeyond)
			for i, l := range soloLevels[:w.depth] {
				if others <= l {
					iv.x.open |= 1 << i
					w.open[i][iv.x.comp] = append(w.open[i][iv.x.comp], iv.x)
				}
			}
		}
		if others > soloLevels[soloLevelCount-1] || len(w.active) > soloActiveMax {
			// Every one active now has about as many others beside it:
			// all are beyond the levels (advance marks them).
			w.overflow++
			iv.x.most, iv.x.mostAtStart = soloBeyond, soloBeyond
		} else {
			// Each active one now has others beside it, the new one
			// among them.
			for _, a := range w.active {
				a.x.most = max(a.x.most, w.others(a.x))
			}
			iv.x.most = max(iv.x.most, others)
			iv.x.mostAtStart = max(iv.x.mostAtStart, others)
		}
		iv.overflow = w.overflow
		w.active.push(iv)
		w.traces[iv.x.trace]++
		n++
	}
	w.pending = append(w.pending[:0], w.pending[n:]...)
}

// endCalm ends, now that an interval has begun at t, the calm of the open
// executions that have more than their level's others beside them. All of
// a component's open executions that are not active have the same others
// (others), and those active no more, so a component's list is only gone
// through when its inactive ones have more than the level's.
func (w *soloSweep) endCalm(t int64) {
	for i, l := range soloLevels {
		for c, list := range w.open[i] {
			// Calm longer than a pause counts as that long: what
			// matters is that it outlasted every execution.
			stale := 0
			for _, x := range list {
				if t-x.start <= idleMinSeconds*1e9 {
					break
				}
				x.open &^= 1 << i
				x.calm[i].add(idleMinSeconds)
				stale++
			}
			// Dropped from the front without a copy: append moves the
			// rest once the array is full.
			clear(list[:stale])
			list = list[stale:]
			if len(list) > 0 && w.othersOf(int32(c), false) > l {
				keep := list[:0]
				for _, x := range list {
					if x.active && w.others(x) <= l {
						keep = append(keep, x)
						continue
					}
					x.open &^= 1 << i
					x.calm[i].add(float64(t-x.start) / 1e9)
				}
				clear(list[len(keep):])
				list = keep
			}
			w.open[i][c] = list
		}
	}
}

// advance ends the active intervals that end by t; an execution whose
// last interval ends is done.
func (w *soloSweep) advance(t int64) {
	for len(w.active) > 0 && w.active[0].end <= t {
		iv := w.active.pop()
		x := iv.x
		w.tick(iv.end)
		x.active = false
		w.setActive(x.comp, -1)
		if w.traces[x.trace]--; w.traces[x.trace] <= 0 {
			delete(w.traces, x.trace)
		}
		if w.overflow > iv.overflow {
			x.most = soloBeyond
		}
		x.left--
		if x.left == 0 {
			x.done()
		}
	}
}

// finish sweeps everything.
func (w *soloSweep) finish() {
	w.sweep(math.MaxInt64)
	w.advance(math.MaxInt64)
}

// before orders intervals by end, then by arrival.
func (iv soloInterval) before(o soloInterval) bool {
	if iv.end != o.end {
		return iv.end < o.end
	}
	return iv.seq < o.seq
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
