package extract

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/perfcast/perfcast/model"
)

// phase is a stretch of a varying arrival rate: from rate from to rate to,
// linearly, over secs seconds.
type phase struct{ secs, from, to float64 }

// renewal draws the arrival times of a renewal process whose gaps are
// gamma with coefficient of variation cv (1: Poisson) at the rates of the
// phases, and returns them as a workload's statistics.
func renewal(r *rand.Rand, cv float64, batch int, phases ...phase) *entryStats {
	e := &entryStats{perSecond: map[int64]int64{}, arrivals: newArrivalSample()}
	for _, at := range renewalTimes(r, cv, batch, phases...) {
		e.perSecond[floorDiv(at, 1e9)]++
		e.arrivals.add(at)
		e.count++
	}
	return e
}

// renewalTimes draws the arrival times (nanoseconds) of a renewal process
// whose gaps are gamma with coefficient of variation cv at the rates of the
// phases, by drawing it at rate 1 and mapping it through the inverse of the
// cumulative rate; each arrival brings batch requests.
func renewalTimes(r *rand.Rand, cv float64, batch int, phases ...phase) []int64 {
	var times []int64
	gap := model.Gamma(1, cv)
	// cum[k] is the cumulative rate at the start of phase k.
	cum := []float64{0}
	for _, p := range phases {
		cum = append(cum, cum[len(cum)-1]+p.secs*(p.from+p.to)/2)
	}
	start := 0.0
	k := 0
	for u := gap.Sample(r); ; u += gap.Sample(r) {
		for k < len(phases) && u >= cum[k+1] {
			start += phases[k].secs
			k++
		}
		if k == len(phases) {
			return times
		}
		// Solve from·x + (to−from)·x²/(2·secs) = u − cum[k] for x.
		p, left := phases[k], u-cum[k]
		x := left / p.from
		if slope := (p.to - p.from) / p.secs; slope != 0 {
			x = (-p.from + math.Sqrt(p.from*p.from+2*slope*left)) / slope
		}
		at := int64((start + x) * 1e9)
		for range batch {
			times = append(times, at)
		}
	}
}

// ramped is the rate rising from 0 to peak over ramp seconds, staying for
// steady seconds and falling back to 0 over ramp seconds.
func ramped(peak, ramp, steady float64) []phase {
	return []phase{{ramp, 0, peak}, {steady, peak, peak}, {ramp, peak, 0}}
}

func TestArrivalCVTakesChangingRatesForPoisson(t *testing.T) {
	// Over 200 data sets each, Poisson arrivals with ramps at both ends,
	// or with a step from 10 to 40 per second, are taken for Poisson at
	// least 90 % of the time (the test is at two standard errors: about
	// 95 %).
	for _, c := range []struct {
		name   string
		phases []phase
	}{
		{"ramps", ramped(20, 10, 60)},
		{"step", []phase{{60, 10, 10}, {60, 40, 40}}},
	} {
		r := rand.New(rand.NewPCG(1, 2))
		poisson := 0
		for range 200 {
			if cv, _ := arrivalCV(renewal(r, 1, 1, c.phases...), &activity{}); cv == 1 {
				poisson++
			}
		}
		if poisson < 180 {
			t.Errorf("%s: Poisson taken for Poisson %d times of 200, want at least 180", c.name, poisson)
		}
	}
}

func TestArrivalCVRecoversGammaGaps(t *testing.T) {
	// Renewal arrivals with ramps: the mean estimate over 50 data sets is
	// within 3 % of the cv they were drawn with.
	for _, want := range []float64{0.5, 1.5, 2} {
		r := rand.New(rand.NewPCG(5, 6))
		var sum float64
		const runs = 50
		for range runs {
			cv, _ := arrivalCV(renewal(r, want, 1, ramped(20, 10, 120)...), &activity{})
			if cv == 1 {
				t.Fatalf("cv %g taken for Poisson", want)
			}
			sum += cv
		}
		if mean := sum / runs; math.Abs(mean/want-1) > 0.03 {
			t.Errorf("mean cv estimate %.3f, want %g ± 3 %%", mean, want)
		}
	}
}

func TestArrivalCVSeesBatches(t *testing.T) {
	// Requests in pairs: every other gap is 0, the others exponential with
	// twice the mean, so the gaps' squared cv is 3.
	r := rand.New(rand.NewPCG(3, 4))
	var sum float64
	const runs = 50
	for range runs {
		cv, _ := arrivalCV(renewal(r, 1, 2, ramped(15, 10, 300)...), &activity{})
		if cv == 1 {
			t.Fatalf("batched arrivals taken for Poisson")
		}
		sum += cv
	}
	if mean := sum / runs; math.Abs(mean-math.Sqrt(3)) > 0.05 {
		t.Errorf("mean cv of batched arrivals %.3f, want √3 ± 0.05", mean)
	}
}

