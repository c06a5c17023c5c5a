package extract

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The load's coefficient is recovered beside a drift in time, and a drift
// alone, in traces whose load alternates, is not taken for it.
func TestTrendRegression(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 1))
	const n = 96
	hits := 0
	for _, slope := range []float64{-0.3, 0} {
		x, tm, y := make([]float64, n), make([]float64, n), make([]float64, n)
		noise := 0.0
		for i := range n {
			x[i] = 0.25
			if (i/12)%2 == 1 { // steps of a minute, alternating
				x[i] = 0.6
			}
			tm[i] = float64(i) / 12
			noise = 0.6*noise + 0.03*rng.NormFloat64() // correlated in time
			y[i] = 1 + slope*x[i] + 0.04*tm[i] + noise
		}
		fit, ok := trendRegression(x, tm, y, make([]int, n))
		if !ok || !(fit.se > 0) {
			t.Fatalf("slope %g: ok %v, se %g", slope, ok, fit.se)
		}
		if math.Abs(fit.slope-slope) > 3*fit.se {
			t.Errorf("slope %g: fitted %.3f ± %.3f", slope, fit.slope, fit.se)
		}
		if math.Abs(fit.trends[0]-0.04) > 0.02 {
			t.Errorf("slope %g: time trend %.3f, want 0.04", slope, fit.trends[0])
		}
		if math.Abs(fit.slope) > 2*fit.se {
			hits++
		}
	}
	if hits != 1 {
		t.Errorf("%d of the two cases significant, want only the one with a slope", hits)
	}
	// Load that only rises with time: the two are not told apart.
	x, tm, y := make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range n {
		tm[i] = float64(i) / 12
		x[i] = 0.2 + 0.05*tm[i]
		y[i] = 1 + 0.04*tm[i] + 0.01*rng.NormFloat64()
	}
	if _, ok := trendRegression(x, tm, y, make([]int, n)); ok {
		t.Error("load collinear with time: fitted anyway")
	}
}

// Two segments of traces with a pause between them, the machine slower
// after it and drifting the other way: each gets its own level and trend,
// and the load's coefficient is recovered.
func TestTrendRegressionSegments(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 1))
	const n = 48 // windows per segment
	var x, tm, y []float64
	var seg []int
	for s, p := range []struct{ level, trend float64 }{{1, 0.04}, {1.3, -0.03}} {
		noise := 0.0
		for i := range n {
			load := 0.25
			if (i/12+s)%2 == 1 {
				load = 0.6
			}
			minute := float64(i) / 12
			noise = 0.6*noise + 0.03*rng.NormFloat64()
			x, tm, seg = append(x, load), append(tm, minute), append(seg, s)
			y = append(y, p.level-0.3*load+p.trend*minute+noise)
		}
	}
	fit, ok := trendRegression(x, tm, y, seg)
	if !ok {
		t.Fatal("not fitted")
	}
	if math.Abs(fit.slope+0.3) > 3*fit.se || !(math.Abs(fit.slope) > 2*fit.se) {
		t.Errorf("slope %.3f ± %.3f, want -0.3", fit.slope, fit.se)
	}
	// Levels at each segment's mean time (minute 1.96).
	for s, want := range []float64{1 + 0.04*1.96, 1.3 - 0.03*1.96} {
		if math.Abs(fit.levels[s]-want) > 0.05 {
			t.Errorf("segment %d: level %.3f, want %.3f", s, fit.levels[s], want)
		}
	}
	if math.Abs(fit.trends[1]+0.03) > 0.03 {
		t.Errorf("segment 1: trend %.3f, want -0.03", fit.trends[1])
	}
	// One level and trend for both segments: the step between them, which
	// lines up with no load, is noise that widens the interval.
	one, ok := trendRegression(x, tm, y, make([]int, len(y)))
	if !ok || !(one.se > 1.5*fit.se) {
		t.Errorf("one segment: %.3f ± %.3f; segmented ± %.3f", one.slope, one.se, fit.se)
	}
}

// Pauses of curveGap windows or more cut the windows into segments, each
// without its first and last window; short segments are left out.
func TestCurveSegments(t *testing.T) {
	wins := map[int64]curveWin{}
	add := func(from, to int64) {
		for k := from; k < to; k++ {
			wins[k] = curveWin{busy: 1, work: 1}
		}
	}
	add(0, 10)                            // segment: 1..8
	add(12, 20)                           // two windows missing: the same segment, 12..18
	add(24, 28)                           // after three missing windows: 25..26, too short
	add(40, 50)                           // 41..48
	wins[45] = curveWin{busy: 0, work: 1} // no CPU time: not a window of work
	got := curveSegments(wins, curveMinSegment)
	want := [][2]int64{{1, 18}, {41, 48}}
	if len(got) != len(want) {
		t.Fatalf("segments %v", got)
	}
	for i, w := range want {
		if got[i][0] != w[0] || got[i][len(got[i])-1] != w[1] {
			t.Errorf("segment %d: %v, want %d..%d", i, got[i], w[0], w[1])
		}
	}
}
