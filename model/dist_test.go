package model

import (
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
)

func vtMustEmpirical(t testing.TB, values, weights []float64) Dist {
	t.Helper()
	d, err := NewEmpirical(values, weights)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func vtMustHistogram(t testing.TB, bounds, counts []float64) Dist {
	t.Helper()
	d, err := NewHistogram(bounds, counts)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func vtMustHyperexp(t testing.TB, mean, cv float64) Dist {
	t.Helper()
	d, err := Hyperexp(mean, cv)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// vtHyperexpPhases returns the balanced-means phase probability and phase
// means, computed here from the formula rather than read from the Dist.
func vtHyperexpPhases(mean, cv float64) (p, m1, m2 float64) {
	c2 := cv * cv
	p = (1 + math.Sqrt((c2-1)/(c2+1))) / 2
	return p, mean / (2 * p), mean / (2 * (1 - p))
}

// vtMu4 returns the fourth central moment of d, from closed forms for the
// parametric kinds and from the table for the others.
func vtMu4(t *testing.T, d Dist) float64 {
	mean, cv, k := d.Params()
	switch d.Kind {
	case DistDet:
		return 0
	case DistExp:
		return 9 * math.Pow(mean, 4)
	case DistUniform:
		w := math.Sqrt(12 * d.Var()) // width
		return math.Pow(w, 4) / 80
	case DistErlang, DistGamma:
		// Shape α, scale θ: μ4 = 3α(α+2)θ⁴.
		alpha := float64(k)
		if d.Kind == DistGamma {
			alpha = 1 / (cv * cv)
		}
		theta := mean / alpha
		return 3 * alpha * (alpha + 2) * math.Pow(theta, 4)
	case DistLognormal:
		// Kurtosis w⁴ + 2w³ + 3w² − 3 with w = exp(σ²) = 1 + cv².
		w := 1 + cv*cv
		return (w*w*w*w + 2*w*w*w + 3*w*w - 3) * d.Var() * d.Var()
	case DistHyperexp:
		// Raw moments E[X^j] = j! Σ p_i m_i^j, then the central moment.
		p, m1, m2 := vtHyperexpPhases(mean, cv)
		raw := func(j int, fact float64) float64 {
			return fact * (p*math.Pow(m1, float64(j)) + (1-p)*math.Pow(m2, float64(j)))
		}
		e2, e3, e4 := raw(2, 2), raw(3, 6), raw(4, 24)
		return e4 - 4*mean*e3 + 6*mean*mean*e2 - 3*math.Pow(mean, 4)
	case DistEmpirical:
		values, weights := d.Table()
		total, m4 := 0.0, 0.0
		for i, v := range values {
			w := 1.0
			if weights != nil {
				w = weights[i]
			}
			total += w
			m4 += w * math.Pow(v-mean, 4)
		}
		return m4 / total
	case DistHistogram:
		bounds, counts := d.Table()
		total, m4 := 0.0, 0.0
		for i, c := range counts {
			a, b := bounds[i]-mean, bounds[i+1]-mean
			total += c
			m4 += c * (math.Pow(b, 5) - math.Pow(a, 5)) / (5 * (b - a))
		}
		return m4 / total
	}
	t.Fatalf("no fourth moment for kind %v", d.Kind)
	return 0
}

// vtCases are distributions of every kind, some of them in several regimes
// (a one-phase Erlang is drawn as an exponential; the gamma sampler has a
// separate path for shape < 1).
func vtCases(t testing.TB) map[string]Dist {
	return map[string]Dist{
		"det":              Det(0.002),
		"exp":              Exp(0.0012),
		"exp-zero":         Exp(0),
		"uniform":          Uniform(0.005, 0.015),
		"erlang":           Erlang(3, 0.01),
		"erlang-one":       Erlang(1, 0.01),
		"erlang-many":      Erlang(20, 0.01),
		"gamma":            Gamma(0.001, 0.5),
		"gamma-small":      Gamma(0.001, 2),
		"lognormal":        Lognormal(0.01, 0.5),
		"hyperexp":         vtMustHyperexp(t, 0.01, 2),
		"empirical":        vtMustEmpirical(t, []float64{0.001, 0.002, 0.005, 0.01}, []float64{1, 2, 0, 1}),
		"empirical-equal":  vtMustEmpirical(t, []float64{0.003, 0.001, 0.002}, nil),
		"histogram":        vtMustHistogram(t, []float64{0, 0.001, 0.002, 0.01}, []float64{5, 0, 3}),
		"histogram-single": vtMustHistogram(t, []float64{0.002, 0.004}, []float64{1}),
	}
}

func TestDistMoments(t *testing.T) {
	const n = 200000
	for name, d := range vtCases(t) {
		t.Run(name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(11, uint64(len(name))))
			// Welford's running mean and variance.
			mean, m2, min := 0.0, 0.0, math.Inf(1)
			for i := 1; i <= n; i++ {
				x := d.Sample(r)
				if !(x >= 0) || math.IsInf(x, 0) {
					t.Fatalf("sample %v", x)
				}
				min = math.Min(min, x)
				delta := x - mean
				mean += delta / float64(i)
				m2 += delta * (x - mean)
			}
			variance := m2 / (n - 1)
			wantMean, wantVar := d.Mean(), d.Var()
			// The sample mean has standard error σ/√n; 4 of them bounds a
			// correct sampler's deviation with probability about 1 − 6e-5.
			if tol := 4 * math.Sqrt(wantVar/n); math.Abs(mean-wantMean) > tol {
				t.Errorf("sample mean %v, want %v ± %v", mean, wantMean, tol)
			}
			// The sample variance has standard error √((μ4 − σ⁴)/n). Its
			// distribution is skewed for the heavier-tailed kinds, so allow
			// 5 standard errors rather than 4.
			mu4 := vtMu4(t, d)
			if tol := 5 * math.Sqrt((mu4-wantVar*wantVar)/n); math.Abs(variance-wantVar) > tol {
				t.Errorf("sample variance %v, want %v ± %v", variance, wantVar, tol)
			}
			if wantVar == 0 && (variance != 0 || min != wantMean) {
				t.Errorf("constant distribution varies: variance %v, min %v", variance, min)
			}
		})
	}
}

func TestDistAnalytic(t *testing.T) {
	const eps = 1e-12
	near := func(got, want float64) bool {
		return math.Abs(got-want) <= eps*math.Max(1, math.Abs(want))
	}
	cases := []struct {
		name           string
		d              Dist
		mean, vari, cv float64
	}{
		{"det", Det(3), 3, 0, 0},
		{"zero", Dist{}, 0, 0, 0},
		{"exp", Exp(2), 2, 4, 1},
		{"exp-zero", Exp(0), 0, 0, 0},
		{"erlang-zero", Erlang(3, 0), 0, 0, 0},
		{"gamma-zero", Gamma(0, 0.5), 0, 0, 0},
		{"uniform-zero", Uniform(0, 0), 0, 0, 0},
		{"empirical-zero", vtMustEmpirical(t, []float64{0, 0}, nil), 0, 0, 0},
		{"uniform", Uniform(1, 7), 4, 3, math.Sqrt(3) / 4},
		{"erlang", Erlang(4, 8), 8, 16, 0.5},
		{"erlang-many", Erlang(25, 5), 5, 1, 0.2},
		{"gamma", Gamma(2, 0.5), 2, 1, 0.5},
		{"gamma-cv0", Gamma(2, 0), 2, 0, 0},
		{"lognormal", Lognormal(3, 2), 3, 36, 2},
		{"hyperexp", vtMustHyperexp(t, 1, 3), 1, 9, 3},
		// Values 1, 2, 4 with weights 1, 1, 2: mean (1+2+8)/4, E[X²] = (1+4+32)/4.
		{"empirical", vtMustEmpirical(t, []float64{1, 2, 4}, []float64{1, 1, 2}), 2.75, 37.0/4 - 2.75*2.75, math.Sqrt(37.0/4-2.75*2.75) / 2.75},
		// Bins [0,2) and [2,6) with weights 1/4, 3/4: mean 1/4·1 + 3/4·4,
		// E[X²] = Σ p (a² + ab + b²)/3 = 1/4·4/3 + 3/4·52/3.
		{"histogram", vtMustHistogram(t, []float64{0, 2, 6}, []float64{1, 3}), 3.25, 1.0/3 + 13 - 3.25*3.25, math.Sqrt(1.0/3+13-3.25*3.25) / 3.25},
	}
	for _, c := range cases {
		if !near(c.d.Mean(), c.mean) || !near(c.d.Var(), c.vari) || !near(c.d.CV(), c.cv) {
			t.Errorf("%s: mean %v var %v cv %v, want %v %v %v", c.name, c.d.Mean(), c.d.Var(), c.d.CV(), c.mean, c.vari, c.cv)
		}
		if mean, cv, _ := c.d.Params(); mean != c.d.Mean() || cv != c.d.CV() {
			t.Errorf("%s: Params mean %v cv %v disagree with Mean and CV", c.name, mean, cv)
		}
	}
	if _, _, k := Erlang(4, 8).Params(); k != 4 {
		t.Errorf("Erlang(4, 8) has k = %d", k)
	}
	// The hyperexponential's phases each carry half the mean and give the
	// second moment (1 + cv²)·mean².
	for _, cv := range []float64{1.01, 1.5, 3, 10, 1e3, 1e6} {
		h := vtMustHyperexp(t, 2, cv)
		if p, m1, m2 := vtHyperexpPhases(2, cv); cv <= 10 && (!near(1-h.a, p) || !near(h.b, m1) || !near(h.s, m2)) {
			// Only for moderate cv: the formula as written loses
			// precision in 1 − p when p is close to 1.
			t.Errorf("hyperexp cv %v: phases %v %v %v, want %v %v %v", cv, 1-h.a, h.b, h.s, p, m1, m2)
		}
		q, m1, m2 := h.a, h.b, h.s
		p := 1 - q
		if !near(p*m1, 1) || !near(q*m2, 1) {
			t.Errorf("hyperexp cv %v: phase means are not balanced: %v %v", cv, p*m1, q*m2)
		}
		if e2 := 2 * (p*m1*m1 + q*m2*m2); !near(e2, (1+cv*cv)*4) {
			t.Errorf("hyperexp cv %v: second moment %v, want %v", cv, e2, (1+cv*cv)*4)
		}
	}
	// Lognormal parameters: σ² = ln(1 + cv²), μ = ln(mean) − σ²/2, so that
	// E[X] = exp(μ + σ²/2) is the mean.
	l := Lognormal(3, 2)
	if !near(l.b*l.b, math.Log(5)) || !near(math.Exp(l.a+l.b*l.b/2), 3) {
		t.Errorf("lognormal mu %v sigma %v", l.a, l.b)
	}
}

// vtGammaP is the regularized lower incomplete gamma function P(a, x), by
// its power series x^a e^−x / Γ(a+1) · Σ x^n / ((a+1)…(a+n)), which converges
// for every x; the test only needs moderate x.
func vtGammaP(a, x float64) float64 {
	if x <= 0 {
		return 0
	}
	term, sum := 1.0, 1.0
	for n := 1; n < 100000; n++ {
		term *= x / (a + float64(n))
		sum += term
		if term < sum*1e-17 {
			break
		}
	}
	lg, _ := math.Lgamma(a + 1)
	return math.Min(1, sum*math.Exp(a*math.Log(x)-x-lg))
}

// vtKS fails if the Kolmogorov–Smirnov statistic of n samples of d against
// cdf exceeds 1.95/√n, the asymptotic critical value at level 0.001.
func vtKS(t *testing.T, d Dist, cdf func(float64) float64, seed uint64) {
	t.Helper()
	const n = 20000
	r := rand.New(rand.NewPCG(seed, 7))
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = d.Sample(r)
	}
	sort.Float64s(xs)
	dmax := 0.0
	for i, x := range xs {
		f := cdf(x)
		dmax = math.Max(dmax, math.Max(float64(i+1)/n-f, f-float64(i)/n))
	}
	if crit := 1.95 / math.Sqrt(n); dmax > crit {
		t.Errorf("%v: Kolmogorov–Smirnov statistic %v above %v", d, dmax, crit)
	}
}

