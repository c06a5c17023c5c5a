package extract

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/perfcast/perfcast/estimate"
	"github.com/perfcast/perfcast/internal/textout"
	"github.com/perfcast/perfcast/model"
)

// Splitting own times into CPU and time off the CPU where nothing measures
// the CPU: no perfcast.cpu.time on the spans, no utilization metrics.
//
// An execution's own time is its CPU demand D, its time off the CPU Z
// (I/O, sleeps, systems without spans) and its wait for the CPU, which
// processor sharing makes D·W(a) on average at a host's busy cores a. Only
// the wait grows with the load. On c cores the executions that never had
// more than c − 1 others' own times beside their own (soloSweep's levels;
// on one core those that ran alone) waited for nothing, so their own times
// are D + Z; all executions' own times average D·(1 + W(a)) + Z. The
// difference between the two is D·W(a) for each operation, and a is what
// the demands make: a = a_m + Σ λ·D over the operations (a_m the CPU
// measured or estimated otherwise). One unknown, a, remains, and it has
// one root.
//
// The executions that stayed within are a biased sample: a long one is
// less likely to. withinMean weights them to undo that.
//
// The split needs the host's cores, since the stretch a wait makes at a
// given load depends on them: on eight cores at half load an operation of
// 10 ms waits 0.1 ms, on one core 10 ms. With the cores assumed, the own
// time stays CPU (ownScales). It is made only where the data reject that
// reading (see solveSplit). An operation with too few executions within
// takes the share of CPU pooled over the host's others; one whose own
// difference tells its demand only loosely (splitPrecision) keeps it and
// is reported as not identified.

const (
	// splitMethod names the split as the method of a demand estimate.
	splitMethod = "its own time's growth with load"
	// splitPrecision bounds the 95 % half-width of an operation's CPU
	// demand from the split, as a share of its own time without waits,
	// for the demand to be reported as identified.
	splitPrecision = 0.25
	// splitWeightCap bounds the inverse-probability weights: executions
	// within longer than that weight makes are the tail (see withinMean).
	splitWeightCap = 20
)

// OwnTimeSplit is the split of one host's own times into CPU and time off
// the CPU, where nothing measured their CPU.
type OwnTimeSplit struct {
	Host string `json:"host"`
	// Others is the most other executions' own times an execution had
	// beside it to count as one that waited for no core.
	Others int `json:"others"`
	// Busy is the busy cores per replica the demands make, and Wait the
	// wait for the CPU per unit of demand there.
	Busy float64 `json:"busy"`
	Wait float64 `json:"wait"`
	// Share is the share of the own times without waits taken as CPU;
	// Low and High bound the central 95 % of what the data allow.
	Share float64 `json:"share"`
	Low   float64 `json:"low"`
	High  float64 `json:"high"`
	// Identified is false where the data do not tell the pooled share
	// (Low is none, or Low and High lie far apart, or the equation's root
	// lies outside them).
	Identified bool `json:"identified"`
	// Loose names the operations whose own growth does not tell their
	// share, which take the mean of the shares it allows (the pooled
	// one's, for those too few executions within tell nothing of).
	Loose []string `json:"loose,omitempty"`
	// Only, when not empty, names the only operations split: the
	// host's own times, pooled, grew as if all CPU, and these alone
	// grew less (the others are taken as CPU). Share is then theirs,
	// and Low and High are not estimated.
	Only []string `json:"only,omitempty"`
	// Bound is the most busy cores per replica the host's own times
	// allow: the time average of how many of them competed for the
	// cores, at most the cores (0: not known). Bounded says the bound
	// held the split: all-CPU own times, or the shares the growth
	// allows, would keep the cores busier (with a margin of 5 %), so the
	// share is about the most within it and not told by the data.
	Bound   float64 `json:"bound,omitempty"`
	Bounded bool    `json:"bounded,omitempty"`
	// Apart, when not empty, names the operations split by themselves
	// where the bound held the split: by themselves they grow less than
	// all-CPU own times would at the waits of the pooled split. Share,
	// Low and High are then those of the others, whose own times, pooled,
	// are split within what the apart ones leave.
	Apart []string `json:"apart,omitempty"`
}

// splitOp is what one operation on a host brings to the split.
type splitOp struct {
	id       string
	comp     string  // its component
	rate     float64 // executions per second per replica
	own      float64 // mean own time of all executions
	ownSE    float64
	within   float64 // weighted mean own time of those that stayed within; 0: too few
	withinSE float64 // its standard error
	// n is the effective number of executions that stayed within, after
	// weighting.
	n float64
}

// seen says whether enough of the operation's executions stayed within
// for its own difference to count.
func (o splitOp) seen() bool { return o.n >= soloMin && o.within > 0 }

// hostSplit is the split found on one host.
type hostSplit struct {
	busy   float64   // busy cores per replica the demands make
	wait   float64   // the wait for the CPU per unit of demand there, weighted by demand
	demand []float64 // per operation, as ops
	own    []bool    // whether an operation's own difference gave it within splitPrecision
	share  float64   // the share of own time without waits that is CPU
	lo, hi float64   // the central 95 % of that share's posterior (shareOf)
	// identified is false where the pooled share is not told (told).
	identified bool
	// mean says, per operation, whether it took the mean of a posterior.
	mean []bool
	// only, when not nil, says which operations the split gives a
	// demand (singleSplit); the others stay all CPU.
	only []bool
	// bounded says the own times' occupancy held the split
	// (OwnTimeSplit.Bounded).
	bounded bool
	// apart, when not nil, says which operations were split by
	// themselves, apart from the rest (apartSplit).
	apart []bool
}

