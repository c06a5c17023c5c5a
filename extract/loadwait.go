package extract

import (
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/perfcast/perfcast/internal/textout"
	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/queueing"
)

// The waits the model reproduces (for the CPU, for a CPU slot) are taken
// out of the time operations spend off the CPU, at the load the traces
// saw. Traces seldom see one load: a load test's steps, a day's peaks. The
// mean wait per execution is then the mean, over windows of time, of the
// wait at each window's load, weighted by the window's executions. That is
// more than the wait at the mean load, since the wait grows faster than
// the load; taking the mean load would leave the difference in the
// operations' fixed delays, which do not shrink at lower loads.
const (
	// loadWindow is the narrowest window the load is averaged over,
	// nanoseconds.
	loadWindow = int64(5e9)
	// loadWindowExecutions is the executions a window holds on average at
	// least (it is widened until it does): the load of a window with few
	// executions is a noisy estimate, and the noise alone would raise the
	// mean wait.
	loadWindowExecutions = 200
	// loadCap caps a window's load, a fraction of the servers: a window
	// at or beyond saturation has no steady-state wait.
	loadCap = 0.95
)

// loadWin is one window's expected busy time (executions times mean CPU
// demand, seconds), executions, their own time off the CPU (own time less
// the spans' CPU time where every span carries it, seconds), and the
// seconds of the window its executions cover: from the start of its first
// cell with executions to the end of its last. A window at the edge of a
// load test, or beside a pause, is only partly covered, and its load is
// its busy time over what it covers, not over its width.
type loadWin struct{ busy, n, off, seconds float64 }

// opCell is one operation's cell of a window host, with its start
// (Unix nanoseconds) and that host's window width.
type opCell struct {
	id           string
	start, width int64
	c            cell
}

// cellsOf returns the cells with executions of the operations sel selects
// (by id), host by host in sorted order and in time order within a host.
func (g *generator) cellsOf(sel func(id string) bool) []opCell {
	if g.s.Windows == nil {
		return nil
	}
	var out []opCell
	for _, host := range g.s.Windows.Hosts() {
		wh := g.s.Windows.hosts[host]
		if !slices.ContainsFunc(wh.ops, sel) {
			continue
		}
		for _, idx := range slices.Sorted(maps.Keys(wh.cells)) {
			for op, c := range wh.cells[idx] {
				if c.n > 0 && sel(wh.ops[op]) {
					out = append(out, opCell{id: wh.ops[op], start: idx * wh.width, width: wh.width, c: c})
				}
			}
		}
	}
	return out
}

// loadWindows returns, in time order, the windows of the executions of the
// operations sel selects (by id), with their width in seconds; nil when
// the traces hold fewer than two such windows. demand gives an operation's
// mean CPU time per execution.
func (g *generator) loadWindows(sel func(id string) bool, demand func(id string) float64) ([]loadWin, float64) {
	return groupWindows(g.cellsOf(sel), demand, int64(g.s.activity().idle*1e9))
}

// windowGrid is the grid groupWindows puts cells on: the first cell's
// start, the end of the last one, and a width (nanoseconds) of at least
// loadWindow, a multiple of the cells' own, that holds
// loadWindowExecutions executions on average over the time the cells
// span less idle (nanoseconds of pauses in the traces); ok is false
// without executions.
func windowGrid(cells []opCell, idle int64) (first, last, w int64, ok bool) {
	width := windowWidth
	total := 0.0
	first, last = int64(math.MaxInt64), int64(math.MinInt64)
	for _, oc := range cells {
		width = max(width, oc.width)
		total += oc.c.n
		first, last = min(first, oc.start), max(last, oc.start+oc.width)
	}
	if total == 0 || last <= first {
		return 0, 0, 0, false
	}
	active := last - first
	if idle < active {
		active -= idle
	}
	w = max(loadWindow, int64(math.Ceil(loadWindowExecutions/total*float64(active))))
	return first, last, (w + width - 1) / width * width, true
}

// windowCover records, per window of a grid, the time from the start of its
// first cell to the end of its last: the part of the window its
// executions cover.
type windowCover map[int64][2]int64

