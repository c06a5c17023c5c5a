package extract

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/perfcast/perfcast/model"
)

// variedWindows makes segments of 8 windows (the first and last of each
// are dropped as partly covered, leaving one block of 6) separated by
// pauses, with the cost ratio line(x)·s_b·(1 + noise): s_b lognormal of
// mean 1 and coefficient of variation cv per segment, the noise normal
// with standard deviation within per window. Segments alternate between
// loads of 0.25 and 0.75 of one core.
func variedWindows(seed uint64, segments int, cv, within float64, line func(x float64) float64) map[int64]curveWin {
	r := rand.New(rand.NewPCG(seed, 1))
	sigma := math.Sqrt(math.Log1p(cv * cv))
	wins := map[int64]curveWin{}
	k := int64(0)
	for s := range segments {
		x := 0.25
		if s%2 == 1 {
			x = 0.75
		}
		speed := math.Exp(sigma*r.NormFloat64() - sigma*sigma/2)
		for range 8 {
			work := x * curveWindow
			wins[k] = curveWin{work: work, busy: work * line(x) * speed * (1 + within*r.NormFloat64())}
			k++
		}
		k += curveGap + 1
	}
	return wins
}

// TestSpeedVariationRecovered: over 400 blocks the between-block
// coefficient of variation comes back within four standard errors of
// the truth, the standard error of the variance component being
// √(2(σ²ᵦ + σ²ᵥ/n)²/(B−1) + 2(σ²ᵥ/n)²/(N−B)) (random-effects analysis of
// variance), halved for the square root. The load's effect, taken out by
// the speed curve's line, is not counted; left in, it would be.
func TestSpeedVariationRecovered(t *testing.T) {
	const cv, within, blocks, n = 0.1, 0.05, 400, 6
	line := func(x float64) float64 { return 1.2 - 0.4*x }
	wins := variedWindows(7, blocks, cv, within, line)
	c := &SpeedCurve{Intercept: 1.2, Slope: -0.4, Points: []model.SpeedPoint{{Utilization: 0.25, Factor: 1}, {Utilization: 0.75, Factor: 1}}}
	v := c.estimateVariation(wins, 1)
	if v.Blocks != blocks || v.Windows != blocks*n {
		t.Fatalf("%d blocks of %d windows, want %d and %d", v.Blocks, v.Windows, blocks, blocks*n)
	}
	sb, sw := cv*cv, within*within/n
	se := math.Sqrt(2*(sb+sw)*(sb+sw)/(blocks-1)+2*sw*sw/(blocks*n-blocks)) / sb / 2
	if math.Abs(v.CV-cv) > 4*se*cv {
		t.Errorf("cv %.4f, truth %.4f (4 standard errors %.4f); %+v", v.CV, cv, 4*se*cv, v)
	}
	t.Logf("cv %.4f, truth %.4f, standard error %.4f", v.CV, cv, se*cv)
	flat := (&SpeedCurve{}).estimateVariation(wins, 1)
	if !(flat.CV > v.CV+4*se*cv) {
		t.Errorf("without the line, cv %.4f: the load's effect (ratios 1.1 and 0.9) should add to it", flat.CV)
	}
}

// TestSpeedVariationNone: without variation between blocks the F test
// finds none (at this seed; it is a 5 % test), and too few blocks give no
// estimate.
func TestSpeedVariationNone(t *testing.T) {
	wins := variedWindows(11, 60, 0, 0.05, func(float64) float64 { return 1 })
	v := (&SpeedCurve{}).estimateVariation(wins, 1)
	if v.CV != 0 || v.Skipped == "" || !(v.P >= 0.05) {
		t.Errorf("no variation: %+v", v)
	}
	few := (&SpeedCurve{}).estimateVariation(variedWindows(3, 5, 0.3, 0.05, func(float64) float64 { return 1 }), 1)
	if few.CV != 0 || few.Skipped == "" {
		t.Errorf("five blocks: %+v", few)
	}
}

