package model

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func vtMustPMF(t testing.TB, values []int, probs []float64) Count {
	t.Helper()
	c, err := NewPMF(values, probs)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func vtMustCount(t testing.TB, s string) Count {
	t.Helper()
	c, err := ParseCount(s)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestParseCount(t *testing.T) {
	cases := []struct {
		in         string
		kind       CountKind
		str        string
		mean, vari float64
	}{
		{"3", CountConst, "3", 3, 0},
		{"0", CountConst, "0", 0, 0},
		{" 12 ", CountConst, "12", 12, 0},
		// Support ≥ 1, success probability q = 1/mean: variance (1−q)/q².
		{"geometric(3)", CountGeometric, "geometric(3)", 3, 6},
		{"geometric(mean=3)", CountGeometric, "geometric(3)", 3, 6},
		{"geometric(3, min=1)", CountGeometric, "geometric(3)", 3, 6},
		{"geometric(1)", CountGeometric, "geometric(1)", 1, 0},
		{"geometric(2.5)", CountGeometric, "geometric(2.5)", 2.5, 3.75},
		// Support ≥ 0, q = 1/(mean+1): variance mean·(mean+1).
		{"geometric(3, min=0)", CountGeometric, "geometric(3, min=0)", 3, 12},
		{"geometric(min=0, mean=3)", CountGeometric, "geometric(3, min=0)", 3, 12},
		{"geometric(3, 0)", CountGeometric, "geometric(3, min=0)", 3, 12},
		{"geometric(0, min=0)", CountGeometric, "geometric(0, min=0)", 0, 0},
		{"geometric(0.5, min=0)", CountGeometric, "geometric(0.5, min=0)", 0.5, 0.75},
		// Integers 2..5: mean 3.5, variance ((5−2+1)² − 1)/12.
		{"uniform(2, 5)", CountUniform, "uniform(2, 5)", 3.5, 15.0 / 12},
		{"uniform(max=5, min=2)", CountUniform, "uniform(2, 5)", 3.5, 15.0 / 12},
		{"uniform(4, 4)", CountUniform, "uniform(4, 4)", 4, 0},
		{"uniform(0, 1)", CountUniform, "uniform(0, 1)", 0.5, 0.25},
	}
	for _, c := range cases {
		got, err := ParseCount(c.in)
		if err != nil {
			t.Errorf("ParseCount(%q): %v", c.in, err)
			continue
		}
		if got.Kind != c.kind || got.String() != c.str {
			t.Errorf("ParseCount(%q) = %v %q, want %v %q", c.in, got.Kind, got.String(), c.kind, c.str)
		}
		if math.Abs(got.Mean()-c.mean) > 1e-12 || math.Abs(got.Var()-c.vari) > 1e-12 {
			t.Errorf("ParseCount(%q): mean %v var %v, want %v %v", c.in, got.Mean(), got.Var(), c.mean, c.vari)
		}
		back, err := ParseCount(got.String())
		if err != nil || !back.Equal(got) {
			t.Errorf("ParseCount(%q) = %v does not read back: %v, %v", c.in, got, back, err)
		}
	}
}

func TestParseCountErrors(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", "not a number"},
		{"-1", "negative"},
		{"2.5", "not a whole number"},
		{"three", `unknown count "three"`},
		{"geometric", `unknown count "geometric"`},
		{"1e3", "not a whole number"},
		{"poisson(3)", `unknown count distribution "poisson"`},
		{"pmf(1, 2)", "written as an object"},
		{"geometric(3", `must end with ")"`},
		{"geometric((3))", "cannot contain parentheses"},
		{"geometric()", "geometric needs a mean"},
		{"geometric(min=0)", "geometric needs a mean"},
		{"geometric(-3)", "geometric needs a mean >= 0"},
		{"geometric(x)", "geometric needs a mean >= 0"},
		{"geometric(NaN)", "geometric needs a mean >= 0"},
		{"geometric(0.5)", "geometric needs mean >= 1 (or min=0 for counts from 0)"},
		{"geometric(-1, min=0)", "geometric needs a mean >= 0"},
		{"geometric(3, min=2)", `geometric min must be 0 or 1, got "2"`},
		{"geometric(3, min=-1)", "geometric min must be 0 or 1"},
		{"geometric(3, min=0.5)", "geometric min must be 0 or 1"},
		{"geometric(3, 1, 2)", "geometric takes at most 2 parameters (mean, min)"},
		{"geometric(3, p=0.5)", `geometric has no parameter "p" (want mean, min)`},
		{"geometric(mean=3, 0)", "positional parameter \"0\" after a named one"},
		{"geometric(3, mean=4)", "mean given twice"},
		{"uniform(2)", "uniform needs max, like uniform(2, 5)"},
		{"uniform()", "uniform needs min"},
		{"uniform(5, 2)", "uniform count needs 0 <= min <= max, got min 5 and max 2"},
		{"uniform(-1, 2)", "uniform min: \"-1\" is negative"},
		{"uniform(1, 2.5)", "uniform max: \"2.5\" is not a whole number"},
		{"uniform(1ms, 2ms)", "uniform min: \"1ms\" is not a number"},
		{"uniform(0, 99999999999999999999)", "uniform max: \"99999999999999999999\" is too large"},
		{"99999999999999999999", "too large"},
	}
	for _, c := range cases {
		_, err := ParseCount(c.in)
		vtCheckErr(t, c.in, err, c.want)
	}
}

func TestNewPMF(t *testing.T) {
	c := vtMustPMF(t, []int{5, 1, 3}, []float64{0.3, 0.2, 0.5})
	values, probs := c.PMF()
	if !(len(values) == 3 && values[0] == 1 && values[1] == 3 && values[2] == 5 && probs[0] == 0.2 && probs[1] == 0.5 && probs[2] == 0.3) {
		t.Errorf("PMF() = %v %v, want sorted by value", values, probs)
	}
	// Mean 0.2·1 + 0.5·3 + 0.3·5 = 3.2; E[X²] = 0.2 + 4.5 + 7.5 = 12.2.
	if math.Abs(c.Mean()-3.2) > 1e-12 || math.Abs(c.Var()-(12.2-3.2*3.2)) > 1e-12 {
		t.Errorf("mean %v var %v, want 3.2 %v", c.Mean(), c.Var(), 12.2-3.2*3.2)
	}
	if s := c.String(); s != "pmf(1: 0.2, 3: 0.5, 5: 0.3)" {
		t.Errorf("String() = %q", s)
	}
	// The inputs are copied, and so are the outputs.
	in := []int{2, 1}
	inp := []float64{0.5, 0.5}
	d := vtMustPMF(t, in, inp)
	in[0], inp[0] = 7, 0.9
	values[0], probs[0] = 9, 0.9
	if v, p := d.PMF(); v[1] != 2 || p[1] != 0.5 {
		t.Errorf("PMF changed with its inputs: %v %v", v, p)
	}
	if v, p := c.PMF(); v[0] != 1 || p[0] != 0.2 {
		t.Errorf("PMF changed through its outputs: %v %v", v, p)
	}
	// Within the tolerance of 1e-6.
	if _, err := NewPMF([]int{0, 1}, []float64{0.5, 0.5000009}); err != nil {
		t.Errorf("sum 1 + 9e-7 rejected: %v", err)
	}
	if v, p := ConstCount(4).PMF(); len(v) != 1 || v[0] != 4 || p[0] != 1 {
		t.Errorf("ConstCount(4).PMF() = %v %v", v, p)
	}
	if v, p := vtMustCount(t, "geometric(2)").PMF(); v != nil || p != nil {
		t.Errorf("geometric PMF() = %v %v, want nil", v, p)
	}

	errs := []struct {
		values []int
		probs  []float64
		want   string
	}{
		{nil, nil, "at least one value"},
		{[]int{1, 2}, []float64{1}, "2 values but 1 probabilities"},
		{[]int{1, -2}, []float64{0.5, 0.5}, "pmf value -2 is negative"},
		{[]int{1, 1}, []float64{0.5, 0.5}, "pmf value 1 appears twice"},
		{[]int{1, 2}, []float64{0.5, 0.4}, "pmf probabilities sum to 0.9, want 1 (within 1e-6)"},
		{[]int{1, 2}, []float64{0.7, 0.7}, "sum to 1.4"},
		{[]int{1, 2}, []float64{0.5, 0.500002}, "sum to 1.000002"},
		{[]int{1, 2}, []float64{1.5, -0.5}, "probability of 2 is -0.5"},
		{[]int{1}, []float64{math.NaN()}, "probability of 1 is NaN"},
		{[]int{1}, []float64{math.Inf(1)}, "probability of 1 is +Inf"},
		{[]int{1}, []float64{0}, "sum to 0"},
	}
	for _, e := range errs {
		_, err := NewPMF(e.values, e.probs)
		vtCheckErr(t, "NewPMF", err, e.want)
	}
}

func TestCountZeroAndConst(t *testing.T) {
	var c Count
	r := rand.New(rand.NewPCG(1, 1))
	if c.Kind != CountConst || c.Mean() != 0 || c.Var() != 0 || c.Sample(r) != 0 || c.String() != "0" || !c.Equal(ConstCount(0)) {
		t.Errorf("zero Count: kind %v mean %v string %q", c.Kind, c.Mean(), c.String())
	}
	if s := ConstCount(7).Sample(r); s != 7 {
		t.Errorf("ConstCount(7) sampled %d", s)
	}
	defer func() {
		if recover() == nil {
			t.Error("ConstCount(-1) did not panic")
		}
	}()
	ConstCount(-1)
}

func TestCountEqual(t *testing.T) {
	cs := []Count{
		ConstCount(0), ConstCount(3), vtMustCount(t, "geometric(3)"), vtMustCount(t, "geometric(3, min=0)"),
		vtMustCount(t, "geometric(4)"), vtMustCount(t, "uniform(2, 5)"), vtMustCount(t, "uniform(2, 6)"),
		vtMustCount(t, "uniform(3, 5)"), vtMustPMF(t, []int{1, 2}, []float64{0.5, 0.5}),
		vtMustPMF(t, []int{1, 3}, []float64{0.5, 0.5}), vtMustPMF(t, []int{1, 2}, []float64{0.4, 0.6}),
		vtMustPMF(t, []int{1}, []float64{1}),
	}
	for i, a := range cs {
		for j, b := range cs {
			if a.Equal(b) != (i == j) {
				t.Errorf("%v.Equal(%v) = %v", a, b, a.Equal(b))
			}
		}
	}
	if !vtMustPMF(t, []int{2, 1}, []float64{0.6, 0.4}).Equal(vtMustPMF(t, []int{1, 2}, []float64{0.4, 0.6})) {
		t.Error("the same PMF given in another order compares unequal")
	}
}

// vtCountCases are count distributions of every kind, with their exact
// probabilities over 0..len-1 (the geometric tail beyond is lumped into the
// last cell by the test).
func vtCountCases(t testing.TB) map[string]Count {
	return map[string]Count{
		"const":       ConstCount(3),
		"geometric":   vtMustCount(t, "geometric(3)"),
		"geometric0":  vtMustCount(t, "geometric(2.5, min=0)"),
		"geometric1":  vtMustCount(t, "geometric(1)"),
		"uniform":     vtMustCount(t, "uniform(2, 9)"),
		"uniform-one": vtMustCount(t, "uniform(4, 4)"),
		"pmf":         vtMustPMF(t, []int{1, 3, 5, 8}, []float64{0.2, 0.5, 0, 0.3}),
	}
}

func TestCountSampling(t *testing.T) {
	const n = 200000
	const top = 2000 // the geometric tail beyond is below 1e-200 for these means
	for name, c := range vtCountCases(t) {
		t.Run(name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(41, uint64(len(name))))
			observed := make([]int, top)
			sum, sum2 := 0.0, 0.0
			for i := 0; i < n; i++ {
				x := c.Sample(r)
				if x < 0 {
					t.Fatalf("sample %d", x)
				}
				sum += float64(x)
				sum2 += float64(x) * float64(x)
				if x >= top {
					t.Fatalf("sample %d: the test assumes values below %d", x, top)
				}
				observed[x]++
			}
			mean := sum / n
			variance := (sum2 - sum*mean) / (n - 1)
			wantMean, wantVar := c.Mean(), c.Var()
			// Mean within 4 standard errors σ/√n.
			if tol := 4 * math.Sqrt(wantVar/n); math.Abs(mean-wantMean) > tol {
				t.Errorf("sample mean %v, want %v ± %v", mean, wantMean, tol)
			}
			// Variance within 5 standard errors √((μ4 − σ⁴)/n), with μ4
			// computed from the exact probabilities.
			mu4 := 0.0
			for v := 0; v < top; v++ {
				d := float64(v) - wantMean
				mu4 += c.Prob(v) * d * d * d * d
			}
			if tol := 5 * math.Sqrt((mu4-wantVar*wantVar)/n); math.Abs(variance-wantVar) > tol {
				t.Errorf("sample variance %v, want %v ± %v", variance, wantVar, tol)
			}
			if wantVar == 0 {
				// A single value: the chi-square statistic has no degrees
				// of freedom; every draw must be the value itself.
				if observed[int(wantMean)] != n {
					t.Errorf("constant count drew other values")
				}
				return
			}
			// Chi-square over cells of consecutive values, each merged
			// until its expected count is at least 5 so that the
			// chi-square approximation holds; values of probability 0
			// form cells of their own, which must stay empty.
			var cellObs []int
			var cellProb []float64
			open := false
			for v := 0; v < top; v++ {
				p := c.Prob(v)
				if p == 0 {
					cellObs, cellProb, open = append(cellObs, observed[v]), append(cellProb, 0), false
					continue
				}
				if !open {
					cellObs, cellProb, open = append(cellObs, 0), append(cellProb, 0), true
				}
				cellObs[len(cellObs)-1] += observed[v]
				cellProb[len(cellProb)-1] += p
				if cellProb[len(cellProb)-1]*n >= 5 {
					open = false
				}
			}
			// A last cell still short of 5 joins the previous open one.
			for i := len(cellProb) - 1; i > 0; i-- {
				if cellProb[i] > 0 && cellProb[i]*n < 5 {
					for j := i - 1; j >= 0; j-- {
						if cellProb[j] > 0 {
							cellProb[j] += cellProb[i]
							cellObs[j] += cellObs[i]
							cellProb[i], cellObs[i] = 0, 0
							break
						}
					}
				}
			}
			vtChi2(t, name, cellObs, cellProb, n)
		})
	}
}

