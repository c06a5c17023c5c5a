package extract

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestTheilSenManyWindows fits a line through 20 000 windows, a tenth of
// them spells far above it: pooled into delayFitPoints groups, the fit
// keeps the line's slope within 2 % and its intercept within 5 %, where a
// mean would hold the spells (1 ms, twice the intercept). The intercept
// is a median, and with a tenth of the windows above the line the median
// of the rest sits 0.14 of their noise's standard deviation above it
// (0.9·Φ(q) = 0.5): 0.014 ms, 2.8 % here; the first 1 000 windows, not
// pooled, give the same.
func TestTheilSenManyWindows(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	pts := make([]delayPoint, 20000)
	for i := range pts {
		x := r.Float64() * 4e-3
		y := 0.5e-3 + 0.8*x + r.NormFloat64()*0.1e-3
		if r.Float64() < 0.1 {
			y += 20e-3 * r.Float64()
		}
		pts[i] = delayPoint{x: x, y: y, w: 200 + 100*r.Float64()}
	}
	binned := binByX(pts, delayFitPoints)
	if len(binned) != delayFitPoints {
		t.Fatalf("%d points pooled into %d, want %d", len(pts), len(binned), delayFitPoints)
	}
	slope, intercept := theilSen(binned)
	t.Logf("slope %.4g, intercept %.4g ms", slope, intercept*1e3)
	if math.Abs(slope-0.8) > 0.02*0.8 || math.Abs(intercept-0.5e-3) > 0.05*0.5e-3 {
		t.Errorf("slope %.4g, intercept %.4g ms; want 0.8 and 0.5 ms", slope, intercept*1e3)
	}
	s, i := theilSen(pts[:1000])
	t.Logf("1 000 windows not pooled: slope %.4g, intercept %.4g ms", s, i*1e3)
	if math.Abs(s-0.8) > 0.02*0.8 || math.Abs(i-0.5e-3) > 0.05*0.5e-3 {
		t.Errorf("not pooled: slope %.4g, intercept %.4g ms; want 0.8 and 0.5 ms", s, i*1e3)
	}
}

// BenchmarkTheilSen fits a line through delayFitPoints windows, the most
// one operation's fixed delay is fitted through.
func BenchmarkTheilSen(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	pts := make([]delayPoint, delayFitPoints)
	for i := range pts {
		x := r.Float64() * 4e-3
		pts[i] = delayPoint{x: x, y: 0.5e-3 + 0.8*x + r.NormFloat64()*0.1e-3, w: 200}
	}
	for b.Loop() {
		theilSen(pts)
	}
}
