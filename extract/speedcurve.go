package extract

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/perfcast/perfcast/estimate"
	"github.com/perfcast/perfcast/metrics"
	"github.com/perfcast/perfcast/model"
)

// Speed curves: windows of curveWindow seconds; at least curveMinWindows of
// them, with a spread of the load (10th to 90th percentile) of at least
// curveMinSpread of a core, before a slope is looked for. A pause of
// curveGap windows or more without work starts a new segment; segments of
// fewer than curveMinSegment windows are left out.
const (
	curveWindow     = 5
	curveMinWindows = 12
	curveMinSpread  = 0.1
	curveGap        = 3
	curveMinSegment = 4
)

// Speed curves across segments: with at least curveMinSegments segments of
// at least curveShortSegment windows (their first and last left out) whose
// mean loads spread over curveMinSpread of a core, the curve is fitted over
// the segments' means instead of the windows.
const (
	curveMinSegments  = 6
	curveShortSegment = 2
)

// How a speed curve was fitted (SpeedCurve.Method).
const (
	CurveWindows  = "windows"
	CurveSegments = "segments"
)

// SpeedCurve is what extraction found on one host about the CPU time the
// same work takes at different loads. On virtual machines and on hardware
// with power states a request often costs more CPU time when the machine
// is mostly idle (cold caches, a virtual CPU descheduled while idle, low
// clock) than when it is busy. Traces whose load varies show it: per
// window, the CPU time measured over the CPU time the operations executed
// there take on average (their mean demands) falls or rises with the
// load. A straight line fitted over the windows (with a trend in time, so
// that a drift of the machine does not pass for it) gives, when its slope
// differs from zero by more than two standard errors, the host's speed
// curve over the range of loads seen (flat beyond it).
//
// Traces of several separate runs at different loads (load tests with
// fresh processes, each at one rate) hold the effect between the runs and
// hardly any within one. When there are at least six such segments and
// their mean loads differ, the line is fitted over the segments instead,
// one point per segment (its mean load and cost ratio), from the
// differences between segments neighbouring in time, which a machine's
// drift from minute to minute shifts alike (see differenceRegression);
// the slope must clear Student's t at 95 %.
type SpeedCurve struct {
	Host string `json:"host"`
	// Source is where the windows' CPU time comes from: the metrics' series,
	// or "spans" (perfcast.cpu.time).
	Source string `json:"source"`
	// Method is CurveWindows (a line over the windows, each segment with
	// its own level) or CurveSegments (a line over the segments' means);
	// empty when no fit was tried.
	Method  string  `json:"method,omitempty"`
	Windows int     `json:"windows"`
	Window  float64 `json:"window"`
	// Segments counts the stretches of traces without a pause that the
	// fit used; with CurveWindows each has its own level and trend in time.
	Segments int `json:"segments,omitempty"`
	// Intercept and Slope describe the cost ratio (measured over expected
	// CPU time) against the expected utilization, a fraction of the host's
	// cores. With CurveWindows they hold at each segment's mean time (a
	// linear trend in time per segment is fitted alongside; Intercept is
	// the segments' mean level) and SlopeSE is the slope's standard error
	// (Newey–West); with CurveSegments one level and one trend in time
	// serve all segments, Intercept is at their mean time, and SlopeSE is
	// that of the fit of the differences between neighbouring segments.
	Intercept float64 `json:"intercept"`
	Slope     float64 `json:"slope"`
	SlopeSE   float64 `json:"slope_se"`
	// Low and High are the 10th and 90th percentiles of the windows'
	// expected utilization (CurveSegments: the lowest and highest of the
	// segments' means).
	Low  float64 `json:"low"`
	High float64 `json:"high"`
	// Points is the curve put in the model (empty when none was).
	Points []model.SpeedPoint `json:"points,omitempty"`
	// Skipped says why no curve was looked for or put in.
	Skipped string `json:"skipped,omitempty"`
	// Variation is how the cost ratio wanders beyond the curve, when
	// there were windows to tell (see SpeedVariation).
	Variation *SpeedVariation `json:"variation,omitempty"`
}

// curveWin is one window's measured and expected CPU time, and the
// seconds of it the metrics covered (0 where the CPU time is the spans').
type curveWin struct{ busy, work, covered float64 }

