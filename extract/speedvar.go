package extract

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/perfcast/perfcast/model"
)

// Speed variation: blocks of at most variationBlock windows (30 s) within
// a segment; at least variationMinBlocks blocks and variationMinResidual
// windows beyond one per block before a variation is looked for; the
// variance between blocks must clear an F test at variationLevel.
const (
	variationBlock       = 6
	variationMinBlocks   = 6
	variationMinResidual = 6
	variationLevel       = 0.95
)

// variationMinWindows is the least number of the aggregate's windows
// (one second each) the requests' own CPU times must fill before a
// variation is looked for between them (VariationWindows).
const variationMinWindows = 30

// How a speed variation was estimated (SpeedVariation.Method).
const (
	// VariationWindows: from the spans' CPU times, between the
	// aggregate's windows of one second, beyond the scatter the requests'
	// own demands give each window.
	VariationWindows = "windows"
	// VariationBlocks: from the curve's windows of five seconds, between
	// blocks of up to 30 s, beyond the windows' scatter within a block.
	VariationBlocks = "blocks"
)

// SpeedVariation is what extraction found on one host about how the CPU
// time of the same work wanders from one stretch of time to another,
// beyond what the load explains (the speed curve): a virtual machine
// shares its cores with neighbours whose work comes and goes, and a
// runtime's collector and the caches' contents come and go too.
//
// Where every span on the host carries its CPU time (VariationWindows),
// each window of the aggregate (one second; wider for traces that span
// more than maxWindows seconds) has a cost ratio, the spans' CPU time
// over their operations' mean demands, whose sampling variance the
// operations' own variances give: Σ n·var / (Σ n·mean)². What the ratios
// scatter beyond it, by the random-effects estimator of DerSimonian and
// Laird (Cochran's Q against a chi-squared test at variationLevel), is
// the variation. Queues at the loads predicted settle within a second or
// less, so a speed that holds for a second acts on them about as one that
// holds for minutes would; the variation of blocks of 30 s missed most of
// it (on the testbed 0.05 in the middle of thirteen invocations, where
// windows of a second gave 0.07 to 0.16).
//
// Otherwise (VariationBlocks) the windows' cost ratios (measured over
// expected CPU time), each over what the speed curve gives at its load,
// are cut into blocks of up to 30 s within the segments; a one-way
// analysis of variance with random block effects tells the variance
// between blocks from the scatter of the windows within one (the sampling
// noise of the requests' own demands, garbage collection, the timer's
// grain), which a model's demand distributions already hold. The
// between-block component, when the F test says it is there, is the
// variation: its square root over the mean ratio, a coefficient of
// variation. Changes faster than a block count as noise; a block's speed
// is taken to hold for the whole block.
type SpeedVariation struct {
	// Method is VariationWindows or VariationBlocks.
	Method string `json:"method"`
	// Blocks and Windows are the blocks and windows the analysis used
	// (no blocks for VariationWindows).
	Blocks  int `json:"blocks"`
	Windows int `json:"windows"`
	// Window is the windows' length in seconds (VariationWindows only):
	// the time a speed is taken to hold (model.CPU.SpeedWindow).
	Window float64 `json:"window,omitempty"`
	// Between and Within are the mean squares between blocks and within
	// them, F their ratio and P its p-value. For VariationWindows, Between
	// is the variance between windows beyond their sampling variance,
	// Within the windows' mean sampling variance, F Cochran's Q over its
	// degrees of freedom and P the chi-squared p-value of Q.
	Between float64 `json:"between"`
	Within  float64 `json:"within"`
	F       float64 `json:"f"`
	P       float64 `json:"p"`
	// CV is the coefficient of variation between blocks; 0 when the test
	// did not find one.
	CV float64 `json:"cv"`
	// Skipped says why no variation was looked for or put in.
	Skipped string `json:"skipped,omitempty"`
}

