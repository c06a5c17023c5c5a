// Package validate compares a model's predictions with what traces measured,
// and calibrates a model on them.
//
// Validation predicts the workload the traces saw: each model workload is
// matched with the traces' requests by its entry operation (the first call
// of its steps), open workloads get the measured arrival rate, closed ones
// keep their users. The prediction is compared with the measurement key by
// key, as relative errors (predicted − measured) / measured whose paths
// mirror those of the result (errors.workloads.NAME.response_time.mean), with
// the statistical noise of each error, and summarized as the response-time,
// throughput and CPU-utilization prediction errors (RTPE, TPE, CPUPE) of
// Brunnert et al.
//
// Calibration fits two corrections in the manner of Brosig et al.: a factor
// on the CPU demands of each host whose CPU utilization was measured (the
// instrumentation overhead of the run the demands came from), and a fixed
// delay at the entry of each workload whose measured mean response time
// exceeds the prediction by more than the noise (time spent before the
// requests reach the instrumented code).
package validate

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/perfcast/perfcast/extract"
	"github.com/perfcast/perfcast/metrics"
	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve"
)

// SolveFunc solves a model; the caller decides the solver and its options.
// Every call should use the same seed, so that validations repeat exactly.
type SolveFunc func(ctx context.Context, m *model.Model) (*solve.Result, error)

// Report is the outcome of one validation. Its JSON form is the result of
// `perfcast validate --json`: measured and predicted results, the relative
// errors and their noise, the summary, and the warnings of the matching.
type Report struct {
	// Measured is what the traces measured, in the form of a result
	// (solver "measured"), with 95 % confidence intervals of the means.
	Measured *solve.Result `json:"measured"`
	// Predicted is the model's prediction at the measured workload.
	Predicted *solve.Result `json:"predicted"`
	// Errors are the relative errors (predicted − measured) / measured.
	Errors *Errors `json:"errors"`
	// Noise holds, at the same paths, the 95 % half-width of each error
	// that random variation alone would explain: an error larger than its
	// noise is a difference between the model and the measured system.
	Noise *Errors `json:"noise"`
	// Summary gives the prediction errors of Brunnert et al.
	Summary *Summary `json:"summary"`
	// Warnings say which workloads and traces did not match, and what
	// the comparison had to assume.
	Warnings []string `json:"warnings"`
	// Traces is the number of traces compared.
	Traces int64 `json:"traces"`
	// Model is the model as solved: the validated model set to the
	// measured workload.
	Model *model.Model `json:"-"`
}

// Options are the optional inputs of a validation.
type Options struct {
	// Metrics, when set, give the measured CPU utilization of the hosts
	// whose machines they cover, in place of the spans' CPU times.
	Metrics *metrics.Set
}

// Validate predicts, with solveFn, the workload measured in the state st on
// model m and compares the prediction with the measurement. m is not
// changed.
func Validate(ctx context.Context, m *model.Model, st *extract.State, solveFn SolveFunc) (*Report, error) {
	return ValidateWith(ctx, m, st, solveFn, Options{})
}

// ValidateWith is Validate with options.
func ValidateWith(ctx context.Context, m *model.Model, st *extract.State, solveFn SolveFunc, opts Options) (*Report, error) {
	setup, err := SetupWith(m, st, opts)
	if err != nil {
		return nil, err
	}
	pred, err := solveFn(ctx, setup.Model)
	if err != nil {
		return nil, err
	}
	if n := spanTimes(pred); n > 0 {
		setup.Warnings = append(setup.Warnings, fmt.Sprintf("%d operations compared by the time their spans cover: without the waits before a span starts (for a thread of the component, and for a resource marked before_span, such as a CPU slot), which their predicted response times include", n))
	}
	errs, noise := Compare(setup.Measured, pred)
	return &Report{
		Measured:  setup.Measured,
		Predicted: pred,
		Errors:    errs,
		Noise:     noise,
		Summary:   Summarize(setup.Model, setup.Measured, pred, errs),
		Warnings:  setup.Warnings,
		Traces:    st.Traces,
		Model:     setup.Model,
	}, nil
}

// Errors holds relative errors, (predicted − measured) / measured, at paths
// that mirror those of a result: Workloads["browse"].ResponseTime.Mean is
// the error of workloads.browse.response_time.mean. A key is absent when
// either side lacks the figure or the measured value is zero.
// ResponseTime.IQR compares the interquartile ranges (p75 − p25), which
// results carry in extra.response_time_quartiles.
type Errors struct {
	Workloads  map[string]*FlowErrors     `json:"workloads"`
	Operations map[string]*FlowErrors     `json:"operations"`
	Resources  map[string]*ResourceErrors `json:"resources"`
}