// EstimateSpeedCurves looks, per host of w, for a CPU speed that depends
// on the load. The CPU time per window is the metrics' (summed over the
// host's scopes) where set measures the whole host, else the spans' when
// every span on the host carries its CPU time. An operation's mean demand
// is its spans' mean CPU time, else its estimate in perOp. cores gives the
// hosts' cores (0 or missing: 1). cpuVar holds each operation's variance
// of its spans' CPU time per execution, where they carry one: with it, a
// host whose spans all carry their CPU time has its variation over time
// measured between windows of one second (see SpeedVariation).
func EstimateSpeedCurves(w *Windows, set *metrics.Set, component func(service string) string, cores map[string]int, perOp map[string]estimate.Result, cpuVar map[string]float64) []*SpeedCurve {
	var out []*SpeedCurve
	for _, host := range w.Hosts() {
		h := w.hosts[host].modeled(host, set.Lookup)
		if h == nil {
			continue
		}
		c := &SpeedCurve{Host: host, Window: curveWindow}
		out = append(out, c)
		mean, missing := meanDemands(h, perOp)
		if missing != "" {
			c.Skipped = "no CPU demand for " + missing
			continue
		}
		wins := map[int64]curveWin{}
		add := func(start int64, busy, work, covered float64) {
			g := floorDiv(start, curveWindow*1e9)
			cw := wins[g]
			cw.busy, cw.work, cw.covered = cw.busy+busy, cw.work+work, cw.covered+covered
			wins[g] = cw
		}
		n := float64(max(1, cores[host]))
		if set != nil {
			c.Source = "metrics"
			scs := scopes(host, h, set, component)
			for _, sc := range scs {
				if sc.s == nil {
					c.Source = ""
					break
				}
			}
			if c.Source != "" {
				for _, sc := range scs {
					cw := coveredWindows(sc.h, sc.s, seriesCores(sc.s, n))
					for _, win := range cw.windows {
						work := 0.0
						for i, cl := range win.cells {
							work += cl.n * mean[cw.ops[i]]
						}
						add(win.start, win.busy, work, cw.length/float64(len(scs)))
					}
				}
			}
		}
		if c.Source == "" && h.allMeasured() {
			c.Source = "spans"
			for _, idx := range slices.Sorted(maps.Keys(h.cells)) {
				busy, work := 0.0, 0.0
				for op, cl := range h.cells[idx] {
					busy += cl.cpu
					work += cl.n * mean[h.ops[op]]
				}
				add(idx*h.width, busy, work, 0)
			}
		}
		if c.Source == "" {
			c.Skipped = "neither metrics of the whole host nor CPU time on every span"
			continue
		}
		c.fit(wins, n)
		if h.allMeasured() && len(cpuVar) > 0 {
			c.Variation = c.estimateWindowVariation(h, mean, cpuVar, n)
		} else {
			c.Variation = c.estimateVariation(wins, n)
		}
	}
	return out
}

// meanDemands returns each operation's mean CPU demand over the host's
// windows, or the name of an operation without one.
func meanDemands(h *hostWindows, perOp map[string]estimate.Result) (map[string]float64, string) {
	n := make([]float64, len(h.ops))
	cpuN := make([]float64, len(h.ops))
	cpu := make([]float64, len(h.ops))
	for _, idx := range slices.Sorted(maps.Keys(h.cells)) {
		for op, c := range h.cells[idx] {
			n[op] += c.n
			cpuN[op] += c.cpuN
			cpu[op] += c.cpu
		}
	}
	mean := map[string]float64{}
	for op, name := range h.ops {
		switch {
		case n[op] > 0 && cpuN[op] == n[op]:
			mean[name] = cpu[op] / cpuN[op]
		case perOp[name].CPU > 0:
			mean[name] = perOp[name].CPU
		case n[op] > 0:
			return nil, name
		}
	}
	return mean, ""
}