// withinMean estimates the mean own time without waits of op from its
// executions that never had more than soloLevels[level] others beside
// them, on a host where calm holds the calm that executions beginning
// within that level found (calmStats). It returns the estimate, its
// standard error and the effective number of executions, (Σw)²/Σw².
//
// Those executions are a biased sample: a long one seldom stays within.
// One of own time x that began within stayed within when its calm lasted
// x, which the calm the host's executions found says has the chance S(x),
// the share of calm longer than x (on one core with Poisson arrivals,
// e^(−Λx), Λ the rate at which own times begin). So each is weighted by
// w = 1/S(x). At high load long executions hardly ever stay within, and
// the few that do weigh so much that the mean swings with them; only
// those shorter than x_c, where w reaches splitWeightCap, are weighted.
// The executions that began within (op.begun, E) were selected by that
// alone, so Σw/E over them is the share of all executions shorter than
// x_c, and Σw·x/E their part of the mean. The rest are longer than x_c by
// what their tail holds: for an exponential tail of mean excess θ, those
// seen within beyond x_c exceed it by θ/(1 + κθ), κ the rate at which calm
// ends beyond x_c (one over its mean excess there), which gives θ; with
// fewer than soloMin of them, the mean excess of all own times beyond
// their quantile at that share stands in for it. Without E, the weighted
// mean of those shorter than x_c is taken.
func withinMean(op *opStats, calm *sample, level int) (mean, se, n float64) {
	within, e := newSample(), 0.0
	for i := 0; i <= level; i++ {
		within.merge(op.within[i])
		e += float64(op.begun[i])
	}
	if within.n == 0 || calm == nil || calm.n == 0 {
		return 0, 0, 0
	}
	// beyondCalm is the number of calm times longer than x and their
	// mean excess over it. The sketches share their bins, so x is often
	// a bin's value: half of that bin counts.
	beyondCalm := func(x float64) (count, excess float64) {
		var sum float64
		calm.sketch.ForEach(func(r, c float64) bool {
			switch {
			case r > x*(1+1e-9):
				count += c
				sum += c * (r - x)
			case r >= x*(1-1e-9):
				count += c / 2
			}
			return false
		})
		if count > 0 {
			excess = sum / count
		}
		return count, excess
	}
	total := float64(calm.n)
	weight := func(x float64) float64 {
		if c, _ := beyondCalm(x); c > 0 {
			return total / c
		}
		return math.Inf(1)
	}
	lo, hi := 0.0, calm.max
	for range 50 {
		if m := (lo + hi) / 2; weight(m) > splitWeightCap {
			hi = m
		} else {
			lo = m
		}
	}
	xc := hi
	type bin struct{ x, c, w float64 }
	var bins []bin
	var sw, sw2, swx, beyond, beyondN float64
	within.sketch.ForEach(func(x, c float64) bool {
		if x >= xc {
			beyond += c * (x - xc)
			beyondN += c
			return false
		}
		w := weight(x)
		bins = append(bins, bin{x, c, w})
		sw += c * w
		sw2 += c * w * w
		swx += c * w * x
		return false
	})
	if sw <= 0 {
		return 0, 0, 0
	}
	mean = swx / sw
	var v float64
	for _, b := range bins {
		v += b.c * b.w * b.w * (b.x - mean) * (b.x - mean)
	}
	se, n = math.Sqrt(v)/sw, sw*sw/sw2
	if e <= 0 {
		return mean, se, n
	}
	cover := sw / e
	if cover >= 1 {
		return mean, se, n
	}
	m := 1 - cover
	excess := math.NaN()
	if _, calmExcess := beyondCalm(xc); beyondN >= soloMin && calmExcess > 0 {
		kappa := 1 / calmExcess
		if t := beyond / beyondN; kappa*t < 0.9 {
			excess = t / (1 - kappa*t)
		}
	}
	if math.IsNaN(excess) {
		q := op.self.quantile(cover)
		var over, overN float64
		op.self.sketch.ForEach(func(x, c float64) bool {
			if x > q {
				over += c * (x - q)
				overN += c
			}
			return false
		})
		excess = 0
		if overN > 0 {
			excess = over / overN
		}
	}
	// The estimate is Σw·(x − tail)/E + tail: a sum over the E
	// executions that began within of y = I·w·(x − tail), I whether one
	// stayed within, which it did with chance 1/w. Its variance is E
	// times y's, E[y²] − E[y]², estimated by Σw²·(x − tail)²/E and
	// (Σw·(x − tail)/E)²; the tail's own noise is left out. The
	// standard error is 1.2 to 1.4 times the spread of estimates over
	// forty seeds of TestWithinMean; without the second term it was
	// 1.4 to 1.5, and taking the cover's noise as moving the tail's
	// whole length 2.3 to 2.5.
	tail := xc + excess
	var sy, sy2 float64
	for _, b := range bins {
		y := b.x - tail
		sy += b.c * b.w * y
		sy2 += b.c * b.w * b.w * y * y
	}
	return swx/e + m*tail, math.Sqrt(math.Max(sy2-sy*sy/e, 0)) / e, n
}

// splitLevel is the highest level of soloLevels an execution on c cores
// can stay within and never wait for the CPU: c − 1 others or fewer.
func splitLevel(c int) int {
	level := 0
	for i, l := range soloLevels {
		if l <= c-1 {
			level = i
		}
	}
	return level
}

// splitHost is the split's problem on one host.
type splitHost struct {
	ops []splitOp
	// am is the host's CPU busy otherwise (operations whose CPU was
	// measured or estimated), per replica, and amComp the part of it
	// that is each component's.
	am     float64
	amComp map[string]float64
	// slots holds the CPU slots of the components that have them
	// (Config.CPUSlots).
	slots map[string]int
	// free holds the components with slots whose bursts never find every
	// core busy (waitsForCores is false): they wait for no core.
	free map[string]bool
	c    int
	scv  float64 // the squared cv of the arrivals the host's CPU sees
	// slice is the CPU time a burst runs for before the scheduler shares
	// the core with others that wait (see singleSplit).
	slice float64
	// bound is the busy cores per replica the host's own times could
	// make at most, the time average of min(k, c) with k own times
	// competing for the cores (occupancy); 0: not known.
	bound float64
	// groups holds, per component with slots, its operations' indices,
	// found once (groupOps).
	groups [][]int
	// cut holds, per component, how much lower bound is with its
	// own times left out of the occupancy (occupancy.leftOut), per
	// replica.
	cut map[string]float64
	// rest says these are the operations apartSplit did not set apart,
	// which are not tested by themselves again.
	rest bool
}

// groupOps returns the indices of the operations of each component with
// CPU slots, in the order the components first appear.
func (p *splitHost) groupOps() [][]int {
	if p.groups == nil {
		index := map[string]int{}
		for i, o := range p.ops {
			if p.slots[o.comp] == 0 {
				continue
			}
			g, ok := index[o.comp]
			if !ok {
				g = len(p.groups)
				index[o.comp] = g
				p.groups = append(p.groups, nil)
			}
			p.groups[g] = append(p.groups[g], i)
		}
	}
	return p.groups
}

// busyAt solves, for demands that demand gives each operation from its
// wait factor, the host's busy cores a per replica at which the demands
// make a. It returns a and each operation's wait factor there. The wait
// is GI/M/c's on the host's cores at the load a burst shares them with,
// as cpuWaitFactor takes it: the host's, less 1/k of the load of its own
// component where that has k CPU slots (with one, a Go service with
// GOMAXPROCS 1, its other requests wait for the slot, before their spans,
// not beside it on the cores). demand must not rise with the wait; ok is
// false when even at the most the host allows (most) the demands ask for
// more.
func (p *splitHost) busyAt(demand func(i int, w float64) float64) (a float64, waits []float64, ok bool) {
	return p.busyBelow(demand, p.most())
}

