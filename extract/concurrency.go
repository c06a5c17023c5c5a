package extract

import (
	"math"
	"slices"
	"sort"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/perfcast/perfcast/model"
)

// concurrencyLag is how far back in time spans may still arrive once a later
// one has: trees are delivered as traces complete, roughly in time order, and
// no request lasts longer than this. Intervals that start before the latest
// start minus the lag are swept; memory holds only the spans of that window.
const concurrencyLag = int64(120e9)

// sweepBatch is how many pending intervals trigger a sweep.
const sweepBatch = 4096

// nextSweepAt is the number of pending intervals that triggers the next
// sweep of a sweep that left pending ones: the spans of the last lag stay
// pending, and the next sweep comes when as many more have come, so each
// span is sorted a bounded number of times.
func nextSweepAt(pending int) int { return max(sweepBatch, 2*pending) }

// concurrency is the profile of how many spans of one group (the server
// spans of an operation, or of a component replica) ran at once: the time
// spent at each level, in nanoseconds.
type concurrency struct {
	pending   []interval
	active    minHeap[endTime]
	cursor    int64 // the sweep's position in time
	latest    int64 // the latest start seen
	levelTime map[int]int64
	max       int
	// busyPeriods counts the times the level rose from 0, a measure of how
	// many independent stretches the profile rests on.
	busyPeriods int64
	first, last int64
	// nextSweep is the number of pending intervals that triggers a sweep.
	nextSweep int
}

type interval struct{ start, end int64 }

func newConcurrency() *concurrency {
	return &concurrency{levelTime: map[int]int64{}, first: math.MaxInt64, last: math.MinInt64, nextSweep: sweepBatch}
}

func (c *concurrency) add(start, end int64) {
	if end < start {
		return
	}
	c.pending = append(c.pending, interval{start, end})
	c.latest = max(c.latest, start)
	c.first = min(c.first, start)
	c.last = max(c.last, end)
	if len(c.pending) >= c.nextSweep {
		c.sweep(c.latest - concurrencyLag)
		c.nextSweep = nextSweepAt(len(c.pending))
	}
}

// sweep accounts for the pending intervals that start at or before upTo.
// Intervals arriving later than the lag allows, starting before the cursor,
// are accounted from the cursor on.
func (c *concurrency) sweep(upTo int64) {
	sort.Slice(c.pending, func(i, j int) bool {
		if c.pending[i].start != c.pending[j].start {
			return c.pending[i].start < c.pending[j].start
		}
		return c.pending[i].end < c.pending[j].end
	})
	n := 0
	for _, iv := range c.pending {
		if iv.start > upTo {
			break
		}
		c.advance(max(iv.start, c.cursor))
		if len(c.active) == 0 {
			c.busyPeriods++
		}
		c.active.push(endTime(iv.end))
		n++
	}
	c.pending = append(c.pending[:0], c.pending[n:]...)
}

// advance moves the cursor to t, ending the intervals that end by then.
func (c *concurrency) advance(t int64) {
	for len(c.active) > 0 && int64(c.active[0]) <= t {
		end := int64(c.active.pop())
		if end > c.cursor {
			c.hold(len(c.active)+1, end-c.cursor)
			c.cursor = end
		}
	}
	if t > c.cursor {
		if len(c.active) > 0 {
			c.hold(len(c.active), t-c.cursor)
		}
		c.cursor = t
	}
}

// hold records d nanoseconds at level l. The highest level is the highest
// held for some time: spans that only touch (one ends as the next starts,
// at the clock's resolution) or that arrive too late to be placed in time
// do not raise it.
func (c *concurrency) hold(l int, d int64) {
	c.levelTime[l] += d
	c.max = max(c.max, l)
}

// finish sweeps everything.
func (c *concurrency) finish() {
	c.sweep(math.MaxInt64)
	c.advance(math.MaxInt64)
}