// estimateVariation analyses the windows' cost ratios around c's line (or
// their mean when c put no curve in).
func (c *SpeedCurve) estimateVariation(wins map[int64]curveWin, cores float64) *SpeedVariation {
	v := &SpeedVariation{Method: VariationBlocks}
	var blocks [][]float64
	for _, keys := range curveSegments(wins, 2) {
		for start := 0; start < len(keys); {
			end := min(start+variationBlock, len(keys))
			if len(keys)-end < 2 {
				end = len(keys) // a short rest joins the last block
			}
			var b []float64
			for _, k := range keys[start:end] {
				w := wins[k]
				b = append(b, w.busy/w.work/c.ratioAt(w.work/curveWindow/cores))
			}
			if len(b) >= 2 {
				blocks = append(blocks, b)
			}
			start = end
		}
	}
	v.Blocks = len(blocks)
	n := 0
	for _, b := range blocks {
		n += len(b)
	}
	v.Windows = n
	if v.Blocks < variationMinBlocks || n-v.Blocks < variationMinResidual {
		v.Skipped = fmt.Sprintf("%d blocks of 2 to %d windows, fewer than %d (or too few windows in them)", v.Blocks, variationBlock, variationMinBlocks)
		return v
	}
	grand := 0.0
	for _, b := range blocks {
		for _, r := range b {
			grand += r
		}
	}
	grand /= float64(n)
	var ssb, ssw, sumSq float64
	for _, b := range blocks {
		m := 0.0
		for _, r := range b {
			m += r
		}
		m /= float64(len(b))
		ssb += float64(len(b)) * (m - grand) * (m - grand)
		for _, r := range b {
			ssw += (r - m) * (r - m)
		}
		sumSq += float64(len(b) * len(b))
	}
	dfb, dfw := float64(v.Blocks-1), float64(n-v.Blocks)
	v.Between, v.Within = ssb/dfb, ssw/dfw
	if !(v.Within > 0) {
		v.Skipped = "no scatter within blocks"
		return v
	}
	v.F = v.Between / v.Within
	v.P = 1 - distuv.F{D1: dfb, D2: dfw}.CDF(v.F)
	if !(v.P < 1-variationLevel) {
		v.Skipped = fmt.Sprintf("no variance between blocks beyond the windows' scatter (F = %.2f, p = %.2g)", v.F, v.P)
		return v
	}
	// The blocks' mean size for unequal blocks (the n₀ of random-effects
	// analysis of variance).
	n0 := (float64(n) - sumSq/float64(n)) / dfb
	between := (v.Between - v.Within) / n0
	if !(between > 0) || !(grand > 0) {
		v.Skipped = "no variance between blocks left"
		return v
	}
	v.CV = min(math.Sqrt(between)/grand, model.MaxSpeedVariation)
	return v
}

// ratioAt is c's line at utilization x (1 without a curve): what the
// cost ratio is expected to be at that load.
func (c *SpeedCurve) ratioAt(x float64) float64 {
	if len(c.Points) == 0 {
		return 1
	}
	return c.Intercept + c.Slope*x
}

// estimateWindowVariation analyses h's windows (every span there carries
// its CPU time; see SpeedVariation, VariationWindows): mean and cpuVar
// are each operation's mean CPU time per execution and its variance. The
// first and last window of each stretch of work are left out, as partly
// covered.
func (c *SpeedCurve) estimateWindowVariation(h *hostWindows, mean, cpuVar map[string]float64, cores float64) *SpeedVariation {
	width := float64(h.width) / 1e9
	v := &SpeedVariation{Method: VariationWindows, Window: width}
	type obs struct{ r, noise float64 }
	all := map[int64]obs{}
	wins := map[int64]curveWin{}
	for idx, cells := range h.cells {
		var busy, work, vr float64
		for op, cl := range cells {
			busy += cl.cpu
			work += cl.n * mean[h.ops[op]]
			vr += cl.n * cpuVar[h.ops[op]]
		}
		if !(work > 0) || !(busy > 0) || !(vr > 0) {
			continue
		}
		line := c.ratioAt(work / width / cores)
		if !(line > 0) {
			continue
		}
		all[idx] = obs{r: busy / work / line, noise: vr / (work * work) / (line * line)}
		wins[idx] = curveWin{busy: busy, work: work}
	}
	var rs, ws []float64
	for _, seg := range curveSegments(wins, 1) {
		for _, idx := range seg {
			o := all[idx]
			rs, ws = append(rs, o.r), append(ws, 1/o.noise)
		}
	}
	k := len(rs)
	v.Windows = k
	if k < variationMinWindows {
		v.Skipped = fmt.Sprintf("%d windows of %.0f s with the spans' CPU time, fewer than %d", k, width, variationMinWindows)
		return v
	}
	var sw, sw2, swr float64
	for i, r := range rs {
		sw, sw2, swr = sw+ws[i], sw2+ws[i]*ws[i], swr+ws[i]*r
	}
	grand := swr / sw
	q := 0.0
	for i, r := range rs {
		q += ws[i] * (r - grand) * (r - grand)
	}
	df := float64(k - 1)
	v.Within = float64(k) / sw
	v.F = q / df
	v.P = 1 - distuv.ChiSquared{K: df}.CDF(q)
	if !(v.P < 1-variationLevel) {
		v.Skipped = fmt.Sprintf("no variance between windows beyond the requests' own scatter (Q/df = %.2f, p = %.2g)", v.F, v.P)
		return v
	}
	v.Between = (q - df) / (sw - sw2/sw)
	if !(v.Between > 0) || !(grand > 0) {
		v.Skipped = "no variance between windows left"
		return v
	}
	v.CV = min(math.Sqrt(v.Between)/grand, model.MaxSpeedVariation)
	return v
}