// busyBelow is busyAt with top in place of the most the host allows.
func (p *splitHost) busyBelow(demand func(i int, w float64) float64, top float64) (a float64, waits []float64, ok bool) {
	waits = make([]float64, len(p.ops))
	w := func(a float64) float64 { return burstyWaitFactor(p.c, math.Max(a, 0), p.scv) }
	groups := p.groupOps()
	// busy is what the demands make at host load a.
	busy := func(a float64) float64 {
		total := 0.0
		for i, o := range p.ops {
			if p.slots[o.comp] == 0 {
				waits[i] = w(a)
				total += o.rate * demand(i, waits[i])
			}
		}
		for _, group := range groups {
			// The component's load aj is a fixed point of a rising
			// function (less wait, more demand): iterated up from what
			// was measured, it reaches the least one.
			comp := p.ops[group[0]].comp
			k, base := float64(p.slots[comp]), p.amComp[comp]
			aj := base
			for range 200 {
				next := base
				wa := 0.0
				if !p.free[comp] {
					wa = w(a - aj/k)
				}
				for _, i := range group {
					waits[i] = wa
					next += p.ops[i].rate * demand(i, wa)
				}
				done := next-aj <= 1e-9*math.Max(next, 1e-9)
				aj = next
				if done {
					break
				}
			}
			total += aj - base
		}
		return total
	}
	a, ok = busyRoot(p.am, top, busy)
	if ok {
		busy(a)
	}
	return a, waits, ok
}

// solveCoupled is solveSplit's end where components have CPU slots. There
// the waits couple: an operation's wait is the load of the others beside
// it, so its difference tells its demand only through theirs, and one
// read too high lowers the others' and raises its own again (on two
// services of one slot each on one core, by about twice per round). Each
// operation's share is therefore weighed at the others' demands of three
// pooled shares, the pooled posterior's (post) low end, mean and high end,
// and takes the mean of the three posteriors' means, averaged with the
// pooled mean by their precisions (the widths of their posteriors, the
// widest of the three for its own), so that an operation whose own
// difference says little takes about the pool's. None counts as told:
// even where all three posteriors are narrow and agree, the pooled share
// misplaces the load between the components and each operation's share
// leans the other way (on the two services, without the pooled mean,
// lookups of 3 ms came out at 3.8 to 5.4 and listings of 4 at 2.0 to 3.7
// over ten seeds, half of them with narrow posteriors; with it, 3.7 to 4.5
// and 2.8 to 3.7). Operations whose executions within were too few take
// the pooled mean.
func (p *splitHost) solveCoupled(post sharePosterior) (hostSplit, bool) {
	ops := p.ops
	shares := make([]float64, len(ops))
	hs := hostSplit{identified: told(post, post.mean), lo: post.lo, hi: post.hi,
		own: make([]bool, len(ops)), mean: make([]bool, len(ops))}
	width := make([]float64, len(ops))
	for i := range ops {
		hs.mean[i] = true
	}
	at := func(c float64) (float64, []float64, bool) {
		return p.busyAt(func(i int, w float64) float64 { return c * ops[i].own / (1 + c*w) })
	}
	for _, c := range []float64{math.Max(post.lo, 1.0/shareGrid), post.mean, post.hi} {
		a, waits, ok := at(c)
		if !ok && c > post.mean {
			// The high end is a grid cell's edge, which may ask for more
			// busy cores than the host allows (most): the highest share
			// below it that does not stands for it.
			lo, hi := post.mean, c
			for range 40 {
				if m := (lo + hi) / 2; func() bool { _, _, ok := at(m); return ok }() {
					lo = m
				} else {
					hi = m
				}
			}
			c = lo
			a, waits, ok = at(c)
		}
		if !ok {
			return hostSplit{}, false
		}
		d := make([]float64, len(ops))
		for i, o := range ops {
			d[i] = c * o.own / (1 + c*waits[i])
		}
		for i, o := range ops {
			if !o.seen() {
				continue
			}
			q := opShare(o, p.waitBeside(i, a, d))
			if math.IsNaN(q.mean) {
				return hostSplit{}, false
			}
			shares[i] += q.mean / 3
			width[i] = math.Max(width[i], q.hi-q.lo)
		}
	}
	for i, o := range ops {
		if !o.seen() {
			shares[i] = post.mean
			continue
		}
		// Its share and the pool's, each weighed by its precision as
		// its posterior's width tells it (the pool holds its own
		// difference too, so it counts a little twice).
		own, pool := 1/math.Max(width[i]*width[i], 1e-12), 1/math.Max((post.hi-post.lo)*(post.hi-post.lo), 1e-12)
		shares[i] = (own*shares[i] + pool*post.mean) / (own + pool)
	}
	demand := func(i int, w float64) float64 { return shares[i] * ops[i].own / (1 + shares[i]*w) }
	a, waits, ok := p.busyAt(demand)
	if !ok {
		return hostSplit{}, false
	}
	hs.demand = make([]float64, len(ops))
	var cpu, without float64
	for i, o := range ops {
		hs.demand[i] = demand(i, waits[i])
		cpu += o.rate * hs.demand[i]
		without += o.rate * (o.own - hs.demand[i]*waits[i])
	}
	hs.busy, hs.wait = a, meanWait(ops, hs.demand, waits)
	if without > 0 {
		hs.share = cpu / without
	}
	return hs, true
}

// solveSplit finds the busy cores a, and each operation's CPU demand, at
// which the operations' own times less those of their executions within are
// the waits W that processor sharing on the host's cores makes (busyAt).
//
// The split is made only where the data reject the reading extraction
// takes otherwise, that the own times are all CPU and their waits: under
// it the operations seen within would have waited Σλ·own·W/(1 + W) at the
// busy cores that reading makes, and the difference measured must fall
// short of that by more than twice its standard error. A light load, few
// executions within or own times that are indeed CPU keep that reading (ok
// false). An operation with enough executions within takes the root of its
// own difference, clamped between no CPU and its own time without waits,
// where its posterior (opShare) tells its share, else that posterior's
// mean; one with too few takes the share pooled over the others, the
// pooled posterior's mean (shareOf) where that does not tell it. Hosts
// whose components have CPU slots go to solveCoupled.
//
// Whatever the growth, no reading may keep the cores busier than the own
// times' occupancy allows (splitHost.bound, with boundSlack): a thread
// runs only within its execution's own time, so the CPU is busy at most
// min(k, c) while k own times compete for c cores, and exactly that where
// they are all CPU and their waits. Own times that hold waits for a CPU
// slot inside the span (a runtime's run queue: a goroutine that blocked
// and wakes behind its service's others) grow faster than processor
// sharing says and look all CPU by their growth, and not by their
// occupancy, where a component counts no more than its slots (a lock's
// waits count in full: they keep the bound high and leave it loose,
// TestOwnTimeSplitBound's note). On the testbed without span CPU times or
// metrics (2026-12-02 13:41), all CPU made 0.79 cores busy where the own
// times were active, one or more, 0.47 of the time; the services used
// 0.55, about four fifths of it in spans (the reference run's share).
// Held at the bound, it came out 0.48, and 80 % load's prediction from
// those traces went from unstable to CPU +12 %.
func solveSplit(p *splitHost) (hostSplit, bool) {
	ops := p.ops
	var pooled, pooledVar float64
	for _, o := range ops {
		if !o.seen() {
			continue
		}
		pooled += o.rate * math.Max(o.own-o.within, 0)
		pooledVar += o.rate * o.rate * (o.ownSE*o.ownSE + o.withinSE*o.withinSE)
	}
	if !slices.ContainsFunc(ops, splitOp.seen) || p.am >= p.most() {
		return hostSplit{}, false
	}
	// All CPU: each own time is D·(1 + W). Where that would keep the
	// cores busier than the own times' occupancy allows (most), the
	// reading is rejected whatever the growth says.
	allCPU := func(i int, w float64) float64 { return ops[i].own / (1 + w) }
	a, waits, ok := p.busyAt(allCPU)
	if ok {
		expected := 0.0
		for i, o := range ops {
			if o.seen() {
				expected += o.rate * o.own * waits[i] / (1 + waits[i])
			}
		}
		if pooled+2*math.Sqrt(pooledVar) >= expected {
			return p.singleSplit(a, waits)
		}
	}
	hs, ok := p.pooledSplit(pooled, pooledVar, !ok && p.boundCuts(1))
	if ok && hs.bounded && !p.rest {
		if apart, ok := p.apartSplit(hs); ok {
			return apart, true
		}
	}
	return hs, ok
}

