package sim

import (
	"context"
	"math"
	"sort"
	"testing"

	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve"
)

// Tolerances. The simulator reports 95 % Student-t confidence intervals over
// its replication means (10 replications, t = 2.26). Three half-widths are
// about 6.8 standard errors: a correct simulator lands farther from the
// theory with probability below 1e-4, while any modelling error larger than
// a few tenths of a percent (the runs below have relative half-widths near
// 1 %) shows up. numFloor absorbs floating-point rounding where the theory
// is met exactly (deterministic models).
const (
	ciFactor = 3
	numFloor = 1e-9
)

// requests scales the run length: the default run checks the theory with
// tight intervals; -short keeps it quick.
func requests(n int64) int64 {
	if testing.Short() {
		return n / 4
	}
	return n
}

func parse(t *testing.T, src string) *model.Model {
	t.Helper()
	m, err := model.Parse([]byte(src), t.Name()+".yaml")
	if err != nil {
		t.Fatalf("model does not load: %v\n%s", err, src)
	}
	return m
}

// run solves a model given as YAML with a fixed seed and number of requests
// and insists on a stable result.
func run(t *testing.T, src string, n int64) *solve.Result {
	t.Helper()
	return runModel(t, parse(t, src), solve.Options{Seed: 7, Requests: requests(n)})
}

func runModel(t *testing.T, m *model.Model, opts solve.Options) *solve.Result {
	t.Helper()
	r, err := New().Solve(context.Background(), m, opts)
	if err != nil {
		t.Fatalf("solve: %v", err)
	}
	if !r.Stable {
		t.Fatalf("unexpectedly unstable: bottleneck %s, warnings %v", r.Bottleneck, r.Warnings)
	}
	return r
}

// halfWidth is the half-width of an interval (NaN when absent).
func halfWidth(ci *[2]float64) float64 {
	if ci == nil {
		return math.NaN()
	}
	return (ci[1] - ci[0]) / 2
}

// within checks |got − want| ≤ max(ciFactor·hw, floor). A missing interval
// fails: every simulated mean must come with one.
func within(t *testing.T, what string, got float64, ci *[2]float64, want, floor float64) {
	t.Helper()
	hw := halfWidth(ci)
	if math.IsNaN(hw) {
		t.Errorf("%s: no confidence interval", what)
		return
	}
	tol := math.Max(ciFactor*hw, floor)
	if d := math.Abs(got - want); !(d <= tol) {
		t.Errorf("%s = %.6g ± %.3g, theory %.6g: off by %.3g (%.1f half-widths), tolerance %.3g",
			what, got, hw, want, d, d/hw, tol)
	} else {
		t.Logf("%s = %.6g ± %.3g, theory %.6g (%.2f half-widths)", what, got, hw, want, d/hw)
	}
}

// withinRel checks a figure that has no interval of its own against a
// relative tolerance, explained at the call.
func withinRel(t *testing.T, what string, got, want, rel float64) {
	t.Helper()
	if d := math.Abs(got - want); !(d <= rel*math.Abs(want)) {
		t.Errorf("%s = %.6g, theory %.6g: off by %.2f %%, tolerance %.2f %%", what, got, want, 100*d/math.Abs(want), 100*rel)
	} else {
		t.Logf("%s = %.6g, theory %.6g (%.2f %%)", what, got, want, 100*d/math.Abs(want))
	}
}

// percentileTolerance is the relative tolerance of a percentile of a
// response time whose mean has relative half-width relHW. For an
// exponential sojourn time (M/M/1) the standard error of the sample
// p-quantile relative to its value is √(p/((1−p)n)) / ln(1/(1−p)), 1.45
// times the mean's relative standard error 1/√n at p = 0.95 and 1.0 at
// p = 0.5; correlation inflates both alike. Five half-widths of the mean
// cover three such standard errors of the p95, to which the sketch's 0.5 %
// relative accuracy is added.
func percentileTolerance(relHW float64) float64 {
	return sketchAccuracy + 5*relHW
}

func wl(t *testing.T, r *solve.Result, name string) *solve.WorkloadResult {
	t.Helper()
	w, ok := r.Workloads[name]
	if !ok {
		t.Fatalf("no workload %q in result", name)
	}
	return w
}

func res(t *testing.T, r *solve.Result, name string) *solve.ResourceResult {
	t.Helper()
	x, ok := r.Resources[name]
	if !ok {
		t.Fatalf("no resource %q in result (have %v)", name, sortedNames(r.Resources))
	}
	return x
}

func op(t *testing.T, r *solve.Result, name string) *solve.OperationResult {
	t.Helper()
	x, ok := r.Operations[name]
	if !ok {
		t.Fatalf("no operation %q in result (have %v)", name, sortedNames(r.Operations))
	}
	return x
}

// erlangC is the probability that an arrival waits in an M/M/c queue with
// offered load a = λ/μ < c.
func erlangC(c int, a float64) float64 {
	term, sum := 1.0, 0.0 // a^k/k!
	for k := 0; k < c; k++ {
		sum += term
		term *= a / float64(k+1)
	}
	last := term * float64(c) / (float64(c) - a)
	return last / (sum + last)
}

// mmcResponse is the mean sojourn time of M/M/c with arrival rate lambda and
// mean service s.
func mmcResponse(c int, lambda, s float64) float64 {
	a := lambda * s
	return s + erlangC(c, a)*s/(float64(c)-a)
}

// sortedNames lists a map's keys in order, for messages.
func sortedNames[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
