package estimate

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
)

// Options tunes Choose.
type Options struct {
	// Folds is the number of cross-validation folds; 0 means 5.
	Folds int
	// Estimators are the estimators to run, in order of preference
	// (the first of those that fit about equally well is picked); nil means
	// All().
	Estimators []Estimator
}

// All returns every estimator, in the order of preference Choose uses:
// the regression estimators first (they assume least), then the Service
// Demand Law (one operation only), apportioning by own time, and the
// low-load own time.
func All() []Estimator {
	return []Estimator{Regression{}, Kalman{}, SDL{}, Apportion{}, ResponseTime{}}
}

// tieTolerance is how much worse (relatively) than the best a fit's
// cross-validated error may be and still count as equally good.
const tieTolerance = 0.02

// Score is one estimator's fit on all windows and its errors.
type Score struct {
	Method string `json:"method"`
	// Fit is the estimator's fit on all windows (nil when it does not
	// apply).
	Fit *Fit `json:"fit,omitempty"`
	// CVError is the cross-validated error: over every window, the
	// absolute difference between the busy time predicted by the fit on
	// the other folds and the measured one, summed, divided by the total
	// measured busy time.
	CVError float64 `json:"cv_error"`
	// FitError is the same error for the fit on all windows, in-sample.
	FitError float64 `json:"fit_error"`
	// Bias is the total predicted busy time over the total measured, minus
	// one: how far the fit misses the mean utilization.
	Bias float64 `json:"bias"`
	// Skipped says why the estimator was not run, or failed.
	Skipped string `json:"skipped,omitempty"`
}

// Choice is the outcome of Choose.
type Choice struct {
	// Picked names the chosen estimator; Fit is its fit on all windows.
	Picked string `json:"picked"`
	Fit    *Fit   `json:"-"`
	// Why explains the choice in one sentence.
	Why string `json:"why"`
	// Scores holds every estimator's result, in order of preference.
	Scores    []Score   `json:"scores"`
	Diagnosis Diagnosis `json:"diagnosis"`
}

// Choose runs the estimators on the problem, scores each by k-fold
// cross-validation (window i in fold i mod k: deterministic, and each fold
// spans the whole time range) and picks, among the fits that are
// identified, the first in order of preference whose cross-validated error
// is within 2 % of the smallest.
func Choose(p *Problem, opts Options) (*Choice, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if len(p.Windows) == 0 {
		return nil, errors.New("no windows to estimate from")
	}
	ests := opts.Estimators
	if ests == nil {
		ests = All()
	}
	folds := opts.Folds
	if folds <= 0 {
		folds = 5
	}
	folds = min(folds, len(p.Windows))
	c := &Choice{Diagnosis: Diagnose(p)}
	for _, e := range ests {
		c.Scores = append(c.Scores, score(p, e, folds))
	}
	best := math.Inf(1)
	for _, s := range c.Scores {
		if s.Fit != nil && s.Fit.Identified && s.CVError < best {
			best = s.CVError
		}
	}
	if math.IsInf(best, 1) {
		// No finite cross-validated error (a single window): the first
		// identified fit in order of preference.
		for _, s := range c.Scores {
			if s.Fit != nil && s.Fit.Identified {
				c.Picked, c.Fit = s.Method, s.Fit
				c.Why = s.Method + ": too few windows to cross-validate; first applicable estimator in order of preference"
				return c, nil
			}
		}
		return nil, errors.New("no estimator could fit the windows")
	}
	var passed []string
	for _, s := range c.Scores {
		if s.Fit == nil || !s.Fit.Identified || !(s.CVError <= best*(1+tieTolerance)+1e-9) {
			if s.Fit != nil && !s.Fit.Identified && s.Fit.Note != "" {
				passed = append(passed, s.Method+" ("+s.Fit.Note+")")
			}
			continue
		}
		c.Picked, c.Fit = s.Method, s.Fit
		why := fmt.Sprintf("%s: cross-validated error %.2f %%", s.Method, 100*s.CVError)
		if s.CVError > best {
			why += fmt.Sprintf(", within %.0f %% of the best (%.2f %%), preferred for assuming less", 100*tieTolerance, 100*best)
		} else if next := runnerUp(c.Scores, s.Method); next != "" {
			why += ", the smallest; " + next
		} else {
			why += ", the smallest"
		}
		if len(passed) > 0 {
			why += "; not identified: " + strings.Join(passed, ", ")
		}
		c.Why = why
		return c, nil
	}
	return nil, errors.New("no estimator could fit the windows")
}

