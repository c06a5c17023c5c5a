package estimate

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Identification thresholds.
const (
	// MaxCondition is the condition number of the column-scaled design
	// (throughputs and a constant) above which the throughputs are taken
	// as collinear and a regression's demands as not identified.
	MaxCondition = 1000
	// MaxRelativeError is the relative standard error above which the
	// demand of an operation that carries a noticeable part of the load
	// (MinShare) is taken as not identified.
	MaxRelativeError = 0.25
	// MinShare is the part of the explained busy time from which an
	// operation counts as carrying load.
	MinShare = 0.05
)

// MinWindows is the fewest windows a regression over ops operations (and
// the background) needs: three per unknown, and at least ten.
func MinWindows(ops int) int { return max(10, 3*(ops+1)) }

// Regression fits busy = Δ·B + Σ completions·D by non-negative least
// squares (Lawson–Hanson), each window weighted by the inverse of its
// length. The background B is a coefficient of its own, estimated and
// reported, not spread over the operations. When its 95 % interval
// (Student's t) holds zero, the data cannot tell it from no background:
// a load that hardly varies makes it trade off against the demands, and
// kept, it would stay put as the load grows while the demands it took
// from the operations do not. The fit is then made again without it.
// Operations that never completed in the windows get demand 0 and are
// left out of the checks.
type Regression struct{}

// Name returns "regression".
func (Regression) Name() string { return "regression" }

// Estimate implements Estimator.
func (Regression) Estimate(p *Problem, use []int) (*Fit, error) {
	ws := selected(p, use)
	k := len(p.Ops)
	a, b := design(ws, k)
	sc, scales := scaleColumns(a)
	f := &Fit{Method: "regression", Demands: make([]float64, k), StdErr: nanSlice(k)}
	x, free, err := NNLS(sc, b)
	if err != nil {
		return nil, err
	}
	se, _ := standardErrors(sc, b, x, free)
	note := ""
	if free[k] && !significantT(x[k], se[k], len(b)-countTrue(free)) {
		note = fmt.Sprintf("background %.3g ± %.2g cores not told from zero at 95 %%: taken as zero", x[k]/scales[k], se[k]/scales[k])
		for i := 0; i < sc.RawMatrix().Rows; i++ {
			sc.Set(i, k, 0)
		}
		if x, free, err = NNLS(sc, b); err != nil {
			return nil, err
		}
		se, _ = standardErrors(sc, b, x, free)
	}
	for j := 0; j < k; j++ {
		if scales[j] > 0 {
			f.Demands[j] = x[j] / scales[j]
			f.StdErr[j] = se[j] / scales[j]
		}
	}
	f.Background = x[k] / scales[k]
	f.Identified, f.Note = identified(f, p.Ops, ws, sc, free)
	if f.Identified {
		f.Note = note
	}
	return f, nil
}

// significantT tells whether a coefficient with standard error se differs
// from zero at 95 % by Student's t with dof degrees of freedom. A
// coefficient without a standard error, or a fit without residual degrees
// of freedom, counts as significant: nothing says otherwise.
func significantT(coef, se float64, dof int) bool {
	if dof <= 0 || math.IsNaN(se) {
		return true
	}
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(dof)}.Quantile(0.975)
	return coef > t*se
}

func countTrue(v []bool) int {
	n := 0
	for _, b := range v {
		if b {
			n++
		}
	}
	return n
}

// design builds the regression's matrix and right-hand side: one row per
// window, columns the completions of each operation and the window's
// length, all divided by √length.
func design(ws []*Window, k int) (*mat.Dense, []float64) {
	a := mat.NewDense(max(len(ws), 1), k+1, nil)
	b := make([]float64, max(len(ws), 1))
	for i, w := range ws {
		s := 1 / math.Sqrt(w.Length)
		for j := 0; j < k; j++ {
			a.Set(i, j, w.Count[j]*s)
		}
		a.Set(i, k, w.Length*s)
		b[i] = w.Busy * s
	}
	return a, b
}

// scaleColumns returns a copy of a with every nonzero column scaled to
// unit norm, and the columns' norms: a coefficient of the scaled problem
// divided by its column's norm is the coefficient of the original one.
func scaleColumns(a *mat.Dense) (*mat.Dense, []float64) {
	rows, cols := a.Dims()
	out := mat.DenseCopyOf(a)
	scales := make([]float64, cols)
	for j := 0; j < cols; j++ {
		n := mat.Norm(a.ColView(j), 2)
		if n > 0 {
			scales[j] = n
			for i := 0; i < rows; i++ {
				out.Set(i, j, a.At(i, j)/n)
			}
		}
	}
	return out, scales
}

