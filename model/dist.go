package model

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// DistKind names the family of a Dist.
type DistKind uint8

// The kinds of distribution. All values are durations in seconds.
const (
	DistDet       DistKind = iota // constant
	DistExp                       // exponential with a given mean
	DistUniform                   // uniform on [min, max]
	DistErlang                    // sum of k exponential phases, given mean
	DistGamma                     // gamma, given mean and coefficient of variation
	DistLognormal                 // lognormal, given mean and coefficient of variation
	DistHyperexp                  // two-phase hyperexponential with balanced means
	DistEmpirical                 // weighted table of values
	DistHistogram                 // weighted bins, uniform within each bin
)

var distKindNames = [...]string{
	DistDet:       "det",
	DistExp:       "exp",
	DistUniform:   "uniform",
	DistErlang:    "erlang",
	DistGamma:     "gamma",
	DistLognormal: "lognormal",
	DistHyperexp:  "hyperexp",
	DistEmpirical: "empirical",
	DistHistogram: "histogram",
}

// String returns the name of the kind as written in a model ("exp", "gamma").
func (k DistKind) String() string {
	if int(k) < len(distKindNames) {
		return distKindNames[k]
	}
	return "DistKind(" + strconv.Itoa(int(k)) + ")"
}

// distMaxCV is the largest coefficient of variation accepted, far beyond any
// measured service time: at cv = 1e6 the gamma shape 1/cv² is 1e-12 and nearly
// every gamma draw already underflows to 0.
const distMaxCV = 1e6

// Dist is a random duration in seconds: a small value type that is cheap to
// copy and safe to share between goroutines (Sample takes the random source).
// The zero value is the constant 0 (det(0)).
//
// Build one with ParseDist or a constructor; the fields besides Kind hold the
// parameters and are set only by this package. Tables of empirical and
// histogram distributions are never modified after construction, so copies
// may share them.
type Dist struct {
	// Kind is the family of the distribution.
	Kind DistKind

	mean float64 // det: the value; parametric kinds: the mean
	cv   float64 // gamma, lognormal, hyperexp: coefficient of variation
	k    int     // erlang: number of phases
	lo   float64 // uniform: lower bound
	hi   float64 // uniform: upper bound

	// Precomputed for sampling:
	//   gamma and erlang (k ≥ 2): Marsaglia–Tsang d = a, c = b, scale = s,
	//             and for shape < 1 inv = 1/shape
	//   lognormal: a = mu, b = sigma
	//   hyperexp: a = 1 − p (probability of the second, longer phase),
	//             b, s = means of the first and second phases
	a, b, s, inv float64

	// tab is the table of an empirical or histogram distribution, behind a
	// pointer so that a Dist stays small enough to be passed in registers.
	tab *distTable
}

// distTable is the immutable table of an empirical distribution (x = values,
// w = weights, nil for equal) or a histogram (x = bounds, w = counts). cum
// holds the running sums of the weights (counts), last the index of the last
// positive one.
type distTable struct {
	x, w, cum []float64
	last      int
}

// Det returns the constant distribution at v seconds. It panics if v is
// negative or not finite.
func Det(v float64) Dist {
	distCheck("det", "value", v)
	return Dist{Kind: DistDet, mean: v + 0} // + 0 turns -0 into +0
}

// Exp returns the exponential distribution with the given mean in seconds.
// It panics if mean is negative or not finite.
func Exp(mean float64) Dist {
	distCheck("exp", "mean", mean)
	return Dist{Kind: DistExp, mean: mean + 0}
}

// Uniform returns the uniform distribution on [a, b] seconds. It panics unless
// 0 ≤ a ≤ b < +Inf.
func Uniform(a, b float64) Dist {
	distCheck("uniform", "min", a)
	distCheck("uniform", "max", b)
	if a > b {
		panic(fmt.Sprintf("model: uniform min %v is above max %v", a, b))
	}
	a, b = a+0, b+0
	return Dist{Kind: DistUniform, mean: a/2 + b/2, lo: a, hi: b}
}

