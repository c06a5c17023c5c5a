package extract

import (
	"math"
	"strconv"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/perfcast/perfcast/model"
)

// fitPoints is the number of quantiles at which fits are compared with the
// observed distribution.
const fitPoints = 49

// fitted is a distribution chosen for a sample, with the evidence.
type fitted struct {
	dist model.Dist
	// ks is the largest distance between the fitted and the observed
	// distribution functions at the compared quantiles.
	ks float64
	// alternatives gives the distance of every candidate, by name.
	alternatives map[string]float64
}

// fitSample picks the distribution that describes a sample best: constant
// for nearly constant values; otherwise, among the exponential, gamma,
// lognormal and (for cv > 1) hyperexponential with the sample's mean and
// coefficient of variation, the one whose distribution function lies
// closest to the sample's quantiles (Kolmogorov–Smirnov distance), the
// exponential being kept when it is within 0.01 of the best, for its
// simplicity; and a histogram of equal-probability bins when no family comes
// within 0.1 and there are enough values to draw one (n ≥ 200).
func fitSample(s *sample) fitted {
	mean := s.mean()
	if s.n == 0 || !(mean > 0) {
		return fitted{dist: model.Det(0)}
	}
	mean = round(mean, 4)
	cv := s.cv()
	if s.n < 2 || cv < 0.05 {
		return fitted{dist: model.Det(mean)}
	}
	// Beyond this the families below cannot be told apart, and their
	// constructors refuse cv above 1e6.
	cv = round(math.Min(cv, 100), 3)
	qs := make([]float64, fitPoints)
	xs := make([]float64, fitPoints)
	for i := range qs {
		qs[i] = float64(i+1) / float64(fitPoints+1)
		xs[i] = s.quantile(qs[i])
	}
	type candidate struct {
		name string
		dist model.Dist
		cdf  func(float64) float64
	}
	cands := []candidate{
		{"exp", model.Exp(mean), distuv.Exponential{Rate: 1 / mean}.CDF},
		{"gamma", model.Gamma(mean, cv), distuv.Gamma{Alpha: 1 / (cv * cv), Beta: 1 / (mean * cv * cv)}.CDF},
	}
	s2 := math.Log1p(cv * cv)
	cands = append(cands, candidate{"lognormal", model.Lognormal(mean, cv),
		distuv.LogNormal{Mu: math.Log(mean) - s2/2, Sigma: math.Sqrt(s2)}.CDF})
	if cv > 1.05 {
		if h, err := model.Hyperexp(mean, cv); err == nil {
			cands = append(cands, candidate{"hyperexp", h, hyperexpCDF(mean, cv)})
		}
	}
	out := fitted{alternatives: map[string]float64{}, ks: math.Inf(1)}
	var expKS float64
	for _, c := range cands {
		d := 0.0
		for i, x := range xs {
			d = math.Max(d, math.Abs(c.cdf(x)-qs[i]))
		}
		// The sketch's values are within 1 % of the truth: forgive that.
		out.alternatives[c.name] = d
		if c.name == "exp" {
			expKS = d
		}
		if d < out.ks {
			out.ks, out.dist = d, c.dist
		}
	}
	if expKS <= out.ks+0.01 {
		out.ks, out.dist = expKS, cands[0].dist
	}
	if out.ks > 0.1 && s.n >= 200 {
		if h, ok := histogramOf(s); ok {
			out.dist = h
			out.alternatives["histogram"] = 0
		}
	}
	return out
}

// hyperexpCDF is the distribution function of model.Hyperexp(mean, cv).
func hyperexpCDF(mean, cv float64) func(float64) float64 {
	c2 := cv * cv
	sq := math.Sqrt(1 - 2/(c2+1))
	q := 1 / ((c2 + 1) * (1 + sq))
	p := 1 - q
	m1, m2 := mean/(2*p), mean/(2*q)
	return func(x float64) float64 {
		if x <= 0 {
			return 0
		}
		return p*(1-math.Exp(-x/m1)) + q*(1-math.Exp(-x/m2))
	}
}

// histogramQuantiles are the quantiles that bound a fitted histogram's
// bins: sixteenths, and finer in the tail, where a wide bin of uniform
// density would misplace much of the mean.
var histogramQuantiles = []float64{1. / 16, 2. / 16, 3. / 16, 4. / 16, 5. / 16, 6. / 16, 7. / 16, 8. / 16,
	9. / 16, 10. / 16, 11. / 16, 12. / 16, 13. / 16, 14. / 16, 15. / 16, 0.97, 0.99, 0.995, 0.999}

// histogramOf draws a histogram from a sample's quantiles. Bins that the
// quantiles leave empty (a point mass) pass their probability to the next.
// It fails when the histogram's mean strays more than 2 % from the
// sample's.
func histogramOf(s *sample) (model.Dist, bool) {
	bounds := []float64{roundBound(s.min)}
	var counts []float64
	prevQ, carry := 0.0, 0.0
	for i := 0; i <= len(histogramQuantiles); i++ {
		q, b := 1.0, s.max
		if i < len(histogramQuantiles) {
			q, b = histogramQuantiles[i], s.quantile(histogramQuantiles[i])
		}
		b = roundBound(b)
		carry += q - prevQ
		prevQ = q
		if b <= bounds[len(bounds)-1] {
			continue
		}
		bounds = append(bounds, b)
		counts = append(counts, math.Round(carry*1e4))
		carry = 0
	}
	if carry > 0 && len(counts) > 0 {
		counts[len(counts)-1] += math.Round(carry * 1e4)
	}
	if len(counts) < 2 {
		return model.Dist{}, false
	}
	d, err := model.NewHistogram(bounds, counts)
	if err != nil || math.Abs(d.Mean()-s.mean()) > 0.02*s.mean() {
		return model.Dist{}, false
	}
	return d, true
}

// roundBound rounds a bin bound to three significant digits and to whole
// nanoseconds.
func roundBound(v float64) float64 {
	v = round(v, 3)
	if v < 1e-9 {
		return 0
	}
	return v
}

// withMean returns d with its mean changed to mean (rounded to four
// digits) and its coefficient of variation kept.
func withMean(d model.Dist, mean float64) model.Dist {
	mean = round(mean, 4)
	_, cv, k := d.Params()
	switch d.Kind {
	case model.DistDet:
		return model.Det(mean)
	case model.DistExp:
		return model.Exp(mean)
	case model.DistErlang:
		return model.Erlang(k, mean)
	case model.DistGamma:
		return model.Gamma(mean, cv)
	case model.DistLognormal:
		return model.Lognormal(mean, cv)
	case model.DistHyperexp:
		if h, err := model.Hyperexp(mean, cv); err == nil {
			return h
		}
	}
	if m := d.Mean(); m > 0 {
		return d.Scale(mean / m)
	}
	return model.Det(mean)
}

// round keeps sig significant digits, for a model people read.
func round(x float64, sig int) float64 {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	v, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', sig, 64), 64)
	return v
}