func TestCountSampleExtremes(t *testing.T) {
	// The largest uniform point must not overflow the geometric inversion,
	// and an enormous mean saturates rather than wrapping around.
	hi := rand.New(vtConstSource(0)) // Float64() = 0, so U = 1 − 0 = 1
	if x := vtMustCount(t, "geometric(3)").Sample(hi); x != 1 {
		t.Errorf("geometric(3) at U = 1 drew %d, want 1", x)
	}
	huge := vtMustCount(t, "geometric(1e300)")
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 100; i++ {
		if x := huge.Sample(r); x < 1 {
			t.Fatalf("geometric(1e300) drew %d", x)
		}
	}
	wide, err := ParseCount("uniform(0, 9223372036854775807)")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		if x := wide.Sample(r); x < 0 {
			t.Fatalf("uniform over all int drew %d", x)
		}
	}
}

func TestCountSampleAllocs(t *testing.T) {
	for name, c := range vtCountCases(t) {
		r := rand.New(rand.NewPCG(1, 2))
		sink := 0
		if a := testing.AllocsPerRun(1000, func() { sink += c.Sample(r) }); a != 0 {
			t.Errorf("%s: Sample allocates %v times", name, a)
		}
	}
}

func TestCountKindString(t *testing.T) {
	for k, want := range map[CountKind]string{CountConst: "const", CountGeometric: "geometric", CountUniform: "uniform", CountPMF: "pmf", CountKind(9): "CountKind(9)"} {
		if k.String() != want {
			t.Errorf("CountKind %d is %q, want %q", k, k.String(), want)
		}
	}
}