// add counts cell oc in window k.
func (c windowCover) add(k int64, oc opCell) {
	from, to := oc.start, oc.start+oc.width
	if old, ok := c[k]; ok {
		from, to = min(from, old[0]), max(to, old[1])
	}
	c[k] = [2]int64{from, to}
}

// seconds is the time window k covers, at most the grid's width w.
func (c windowCover) seconds(k, w int64) float64 {
	return float64(min(c[k][1]-c[k][0], w)) / 1e9
}

// groupWindows groups cells into windows on windowGrid's grid and returns
// them in time order with their width in seconds; nil when fewer than two
// windows fit.
func groupWindows(cells []opCell, demand func(id string) float64, idle int64) ([]loadWin, float64) {
	first, last, w, ok := windowGrid(cells, idle)
	if !ok || (last-first)/w < 2 {
		return nil, 0
	}
	wins := map[int64]loadWin{}
	cover := windowCover{}
	for _, oc := range cells {
		k := floorDiv(oc.start-first, w)
		lw := wins[k]
		lw.busy += oc.c.n * demand(oc.id)
		lw.n += oc.c.n
		lw.off += oc.c.own
		if oc.c.cpuN == oc.c.n {
			lw.off -= oc.c.cpu
		}
		wins[k] = lw
		cover.add(k, oc)
	}
	out := make([]loadWin, 0, len(wins))
	for _, k := range slices.Sorted(maps.Keys(wins)) {
		lw := wins[k]
		lw.seconds = cover.seconds(k, w)
		out = append(out, lw)
	}
	return out, float64(w) / 1e9
}

// meanDemand is the mean CPU time per execution of operation id as the
// model will have it: measured, estimated, or its own time scaled (see
// ownScale), and its component's CPU outside spans.
func (g *generator) meanDemand(id string) float64 {
	if x := g.externals[id]; x != nil {
		return x.r.CPU
	}
	op := g.s.ops[id]
	if op == nil || op.count == 0 {
		return 0
	}
	d, _ := g.cpuTotal(op)
	return d/float64(op.count)*g.ownScale(op) + g.unattributed[op.component].of(op.cpu.mean())
}

// meanOverWindows is the mean of f(a) over the executions in wins, a being
// an execution's window's load: its busy time over the seconds it covers
// (its width where that is not known), times scale, with the windows'
// loads and executions drawn towards their means by what chance alone
// spreads them (see lessChance, with the arrivals' squared cv scv). It is
// f(mean load) when wins is nil.
func meanOverWindows(wins []loadWin, width, scale, mean, scv float64, f func(a float64) float64) float64 {
	if len(wins) == 0 {
		return f(mean)
	}
	ws := make([]window, len(wins))
	for i, w := range wins {
		seconds := width
		if w.seconds > 0 {
			seconds = w.seconds
		}
		ws[i] = window{load: w.busy / seconds * scale, n: w.n, seconds: seconds}
	}
	lessChance(ws, scv)
	sum, n := 0.0, 0.0
	for _, w := range ws {
		sum += w.n * f(w.load)
		n += w.n
	}
	return sum / n
}

// window is one window's load, executions and seconds, as lessChance takes
// them.
type window struct{ load, n, seconds float64 }

// lessChance draws windows' loads, and their executions per second,
// towards their means over time by one factor, so that the loads'
// variance is what is left beyond what chance gives them: a renewal
// stream of squared cv scv brings a window of n executions a count of
// variance about scv·n, and so its load a relative variance of scv/n.
// Averaged over the windows, waits then see the load's changes (steps,
// ramps, cycles) but not the arrivals' burstiness a second time, since
// the waits' formulas count it already; nor do the executions, more of
// which fall by chance in the windows that chance made busier. Averaged
// over the windows as measured, a lock 41 % busy with arrivals of cv 1.5
// had 12.3 ms of wait taken out where 12.0 ms were waited. A request that
// runs several of the windows' executions makes their counts vary more
// than that, which the draw does not count, so it leaves some of chance's
// spread in.
func lessChance(ws []window, scv float64) {
	var t, sa, sn, noise float64
	for _, w := range ws {
		t += w.seconds
		sa += w.seconds * w.load
		sn += w.n
		if w.n > 0 {
			noise += w.seconds / w.n
		}
	}
	if !(scv > 0) || !(t > 0) || len(ws) < 2 {
		return
	}
	mean, rate := sa/t, sn/t
	v := 0.0
	for _, w := range ws {
		v += w.seconds * (w.load - mean) * (w.load - mean)
	}
	v /= t
	noise *= scv * mean * mean / t
	if !(v > 0) || !(noise > 0) {
		return
	}
	k := math.Sqrt(math.Max(0, 1-noise/v))
	for i, w := range ws {
		ws[i].load = mean + (w.load-mean)*k
		ws[i].n = w.seconds * (rate + (w.n/w.seconds-rate)*k)
	}
}

