package mva

import "math"

// erlangC is the probability that an arrival waits in an M/M/c queue with
// offered load a = λ·S (in servers); 1 when a ≥ c. It is computed through
// the Erlang B recursion, which is stable for large c.
func erlangC(c int, a float64) float64 {
	if a <= 0 {
		return 0
	}
	if a >= float64(c) {
		return 1
	}
	b := 1.0 // Erlang B with 0 servers
	for k := 1; k <= c; k++ {
		b = a * b / (float64(k) + a*b)
	}
	rho := a / float64(c)
	return b / (1 - rho*(1-b))
}

// mmcWaitFactor is the mean wait in an M/M/c queue in units of the mean
// service time S: W/S = C(c, a) / (c − a). It is +Inf when a ≥ c.
func mmcWaitFactor(c int, a float64) float64 {
	if a >= float64(c) {
		return math.Inf(1)
	}
	return erlangC(c, a) / (float64(c) - a)
}

// marginalsAt fills p[0..c-1] with the probabilities of j = 0..c-1 jobs at
// a c-server station carrying a = Σ X·D busy servers, as in an M/M/c queue:
// p(j) = p(0)·a^j/j!, normalized so that the mean number of busy servers is
// a. All zeros when a ≥ c.
func marginalsAt(p []float64, c int, a float64) {
	for j := range p {
		p[j] = 0
	}
	if a >= float64(c) {
		return
	}
	// p0·[1 + (1/c)·Σ_{j=1}^{c-1} (c−j)·a^j/j!] = 1 − a/c
	term, sum := 1.0, 0.0
	for j := 1; j < c; j++ {
		term *= a / float64(j)
		sum += float64(c-j) * term
	}
	p0 := (1 - a/float64(c)) / (1 + sum/float64(c))
	p[0] = p0
	for j := 1; j < c; j++ {
		p[j] = p[j-1] * a / float64(j)
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