// apartSplit is solveSplit's end where the own times' occupancy held the
// pooled split (hs, bounded): the growth then does not tell the host's
// share, and every operation takes about the one the bound holds the pool
// at, but an operation may still tell that its own time is not all CPU.
// Each operation seen is tested by itself, as singleSplit tests it, at
// hs's waits (where the others' demands are those their own growth leans
// them to, solveCoupled): against what all-CPU own times would grow by
// at the least, the part beyond the first slice waiting W/(1 + W) of it.
// Those it rejects are split by themselves (hostSplit.apart): each takes
// its root where its posterior tells its share, else that posterior's
// mean, at the waits the others' demands make. The rest are split as
// solveSplit splits a host (splitHost.rest), the apart operations' CPU
// counted as measured and, where a component's every operation is
// apart, its own times left out of the bound (splitHost.cut); then the
// apart ones again at the rest's demands, a few rounds. An operation that
// carries much of the CPU (apartMost) is not set apart. ok is false where
// none is. Without it, on the testbed without span CPU times or metrics
// (2026-12-02 13:41), the payments' charge, 0.4 ms of CPU around a 10 ms
// sleep, came out 2.98 ms of CPU.
func (p *splitHost) apartSplit(hs hostSplit) (hostSplit, bool) {
	ops := p.ops
	d := slices.Clone(hs.demand)
	a, waits, ok := p.busyAt(func(i int, w float64) float64 { return d[i] })
	if !ok {
		return hostSplit{}, false
	}
	// One that carries much of the host's CPU leans the others' waits,
	// and its own growth tells its share only through theirs
	// (solveCoupled): it stays in the pool.
	apart := p.rejectAllCPU(waits, func(i int) bool { return ops[i].rate*d[i] <= apartMost*(a-p.am) })
	if apart == nil || !slices.Contains(apart, false) {
		return hostSplit{}, false
	}
	mixed := map[string]bool{} // components with an operation not apart
	for i, o := range ops {
		mixed[o.comp] = mixed[o.comp] || !apart[i]
	}
	var whole []string // components whose every operation split is apart
	for i, o := range ops {
		if apart[i] && !mixed[o.comp] && !slices.Contains(whole, o.comp) {
			whole = append(whole, o.comp)
		}
	}
	byOwn := make([]bool, len(ops)) // its posterior tells its share
	var rest hostSplit
	var index []int // the rest's operations in ops
	for range apartRounds {
		// The apart operations at the others' demands now.
		for i, o := range ops {
			if !apart[i] {
				continue
			}
			q := opShare(o, p.waitBeside(i, a, d))
			if math.IsNaN(q.mean) {
				return hostSplit{}, false
			}
			w, _ := p.waitBeside(i, a, d)(o.rate * d[i])
			byOwn[i] = told(q, splitRoot(o, w)/o.within)
			if byOwn[i] {
				d[i] = splitRoot(o, w)
			} else {
				d[i] = q.mean * o.own / (1 + q.mean*w)
			}
		}
		// The rest, the apart operations' CPU counted as measured. A
		// component whose every operation split is apart leaves the
		// occupancy: the rest's CPU is at most what their own times
		// allow, the component's is what the split gives it.
		sub := &splitHost{am: p.am, amComp: maps.Clone(p.amComp), slots: p.slots, free: p.free, c: p.c,
			scv: p.scv, slice: p.slice, bound: p.bound, rest: true}
		index = index[:0]
		for i, o := range ops {
			if apart[i] {
				sub.am += o.rate * d[i]
				sub.amComp[o.comp] += o.rate * d[i]
				continue
			}
			sub.ops = append(sub.ops, o)
			index = append(index, i)
		}
		for _, comp := range whole {
			sub.bound += sub.amComp[comp] - p.cut[comp]
		}
		if sub.bound <= 0 {
			return hostSplit{}, false // 0 would read as no bound
		}
		if rest, ok = solveSplit(sub); !ok {
			// The rest grow as if all CPU and keep within the bound.
			rest, ok = sub.allCPU()
			if !ok {
				return hostSplit{}, false
			}
		}
		for k, i := range index {
			d[i] = rest.demand[k]
		}
		a = rest.busy
	}
	out := hostSplit{share: rest.share, lo: rest.lo, hi: rest.hi, identified: rest.identified, bounded: rest.bounded,
		demand: d, own: make([]bool, len(ops)), mean: make([]bool, len(ops)), apart: apart}
	for i := range ops {
		if apart[i] {
			out.own[i], out.mean[i] = byOwn[i], !byOwn[i]
		}
	}
	for k, i := range index {
		out.own[i], out.mean[i] = rest.own[k], rest.mean[k]
		// The rest, pooled, grew as if all CPU and some of them by
		// themselves did not: those are apart too.
		apart[i] = rest.only != nil && rest.only[k]
	}
	a, waits, ok = p.busyAt(func(i int, w float64) float64 { return d[i] })
	if !ok {
		return hostSplit{}, false
	}
	out.busy, out.wait = a, meanWait(ops, d, waits)
	return out, true
}

// apartMost is the most of the CPU the host's split operations make at
// the pooled split that an operation may carry to be set apart. On
// TestOwnTimeSplitSlots' traces the listing, about a third of it, was
// set apart on two seeds of six (its own time is 57 % CPU, the pool's
// share 43 %), and the lookup, split alone, took 5.9 and 7.0 ms of CPU
// for 3, the host 0.56 and 0.61 busy for 0.48; on
// TestOwnTimeSplitApart's, the charge carries 2 to 11 %.
const apartMost = 0.25

// apartRounds is how many times apartSplit splits the apart operations
// and the rest in turn: each reads its waits from the other's demands.
const apartRounds = 3

// allCPU is the split where the own times are all CPU and their waits:
// ok is false where that keeps the cores busier than the host allows.
func (p *splitHost) allCPU() (hostSplit, bool) {
	demand := func(i int, w float64) float64 { return p.ops[i].own / (1 + w) }
	a, waits, ok := p.busyAt(demand)
	if !ok {
		return hostSplit{}, false
	}
	hs := hostSplit{busy: a, share: 1, lo: 1, hi: 1, identified: false, demand: make([]float64, len(p.ops)),
		own: make([]bool, len(p.ops)), mean: make([]bool, len(p.ops))}
	for i := range p.ops {
		hs.demand[i] = demand(i, waits[i])
	}
	hs.wait = meanWait(p.ops, hs.demand, waits)
	return hs, true
}

