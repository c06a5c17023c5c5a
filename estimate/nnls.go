package estimate

import (
	"errors"
	"math"

	"gonum.org/v1/gonum/mat"
)

// errSingular is returned when a least-squares subproblem has no unique
// solution.
var errSingular = errors.New("singular least-squares problem")

// NNLS solves min ‖A·x − b‖₂ subject to x ≥ 0 by the active-set method of
// Lawson and Hanson. It returns the solution and the set of columns that are
// free (strictly positive) at the solution. Columns should be scaled to
// comparable norms by the caller; the tolerance is relative to ‖Aᵀb‖.
func NNLS(a *mat.Dense, b []float64) (x []float64, free []bool, err error) {
	rows, cols := a.Dims()
	if len(b) != rows {
		return nil, nil, errors.New("nnls: right-hand side length differs from the rows")
	}
	x = make([]float64, cols)
	free = make([]bool, cols)
	bv := mat.NewVecDense(rows, append([]float64(nil), b...))
	w := make([]float64, cols)
	gradient := func() {
		// w = Aᵀ(b − A·x)
		r := mat.NewVecDense(rows, nil)
		r.MulVec(a, mat.NewVecDense(cols, append([]float64(nil), x...)))
		r.SubVec(bv, r)
		var g mat.VecDense
		g.MulVec(a.T(), r)
		for j := range w {
			w[j] = g.AtVec(j)
		}
	}
	var atb mat.VecDense
	atb.MulVec(a.T(), bv)
	tol := 1e-12 * math.Max(1, mat.Norm(&atb, 2)) * float64(max(rows, cols))

	// dependent holds columns found linearly dependent on the free ones:
	// they stay at zero.
	dependent := make([]bool, cols)
	gradient()
	for iter := 0; iter < 3*cols+10; iter++ {
		// The bound variable whose gradient points most into the feasible
		// region joins the free set.
		j, best := -1, tol
		for k := range w {
			if !free[k] && !dependent[k] && w[k] > best {
				j, best = k, w[k]
			}
		}
		if j < 0 {
			return x, free, nil
		}
		free[j] = true
		for inner := 0; ; inner++ {
			s, err := lsqFree(a, b, free)
			if err != nil {
				// A column dependent on the free ones adds nothing: keep it
				// at zero and go on with the others.
				free[j], x[j] = false, 0
				dependent[j] = true
				break
			}
			ok := true
			for k := range s {
				if free[k] && s[k] <= 0 {
					ok = false
					break
				}
			}
			if ok {
				copy(x, s)
				break
			}
			if inner > cols {
				copy(x, s)
				for k := range x {
					if x[k] < 0 {
						x[k], free[k] = 0, false
					}
				}
				break
			}
			// Step from x toward s as far as feasibility allows, then
			// release the variables that reached zero.
			alpha := math.Inf(1)
			for k := range s {
				if free[k] && s[k] <= 0 {
					if d := x[k] - s[k]; d > 0 {
						alpha = math.Min(alpha, x[k]/d)
					} else {
						alpha = 0
					}
				}
			}
			for k := range x {
				x[k] += alpha * (s[k] - x[k])
				if free[k] && x[k] <= tol {
					x[k], free[k] = 0, false
				}
			}
		}
		gradient()
	}
	return x, free, nil
}

// lsqFree solves the unconstrained least-squares problem over the free
// columns, the others held at zero.
func lsqFree(a *mat.Dense, b []float64, free []bool) ([]float64, error) {
	rows, cols := a.Dims()
	idx := make([]int, 0, cols)
	for k, f := range free {
		if f {
			idx = append(idx, k)
		}
	}
	out := make([]float64, cols)
	if len(idx) == 0 {
		return out, nil
	}
	if len(idx) > rows {
		return nil, errSingular
	}
	sub := mat.NewDense(rows, len(idx), nil)
	for i := 0; i < rows; i++ {
		for c, k := range idx {
			sub.Set(i, c, a.At(i, k))
		}
	}
	var qr mat.QR
	qr.Factorize(sub)
	// Rank check on the diagonal of R.
	var r mat.Dense
	qr.RTo(&r)
	maxDiag := 0.0
	for c := range idx {
		maxDiag = math.Max(maxDiag, math.Abs(r.At(c, c)))
	}
	for c := range idx {
		if math.Abs(r.At(c, c)) <= 1e-10*maxDiag || maxDiag == 0 {
			return nil, errSingular
		}
	}
	var sol mat.Dense
	if err := qr.SolveTo(&sol, false, mat.NewDense(rows, 1, append([]float64(nil), b...))); err != nil {
		return nil, errSingular
	}
	for c, k := range idx {
		out[k] = sol.At(c, 0)
	}
	return out, nil
}
