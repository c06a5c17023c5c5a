package whatif

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/perfcast/perfcast/internal/textout"
	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve"
)

// SLO is one service-level objective: a statistic of a workload, an
// operation or a resource that must stay below a bound.
type SLO struct {
	// Stat is mean, p50, p90, p95, p99 or util.
	Stat string
	// Target is a workload name, `component/operation`, or for util a
	// resource name.
	Target string
	// Bound is in seconds, or a fraction for util.
	Bound float64
	Text  string
}

var sloRE = regexp.MustCompile(`^\s*(mean|p50|p90|p95|p99|util)\((.+)\)\s*<\s*(\S+)\s*$`)

// ParseSLO reads `mean(X) < D`, `p50|p90|p95|p99(X) < D` or
// `util(RESOURCE) < F`.
func ParseSLO(s string) (SLO, error) {
	m := sloRE.FindStringSubmatch(s)
	if m == nil {
		return SLO{}, fmt.Errorf("--slo %q: want mean(X) < D, p95(X) < D or util(RESOURCE) < F", s)
	}
	slo := SLO{Stat: m[1], Target: strings.TrimSpace(m[2]), Text: strings.TrimSpace(s)}
	var err error
	if slo.Stat == "util" {
		slo.Bound, err = strconv.ParseFloat(strings.TrimSuffix(m[3], "%"), 64)
		if strings.HasSuffix(m[3], "%") {
			slo.Bound /= 100
		}
		if err != nil || !(slo.Bound > 0) {
			return SLO{}, fmt.Errorf("--slo %q: the bound must be a positive fraction", s)
		}
	} else if slo.Bound, err = model.ParseDuration(m[3]); err != nil {
		return SLO{}, fmt.Errorf("--slo %q: %w", s, err)
	}
	return slo, nil
}

// Format writes a value of the SLO's statistic for people: a time, a
// utilization in percent, or "unbounded" (+Inf, an unstable model).
func (s SLO) Format(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "unbounded (the model is unstable)"
	case s.Stat == "util":
		return textout.Sig3(100*v) + " %"
	}
	return textout.Duration(v)
}

// checkTarget checks that the SLO's target exists in m: a resource for util,
// else a workload or an operation (`component/operation`). The error
// lists what does.
func (s SLO) checkTarget(m *model.Model) error {
	if s.Stat == "util" {
		names := solve.Resources(m)
		if !slices.Contains(names, s.Target) {
			return fmt.Errorf("slo %s: no resource %q (resources: %s)", s.Text, s.Target, textout.Abbreviate(names, 12))
		}
		return nil
	}
	if m.Workload(s.Target) != nil || (strings.Contains(s.Target, "/") && m.Operation(s.Target) != nil) {
		return nil
	}
	var names []string
	for _, w := range m.Workloads {
		names = append(names, w.Name)
	}
	for _, c := range m.Components {
		for _, o := range c.Operations {
			names = append(names, c.Name+"/"+o.Name)
		}
	}
	return fmt.Errorf("slo %s: no workload or operation %q (%s)", s.Text, s.Target, textout.Abbreviate(names, 12))
}

// NeedsPercentiles reports whether the SLO needs a simulation.
func (s SLO) NeedsPercentiles() bool { return s.Stat != "mean" && s.Stat != "util" }

// Check evaluates the SLO on a result: the value, whether it holds, and an
// error when the result lacks the statistic or the target does not exist.
func (s SLO) Check(r *solve.Result) (value float64, ok bool, err error) {
	if !r.Stable {
		return math.Inf(1), false, nil
	}
	if s.Stat == "util" {
		res := r.Resources[s.Target]
		if res == nil {
			return 0, false, fmt.Errorf("slo %s: no resource %q in the result", s.Text, s.Target)
		}
		return res.Utilization, res.Utilization < s.Bound, nil
	}
	var t *solve.Times
	if w := r.Workloads[s.Target]; w != nil {
		t = &w.ResponseTime
	} else if o := r.Operations[s.Target]; o != nil {
		t = &o.ResponseTime
	} else {
		return 0, false, fmt.Errorf("slo %s: no workload or operation %q", s.Text, s.Target)
	}
	var v *float64
	switch s.Stat {
	case "mean":
		v = &t.Mean
	case "p50":
		v = t.P50
	case "p90":
		v = t.P90
	case "p95":
		v = t.P95
	case "p99":
		v = t.P99
	}
	if v == nil {
		return 0, false, fmt.Errorf("slo %s: the %s solver gives no %s", s.Text, r.Solver, s.Stat)
	}
	return *v, *v < s.Bound, nil
}

