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

// SpeedVariation is what extraction found on one host about how the CPU
// time of the same work wanders from one stretch of time to another,
// beyond what the load explains (the speed curve): a virtual machine
// shares its cores with neighbours whose work comes and goes.
//
// The windows' cost ratios (measured over expected CPU time), each over
// what the speed curve gives at its load, are cut into blocks of up to
// 30 s within the segments; a one-way analysis of variance with random
// block effects tells the variance between blocks from the scatter of the
// windows within one (the sampling noise of the requests' own demands,
// garbage collection, the timer's grain), which a model's demand
// distributions already hold. The between-block component, when the F
// test says it is there, is the variation: its square root over the mean
// ratio, a coefficient of variation. Changes faster than a window count
// as noise; a block's speed is taken to hold for the whole block.
type SpeedVariation struct {
	// Blocks and Windows are the blocks and windows the analysis used.
	Blocks  int `json:"blocks"`
	Windows int `json:"windows"`
	// Between and Within are the mean squares between blocks and within
	// them; F their ratio and P its p-value.
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
	v := &SpeedVariation{}
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
				r := w.busy / w.work
				if len(c.Points) > 0 {
					r /= c.Intercept + c.Slope*w.work/curveWindow/cores
				}
				b = append(b, r)
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