func TestDistKolmogorovSmirnov(t *testing.T) {
	expCDF := func(mean float64) func(float64) float64 {
		return func(x float64) float64 { return -math.Expm1(-x / mean) }
	}
	gammaCDF := func(shape, scale float64) func(float64) float64 {
		return func(x float64) float64 { return vtGammaP(shape, x/scale) }
	}
	vtKS(t, Exp(0.0012), expCDF(0.0012), 1)
	vtKS(t, Uniform(0.005, 0.015), func(x float64) float64 { return (x - 0.005) / 0.01 }, 2)
	for i, cv := range []float64{1.2, 2, 5} {
		p, m1, m2 := vtHyperexpPhases(0.01, cv)
		vtKS(t, vtMustHyperexp(t, 0.01, cv), func(x float64) float64 {
			return p*expCDF(m1)(x) + (1-p)*expCDF(m2)(x)
		}, 3+uint64(i))
	}
	bounds, counts := []float64{0, 0.001, 0.002, 0.01}, []float64{5, 0, 3}
	vtKS(t, vtMustHistogram(t, bounds, counts), func(x float64) float64 {
		below := 0.0
		for i, c := range counts {
			if x >= bounds[i+1] {
				below += c
			} else if x > bounds[i] {
				below += c * (x - bounds[i]) / (bounds[i+1] - bounds[i])
			}
		}
		return below / 8
	}, 6)
	vtKS(t, Erlang(3, 0.01), gammaCDF(3, 0.01/3), 7)
	vtKS(t, Erlang(20, 0.01), gammaCDF(20, 0.01/20), 8)
	vtKS(t, Erlang(1, 0.01), expCDF(0.01), 12)
	vtKS(t, Gamma(0.001, 0.5), gammaCDF(4, 0.001/4), 9)
	vtKS(t, Gamma(0.001, 2), gammaCDF(0.25, 0.001*4), 10)
	vtKS(t, Lognormal(0.01, 1.5), func(x float64) float64 {
		s2 := math.Log(1 + 1.5*1.5)
		mu := math.Log(0.01) - s2/2
		return 0.5 * math.Erfc(-(math.Log(x)-mu)/math.Sqrt(2*s2))
	}, 11)
}

