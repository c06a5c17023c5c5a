package mva

import "math"

// sharedServers is one instance of a processor-sharing station of c > 1
// servers as the closed classes see it where open requests keep its
// servers busy a fraction r of the time. The mixed network's product form
// sums the open requests m out of the station's factor: with j closed
// jobs present it is D^j·H(j), where
//
//	H(j) = Σ_m C(j+m, m)·u^m / Π_{i ≤ j+m} min(i, c),  u = c·r,
//
// so the closed classes meet a load-dependent station of rate
// β(j) = H(j−1)/H(j): j for an idle station, c − u = c·(1 − r) from j = c
// on, where the open requests take their share of every server. The
// standard treatment of mixed networks (the closed demand stretched by
// 1/(1 − r) at c servers) is exact for one server only; on four cores it
// made the closed workload up to 165 % long (TestMixedSharedServers).
//
// The closed classes are solved with their demands stretched by
// 1/(1 − r) as before, so rates holds b(j) = β(j)/(1 − r), which is c
// from j = c on: the rate of a c-server station with a rate of its own
// below c, and every formula of the closed solvers keeps its form with
// b(j) in place of min(j, c).
//
// Given j closed jobs, the open requests at the station are a birth–death
// chain whose mean is open[j] = u·H'(j+1)/H'(j) in the scaling below;
// from j = c on it is (j + 1)·r/(1 − r).
type sharedServers struct {
	r     float64
	rates []float64 // b(0..c), b(0) = 0 and b(c) = c
	open  []float64 // E[m | j] for j = 0..c−1
}

// newSharedServers returns the view of one instance of a station of c > 1
// servers that open requests keep busy 0 < r < 1 of the time.
//
// With S(j) = H(j)·Π_{i ≤ j} min(i, c)·(scale), for j ≤ c,
//
//	S(j) = Σ_{m < c−j} u^m/m! + Y(j),
//	Y(0) = (u^c/c!)/(1 − r),  Y(j) = (u^(c−j)/(c−j)! + (j/c)·Y(j−1))/(1 − r),
//
// Y(j) being the terms where all c servers are busy (a sum of negative
// binomial terms, C(n, j)·r^n summed over n ≥ c, which recurs in j by
// Pascal's rule). Every term is positive; they are carried as logarithms,
// since u^m/m! overflows for a few hundred servers. Then
// β(j) = j·S(j−1)/S(j) and E[m | j] = u·S(j+1)/S(j). Cost O(c).
func newSharedServers(c int, r float64) *sharedServers {
	u := float64(c) * r
	lu, l1r := math.Log(u), math.Log1p(-r)
	term := make([]float64, c+1) // log u^m/m!
	for m := 1; m <= c; m++ {
		term[m] = term[m-1] + lu - math.Log(float64(m))
	}
	ls := make([]float64, c+1)
	// The head Σ_{m < c−j} u^m/m!, accumulated from j = c down.
	head := math.Inf(-1)
	for j := c; j >= 0; j-- {
		ls[j] = head
		if j > 0 {
			head = logAdd(head, term[c-j])
		}
	}
	y := term[c] - l1r
	ls[0] = logAdd(ls[0], y)
	for j := 1; j <= c; j++ {
		y = logAdd(term[c-j], math.Log(float64(j)/float64(c))+y) - l1r
		ls[j] = logAdd(ls[j], y)
	}
	s := &sharedServers{r: r, rates: make([]float64, c+1), open: make([]float64, c)}
	for j := 1; j < c; j++ {
		s.rates[j] = float64(j) * math.Exp(ls[j-1]-ls[j]) / (1 - r)
	}
	s.rates[c] = float64(c)
	for j := range c {
		s.open[j] = u * math.Exp(ls[j+1]-ls[j])
	}
	return s
}

// logAdd returns log(e^a + e^b).
func logAdd(a, b float64) float64 {
	if a < b {
		a, b = b, a
	}
	if math.IsInf(b, -1) {
		return a
	}
	return a + math.Log1p(math.Exp(b-a))
}

// openQueue is the mean number of open requests at the instance, given
// the probabilities p[0..c−1] of j closed jobs there and their mean q:
// Σ_{j<c} p_j·E[m | j] + r/(1 − r)·Σ_{j ≥ c} (j + 1)·p_j.
func (s *sharedServers) openQueue(p []float64, q float64) float64 {
	var in, below float64
	for j, pj := range p {
		in += pj * s.open[j]
		below += float64(j+1) * pj
	}
	return in + s.r/(1-s.r)*math.Max(1+q-below, 0)
}

// roomy reports whether a station of c servers, busy r of the time with
// open requests, has so many servers that n closed jobs would hardly ever
// find them all busy: c exceeds n and the open requests' mean by 10
// standard deviations and 30 (a Poisson count as with infinitely many
// servers), past which the closed jobs are taken never to wait and
// sharedServers is not built (it costs O(c), and a host may declare a
// million cores).
func roomy(c int, r, n float64) bool {
	u := float64(c) * r
	return float64(c) >= n+u+10*math.Sqrt(u)+30
}
