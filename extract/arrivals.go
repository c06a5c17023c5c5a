package extract

import (
	"maps"
	"math"
	"slices"
)

// Burstiness of arrivals: the model's open workloads are renewal processes
// whose gaps have a coefficient of variation cv (1 for Poisson).
const (
	// arrivalWindow is the number of gaps around each gap whose mean it is
	// divided by.
	arrivalWindow = 40
	// arrivalMinGaps is the fewest rescaled gaps from which a cv other
	// than 1 is estimated.
	arrivalMinGaps = 200
)

// Bounds of the arrival times kept to measure burstiness (see arrivalSample).
const (
	// arrivalBlock is the length of the blocks of time sampled whole, in
	// nanoseconds: five minutes.
	arrivalBlock = 300e9
	// arrivalBlocks is the number of blocks kept per workload.
	arrivalBlocks = 8
	// arrivalBlockCap is the number of arrivals kept per block, the
	// earliest. With 4 096 the cv of gamma gaps of cv 2 scattered by
	// 0.055 between data sets (12 of 40 000 arrivals at 440/s) and came
	// out 1.6 % low; with 16 384 by 0.026 and 0.9 % low. The wait for the
	// CPU taken out of the time off it follows the cv closely.
	arrivalBlockCap = 16384
)

// arrivalSample keeps the arrival times of a bounded sample of a workload's
// time: the arrivalBlocks blocks of arrivalBlock whose indices hash lowest,
// each with its earliest arrivalBlockCap arrivals. That is at most 1 MiB
// per workload however long the traces run (twice that while folding, since
// a block is cut back only when it holds twice its share). Which blocks and
// which arrivals it keeps depends only on the set of arrival times, not on
// the order they came in, so samples of disjoint traces merge into the
// sample of their union; and since blocks are chosen by a hash, not by
// their time, the sample spreads over the traces' whole time.
type arrivalSample struct {
	// maxBlocks and blockCap bound the sample: arrivalBlocks and
	// arrivalBlockCap for a workload's arrivals (newArrivalSample), less
	// for the starts on each replica (newStartSample).
	maxBlocks, blockCap int
	blocks              map[int64]*arrivalTimes
	// worst is the kept block with the highest hash, worstHash its hash:
	// once maxBlocks are kept, an arrival in a block that does not
	// hash below it is turned away without a look at the others.
	worst     int64
	worstHash uint64
}

// arrivalTimes is one block's kept arrival times.
type arrivalTimes struct {
	hash uint64
	// times are the arrivals, unsorted; compact keeps the earliest
	// blockCap once there are twice as many.
	times []int64
	// last is, once the block has been cut to blockCap, the latest
	// arrival it kept: later ones cannot be among the earliest.
	last int64
	cut  bool
}

func newArrivalSample() *arrivalSample {
	return &arrivalSample{maxBlocks: arrivalBlocks, blockCap: arrivalBlockCap, blocks: map[int64]*arrivalTimes{}}
}

// Bounds of the server spans' start times kept per component replica
// (newStartSample): 256 KiB at most, since a system has many replicas.
const (
	startBlocks   = 4
	startBlockCap = 8192
)

// newStartSample returns a sample of the start times of one component
// replica's server spans: the arrivals its CPU sees.
func newStartSample() *arrivalSample {
	return &arrivalSample{maxBlocks: startBlocks, blockCap: startBlockCap, blocks: map[int64]*arrivalTimes{}}
}