// boundCuts says whether the own times, each with the share s of CPU,
// would keep the cores busier than the own times' occupancy allows
// (splitHost.most) but no busier than loadCap of them.
func (p *splitHost) boundCuts(s float64) bool {
	if p.bound <= 0 {
		return false
	}
	demand := func(i int, w float64) float64 { return s * p.ops[i].own / (1 + s*w) }
	if _, _, ok := p.busyAt(demand); ok {
		return false
	}
	_, _, ok := p.busyBelow(demand, loadCap*float64(p.c))
	return ok
}

// pooledSplit is solveSplit's end where the data reject all-CPU own
// times: the pooled growth pooled ± sqrt(pooledVar) over the operations
// seen tells the share. bounded says the own times' occupancy rejected
// all-CPU own times; the split is bounded too where it cuts the shares
// the growth allows (hostSplit.bounded), and the share is then not told.
func (p *splitHost) pooledSplit(pooled, pooledVar float64, bounded bool) (hostSplit, bool) {
	post, weighed := shareOf(p, pooled, math.Sqrt(pooledVar))
	// The posterior is cut by the bound where the shares just above its
	// central 95 % are out of it.
	bounded = bounded || weighed && p.boundCuts(math.Min(post.hi+1.0/shareGrid, 1))
	hs, ok := p.splitFrom(pooled, post, weighed)
	if ok && bounded {
		hs.bounded, hs.identified = true, false
	}
	return hs, ok
}

// splitFrom is pooledSplit's split at the pooled growth pooled, whose
// posterior over the share is post (weighed: there is one).
func (p *splitHost) splitFrom(pooled float64, post sharePosterior, weighed bool) (hostSplit, bool) {
	ops := p.ops
	d := make([]float64, len(ops))
	own := make([]bool, len(ops))
	// The share pooled over the operations seen, at their waits.
	var share float64
	pooledShare := func(waits []float64) float64 {
		x := 0.0
		for i, o := range ops {
			if o.seen() {
				x += o.rate * waits[i] * o.within
			}
		}
		if x <= 0 {
			return 1
		}
		return math.Min(pooled/x, 1)
	}
	if len(p.slots) > 0 {
		if !weighed {
			return hostSplit{}, false
		}
		return p.solveCoupled(post)
	}
	_, waits, ok := p.busyAt(func(i int, w float64) float64 {
		if ops[i].seen() {
			return splitRoot(ops[i], w)
		}
		return 0 // set below, from the share the others make
	})
	if !ok {
		return hostSplit{}, false
	}
	// The operations seen too rarely take the pooled share: solved again
	// with them, the seen ones' demands as before at their new waits.
	share = pooledShare(waits)
	a, waits, ok := p.busyAt(func(i int, w float64) float64 {
		if ops[i].seen() {
			return splitRoot(ops[i], w)
		}
		return share * ops[i].own / (1 + share*w)
	})
	if !ok {
		return hostSplit{}, false
	}
	share = pooledShare(waits)
	hs := hostSplit{identified: true}
	if weighed {
		hs.lo, hs.hi = post.lo, post.hi
		if !told(post, share) {
			// The pooled growth tells the share only loosely, or not
			// from none, or its root sits at an end the noise pushed
			// it to: the posterior's mean stands for it.
			share, hs.identified = post.mean, false
		}
	}
	// Each operation seen keeps its root where its own difference tells
	// its share, the others' demands held at their roots; else the mean of
	// what that difference allows. The rest take the pooled share.
	for i, o := range ops {
		d[i] = splitRoot(o, waits[i])
		if !o.seen() {
			d[i] = share * o.own / (1 + share*waits[i])
		}
	}
	fixed := make([]float64, len(ops)) // the share an operation takes; NaN: its root
	hs.mean = make([]bool, len(ops))
	for i, o := range ops {
		fixed[i], hs.mean[i] = share, !hs.identified
		if !o.seen() {
			continue
		}
		q := opShare(o, p.waitBeside(i, a, d))
		if told(q, splitRoot(o, waits[i])/o.within) {
			fixed[i], own[i], hs.mean[i] = math.NaN(), true, false
			continue
		}
		fixed[i], hs.mean[i] = q.mean, true
	}
	demand := fixedDemand(ops, fixed)
	if a, waits, ok = p.busyAt(demand); !ok {
		return hostSplit{}, false
	}
	var cpu, without float64
	for i, o := range ops {
		d[i] = demand(i, waits[i])
		cpu += o.rate * d[i]
		without += o.rate * (o.own - d[i]*waits[i])
	}
	hs.busy, hs.wait, hs.demand, hs.own = a, meanWait(ops, d, waits), d, own
	if without > 0 {
		hs.share = cpu / without
	}
	return hs, true
}

// defaultSlice is the CPU time a burst is taken to run before it shares
// its core with bursts that wait, where the host's scheduling is not
// round-robin with a quantum: Linux's base slice (3 ms under EEVDF; CFS's
// least granularity, 0.75 ms times 1 + log₂ of the CPUs, 3 ms at eight).
// A thread that wakes from sleep runs about at once, ahead of those that
// have run, so a burst shorter than that waits less than processor
// sharing says (the testbed's gateway: its short bursts' own times grew a
// third as much as processor sharing makes CPU grow).
const defaultSlice = 3e-3

// singleSplit is solveSplit's end where the host's operations, pooled, do
// not reject all-CPU own times (their waits at the load a, waits, as that
// reading makes them): one operation whose own time is mostly CPU and
// grows more than processor sharing says (Go's run queue, a lock inside
// the span, load that no span shows) hides another whose own time is
// mostly a sleep. So each operation seen is tested by itself, against
// what all-CPU own times would grow by at the least: the part beyond the
// first slice, which no scheduler spares from sharing the core, waiting
// W/(1 + W) of it. One whose difference falls short of that by more than
// z standard errors (z for a one-sided 2.5 % spread over the operations
// tested, Bonferroni's) is split as solveSplit splits an operation, its
// root where its posterior tells its share, else the posterior's mean,
// the others held at all CPU; the others keep all CPU (only). ok is false
// where none is rejected. On the testbed (2026-12-02, traces without CPU
// times or metrics) the payments' charge, 0.4 ms of CPU around a 10 ms
// sleep, grew 0.16 ± 0.03 ms where all CPU makes 4.1, and had been taken
// as 6.5 ms of CPU.
func (p *splitHost) singleSplit(a float64, waits []float64) (hostSplit, bool) {
	ops := p.ops
	only := p.rejectAllCPU(waits, func(int) bool { return true })
	if only == nil {
		return hostSplit{}, false
	}
	d := make([]float64, len(ops))
	for i, o := range ops {
		d[i] = o.own / (1 + waits[i])
	}
	hs := hostSplit{own: make([]bool, len(ops)), mean: make([]bool, len(ops)), only: only}
	fixed := make([]float64, len(ops)) // the share an operation takes; NaN: its root
	for i, o := range ops {
		fixed[i] = 1
		if !only[i] {
			continue
		}
		q := opShare(o, p.waitBeside(i, a, d))
		if math.IsNaN(q.mean) {
			return hostSplit{}, false
		}
		if told(q, splitRoot(o, waits[i])/o.within) {
			fixed[i], hs.own[i] = math.NaN(), true
			continue
		}
		fixed[i], hs.mean[i] = q.mean, true
	}
	demand := fixedDemand(ops, fixed)
	a, waits, ok := p.busyAt(demand)
	if !ok {
		return hostSplit{}, false
	}
	var cpu, without float64
	for i, o := range ops {
		d[i] = demand(i, waits[i])
		if only[i] {
			cpu += o.rate * d[i]
			without += o.rate * (o.own - d[i]*waits[i])
		}
	}
	hs.busy, hs.wait, hs.demand = a, meanWait(ops, d, waits), d
	if without > 0 {
		hs.share = cpu / without
	}
	return hs, true
}