// Erlang returns the Erlang distribution of k exponential phases whose total
// mean is mean seconds (each phase has mean mean/k). Its coefficient of
// variation is 1/√k. It panics if k < 1 or mean is negative or not finite.
//
// The sum of k exponentials is the gamma distribution of shape k, which
// Sample draws with the gamma sampler: its cost does not grow with k, and it
// is already faster than summing phases (or multiplying uniforms) at k = 2.
func Erlang(k int, mean float64) Dist {
	distCheck("erlang", "mean", mean)
	if k < 1 {
		panic(fmt.Sprintf("model: erlang needs k >= 1, got %d", k))
	}
	d := Dist{Kind: DistErlang, mean: mean + 0, k: k}
	if k > 1 {
		d.setGamma(float64(k), mean/float64(k))
	}
	return d
}

// Gamma returns the gamma distribution with the given mean in seconds and
// coefficient of variation cv (shape 1/cv², scale mean·cv²). A cv of 0 gives
// Det(mean). It panics if mean is negative or not finite, or cv is not in
// [0, 1e6].
func Gamma(mean, cv float64) Dist {
	distCheck("gamma", "mean", mean)
	distCheckCV("gamma", cv)
	if cv == 0 {
		return Det(mean)
	}
	d := Dist{Kind: DistGamma, mean: mean + 0, cv: cv}
	d.setGamma(1/(cv*cv), mean*cv*cv)
	return d
}

// setGamma precomputes the Marsaglia–Tsang constants for a gamma variate of
// the given shape and scale. For shape < 1 the sampler draws with shape+1 and
// multiplies by U^(1/shape).
func (d *Dist) setGamma(shape, scale float64) {
	d.inv = 0
	if shape < 1 {
		d.inv = 1 / shape
		shape++
	}
	d.a = shape - 1.0/3
	d.b = 1 / math.Sqrt(9*d.a)
	d.s = scale
}

// Lognormal returns the lognormal distribution with the given mean in seconds
// and coefficient of variation cv: the logarithm is normal with σ² = ln(1+cv²)
// and μ = ln(mean) − σ²/2. A cv of 0 gives Det(mean). It panics if mean is
// negative or not finite, or cv is not in [0, 1e6].
func Lognormal(mean, cv float64) Dist {
	distCheck("lognormal", "mean", mean)
	distCheckCV("lognormal", cv)
	if cv == 0 {
		return Det(mean)
	}
	s2 := math.Log1p(cv * cv)
	return Dist{Kind: DistLognormal, mean: mean + 0, cv: cv, a: math.Log(mean) - s2/2, b: math.Sqrt(s2)}
}

// Hyperexp returns the two-phase hyperexponential distribution with the given
// mean in seconds and coefficient of variation cv > 1, with balanced means:
// phase 1 is taken with probability p = (1 + √((cv²−1)/(cv²+1)))/2 and has
// rate 2p/mean, phase 2 has rate 2(1−p)/mean, so each phase contributes half
// of the mean. It returns an error unless 1 < cv ≤ 1e6 and mean is finite and
// ≥ 0.
func Hyperexp(mean, cv float64) (Dist, error) {
	if err := distValid("mean", mean); err != nil {
		return Dist{}, fmt.Errorf("hyperexp %v", err)
	}
	if cv > distMaxCV {
		return Dist{}, fmt.Errorf("hyperexp cv must be at most %g, got %s", float64(distMaxCV), strconv.FormatFloat(cv, 'g', -1, 64))
	}
	if !(cv > 1) {
		return Dist{}, fmt.Errorf("hyperexp needs cv > 1, got %s (use exp for cv = 1, erlang or gamma below)", strconv.FormatFloat(cv, 'g', -1, 64))
	}
	// With s = √((cv²−1)/(cv²+1)), p = (1+s)/2 and 1−p = (1−s)/2 =
	// (1−s²)/(2(1+s)) = 1/((cv²+1)(1+s)), which keeps its precision when p
	// is close to 1.
	c2 := cv * cv
	sq := math.Sqrt(1 - 2/(c2+1))
	q := 1 / ((c2 + 1) * (1 + sq))
	return Dist{Kind: DistHyperexp, mean: mean + 0, cv: cv, a: q, b: mean / (2 * (1 - q)), s: mean / (2 * q)}, nil
}