// FlowErrors are the errors of a workload or an operation.
type FlowErrors struct {
	Throughput   *float64     `json:"throughput,omitempty"`
	ResponseTime *TimesErrors `json:"response_time,omitempty"`
}

// TimesErrors are the errors of a response time's mean, percentiles and
// interquartile range.
type TimesErrors struct {
	Mean *float64 `json:"mean,omitempty"`
	P50  *float64 `json:"p50,omitempty"`
	P90  *float64 `json:"p90,omitempty"`
	P95  *float64 `json:"p95,omitempty"`
	P99  *float64 `json:"p99,omitempty"`
	IQR  *float64 `json:"iqr,omitempty"`
}

// ResourceErrors is the error of a resource's utilization and, for a CPU
// with a limit whose throttling the metrics count, of the share of
// periods throttled: predicted minus measured, in fraction points (not
// relative: the measured share may be zero).
type ResourceErrors struct {
	Utilization *float64 `json:"utilization,omitempty"`
	Throttled   *float64 `json:"throttled,omitempty"`
}

func newErrors() *Errors {
	return &Errors{
		Workloads:  map[string]*FlowErrors{},
		Operations: map[string]*FlowErrors{},
		Resources:  map[string]*ResourceErrors{},
	}
}

// QuartilesKey is the key in a result's Extra under which validation keeps
// the response-time quartiles (a *Quartiles), from which the IQR is
// computed.
const QuartilesKey = "response_time_quartiles"

// Quartiles are the first and third quartiles of response times, per
// workload and per operation, in seconds.
type Quartiles struct {
	Workloads  map[string][2]float64 `json:"workloads"`
	Operations map[string][2]float64 `json:"operations"`
}

// quartilesOf returns the quartiles kept in a result, or nil.
func quartilesOf(r *solve.Result) *Quartiles {
	if r == nil || r.Extra == nil {
		return nil
	}
	q, _ := r.Extra[QuartilesKey].(*Quartiles)
	return q
}

// relErr is (p − m) / m, or nil when it is undefined.
func relErr(p, m float64) *float64 {
	if m == 0 || math.IsNaN(p) || math.IsNaN(m) || math.IsInf(p, 0) || math.IsInf(m, 0) {
		return nil
	}
	e := (p - m) / m
	return &e
}

func relErrPtr(p, m *float64) *float64 {
	if p == nil || m == nil {
		return nil
	}
	return relErr(*p, *m)
}

// halfWidth is the half-width of a confidence interval, or NaN.
func halfWidth(ci *[2]float64) float64 {
	if ci == nil {
		return math.NaN()
	}
	return (ci[1] - ci[0]) / 2
}