func TestArrivalCVSkipsIdleStretches(t *testing.T) {
	// Two stretches of Poisson arrivals at very different rates with two
	// idle minutes between them, in one block of the sample: with the
	// minutes known as idle, no gap spans them and the arrivals are
	// Poisson; without, the gap is still split off as a pause
	// (splitPauses), where it alone would be burstiness.
	r := rand.New(rand.NewPCG(7, 8))
	e := renewal(r, 1, 1, phase{60, 30, 30}, phase{120, 0, 0}, phase{60, 5, 5})
	idle := &activity{gaps: []idleGap{{60, 180}}}
	// Each of the two runs loses its first half window and last half
	// window and one: w+1 gaps.
	if cv, n := arrivalCV(e, idle); cv != 1 || n != int(e.count)-2*(arrivalWindow+1) {
		t.Errorf("with the idle minutes: cv %g over %d gaps of %d arrivals, want 1 over all but %d", cv, n, e.count, 2*(arrivalWindow+1))
	}
	if cv, _ := arrivalCV(e, &activity{}); cv != 1 {
		t.Errorf("without the idle minutes: cv %g, want 1", cv)
	}
	// A pause of 8 s, too short to be idle time for the rates, between
	// two stretches at 30/s: split off, the arrivals are Poisson; one gap
	// of 8 s among 2 700 of 33 ms would give a cv of 3.5.
	e = renewal(r, 1, 1, phase{60, 30, 30}, phase{8, 0, 0}, phase{30, 30, 30})
	if cv, _ := arrivalCV(e, &activity{}); cv != 1 {
		t.Errorf("with a pause of 8 s: cv %g, want 1", cv)
	}
	// Bursty arrivals keep their long gaps: they are far shorter than
	// twenty times the mean.
	e = renewal(r, 2, 1, phase{600, 30, 30})
	if cv, _ := arrivalCV(e, &activity{}); math.Abs(cv-2) > 0.2 {
		t.Errorf("gamma gaps of cv 2: cv %g", cv)
	}
}

func TestArrivalSampleIsBounded(t *testing.T) {
	// Three hours of gamma arrivals (cv 1.5) at 200 per second, 60 000
	// per block: the sample holds arrivalBlocks blocks, each of fewer
	// than twice arrivalBlockCap arrivals (a block is cut back to its
	// share when it reaches twice it) and giving arrivalBlockCap of them,
	// from blocks spread over the three hours, and still gives the cv back.
	r := rand.New(rand.NewPCG(11, 12))
	e := renewal(r, 1.5, 1, phase{3 * 3600, 200, 200})
	var first, last int64 = math.MaxInt64, math.MinInt64
	for b, blk := range e.arrivals.blocks {
		if n := len(blk.times); n >= 2*arrivalBlockCap {
			t.Errorf("block %d holds %d arrivals, want fewer than %d", b, n, 2*arrivalBlockCap)
		}
		if n := len(blk.sorted(arrivalBlockCap)); n != arrivalBlockCap {
			t.Errorf("block %d gives %d arrivals, want %d", b, n, arrivalBlockCap)
		}
		first, last = min(first, b), max(last, b)
	}
	if len(e.arrivals.blocks) != arrivalBlocks {
		t.Errorf("%d blocks of %d arrivals, want %d", len(e.arrivals.blocks), e.count, arrivalBlocks)
	}
	if span := (last - first + 1) * arrivalBlock / 1e9; span < 3600 {
		t.Errorf("the kept blocks span %d s of 3 hours", span)
	}
	if cv, n := arrivalCV(e, &activity{}); math.Abs(cv-1.5) > 0.06 {
		t.Errorf("cv %g over %d gaps, want 1.5", cv, n)
	}
}

