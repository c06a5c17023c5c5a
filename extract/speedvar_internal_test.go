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
