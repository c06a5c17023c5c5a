package mva

import "math"

// curve is the throughput of a single-class closed network of N users as a
// function of its think time, for the layered fixed point, which asks the
// inverse question: at what think time does the network carry a given
// throughput? The queueing centers are fixed, so their normalizing
// constants H(n) (in ratio form, h[n] = H(n−1)/H(n)) are computed once; a
// total delay T then gives G(n) = Σ_j T^j/j!·H(n−j), and
//
//	X(N) = G(N−1)/G(N) = h[N] · S(N−1)/S(N),  S(n) = Σ_j T^j/j! · H(n−j)/H(n),
//
// two sums of N+1 positive terms, each the previous one times
// T·h[n−j+1]/j (unimodal in j, summed with a binary exponent so that
// nothing overflows).
type curve struct {
	n int
	// h is nil when the network has no queueing center. Its centers'
	// demands are all multiplied by scale (h[n] is then h[n]/scale), so
	// that a curve can follow demands that change in proportion.
	h     []float64
	scale float64
	// fixed is the delay stations' demand, added to every think time.
	fixed float64
	// open is the open load per server at the first station, which its
	// rates were built for (network.closedRates), for a pool's curve.
	open float64
}

// newCurve returns the throughput curve of a single-class closed network of
// n users with demands d per instance of the stations, served at rates
// where not nil (closedNet.shared).
func newCurve(stations []station, d []float64, n int, rates [][]float64) *curve {
	cv := &curve{n: n, scale: 1}
	var single, multi []center
	for k, st := range stations {
		if d[k] <= 0 {
			continue
		}
		if st.servers == 0 {
			cv.fixed += float64(st.copies) * d[k]
			continue
		}
		// n users never find more than n servers busy: a station with
		// more is one with n, whose convolution costs no more than n.
		// So is one whose rates, shared with open requests, are
		// b(0..s) (those past n are never reached).
		s := min(st.servers, max(n, 1))
		var b []float64
		if rates != nil && rates[k] != nil {
			b = rates[k][:s+1]
		}
		for range st.copies {
			switch {
			case s == 1 && b != nil:
				single = append(single, center{k, 1, d[k] / b[1], nil})
			case s == 1:
				single = append(single, center{k, 1, d[k], nil})
			default:
				multi = append(multi, center{k, s, d[k], b})
			}
		}
	}
	if len(single)+len(multi) == 0 {
		return cv
	}
	cs := newConstants(n, 0, single)
	for _, c := range multi {
		cs.add(c)
	}
	cv.h = cs.x
	return cv
}

// at returns the throughput with think time z ≥ 0.
func (cv *curve) at(z float64) float64 {
	N := cv.n
	t := z + cv.fixed
	switch {
	case N == 0:
		return 0
	case cv.h == nil:
		return float64(N) / t
	case t <= 0:
		return cv.h[N] / cv.scale
	}
	sN, eN := cv.sum(N, t/cv.scale)
	sM, eM := cv.sum(N-1, t/cv.scale)
	return cv.h[N] / cv.scale * math.Ldexp(sM/sN, eM-eN)
}

// sum returns S(n) for total delay t (in units of the scale) as a mantissa
// and a binary exponent.
func (cv *curve) sum(n int, t float64) (float64, int) {
	const big = 0x1p600
	term, total, exp := 1.0, 1.0, 0
	for j := 1; j <= n; j++ {
		ratio := t * cv.h[n-j+1] / float64(j)
		term *= ratio
		total += term
		if total > big {
			term *= 1 / big
			total *= 1 / big
			exp += 600
		}
		if ratio < 1 && term < 1e-18*total {
			break
		}
	}
	return total, exp
}

// thinkFor returns the think time at which the network carries throughput
// x, and false when it cannot (even without thinking its throughput is
// below x; the think time is then 0). The throughput falls with the think
// time; the root is bracketed by 0 and N/x, where the throughput is at most
// N/(N/x) = x, and found by the Illinois method to a relative 1e-13.
func (cv *curve) thinkFor(x float64) (float64, bool) {
	if x <= 0 {
		return math.Inf(1), true
	}
	if cv.h == nil {
		return math.Max(float64(cv.n)/x-cv.fixed, 0), float64(cv.n)/x >= cv.fixed
	}
	f := func(z float64) float64 { return (cv.at(z) - x) / x }
	a, fa := 0.0, f(0)
	if fa <= 0 {
		return 0, fa == 0
	}
	b := float64(cv.n) / x
	fb := f(b)
	z, _ := illinois(f, a, fa, b, fb, 1e-13, 1e-14)
	return z, true
}

// illinois finds a root of f between a and b, where fa = f(a) and fb = f(b)
// have opposite signs (or one is zero), by regula falsi that halves the
// value kept at an endpoint retained twice in a row (the Illinois method),
// with a bisection whenever the secant leaves the bracket. It stops when
// |f| ≤ ftol or the bracket is narrower than xtol relative, and returns the
// last point evaluated and its value: f was last called there.
func illinois(f func(float64) float64, a, fa, b, fb, xtol, ftol float64) (float64, float64) {
	for range 300 {
		if math.Abs(fb) <= ftol || math.Abs(b-a) <= xtol*math.Max(math.Abs(a), math.Abs(b)) {
			break
		}
		z := b - fb*(b-a)/(fb-fa)
		if !(z > math.Min(a, b) && z < math.Max(a, b)) {
			z = (a + b) / 2
		}
		fz := f(z)
		if fz*fb < 0 {
			a, fa = b, fb
		} else {
			fa /= 2
		}
		b, fb = z, fz
	}
	return b, fb
}