// runnerUp describes the second-best identified fit.
func runnerUp(scores []Score, picked string) string {
	var rest []Score
	for _, s := range scores {
		if s.Method != picked && s.Fit != nil && s.Fit.Identified && !math.IsNaN(s.CVError) {
			rest = append(rest, s)
		}
	}
	if len(rest) == 0 {
		return ""
	}
	sort.SliceStable(rest, func(i, j int) bool { return rest[i].CVError < rest[j].CVError })
	return fmt.Sprintf("next %s %.2f %%", rest[0].Method, 100*rest[0].CVError)
}

// score fits e on all windows and cross-validates it.
func score(p *Problem, e Estimator, folds int) Score {
	s := Score{Method: e.Name(), CVError: math.NaN(), FitError: math.NaN(), Bias: math.NaN()}
	fit, err := e.Estimate(p, nil)
	if err != nil {
		s.Skipped = err.Error()
		if errors.Is(err, ErrNotApplicable) && e.Name() == "sdl" {
			s.Skipped = "applies to one operation only"
		}
		return s
	}
	s.Fit = fit
	var measured, predicted, absErr float64
	for i := range p.Windows {
		w := &p.Windows[i]
		pr := fit.Predict(w)
		measured += w.Busy
		predicted += pr
		absErr += math.Abs(pr - w.Busy)
	}
	if measured > 0 {
		s.FitError = absErr / measured
		s.Bias = predicted/measured - 1
	}
	if folds < 2 || measured == 0 {
		return s
	}
	var cvErr float64
	for f := 0; f < folds; f++ {
		var train []int
		for i := range p.Windows {
			if i%folds != f {
				train = append(train, i)
			}
		}
		tf, err := e.Estimate(p, train)
		if err != nil {
			return s
		}
		for i := f; i < len(p.Windows); i += folds {
			w := &p.Windows[i]
			cvErr += math.Abs(tf.Predict(w) - w.Busy)
		}
	}
	s.CVError = cvErr / measured
	return s
}

// Flag kinds Diagnose reports.
const (
	FlagTooFewWindows      = "too_few_windows"
	FlagCollinear          = "collinear"
	FlagConstantThroughput = "constant_throughput"
	FlagLowUtilization     = "low_utilization"
	FlagSaturated          = "saturated"
	FlagUnknownCores       = "unknown_cores"
)

// Utilization thresholds of Diagnose.
const (
	LowUtilization       = 0.05
	SaturatedUtilization = 0.95
	// CollinearCondition is the condition number above which Diagnose
	// reports the throughputs as collinear (Belsley, Kuh and Welsch's
	// threshold for strong dependence).
	CollinearCondition = 30
	// collinearCorrelation is the correlation of two operations'
	// throughputs above which the pair is named.
	collinearCorrelation = 0.95
	// constantCV is the coefficient of variation of an operation's
	// throughput under which it cannot be told from the background.
	constantCV = 0.05
)

// Flag is one reason to doubt the estimates.
type Flag struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

// Diagnosis describes how well the windows can identify demands.
type Diagnosis struct {
	Windows int `json:"windows"`
	Ops     int `json:"operations"`
	// Busy is the mean busy cores; Utilization its mean, minimum and
	// maximum over windows as a fraction of the cores (NaN when the cores
	// are unknown).
	Busy        float64    `json:"busy"`
	Utilization [3]float64 `json:"utilization"`
	// Condition is the condition number of the column-scaled design
	// (throughputs and a constant).
	Condition float64 `json:"condition"`
	Flags     []Flag  `json:"flags"`
}