// vtChi2Crit approximates the upper 0.001 quantile of the chi-square
// distribution with df degrees of freedom (Wilson–Hilferty: the cube root of
// χ²/df is nearly normal with mean 1 − 2/(9df) and variance 2/(9df); 3.09 is
// the standard normal 0.999 quantile).
func vtChi2Crit(df int) float64 {
	v := 2 / (9 * float64(df))
	c := 1 - v + 3.09*math.Sqrt(v)
	return float64(df) * c * c * c
}

// vtChi2 fails if the observed counts differ from n·probs more than the
// chi-square test at level 0.001 allows, or if a cell of probability 0 was
// hit at all.
func vtChi2(t *testing.T, what string, observed []int, probs []float64, n int) {
	t.Helper()
	stat, df := 0.0, -1
	for i, p := range probs {
		if p == 0 {
			if observed[i] != 0 {
				t.Errorf("%s: cell %d of probability 0 drawn %d times", what, i, observed[i])
			}
			continue
		}
		e := p * float64(n)
		dev := float64(observed[i]) - e
		stat += dev * dev / e
		df++
	}
	if crit := vtChi2Crit(df); stat > crit {
		t.Errorf("%s: chi-square %v with %d degrees of freedom, above %v", what, stat, df, crit)
	}
}

func TestDistEmpiricalChiSquare(t *testing.T) {
	const n = 100000
	values := []float64{0.004, 0.001, 0.002, 0.003, 0.009}
	weights := []float64{1, 2, 0, 3.5, 0.5}
	d := vtMustEmpirical(t, values, weights)
	r := rand.New(rand.NewPCG(21, 22))
	observed := make([]int, len(values))
	for i := 0; i < n; i++ {
		x := d.Sample(r)
		j := 0
		for j < len(values) && values[j] != x {
			j++
		}
		if j == len(values) {
			t.Fatalf("sample %v is not a table value", x)
		}
		observed[j]++
	}
	probs := make([]float64, len(weights))
	for i, w := range weights {
		probs[i] = w / 7
	}
	vtChi2(t, "empirical", observed, probs, n)

	// Histogram: counts per bin, including an empty bin, and every sample
	// inside [first bound, last bound).
	bounds, counts := []float64{0.001, 0.002, 0.004, 0.005, 0.02}, []float64{1, 4, 0, 5}
	h := vtMustHistogram(t, bounds, counts)
	observed = make([]int, len(counts))
	for i := 0; i < n; i++ {
		x := h.Sample(r)
		j := sort.SearchFloat64s(bounds, x)
		if j < len(bounds) && bounds[j] == x {
			j++
		}
		if j == 0 || j == len(bounds) {
			t.Fatalf("histogram sample %v outside [%v, %v)", x, bounds[0], bounds[len(bounds)-1])
		}
		observed[j-1]++
	}
	vtChi2(t, "histogram", observed, []float64{0.1, 0.4, 0, 0.5}, n)
}