// cpuWaitKey keys cpuWaitFactor's memo: a host, and a component with CPU
// slots ("" for the others).
type cpuWaitKey struct {
	host *model.Host
	comp string
}

// cpuWaitFactor is, for a CPU burst of component comp, the mean over
// executions of the M/M/c wait factor C(c, a)/(c − a) at their windows'
// loads: a burst of CPU demand d waits d times it for a
// processor-sharing CPU. The load a burst shares the CPU with is its
// host's, less what its own component's CPU slots keep from it: with k
// slots a burst has at most k − 1 bursts of its component beside it on the
// CPU, so that component's load counts (k − 1)/k, not at all with one slot
// (a Go service with GOMAXPROCS 1 runs one request's CPU at a time); where
// the slots beside it are fewer than the cores, it waits for none
// (waitsForCores). A window's load is its expected busy time, scaled so that the windows'
// mean is that load over the traces, which counts work no window shows,
// such as the CPU outside spans that metrics give.
func (g *generator) cpuWaitFactor(comp string) float64 {
	h := g.hostOf[comp]
	if h == nil {
		return 0
	}
	k := g.cpuSlots(comp)
	if k == 0 {
		// A pool of threads (inferred, per replica) bounds the
		// component's bursts beside one of its own as slots do: two
		// threads on one core, 44 % busy, each running 4 ms of CPU and
		// then waiting 4 ms, were stretched 1.6 ms; counting the whole
		// host's load took 3.1 ms out of their own time, and the model
		// came out 21 % fast (TestThreadsOnOneCoreRoundTrip).
		k = g.threads[comp]
	}
	return g.waitFactorOn(h, comp, k)
}

// waitFactorOn is cpuWaitFactor of component comp on host h with k CPU
// slots (0: none; comp "" for work of no traced component).
func (g *generator) waitFactorOn(h *model.Host, comp string, k int) float64 {
	own := 1.0
	key := cpuWaitKey{host: h}
	if k > 0 {
		own = 1 - 1/float64(k)
		key.comp = comp
	}
	if f, ok := g.cpuWaits[key]; ok {
		return f
	}
	if g.cpuWaits == nil {
		g.cpuWaits = map[cpuWaitKey]float64{}
	}
	if key.comp != "" && !g.waitsForCores(h, comp) {
		f := g.throttleWaitFactor(h)
		g.cpuWaits[key] = f
		return f
	}
	weight := func(id string) float64 {
		if op := g.s.ops[id]; op != nil && op.component == key.comp {
			return own
		}
		return 1
	}
	span := g.s.span()
	busy := g.busy[h]
	if key.comp != "" && span > 0 {
		for _, id := range slices.Sorted(maps.Keys(g.s.ops)) {
			if op := g.s.ops[id]; op.component == comp {
				busy -= (1 - own) * float64(op.count) * g.meanDemand(id) / span
			}
		}
	}
	perServer := float64(h.Replicas) * h.CPU.Speed
	c := h.CPU.Cores
	mean := busy / perServer
	f := 0.0
	if mean > 0 && mean < float64(c) { // else no steady state: no wait taken out
		on := func(id string) bool {
			if x := g.externals[id]; x != nil {
				return x.host == h
			}
			op := g.s.ops[id]
			return op != nil && g.hostOf[op.component] == h
		}
		wins, width := g.loadWindows(on, func(id string) float64 { return g.meanDemand(id) * weight(id) })
		scale := 0.0
		if b := sumBusy(wins); b > 0 && span > 0 {
			scale = busy * span / b / perServer
		}
		if scale <= 0 {
			wins = nil
		}
		// Within a window, arrivals burstier than Poisson's wait longer:
		// GI/M/c's wait at the window's load, for the host's arrivals.
		scv := g.arrivalSCV(h)
		f = meanOverWindows(wins, width, scale, mean, scv, func(a float64) float64 {
			return burstyWaitFactor(c, a, scv)
		})
	}
	f += g.throttleWaitFactor(h)
	g.cpuWaits[key] = f
	return f
}