// fit regresses the windows' cost ratio on their expected utilization and
// on time, and sets the curve when the load's coefficient is significant.
// Time is in the regression so that a drift of the machine over the traces
// is not read as an effect of the load; the standard errors are Newey–West's
// (Bartlett weights over √n windows), since the windows' residuals are
// correlated in time when the machine's speed wanders. Traces whose load
// only rises or only falls over time cannot tell the two apart and give a
// large standard error.
//
// Traces with pauses (curveGap windows or more without work, such as
// several load tests an hour apart) are cut into segments there, and each
// segment gets its own level and trend: the machine's speed after a pause
// need not continue its line before it. The first and last window of each
// segment (partly covered) are left out, and so are segments shorter than
// curveMinSegment windows.
func (c *SpeedCurve) fit(wins map[int64]curveWin, cores float64) {
	if c.fitSegments(wins, cores) {
		return
	}
	c.Method = CurveWindows
	var x, t, y []float64
	var seg []int
	var busy, work float64
	for i, keys := range curveSegments(wins, curveMinSegment) {
		for _, k := range keys {
			win := wins[k]
			x = append(x, win.work/curveWindow/cores)
			t = append(t, float64(k-keys[0])*curveWindow/60) // minutes
			y = append(y, win.busy/win.work)
			seg = append(seg, i)
			busy, work = busy+win.busy, work+win.work
		}
	}
	c.Windows = len(x)
	if c.Windows < curveMinWindows {
		c.Skipped = fmt.Sprintf("%d windows of %d s with CPU time, fewer than %d", c.Windows, curveWindow, curveMinWindows)
		return
	}
	sorted := slices.Clone(x)
	slices.Sort(sorted)
	c.Low = stat.Quantile(0.1, stat.Empirical, sorted, nil)
	c.High = stat.Quantile(0.9, stat.Empirical, sorted, nil)
	if c.High-c.Low < curveMinSpread {
		c.Skipped = fmt.Sprintf("the load varied too little (%.2f to %.2f of the cores, 10th to 90th percentile) to see a slope", c.Low, c.High)
		return
	}
	fit, ok := trendRegression(x, t, y, seg)
	if !ok {
		c.Skipped = "the load and the time are too closely tied to tell their effects apart"
		return
	}
	c.Segments = len(fit.levels)
	c.Intercept, c.Slope, c.SlopeSE = fit.level, fit.slope, fit.se
	if !(math.Abs(c.Slope) > 2*c.SlopeSE) {
		c.Skipped = fmt.Sprintf("no significant slope (%.3g ± %.2g per unit of utilization, time trend taken out)", c.Slope, c.SlopeSE)
		return
	}
	c.setPoints(busy / work)
}

// setPoints puts in the curve's points from its line, Low and High, given
// the mean cost ratio mr over all the windows the fit used.
func (c *SpeedCurve) setPoints(mr float64) {
	// The model's demands are means over all windows: the factor is 1 at
	// the mean ratio. A window's utilization is its expected one times its
	// ratio (what the CPU time measured).
	lo, hi := c.Intercept+c.Slope*c.Low, c.Intercept+c.Slope*c.High
	if lo <= 0 || hi <= 0 {
		c.Skipped = "the fitted line leaves the positive ratios"
		return
	}
	c.Points = []model.SpeedPoint{
		{Utilization: min(1, c.Low*lo), Factor: mr / lo},
		{Utilization: min(1, c.High*hi), Factor: mr / hi},
	}
	if !(c.Points[1].Utilization > c.Points[0].Utilization) {
		c.Points, c.Skipped = nil, "the curve's utilizations do not increase"
	}
}

// fitSegments fits the curve over the segments' means when there are at
// least curveMinSegments segments of curveShortSegment windows or more and
// their mean loads spread over curveMinSpread, and tells whether it did
// (c then holds the fit, or why it put no curve in). Each segment is one
// observation: its windows' expected utilization, their measured over
// expected CPU time, and its middle in time; differenceRegression fits the
// line.
func (c *SpeedCurve) fitSegments(wins map[int64]curveWin, cores float64) bool {
	segs := curveSegments(wins, curveShortSegment)
	if len(segs) < curveMinSegments {
		return false
	}
	var x, t, y []float64
	var busy, work float64
	windows := 0
	first := segs[0][0]
	for _, keys := range segs {
		var b, wk float64
		for _, k := range keys {
			b, wk = b+wins[k].busy, wk+wins[k].work
		}
		x = append(x, wk/(float64(len(keys))*curveWindow*cores))
		y = append(y, b/wk)
		t = append(t, float64(keys[0]+keys[len(keys)-1]-2*first)/2*curveWindow/60) // minutes
		busy, work, windows = busy+b, work+wk, windows+len(keys)
	}
	lo, hi := slices.Min(x), slices.Max(x)
	if hi-lo < curveMinSpread {
		return false
	}
	c.Method, c.Segments, c.Windows, c.Low, c.High = CurveSegments, len(segs), windows, lo, hi
	fit, ok := differenceRegression(x, t, y)
	if !ok {
		c.Skipped = "the segments' loads and times are too closely tied to tell their effects apart"
		return true
	}
	c.Intercept, c.Slope, c.SlopeSE = fit.level, fit.slope, fit.se
	crit := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(fit.df)}.Quantile(0.975)
	if !(math.Abs(c.Slope) > crit*c.SlopeSE) {
		c.Skipped = fmt.Sprintf("no significant slope across %d segments (%.3g ± %.2g per unit of utilization, time trend taken out; %.2f standard errors needed)", len(y), c.Slope, c.SlopeSE, crit)
		return true
	}
	c.setPoints(busy / work)
	return true
}