// NewEmpirical returns the distribution that takes values[i] seconds with
// probability proportional to weights[i]. A nil weights gives every value the
// same weight. Values must be finite and ≥ 0, weights finite and ≥ 0 with a
// positive sum. The inputs are copied.
func NewEmpirical(values, weights []float64) (Dist, error) {
	if len(values) == 0 {
		return Dist{}, errors.New("empirical distribution needs at least one value")
	}
	if weights != nil && len(weights) != len(values) {
		return Dist{}, fmt.Errorf("empirical distribution has %d values but %d weights", len(values), len(weights))
	}
	for i, v := range values {
		if err := distValid(fmt.Sprintf("value %d", i), v); err != nil {
			return Dist{}, fmt.Errorf("empirical %v", err)
		}
	}
	tab := &distTable{x: distCopy(values)}
	if weights != nil {
		tab.w = distCopy(weights)
	}
	cum, last, err := distCumulative(tab.w, len(values), "weight")
	if err != nil {
		return Dist{}, fmt.Errorf("empirical %v", err)
	}
	tab.cum, tab.last = cum, last
	d := Dist{Kind: DistEmpirical, tab: tab}
	d.mean, d.a = d.tableMoments()
	return d, nil
}

// NewHistogram returns the distribution that falls in bin i, the interval
// [bounds[i], bounds[i+1]) seconds, with probability proportional to
// counts[i], uniformly within the bin. There must be one more bound than
// counts; bounds must be finite, ≥ 0 and strictly increasing; counts finite
// and ≥ 0 with a positive sum. The inputs are copied.
func NewHistogram(bounds, counts []float64) (Dist, error) {
	if len(counts) == 0 || len(bounds) != len(counts)+1 {
		return Dist{}, fmt.Errorf("histogram needs one more bound than counts and at least one bin, got %d bounds and %d counts", len(bounds), len(counts))
	}
	for i, b := range bounds {
		if err := distValid(fmt.Sprintf("bound %d", i), b); err != nil {
			return Dist{}, fmt.Errorf("histogram %v", err)
		}
		if i > 0 && !(b > bounds[i-1]) {
			return Dist{}, fmt.Errorf("histogram bounds must increase: bound %d (%s) is not above bound %d (%s)", i, FormatDuration(b), i-1, FormatDuration(bounds[i-1]))
		}
	}
	tab := &distTable{x: distCopy(bounds), w: distCopy(counts)}
	cum, last, err := distCumulative(tab.w, len(counts), "count")
	if err != nil {
		return Dist{}, fmt.Errorf("histogram %v", err)
	}
	tab.cum, tab.last = cum, last
	d := Dist{Kind: DistHistogram, tab: tab}
	d.mean, d.a = d.tableMoments()
	return d, nil
}

// distCumulative checks weights (nil: n equal weights) and returns their
// running sums and the index of the last positive one.
func distCumulative(weights []float64, n int, what string) ([]float64, int, error) {
	cum := make([]float64, n)
	sum, last := 0.0, -1
	for i := 0; i < n; i++ {
		w := 1.0
		if weights != nil {
			w = weights[i]
			if math.IsNaN(w) || math.IsInf(w, 0) || w < 0 {
				return nil, 0, fmt.Errorf("%s %d is %s, want a finite number >= 0", what, i, strconv.FormatFloat(w, 'g', -1, 64))
			}
		}
		sum += w
		if w > 0 {
			last = i
		}
		cum[i] = sum
	}
	if last < 0 {
		return nil, 0, fmt.Errorf("%ss must have a positive sum", what)
	}
	if math.IsInf(sum, 0) {
		return nil, 0, fmt.Errorf("%ss are too large: their sum overflows", what)
	}
	return cum, last, nil
}