// blockHash mixes a block's index into a well-spread 64-bit value
// (SplitMix64's finalizer).
func blockHash(b int64) uint64 {
	z := uint64(b) + 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// hashBefore orders blocks by hash, then by index.
func hashBefore(b1 int64, h1 uint64, b2 int64, h2 uint64) bool {
	return h1 < h2 || h1 == h2 && b1 < b2
}

// add records one arrival at t (Unix nanoseconds).
func (a *arrivalSample) add(t int64) {
	b := floorDiv(t, arrivalBlock)
	blk := a.block(b)
	if blk == nil {
		return
	}
	if blk.cut && t >= blk.last {
		return
	}
	blk.times = append(blk.times, t)
	if len(blk.times) >= 2*a.blockCap {
		blk.compact(a.blockCap)
	}
}

// block returns block b's times, making room for it when it is among the
// lowest hashes, or nil when it is not kept.
func (a *arrivalSample) block(b int64) *arrivalTimes {
	if blk := a.blocks[b]; blk != nil {
		return blk
	}
	h := blockHash(b)
	full := len(a.blocks) >= a.maxBlocks
	if full && !hashBefore(b, h, a.worst, a.worstHash) {
		return nil
	}
	if full {
		delete(a.blocks, a.worst)
	}
	blk := &arrivalTimes{hash: h}
	a.blocks[b] = blk
	// The worst of the kept blocks, looked for only when the set changes.
	first := true
	for i, k := range a.blocks {
		if first || hashBefore(a.worst, a.worstHash, i, k.hash) {
			a.worst, a.worstHash, first = i, k.hash, false
		}
	}
	return blk
}

// compact keeps the block's earliest capacity arrivals.
func (blk *arrivalTimes) compact(capacity int) {
	if len(blk.times) <= capacity {
		return
	}
	slices.Sort(blk.times)
	blk.times = blk.times[:capacity]
	blk.last = blk.times[capacity-1]
	blk.cut = true
}

// sorted returns the block's earliest capacity arrivals in time order,
// leaving the block as it is.
func (blk *arrivalTimes) sorted(capacity int) []int64 {
	t := slices.Clone(blk.times)
	slices.Sort(t)
	return t[:min(len(t), capacity)]
}

// merge adds the arrivals of o, a sample of disjoint traces.
func (a *arrivalSample) merge(o *arrivalSample) {
	for _, ob := range o.blocks {
		for _, t := range ob.times {
			a.add(t)
		}
	}
}

// runs returns the kept arrivals in order, as runs of consecutive
// arrivals: one per block, cut at idle stretches.
func (a *arrivalSample) runs(idle *activity) [][]int64 {
	var out [][]int64
	for _, b := range slices.Sorted(maps.Keys(a.blocks)) {
		t := a.blocks[b].sorted(a.blockCap)
		for lo := 0; lo < len(t); {
			hi := lo + 1
			for hi < len(t) && !idle.across(floorDiv(t[hi-1], 1e9), floorDiv(t[hi], 1e9)) {
				hi++
			}
			out = append(out, t[lo:hi])
			lo = hi
		}
	}
	return out
}

// arrivalCV estimates the coefficient of variation of the gaps between
// arrivals, the parameter of the model's renewal (gamma) arrivals, from the
// gaps themselves; it returns it with the number of gaps used. A rate that
// changes over seconds or more (a ramp, a step, a daily cycle) is not
// burstiness, so each gap is first divided by the mean of the arrivalWindow
// gaps around it, itself left out (a time rescaling); only gaps within one
// run of the sample (one block, no idle stretch inside) are taken, and not
// those within half a window of a run's ends.
// For gamma gaps of squared cv c² and w = arrivalWindow the rescaled gap
// y = g·w/R, R the sum of the other w, has E[y] = w/(w−c²) and
// E[y²] = (1+c²)·w²/((w−c²)(w−2c²)), so its squared cv s gives c² as the
// smaller root of c⁴ − (w+2s+1)·c² + s·w = 0 (Poisson: s = w/(w−2)). With
// fewer than arrivalMinGaps gaps, or an s within two standard errors of
// Poisson's (see poissonRescaledSD), the arrivals are taken as Poisson:
// cv 1.
//
// The gaps measure burstiness at the scale of single arrivals, where the
// waits the model predicts form. Counts per second would also see the
// rate's fluctuations over seconds, which in real traces come as much
// from stalls before the server spans start, and from chance over a few
// minutes of data, as from bursty clients.
func arrivalCV(e *entryStats, idle *activity) (float64, int) {
	return sampleCV(e.arrivals, idle)
}

// sampleCV is arrivalCV of the arrival times in a sample.
func sampleCV(a *arrivalSample, idle *activity) (float64, int) {
	return runsCV(a.runs(idle), true)
}

// runsCV is sampleCV of runs of sorted arrival times. With poisson, an
// estimate within two standard errors of Poisson's is taken as 1.
func runsCV(runs [][]int64, poisson bool) (float64, int) {
	const fw = float64(arrivalWindow)
	s, n := rescaledSCV(splitPauses(runs, idleArrivals))
	if n < arrivalMinGaps || !(s > 0) {
		return 1, int(n)
	}
	if poisson && math.Abs(s-fw/(fw-2)) <= 2*poissonRescaledSD(fw)/math.Sqrt(n) {
		return 1, int(n)
	}
	scv := gammaSCV(s)
	if scv > 1 {
		// Gaps of idleArrivals mean gaps are no pause where arrivals come
		// in bursts: gamma gaps of squared cv c² pass idleArrivals·c²
		// means as rarely as Poisson's pass idleArrivals. Cut there, the
		// gaps of TestWaitsWithBurstyArrivals's cv 2 lost 6 % of their
		// second moment and came out at 1.95.
		s, n = rescaledSCV(splitPauses(runs, idleArrivals*scv))
		scv = gammaSCV(s)
	}
	return round(math.Min(math.Max(math.Sqrt(scv), 0.2), 5), 3), int(n)
}

// rescaledSCV is the squared cv of the rescaled gaps of arrivalCV within
// the runs, and how many there were.
func rescaledSCV(runs [][]int64) (float64, float64) {
	const w = arrivalWindow
	var n, sum, sum2 float64
	for _, t := range runs {
		for i := 0; i+1 < len(t); i++ {
			// The window's w+1 gaps, t[a] to t[a+w+1], have gap i in
			// their middle; near a run's ends, where a window would reach
			// past the end, the gap is left out (shifting the window
			// there makes a ramp from zero look bursty).
			a := i - w/2
			if a < 0 || a+w+1 >= len(t) {
				continue
			}
			g := float64(t[i+1] - t[i])
			rest := float64(t[a+w+1]-t[a]) - g
			if rest <= 0 {
				continue
			}
			y := w * g / rest
			sum += y
			sum2 += y * y
			n++
		}
	}
	if n == 0 || sum <= 0 {
		return 0, n
	}
	mean := sum / n
	return (sum2/n - mean*mean) / (mean * mean), n
}

// gammaSCV is the squared cv of gamma gaps whose rescaled gaps (see
// arrivalCV) have squared cv s.
func gammaSCV(s float64) float64 {
	const fw = float64(arrivalWindow)
	b := fw + 2*s + 1
	return (b - math.Sqrt(b*b-4*s*fw)) / 2
}

// splitPauses splits runs of arrival times at the gaps longer than
// factor times their run's mean gap: pauses too short to be idle
// time for the rates (a few seconds between two load tests, a restart),
// which one at a time would make the gaps around them look far burstier
// than they are (one gap of 8 s among 2 700 of 33 ms gave a cv of 3.5).
// Poisson arrivals leave such a gap once in e²⁰ gaps.
func splitPauses(runs [][]int64, factor float64) [][]int64 {
	var out [][]int64
	for _, t := range runs {
		if len(t) < 2 {
			out = append(out, t)
			continue
		}
		limit := float64(t[len(t)-1]-t[0]) / float64(len(t)-1) * factor
		from := 0
		for i := 0; i+1 < len(t); i++ {
			if float64(t[i+1]-t[i]) > limit {
				out = append(out, t[from:i+1])
				from = i + 1
			}
		}
		out = append(out, t[from:])
	}
	return out
}

// poissonRescaledSD is √n times the standard deviation of the squared cv
// of n rescaled gaps of Poisson arrivals, each y = g·w/R with g
// exponential and R the sum of w others (y/w is beta-prime(1, w):
// E[y^k] = k!·w^k·Γ(w−k)/Γ(w)), by the delta method: 2.28 for w = 40,
// against 2 for exponential gaps. Neighbouring gaps share most of their
// windows, which in simulations adds about 6 % more.
func poissonRescaledSD(w float64) float64 {
	var m [5]float64
	m[0] = 1
	for k := 1; k <= 4; k++ {
		m[k] = m[k-1] * float64(k) * w / (w - float64(k))
	}
	d1, d2 := -2*m[2]/(m[1]*m[1]*m[1]), 1/(m[1]*m[1])
	v := d1*d1*(m[2]-m[1]*m[1]) + d2*d2*(m[4]-m[2]*m[2]) + 2*d1*d2*(m[3]-m[1]*m[2])
	return math.Sqrt(v)
}

// mergedArrivals is the sample of the arrivals of several streams merged,
// each of stream i's kept with probability keep[i] (by a hash of its time,
// so that the merge is the same on every run): what a server sees that
// serves several workloads, or some of one workload's requests. A block is
// taken where every stream's sample tells its arrivals there: those it
// kept, or none where it would have kept the block had it had arrivals in
// it (it kept fewer blocks than it may, or the block hashes below its
// worst kept). Within a block the merge stops where the first stream's
// kept prefix does, or at a workload sample's cap (arrivalBlockCap), as a
// stream's own sample would.
func mergedArrivals(streams []*arrivalSample, keep []float64) *arrivalSample {
	out := newArrivalSample()
	blocks := map[int64]bool{}
	for _, a := range streams {
		for b := range a.blocks {
			blocks[b] = true
		}
	}
	for _, b := range slices.Sorted(maps.Keys(blocks)) {
		var lists [][]int64
		cutoff := int64(math.MaxInt64)
		known := true
		for _, a := range streams {
			blk := a.blocks[b]
			if blk == nil {
				if len(a.blocks) >= a.maxBlocks && !hashBefore(b, blockHash(b), a.worst, a.worstHash) {
					known = false
				}
				lists = append(lists, nil)
				continue
			}
			t := blk.sorted(a.blockCap)
			if (blk.cut || len(blk.times) > len(t)) && len(t) > 0 {
				cutoff = min(cutoff, t[len(t)-1]+1)
			}
			lists = append(lists, t)
		}
		if !known {
			continue
		}
		// The streams' lists are sorted: merge them, up to the cutoff
		// and the cap, picking the earliest head.
		var merged []int64
		next := make([]int, len(lists))
		for len(merged) < out.blockCap {
			pick := -1
			for i, t := range lists {
				if next[i] < len(t) && t[next[i]] < cutoff && (pick < 0 || t[next[i]] < lists[pick][next[pick]]) {
					pick = i
				}
			}
			if pick < 0 {
				break
			}
			at := lists[pick][next[pick]]
			next[pick]++
			if keep[pick] >= 1 || float64(blockHash(at^int64(pick)<<56)>>11)/(1<<53) < keep[pick] {
				merged = append(merged, at)
			}
		}
		if len(merged) > 0 {
			out.blocks[b] = &arrivalTimes{hash: blockHash(b), times: merged}
		}
	}
	return out
}
