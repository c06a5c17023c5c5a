package mva

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/integrate/quad"
	"gonum.org/v1/gonum/stat/distuv"
)

// marginalsAt fills p[0..c-1] with the probabilities of j = 0..c-1 jobs at
// a c-server station carrying a = Σ X·D busy servers, as in an M/M/c queue:
// p(j) = p(0)·a^j/j!, normalized so that the mean number of busy servers is
// a. With rates b (closedNet.shared) the station serves at b(j) in place of
// min(j, c): p(j) = p(0)·a^j/Π_{i≤j} b(i), and Σ_j b(j)·p(j) = a. All
// zeros when a ≥ c.
func marginalsAt(p []float64, c int, a float64, b []float64) {
	for j := range p {
		p[j] = 0
	}
	if a >= float64(c) {
		return
	}
	// p0·[c + Σ_{j=1}^{c-1} (c−b(j))·a^j/Π b(i)] = c − a
	term, sum := 1.0, 0.0
	for j := 1; j < c && term > 0; j++ {
		term *= a / rateAt(b, j)
		sum += (float64(c) - rateAt(b, j)) * term
	}
	p0 := (1 - a/float64(c)) / (1 + sum/float64(c))
	p[0] = p0
	for j := 1; j < c && p[j-1] > 0; j++ {
		p[j] = p[j-1] * a / rateAt(b, j)
	}
}

// expMax is the mean of the maximum of independent exponential random
// variables with the given means, by inclusion–exclusion over subsets:
// E[max] = Σ_{S≠∅} (−1)^{|S|+1} / Σ_{i∈S} 1/m_i. Zero means are left out.
// Beyond maxExactFork lists the largest mean times the harmonic-number
// factor of equal means is used instead, which is an upper estimate.
func expMax(means []float64) float64 {
	var ms []float64
	for _, m := range means {
		if m > 0 {
			ms = append(ms, m)
		}
	}
	switch len(ms) {
	case 0:
		return 0
	case 1:
		return ms[0]
	}
	if len(ms) > maxExactFork {
		top := 0.0
		for _, m := range ms {
			top = math.Max(top, m)
		}
		h := 0.0
		for i := 1; i <= len(ms); i++ {
			h += 1 / float64(i)
		}
		return top * h
	}
	n := len(ms)
	var total float64
	for set := 1; set < 1<<n; set++ {
		rate, bits := 0.0, 0
		for i := 0; i < n; i++ {
			if set&(1<<i) != 0 {
				rate += 1 / ms[i]
				bits++
			}
		}
		if bits%2 == 1 {
			total += 1 / rate
		} else {
			total -= 1 / rate
		}
	}
	return total
}

// maxExactFork is the largest number of parallel lists expMax treats by
// inclusion–exclusion.
const maxExactFork = 16

// maxMoments returns the mean and variance of the maximum of independent
// times with the given moments (zero means are left out), each taken as a
// gamma distribution with its mean and variance: exponential at a
// coefficient of variation of 1, fixed at variance 0. Where every time is
// exponential the mean is expMax's exact one, and beyond minShape the
// join is taken as exponential; otherwise the moments are
// E[max^j] = ∫ j·t^(j−1)·(1 − Π F_i(t)) dt by Gauss–Legendre quadrature
// between the times' means, their means − 2, + 2 and + 6 standard
// deviations, and 20 standard deviations above the largest mean.
func maxMoments(ms []moments) moments {
	var live []moments
	allExp := true
	for _, m := range ms {
		if m.mean > 0 {
			live = append(live, m)
			if math.Abs(m.vari/(m.mean*m.mean)-1) > 1e-9 {
				allExp = false
			}
		}
	}
	switch len(live) {
	case 0:
		return moments{}
	case 1:
		return live[0]
	}
	cdfs := make([]func(float64) float64, len(live))
	cuts := []float64{0}
	top, largest := 0.0, 0.0
	bad := false
	for i, m := range live {
		sd := math.Sqrt(m.vari)
		top = math.Max(top, m.mean+20*sd)
		largest = math.Max(largest, m.mean)
		cuts = append(cuts, m.mean, m.mean-2*sd, m.mean+2*sd, m.mean+6*sd)
		if shape := m.mean * m.mean / m.vari; !(shape >= minShape) || math.IsInf(top, 0) {
			bad = true
			break
		}
		if sd <= m.mean*1e-6 {
			mean := m.mean
			cdfs[i] = func(t float64) float64 {
				if t < mean {
					return 0
				}
				return 1
			}
			continue
		}
		g := distuv.Gamma{Alpha: m.mean * m.mean / m.vari, Beta: m.mean / m.vari}
		cdfs[i] = g.CDF
	}
	cuts = append(cuts, top)
	slices.Sort(cuts)
	var first, second float64
	for i := 1; i < len(cuts) && !bad; i++ {
		lo, hi := math.Max(cuts[i-1], 0), math.Min(cuts[i], top)
		if hi <= lo {
			continue
		}
		half, mid := (hi-lo)/2, (hi+lo)/2
		for j, x := range legendreX {
			t := mid + half*x
			above := 1.0
			for _, cdf := range cdfs {
				above *= cdf(t)
			}
			above = 1 - above
			first += half * legendreW[j] * above
			second += half * legendreW[j] * 2 * t * above
		}
	}
	bad = bad || math.IsNaN(first+second) || math.IsInf(first+second, 0) || first < largest*(1-1e-6)
	if allExp || bad {
		means := make([]float64, len(live))
		vari := 0.0
		for i, m := range live {
			means[i], vari = m.mean, math.Max(vari, m.vari)
		}
		first = expMax(means)
		if bad {
			// Beyond the quadrature's reach (a shape below minShape,
			// spreads beyond the floating-point range): the
			// exponential join, and the largest variance.
			return moments{first, vari}
		}
	}
	return moments{first, math.Max(second-first*first, 0)}
}

// minShape is the smallest gamma shape (mean²/variance, a coefficient of
// variation of about 32) that maxMoments integrates.
const minShape = 1e-3

// legendreX and legendreW are the nodes and weights of 8-point
// Gauss–Legendre quadrature on [−1, 1].
var legendreX, legendreW = func() ([]float64, []float64) {
	x, w := make([]float64, 8), make([]float64, 8)
	quad.Legendre{}.FixedLocations(x, w, -1, 1)
	return x, w
}()
