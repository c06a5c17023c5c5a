package estimate

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"
)

// Kalman estimates the demands with a linear Kalman filter. The state is
// the vector of demands and the background, a random walk (demands may
// drift slowly); each window is one observation of the busy cores,
//
//	busy/Δ = Σ (completions/Δ)·D + B + noise,
//
// taken in time order. The filter runs unconstrained; its final state is
// projected onto non-negative demands and background in the metric of its
// covariance (the closest non-negative state in Mahalanobis distance, a
// small non-negative least-squares problem). The initial state apportions the busy time by own time;
// its uncertainty is that of a demand explaining all the busy time alone.
// The observation noise is estimated from the spread of successive
// differences of the busy cores.
type Kalman struct {
	// Drift is the standard deviation of the random walk of each state
	// component per window, relative to its initial uncertainty; 0 means
	// 1e-4.
	Drift float64
}

// Name returns "kalman".
func (Kalman) Name() string { return "kalman" }

// Estimate implements Estimator.
func (kf Kalman) Estimate(p *Problem, use []int) (*Fit, error) {
	ws := selected(p, use)
	k := len(p.Ops)
	n := k + 1
	f := &Fit{Method: "kalman", Demands: make([]float64, k), StdErr: nanSlice(k)}
	if len(ws) == 0 {
		f.Note = "no windows"
		return f, nil
	}
	drift := kf.Drift
	if drift <= 0 {
		drift = 1e-4
	}
	length, busy, count, own := totals(ws, k)
	meanLen := length / float64(len(ws))
	busyRate := busy / length
	var totalOwn float64
	for _, o := range own {
		totalOwn += o
	}
	x := make([]float64, n)
	scale := make([]float64, n)
	for i := 0; i < k; i++ {
		if count[i] > 0 {
			if totalOwn > 0 {
				x[i] = busy / totalOwn * own[i] / count[i]
			}
			scale[i] = busyRate / (count[i] / length)
		}
	}
	scale[k] = busyRate
	p0 := mat.NewSymDense(n, nil)
	q := make([]float64, n)
	for i := 0; i < n; i++ {
		s := math.Max(scale[i], 1e-12)
		p0.SetSym(i, i, s*s)
		q[i] = drift * drift * s * s
	}
	r := noiseVariance(ws)
	if !(r > 0) {
		r = math.Max(1e-6*busyRate*busyRate, 1e-18)
	}

	P := mat.NewDense(n, n, nil)
	P.Copy(p0)
	h := mat.NewVecDense(n, nil)
	var ph, kg mat.VecDense
	var ikh, tmp, tmp2 mat.Dense
	eye := mat.NewDiagDense(n, nil)
	for i := 0; i < n; i++ {
		eye.SetDiag(i, 1)
	}
	for _, w := range ws {
		for i := 0; i < n; i++ {
			P.Set(i, i, P.At(i, i)+q[i])
		}
		for i := 0; i < k; i++ {
			h.SetVec(i, w.Count[i]/w.Length)
		}
		h.SetVec(k, 1)
		rw := r * meanLen / w.Length
		z := w.Busy / w.Length
		pred := 0.0
		for i := 0; i < n; i++ {
			pred += h.AtVec(i) * x[i]
		}
		ph.MulVec(P, h)
		s := mat.Dot(h, &ph) + rw
		if !(s > 0) {
			continue
		}
		kg.ScaleVec(1/s, &ph)
		y := z - pred
		for i := 0; i < n; i++ {
			x[i] += kg.AtVec(i) * y
		}
		// Joseph form: P = (I − K·h)·P·(I − K·h)ᵀ + K·R·Kᵀ.
		var kh mat.Dense
		kh.Outer(1, &kg, h)
		ikh.Sub(eye, &kh)
		tmp.Mul(&ikh, P)
		tmp2.Mul(&tmp, ikh.T())
		var krk mat.Dense
		krk.Outer(rw, &kg, &kg)
		P.Add(&tmp2, &krk)
	}
	// The filter's covariance is rescaled by how far the residuals'
	// variance is from the assumed noise.
	ratio := residualRatio(ws, x, meanLen, r)
	note := ""
	if seB := math.Sqrt(math.Max(P.At(k, k), 0) * ratio); x[k] > 0 && !significantT(x[k], seB, len(ws)-n) {
		// As the regression does: a background the data cannot tell from
		// zero is taken as zero, the demands conditioned on it.
		note = fmt.Sprintf("background %.3g ± %.2g cores not told from zero at 95 %%: taken as zero", x[k], seB)
		x, P = conditionLast(x, P)
		ratio = residualRatio(ws, x, meanLen, r)
	}
	x = project(x, P)
	copy(f.Demands, x[:k])
	f.Background = x[k]
	free := make([]bool, n)
	for i := 0; i < k; i++ {
		if count[i] > 0 {
			f.StdErr[i] = math.Sqrt(math.Max(P.At(i, i), 0) * ratio)
		}
		free[i] = x[i] > 0
	}
	a, _ := design(ws, k)
	sc, _ := scaleColumns(a)
	f.Identified, f.Note = identified(f, p.Ops, ws, sc, free)
	if f.Identified {
		f.Note = note
	}
	return f, nil
}