// merge adds the profile of spans disjoint from this one's. The intervals
// still pending are merged exactly; the swept parts add up, which is exact
// when the two sets did not run at the same time (a split by time) and
// otherwise understates the concurrency where they overlapped.
func (c *concurrency) merge(o *concurrency) {
	o.finish()
	c.finish()
	for l, t := range o.levelTime {
		c.levelTime[l] += t
	}
	c.max = max(c.max, o.max)
	c.busyPeriods += o.busyPeriods
	c.first = min(c.first, o.first)
	c.last = max(c.last, o.last)
}

// limit is an inferred bound on concurrency.
type limit struct {
	k int
	// mean is the time-averaged concurrency over the observed window.
	mean float64
	// atLimit is the fraction of time spent at k.
	atLimit float64
	// unlimitedAbove is how often an unlimited system with that mean would
	// have exceeded k (M/G/∞: the number in service is Poisson).
	unlimitedAbove float64
	// perReplica says the bound holds on each replica, not over the
	// system (see generator.bound); mean, atLimit and unlimitedAbove are
	// then a replica's, averaged over the replicas that showed it.
	perReplica bool
}

// where says where the bound holds, for the evidence.
func (l limit) where() string {
	if l.perReplica {
		return " on each replica"
	}
	return ""
}

// system is the bound over the system: k, times the replicas of host h
// where it holds on each replica.
func (l limit) system(h *model.Host) int {
	if l.perReplica && h != nil && h.Replicas > 1 {
		return l.k * h.Replicas
	}
	return l.k
}

// Thresholds of limit inference.
const (
	// limitMinAt is the least fraction of time at the bound.
	limitMinAt = 0.05
	// limitMinAbove is the least probability with which an unlimited
	// system would have exceeded the bound.
	limitMinAbove = 0.05
	// limitMinBusy is the least number of busy periods.
	limitMinBusy = 30
)

// inferLimit decides whether the profile shows a bound: the level never
// exceeded k, the profile sat at k for at least 5 % of the time, and an
// unlimited system with the same mean concurrency (in which the number of
// spans in progress is Poisson) would have exceeded k at least 5 % of the
// time. The observed mean understates the offered one when requests wait,
// so the test errs on the side of finding no bound.
func (c *concurrency) inferLimit() (limit, bool) {
	c = c.finished()
	if c.max < 1 || c.busyPeriods < limitMinBusy || c.last <= c.first {
		return limit{}, false
	}
	total := float64(c.last - c.first)
	var weighted float64
	for l, t := range c.levelTime {
		weighted += float64(l) * float64(t)
	}
	lim := limit{k: c.max, mean: weighted / total, atLimit: float64(c.levelTime[c.max]) / total}
	if !(lim.mean > 0) {
		return lim, false
	}
	lim.unlimitedAbove = 1 - distuv.Poisson{Lambda: lim.mean}.CDF(float64(c.max))
	ok := lim.atLimit >= limitMinAt && lim.unlimitedAbove >= limitMinAbove
	return lim, ok
}

// clone returns a copy of the profile that folds on independently of c.
func (c *concurrency) clone() *concurrency {
	cp := *c
	cp.pending = append([]interval(nil), c.pending...)
	cp.active = slices.Clone(c.active)
	cp.levelTime = make(map[int]int64, len(c.levelTime))
	for l, t := range c.levelTime {
		cp.levelTime[l] = t
	}
	return &cp
}

// finished returns a copy of the profile with its sweep finished, so that
// folding may go on in c afterwards.
func (c *concurrency) finished() *concurrency {
	cp := c.clone()
	cp.finish()
	return cp
}

// beyond returns the time, in seconds, that the intervals in progress
// beyond the first k (those a resource of k units would keep waiting)
// spent so, summed over them.
func (c *concurrency) beyond(k int) float64 {
	c = c.finished()
	var ns float64
	for l, t := range c.levelTime {
		if l > k {
			ns += float64(l-k) * float64(t)
		}
	}
	return ns / 1e9
}