// tableMoments returns the mean and variance of an empirical or histogram
// distribution from its table.
func (d Dist) tableMoments() (mean, variance float64) {
	total := d.tab.cum[len(d.tab.cum)-1]
	weight := func(i int) float64 {
		if d.tab.w == nil {
			return 1 / total
		}
		return d.tab.w[i] / total
	}
	n := len(d.tab.cum)
	if d.Kind == DistEmpirical {
		for i := 0; i < n; i++ {
			mean += weight(i) * d.tab.x[i]
		}
		for i := 0; i < n; i++ {
			dev := d.tab.x[i] - mean
			variance += weight(i) * dev * dev
		}
		return mean, variance
	}
	for i := 0; i < n; i++ {
		mean += weight(i) * (d.tab.x[i] + d.tab.x[i+1]) / 2
	}
	for i := 0; i < n; i++ {
		// Second moment of U[lo, hi) about the overall mean: the bin's own
		// variance plus the squared offset of its midpoint.
		lo, hi := d.tab.x[i], d.tab.x[i+1]
		w := hi - lo
		off := (lo+hi)/2 - mean
		variance += weight(i) * (w*w/12 + off*off)
	}
	return mean, variance
}

func distCopy(x []float64) []float64 {
	return append([]float64(nil), x...)
}

// distValid checks that a duration parameter is finite and ≥ 0.
func distValid(name string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return fmt.Errorf("%s is %s, want a finite number >= 0", name, strconv.FormatFloat(v, 'g', -1, 64))
	}
	return nil
}

// distCheck panics if a constructor's parameter is not finite and ≥ 0.
func distCheck(kind, name string, v float64) {
	if err := distValid(name, v); err != nil {
		panic("model: " + kind + " " + err.Error())
	}
}

// distCheckCV panics if a coefficient of variation is not in [0, distMaxCV].
func distCheckCV(kind string, cv float64) {
	if !(cv >= 0 && cv <= distMaxCV) {
		panic(fmt.Sprintf("model: %s needs 0 <= cv <= %g, got %v", kind, float64(distMaxCV), cv))
	}
}

// Mean returns the mean in seconds.
func (d Dist) Mean() float64 {
	return d.mean
}

// Var returns the variance in seconds squared.
func (d Dist) Var() float64 {
	switch d.Kind {
	case DistExp:
		return d.mean * d.mean
	case DistUniform:
		w := d.hi - d.lo
		return w * w / 12
	case DistErlang:
		return d.mean * d.mean / float64(d.k)
	case DistGamma, DistLognormal, DistHyperexp:
		sd := d.cv * d.mean
		return sd * sd
	case DistEmpirical, DistHistogram:
		return d.a
	}
	return 0
}

// CV returns the coefficient of variation, the standard deviation divided by
// the mean; 0 when the mean is 0.
func (d Dist) CV() float64 {
	switch d.Kind {
	case DistExp:
		if d.mean == 0 {
			return 0
		}
		return 1
	case DistErlang:
		if d.mean == 0 {
			return 0
		}
		return 1 / math.Sqrt(float64(d.k))
	case DistGamma, DistLognormal, DistHyperexp:
		if d.mean == 0 {
			return 0
		}
		return d.cv
	}
	if d.mean == 0 {
		return 0
	}
	return math.Sqrt(d.Var()) / d.mean
}

// Params returns the mean in seconds, the coefficient of variation and, for
// Erlang, the number of phases k (0 for the other kinds).
func (d Dist) Params() (mean, cv float64, k int) {
	return d.mean, d.CV(), d.k
}