// residualRatio is the mean squared residual of the state x over the
// windows (weighted by length) divided by the assumed noise variance r.
func residualRatio(ws []*Window, x []float64, meanLen, r float64) float64 {
	k := len(x) - 1
	var sq float64
	for _, w := range ws {
		res := w.Busy/w.Length - x[k]
		for i := 0; i < k; i++ {
			res -= w.Count[i] / w.Length * x[i]
		}
		sq += res * res * w.Length / meanLen
	}
	return sq / float64(len(ws)) / r
}

// conditionLast returns the Gaussian state (x, P) conditioned on its last
// component being zero: the others move by their covariance with it, and
// their covariance loses its part. The last component's variance is kept
// (tiny against the others' would make project's factorization fail), its
// covariances cleared.
func conditionLast(x []float64, p *mat.Dense) ([]float64, *mat.Dense) {
	n := len(x)
	l := n - 1
	vl := p.At(l, l)
	out := slices.Clone(x)
	q := mat.DenseCopyOf(p)
	if !(vl > 0) {
		out[l] = 0
		return out, q
	}
	for i := 0; i < l; i++ {
		out[i] -= p.At(i, l) / vl * x[l]
		for j := 0; j < l; j++ {
			q.Set(i, j, p.At(i, j)-p.At(i, l)*p.At(j, l)/vl)
		}
		q.Set(i, l, 0)
		q.Set(l, i, 0)
	}
	out[l] = 0
	return out, q
}

// noiseVariance estimates the variance of the noise in the windows' busy
// cores from the median absolute deviation of successive differences,
// which a slowly varying load changes little.
func noiseVariance(ws []*Window) float64 {
	if len(ws) < 3 {
		return math.NaN()
	}
	d := make([]float64, len(ws)-1)
	for i := 1; i < len(ws); i++ {
		d[i-1] = ws[i].Busy/ws[i].Length - ws[i-1].Busy/ws[i-1].Length
	}
	med := median(d)
	for i := range d {
		d[i] = math.Abs(d[i] - med)
	}
	sigma := 1.4826 * median(d) / math.Sqrt2
	return sigma * sigma
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return math.NaN()
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// project returns the non-negative vector closest to x in the metric of
// the covariance p: min (y − x)ᵀ p⁻¹ (y − x), y ≥ 0. With p = L·Lᵀ this is
// the least-squares problem ‖L⁻¹y − L⁻¹x‖ under y ≥ 0. When p is not
// positive definite, negative components are set to zero.
func project(x []float64, p *mat.Dense) []float64 {
	n := len(x)
	out := make([]float64, n)
	neg := false
	for i, v := range x {
		out[i] = math.Max(v, 0)
		neg = neg || v < 0
	}
	if !neg {
		return out
	}
	sym := mat.NewSymDense(n, nil)
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			sym.SetSym(i, j, (p.At(i, j)+p.At(j, i))/2)
		}
	}
	var ch mat.Cholesky
	if !ch.Factorize(sym) {
		return out
	}
	var l mat.TriDense
	ch.LTo(&l)
	var linv mat.TriDense
	if err := linv.InverseTri(&l); err != nil {
		return out
	}
	a := mat.DenseCopyOf(&linv)
	var b mat.VecDense
	b.MulVec(a, mat.NewVecDense(n, append([]float64(nil), x...)))
	y, _, err := NNLS(a, b.RawVector().Data)
	if err != nil {
		return out
	}
	return y
}