// waitsForCores reports whether a CPU burst of component comp, which has
// CPU slots, can find every core of its host h busy. Where every
// component with work on h has slots, at most its own slots less one and
// the others' slots run beside the burst; when they are fewer than the
// cores, processor sharing gives each burst a core of its own and the
// burst never waits (a Go service alone on its machine, GOMAXPROCS at
// most its cores). A component without slots, or an external system with
// CPU on h, can put any number of bursts there.
func (g *generator) waitsForCores(h *model.Host, comp string) bool {
	if w, ok := g.coreWaits[comp]; ok {
		return w
	}
	if g.coreWaits == nil {
		g.coreWaits = map[string]bool{}
	}
	w := g.computeWaitsForCores(h, comp)
	g.coreWaits[comp] = w
	return w
}

// computeWaitsForCores is waitsForCores, computed. The answer depends on
// no order, so the maps are walked as they come.
func (g *generator) computeWaitsForCores(h *model.Host, comp string) bool {
	k := g.cpuSlots(comp)
	if k == 0 {
		return true
	}
	for _, x := range g.externals {
		if x.host == h && x.r.CPU > 0 {
			return true
		}
	}
	beside := k - 1
	seen := map[string]bool{comp: true}
	for _, op := range g.s.ops {
		if op.count == 0 || seen[op.component] || g.hostOf[op.component] != h {
			continue
		}
		seen[op.component] = true
		j := g.cpuSlots(op.component)
		if j == 0 {
			return true
		}
		beside += j
	}
	return beside >= h.CPU.Cores
}

// entryCV is the interarrival cv of the requests entering at operation
// id (arrivalCV over the gaps of its traces' requests), and the gaps it
// was measured over.
func (g *generator) entryCV(id string) (float64, int) {
	if c, ok := g.entryCVs[id]; ok {
		return c[0], int(c[1])
	}
	if g.entryCVs == nil {
		g.entryCVs = map[string][2]float64{}
	}
	cv, gaps := arrivalCV(g.s.entries[id], g.s.activity())
	g.entryCVs[id] = [2]float64{cv, float64(gaps)}
	return cv, gaps
}

// arrivalSCV is the squared interarrival cv of the work that reaches host
// h's CPU: measured on the starts of its server spans, replica by replica
// (startSCV), else from the workloads' arrivals (workloadSCV).
func (g *generator) arrivalSCV(h *model.Host) float64 {
	return g.arrivalSCVOf(scvKey{host: h})
}

// componentSCV is arrivalSCV for the work of component comp alone, as its
// CPU slots see it.
func (g *generator) componentSCV(comp string) float64 {
	return g.arrivalSCVOf(scvKey{host: g.hostOf[comp], comp: comp})
}

// addExternalWeights adds to weight, by class, the CPU that the calls to
// external systems on host h bring to it; the callers' variants tell the
// classes.
func (g *generator) addExternalWeights(h *model.Host, weight map[string]float64) {
	g.eachExternalCall(func(_ *opStats, class string, v *variant, x string) {
		if ex := g.externals[x]; ex != nil && ex.host == h {
			weight[class] += float64(v.count) * ex.r.CPU
		}
	})
}

// eachExternalCall calls f for each external call (as externalCalls
// names it) in each variant of each operation, in a fixed order.
func (g *generator) eachExternalCall(f func(op *opStats, class string, v *variant, target string)) {
	for _, id := range slices.Sorted(maps.Keys(g.s.ops)) {
		op := g.s.ops[id]
		for _, class := range slices.Sorted(maps.Keys(op.variants)) {
			for _, sig := range slices.Sorted(maps.Keys(op.variants[class])) {
				v := op.variants[class][sig]
				for _, x := range g.externalCalls(v.elems) {
					f(op, class, v, x)
				}
			}
		}
	}
}