func TestArrivalSampleMerges(t *testing.T) {
	// Two hours of arrivals split at random into three parts, as states of
	// disjoint traces, each part in shuffled order: merged in any order,
	// the parts keep exactly the arrivals the whole keeps.
	r := rand.New(rand.NewPCG(13, 14))
	times := renewalTimes(r, 1, 1, phase{2 * 3600, 20, 60})
	whole := newArrivalSample()
	for _, at := range times {
		whole.add(at)
	}
	want := whole.runs(&activity{})
	r.Shuffle(len(times), func(i, j int) { times[i], times[j] = times[j], times[i] })
	parts := []*arrivalSample{newArrivalSample(), newArrivalSample(), newArrivalSample()}
	for _, at := range times {
		parts[r.IntN(len(parts))].add(at)
	}
	for _, order := range [][]int{{0, 1, 2}, {2, 0, 1}, {1, 2, 0}} {
		m := newArrivalSample()
		for _, i := range order {
			m.merge(parts[i])
		}
		got := m.runs(&activity{})
		if !slices.EqualFunc(got, want, slices.Equal) {
			t.Errorf("merged in order %v: %d runs, want the whole's %d, or other arrivals", order, len(got), len(want))
		}
	}
}

func TestArrivalCVNeedsGaps(t *testing.T) {
	// 150 arrivals give 149 gaps, fewer than arrivalMinGaps: even in pairs
	// they are taken for Poisson.
	r := rand.New(rand.NewPCG(9, 10))
	e := renewal(r, 1, 2, phase{7.5, 10, 10})
	if cv, _ := arrivalCV(e, &activity{}); cv != 1 {
		t.Errorf("cv %g from %d arrivals, want 1", cv, e.count)
	}
}

func TestPoissonRescaledSD(t *testing.T) {
	// Exponential gaps (w → ∞): 2. For w = 40, 1000 simulated data sets
	// of 2800 gaps gave 2.42, the windows' overlap included.
	if got := poissonRescaledSD(1e9); math.Abs(got-2) > 1e-3 {
		t.Errorf("w → ∞: %.4f, want 2", got)
	}
	if got := poissonRescaledSD(40); math.Abs(got-2.2835) > 1e-3 {
		t.Errorf("w = 40: %.4f, want 2.2835", got)
	}
}

// Two gamma streams of cv 1.5, at 50 and 25 a second, merged: the merge's
// cv is that of the merged gaps (less than either stream's; 2.01 squared
// over a long simulation), and streams kept in part are thinned as random
// thinning thins (p·c² + 1 − p).
func TestMergedArrivals(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	const secs = 600
	a := renewal(r, 1.5, 1, phase{secs, 50, 50})
	b := renewal(r, 1.5, 1, phase{secs, 25, 25})
	merged := mergedArrivals([]*arrivalSample{a.arrivals, b.arrivals}, []float64{1, 1})
	var all []int64
	for _, blk := range merged.blocks {
		all = append(all, blk.times...)
	}
	if len(all) < 30000 {
		t.Fatalf("%d arrivals merged of %d", len(all), a.count+b.count)
	}
	cv, n := sampleCV(merged, &activity{})
	// The cv's standard error over 40 000 gaps of squared cv 2 is about
	// 2 %; 0.1 is over three.
	want := math.Sqrt(2.01)
	t.Logf("merged: cv %.3g over %d gaps, want about %.3g", cv, n, want)
	if math.Abs(cv-want) > 0.1 {
		t.Errorf("merged: cv %.3g over %d gaps, want about %.3g", cv, n, want)
	}
	// A third of a stream of cv 2: squared cv 0.3·4 + 0.7 = 1.9.
	c := renewal(r, 2, 1, phase{1800, 50, 50})
	thinned := mergedArrivals([]*arrivalSample{c.arrivals}, []float64{0.3})
	cv, n = sampleCV(thinned, &activity{})
	want = math.Sqrt(1.9)
	t.Logf("thinned: cv %.3g over %d gaps, want %.3g", cv, n, want)
	if math.Abs(cv-want) > 0.1 {
		t.Errorf("thinned: cv %.3g over %d gaps, want %.3g", cv, n, want)
	}
	kept := 0
	for _, blk := range thinned.blocks {
		kept += len(blk.times)
	}
	if f := float64(kept) / float64(min(c.count, arrivalBlocks*arrivalBlockCap)); math.Abs(f-0.3) > 0.02 {
		t.Errorf("kept %.3f of the arrivals, want 0.3", f)
	}
	// Twenty streams of 15 000 arrivals in one block: the merge keeps
	// the first arrivalBlockCap of their 300 000.
	var many []*arrivalSample
	for range 20 {
		many = append(many, renewal(r, 1, 1, phase{300, 50, 50}).arrivals)
	}
	big := mergedArrivals(many, slices.Repeat([]float64{1}, 20))
	for b, blk := range big.blocks {
		if n := len(blk.times); n > arrivalBlockCap || !slices.IsSorted(blk.times) {
			t.Errorf("merged block %d: %d arrivals (sorted: %v), want at most %d", b, n, slices.IsSorted(blk.times), arrivalBlockCap)
		}
	}
}