// rejectAllCPU tests each operation seen that consider allows by itself
// against all-CPU own times at the wait factors waits, as singleSplit
// says: its difference must fall short of what they would grow by at the
// least by more than z standard errors, z for a one-sided 2.5 % spread
// over the operations seen (Bonferroni's). It returns which it rejects,
// nil for none.
func (p *splitHost) rejectAllCPU(waits []float64, consider func(i int) bool) []bool {
	tested := 0
	for _, o := range p.ops {
		if o.seen() {
			tested++
		}
	}
	if tested == 0 {
		return nil
	}
	z := distuv.UnitNormal.Quantile(1 - 0.025/float64(tested))
	rejected := make([]bool, len(p.ops))
	found := false
	for i, o := range p.ops {
		if !o.seen() || !consider(i) {
			continue
		}
		least := math.Max(o.own-p.slice, 0) * waits[i] / (1 + waits[i])
		se := math.Max(math.Hypot(o.ownSE, o.withinSE), 1e-9*o.own)
		if least-(o.own-o.within) > z*se {
			rejected[i], found = true, true
		}
	}
	if !found {
		return nil
	}
	return rejected
}

// splitRoot is an operation's demand from its own difference at wait
// factor w, between no CPU and its own time without waits.
func splitRoot(o splitOp, w float64) float64 {
	if w > 0 {
		return math.Min(math.Max(o.own-o.within, 0)/w, o.within)
	}
	return o.within
}

// fixedDemand returns the demand of operation i at wait factor w where
// each takes the share fixed gives it (NaN: its root, splitRoot).
func fixedDemand(ops []splitOp, fixed []float64) func(i int, w float64) float64 {
	return func(i int, w float64) float64 {
		if s := fixed[i]; !math.IsNaN(s) {
			return s * ops[i].own / (1 + s*w)
		}
		return splitRoot(ops[i], w)
	}
}

// told says whether a posterior tells a share: its central 95 % is no
// wider than twice splitPrecision nor than half the prior's over the
// shares possible, excludes no CPU, and holds the share the equation's
// root gives. The second bound keeps the cores' capacity from passing for
// the growth's evidence: where the growth says nothing (no burst ever
// waits for a core) but most shares would ask for more CPU than the cores
// hold, the posterior is the prior over the rest, narrow and clear of
// zero.
func told(post sharePosterior, root float64) bool {
	return post.lo > 0 && post.lo <= root && root <= post.hi && post.hi-post.lo <= min(2*splitPrecision, post.prior/2)
}

// opShare is shareOf for one operation alone: the likelihood of its own
// difference, own − within, under each share s, at the wait w(δ) its
// demand makes when it brings δ more busy cores than it did (waitBeside).
func opShare(o splitOp, w func(delta float64) (float64, bool)) sharePosterior {
	diff, se := o.own-o.within, math.Hypot(o.ownSE, o.withinSE)
	se = math.Max(se, 1e-9*o.own)
	base, ok := w(0)
	if !ok {
		return sharePosterior{mean: math.NaN()}
	}
	return posterior(func(s float64) (float64, bool) {
		// The demand and its wait, a fixed point: a few rounds from
		// the wait it has now.
		wait := base
		for range 20 {
			next, ok := w(o.rate * s * o.own / (1 + s*wait))
			if !ok {
				return 0, false
			}
			done := math.Abs(next-wait) <= 1e-6*wait
			wait = next
			if done {
				break
			}
		}
		z := (diff - s*o.own*wait/(1+s*wait)) / se
		return math.Exp(-z * z / 2), true
	})
}

// waitBeside returns, for operation i at host load a with the demands d,
// its wait factor when its demand brings delta busy cores in place of
// what it brings now, the others' held; false beyond loadCap·c.
func (p *splitHost) waitBeside(i int, a float64, d []float64) func(delta float64) (float64, bool) {
	o := p.ops[i]
	now := o.rate * d[i]
	k := float64(p.slots[o.comp])
	comp := p.amComp[o.comp]
	for j, x := range p.ops {
		if x.comp == o.comp {
			comp += x.rate * d[j]
		}
	}
	return func(delta float64) (float64, bool) {
		host := a - now + delta
		if host >= p.most() {
			return 0, false
		}
		if p.free[o.comp] {
			return 0, true
		}
		if k > 0 {
			host -= (comp - now + delta) / k
		}
		return burstyWaitFactor(p.c, math.Max(host, 0), p.scv), true
	}
}

// meanWait is the operations' wait factors weighted by the CPU their
// demands d bring.
func meanWait(ops []splitOp, d, waits []float64) float64 {
	var x, sum float64
	for i, o := range ops {
		x += o.rate * d[i] * waits[i]
		sum += o.rate * d[i]
	}
	if sum <= 0 {
		return 0
	}
	return x / sum
}

// sharePosterior is what the pooled growth of own times says of the share
// s of own time without waits that is CPU, under a uniform prior on s.
type sharePosterior struct {
	mean, lo, hi float64 // its mean and central 95 %
	// prior is the width of the prior's central 95 % over the shares
	// possible (those the cores can hold): where the likelihood is flat,
	// the posterior is as wide as that.
	prior float64
}

// shareGrid is the number of shares at which shareOf weighs the evidence.
const shareGrid = 200

// shareOf weighs each share s between 0 and 1 by the likelihood of the
// pooled difference measured, pooled ± se, where the operations whose
// executions within were seen (splitOp.seen) would have grown by
// Σλ·s·own·W/(1 + s·W) at the waits W that share makes (busyAt). A
// uniform prior on s is all that is assumed. The growth is a flat function
// of s at light loads, where the wait is small whatever the share, and a
// steep one near saturation: a difference within its noise of none then
// allows anything from no CPU to most of the own time, and the point where
// the equation meets the noisy difference is no better than a draw from
// that range. ok is false when no share is possible.
func shareOf(p *splitHost, pooled, se float64) (sharePosterior, bool) {
	se = math.Max(se, 1e-9*math.Abs(pooled))
	post := posterior(func(s float64) (float64, bool) {
		_, waits, ok := p.busyAt(func(i int, w float64) float64 { return s * p.ops[i].own / (1 + s*w) })
		if !ok {
			return 0, false // more CPU than the cores hold
		}
		grown := 0.0
		for i, o := range p.ops {
			if o.seen() {
				grown += o.rate * s * o.own * waits[i] / (1 + s*waits[i])
			}
		}
		z := (pooled - grown) / se
		return math.Exp(-z * z / 2), true
	})
	return post, !math.IsNaN(post.mean)
}