// Table returns the table of an empirical distribution (values in seconds and
// weights, nil if they are equal) or of a histogram (bounds in seconds and
// counts), as given to the constructor; nil for the other kinds. The slices
// are copies.
func (d Dist) Table() (values, weights []float64) {
	if d.Kind != DistEmpirical && d.Kind != DistHistogram {
		return nil, nil
	}
	if d.tab.w != nil {
		weights = distCopy(d.tab.w)
	}
	return distCopy(d.tab.x), weights
}

// IsZero reports whether d is the constant 0, which is what the zero Dist is.
func (d Dist) IsZero() bool {
	return d.Kind == DistDet && d.mean == 0
}

// Sample draws a duration in seconds using r. It does not allocate; it takes
// constant time for the parametric kinds (constant expected time for gamma
// and Erlang, whose sampler rejects a few percent of its tries)
// and time logarithmic in the table size for empirical and histogram.
func (d Dist) Sample(r *rand.Rand) float64 {
	switch d.Kind {
	case DistExp:
		return r.ExpFloat64() * d.mean
	case DistUniform:
		return d.lo + r.Float64()*(d.hi-d.lo)
	case DistErlang:
		if d.k == 1 {
			return r.ExpFloat64() * d.mean
		}
		return d.sampleGamma(r)
	case DistGamma:
		return d.sampleGamma(r)
	case DistLognormal:
		return math.Exp(d.a + d.b*r.NormFloat64())
	case DistHyperexp:
		if r.Float64() < d.a {
			return r.ExpFloat64() * d.s
		}
		return r.ExpFloat64() * d.b
	case DistEmpirical:
		return d.tab.x[distPick(d.tab.cum, d.tab.last, r)]
	case DistHistogram:
		i := distPick(d.tab.cum, d.tab.last, r)
		lo, hi := d.tab.x[i], d.tab.x[i+1]
		x := lo + r.Float64()*(hi-lo)
		if x >= hi { // rounding can reach the open upper bound
			x = math.Nextafter(hi, lo)
		}
		return x
	}
	return d.mean
}

// distPick draws an index with probability proportional to its weight, given
// the running sums cum of the weights and the index last of the last positive
// weight: it finds the first running sum above a uniform point in [0, total).
//
// The search halves the range without a branch on the data, since each
// comparison is a coin flip that a branch predictor would miss half the time.
// For floats ≥ 0 the order of the values is the order of their bit patterns
// as integers, so a comparison becomes the sign bit of a difference of int64s,
// and that sign, spread to a mask, selects the step.
func distPick(cum []float64, last int, r *rand.Rand) int {
	u := int64(math.Float64bits(r.Float64() * cum[len(cum)-1]))
	lo, n := 0, len(cum)
	for n > 1 {
		half := n >> 1
		// All ones if cum[lo+half-1] <= u, else zero.
		mask := int((int64(math.Float64bits(cum[lo+half-1])) - u - 1) >> 63)
		lo += half & mask
		n -= half
	}
	if int64(math.Float64bits(cum[lo])) <= u {
		lo++
	}
	if lo > last { // u rounded up to a subnormal total
		lo = last
	}
	return lo
}

// sampleGamma draws a gamma variate by the method of Marsaglia and Tsang
// (2000), with the constants set by setGamma.
func (d Dist) sampleGamma(r *rand.Rand) float64 {
	for {
		x := r.NormFloat64()
		v := 1 + d.b*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := r.Float64()
		x2 := x * x
		if u < 1-0.0331*x2*x2 || math.Log(u) < 0.5*x2+d.a*(1-v+math.Log(v)) {
			g := d.a * v
			if d.inv != 0 {
				// U^(1/shape), drawn as exp(−E/shape) since −ln U is
				// exponential.
				g *= math.Exp(-r.ExpFloat64() * d.inv)
				if g == 0 {
					return 0 // underflow; avoid 0 × an overflowed scale
				}
			}
			return g * d.s
		}
	}
}

