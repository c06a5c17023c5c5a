package estimate

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"
)

// SDL is the Service Demand Law for a single class of work: the busy time
// divided by the completions, D = U·Δ·cores / completions. It applies to
// a host with one operation only, and gives the background load to it.
type SDL struct{}

// Name returns "sdl".
func (SDL) Name() string { return "sdl" }

// Estimate implements Estimator.
func (SDL) Estimate(p *Problem, use []int) (*Fit, error) {
	if len(p.Ops) != 1 {
		return nil, ErrNotApplicable
	}
	ws := selected(p, use)
	_, busy, count, _ := totals(ws, 1)
	f := &Fit{Method: "sdl", Demands: []float64{0}, StdErr: nanSlice(1), Identified: true,
		Note: "all busy time counted as the operation's"}
	if count[0] > 0 {
		f.Demands[0] = busy / count[0]
	} else {
		f.Identified = false
		f.Note = "no completions"
	}
	return f, nil
}

// Apportion splits the busy time among the operations in proportion to
// their total own time (response-time ratios weighted by completions):
// D_op = c · mean own time of op, one factor c for all operations. When the
// windows are enough (at least 10) and the load varies enough to tell a
// constant background from the work, c and a background B are fitted by
// non-negative least squares of busy time on the work each window
// completed, its executions weighted by their operations' mean own time;
// otherwise B = 0 and c = total busy / total own time, which gives the
// background to the operations. The fit weighs a window's executions by
// the mean, not by their own times there, because own time holds the
// waits for the CPU, which grow faster than the busy time as the load
// rises: regressed on them, busy time shows too flat a slope, and the
// background takes the rest of the work.
type Apportion struct{}

// Name returns "apportion".
func (Apportion) Name() string { return "apportion" }

// Estimate implements Estimator.
func (Apportion) Estimate(p *Problem, use []int) (*Fit, error) {
	ws := selected(p, use)
	k := len(p.Ops)
	_, busy, count, own := totals(ws, k)
	var totalOwn float64
	for _, o := range own {
		totalOwn += o
	}
	f := &Fit{Method: "apportion", Demands: make([]float64, k), StdErr: nanSlice(k), Identified: true}
	if !(totalOwn > 0) {
		f.Identified = false
		f.Note = "no own time measured"
		return f, nil
	}
	c := busy / totalOwn
	f.Note = "CPU taken as proportional to own time; background given to the operations"
	if len(ws) >= 10 {
		a := mat.NewDense(len(ws), 2, nil)
		b := make([]float64, len(ws))
		for i, w := range ws {
			var o float64
			for j, n := range w.Count {
				if count[j] > 0 {
					o += n * own[j] / count[j]
				}
			}
			s := 1 / math.Sqrt(w.Length)
			a.Set(i, 0, o*s)
			a.Set(i, 1, w.Length*s)
			b[i] = w.Busy * s
		}
		if reg, ok := smallRegression(a, b); ok {
			c, f.Background = reg[0], reg[1]
			f.Note = "CPU taken as proportional to own time; background fitted"
		}
	}
	for i := range f.Demands {
		if count[i] > 0 {
			f.Demands[i] = c * own[i] / count[i]
		}
	}
	return f, nil
}

// smallRegression fits b ≈ A·x, x ≥ 0, and returns x when every
// coefficient is determined to within 10 % (relative standard error), or
// is zero.
func smallRegression(a *mat.Dense, b []float64) ([]float64, bool) {
	sc, scales := scaleColumns(a)
	x, free, err := NNLS(sc, b)
	if err != nil {
		return nil, false
	}
	se, _ := standardErrors(sc, b, x, free)
	for j := range x {
		if free[j] && !(se[j] <= 0.1*x[j]) || scales[j] == 0 {
			return nil, false
		}
		x[j] /= scales[j]
	}
	return x, true
}

// ResponseTime approximates each operation's CPU demand by its mean own
// time in the windows of lowest load (the lowest quarter of utilization,
// all windows for an operation that did not run in them). At low load an
// operation does not queue for the CPU, so its own time is its CPU demand
// plus whatever else it waits for: an upper bound unless it never waits.
type ResponseTime struct{}

// Name returns "response-time".
func (ResponseTime) Name() string { return "response-time" }

// Estimate implements Estimator.
func (ResponseTime) Estimate(p *Problem, use []int) (*Fit, error) {
	ws := selected(p, use)
	k := len(p.Ops)
	f := &Fit{Method: "response-time", Demands: make([]float64, k), StdErr: nanSlice(k), Identified: true,
		Note: "own time at low load taken as CPU: assumes no off-CPU waiting"}
	if len(ws) == 0 {
		f.Identified = false
		f.Note = "no windows"
		return f, nil
	}
	rates := make([]float64, len(ws))
	for i, w := range ws {
		rates[i] = w.Busy / w.Length
	}
	sorted := slices.Clone(rates)
	slices.Sort(sorted)
	limit := sorted[(len(sorted)-1)/4]
	var low []*Window
	for i, w := range ws {
		if rates[i] <= limit {
			low = append(low, w)
		}
	}
	_, _, lowCount, lowOwn := totals(low, k)
	_, _, count, own := totals(ws, k)
	for i := range f.Demands {
		switch {
		case lowCount[i] > 0:
			f.Demands[i] = lowOwn[i] / lowCount[i]
		case count[i] > 0:
			f.Demands[i] = own[i] / count[i]
		}
	}
	return f, nil
}