// relNoise is the 95 % half-width of (p − m) / m given the 95 % half-widths
// of p and m (NaN when unknown: an exact figure, as an analytical solver's,
// passes 0), by the first-order propagation of independent errors.
func relNoise(p, hp, m, hm float64) *float64 {
	if m == 0 || math.IsNaN(hm) {
		return nil
	}
	if math.IsNaN(hp) {
		hp = 0
	}
	r := p / m
	v := math.Abs(r) * math.Sqrt(sq(hm/m)+sqOrZero(hp, p))
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

func sq(x float64) float64 { return x * x }

func sqOrZero(h, v float64) float64 {
	if v == 0 {
		return 0
	}
	return sq(h / v)
}

// predictedHalfWidth is the half-width of a predicted figure: its interval
// when the solver gave one, else 0 for an analytical solver (exact for the
// model) and NaN for a simulation without one.
func predictedHalfWidth(r *solve.Result, ci *[2]float64) float64 {
	if ci != nil {
		return halfWidth(ci)
	}
	if r.Sim != nil {
		return math.NaN()
	}
	return 0
}

// Compare computes the relative errors of predicted against measured at
// every key both have, and their noise.
func Compare(measured, predicted *solve.Result) (errs, noise *Errors) {
	errs, noise = newErrors(), newErrors()
	mq, pq := quartilesOf(measured), quartilesOf(predicted)
	iqr := func(get func(q *Quartiles) ([2]float64, bool)) *float64 {
		if mq == nil || pq == nil {
			return nil
		}
		m, ok1 := get(mq)
		p, ok2 := get(pq)
		if !ok1 || !ok2 {
			return nil
		}
		return relErr(p[1]-p[0], m[1]-m[0])
	}
	for name, mw := range measured.Workloads {
		pw := predicted.Workloads[name]
		if pw == nil {
			continue
		}
		e := &FlowErrors{Throughput: relErr(pw.Throughput, mw.Throughput)}
		e.ResponseTime = timesErrors(&pw.ResponseTime, &mw.ResponseTime)
		e.ResponseTime.IQR = iqr(func(q *Quartiles) ([2]float64, bool) { v, ok := q.Workloads[name]; return v, ok })
		errs.Workloads[name] = e
		noise.Workloads[name] = &FlowErrors{
			Throughput: relNoise(pw.Throughput, predictedHalfWidth(predicted, pw.ThroughputCI95), mw.Throughput, halfWidth(mw.ThroughputCI95)),
			ResponseTime: &TimesErrors{Mean: relNoise(pw.ResponseTime.Mean, predictedHalfWidth(predicted, pw.ResponseTime.CI95),
				mw.ResponseTime.Mean, halfWidth(mw.ResponseTime.CI95))},
		}
	}
	// A simulation gives operation throughputs without intervals: they
	// vary with the workloads' throughputs, so take the largest relative
	// half-width of those.
	opRateNoise := 0.0
	if predicted.Sim != nil {
		for _, pw := range predicted.Workloads {
			if pw.Throughput > 0 && pw.ThroughputCI95 != nil {
				opRateNoise = math.Max(opRateNoise, halfWidth(pw.ThroughputCI95)/pw.Throughput)
			}
		}
	}
	for id, mo := range measured.Operations {
		po := predicted.Operations[id]
		if po == nil {
			continue
		}
		e := &FlowErrors{Throughput: relErr(po.Throughput, mo.Throughput)}
		e.ResponseTime = timesErrors(&po.ResponseTime, &mo.ResponseTime)
		e.ResponseTime.IQR = iqr(func(q *Quartiles) ([2]float64, bool) { v, ok := q.Operations[id]; return v, ok })
		errs.Operations[id] = e
		noise.Operations[id] = &FlowErrors{
			Throughput: relNoise(po.Throughput, po.Throughput*opRateNoise, mo.Throughput, operationRateHalfWidth(id, mo.Throughput, measured)),
			ResponseTime: &TimesErrors{Mean: relNoise(po.ResponseTime.Mean, predictedHalfWidth(predicted, po.ResponseTime.CI95),
				mo.ResponseTime.Mean, halfWidth(mo.ResponseTime.CI95))},
		}
	}
	for name, mr := range measured.Resources {
		pr := predicted.Resources[name]
		if pr == nil {
			continue
		}
		errs.Resources[name] = &ResourceErrors{Utilization: relErr(pr.Utilization, mr.Utilization)}
		if mr.Throttled != nil && pr.Throttled != nil {
			d := *pr.Throttled - *mr.Throttled
			errs.Resources[name].Throttled = &d
		}
		noise.Resources[name] = &ResourceErrors{Utilization: relNoise(pr.Utilization,
			predictedHalfWidth(predicted, pr.UtilizationCI95), mr.Utilization, halfWidth(mr.UtilizationCI95))}
	}
	return errs, noise
}

// measuredRateHalfWidth is the 95 % half-width of a measured rate x, a
// Poisson count over the measured duration.
func measuredRateHalfWidth(x float64, measured *solve.Result) float64 {
	d, ok := measured.Extra[DurationKey].(float64)
	if !ok || d <= 0 || x <= 0 {
		return math.NaN()
	}
	return z95 * math.Sqrt(x/d)
}

// operationRateHalfWidth is the 95 % half-width of an operation's measured
// rate x: the measurement's own (RateNoiseKey) or, without it, a Poisson
// count's.
func operationRateHalfWidth(id string, x float64, measured *solve.Result) float64 {
	if hw, ok := measured.Extra[RateNoiseKey].(map[string]float64); ok {
		if h, ok := hw[id]; ok {
			return h
		}
	}
	return measuredRateHalfWidth(x, measured)
}

func timesErrors(p, m *solve.Times) *TimesErrors {
	return &TimesErrors{
		Mean: relErr(p.Mean, m.Mean),
		P50:  relErrPtr(p.P50, m.P50),
		P90:  relErrPtr(p.P90, m.P90),
		P95:  relErrPtr(p.P95, m.P95),
		P99:  relErrPtr(p.P99, m.P99),
	}
}

// Summary holds the prediction errors of Brunnert et al.: per workload the
// absolute relative errors of the mean response time (RTPE), the
// throughput (TPE), the median response time and the interquartile range,
// and of the CPU utilization (CPUPE) of the host its entry operation runs
// on; per host the CPUPE; and over workloads (RTPE, TPE) and hosts (CPUPE)
// their mean, median and maximum.
type Summary struct {
	Workloads map[string]*WorkloadSummary `json:"workloads"`
	Hosts     map[string]*HostSummary     `json:"hosts"`
	RTPE      *Aggregate                  `json:"rtpe,omitempty"`
	TPE       *Aggregate                  `json:"tpe,omitempty"`
	CPUPE     *Aggregate                  `json:"cpupe,omitempty"`
}

// WorkloadSummary gives one workload's absolute relative errors; a figure
// is absent when it could not be compared.
type WorkloadSummary struct {
	RTPE *float64 `json:"rtpe,omitempty"`
	TPE  *float64 `json:"tpe,omitempty"`
	// MedianPE and IQRPE are the errors of the median response time and of
	// the interquartile range.
	MedianPE *float64 `json:"median_pe,omitempty"`
	IQRPE    *float64 `json:"iqr_pe,omitempty"`
	// Host is the host of the workload's entry operation, whose CPUPE is
	// given.
	Host  string   `json:"host,omitempty"`
	CPUPE *float64 `json:"cpupe,omitempty"`
}

// HostSummary compares the measured and predicted CPU utilization of a host.
type HostSummary struct {
	Measured  float64  `json:"measured"`
	Predicted float64  `json:"predicted"`
	CPUPE     *float64 `json:"cpupe,omitempty"`
}

// Aggregate summarizes absolute errors over workloads or hosts.
type Aggregate struct {
	N      int     `json:"n"`
	Mean   float64 `json:"mean"`
	Median float64 `json:"median"`
	Max    float64 `json:"max"`
}

func abs(p *float64) *float64 {
	if p == nil {
		return nil
	}
	v := math.Abs(*p)
	return &v
}

// Summarize computes the summary of errs; m is the model solved.
func Summarize(m *model.Model, measured, predicted *solve.Result, errs *Errors) *Summary {
	s := &Summary{Workloads: map[string]*WorkloadSummary{}, Hosts: map[string]*HostSummary{}}
	var cpupes []float64
	for _, h := range m.Hosts {
		res := model.CPUResource(h.Name)
		mr, pr := measured.Resources[res], predicted.Resources[res]
		if mr == nil || pr == nil {
			continue
		}
		hs := &HostSummary{Measured: mr.Utilization, Predicted: pr.Utilization}
		if e := errs.Resources[res]; e != nil {
			hs.CPUPE = abs(e.Utilization)
		}
		if hs.CPUPE != nil {
			cpupes = append(cpupes, *hs.CPUPE)
		}
		s.Hosts[h.Name] = hs
	}
	var rtpes, tpes []float64
	for _, name := range slices.Sorted(maps.Keys(errs.Workloads)) {
		e := errs.Workloads[name]
		ws := &WorkloadSummary{TPE: abs(e.Throughput)}
		if rt := e.ResponseTime; rt != nil {
			ws.RTPE, ws.MedianPE, ws.IQRPE = abs(rt.Mean), abs(rt.P50), abs(rt.IQR)
		}
		if w := m.Workload(name); w != nil {
			if c := m.Component(componentOf(EntryOf(w))); c != nil {
				ws.Host = c.Host
				if hs := s.Hosts[c.Host]; hs != nil {
					ws.CPUPE = hs.CPUPE
				}
			}
		}
		if ws.RTPE != nil {
			rtpes = append(rtpes, *ws.RTPE)
		}
		if ws.TPE != nil {
			tpes = append(tpes, *ws.TPE)
		}
		s.Workloads[name] = ws
	}
	s.RTPE, s.TPE, s.CPUPE = aggregate(rtpes), aggregate(tpes), aggregate(cpupes)
	return s
}

func componentOf(ref string) string {
	c, _, _ := strings.Cut(ref, "/")
	return c
}

func aggregate(v []float64) *Aggregate {
	if len(v) == 0 {
		return nil
	}
	s := slices.Clone(v)
	slices.Sort(s)
	var sum float64
	for _, x := range s {
		sum += x
	}
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return &Aggregate{N: len(s), Mean: sum / float64(len(s)), Median: med, Max: s[len(s)-1]}
}

// errorf wraps an error of validation with the model's file.
func errorf(m *model.Model, format string, args ...any) error {
	where := m.File
	if where == "" {
		where = "model"
		if m.Name != "" {
			where = "model " + m.Name
		}
	}
	return fmt.Errorf("%s: %s", where, fmt.Sprintf(format, args...))
}

// spanTimes puts, in res, each operation's span time in place of its
// response time (see solve.OperationResult.Span), since traces measure
// spans, and returns how many it changed.
func spanTimes(res *solve.Result) int {
	n := 0
	for _, or := range res.Operations {
		if or.Span != nil {
			or.ResponseTime, or.Span = *or.Span, nil
			n++
		}
	}
	return n
}
