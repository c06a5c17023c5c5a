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
