package extract

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat"

	"github.com/perfcast/perfcast/internal/textout"
	"github.com/perfcast/perfcast/model"
)

// Traces that saw several loads tell a fixed delay from a wait: a delay
// (a call to something not traced, a sleep, a disk) takes as long at any
// load; a wait for the CPU or a CPU slot grows with the load. The waits
// the model makes again are taken out of an operation's time off the CPU
// by how long the queueing formulas say they are (cpuWait, slotWait) and
// by where they fall (inSpanSlotWait: a server that needs a CPU slot
// before its span starts shows part of the wait in its callers' time
// instead). Where a component's threads interleave on its slots, the
// wait also falls inside the span, after the execution has started, in a
// share no formula gives: a Go service with GOMAXPROCS 1 resumes a request
// that blocked (for a database connection, a write) only when the P is
// free again, behind whatever ran meanwhile. What stays after the formulas
// then grows with the load, and kept as a fixed delay it holds the busiest
// stretch's waits at every load.
//
// So for components with CPU slots, where the windows of the traces spread
// over loads, the fixed delay is the time off the CPU at no load: a line
// through the windows' time off the CPU per execution against the wait
// the model makes at each window's load (for a slot, and for the CPU
// beside it), fitted robustly (Theil–Sen: the median of the slopes
// between windows, then the median intercept), since a spell of overload
// puts a few windows far above any line. Its intercept, at least 0, is
// the delay; the rest of the time off the CPU is taken as the waits the
// model makes again, whatever part of them the traces show inside the
// span.
const (
	// delayFitWindows is the least number of windows with the
	// operation's executions the line is fitted through.
	delayFitWindows = 6
	// delayFitSpread is the least spread of the slots' load over the
	// windows (10th to 90th percentile, weighted by executions), a
	// fraction of the slots: a steady load's windows differ by noise,
	// which does not tell a delay from a wait.
	delayFitSpread = 0.15
)

// delayFitPoints is the most points the line is fitted through: beyond
// it (traces of hours hold thousands of windows) the windows are pooled
// into that many groups of neighbours in the model's wait (see binByX),
// which keeps the fit's cost, quadratic in its points, bounded.
const delayFitPoints = 256

// delayFit is a fixed delay fitted at no load (see loadFreeDelay).
type delayFit struct {
	delay   float64 // seconds per execution at no load, at least 0
	mean    float64 // mean time off the CPU per execution over the windows, seconds
	slope   float64 // time off the CPU per unit of the model's wait
	windows int
	lo, hi  float64 // the slots' load in the lightest and the busiest window (10th and 90th percentile)
}

// delayPoint is one window of one operation: the model's wait per
// execution there (x), the time off the CPU per execution (y), and its
// executions (w).
type delayPoint struct{ x, y, w float64 }