// Diagnose checks whether the windows can identify per-operation demands:
// enough windows for the unknowns, throughputs that vary independently of
// each other and of a constant, and a utilization neither too low to
// rise above the noise nor so high that the throughputs are capped and the
// response times are mostly queueing.
func Diagnose(p *Problem) Diagnosis {
	k := len(p.Ops)
	d := Diagnosis{Windows: len(p.Windows), Ops: k, Flags: []Flag{}, Utilization: [3]float64{math.NaN(), math.NaN(), math.NaN()}}
	add := func(kind, format string, args ...any) {
		d.Flags = append(d.Flags, Flag{Kind: kind, Message: fmt.Sprintf(format, args...)})
	}
	ws := selected(p, nil)
	if len(ws) == 0 {
		add(FlagTooFewWindows, "no windows")
		return d
	}
	length, busy, count, _ := totals(ws, k)
	d.Busy = busy / length
	if need := MinWindows(k); len(ws) < need {
		add(FlagTooFewWindows, "%d windows for %d operations and the background: at least %d needed for a regression", len(ws), k, need)
	}
	if p.Cores > 0 {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, w := range ws {
			u := w.Busy / w.Length / p.Cores
			lo, hi = math.Min(lo, u), math.Max(hi, u)
		}
		mean := d.Busy / p.Cores
		d.Utilization = [3]float64{mean, lo, hi}
		if mean < LowUtilization {
			add(FlagLowUtilization, "mean utilization %.1f %% < %.0f %%: the operations' load barely rises above the noise and the background", 100*mean, 100*LowUtilization)
		}
		if mean > SaturatedUtilization {
			add(FlagSaturated, "mean utilization %.1f %% > %.0f %%: throughputs are capped by the CPU and own times are mostly queueing", 100*mean, 100*SaturatedUtilization)
		}
	} else {
		add(FlagUnknownCores, "cores unknown: utilization not checked")
	}
	a, _ := design(ws, k)
	sc, _ := scaleColumns(a)
	d.Condition = conditionNumber(sc)
	// Throughputs per window, for correlations.
	x := make([][]float64, k)
	for j := 0; j < k; j++ {
		x[j] = make([]float64, len(ws))
		for i, w := range ws {
			x[j][i] = w.Count[j] / w.Length
		}
	}
	var pairs, constant []string
	for j := 0; j < k; j++ {
		if count[j] == 0 {
			continue
		}
		if m, sd := meanSD(x[j]); sd < constantCV*m {
			constant = append(constant, p.Ops[j])
		}
		for l := j + 1; l < k; l++ {
			if count[l] == 0 {
				continue
			}
			if r := correlation(x[j], x[l]); math.Abs(r) > collinearCorrelation {
				pairs = append(pairs, fmt.Sprintf("%s ~ %s (r = %.3f)", p.Ops[j], p.Ops[l], r))
			}
		}
	}
	if len(constant) > 0 {
		add(FlagConstantThroughput, "throughput nearly constant (cv < %.2f), not separable from the background: %s", constantCV, strings.Join(constant, ", "))
	}
	if !(d.Condition <= CollinearCondition) || len(pairs) > 0 {
		msg := fmt.Sprintf("throughputs collinear: condition number %.3g > %d", d.Condition, CollinearCondition)
		if d.Condition <= CollinearCondition {
			msg = fmt.Sprintf("throughputs collinear (condition number %.3g)", d.Condition)
		}
		if len(pairs) > 0 {
			msg += "; correlated: " + strings.Join(pairs, ", ")
		}
		add(FlagCollinear, "%s", msg)
	}
	return d
}

func meanSD(v []float64) (float64, float64) {
	var s, sq float64
	for _, x := range v {
		s += x
	}
	m := s / float64(len(v))
	for _, x := range v {
		sq += (x - m) * (x - m)
	}
	if len(v) < 2 {
		return m, 0
	}
	return m, math.Sqrt(sq / float64(len(v)-1))
}

func correlation(a, b []float64) float64 {
	ma, sa := meanSD(a)
	mb, sb := meanSD(b)
	if sa == 0 || sb == 0 {
		return 0
	}
	var c float64
	for i := range a {
		c += (a[i] - ma) * (b[i] - mb)
	}
	return c / float64(len(a)-1) / (sa * sb)
}