// Scale returns d with every duration multiplied by f, which must be positive
// and finite (a CPU speed factor, a calibration ratio); coefficients of
// variation and weights are unchanged. It panics if f is not positive and
// finite, or if a parameter of a parametric kind overflows.
func (d Dist) Scale(f float64) Dist {
	if !(f > 0) || math.IsInf(f, 0) {
		panic(fmt.Sprintf("model: scale factor must be positive and finite, got %v", f))
	}
	switch d.Kind {
	case DistExp:
		return Exp(d.mean * f)
	case DistUniform:
		return Uniform(d.lo*f, d.hi*f)
	case DistErlang:
		return Erlang(d.k, d.mean*f)
	case DistGamma:
		return Gamma(d.mean*f, d.cv)
	case DistLognormal:
		return Lognormal(d.mean*f, d.cv)
	case DistHyperexp:
		h, err := Hyperexp(d.mean*f, d.cv)
		if err != nil {
			panic("model: " + err.Error())
		}
		return h
	case DistEmpirical, DistHistogram:
		// Multiplying by f > 0 keeps bounds in order (rounding is monotone)
		// and leaves the weights, hence cum and last, unchanged.
		t := *d.tab
		t.x = make([]float64, len(d.tab.x))
		for i, v := range d.tab.x {
			t.x[i] = v * f
		}
		s := d
		s.tab = &t
		s.mean, s.a = s.tableMoments()
		return s
	}
	return Det(d.mean * f)
}

// Equal reports whether d and o are the same kind with the same parameters
// (tables compared element by element).
func (d Dist) Equal(o Dist) bool {
	if d.Kind != o.Kind {
		return false
	}
	switch d.Kind {
	case DistUniform:
		return d.lo == o.lo && d.hi == o.hi
	case DistErlang:
		return d.k == o.k && d.mean == o.mean
	case DistGamma, DistLognormal, DistHyperexp:
		return d.mean == o.mean && d.cv == o.cv
	case DistEmpirical, DistHistogram:
		return distSliceEqual(d.tab.x, o.tab.x) && (d.tab.w == nil) == (o.tab.w == nil) && distSliceEqual(d.tab.w, o.tab.w)
	}
	return d.mean == o.mean
}