// loadFreeDelay fits op's fixed delay at no load (see the comment above
// delayFitWindows) where its component has CPU slots and the traces'
// windows spread over loads; ok is false otherwise. cpu is op's CPU
// demand per execution; with measured, a window's time off the CPU is its
// own time less its spans' CPU times (where every span there carries
// one), else its own time less cpu per execution.
func (g *generator) loadFreeDelay(id string, op *opStats, cpu float64, measured bool) (delayFit, bool) {
	comp := op.component
	k := g.cpuSlots(comp)
	h := g.hostOf[comp]
	if k == 0 || h == nil {
		return delayFit{}, false
	}
	q, a, ok := g.slotQueue(comp)
	if !ok || a >= float64(k) {
		return delayFit{}, false
	}
	wins, width := g.slotGrid(comp)
	if len(wins) < delayFitWindows || width <= 0 {
		return delayFit{}, false
	}
	type acc struct{ n, off float64 }
	byStart := map[int64]*acc{}
	first := wins[0].start
	for _, oc := range g.cellsOf(func(x string) bool { return x == id }) {
		if measured && oc.c.cpuN != oc.c.n {
			continue
		}
		start := first + floorDiv(oc.start-first, width)*width
		c := byStart[start]
		if c == nil {
			c = &acc{}
			byStart[start] = c
		}
		c.n += oc.c.n
		if measured {
			c.off += oc.c.own - oc.c.cpu
		} else {
			c.off += oc.c.own - oc.c.n*cpu
		}
	}
	var pts []delayPoint
	var loads, loadW []float64
	for _, w := range wins {
		c := byStart[w.start]
		if c == nil || c.n == 0 {
			continue
		}
		x := q.waitAt(w) + cpu/h.CPU.Speed*q.cpuWait(w.host)
		pts = append(pts, delayPoint{x: x, y: c.off / c.n, w: c.n})
		loads, loadW = append(loads, w.slots/float64(k)), append(loadW, c.n)
	}
	if len(pts) < delayFitWindows {
		return delayFit{}, false
	}
	lo, hi := weightedQuantile(loads, loadW, 0.1), weightedQuantile(loads, loadW, 0.9)
	if hi-lo < delayFitSpread {
		return delayFit{}, false
	}
	slope, intercept := theilSen(binByX(pts, delayFitPoints))
	if slope <= 0 {
		return delayFit{}, false // nothing off the CPU grows with the load
	}
	var sum, n float64
	for _, p := range pts {
		sum, n = sum+p.y*p.w, n+p.w
	}
	return delayFit{delay: math.Max(intercept, 0), mean: sum / n, slope: slope, windows: len(pts), lo: lo, hi: hi}, true
}

// binByX returns pts when they are at most max, else max groups of
// points of neighbouring x, in order of x, each as one point: the
// weighted mean of its x, the weighted median of its y (so that spells
// in a few windows do not lift the group, as a mean would), and the sum of
// its weights.
func binByX(pts []delayPoint, max int) []delayPoint {
	if len(pts) <= max {
		return pts
	}
	sorted := slices.Clone(pts)
	slices.SortStableFunc(sorted, func(a, b delayPoint) int { return cmp.Compare(a.x, b.x) })
	out := make([]delayPoint, 0, max)
	for i := range max {
		group := sorted[i*len(sorted)/max : (i+1)*len(sorted)/max]
		var b delayPoint
		ys, ws := make([]float64, len(group)), make([]float64, len(group))
		for k, p := range group {
			b.x, b.w = b.x+p.x*p.w, b.w+p.w
			ys[k], ws[k] = p.y, p.w
		}
		if b.w > 0 {
			b.x /= b.w
			b.y = weightedQuantile(ys, ws, 0.5)
			out = append(out, b)
		}
	}
	return out
}

// theilSen fits a line through pts robustly: its slope is the median of
// the slopes between pairs of points, each pair weighted by the precision
// of its difference (w₁w₂/(w₁+w₂)), its intercept the median of y − slope·x
// weighted by w. Pairs at the same x are left out.
func theilSen(pts []delayPoint) (slope, intercept float64) {
	var slopes, sw []float64
	for i := range pts {
		for j := i + 1; j < len(pts); j++ {
			p, q := pts[i], pts[j]
			dx := q.x - p.x
			if math.Abs(dx) <= 1e-12 {
				continue
			}
			slopes = append(slopes, (q.y-p.y)/dx)
			sw = append(sw, p.w*q.w/(p.w+q.w))
		}
	}
	if len(slopes) == 0 {
		return 0, 0
	}
	slope = weightedQuantile(slopes, sw, 0.5)
	res, rw := make([]float64, len(pts)), make([]float64, len(pts))
	for i, p := range pts {
		res[i], rw[i] = p.y-slope*p.x, p.w
	}
	return slope, weightedQuantile(res, rw, 0.5)
}