// LoadKey reports whether a key is a load (capacity finds its largest value)
// rather than a resource (capacity finds its smallest).
func LoadKey(key string) bool {
	return strings.HasSuffix(key, ".open.rate") || strings.HasSuffix(key, ".closed.users") || strings.HasSuffix(key, ".load")
}

// Capacity is the answer of a capacity search.
type Capacity struct {
	// Value is the largest load or the smallest resource keeping every
	// SLO; Found is false when no value of the range does, and Value is
	// then the end of the range where the SLOs are easiest to keep.
	Value float64
	Found bool
	// Binding is the SLO closest to breaking at Value (when Found is
	// false, the one furthest from holding there), and BindingValue its
	// statistic there: seconds, a utilization, or +Inf when the model is
	// unstable.
	Binding      SLO
	BindingValue float64
	// Result is the solution at Value.
	Result *solve.Result
	// Evaluations counts the models solved.
	Evaluations int
}

// Significant digits of a search over a continuous key: the values tried
// are rounded to them, and the search stops when the next one would repeat
// an end of the bracket. Simulated results carry noise of about a percent
// (the default precision, 2 %, on a mean), so a finer answer than a
// thousandth of the value would be noise: four digits for them, seven for
// analytical ones.
const (
	exactDigits     = 7
	simulatedDigits = 4
)

// roundDigits rounds x to n significant digits.
func roundDigits(x float64, n int) float64 {
	if x == 0 || math.IsInf(x, 0) || math.IsNaN(x) {
		return x
	}
	e := math.Pow(10, float64(n-1)-math.Floor(math.Log10(math.Abs(x))))
	return math.Round(x*e) / e
}

// FindCapacity searches vary's range for the largest load (LoadKey) or the
// smallest resource that keeps every SLO, by bisection, assuming the SLOs
// hold on one side of a single threshold (more load or fewer resources never
// helps). Integer keys are searched over whole numbers.
func FindCapacity(ctx context.Context, base *model.Model, vary Vary, slos []SLO, solveFn SolveFunc) (*Capacity, error) {
	if len(vary.Values) == 0 {
		return nil, fmt.Errorf("capacity: empty range for %s", vary.Key)
	}
	for _, s := range slos {
		if err := s.checkTarget(base); err != nil {
			return nil, err
		}
	}
	lo, hi := vary.Values[0], vary.Values[len(vary.Values)-1]
	integer := IntegerKey(vary.Key)
	digits := exactDigits
	c := &Capacity{}
	// point is one solved value of the key.
	type point struct {
		ok      bool
		binding SLO
		value   float64
		r       *solve.Result
	}
	eval := func(x float64) (point, error) {
		if err := ctx.Err(); err != nil {
			return point{}, err
		}
		c.Evaluations++
		m, err := Apply(base, map[string]float64{vary.Key: x}, []string{vary.Key})
		if err != nil {
			return point{}, err
		}
		r, err := solveFn(ctx, m)
		if err != nil {
			return point{}, err
		}
		if r.Sim != nil {
			digits = simulatedDigits
		}
		p := point{ok: true, r: r}
		worst := math.Inf(-1)
		for _, s := range slos {
			v, ok, err := s.Check(r)
			if err != nil {
				return point{}, err
			}
			p.ok = p.ok && ok
			if ratio := v / s.Bound; ratio > worst || p.binding.Text == "" {
				worst, p.binding, p.value = ratio, s, v
			}
		}
		return p, nil
	}
	take := func(x float64, p point) {
		c.Value, c.Binding, c.BindingValue, c.Result = x, p.binding, p.value, p.r
	}
	load := LoadKey(vary.Key)
	// good is the end of the range where the SLOs are easiest to keep.
	good, bad := lo, hi
	if !load {
		good, bad = hi, lo
	}
	p, err := eval(good)
	if err != nil {
		return nil, err
	}
	take(good, p)
	if !p.ok {
		return c, nil
	}
	c.Found = true
	if p, err = eval(bad); err != nil {
		return nil, err
	} else if p.ok {
		take(bad, p)
		return c, nil
	}
	for {
		if integer && math.Abs(bad-good) <= 1 {
			break
		}
		mid := (good + bad) / 2
		if integer {
			mid = math.Floor(mid)
			if !load {
				mid = math.Ceil((good + bad) / 2)
			}
		} else if mid = roundDigits(mid, digits); mid <= min(good, bad) || mid >= max(good, bad) {
			break
		}
		p, err := eval(mid)
		if err != nil {
			return nil, err
		}
		if p.ok {
			good = mid
			take(mid, p)
		} else {
			bad = mid
		}
	}
	return c, nil
}
