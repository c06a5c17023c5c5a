package extract

import "testing"

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
		if a := meanOverWindows([]loadWin{w}, width, 1, 0, func(a float64) float64 { return a }); a < 0.2-1e-9 || a > 0.2+1e-9 {
			t.Errorf("window %d (%g executions over %g s): load %.3g, want 0.2", i, w.n, w.seconds, a)
		}
	}
}