// mergedSCV is the squared cv of the arrivals that the workloads with a
// positive weight bring, measured on their arrival samples merged, each
// workload's requests kept with the probability reach gives (the most
// executions per request of one operation there, capped at 1; a class
// reach does not name is kept whole): for several workloads, or for one of
// whose requests only some come. A merge of streams is less bursty than
// each (two gamma streams of squared cv 2.25, at 50 and 25 a second, merge
// into gaps of squared cv 2.01, and a server 40 % busy behind them waits
// 1.30 mean services, where GI/M/1 at 2.25 waits 1.42), and so are the
// requests a branch takes at random (p·c² + 1 − p). ok is false for one
// workload that comes whole, where sessions or consumers of messages are
// among them (whose arrivals the model makes otherwise), where traces were
// sampled, or with too few gaps.
func (g *generator) mergedSCV(weight, reach map[string]float64) (float64, bool) {
	inSessions := g.sessionEntries()
	var streams []*arrivalSample
	var keep []float64
	for _, class := range slices.Sorted(maps.Keys(weight)) {
		e := g.s.entries[class]
		if weight[class] <= 0 || e == nil {
			continue
		}
		if inSessions[class] || g.sentConsumers[class] || float64(e.count) < e.weight || e.arrivals == nil {
			return 0, false
		}
		p := 1.0
		if r, ok := reach[class]; ok {
			p = min(r, 1)
		}
		streams = append(streams, e.arrivals)
		keep = append(keep, p)
	}
	if len(streams) == 0 || len(streams) == 1 && keep[0] >= 0.95 {
		return 0, false
	}
	cv, gaps := sampleCV(mergedArrivals(streams, keep), g.s.activity())
	if gaps < arrivalMinGaps {
		return 0, false
	}
	return cv * cv, true
}

// sumWeights is the sum of a map's values.
func sumWeights(m map[string]float64) float64 {
	s := 0.0
	for _, k := range slices.Sorted(maps.Keys(m)) {
		s += m[k]
	}
	return s
}

// scvKey keys arrivalSCVOf's memo: a host, and a component on it ("" for
// all its work).
type scvKey struct {
	host *model.Host
	comp string
}

// arrivalSCVOf is arrivalSCV of the work on key's host, or of key's
// component alone.
func (g *generator) arrivalSCVOf(key scvKey) float64 {
	if v, ok := g.hostSCVs[key]; ok {
		return v
	}
	if g.hostSCVs == nil {
		g.hostSCVs = map[scvKey]float64{}
	}
	v := g.workloadSCV(key)
	switch {
	case key.comp == "":
		// The host's CPU: the starts of its spans, measured per replica.
		if m, ok := g.startSCV(key.host, "", true); ok {
			v = m
		}
	case key.host != nil && key.host.Replicas > 1:
		// A component's slots or locks, per replica: the workloads'
		// arrivals split as the balancer split the component's span
		// starts (which come after a slot's wait, so are smoother than
		// the slot's arrivals, but are split alike).
		// The split scales the squared cv's excess over Poisson's, as
		// keeping arrivals at random with probability p does (p·c² +
		// 1 − p).
		per, ok1 := g.startSCV(key.host, key.comp, true)
		whole, ok2 := g.startSCV(key.host, key.comp, false)
		switch {
		case !ok1 || !ok2:
		case math.Abs(whole-1) < 0.01:
			v = per
		default:
			v = math.Max(1+(v-1)*(per-1)/(whole-1), 0.04)
		}
	}
	g.hostSCVs[key] = v
	return v
}

// startSCV is the squared cv of the gaps between the starts of the server
// spans on host h (of component comp alone, when not ""): measured per
// replica and averaged over the replicas, weighted by their gaps, or over
// all replicas merged when perReplica is false. ok is false where traces
// were sampled (the kept spans' gaps are not the system's) or too few gaps
// were seen.
func (g *generator) startSCV(h *model.Host, comp string, perReplica bool) (float64, bool) {
	scv, gaps := g.startGaps(h, comp, perReplica)
	return scv, gaps > 0
}

