package extract

import (
	"math"
	"slices"
)

// Burstiness of arrivals: the model's open workloads are renewal processes
// whose gaps have a coefficient of variation cv (1 for Poisson).
const (
	// arrivalWindow is the number of gaps around each gap whose mean it is
	// divided by.
	arrivalWindow = 40
	// arrivalMinGaps is the fewest rescaled gaps from which a cv other
	// than 1 is estimated.
	arrivalMinGaps = 200
)

// arrivalCV estimates the coefficient of variation of the gaps between
// arrivals, the parameter of the model's renewal (gamma) arrivals, from the
// gaps themselves; it returns it with the number of gaps used. A rate that
// changes over seconds or more (a ramp, a step, a daily cycle) is not
// burstiness, so each gap is first divided by the mean of the arrivalWindow
// gaps around it, itself left out (a time rescaling); gaps across an idle
// stretch are left out, and so are those within half a window of a run's
// ends.
// For gamma gaps of squared cv c² and w = arrivalWindow the rescaled gap
// y = g·w/R, R the sum of the other w, has E[y] = w/(w−c²) and
// E[y²] = (1+c²)·w²/((w−c²)(w−2c²)), so its squared cv s gives c² as the
// smaller root of c⁴ − (w+2s+1)·c² + s·w = 0 (Poisson: s = w/(w−2)). With
// fewer than arrivalMinGaps gaps, or an s within two standard errors of
// Poisson's (see poissonRescaledSD), the arrivals are taken as Poisson:
// cv 1.
//
// The gaps measure burstiness at the scale of single arrivals, where the
// waits the model predicts form. Counts per second would also see the
// rate's fluctuations over seconds, which in real traces come as much
// from stalls before the server spans start, and from chance over a few
// minutes of data, as from bursty clients.
func arrivalCV(e *entryStats, idle *activity) (float64, int) {
	const w = arrivalWindow
	if len(e.starts) <= w+1 {
		return 1, 0
	}
	t := slices.Clone(e.starts)
	slices.Sort(t)
	var n, sum, sum2 float64
	// Each run of arrivals without an idle stretch inside: t[lo:hi].
	for lo := 0; lo < len(t); {
		hi := lo + 1
		for hi < len(t) && !idle.across(floorDiv(t[hi-1], 1e9), floorDiv(t[hi], 1e9)) {
			hi++
		}
		if hi-lo > w+2 {
			for i := lo; i+1 < hi; i++ {
				// The window's w+1 gaps, t[a] to t[a+w+1], have gap i
				// in their middle; near a run's ends, where a window
				// would reach past the end, the gap is left out (shifting
				// the window there makes a ramp from zero look bursty).
				a := i - w/2
				if a < lo || a+w+1 >= hi {
					continue
				}
				g := float64(t[i+1] - t[i])
				rest := float64(t[a+w+1]-t[a]) - g
				if rest <= 0 {
					continue
				}
				y := w * g / rest
				sum += y
				sum2 += y * y
				n++
			}
		}
		lo = hi
	}
	if n < arrivalMinGaps || sum <= 0 {
		return 1, int(n)
	}
	const fw = float64(w)
	mean := sum / n
	s := (sum2/n - mean*mean) / (mean * mean)
	if math.Abs(s-fw/(fw-2)) <= 2*poissonRescaledSD(fw)/math.Sqrt(n) {
		return 1, int(n)
	}
	b := fw + 2*s + 1
	scv := (b - math.Sqrt(b*b-4*s*fw)) / 2
	return round(math.Min(math.Max(math.Sqrt(scv), 0.2), 5), 2), int(n)
}

// poissonRescaledSD is √n times the standard deviation of the squared cv
// of n rescaled gaps of Poisson arrivals, each y = g·w/R with g
// exponential and R the sum of w others (y/w is beta-prime(1, w):
// E[y^k] = k!·w^k·Γ(w−k)/Γ(w)), by the delta method: 2.28 for w = 40,
// against 2 for exponential gaps. Neighbouring gaps share most of their
// windows, which in simulations adds about 6 % more.
func poissonRescaledSD(w float64) float64 {
	var m [5]float64
	m[0] = 1
	for k := 1; k <= 4; k++ {
		m[k] = m[k-1] * float64(k) * w / (w - float64(k))
	}
	d1, d2 := -2*m[2]/(m[1]*m[1]*m[1]), 1/(m[1]*m[1])
	v := d1*d1*(m[2]-m[1]*m[1]) + d2*d2*(m[4]-m[2]*m[2]) + 2*d1*d2*(m[3]-m[1]*m[2])
	return math.Sqrt(v)
}