// weightedQuantile is the empirical q-quantile of xs weighted by ws
// (stat.Quantile on a sorted copy). xs and ws are not changed.
func weightedQuantile(xs, ws []float64, q float64) float64 {
	type xw struct{ x, w float64 }
	pairs := make([]xw, len(xs))
	for i := range xs {
		pairs[i] = xw{xs[i], ws[i]}
	}
	// Equal values may change places; the quantile, a value, does not.
	slices.SortFunc(pairs, func(a, b xw) int { return cmp.Compare(a.x, b.x) })
	x, w := make([]float64, len(xs)), make([]float64, len(xs))
	for k, p := range pairs {
		x[k], w[k] = p.x, p.w
	}
	return stat.Quantile(q, stat.Empirical, x, w)
}

// maxResumes caps the times an execution is taken to resume after
// blocking (see resumeBursts).
const maxResumes = 8

// resumeBursts reshapes steps, op id's, by fit: where its time off the
// CPU inside the span grows with the model's wait for a burst (slope r
// per unit), the execution waits for its CPU slot about r more times
// after it started, as a thread does that blocks (for a lock, a
// connection, a write, a call) and needs a slot again to go on. Its first
// top-level CPU step is split into 1 + r bursts on average (r below
// maxResumes): the first burst where the step was (so that CPU just
// before it stays in the same hold), then a loop of r on average of a
// share of the fixed delay (the step at delayAt, −1 for none) and a
// burst, each holding a slot of its own; the delay's last share stays
// where the delay was. So the model makes the waits inside the span
// again, and a short request waits behind part of a long one, not the
// whole. made is the bursts the steps already hold after the first
// (resumeSplit's, for the calls): r counts only those beyond them. Steps
// without a top-level CPU step are returned as they are.
func (g *generator) resumeBursts(id string, steps []model.Step, delayAt int, fit delayFit, made float64) []model.Step {
	i := slices.IndexFunc(steps, func(s model.Step) bool { return s.Kind == model.StepCPU })
	r := min(fit.slope-made, maxResumes)
	if i < 0 || r < minResumes {
		g.delayEvidence(id, fit, 1)
		return steps
	}
	n := 1 + r
	times, ok := meanTimes(r)
	if !ok {
		return steps // cannot happen: r ≥ minResumes, finite
	}
	out := slices.Clone(steps)
	cpu := model.Step{Kind: model.StepCPU, Demand: withMean(steps[i].Demand, steps[i].Demand.Mean()/n)}
	var body []model.Step
	if delayAt > i && delayAt < len(out) && out[delayAt].Kind == model.StepDelay {
		d := out[delayAt]
		d.Demand = withMean(d.Demand, d.Demand.Mean()/n)
		out[delayAt] = d
		body = append(body, d)
	}
	body = append(body, cpu)
	out[i] = cpu
	out = slices.Insert(out, i+1, model.Step{Kind: model.StepLoop, Times: times, Steps: body})
	g.delayEvidence(id, fit, n)
	return out
}

// minResumes is the least slope (resumes per execution) for which
// resumeBursts splits the CPU.
const minResumes = 0.05

// delayEvidence reports how op id's fixed delay was fitted at no load, and
// the bursts its CPU was split into.
func (g *generator) delayEvidence(id string, f delayFit, bursts float64) {
	split := ""
	if bursts > 1 {
		split = fmt.Sprintf("; it resumes inside its span about %.2g times, waiting for a slot each time: its CPU and that delay are split into %.3g bursts on average, each holding a slot", bursts-1, bursts)
	}
	g.rep.evidencef("%s: its time off the CPU grows with the load of its CPU slots (%d windows, %.2f to %.2f of the slots busy; %s per execution on average, %.3g ms more per ms of the wait the model makes for a burst there): at no load %s (a line through the windows, Theil–Sen), its fixed delay%s",
		id, f.windows, f.lo, f.hi, textout.Duration(f.mean), f.slope, textout.Duration(f.delay), split)
}