// TestDistTableEnds checks the ends of the table search: zero weights at
// either end are never drawn, even when the uniform point rounds up to the
// total (which happens when the total is subnormal), and a histogram sample
// stays below the upper bound of its bin.
func TestDistTableEnds(t *testing.T) {
	d := vtMustEmpirical(t, []float64{1, 2, 3}, []float64{1, 1, 0})
	if i := distPick(d.tab.cum, d.tab.last, rand.New(vtConstSource(math.MaxUint64))); i != 1 {
		t.Errorf("largest uniform point picks index %d, want 1", i)
	}
	tiny := vtMustEmpirical(t, []float64{1, 2, 3}, []float64{math.SmallestNonzeroFloat64, math.SmallestNonzeroFloat64, 0})
	if i := distPick(tiny.tab.cum, tiny.tab.last, rand.New(vtConstSource(math.MaxUint64))); i != 1 {
		t.Errorf("subnormal weights: largest uniform point picks index %d, want 1", i)
	}
	if i := distPick(d.tab.cum, d.tab.last, rand.New(vtConstSource(0))); i != 0 {
		t.Errorf("smallest uniform point picks index %d, want 0", i)
	}
	z := vtMustEmpirical(t, []float64{1, 2, 3}, []float64{0, 1, 1})
	if i := distPick(z.tab.cum, z.tab.last, rand.New(vtConstSource(0))); i != 1 {
		t.Errorf("leading zero weight: smallest uniform point picks index %d, want 1", i)
	}
	h := vtMustHistogram(t, []float64{1, 2}, []float64{1})
	if x := h.Sample(rand.New(vtConstSource(math.MaxUint64))); x != math.Nextafter(2, 0) {
		t.Errorf("histogram sample %v for the largest uniform point, want the float64 below 2", x)
	}
}

// TestDistPick compares the table search with a linear scan for the first
// running sum above the same uniform point, over random tables that include
// zero weights.
func TestDistPick(t *testing.T) {
	r := rand.New(rand.NewPCG(51, 52))
	for trial := 0; trial < 2000; trial++ {
		n := 1 + r.IntN(40)
		weights := make([]float64, n)
		for i := range weights {
			if r.IntN(3) > 0 {
				weights[i] = float64(r.IntN(5))
			}
		}
		weights[r.IntN(n)] = 1 + r.Float64()
		cum, last, err := distCumulative(weights, n, "weight")
		if err != nil {
			t.Fatal(err)
		}
		seed := r.Uint64()
		for k := 0; k < 20; k++ {
			a, b := rand.New(rand.NewPCG(seed, uint64(k))), rand.New(rand.NewPCG(seed, uint64(k)))
			got := distPick(cum, last, a)
			u := b.Float64() * cum[n-1]
			want := 0
			for cum[want] <= u {
				want++
			}
			if got != want || weights[got] == 0 {
				t.Fatalf("weights %v, u %v: picked %d, want %d", weights, u, got, want)
			}
		}
	}
}

// vtConstSource is a rand.Source that always returns the same value.
type vtConstSource uint64

func (s vtConstSource) Uint64() uint64 { return uint64(s) }