// startGaps is startSCV with the number of gaps it rests on (0 where it
// does not say).
func (g *generator) startGaps(h *model.Host, comp string, perReplica bool) (float64, float64) {
	if h == nil || g.s.Sampled > 0 || g.s.RateLimited > 0 {
		return 0, 0
	}
	groups := map[string][]*arrivalSample{}
	for _, k := range slices.Sorted(maps.Keys(g.s.starts)) {
		parts := strings.Split(k, "\x00")
		if len(parts) != 4 || g.hostOf[parts[1]] != h || comp != "" && parts[1] != comp {
			continue
		}
		group := ""
		if perReplica && h.Replicas > 1 {
			group = parts[3] // the instance
			if parts[2] != "" {
				group = g.cfg.machineOf(parts[2])
			}
		}
		groups[group] = append(groups[group], g.s.starts[k])
	}
	var sum, n float64
	for _, group := range slices.Sorted(maps.Keys(groups)) {
		streams := groups[group]
		merged := streams[0]
		if len(streams) > 1 {
			merged = mergedArrivals(streams, slices.Repeat([]float64{1}, len(streams)))
		}
		cv, gaps := sampleCV(merged, g.s.activity())
		if gaps < arrivalMinGaps {
			continue
		}
		sum += float64(gaps) * cv * cv
		n += float64(gaps)
	}
	if n == 0 {
		return 0, 0
	}
	return sum / n, n
}

// workloadSCV is arrivalSCVOf from the workloads' arrivals: merged where
// several reach key's scope or some of one's requests do (mergedSCV),
// else each open workload's own cv, corrected where its traces were
// sampled (see thinnedCV), weighted by the CPU its requests bring (by
// their executions where no CPU is known); 1 (as Poisson's) for requests
// of sessions and where nothing is known.
func (g *generator) workloadSCV(key scvKey) float64 {
	h := key.host
	inSessions := g.sessionEntries()
	weight := map[string]float64{} // by class
	counts := map[string]float64{} // executions by class, where no CPU is known
	reach := map[string]float64{}  // the most executions per request of one operation, by class
	for _, id := range slices.Sorted(maps.Keys(g.s.ops)) {
		op := g.s.ops[id]
		if g.hostOf[op.component] != h || key.comp != "" && op.component != key.comp {
			continue
		}
		d := g.meanDemand(id)
		for _, class := range slices.Sorted(maps.Keys(op.variants)) {
			n := 0.0
			for _, sig := range slices.Sorted(maps.Keys(op.variants[class])) {
				n += float64(op.variants[class][sig].count)
			}
			weight[class] += n * d
			counts[class] += n
			if e := g.s.entries[class]; e != nil && e.count > 0 {
				reach[class] = max(reach[class], n/float64(e.count))
			}
		}
	}
	if key.comp == "" {
		g.addExternalWeights(h, weight)
	}
	if sumWeights(weight) <= 0 {
		weight = counts
	}
	if v, ok := g.mergedSCV(weight, reach); ok {
		return v
	}
	var sum, total float64
	for _, class := range slices.Sorted(maps.Keys(weight)) {
		w := weight[class]
		e := g.s.entries[class]
		if w <= 0 || e == nil {
			continue
		}
		scv := 1.0
		if !inSessions[class] && !g.sentConsumers[class] {
			cv, gaps := g.entryCV(class)
			if p := float64(e.count) / e.weight; p < 1 && cv != 1 {
				if c, ok := thinnedCV(cv, p, gaps); ok {
					cv = c
				}
			}
			scv = cv * cv
		}
		sum += w * scv
		total += w
	}
	if total > 0 {
		return sum / total
	}
	return 1
}

// externalCalls lists the external calls among elems, parallel branches
// included, as the operations their systems would be (externalTargetID).
func (g *generator) externalCalls(elems []*elem) []string {
	var out []string
	for _, e := range elems {
		if e.kind == elemExternal {
			out = append(out, externalTargetID(e.target))
		}
		for _, l := range e.lists {
			out = append(out, g.externalCalls(l)...)
		}
	}
	return out
}

