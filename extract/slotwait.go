package extract

import (
	"maps"
	"math"
	"slices"
)

// slotWin is one window of the traces of a component with CPU slots: the
// load of its slots and of the host's CPU beside it (busy servers), the
// component's executions, and its start (Unix nanoseconds; the window is
// the component's slot grid's width long, see slotGrid).
type slotWin struct {
	slots, host, execs float64
	start              int64
}

// slotQueue is a component's CPU slots as a queue: k slots on a host of
// the given cores and speed, bursts of the given mean (at speed 1) and
// squared coefficient of variation cs2, the component's requests arriving
// with squared cv scv and the host's work with hostSCV.
type slotQueue struct {
	k, cores         int
	mean, cs2, speed float64
	scv, hostSCV     float64
	// free is set where a burst never finds every core busy
	// (waitsForCores is false).
	free bool
	// parts is set where the slots are partitioned (a queue each) and
	// each slot has 1/k of the arrivals, drawn at random.
	parts bool
}

// slotQueue returns comp's slotQueue and its slots' mean load (see
// slotBursts); ok is false without slots or measured bursts.
func (g *generator) slotQueue(comp string) (q slotQueue, a float64, ok bool) {
	h := g.hostOf[comp]
	k := g.cpuSlots(comp)
	mean, cs2, a, ok := g.slotBursts(comp)
	if !ok || h == nil || k == 0 {
		return slotQueue{}, 0, false
	}
	return slotQueue{k: k, cores: h.CPU.Cores, mean: mean, cs2: cs2, speed: h.CPU.Speed,
		scv: g.componentSCV(comp), hostSCV: g.arrivalSCV(h), free: !g.waitsForCores(h, comp), parts: g.partitioned(comp)}, a, true
}

// cpuWait is the factor of a burst's wait for the host's CPU at load
// (busy cores) beside it: GI/M/c's for the host's arrivals, none where
// the slots beside the burst are fewer than the cores.
func (q slotQueue) cpuWait(load float64) float64 {
	if q.free {
		return 0
	}
	return burstyWaitFactor(q.cores, load, q.hostSCV)
}

// waitAt is the mean wait for one of the k slots in window w of a burst:
// a GI/G/k queue for the component's arrivals (burstyServiceWait). A burst holds
// its slot while it shares the CPU with the host's other work, so the
// slot's holding time is the burst stretched by its wait for the CPU, and
// so is the slots' load. Without the stretch a store sharing one core
// with a front end whose queries alternated between 20 and 65 % of the
// core kept a quarter of its waits as fixed delay, and the model came out
// 28 % slow at the lighter load. With Poisson's wait for bursty arrivals
// (cv 2), a Go service with one slot, half busy, kept 11.5 ms of a 2 ms
// delay's truth.
//
// Partitioned slots are k GI/G/1 queues, each with 1/k of the load and of
// the arrivals, whose squared cv a random split by 1/k draws towards
// Poisson's: p·ca² + 1 − p.
func (q slotQueue) waitAt(w slotWin) float64 {
	stretch := 1 + q.cpuWait(w.host)
	if q.parts {
		p := 1 / float64(q.k)
		return q.mean / q.speed * stretch * burstyServiceWait(1, w.slots*stretch*p, p*q.scv+1-p, q.cs2)
	}
	return q.mean / q.speed * stretch * burstyServiceWait(q.k, w.slots*stretch, q.scv, q.cs2)
}

// slotWindows groups the windows of the operations on comp's host into
// windows of at least loadWindow holding loadWindowExecutions of comp's
// executions on average, with the load of comp's slots (its executions'
// demand, metrics included, as meanDemand gives it) and of the host's CPU
// beside comp (as cpuWaitFactor counts it, scaled so that its mean over
// the traces is the one the metrics measured), each over the seconds the
// window's executions cover (see loadWin). Windows without comp's
// executions are left out; nil without CPU slots.
func (g *generator) slotWindows(comp string) []slotWin {
	if w, ok := g.slotWins[comp]; ok {
		return w
	}
	if g.slotWins == nil {
		g.slotWins = map[string][]slotWin{}
	}
	w, width := g.computeSlotWindows(comp)
	g.slotWins[comp] = w
	if g.slotWidths == nil {
		g.slotWidths = map[string]int64{}
	}
	g.slotWidths[comp] = width
	return w
}

// slotGrid returns comp's slot windows (slotWindows) and their width,
// nanoseconds.
func (g *generator) slotGrid(comp string) ([]slotWin, int64) {
	w := g.slotWindows(comp)
	return w, g.slotWidths[comp]
}

// computeSlotWindows is slotWindows, computed, with the windows' width
// (nanoseconds).
func (g *generator) computeSlotWindows(comp string) ([]slotWin, int64) {
	h := g.hostOf[comp]
	k := g.cpuSlots(comp)
	if h == nil || k == 0 {
		return nil, 0
	}
	cells := g.cellsOf(func(id string) bool {
		op := g.s.ops[id]
		return op != nil && g.hostOf[op.component] == h
	})
	// The grid of groupWindows over comp's own cells.
	var own []opCell
	for _, oc := range cells {
		if g.s.ops[oc.id].component == comp {
			own = append(own, oc)
		}
	}
	first, last, wd, ok := windowGrid(own, int64(g.s.activity().idle*1e9))
	if !ok {
		return nil, 0
	}
	ownShare := 1 - 1/float64(k)
	wins := map[int64]*slotWin{}
	cover := windowCover{}
	var hostBusy float64
	for _, oc := range cells {
		if oc.start < first || oc.start >= last {
			continue
		}
		key := floorDiv(oc.start-first, wd)
		w := wins[key]
		if w == nil {
			w = &slotWin{}
			wins[key] = w
		}
		cover.add(key, oc)
		w.start = first + key*wd
		d := oc.c.n * g.meanDemand(oc.id)
		if g.s.ops[oc.id].component != comp {
			w.host += d
			hostBusy += d
			continue
		}
		w.host += ownShare * d
		hostBusy += ownShare * d
		w.slots += d
		w.execs += oc.c.n
	}
	// The host's load beside comp as cpuWaitFactor takes it, metrics
	// included, spread over the windows in proportion to their busy time.
	perServer := float64(h.Replicas) * h.CPU.Speed
	hostScale := 0.0
	if span := g.s.span(); hostBusy > 0 && span > 0 {
		busy := g.busy[h]
		for _, id := range slices.Sorted(maps.Keys(g.s.ops)) {
			if op := g.s.ops[id]; op.component == comp {
				busy -= (1 - ownShare) * float64(op.count) * g.meanDemand(id) / span
			}
		}
		// The windows count what sampled traces stand for: their busy
		// time is over the covered time.
		hostScale = math.Max(busy, 0) * g.s.covered() / hostBusy / perServer
	}
	out := make([]slotWin, 0, len(wins))
	for _, key := range slices.Sorted(maps.Keys(wins)) {
		w := wins[key]
		if w.execs == 0 {
			continue
		}
		seconds := cover.seconds(key, wd)
		w.slots /= seconds * perServer
		w.host *= hostScale / seconds
		out = append(out, *w)
	}
	return out, wd
}