func TestParseDist(t *testing.T) {
	cases := []struct {
		in   string
		want Dist
		str  string
	}{
		{"2ms", Det(0.002), "2ms"},
		{"0.5", Det(0.5), "500ms"},
		{"0", Dist{}, "0s"},
		{"det(10ms)", Det(0.01), "10ms"},
		{"det(mean=10ms)", Det(0.01), "10ms"},
		{"exp(1.2ms)", Exp(0.0012), "exp(1.2ms)"},
		{"exp(mean=1.2ms)", Exp(0.0012), "exp(1.2ms)"},
		{" exp ( 1.2 ms ) ", Exp(0.0012), "exp(1.2ms)"},
		{"exp(0)", Exp(0), "exp(0s)"},
		{"uniform(5ms, 15ms)", Uniform(0.005, 0.015), "uniform(5ms, 15ms)"},
		{"uniform(max=15ms, min=5ms)", Uniform(0.005, 0.015), "uniform(5ms, 15ms)"},
		{"uniform(5ms, max=15ms)", Uniform(0.005, 0.015), "uniform(5ms, 15ms)"},
		{"uniform(2ms, 2ms)", Uniform(0.002, 0.002), "uniform(2ms, 2ms)"},
		{"erlang(3, 10ms)", Erlang(3, 0.01), "erlang(3, 10ms)"},
		{"erlang(mean=10ms, k=3)", Erlang(3, 0.01), "erlang(3, 10ms)"},
		{"erlang(40, 1s)", Erlang(40, 1), "erlang(40, 1s)"},
		{"gamma(1ms, cv=0.5)", Gamma(0.001, 0.5), "gamma(1ms, cv=0.5)"},
		{"gamma(cv=0.5, mean=1ms)", Gamma(0.001, 0.5), "gamma(1ms, cv=0.5)"},
		{"gamma(1ms, 0.5)", Gamma(0.001, 0.5), "gamma(1ms, cv=0.5)"},
		{"gamma(1ms, cv=0)", Det(0.001), "1ms"},
		{"lognormal(10ms, cv=1.5)", Lognormal(0.01, 1.5), "lognormal(10ms, cv=1.5)"},
		{"lognormal(10ms, cv=0)", Det(0.01), "10ms"},
		{"hyperexp(10ms, cv=3)", vtMustHyperexp(t, 0.01, 3), "hyperexp(10ms, cv=3)"},
		{"hyperexp(cv=3, mean=10ms)", vtMustHyperexp(t, 0.01, 3), "hyperexp(10ms, cv=3)"},
		{"exp(2m)", Exp(120), "exp(2m)"},
		{"exp(250us)", Exp(0.00025), "exp(250us)"},
	}
	for _, c := range cases {
		got, err := ParseDist(c.in)
		if err != nil {
			t.Errorf("ParseDist(%q): %v", c.in, err)
			continue
		}
		if !got.Equal(c.want) {
			t.Errorf("ParseDist(%q) = %v, want %v", c.in, got, c.want)
		}
		if s := got.String(); s != c.str {
			t.Errorf("ParseDist(%q).String() = %q, want %q", c.in, s, c.str)
		}
		back, err := ParseDist(got.String())
		if err != nil || !back.Equal(got) {
			t.Errorf("ParseDist(%q) = %v does not read back: %v, %v", c.in, got, back, err)
		}
	}
}

func TestParseDistErrors(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", "invalid distribution"},
		{"expo(10ms)", `unknown distribution "expo" (want exp, det, uniform, erlang, gamma, lognormal, hyperexp)`},
		{"expo", `unknown distribution "expo"`},
		{"exp", "exp needs parameters in parentheses, like exp(10ms)"},
		{"normal(1ms, 1ms)", `unknown distribution "normal"`},
		{"(10ms)", `unknown distribution ""`},
		{"-5ms", "negative duration"},
		{"1e999", "too large"},
		{"5 parsecs", "invalid duration"},
		{"ten ms", "invalid distribution"},
		{"exp(10ms", `must end with ")"`},
		{"exp(10ms)x", `must end with ")"`},
		{"exp((10ms))", "cannot contain parentheses"},
		{"exp(10ms))", "cannot contain parentheses"},
		{"exp()", "exp needs mean"},
		{"exp(-1ms)", "negative duration"},
		{"exp(fast)", "exp mean: invalid duration"},
		{"exp(1ms, 2ms)", "exp takes 1 parameter (mean), got 2"},
		{"exp(1ms,)", "exp takes 1 parameter"},
		{"uniform(1ms, 2ms, 3ms)", "uniform takes 2 parameters (min, max), got 3"},
		{"det", "det needs parameters in parentheses, like det(10ms)"},
		{"det()", "det needs mean, like det(10ms)"},
		{"lognormal", "lognormal needs parameters in parentheses, like lognormal(10ms, cv=0.5)"},
		{"exp(rate=5)", `exp has no parameter "rate" (want mean)`},
		{"exp(mean=1ms, mean=2ms)", "mean given twice"},
		{"exp(1ms, mean=2ms)", "mean given twice"},
		{"det(NaN)", "invalid duration"},
		{"uniform(5ms)", "uniform needs max"},
		{"uniform(15ms, 5ms)", "uniform needs min <= max"},
		{"uniform(min=5ms, 15ms)", "positional parameter \"15ms\" after a named one"},
		{"uniform(a=5ms, b=15ms)", `uniform has no parameter "a" (want min, max)`},
		{"erlang(10ms)", "erlang needs k to be a whole number >= 1"},
		{"erlang(0, 10ms)", "erlang needs k to be a whole number >= 1, got \"0\""},
		{"erlang(2.5, 10ms)", "whole number"},
		{"erlang(-3, 10ms)", "whole number >= 1"},
		{"erlang(3)", "erlang needs mean"},
		{"gamma(1ms)", "gamma needs cv, like gamma(10ms, cv=0.5)"},
		{"gamma(1ms, cv=-1)", "gamma needs cv >= 0"},
		{"gamma(1ms, cv=x)", "gamma needs cv to be a number"},
		{"gamma(1ms, cv=Inf)", "gamma needs cv to be a number"},
		{"gamma(1ms, cv=1e7)", "gamma needs cv <= 1e+06"},
		{"gamma(1ms, sd=1)", `gamma has no parameter "sd" (want mean, cv)`},
		{"lognormal(cv=1)", "lognormal needs mean"},
		{"hyperexp(10ms, cv=1)", "hyperexp needs cv > 1"},
		{"hyperexp(10ms, cv=0.5)", "hyperexp needs cv > 1"},
		{"hyperexp(10ms)", "hyperexp needs cv, like hyperexp(10ms, cv=3)"},
		{"empirical(1ms, 2ms)", "written as an object"},
		{"histogram(1ms)", "written as an object"},
	}
	for _, c := range cases {
		_, err := ParseDist(c.in)
		vtCheckErr(t, c.in, err, c.want)
	}
}