// posterior weighs shareGrid shares evenly spaced over 0 to 1 by the
// likelihood like gives each (false: impossible), a uniform prior, and
// returns the mean and central 95 %; the mean is NaN where no share has
// any weight.
func posterior(like func(s float64) (float64, bool)) sharePosterior {
	var weights [shareGrid]float64
	total := 0.0
	possible := 0
	for k := range shareGrid {
		if x, ok := like((float64(k) + 0.5) / shareGrid); ok {
			weights[k] = x
			total += x
			possible++
		}
	}
	if !(total > 0) {
		return sharePosterior{mean: math.NaN()}
	}
	post := sharePosterior{prior: 0.95 * float64(possible) / shareGrid}
	cum := 0.0
	for k, x := range weights {
		s := (float64(k) + 0.5) / shareGrid
		post.mean += s * x / total
		if cum < 0.025*total && cum+x >= 0.025*total {
			post.lo = float64(k) / shareGrid
		}
		if cum < 0.975*total && cum+x >= 0.975*total {
			post.hi = float64(k+1) / shareGrid
		}
		cum += x
	}
	return post
}

// boundSlack is how far the busy cores a split makes may exceed the bound
// the own times' occupancy sets (splitHost.bound), for the wait law's
// error and the noise of the rates: where the own times are all CPU the
// two agree to within 1 % on perfcast's own traces (busy 0.469 and 0.462
// against bounds of 0.468 and 0.458, TestOwnTimeSplitKeepsCPU).
const boundSlack = 0.05

// most is the most busy cores per replica a split may make on the host:
// loadCap of its cores, and no more than the own times' occupancy allows,
// with boundSlack.
func (p *splitHost) most() float64 {
	top := loadCap * float64(p.c)
	if p.bound > 0 {
		top = min(top, p.bound*(1+boundSlack))
	}
	return top
}

// busyRoot finds the busy cores a, between am and top, at which
// am + busy(a) = a, busy falling as a rises; ok is false when even at top
// the demands ask for more.
func busyRoot(am, top float64, busy func(a float64) float64) (float64, bool) {
	lo, hi := am, top
	if lo >= hi {
		return 0, false
	}
	if am+busy(hi) > hi {
		return 0, false
	}
	for range 60 {
		if m := (lo + hi) / 2; am+busy(m) > m {
			lo = m
		} else {
			hi = m
		}
	}
	return (lo + hi) / 2, true
}

