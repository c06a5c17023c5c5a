package extract

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"

	"github.com/perfcast/perfcast/estimate"
	"github.com/perfcast/perfcast/metrics"
	"github.com/perfcast/perfcast/model"
)

// Speed curves: windows of curveWindow seconds; at least curveMinWindows of
// them, with a spread of the load (10th to 90th percentile) of at least
// curveMinSpread of a core, before a slope is looked for.
const (
	curveWindow     = 5
	curveMinWindows = 12
	curveMinSpread  = 0.1
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
type SpeedCurve struct {
	Host string `json:"host"`
	// Source is where the windows' CPU time comes from: the metrics' series,
	// or "spans" (perfcast.cpu.time).
	Source  string  `json:"source"`
	Windows int     `json:"windows"`
	Window  float64 `json:"window"`
	// Intercept and Slope describe the cost ratio (measured over expected
	// CPU time) against the expected utilization, a fraction of the host's
	// cores, at the traces' mean time (a linear trend in time is fitted
	// alongside); SlopeSE is the slope's standard error (Newey–West).
	Intercept float64 `json:"intercept"`
	Slope     float64 `json:"slope"`
	SlopeSE   float64 `json:"slope_se"`
	// Low and High are the 10th and 90th percentiles of the windows'
	// expected utilization.
	Low  float64 `json:"low"`
	High float64 `json:"high"`
	// Points is the curve put in the model (empty when none was).
	Points []model.SpeedPoint `json:"points,omitempty"`
	// Skipped says why no curve was looked for or put in.
	Skipped string `json:"skipped,omitempty"`
}

// curveWin is one window's measured and expected CPU time.
type curveWin struct{ busy, work float64 }

// EstimateSpeedCurves looks, per host of w, for a CPU speed that depends
// on the load. The CPU time per window is the metrics' (summed over the
// host's scopes) where set measures the whole host, else the spans' when
// every span on the host carries its CPU time. An operation's mean demand
// is its spans' mean CPU time, else its estimate in perOp. cores gives the
// hosts' cores (0 or missing: 1).
func EstimateSpeedCurves(w *Windows, set *metrics.Set, component func(service string) string, cores map[string]int, perOp map[string]estimate.Result) []*SpeedCurve {
	var out []*SpeedCurve
	for _, host := range w.Hosts() {
		h := w.hosts[host]
		c := &SpeedCurve{Host: host, Window: curveWindow}
		out = append(out, c)
		mean, missing := meanDemands(h, perOp)
		if missing != "" {
			c.Skipped = "no CPU demand for " + missing
			continue
		}
		wins := map[int64]curveWin{}
		add := func(start int64, busy, work float64) {
			g := floorDiv(start, curveWindow*1e9)
			cw := wins[g]
			cw.busy, cw.work = cw.busy+busy, cw.work+work
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
						add(win.start, win.busy, work)
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
				add(idx*h.width, busy, work)
			}
		}
		if c.Source == "" {
			c.Skipped = "neither metrics of the whole host nor CPU time on every span"
			continue
		}
		c.fit(wins, n)
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
// large standard error. The first and last windows (partly covered) are
// left out.
func (c *SpeedCurve) fit(wins map[int64]curveWin, cores float64) {
	keys := slices.Sorted(maps.Keys(wins))
	if len(keys) > 2 {
		keys = keys[1 : len(keys)-1]
	}
	var x, t, y []float64
	var busy, work float64
	for _, k := range keys {
		win := wins[k]
		if win.work <= 0 || win.busy <= 0 {
			continue
		}
		x = append(x, win.work/curveWindow/cores)
		t = append(t, float64(k-keys[0])*curveWindow/60) // minutes
		y = append(y, win.busy/win.work)
		busy, work = busy+win.busy, work+win.work
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
	beta, se, ok := trendRegression(x, t, y)
	if !ok {
		c.Skipped = "the load and the time are too closely tied to tell their effects apart"
		return
	}
	c.Intercept, c.Slope, c.SlopeSE = beta[0]+beta[2]*stat.Mean(t, nil), beta[1], se
	if !(math.Abs(c.Slope) > 2*c.SlopeSE) {
		c.Skipped = fmt.Sprintf("no significant slope (%.3g ± %.2g per unit of utilization, time trend taken out)", c.Slope, c.SlopeSE)
		return
	}
	// The model's demands are means over all windows: the factor is 1 at
	// the mean ratio. A window's utilization is its expected one times its
	// ratio (what the CPU time measured).
	mr := busy / work
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

// trendRegression fits y = b0 + b1·x + b2·t by least squares and returns
// the coefficients and the Newey–West standard error of b1; ok is false
// when the design is singular.
func trendRegression(x, t, y []float64) (beta [3]float64, se float64, ok bool) {
	n := len(y)
	X := mat.NewDense(n, 3, nil)
	for i := range n {
		X.Set(i, 0, 1)
		X.Set(i, 1, x[i])
		X.Set(i, 2, t[i])
	}
	var xtx, inv mat.Dense
	xtx.Mul(X.T(), X)
	if err := inv.Inverse(&xtx); err != nil {
		return beta, 0, false
	}
	if cond := mat.Cond(&xtx, 2); cond > 1e10 {
		return beta, 0, false
	}
	var b mat.VecDense
	var xty mat.VecDense
	xty.MulVec(X.T(), mat.NewVecDense(n, y))
	b.MulVec(&inv, &xty)
	e := make([]float64, n)
	for i := range n {
		e[i] = y[i] - b.AtVec(0) - b.AtVec(1)*x[i] - b.AtVec(2)*t[i]
	}
	// Newey–West: S = Σ e_i² x_i x_iᵀ + Σ_l w_l Σ_i e_i e_{i−l} (x_i x_{i−l}ᵀ + x_{i−l} x_iᵀ).
	lags := int(math.Ceil(math.Sqrt(float64(n))))
	S := mat.NewSymDense(3, nil)
	row := func(i int) [3]float64 { return [3]float64{1, x[i], t[i]} }
	for l := 0; l <= lags && l < n; l++ {
		w := 1 - float64(l)/float64(lags+1)
		for i := l; i < n; i++ {
			a, c := row(i), row(i-l)
			f := w * e[i] * e[i-l]
			for j := range 3 {
				for k := j; k < 3; k++ {
					v := a[j] * c[k]
					if l > 0 {
						v += c[j] * a[k]
					}
					S.SetSym(j, k, S.At(j, k)+f*v)
				}
			}
		}
	}
	var v, tmp mat.Dense
	tmp.Mul(&inv, S)
	v.Mul(&tmp, &inv)
	// Small-sample correction n/(n−k).
	v1 := v.At(1, 1) * float64(n) / float64(n-3)
	if !(v1 >= 0) {
		return beta, 0, false
	}
	return [3]float64{b.AtVec(0), b.AtVec(1), b.AtVec(2)}, math.Sqrt(v1), true
}