// vtRandomDist draws a distribution of any parametric kind with random
// parameters spread over many orders of magnitude.
func vtRandomDist(t *testing.T, r *rand.Rand) Dist {
	dur := func() float64 {
		switch r.IntN(4) {
		case 0:
			for { // any finite non-negative float64
				if x := math.Float64frombits(r.Uint64() &^ (1 << 63)); !math.IsInf(x, 0) && !math.IsNaN(x) {
					return x
				}
			}
		case 1:
			return float64(r.IntN(1000)) * math.Pow(10, float64(-r.IntN(12)))
		}
		return math.Pow(10, -9+12*r.Float64())
	}
	cv := func() float64 { return math.Pow(10, -3+6*r.Float64()) }
	switch r.IntN(8) {
	case 0:
		return Det(dur())
	case 1:
		return Exp(dur())
	case 2:
		a, b := dur(), dur()
		return Uniform(math.Min(a, b), math.Max(a, b))
	case 3:
		return Erlang(1+r.IntN(100), dur())
	case 4:
		return Gamma(dur(), cv())
	case 5:
		return Lognormal(dur(), cv())
	case 6:
		return vtMustHyperexp(t, dur(), 1+cv())
	}
	return Erlang(1+r.IntN(8), dur())
}

func TestDistStringRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	for i := 0; i < 20000; i++ {
		d := vtRandomDist(t, r)
		s := d.String()
		back, err := ParseDist(s)
		if err != nil {
			t.Fatalf("%s does not parse: %v", s, err)
		}
		if !back.Equal(d) {
			t.Fatalf("%s reads back as %s, not an equal distribution", s, back)
		}
	}
}

func TestDistEqual(t *testing.T) {
	ds := []Dist{
		Det(1), Det(2), Exp(1), Exp(2), Uniform(0, 1), Uniform(0, 2), Uniform(1, 2),
		Erlang(2, 1), Erlang(3, 1), Erlang(2, 2), Gamma(1, 0.5), Gamma(1, 0.6), Gamma(2, 0.5),
		Lognormal(1, 0.5), Lognormal(1, 0.6), vtMustHyperexp(t, 1, 2), vtMustHyperexp(t, 1, 3),
		vtMustEmpirical(t, []float64{1, 2}, nil), vtMustEmpirical(t, []float64{1, 2}, []float64{1, 1}),
		vtMustEmpirical(t, []float64{1, 2}, []float64{1, 2}), vtMustEmpirical(t, []float64{1, 3}, nil),
		vtMustEmpirical(t, []float64{1, 2, 3}, nil),
		vtMustHistogram(t, []float64{0, 1, 2}, []float64{1, 1}), vtMustHistogram(t, []float64{0, 1, 3}, []float64{1, 1}),
		vtMustHistogram(t, []float64{0, 1, 2}, []float64{1, 2}), vtMustHistogram(t, []float64{0, 1, 2, 3}, []float64{1, 1, 1}),
	}
	for i, a := range ds {
		for j, b := range ds {
			if a.Equal(b) != (i == j) {
				t.Errorf("%v.Equal(%v) = %v", a, b, a.Equal(b))
			}
		}
	}
	// Same parameters built twice compare equal.
	if !vtMustEmpirical(t, []float64{1, 2}, []float64{1, 2}).Equal(vtMustEmpirical(t, []float64{1, 2}, []float64{1, 2})) {
		t.Error("equal empirical tables compare unequal")
	}
	if !Gamma(1, 0.5).Equal(Gamma(1, 0.5)) || !(Dist{}).Equal(Det(0)) || !Det(0).Equal(Det(math.Copysign(0, -1))) {
		t.Error("equal distributions compare unequal")
	}
}

func TestDistZeroValue(t *testing.T) {
	var d Dist
	r := rand.New(rand.NewPCG(1, 1))
	if !d.IsZero() || d.Kind != DistDet || d.Mean() != 0 || d.Var() != 0 || d.CV() != 0 || d.Sample(r) != 0 || d.String() != "0s" {
		t.Errorf("zero Dist: IsZero %v kind %v mean %v var %v cv %v string %q", d.IsZero(), d.Kind, d.Mean(), d.Var(), d.CV(), d.String())
	}
	if !Det(0).IsZero() || Det(1).IsZero() || Exp(0).IsZero() || Exp(1).IsZero() {
		t.Error("IsZero is true exactly for det(0)")
	}
	if v, w := d.Table(); v != nil || w != nil {
		t.Error("zero Dist has a table")
	}
	if s := d.Scale(2); !s.IsZero() {
		t.Errorf("zero Dist scaled is %v", s)
	}
}

func TestDistScale(t *testing.T) {
	cases := []struct{ d, want Dist }{
		{Det(1), Det(2)},
		{Exp(1), Exp(2)},
		{Uniform(1, 3), Uniform(2, 6)},
		{Erlang(3, 1), Erlang(3, 2)},
		{Gamma(1, 0.5), Gamma(2, 0.5)},
		{Lognormal(1, 1.5), Lognormal(2, 1.5)},
		{vtMustHyperexp(t, 1, 3), vtMustHyperexp(t, 2, 3)},
		{vtMustEmpirical(t, []float64{1, 2}, []float64{1, 3}), vtMustEmpirical(t, []float64{2, 4}, []float64{1, 3})},
		{vtMustEmpirical(t, []float64{1, 2}, nil), vtMustEmpirical(t, []float64{2, 4}, nil)},
		{vtMustHistogram(t, []float64{0, 1, 2}, []float64{1, 3}), vtMustHistogram(t, []float64{0, 2, 4}, []float64{1, 3})},
	}
	for _, c := range cases {
		before := c.d.String()
		s := c.d.Scale(2)
		if !s.Equal(c.want) {
			t.Errorf("%v scaled by 2 is %v, want %v", c.d, s, c.want)
		}
		if s.Mean() != c.want.Mean() || s.Var() != c.want.Var() {
			t.Errorf("%v scaled by 2: mean %v var %v, want %v %v", c.d, s.Mean(), s.Var(), c.want.Mean(), c.want.Var())
		}
		if c.d.String() != before {
			t.Errorf("scaling changed the original %s to %v", before, c.d)
		}
	}
	e := vtMustEmpirical(t, []float64{1, 2}, nil)
	e.Scale(3)
	if v, _ := e.Table(); v[0] != 1 || v[1] != 2 {
		t.Errorf("scaling changed the original table to %v", v)
	}
	for _, f := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		vtMustPanic(t, "Scale", func() { Exp(1).Scale(f) })
	}
}