// splitOwnTimes splits, on every host whose cores are known, the own times
// of operations whose CPU nothing measures into CPU demand and time off the
// CPU (see solveSplit), and gives the demands to the generator's estimates,
// as metrics would. It runs before cores and ownScales, which then find no
// own time to take as CPU on those hosts.
func (g *generator) splitOwnTimes() {
	span := g.s.span()
	if span <= 0 || g.s.Sampled > 0 {
		return
	}
	// The calm found on each model host's machines or replicas, by the
	// component for those with CPU slots (calmKey), at the highest level
	// its cores allow that was timed.
	type class struct {
		h    *model.Host
		comp string
	}
	// modelHost is the model host of the traces' host (a machine or a
	// replica), nil where none of its operations is modelled.
	modelHost := func(host string) *model.Host {
		if wh := g.s.Windows.hosts[host]; wh != nil {
			for _, id := range wh.ops {
				if op := g.s.ops[id]; op != nil && g.hostOf[op.component] != nil {
					return g.hostOf[op.component]
				}
			}
		}
		return nil
	}
	// occupied is, per model host, the core-seconds its own times could
	// have kept busy at most (occupancy.busy); leftOut, per model host and
	// component, how much lower that is with the component's own times
	// left out (occupancy.leftOut).
	occupied := map[*model.Host]float64{}
	leftOut := map[*model.Host]map[string]float64{}
	for _, host := range slices.Sorted(maps.Keys(g.s.occupied)) {
		// Beyond occupancyMax cores the record does not tell how many
		// competed: no bound.
		h := modelHost(host)
		if h == nil || h.CPU.Cores > occupancyMax {
			continue
		}
		o := g.s.occupied[host]
		occupied[h] += o.busy(h.CPU.Cores)
		if leftOut[h] == nil {
			leftOut[h] = map[string]float64{}
		}
		for _, key := range slices.Sorted(maps.Keys(o.parts)) {
			comp, _, _ := strings.Cut(key, "\x00") // a process's key: its component's
			leftOut[h][comp] += o.leftOut(key, h.CPU.Cores)
		}
	}
	calm := map[class]*calmStats{}
	for _, key := range slices.Sorted(maps.Keys(g.s.calm)) {
		host, comp := splitCalmKey(key)
		h := modelHost(host)
		if h == nil {
			continue
		}
		k := class{h, comp}
		if calm[k] == nil {
			calm[k] = newCalmStats()
		}
		calm[k].merge(g.s.calm[key])
	}
	// levelOf is the highest level the host's cores allow at which the
	// executions of class k found calm, and that calm.
	levelOf := func(k class) (int, *sample) {
		level := splitLevel(k.h.CPU.Cores)
		for level > 0 && (calm[k] == nil || calm[k][level].n == 0) {
			level--
		}
		if calm[k] == nil {
			return level, nil
		}
		return level, calm[k][level]
	}
	split := map[string]estimate.Result{}
	for _, h := range g.m.Hosts {
		if !g.configured[h] || h.CPU.Limited() {
			continue
		}
		p := &splitHost{amComp: map[string]float64{}, slots: map[string]int{}, c: h.CPU.Cores, scv: g.arrivalSCV(h), slice: defaultSlice,
			bound: occupied[h] / (span * float64(h.Replicas)), cut: map[string]float64{}}
		for comp, x := range leftOut[h] {
			p.cut[comp] = x / (span * float64(h.Replicas))
		}
		if h.CPU.Scheduling == model.RR && h.CPU.Quantum > 0 {
			p.slice = h.CPU.Quantum
		}
		level := 0
		perServer := float64(h.Replicas) * h.CPU.Speed * span
		for _, id := range slices.Sorted(maps.Keys(g.s.ops)) {
			op := g.s.ops[id]
			if g.hostOf[op.component] != h || op.count == 0 {
				continue
			}
			k := class{h: h}
			if slots := g.cpuSlots(op.component); slots > 0 {
				p.slots[op.component] = slots
				k.comp = op.component
				if !g.waitsForCores(h, op.component) {
					if p.free == nil {
						p.free = map[string]bool{}
					}
					p.free[op.component] = true
				}
			}
			d, own := g.cpuTotal(op)
			if !own {
				p.am += d / perServer
				p.amComp[op.component] += d / perServer
				continue
			}
			o := splitOp{id: id, comp: op.component, rate: float64(op.count) / span / float64(h.Replicas), own: op.self.mean(),
				ownSE: math.Sqrt(op.self.variance() / float64(op.self.n))}
			opLevel, found := levelOf(k)
			level = max(level, opLevel)
			o.within, o.withinSE, o.n = withinMean(op, found, opLevel)
			p.ops = append(p.ops, o)
		}
		ops := p.ops
		if len(ops) == 0 {
			continue
		}
		hs, ok := solveSplit(p)
		g.hostSCVs = nil // weighted by demands, which the split changes
		if !ok {
			active, anySeen := 0.0, false
			for _, o := range ops {
				active += o.rate * o.own
				anySeen = anySeen || o.seen()
			}
			if !anySeen {
				g.rep.evidencef("host %s: too few executions of %s whose CPU nothing measures waited for no core to split their own times (%.3g own times active at once on average, on %d cores): taken as CPU", h.Name, textout.Plural(len(ops), "operation"), active, h.CPU.Cores)
				continue
			}
			g.rep.evidencef("host %s: the own times of %s whose CPU nothing measures grow with the load as if they were all CPU, or too little shows to tell (a light load, few executions that waited for no core): taken as CPU", h.Name, textout.Plural(len(ops), "operation"))
			if p.boundCuts(1) {
				g.rep.warnf("host %s: its own times taken as CPU keep its cores busier than the %.3g at most that they allow (a thread runs only within its execution's own time), and no share of CPU within that could be found: its CPU demands are too high", h.Name, p.bound)
			}
			continue
		}
		var pooled, single []string
		for i, o := range ops {
			if hs.only != nil && !hs.only[i] {
				continue
			}
			single = append(single, o.id)
			d := hs.demand[i]
			if d <= 0 {
				// No growth at all: a trace of CPU, so that the rest
				// is read as time off it.
				d = math.Min(minLatency, o.own/10)
			}
			if d <= 0 {
				continue // no own time to split
			}
			split[o.id] = estimate.Result{CPU: d, OffCPU: math.Max(o.own-d, 0), OwnTime: o.own,
				Count: o.rate * span * float64(h.Replicas), Method: splitMethod, Identified: hs.own[i]}
			if o.n < soloMin || o.within <= 0 {
				pooled = append(pooled, o.id)
			}
		}
		x := &OwnTimeSplit{Host: h.Name, Others: soloLevels[level], Busy: hs.busy, Wait: hs.wait,
			Share: hs.share, Low: hs.lo, High: hs.hi, Identified: hs.identified, Bound: p.bound, Bounded: hs.bounded}
		if hs.only != nil {
			x.Only = single
		}
		for i, o := range ops {
			if hs.apart != nil && hs.apart[i] {
				x.Apart = append(x.Apart, o.id)
			}
		}
		for i, o := range ops {
			if hs.mean[i] {
				x.Loose = append(x.Loose, o.id)
			}
		}
		g.rep.OwnTimeSplits = append(g.rep.OwnTimeSplits, x)
		if hs.only != nil {
			g.rep.evidencef("host %s: the own times of %s whose CPU nothing measures grow with the load, pooled, as if they were all CPU, but %s by themselves grow less than all-CPU own times would even with their first %s free of waits: theirs split into CPU and time off the CPU (%.0f %% of their own time without waits is CPU), the others taken as CPU",
				h.Name, textout.Plural(len(ops), "operation"), textout.Abbreviate(single, 6), model.FormatDuration(p.slice), 100*hs.share)
			continue
		}
		if len(x.Apart) > 0 {
			g.rep.evidencef("host %s: its own times taken as CPU would keep its cores busier than the %.3g at most that they allow (a thread runs only within its execution's own time), and %s by themselves grow less than all-CPU own times would at the waits of the pooled split, even with their first %s free of waits: each split by its own growth, the others as below, with the CPU of these counted as measured and the own times of components all of whose operations are among them left out of the bound",
				h.Name, p.bound, textout.Abbreviate(x.Apart, 6), model.FormatDuration(p.slice))
		}
		how := "the pooled share told"
		if !hs.identified {
			how = "the pooled share not told by the data"
		}
		if !slices.ContainsFunc(ops, func(o splitOp) bool { return !p.free[o.comp] }) {
			how = "no burst here ever waits for a core, its CPU slots and the others' beside it being fewer than the cores, so the growth says nothing of the share: the mean of those the cores can hold"
		}
		if hs.bounded {
			how = fmt.Sprintf("held by the own times' occupancy: a thread runs only within its execution's own time, and the own times competing for the cores, on average over time, keep at most %.3g of them busy; the shares the growth allows would keep them busier, so the share is near the most that keeps within that, with a %.0f %% margin", p.bound, 100*boundSlack)
		}
		g.rep.evidencef("host %s: own times split into CPU and time off the CPU by how much longer they are than those of executions that had at most %d others beside them and so waited for no core (with %d cores at %.2f busy, processor sharing makes the CPU wait %.3g times the demand): %.0f %% of the own time without waits is CPU (pooled, 95 %%: %.0f to %.0f %%: %s)",
			h.Name, soloLevels[level], h.CPU.Cores, hs.busy, hs.wait, 100*hs.share, 100*hs.lo, 100*hs.hi, how)
		if len(pooled) > 0 {
			g.rep.evidencef("host %s: too few executions of %s waited for no core to split their own times by themselves: the share of CPU of the host's others taken", h.Name, textout.Abbreviate(pooled, 6))
		}
	}
	if len(split) == 0 {
		return
	}
	est := *g.est
	est.PerOp = maps.Clone(g.est.PerOp)
	if est.PerOp == nil {
		est.PerOp = map[string]estimate.Result{}
	}
	maps.Copy(est.PerOp, split)
	g.est = &est
	g.splitOps = slices.Sorted(maps.Keys(split))
}

// warnSplit says which operations' CPU the split estimated, and what it
// assumed.
func (g *generator) warnSplit() {
	if len(g.splitOps) == 0 {
		return
	}
	g.rep.warnf("no CPU time (perfcast.cpu.time) and no utilization metrics (--metrics) for %s; their CPU demand is the part of their own time that grows with the load as processor sharing on the given cores makes it grow, the rest time off the CPU: waits for locks or pools inside the spans count as CPU, and the CPU a process spends outside spans (garbage collection, runtime, exporters; 17 to 20 %% on the testbed) is not seen without --metrics: %s",
		textout.Plural(len(g.splitOps), "operation"), textout.Abbreviate(g.splitOps, 8))
	var loose []string
	for _, x := range g.rep.OwnTimeSplits {
		loose = append(loose, x.Loose...)
	}
	if len(loose) > 0 {
		g.rep.warnf("the growth of their own times does not tell what share is CPU for %s (too light a load for the waits to show, or too few executions that waited for no core): each takes the mean of the shares its growth allows, and predictions far from the observed load rest on it; give the CPU by --metrics or perfcast.cpu.time: %s",
			textout.Plural(len(loose), "operation"), textout.Abbreviate(loose, 8))
	}
}