// standardErrors returns the standard error of each free coefficient of
// a least-squares fit (NaN for coefficients at their bound), from
// σ²·(A_FᵀA_F)⁻¹ with σ² the residual variance, and σ².
func standardErrors(a *mat.Dense, b, x []float64, free []bool) ([]float64, float64) {
	rows, cols := a.Dims()
	se := nanSlice(cols)
	var idx []int
	for j, f := range free {
		if f {
			idx = append(idx, j)
		}
	}
	var rss float64
	for i := 0; i < rows; i++ {
		r := b[i]
		for j := 0; j < cols; j++ {
			r -= a.At(i, j) * x[j]
		}
		rss += r * r
	}
	dof := rows - len(idx)
	if dof <= 0 || len(idx) == 0 {
		return se, math.NaN()
	}
	sigma2 := rss / float64(dof)
	sub := mat.NewDense(rows, len(idx), nil)
	for i := 0; i < rows; i++ {
		for c, j := range idx {
			sub.Set(i, c, a.At(i, j))
		}
	}
	var ata, inv mat.Dense
	ata.Mul(sub.T(), sub)
	if err := inv.Inverse(&ata); err != nil {
		return se, sigma2
	}
	for c, j := range idx {
		if v := inv.At(c, c) * sigma2; v >= 0 {
			se[j] = math.Sqrt(v)
		}
	}
	return se, sigma2
}

// conditionNumber is the 2-norm condition number of the column-scaled
// design restricted to its nonzero columns (Belsley's collinearity
// diagnostic); +Inf when the columns are dependent.
func conditionNumber(sc *mat.Dense) float64 {
	rows, cols := sc.Dims()
	var keep []int
	for j := 0; j < cols; j++ {
		if mat.Norm(sc.ColView(j), 2) > 0 {
			keep = append(keep, j)
		}
	}
	if len(keep) == 0 {
		return math.NaN()
	}
	if len(keep) > rows {
		return math.Inf(1)
	}
	sub := mat.NewDense(rows, len(keep), nil)
	for i := 0; i < rows; i++ {
		for c, j := range keep {
			sub.Set(i, c, sc.At(i, j))
		}
	}
	var svd mat.SVD
	if !svd.Factorize(sub, mat.SVDNone) {
		return math.Inf(1)
	}
	v := svd.Values(nil)
	if v[len(v)-1] <= v[0]*1e-14 {
		return math.Inf(1)
	}
	return v[0] / v[len(v)-1]
}

// identified decides whether a regression-type fit determines its demands:
// enough windows, a design that is not collinear, and a relative standard
// error within MaxRelativeError for every operation carrying at least
// MinShare of the explained busy time.
func identified(f *Fit, ops []string, ws []*Window, sc *mat.Dense, free []bool) (bool, string) {
	k := len(f.Demands)
	if len(ws) < MinWindows(k) {
		return false, fmt.Sprintf("%d windows for %d unknowns: at least %d needed", len(ws), k+1, MinWindows(k))
	}
	if c := conditionNumber(sc); !(c <= MaxCondition) {
		return false, fmt.Sprintf("throughputs collinear (condition number %.3g > %d)", c, MaxCondition)
	}
	_, _, count, _ := totals(ws, k)
	var explained float64
	for j, d := range f.Demands {
		explained += d * count[j]
	}
	explained += f.Background * sumLength(ws)
	for j, d := range f.Demands {
		if count[j] == 0 {
			continue
		}
		share := d * count[j] / math.Max(explained, 1e-300)
		if free != nil && !free[j] && share == 0 {
			// At the bound: an operation whose completions explain no
			// busy time. Its upper uncertainty is not measured; it
			// matters only if it runs often, or if an operation whose
			// throughput follows its own took its busy time.
			if l, r := boundTwin(f, ws, free, count, explained, j); l >= 0 {
				return false, fmt.Sprintf("demands of %s and %s not separable: their throughputs go together (r = %.3f) and the fit gave %s all their busy time", ops[j], ops[l], r, ops[l])
			}
			continue
		}
		if share >= MinShare && !(f.StdErr[j] <= MaxRelativeError*d) {
			return false, fmt.Sprintf("demand of %s uncertain (standard error %.2g s of %.2g s)", ops[j], f.StdErr[j], d)
		}
	}
	return true, ""
}

// twinShare is the part of the explained busy time from which an
// operation's demand counts in boundTwin.
const twinShare = MinShare / 5

// boundTwin finds, for operation j held at demand 0, a free operation
// carrying at least twinShare of the explained busy time whose throughput
// correlates with j's beyond collinearCorrelation: the fit may have given
// it the busy time of both. It returns that operation and the correlation,
// or -1.
func boundTwin(f *Fit, ws []*Window, free []bool, count []float64, explained float64, j int) (int, float64) {
	rate := func(op int) []float64 {
		x := make([]float64, len(ws))
		for i, w := range ws {
			if w.Length > 0 {
				x[i] = w.Count[op] / w.Length
			}
		}
		return x
	}
	xj := rate(j)
	for l, d := range f.Demands {
		if l == j || !free[l] || !(d*count[l] >= twinShare*explained) {
			continue
		}
		if r := correlation(xj, rate(l)); math.Abs(r) > collinearCorrelation {
			return l, r
		}
	}
	return -1, 0
}

func sumLength(ws []*Window) float64 {
	var s float64
	for _, w := range ws {
		s += w.Length
	}
	return s
}
