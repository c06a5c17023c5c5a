// Package queueing gives the mean waits of single queues in closed form:
// Erlang's M/M/c, Takács's GI/M/c for arrivals whose gaps are gamma
// distributed (as the simulator draws an open workload's), and the GI/G/c
// approximation built on them; and of queues that arrivals join at the
// shortest (JSQWait, from the exact chain JSQChainWait). The analytical
// solver and extraction share them.
package queueing

import "math"

// ErlangC is the probability that an arrival waits in an M/M/c queue with
// offered load a = λ·S (in servers); 0 without load and 1 when a ≥ c. It
// is computed through the Erlang B recursion, which is stable for any c.
func ErlangC(c int, a float64) float64 {
	if a <= 0 {
		return 0
	}
	if a >= float64(c) {
		return 1
	}
	b := 1.0 // Erlang B with 0 servers
	for k := 1; k <= c && b > 0; k++ {
		// Far beyond a, b falls like a^k/k! and underflows to 0, where
		// it stays: a million servers cost no more than a few hundred.
		b = a * b / (float64(k) + a*b)
	}
	rho := a / float64(c)
	return b / (1 - rho*(1-b))
}

// MMcWait is the mean wait of an M/M/c queue at offered load a, in mean
// service times: C(c, a)/(c − a); 0 without load, +Inf when a ≥ c.
func MMcWait(c int, a float64) float64 {
	if a >= float64(c) {
		return math.Inf(1)
	}
	if a <= 0 {
		return 0
	}
	return ErlangC(c, a) / (float64(c) - a)
}

// GIMcWait is the mean wait of a GI/M/c queue at offered load a, in mean
// service times, its arrivals' gaps gamma distributed with squared
// coefficient of variation scv; 0 without load, +Inf when a ≥ c. With scv
// 1 (or one that is not positive and finite) it is MMcWait.
//
// It is Takács's solution of the queue seen at arrivals: with A* the
// gaps' Laplace transform, ω the root in (0, 1) of ω = A*(cμ(1 − ω)),
// βj = A*(jμ) and Cj = ∏ βi/(1 − βi) over i ≤ j, an arrival waits with
// probability J/(1 − ω) and then for an exponential time of rate
// cμ(1 − ω), where
//
//	1/J = 1/(1 − ω) + Σ_{j=1..c} (c choose j)/(Cj(1 − βj)) · (c(1 − βj) − j)/(c(1 − ω) − j).
//
// At a pole of a term (c(1 − ω) = j, as M/M/2 at half load) the wait is
// the mean of those a step either side; where the sum loses its digits
// (hundreds of servers at a light load, where nothing waits) it is 0.
func GIMcWait(c int, a, scv float64) float64 {
	if a >= float64(c) {
		return math.Inf(1)
	}
	if a <= 0 || c <= 0 {
		return 0
	}
	if !(scv > 0) || scv == 1 || math.IsInf(scv, 0) {
		return MMcWait(c, a)
	}
	w, ok := giMcWait(c, a, scv)
	if !ok {
		w1, ok1 := giMcWait(c, a*(1-1e-4), scv)
		w2, ok2 := giMcWait(c, math.Min(a*(1+1e-4), (a+float64(c))/2), scv)
		if !ok1 || !ok2 {
			return 0
		}
		w = (w1 + w2) / 2
	}
	return w
}

// GIGcWait is the mean wait of a GI/G/c queue at offered load a, in mean
// service times, its arrivals' gaps of squared coefficient of variation
// ca2 and its service times' cs2: GIMcWait scaled by (ca² + cs²)/(ca² + 1).
// For Poisson arrivals that is Allen and Cunneen's M/G/c, (1 + cs²)/2 times
// Erlang's; for exponential service it is exact.
func GIGcWait(c int, a, ca2, cs2 float64) float64 {
	if !(ca2 > 0) || math.IsInf(ca2, 0) {
		ca2 = 1
	}
	w := GIMcWait(c, a, ca2)
	if w == 0 || math.IsInf(w, 1) {
		return w
	}
	return w * (ca2 + cs2) / (ca2 + 1)
}

// giMcWait is GIMcWait's formula at service rate 1 and arrival rate a; ok
// is false where a term's denominator c(1 − ω) − j is too close to 0 to
// divide by (the term's limit is finite, but not its value) or the sum is
// not positive.
func giMcWait(c int, a, scv float64) (float64, bool) {
	k := 1 / scv
	// log A*(s) for arrivals at rate a: gamma gaps of shape k, rate k·a.
	logA := func(s float64) float64 { return -k * math.Log1p(s/(k*a)) }
	omega := gapRoot(func(x float64) float64 { return math.Exp(logA(float64(c) * (1 - x))) })
	cf := float64(c)
	// The terms, kept as logarithms of their sizes and their signs, so
	// that hundreds of servers overflow nothing.
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
