package extract

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
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
// without its partly covered windows (its first and last where the
// metrics' coverage is not known); short segments are left out.
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
	if short := curveSegments(map[int64]curveWin{3: {busy: 1, work: 1}, 4: {busy: 1, work: 1}}, 1); len(short) != 0 {
		t.Errorf("two partly covered windows kept: %v", short)
	}
	// Where the metrics' coverage is known, the whole windows stay, the
	// first and last too, and the partly covered ones go, wherever they
	// are.
	covered := map[int64]curveWin{}
	for k, c := range map[int64]float64{10: 5, 11: 5, 12: curveWindow * minCoverage, 13: 1, 14: 5} {
		covered[k] = curveWin{busy: 1, work: 1, covered: c}
	}
	if got := curveSegments(covered, 2); len(got) != 1 || !slices.Equal(got[0], []int64{10, 11, 12, 14}) {
		t.Errorf("by the metrics' coverage: %v, want [[10 11 12 14]]", got)
	}
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

// segmentWins lays out runs of 6 windows with a pause of 10 windows after
// each (each run's first and last windows are partly covered and left
// out): run i at expected utilization loads[i] of one core, its windows'
// measured over expected CPU time ratio(i, x).
func segmentWins(loads []float64, ratio func(i int, x float64) float64) map[int64]curveWin {
	wins := map[int64]curveWin{}
	for i, x := range loads {
		for k := range 6 {
			work := x * curveWindow
			wins[int64(16*i+k)] = curveWin{busy: work * ratio(i, x), work: work}
		}
	}
	return wins
}

// Separate runs at alternating loads, each at one cost: the curve comes from
// the runs' means, beside a drift in time, with the runs' scatter in its
// standard error; too few runs, or runs at one load, leave it to the
// windows.
func TestFitSegments(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 1))
	loads := make([]float64, 12)
	for i := range loads {
		loads[i] = 0.25 + 0.5*float64(i%2)
	}
	scatter := make([]float64, len(loads))
	for i := range scatter {
		scatter[i] = 0.02 * rng.NormFloat64()
	}
	for _, slope := range []float64{-0.3, 0} {
		wins := segmentWins(loads, func(i int, x float64) float64 {
			return 1.2 + slope*x + 0.01*float64(i) + scatter[i] // drift: 0.01 a run
		})
		var c SpeedCurve
		if !c.fitSegments(wins, 1) {
			t.Fatalf("slope %g: 12 runs at two loads not fitted over the segments", slope)
		}
		t.Logf("slope %g: %+v", slope, c)
		if c.Method != CurveSegments || c.Segments != 12 || c.Windows != 48 || c.Low != 0.25 || c.High != 0.75 {
			t.Errorf("slope %g: %+v", slope, c)
		}
		// With the scatter's SD of 0.02 over 12 runs, a fit of the levels
		// would have a standard error of about 0.02/(0.25·√12) = 0.023;
		// the differences' is of that order.
		if !(c.SlopeSE > 0.005 && c.SlopeSE < 0.05) {
			t.Errorf("slope %g: standard error %.3f, want about 0.02", slope, c.SlopeSE)
		}
		if math.Abs(c.Slope-slope) > 3*c.SlopeSE {
			t.Errorf("slope %g: fitted %.3f ± %.3f", slope, c.Slope, c.SlopeSE)
		}
		switch {
		case slope != 0 && len(c.Points) != 2:
			t.Errorf("slope %g: no curve: %s", slope, c.Skipped)
		case slope != 0 && !(c.Points[0].Factor < 1 && c.Points[1].Factor > 1):
			// Dearer at low load: slower there than on average.
			t.Errorf("slope %g: factors %v", slope, c.Points)
		case slope == 0 && len(c.Points) > 0:
			t.Errorf("no slope: a curve %v (%.3f ± %.3f)", c.Points, c.Slope, c.SlopeSE)
		}
	}
	flat := func(int, float64) float64 { return 1.2 }
	if c := new(SpeedCurve); c.fitSegments(segmentWins(loads[:5], flat), 1) {
		t.Errorf("5 runs fitted over the segments: %+v", c)
	}
	same := make([]float64, 12)
	for i := range same {
		same[i] = 0.5 + 0.01*float64(i%3)
	}
	if c := new(SpeedCurve); c.fitSegments(segmentWins(same, flat), 1) {
		t.Errorf("runs at one load fitted over the segments: %+v", c)
	}
}

// The runs of the testbed's invocation of 2026-11-24 09:30 UTC (the
// reference and its load steps, one point per segment as extraction saw
// them): the fit agrees with an independent computation (numpy) of the
// same estimator, −0.300 ± 0.100 with 8 degrees of freedom.
func TestDifferenceRegressionKnown(t *testing.T) {
	x := []float64{0.35487, 0.17167, 0.36405, 0.53213, 0.24734, 0.55679, 0.37298, 0.19070, 0.34041, 0.35694, 0.53808}
	y := []float64{1.32534, 1.33227, 1.28171, 1.19836, 1.18989, 1.04994, 1.10946, 1.26390, 1.24290, 1.23944, 1.18301}
	tm := []float64{0.125, 3.0833, 5.7917, 6.5, 9.4167, 11.5, 13.625, 14.9167, 16.125, 19.2083, 21.0833}
	fit, ok := differenceRegression(x, tm, y)
	if !ok || fit.df != 8 || math.Abs(fit.slope+0.300) > 0.001 || math.Abs(fit.se-0.100) > 0.001 {
		t.Fatalf("ok %v: %+v, want −0.300 ± 0.100, 8 df", ok, fit)
	}
}

// Under no effect of the load, the test rejects at its nominal 5 % whether
// the noise is each run's own or a drift that wanders, and with an effect
// it finds it.
func TestDifferenceRegressionSize(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 2))
	const n, reps = 12, 2000
	x, tm := make([]float64, n), make([]float64, n)
	for i := range n {
		x[i] = []float64{0.45, 0.22, 0.45, 0.66}[i%4]
		tm[i] = 2 * float64(i)
	}
	crit := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: n - 3}.Quantile(0.975)
	rate := func(slope, own, drift float64) float64 {
		hits := 0
		y := make([]float64, n)
		for range reps {
			walk := 0.0
			for i := range n {
				walk += drift * rng.NormFloat64()
				y[i] = 1.2 + slope*x[i] + own*rng.NormFloat64() + walk
			}
			fit, ok := differenceRegression(x, tm, y)
			if !ok {
				t.Fatal("not fitted")
			}
			if math.Abs(fit.slope) > crit*fit.se {
				hits++
			}
		}
		return float64(hits) / reps
	}
	// 5 % of 2000 draws: a standard error of 0.49 %, so above 6.5 % is
	// three of them over.
	for _, c := range []struct{ own, drift float64 }{{0.03, 0}, {0.03, 0.03}, {0.005, 0.05}} {
		r := rate(0, c.own, c.drift)
		t.Logf("own noise %g, drift %g: rejects %.1f %% without an effect", c.own, c.drift, 100*r)
		if r > 0.065 {
			t.Errorf("own noise %g, drift %g: rejects %.1f %% without an effect", c.own, c.drift, 100*r)
		}
	}
	if r := rate(-0.3, 0.03, 0.01); r < 0.7 {
		t.Errorf("slope −0.3, own noise 0.03: found in %.0f %% of draws only", 100*r)
	}
}
