package extract

import (
	"math"
)

// burstyWaitFactor is the mean wait of a GI/M/c queue in mean service
// times, its arrivals' gaps gamma-distributed with squared coefficient of
// variation scv (as the simulator draws an open workload's), at load a
// (busy servers), capped as waitFactor caps it; 0 without load. With
// scv 1 it is waitFactor, Erlang's.
//
// It is Takács's solution of the queue seen at arrivals: with A* the
// gaps' Laplace transform, ω the root in (0, 1) of ω = A*(cμ(1 − ω)),
// βj = A*(jμ) and Cj = ∏ βi/(1 − βi) over i ≤ j, an arrival waits with
// probability J/(1 − ω) and then for an exponential time of rate
// cμ(1 − ω), where
//
//	1/J = 1/(1 − ω) + Σ_{j=1..c} (c choose j)/(Cj(1 − βj)) · (c(1 − βj) − j)/(c(1 − ω) − j).
//
// Scaling Erlang's wait by GI/M/1's ratio at the load per server, as
// extraction did before, falls short on several cores: at half load and
// scv 4 GI/M/2 waits 8.3 times M/M/2's, GI/M/1 3.4 times M/M/1's.
func burstyWaitFactor(c int, a, scv float64) float64 {
	if a <= 0 || c <= 0 {
		return 0
	}
	a = min(a, loadCap*float64(c))
	if !(scv > 0) || scv == 1 || math.IsInf(scv, 0) {
		return waitFactor(c, a)
	}
	w, ok := giMcWait(c, a, scv)
	if !ok {
		// A pole of a term, or a sum that lost its digits (hundreds of
		// cores at a light load, where nothing waits): a step either side
		// of a is off the pole; where neither side gives a sum, there is
		// no wait worth the name.
		w1, ok1 := giMcWait(c, a*(1-1e-4), scv)
		w2, ok2 := giMcWait(c, a*(1+1e-4), scv)
		if !ok1 || !ok2 {
			return 0
		}
		w = (w1 + w2) / 2
	}
	return w
}

// burstyServiceWait is the mean wait of a GI/G/c queue in mean service
// times: GI/M/c's (burstyWaitFactor) scaled by (ca² + cs²)/(ca² + 1) for
// service of squared cv cs2. For Poisson arrivals that is Allen and
// Cunneen's M/G/c, (1 + cs²)/2 times Erlang's; for exponential service it
// is exact.
func burstyServiceWait(c int, a, scv, cs2 float64) float64 {
	if !(scv > 0) || math.IsInf(scv, 0) {
		scv = 1
	}
	return burstyWaitFactor(c, a, scv) * (scv + cs2) / (scv + 1)
}

// giMcWait is burstyWaitFactor's formula at service rate 1 and arrival
// rate a; ok is false where a term's denominator c(1 − ω) − j is too
// close to 0 to divide by (the term's limit is finite, but not its
// value) or the sum is not positive.
func giMcWait(c int, a, scv float64) (float64, bool) {
	k := 1 / scv
	// log A*(s) for arrivals at rate a: gamma gaps of shape k, rate k·a.
	logA := func(s float64) float64 { return -k * math.Log1p(s/(k*a)) }
	omega := gapRoot(func(x float64) float64 { return math.Exp(logA(float64(c) * (1 - x))) })
	cf := float64(c)
	// The terms, kept as logarithms of their sizes and their signs, so
	// that hundreds of cores overflow nothing.
	logs := []float64{-math.Log(1 - omega)}
	signs := []float64{1}
	logC := 0.0
	logBinom := 0.0 // log (c choose j)
	for j := 1; j <= c; j++ {
		jf := float64(j)
		logBinom += math.Log((cf - jf + 1) / jf)
		lb := logA(jf)
		l1b := math.Log(-math.Expm1(lb)) // log(1 − βj)
		logC += lb - l1b
		num := cf*(-math.Expm1(lb)) - jf
		den := cf*(1-omega) - jf
		if math.Abs(den) < 1e-7*cf {
			return 0, false
		}
		r := num / den
		if r == 0 {
			continue
		}
		logs = append(logs, logBinom-logC-l1b+math.Log(math.Abs(r)))
		signs = append(signs, math.Copysign(1, r))
	}
	top := math.Inf(-1)
	for _, l := range logs {
		top = math.Max(top, l)
	}
	sum := 0.0
	for i, l := range logs {
		sum += signs[i] * math.Exp(l-top)
	}
	if !(sum > 0) {
		return 0, false
	}
	// J = e^−top/sum; the mean wait is J/(c(1 − ω)²).
	return math.Exp(-top) / sum / (cf * (1 - omega) * (1 - omega)), true
}

// gapRoot is the root in (0, 1) of x = f(x), for f convex and increasing
// with f(0) > 0 and f(1) = 1 and a slope above 1 there (the queue is
// stable): f(x) − x is positive below the root and negative between it
// and 1, so bisection finds it.
func gapRoot(f func(float64) float64) float64 {
	lo, hi := 0.0, 1.0
	for range 200 {
		mid := (lo + hi) / 2
		if mid == lo || mid == hi {
			break
		}
		if f(mid) > mid {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}