// spanWindows makes a host's windows of one second as spans carrying
// their CPU times fill them: segments of 62 windows (the first and last
// of each are left out as partly covered, leaving 60) separated by
// pauses, alternating between loads of 0.25 and 0.75 of one core. Two
// operations, of 10 ms (cv 0.25) and 0.3 ms (cv 0.5) of CPU on average,
// are called 1 : 2; each window's CPU times are multiplied by
// line(load)·s, s lognormal of mean 1 and coefficient of variation cv per
// window. It returns the windows and, as extraction measures them over
// all executions, each operation's mean CPU time and its variance.
func spanWindows(seed uint64, segments int, cv float64, line func(x float64) float64) (*hostWindows, map[string]float64, map[string]float64) {
	r := rand.New(rand.NewPCG(seed, 2))
	sigma := math.Sqrt(math.Log1p(cv * cv))
	lognormal := func(mean, cv float64) float64 {
		s := math.Sqrt(math.Log1p(cv * cv))
		return mean * math.Exp(s*r.NormFloat64()-s*s/2)
	}
	poisson := func(mean float64) int { // by counting exponential gaps
		n := 0
		for t := r.ExpFloat64(); t < mean; t += r.ExpFloat64() {
			n++
		}
		return n
	}
	ops := []struct {
		name      string
		mean, cv  float64
		perSecond float64 // at one core's load
	}{{"svc/big", 0.010, 0.25, 0}, {"svc/small", 0.0003, 0.5, 0}}
	// Per second at load 1: k big and 2k small executions fill the core.
	k := 1 / (ops[0].mean + 2*ops[1].mean)
	ops[0].perSecond, ops[1].perSecond = k, 2*k
	h := &hostWindows{width: windowWidth, index: map[string]int{}, cells: map[int64][]cell{}}
	sum, sq, cnt := map[string]float64{}, map[string]float64{}, map[string]float64{}
	idx := int64(0)
	for s := range segments {
		x := 0.25
		if s%2 == 1 {
			x = 0.75
		}
		for range 62 {
			speed := line(x) * math.Exp(sigma*r.NormFloat64()-sigma*sigma/2)
			for _, o := range ops {
				n := poisson(o.perSecond * x)
				c := cell{n: float64(n), cpuN: float64(n)}
				for range n {
					d := lognormal(o.mean, o.cv) * speed
					c.cpu += d
					sum[o.name] += d
					sq[o.name] += d * d
					cnt[o.name]++
				}
				h.add(h.opIndex(o.name), idx, c)
			}
			idx++
		}
		idx += curveGap + 1
	}
	mean, variance := map[string]float64{}, map[string]float64{}
	for name, n := range cnt {
		m := sum[name] / n
		mean[name], variance[name] = m, (sq[name]-n*m*m)/(n-1)
	}
	return h, mean, variance
}

// TestSpeedVariationWindowsRecovered: over 1200 windows of a second the
// variation between them comes back within four standard errors of the
// truth, the standard error of the DerSimonian–Laird variance being about
// √(2(τ² + σ̄²)²/k) for k windows of sampling variance σ̄², halved for the
// square root. The operations' variances, measured over all executions,
// hold the variation too and make the estimate a little low (about 1 %
// here), well inside that. The load's effect, taken out by the speed
// curve's line, is not counted; left in, it would be.
func TestSpeedVariationWindowsRecovered(t *testing.T) {
	const cv = 0.1
	line := func(x float64) float64 { return 1.2 - 0.4*x }
	h, mean, variance := spanWindows(5, 20, cv, line)
	c := &SpeedCurve{Intercept: 1.2, Slope: -0.4, Points: []model.SpeedPoint{{Utilization: 0.25, Factor: 1}, {Utilization: 0.75, Factor: 1}}}
	v := c.estimateWindowVariation(h, mean, variance, 1)
	if v.Method != VariationWindows || v.Windows != 20*60 || v.Window != 1 {
		t.Fatalf("%d windows of %g s by %q, want %d of 1 s by %q", v.Windows, v.Window, v.Method, 20*60, VariationWindows)
	}
	tau2 := cv * cv
	se := math.Sqrt(2*(tau2+v.Within)*(tau2+v.Within)/float64(v.Windows)) / tau2 / 2
	if math.Abs(v.CV-cv) > 4*se*cv {
		t.Errorf("cv %.4f, truth %.4f (4 standard errors %.4f); %+v", v.CV, cv, 4*se*cv, v)
	}
	t.Logf("cv %.4f, truth %.4f, standard error %.4f; %+v", v.CV, cv, se*cv, v)
	flat := (&SpeedCurve{}).estimateWindowVariation(h, mean, variance, 1)
	if !(flat.CV > v.CV+4*se*cv) {
		t.Errorf("without the line, cv %.4f: the load's effect (ratios 1.1 and 0.9) should add to it", flat.CV)
	}
}

// TestSpeedVariationWindowsNone: without variation between windows the
// chi-squared test finds none (at this seed; it is a 5 % test), and too
// few windows give no estimate.
func TestSpeedVariationWindowsNone(t *testing.T) {
	h, mean, variance := spanWindows(9, 10, 0, func(float64) float64 { return 1 })
	v := (&SpeedCurve{}).estimateWindowVariation(h, mean, variance, 1)
	if v.CV != 0 || v.Skipped == "" || !(v.P >= 0.05) {
		t.Errorf("no variation: %+v", v)
	}
	few, fm, fv := spanWindows(3, 1, 0.3, func(float64) float64 { return 1 })
	for idx := range few.cells {
		if idx >= 20 {
			delete(few.cells, idx)
		}
	}
	if v := (&SpeedCurve{}).estimateWindowVariation(few, fm, fv, 1); v.CV != 0 || v.Skipped == "" {
		t.Errorf("18 windows: %+v", v)
	}
}