func distSliceEqual(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// String returns the expression that ParseDist reads back to an equal
// distribution, such as "2ms" (det), "exp(1.2ms)", "uniform(5ms, 15ms)",
// "erlang(3, 10ms)", "gamma(1ms, cv=0.5)". Empirical and histogram
// distributions, which a model writes as objects, get a short description
// instead, such as "empirical(3 values, mean 1.2ms)".
func (d Dist) String() string {
	switch d.Kind {
	case DistDet:
		return FormatDuration(d.mean)
	case DistExp:
		return "exp(" + FormatDuration(d.mean) + ")"
	case DistUniform:
		return "uniform(" + FormatDuration(d.lo) + ", " + FormatDuration(d.hi) + ")"
	case DistErlang:
		return "erlang(" + strconv.Itoa(d.k) + ", " + FormatDuration(d.mean) + ")"
	case DistGamma, DistLognormal, DistHyperexp:
		return d.Kind.String() + "(" + FormatDuration(d.mean) + ", cv=" + strconv.FormatFloat(d.cv, 'g', -1, 64) + ")"
	case DistEmpirical:
		return fmt.Sprintf("empirical(%d values, mean %s)", len(d.tab.x), FormatDuration(d.mean))
	case DistHistogram:
		return fmt.Sprintf("histogram(%d bins from %s to %s, mean %s)", len(d.tab.w), FormatDuration(d.tab.x[0]), FormatDuration(d.tab.x[len(d.tab.x)-1]), FormatDuration(d.mean))
	}
	return d.Kind.String()
}

const distNamesHint = "want exp, det, uniform, erlang, gamma, lognormal, hyperexp"

// distParam describes one parameter of a distribution expression.
type distParam struct {
	name string
	isK  bool // a whole number (erlang's k) rather than a duration or cv
	isCV bool // a plain number (cv) rather than a duration
}

// distSignatures lists the parameters of each expression, in positional order.
var distSignatures = map[string][]distParam{
	"det":       {{name: "mean"}},
	"exp":       {{name: "mean"}},
	"uniform":   {{name: "min"}, {name: "max"}},
	"erlang":    {{name: "k", isK: true}, {name: "mean"}},
	"gamma":     {{name: "mean"}, {name: "cv", isCV: true}},
	"lognormal": {{name: "mean"}, {name: "cv", isCV: true}},
	"hyperexp":  {{name: "mean"}, {name: "cv", isCV: true}},
}

// ParseDist reads a distribution of durations. The text is either a duration
// (see ParseDuration), which is a constant, or an expression:
//
//	exp(MEAN)                exponential
//	det(D)                   constant
//	uniform(MIN, MAX)        uniform on [MIN, MAX]
//	erlang(K, MEAN)          K exponential phases with total mean MEAN
//	gamma(MEAN, cv=CV)       gamma with that mean and coefficient of variation
//	lognormal(MEAN, cv=CV)   lognormal with that mean and coefficient of variation
//	hyperexp(MEAN, cv=CV)    two-phase hyperexponential, balanced means, CV > 1
//
// MEAN, D, MIN and MAX are durations; K is a whole number ≥ 1; CV is a number
// ≥ 0 (at most 1e6). Parameters may be given by position in the order shown or by name
// (mean=, cv=, k=, min=, max=) in any order, positional ones first. A cv of 0
// makes gamma and lognormal the constant det(MEAN).
func ParseDist(s string) (Dist, error) {
	t := strings.TrimSpace(s)
	open := strings.IndexByte(t, '(')
	if open < 0 {
		v, err := ParseDuration(t)
		if err == nil {
			return Det(v), nil
		}
		if distLooksLikeName(t) {
			if _, ok := distSignatures[t]; ok {
				return Dist{}, fmt.Errorf("%s needs parameters in parentheses, like %s", t, distExample(t))
			}
			return Dist{}, fmt.Errorf("unknown distribution %q (%s, or a duration)", t, distNamesHint)
		}
		if t != "" && strings.IndexByte("0123456789.-+", t[0]) >= 0 {
			return Dist{}, err // a number that is not a valid duration
		}
		return Dist{}, fmt.Errorf("invalid distribution %q: want a duration like \"10ms\" or an expression like \"exp(10ms)\"", s)
	}
	name := strings.TrimSpace(t[:open])
	sig, ok := distSignatures[name]
	if !ok {
		switch name {
		case "empirical", "histogram":
			return Dist{}, fmt.Errorf("%s distributions are written as an object, {%s: {...}}, not as an expression", name, name)
		}
		return Dist{}, fmt.Errorf("unknown distribution %q (%s)", name, distNamesHint)
	}
	if !strings.HasSuffix(t, ")") {
		return Dist{}, fmt.Errorf("%s expression %q must end with \")\"", name, s)
	}
	vals, err := distArgs(name, t[open+1:len(t)-1], sig)
	if err != nil {
		return Dist{}, err
	}
	mean, cv, k := vals["mean"], vals["cv"], int(vals["k"])
	switch name {
	case "det":
		return Det(mean), nil
	case "exp":
		return Exp(mean), nil
	case "uniform":
		if vals["min"] > vals["max"] {
			return Dist{}, fmt.Errorf("uniform needs min <= max, got min %s above max %s", FormatDuration(vals["min"]), FormatDuration(vals["max"]))
		}
		return Uniform(vals["min"], vals["max"]), nil
	case "erlang":
		return Erlang(k, mean), nil
	case "gamma":
		return Gamma(mean, cv), nil
	case "lognormal":
		return Lognormal(mean, cv), nil
	default: // hyperexp
		return Hyperexp(mean, cv)
	}
}

// distArgs splits and reads the parameters of an expression. Every parameter
// in sig is required.
func distArgs(name, body string, sig []distParam) (map[string]float64, error) {
	vals := make(map[string]float64, len(sig))
	if strings.ContainsAny(body, "()") {
		return nil, fmt.Errorf("%s parameters cannot contain parentheses: %q", name, body)
	}
	var parts []string
	if strings.TrimSpace(body) != "" {
		parts = strings.Split(body, ",")
	}
	named := false
	for i, part := range parts {
		part = strings.TrimSpace(part)
		var p distParam
		text := part
		if eq := strings.IndexByte(part, '='); eq >= 0 {
			named = true
			key := strings.TrimSpace(part[:eq])
			text = strings.TrimSpace(part[eq+1:])
			found := false
			for _, q := range sig {
				if q.name == key {
					p, found = q, true
				}
			}
			if !found {
				return nil, fmt.Errorf("%s has no parameter %q (want %s)", name, key, distParamNames(sig))
			}
		} else {
			if named {
				return nil, fmt.Errorf("%s: positional parameter %q after a named one", name, part)
			}
			if i >= len(sig) {
				return nil, fmt.Errorf("%s takes %s (%s), got %d", name, distPlural(len(sig), "parameter"), distParamNames(sig), len(parts))
			}
			p = sig[i]
		}
		if _, dup := vals[p.name]; dup {
			return nil, fmt.Errorf("%s parameter %s given twice", name, p.name)
		}
		v, err := distParamValue(name, p, text)
		if err != nil {
			return nil, err
		}
		vals[p.name] = v
	}
	for _, p := range sig {
		if _, ok := vals[p.name]; !ok {
			return nil, fmt.Errorf("%s needs %s, like %s", name, p.name, distExample(name))
		}
	}
	return vals, nil
}

// distParamValue reads one parameter value.
func distParamValue(name string, p distParam, text string) (float64, error) {
	switch {
	case p.isK:
		k, err := strconv.Atoi(text)
		if err != nil || k < 1 {
			return 0, fmt.Errorf("%s needs k to be a whole number >= 1, got %q", name, text)
		}
		return float64(k), nil
	case p.isCV:
		v, err := numParseNonNeg(text, 0)
		switch err {
		case nil:
			if v > distMaxCV {
				return 0, fmt.Errorf("%s needs cv <= %g, got %s", name, float64(distMaxCV), text)
			}
			return v, nil
		case errNumNegative:
			return 0, fmt.Errorf("%s needs cv >= 0, got %s", name, text)
		}
		return 0, fmt.Errorf("%s needs cv to be a number, got %q", name, text)
	}
	v, err := ParseDuration(text)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %v", name, p.name, err)
	}
	return v, nil
}

// distPlural writes "1 parameter", "2 parameters".
func distPlural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

func distParamNames(sig []distParam) string {
	names := make([]string, len(sig))
	for i, p := range sig {
		names[i] = p.name
	}
	return strings.Join(names, ", ")
}

// distExample returns a correct expression for a kind, for hints.
func distExample(name string) string {
	switch name {
	case "det":
		return "det(10ms)"
	case "exp":
		return "exp(10ms)"
	case "uniform":
		return "uniform(5ms, 15ms)"
	case "erlang":
		return "erlang(3, 10ms)"
	case "hyperexp":
		return "hyperexp(10ms, cv=3)"
	}
	return name + "(10ms, cv=0.5)"
}

// distLooksLikeName reports whether s is a lower-case word, so that a failed
// parse can be blamed on the distribution's name rather than on a number.
func distLooksLikeName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_') {
			return false
		}
	}
	return true
}
