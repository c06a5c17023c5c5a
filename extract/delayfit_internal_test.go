package extract

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/perfcast/perfcast/model"
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

// TestResumeBursts splits an operation's CPU into 1 + 1.5 bursts: the
// first where the CPU was, then a loop of 1.5 resumes on average, each a
// share of the fixed delay and a burst. The CPU and the fixed delay per
// execution stay as they were; a delay the calls' behaviour ends with (an
// external call) is not the fixed delay and stays whole.
func TestResumeBursts(t *testing.T) {
	g := &generator{rep: &Report{}}
	steps := []model.Step{
		{Kind: model.StepCPU, Demand: model.Exp(6e-3)},
		{Kind: model.StepCall, Target: "db/query"},
		{Kind: model.StepDelay, Demand: model.Det(1e-3)},
		{Kind: model.StepDelay, Demand: model.Exp(0.4e-3)},
	}
	for _, c := range []struct {
		delayAt     int
		fixed, rest float64 // the fixed delay per execution, the other delay
	}{{3, 0.4e-3, 1e-3}, {-1, 0, 1.4e-3}} {
		out := g.resumeBursts("svc/op", slices.Clone(steps), c.delayAt, delayFit{slope: 1.5}, 0)
		if len(out) != 5 || out[0].Kind != model.StepCPU || out[1].Kind != model.StepLoop || out[2].Kind != model.StepCall {
			t.Fatalf("delayAt %d: steps %+v", c.delayAt, out)
		}
		if got := out[1].Times.Mean(); math.Abs(got-1.5) > 1e-9 {
			t.Errorf("delayAt %d: %.3g resumes, want 1.5", c.delayAt, got)
		}
		loop := out[1]
		var cpu, fixed, other float64
		cpu = out[0].Demand.Mean()
		for _, s := range loop.Steps {
			switch s.Kind {
			case model.StepCPU:
				cpu += loop.Times.Mean() * s.Demand.Mean()
			case model.StepDelay:
				fixed += loop.Times.Mean() * s.Demand.Mean()
			}
		}
		if c.delayAt >= 0 {
			fixed += out[4].Demand.Mean()
			other = out[3].Demand.Mean()
		} else {
			other = out[3].Demand.Mean() + out[4].Demand.Mean()
		}
		if math.Abs(cpu-6e-3) > 1e-12 || math.Abs(fixed-c.fixed) > 1e-12 || math.Abs(other-c.rest) > 1e-12 {
			t.Errorf("delayAt %d: CPU %.4g ms, fixed delay %.4g ms, other delays %.4g ms; want 6, %.4g, %.4g",
				c.delayAt, cpu*1e3, fixed*1e3, other*1e3, c.fixed*1e3, c.rest*1e3)
		}
	}
}