// vtMustPanic fails unless f panics with a message naming the package.
func vtMustPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Errorf("%s did not panic", what)
		} else if s, ok := r.(string); !ok || !strings.HasPrefix(s, "model: ") {
			t.Errorf("%s panicked with %v, want a message starting \"model: \"", what, r)
		}
	}()
	f()
}

func TestDistConstructorPanics(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	vtMustPanic(t, "Det(-1)", func() { Det(-1) })
	vtMustPanic(t, "Det(NaN)", func() { Det(nan) })
	vtMustPanic(t, "Exp(Inf)", func() { Exp(inf) })
	vtMustPanic(t, "Uniform(2, 1)", func() { Uniform(2, 1) })
	vtMustPanic(t, "Uniform(-1, 1)", func() { Uniform(-1, 1) })
	vtMustPanic(t, "Erlang(0, 1)", func() { Erlang(0, 1) })
	vtMustPanic(t, "Erlang(1, -1)", func() { Erlang(1, -1) })
	vtMustPanic(t, "Gamma(1, -1)", func() { Gamma(1, -1) })
	vtMustPanic(t, "Gamma(1, 2e6)", func() { Gamma(1, 2e6) })
	vtMustPanic(t, "Gamma(NaN, 1)", func() { Gamma(nan, 1) })
	vtMustPanic(t, "Lognormal(1, NaN)", func() { Lognormal(1, nan) })
	vtMustPanic(t, "Lognormal(-1, 1)", func() { Lognormal(-1, 1) })
	if d := Gamma(2, 0); !d.Equal(Det(2)) {
		t.Errorf("Gamma(2, 0) = %v, want det", d)
	}
	if d := Lognormal(2, 0); !d.Equal(Det(2)) {
		t.Errorf("Lognormal(2, 0) = %v, want det", d)
	}
	if d := Det(math.Copysign(0, -1)); math.Signbit(d.Mean()) {
		t.Error("Det(-0) keeps the sign")
	}
	for _, c := range []struct{ mean, cv float64 }{{1, 1}, {1, 0.5}, {1, nan}, {1, inf}, {1, 2e6}, {-1, 2}, {nan, 2}, {inf, 2}} {
		_, err := Hyperexp(c.mean, c.cv)
		vtCheckErr(t, "Hyperexp", err, "hyperexp")
	}
}

func TestDistTables(t *testing.T) {
	values, weights := []float64{3, 1, 2}, []float64{1, 0, 2}
	d := vtMustEmpirical(t, values, weights)
	values[0], weights[0] = 100, 100 // the Dist must hold copies
	v, w := d.Table()
	if v[0] != 3 || w[0] != 1 || len(v) != 3 || len(w) != 3 || math.Abs(d.Mean()-7.0/3) > 1e-15 {
		t.Errorf("empirical table %v %v mean %v after changing the inputs", v, w, d.Mean())
	}
	v[1], w[1] = 50, 50 // and hand out copies
	if v2, w2 := d.Table(); v2[1] != 1 || w2[1] != 0 {
		t.Error("Table exposes the internal slices")
	}
	if _, w := vtMustEmpirical(t, []float64{1}, nil).Table(); w != nil {
		t.Errorf("equal weights come back as %v, want nil", w)
	}
	bounds, counts := []float64{0, 1, 5}, []float64{2, 6}
	h := vtMustHistogram(t, bounds, counts)
	bounds[0], counts[0] = 0.5, 9
	if b, c := h.Table(); b[0] != 0 || c[0] != 2 || len(b) != 3 || len(c) != 2 {
		t.Errorf("histogram table %v %v after changing the inputs", b, c)
	}
	if s := h.String(); s != "histogram(2 bins from 0s to 5s, mean 2.375s)" {
		t.Errorf("histogram String %q", s)
	}
	if s := d.String(); s != "empirical(3 values, mean 2.333333333333333s)" {
		t.Errorf("empirical String %q", s)
	}
	if v, w := Exp(1).Table(); v != nil || w != nil {
		t.Error("exp has a table")
	}
}