// diffFit is the result of differenceRegression.
type diffFit struct {
	// slope is the load's coefficient, se its standard error with df
	// degrees of freedom; trend is the time's coefficient (per minute)
	// and level the line's value at zero load and the observations' mean
	// time.
	slope, se, trend, level float64
	df                      int
}

// differenceRegression fits y = a + b·x + c·t + drift + noise over
// observations in time order (separate runs, one point each) from the
// differences between neighbours in time: Δy = b·Δx + c·Δt, by least
// squares. A machine whose speed wanders from minute to minute shifts runs
// close in time alike, so their differences keep the load's effect and
// lose most of the drift; a fit of the levels would count the drift as
// noise (or, lined up with the load, as its effect).
//
// The differences' errors are independent when the drift dominates (a
// random walk) and correlated, −½ between neighbours, when each run's own
// noise does; b's standard error is the larger of the two that these
// models give, each with its noise variance estimated without bias from
// the residuals, and has n − 3 degrees of freedom. ok is false when the
// design is singular or nearly so, or there are fewer than six
// observations.
func differenceRegression(x, t, y []float64) (fit diffFit, ok bool) {
	n := len(y)
	if n < 6 {
		return fit, false
	}
	m := n - 1
	X := mat.NewDense(m, 2, nil)
	dy := mat.NewVecDense(m, nil)
	for i := range m {
		X.Set(i, 0, x[i+1]-x[i])
		X.Set(i, 1, t[i+1]-t[i])
		dy.SetVec(i, y[i+1]-y[i])
	}
	var xtx, inv mat.Dense
	xtx.Mul(X.T(), X)
	if err := inv.Inverse(&xtx); err != nil || mat.Cond(&xtx, 2) > 1e10 {
		return fit, false
	}
	var b, xty mat.VecDense
	xty.MulVec(X.T(), dy)
	b.MulVec(&inv, &xty)
	var e mat.VecDense
	e.MulVec(X, &b)
	e.SubVec(dy, &e)
	rss := mat.Dot(&e, &e)
	// The differences' covariance when each run has its own independent
	// noise: DDᵀ, 2 on the diagonal and −1 beside it (times σ²).
	dd := mat.NewSymDense(m, nil)
	for i := range m {
		dd.SetSym(i, i, 2)
		if i > 0 {
			dd.SetSym(i, i-1, -1)
		}
	}
	// E[rss] = σ²·tr(M·DDᵀ), M the residual maker I − X(XᵀX)⁻¹Xᵀ.
	var h, mdd mat.Dense
	h.Product(X, &inv, X.T())
	resid := mat.NewDense(m, m, nil)
	for i := range m {
		resid.Set(i, i, 1)
	}
	resid.Sub(resid, &h)
	mdd.Mul(resid, dd)
	var tr float64
	for i := range m {
		tr += mdd.At(i, i)
	}
	df := m - 2
	white := rss / float64(df) * inv.At(0, 0)
	var sand mat.Dense
	sand.Product(&inv, X.T(), dd, X, &inv)
	own := 0.0
	if tr > 0 {
		own = rss / tr * sand.At(0, 0)
	}
	v := max(white, own)
	if !(v >= 0) {
		return fit, false
	}
	fit = diffFit{slope: b.AtVec(0), trend: b.AtVec(1), se: math.Sqrt(v), df: df}
	tm := stat.Mean(t, nil)
	for i := range n {
		fit.level += (y[i] - fit.slope*x[i] - fit.trend*(t[i]-tm)) / float64(n)
	}
	return fit, true
}