func FuzzParseCount(f *testing.F) {
	for _, s := range []string{"3", "geometric(3)", "geometric(3, min=0)", "uniform(2, 5)", "geometric(mean=2.5, min=1)", "uniform(max=5, min=2)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseCount(s)
		if err != nil {
			if msg := err.Error(); strings.ContainsAny(msg, "\n") || msg == "" {
				t.Fatalf("ParseCount(%q): bad error %q", s, msg)
			}
			return
		}
		out := c.String()
		back, err := ParseCount(out)
		if err != nil {
			t.Fatalf("ParseCount(%q) = %s, which does not parse: %v", s, out, err)
		}
		if !back.Equal(c) {
			t.Fatalf("ParseCount(%q) = %s, which reads back as %s", s, out, back)
		}
		if m, v := c.Mean(), c.Var(); !(m >= 0) || !(v >= 0) {
			t.Fatalf("ParseCount(%q) = %s has mean %v and variance %v", s, out, m, v)
		}
		r := rand.New(rand.NewPCG(1, 2))
		for i := 0; i < 10; i++ {
			if x := c.Sample(r); x < 0 {
				t.Fatalf("ParseCount(%q) = %s sampled %d", s, out, x)
			}
		}
	})
}

func BenchmarkSampleCount(b *testing.B) {
	for name, c := range vtCountCases(b) {
		b.Run(name, func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 2))
			b.ReportAllocs()
			sink := 0
			for b.Loop() {
				sink += c.Sample(r)
			}
			vtSink = float64(sink)
		})
	}
}