func TestDistTableErrors(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	emp := []struct {
		values, weights []float64
		want            string
	}{
		{nil, nil, "at least one value"},
		{[]float64{}, nil, "at least one value"},
		{[]float64{1, 2}, []float64{1}, "2 values but 1 weights"},
		{[]float64{1}, []float64{}, "1 values but 0 weights"},
		{[]float64{1, -2}, nil, "value 1 is -2"},
		{[]float64{nan}, nil, "value 0 is NaN"},
		{[]float64{inf}, nil, "value 0 is +Inf"},
		{[]float64{1, 2}, []float64{1, -1}, "weight 1 is -1"},
		{[]float64{1, 2}, []float64{1, nan}, "weight 1 is NaN"},
		{[]float64{1, 2}, []float64{0, 0}, "weights must have a positive sum"},
		{[]float64{1, 2}, []float64{math.MaxFloat64, math.MaxFloat64}, "sum overflows"},
	}
	for _, c := range emp {
		_, err := NewEmpirical(c.values, c.weights)
		vtCheckErr(t, "NewEmpirical", err, c.want)
	}
	hist := []struct {
		bounds, counts []float64
		want           string
	}{
		{nil, nil, "at least one bin"},
		{[]float64{1}, nil, "at least one bin"},
		{[]float64{1, 2}, []float64{1, 1}, "got 2 bounds and 2 counts"},
		{[]float64{1, 2, 3}, []float64{1}, "one more bound than counts"},
		{[]float64{2, 1}, []float64{1}, "bounds must increase: bound 1 (1s) is not above bound 0 (2s)"},
		{[]float64{1, 1}, []float64{1}, "bounds must increase"},
		{[]float64{-1, 1}, []float64{1}, "bound 0 is -1"},
		{[]float64{0, inf}, []float64{1}, "bound 1 is +Inf"},
		{[]float64{0, 1}, []float64{0}, "counts must have a positive sum"},
		{[]float64{0, 1, 2}, []float64{1, -1}, "count 1 is -1"},
	}
	for _, c := range hist {
		_, err := NewHistogram(c.bounds, c.counts)
		vtCheckErr(t, "NewHistogram", err, c.want)
	}
}

func TestDistSampleAllocs(t *testing.T) {
	for name, d := range vtCases(t) {
		r := rand.New(rand.NewPCG(1, 2))
		sink := 0.0
		if a := testing.AllocsPerRun(1000, func() { sink += d.Sample(r) }); a != 0 {
			t.Errorf("%s: Sample allocates %v times", name, a)
		}
	}
}

func TestDistKindString(t *testing.T) {
	for k, want := range map[DistKind]string{DistDet: "det", DistExp: "exp", DistHistogram: "histogram", DistKind(99): "DistKind(99)"} {
		if k.String() != want {
			t.Errorf("DistKind %d is %q, want %q", k, k.String(), want)
		}
	}
}

func FuzzParseDist(f *testing.F) {
	for _, s := range []string{"2ms", "exp(1.2ms)", "uniform(5ms, 15ms)", "erlang(3, 10ms)", "gamma(1ms, cv=0.5)", "lognormal(10ms, cv=1.5)", "hyperexp(10ms, cv=3)", "det(mean=1s)", "gamma(cv=2, mean=1h)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDist(s)
		if err != nil {
			if msg := err.Error(); strings.ContainsAny(msg, "\n") || msg == "" {
				t.Fatalf("ParseDist(%q): bad error %q", s, msg)
			}
			return
		}
		out := d.String()
		back, err := ParseDist(out)
		if err != nil {
			t.Fatalf("ParseDist(%q) = %s, which does not parse: %v", s, out, err)
		}
		if !back.Equal(d) {
			t.Fatalf("ParseDist(%q) = %s, which reads back as %s", s, out, back)
		}
		if m, v := d.Mean(), d.Var(); !(m >= 0) || math.IsInf(m, 0) || !(v >= 0) {
			t.Fatalf("ParseDist(%q) = %s has mean %v and variance %v", s, out, m, v)
		}
		r := rand.New(rand.NewPCG(1, 2))
		for i := 0; i < 10; i++ {
			if x := d.Sample(r); !(x >= 0) {
				t.Fatalf("ParseDist(%q) = %s sampled %v", s, out, x)
			}
		}
	})
}

func BenchmarkSample(b *testing.B) {
	cases := vtCases(b)
	names := make([]string, 0, len(cases))
	for name := range cases {
		names = append(names, name)
	}
	sort.Strings(names)
	// Tables of 1000 entries, to show the logarithmic search.
	values, weights := make([]float64, 1000), make([]float64, 1000)
	for i := range values {
		values[i], weights[i] = float64(i)*1e-4, float64(1+i%7)
	}
	cases["empirical-1000"] = vtMustEmpirical(b, values, weights)
	cases["histogram-1000"] = vtMustHistogram(b, append(values, 0.1), weights)
	names = append(names, "empirical-1000", "histogram-1000")
	for _, name := range names {
		d := cases[name]
		b.Run(name, func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 2))
			b.ReportAllocs()
			sink := 0.0
			for b.Loop() {
				sink += d.Sample(r)
			}
			vtSink = sink
		})
	}
	// The primitives of math/rand/v2 that the samplers build on, as a floor.
	b.Run("rand.Float64", func(b *testing.B) {
		r := rand.New(rand.NewPCG(1, 2))
		sink := 0.0
		for b.Loop() {
			sink += r.Float64()
		}
		vtSink = sink
	})
	b.Run("rand.ExpFloat64", func(b *testing.B) {
		r := rand.New(rand.NewPCG(1, 2))
		sink := 0.0
		for b.Loop() {
			sink += r.ExpFloat64()
		}
		vtSink = sink
	})
	b.Run("rand.NormFloat64", func(b *testing.B) {
		r := rand.New(rand.NewPCG(1, 2))
		sink := 0.0
		for b.Loop() {
			sink += r.NormFloat64()
		}
		vtSink = sink
	})
}

// vtSink keeps benchmark results alive.
var vtSink float64
