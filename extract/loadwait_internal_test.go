package extract

import (
	"math"
	"testing"
)

// Windows hold loadWindowExecutions executions on average over the time
// the traces were active: a pause between two load tests does not widen
// them.
func TestGroupWindowsPause(t *testing.T) {
	var cells []opCell
	for _, from := range []int64{0, 360} { // two minutes of load, five minutes apart
		for s := from; s < from+60; s++ {
			cells = append(cells, opCell{id: "op", start: s * 1e9, width: 1e9, c: cell{n: 20}})
		}
	}
	// 2400 executions over 120 s: 200 every 10 s; over the 420 s from the
	// first to the last, 200 every 35 s.
	for _, c := range []struct {
		idle  int64
		width float64
	}{{300e9, 10}, {0, 35}} {
		wins, width := groupWindows(cells, func(string) float64 { return 1 }, c.idle)
		if width != c.width {
			t.Errorf("idle %d s: windows of %g s, want %g", c.idle/1e9, width, c.width)
		}
		n := 0.0
		for _, w := range wins {
			n += w.n
		}
		if n != 2400 {
			t.Errorf("idle %d s: %g executions in the windows", c.idle/1e9, n)
		}
	}
}

// A window at the edge of a load test is only partly covered: its load is
// its busy time over the seconds its executions cover, the same as the
// full windows' at a steady load, not diluted by the pause beside it.
func TestGroupWindowsEdges(t *testing.T) {
	var cells []opCell
	for _, from := range []int64{3, 93} { // 21 s of load from second 3, 90 s apart
		for s := from; s < from+21; s++ {
			cells = append(cells, opCell{id: "op", start: s * 1e9, width: 1e9, c: cell{n: 50}})
		}
	}
	wins, width := groupWindows(cells, func(string) float64 { return 0.004 }, 69e9)
	if width != 5 {
		t.Fatalf("windows of %g s, want 5", width)
	}
	for i, w := range wins {
		if a := meanOverWindows([]loadWin{w}, width, 1, 0, 1, func(a float64) float64 { return a }); a < 0.2-1e-9 || a > 0.2+1e-9 {
			t.Errorf("window %d (%g executions over %g s): load %.3g, want 0.2", i, w.n, w.seconds, a)
		}
	}
}

// lessChance keeps the spread of loads that change (steps between 20 and
// 80 %), takes out a spread no larger than chance's, and keeps the loads'
// mean over time and the executions' total.
func TestLessChance(t *testing.T) {
	steps := []window{{0.2, 200, 5}, {0.8, 800, 5}, {0.2, 200, 5}, {0.8, 800, 5}}
	lessChance(steps, 4)
	// Chance's relative variance, 4 × (1/200 + 1/800)/2 of a mean of 0.5,
	// is 1.4 % of the steps' 0.09.
	if a := steps[1].load; a < 0.79 || a > 0.8 {
		t.Errorf("the step at 80 %% drawn to %.4f", a)
	}
	// Loads 0.5 ± 10 %, from 400 executions each of arrivals of squared
	// cv 4: chance spreads them by 10 %, so nothing is left.
	noisy := []window{{0.45, 360, 5}, {0.55, 440, 5}, {0.45, 360, 5}, {0.55, 440, 5}}
	lessChance(noisy, 4)
	var n float64
	for _, w := range noisy {
		if math.Abs(w.load-0.5) > 1e-12 || math.Abs(w.n-400) > 1e-9 {
			t.Errorf("window drawn to load %.4f, %.4g executions; want 0.5 and 400", w.load, w.n)
		}
		n += w.n
	}
	if math.Abs(n-1600) > 1e-9 {
		t.Errorf("%g executions in all, want 1600", n)
	}
	// Poisson's chance spreads them by 5 %: half the variance is left.
	half := []window{{0.45, 400, 5}, {0.55, 400, 5}}
	lessChance(half, 1)
	// The relative variance 0.01 less chance's 1/400 leaves 0.0075.
	if d := half[1].load - 0.5; math.Abs(d-0.05*math.Sqrt(0.75)) > 1e-9 {
		t.Errorf("drawn to 0.5 + %.5f, want 0.5 + %.5f", d, 0.05*math.Sqrt(0.75))
	}
}