// waitFactor is C(c, a)/(c − a), the mean wait of an M/M/c queue in mean
// service times, at a window's load a (busy servers), capped at loadCap of
// the servers; 0 without load.
func waitFactor(c int, a float64) float64 {
	if a <= 0 || c <= 0 {
		return 0
	}
	a = min(a, loadCap*float64(c))
	return queueing.MMcWait(c, a)
}

// sumBusy is the busy time of all windows.
func sumBusy(wins []loadWin) float64 {
	s := 0.0
	for _, w := range wins {
		s += w.busy
	}
	return s
}

// Spells: windows whose executions spent far longer in the operation
// itself than in its median window, a spellFactor times or more, and hold
// spellShare or more of its time off the CPU.
const (
	spellFactor = 10
	spellShare  = 0.25
)

// spell is what spellOf finds for one operation: the windows whose
// executions spent spellFactor times the median window's time off the CPU
// or more, when they hold spellShare or more of it.
type spell struct {
	// off and n are the spell windows' time off the CPU and executions,
	// total and all those of every window; windows is the number of spell
	// windows, width their length in seconds, median the median window's
	// time off the CPU per execution.
	off, n, total, all float64
	windows            int
	width, median      float64
}

// keep is the factor that takes the spell out of the mean time off the
// CPU per execution: the other windows' mean over the mean of all.
func (s spell) keep() float64 {
	if s.all <= s.n || s.total <= 0 {
		return 1
	}
	return (s.total - s.off) / (s.all - s.n) / (s.total / s.all)
}

// spellOf returns operation id's spell, false when it has none (or too
// few windows to tell). It is memoized.
func (g *generator) spellOf(id string) (spell, bool) {
	if g.spells == nil {
		g.spells = map[string]*spell{}
		byOp := map[string][]opCell{}
		idle := int64(g.s.activity().idle * 1e9)
		for _, oc := range g.cellsOf(func(string) bool { return true }) {
			byOp[oc.id] = append(byOp[oc.id], oc)
		}
		for op, cells := range byOp {
			g.spells[op] = findSpell(cells, idle)
		}
	}
	s := g.spells[id]
	if s == nil {
		return spell{}, false
	}
	return *s, true
}

// findSpell finds the spell of one operation's cells, nil without one.
func findSpell(cells []opCell, idle int64) *spell {
	wins, width := groupWindows(cells, func(string) float64 { return 0 }, idle)
	if len(wins) < 4 {
		return nil
	}
	s := &spell{width: width}
	for _, w := range wins {
		s.total, s.all = s.total+w.off, s.all+w.n
	}
	if s.total <= 0 || s.all <= 0 {
		return nil
	}
	x, wt := make([]float64, len(wins)), make([]float64, len(wins))
	for k, w := range wins {
		x[k], wt[k] = w.off/w.n, w.n
	}
	s.median = weightedQuantile(x, wt, 0.5)
	limit := spellFactor * max(s.median, minLatency)
	for _, w := range wins {
		if w.off/w.n > limit {
			s.off, s.n, s.windows = s.off+w.off, s.n+w.n, s.windows+1
		}
	}
	if s.off < spellShare*s.total {
		return nil
	}
	return s
}

// warnSpells warns about operations whose time off the CPU comes for a
// large part from a short spell: queueing for something the model does
// not have (a pool, a lock inside the span) during an overload, or a
// stalled machine. The fixed delay leaves the spell out, fitted at no
// load or as the mean of the other windows (see spellOf).
func (g *generator) warnSpells() {
	for _, id := range slices.Sorted(maps.Keys(g.s.ops)) {
		s, ok := g.spellOf(id)
		if !ok {
			continue
		}
		held := "which its fixed delay, the mean of the other windows, leaves out (the model has no such spell); extract from a steady period"
		if g.fittedDelays[id] {
			held = "which its fixed delay, fitted at no load, leaves out (the model has no such spell)"
		}
		g.rep.warnf("%s: %.0f %% of its time off the CPU falls in %d window(s) of %.0f s holding %.1f %% of its executions, more than %d times the median window's %s per execution: a spell of overload or a stall, %s",
			id, 100*s.off/s.total, s.windows, s.width, 100*s.n/s.all, spellFactor, textout.Duration(s.median), held)
	}
}