// curveSegments cuts the windows with work into segments at pauses of
// curveGap windows or more, drops each segment's partly covered windows
// and the segments left shorter than minLen, and returns the windows'
// indices per segment, in time order. Where the metrics' coverage is known
// (covered), a window is partly covered when they covered less than
// minCoverage of it; else its first and last are taken as partly covered.
// Dropped blindly where the metrics already left the partly covered
// windows out, they cost a load test's steady phase of 15 s, widened by a
// second on each side, one of its three whole windows, and a third of
// such segments fell below two.
func curveSegments(wins map[int64]curveWin, minLen int) [][]int64 {
	var segs [][]int64
	var cur []int64
	flush := func() {
		if slices.ContainsFunc(cur, func(k int64) bool { return wins[k].covered > 0 }) {
			cur = slices.DeleteFunc(cur, func(k int64) bool { return wins[k].covered < minCoverage*curveWindow })
		} else if len(cur) > 2 {
			cur = cur[1 : len(cur)-1]
		} else {
			cur = nil // partly covered windows only
		}
		if len(cur) >= max(minLen, 1) {
			segs = append(segs, cur)
		}
		cur = nil
	}
	for _, k := range slices.Sorted(maps.Keys(wins)) {
		if w := wins[k]; w.work <= 0 || w.busy <= 0 {
			continue
		}
		if len(cur) > 0 && k-cur[len(cur)-1] > curveGap {
			flush()
		}
		cur = append(cur, k)
	}
	flush()
	return segs
}

// trendFit is the result of trendRegression.
type trendFit struct {
	// slope is the load's coefficient and se its Newey–West standard
	// error.
	slope, se float64
	// levels are the segments' intercepts at their mean time; level is
	// their mean weighted by the segments' windows.
	levels []float64
	level  float64
	// trends are the segments' time coefficients, per minute.
	trends []float64
}

// trendRegression fits y = b·x + a_s + c_s·(t − t̄_s) by least squares, with
// a level a_s and a trend c_s for each segment s (seg gives each
// observation's segment, 0, 1, …, in order), and returns the coefficients
// and the Newey–West standard error of b, whose lags stay within a segment;
// ok is false when the design is singular or nearly so.
func trendRegression(x, t, y []float64, seg []int) (fit trendFit, ok bool) {
	n := len(y)
	if n == 0 {
		return fit, false
	}
	ns := seg[n-1] + 1
	k := 1 + 2*ns
	if n <= k {
		return fit, false
	}
	// Each segment's mean time, so that its level is at its middle.
	tm, cnt := make([]float64, ns), make([]float64, ns)
	for i := range n {
		tm[seg[i]] += t[i]
		cnt[seg[i]]++
	}
	for s := range ns {
		tm[s] /= cnt[s]
	}
	row := func(i int) []float64 {
		r := make([]float64, k)
		r[0] = x[i]
		r[1+2*seg[i]] = 1
		r[2+2*seg[i]] = t[i] - tm[seg[i]]
		return r
	}
	X := mat.NewDense(n, k, nil)
	for i := range n {
		X.SetRow(i, row(i))
	}
	var xtx, inv mat.Dense
	xtx.Mul(X.T(), X)
	if err := inv.Inverse(&xtx); err != nil {
		return fit, false
	}
	if cond := mat.Cond(&xtx, 2); cond > 1e10 {
		return fit, false
	}
	var b, xty mat.VecDense
	xty.MulVec(X.T(), mat.NewVecDense(n, y))
	b.MulVec(&inv, &xty)
	e := make([]float64, n)
	for i := range n {
		e[i] = y[i] - mat.Dot(X.RowView(i), &b)
	}
	// Newey–West: S = Σ e_i² x_i x_iᵀ + Σ_l w_l Σ_i e_i e_{i−l} (x_i x_{i−l}ᵀ + x_{i−l} x_iᵀ),
	// over pairs in one segment.
	lags := int(math.Ceil(math.Sqrt(float64(n))))
	S := mat.NewSymDense(k, nil)
	for l := 0; l <= lags && l < n; l++ {
		w := 1 - float64(l)/float64(lags+1)
		for i := l; i < n; i++ {
			if seg[i] != seg[i-l] {
				continue
			}
			a, c := row(i), row(i-l)
			f := w * e[i] * e[i-l]
			for j := range k {
				for m := j; m < k; m++ {
					v := a[j] * c[m]
					if l > 0 {
						v += c[j] * a[m]
					}
					S.SetSym(j, m, S.At(j, m)+f*v)
				}
			}
		}
	}
	var v, tmp mat.Dense
	tmp.Mul(&inv, S)
	v.Mul(&tmp, &inv)
	// Small-sample correction n/(n−k).
	v0 := v.At(0, 0) * float64(n) / float64(n-k)
	if !(v0 >= 0) {
		return fit, false
	}
	fit = trendFit{slope: b.AtVec(0), se: math.Sqrt(v0)}
	for s := range ns {
		a := b.AtVec(1 + 2*s)
		fit.levels = append(fit.levels, a)
		fit.trends = append(fit.trends, b.AtVec(2+2*s))
		fit.level += a * cnt[s] / float64(n)
	}
	return fit, true
}
