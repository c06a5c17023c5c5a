package validate

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"

	"github.com/perfcast/perfcast/internal/textout"
	"github.com/perfcast/perfcast/solve"
)

// WriteText writes a report for people: a headline, the warnings, one
// table of measured and predicted figures with their relative errors and
// noise per workload, operation and measured resource, and the summary of
// prediction errors. Times are shown in µs, ms or s; errors and
// utilizations in percent; figures that were not compared as "-". An error
// larger than its noise is marked with "*".
func WriteText(w io.Writer, rep *Report) error {
	tw := textout.NewWriter(w)
	name := rep.Predicted.Model
	if name == "" {
		name = "(unnamed)"
	}
	dur, _ := rep.Measured.Extra[DurationKey].(float64)
	tw.Printf("validation of model %s on %d traces over %s, solver %s", name, rep.Traces, textout.Duration(dur), rep.Predicted.Solver)
	if !rep.Predicted.Stable {
		tw.Printf(": prediction UNSTABLE, bottleneck %s", rep.Predicted.Bottleneck)
	}
	tw.Printf("\n")
	for _, msg := range rep.Warnings {
		tw.Printf("warning: %s\n", msg)
	}
	for _, msg := range rep.Measured.Warnings {
		tw.Printf("warning: measured: %s\n", msg)
	}
	for _, msg := range rep.Predicted.Warnings {
		tw.Printf("warning: predicted: %s\n", msg)
	}
	if tw.Err() != nil {
		return tw.Err()
	}
	if err := WriteErrorTable(w, rep); err != nil {
		return err
	}
	return writeSummary(w, rep)
}

// WriteErrorTable writes the table of measured and predicted figures and
// their errors, preceded by an empty line.
func WriteErrorTable(w io.Writer, rep *Report) error {
	tw := textout.NewWriter(w)
	mq, pq := quartilesOf(rep.Measured), quartilesOf(rep.Predicted)
	tw.Printf("\n")
	t := tw.Table()
	t.Row("", "", "MEASURED", "PREDICTED", "ERROR", "NOISE")
	flows := func(kind string, names []string, meas func(string) (*solve.Times, float64), pred func(string) (*solve.Times, float64),
		errs, noise map[string]*FlowErrors, quart func(q *Quartiles, name string) ([2]float64, bool)) {
		for _, n := range names {
			mt, mx := meas(n)
			pt, px := pred(n)
			if mt == nil || pt == nil {
				continue
			}
			e, ns := errs[n], noise[n]
			if e == nil {
				e = &FlowErrors{}
			}
			if ns == nil {
				ns = &FlowErrors{}
			}
			et, nt := orEmpty(e.ResponseTime), orEmpty(ns.ResponseTime)
			label := kind + " " + n
			t.Row(label, "throughput", textout.Rate(mx), textout.Rate(px), formatErr(e.Throughput, ns.Throughput), formatNoise(ns.Throughput))
			t.Row("", "mean", textout.Duration(mt.Mean), textout.Duration(pt.Mean), formatErr(et.Mean, nt.Mean), formatNoise(nt.Mean))
			for _, p := range []struct {
				name string
				m, p *float64
				err  *float64
			}{
				{"p50", mt.P50, pt.P50, et.P50},
				{"p90", mt.P90, pt.P90, et.P90},
				{"p95", mt.P95, pt.P95, et.P95},
				{"p99", mt.P99, pt.P99, et.P99},
			} {
				if p.m == nil && p.p == nil {
					continue
				}
				t.Row("", p.name, formatOptDuration(p.m), formatOptDuration(p.p), formatErr(p.err, nil), "-")
			}
			var mi, pi *float64
			if mq != nil {
				if v, ok := quart(mq, n); ok {
					mi = ptr(v[1] - v[0])
				}
			}
			if pq != nil {
				if v, ok := quart(pq, n); ok {
					pi = ptr(v[1] - v[0])
				}
			}
			if mi != nil || pi != nil {
				t.Row("", "iqr", formatOptDuration(mi), formatOptDuration(pi), formatErr(et.IQR, nil), "-")
			}
		}
	}
	m, p := rep.Measured, rep.Predicted
	flows("workload", slices.Sorted(maps.Keys(rep.Errors.Workloads)),
		func(n string) (*solve.Times, float64) { return flowOf(m.Workloads[n]) },
		func(n string) (*solve.Times, float64) { return flowOf(p.Workloads[n]) },
		rep.Errors.Workloads, rep.Noise.Workloads,
		func(q *Quartiles, n string) ([2]float64, bool) { v, ok := q.Workloads[n]; return v, ok })
	flows("operation", slices.Sorted(maps.Keys(rep.Errors.Operations)),
		func(n string) (*solve.Times, float64) { return opFlowOf(m.Operations[n]) },
		func(n string) (*solve.Times, float64) { return opFlowOf(p.Operations[n]) },
		rep.Errors.Operations, rep.Noise.Operations,
		func(q *Quartiles, n string) ([2]float64, bool) { v, ok := q.Operations[n]; return v, ok })
	for _, n := range slices.Sorted(maps.Keys(rep.Errors.Resources)) {
		e, ns := rep.Errors.Resources[n], rep.Noise.Resources[n]
		if ns == nil {
			ns = &ResourceErrors{}
		}
		t.Row("resource "+n, "utilization", formatPercent(m.Resources[n].Utilization), formatPercent(p.Resources[n].Utilization),
			formatErr(e.Utilization, ns.Utilization), formatNoise(ns.Utilization))
		if e.Throttled != nil {
			t.Row("", "throttled periods", formatPercent(*m.Resources[n].Throttled), formatPercent(*p.Resources[n].Throttled),
				fmt.Sprintf("%+.1f points", 100**e.Throttled), "-")
		}
	}
	t.Flush()
	return tw.Err()
}

// writeSummary writes the prediction errors of Brunnert et al.
func writeSummary(w io.Writer, rep *Report) error {
	tw := textout.NewWriter(w)
	s := rep.Summary
	if s == nil {
		return nil
	}
	tw.Printf("\nprediction errors (absolute, relative to the measurement)\n")
	t := tw.Table()
	t.Row("WORKLOAD", "RTPE", "TPE", "MEDIAN", "IQR", "CPUPE", "HOST")
	for _, n := range slices.Sorted(maps.Keys(s.Workloads)) {
		ws := s.Workloads[n]
		host := ws.Host
		if host == "" {
			host = "-"
		}
		t.Row(n, formatAbs(ws.RTPE), formatAbs(ws.TPE), formatAbs(ws.MedianPE), formatAbs(ws.IQRPE), formatAbs(ws.CPUPE), host)
	}
	t.Flush()
	if len(s.Hosts) > 0 {
		tw.Printf("\n")
		t := tw.Table()
		t.Row("HOST", "MEASURED CPU", "PREDICTED CPU", "CPUPE")
		for _, n := range slices.Sorted(maps.Keys(s.Hosts)) {
			h := s.Hosts[n]
			t.Row(n, formatPercent(h.Measured), formatPercent(h.Predicted), formatAbs(h.CPUPE))
		}
		t.Flush()
	}
	tw.Printf("\n")
	t = tw.Table()
	t.Row("", "N", "MEAN", "MEDIAN", "MAX")
	for _, a := range []struct {
		name string
		agg  *Aggregate
	}{{"RTPE (workloads)", s.RTPE}, {"TPE (workloads)", s.TPE}, {"CPUPE (hosts)", s.CPUPE}} {
		if a.agg == nil {
			t.Row(a.name, "0", "-", "-", "-")
			continue
		}
		t.Row(a.name, strconv.Itoa(a.agg.N), formatPercent(a.agg.Mean), formatPercent(a.agg.Median), formatPercent(a.agg.Max))
	}
	t.Flush()
	return tw.Err()
}

// WriteCalibration writes what calibration changed.
func WriteCalibration(w io.Writer, cal *Calibration, out string) error {
	tw := textout.NewWriter(w)
	tw.Printf("\ncalibration written to %s:\n", out)
	if len(cal.CPU) == 0 && len(cal.Delay) == 0 {
		tw.Printf("  nothing changed\n")
	}
	for _, h := range sortedKeys(cal.CPU) {
		cf := cal.CPU[h]
		tw.Printf("  host %s: CPU demands ×%.3g (utilization measured %s, predicted %s)\n", h, cf.Factor, formatPercent(cf.Measured), formatPercent(cf.Predicted))
	}
	for _, n := range sortedKeys(cal.Delay) {
		ed := cal.Delay[n]
		tw.Printf("  workload %s: delay %s before its first call (mean response time measured %s, predicted %s)\n",
			n, textout.Duration(ed.Seconds), textout.Duration(ed.Measured), textout.Duration(ed.Predicted))
	}
	for _, note := range cal.Notes {
		tw.Printf("  note: %s\n", note)
	}
	return tw.Err()
}

func flowOf(x *solve.WorkloadResult) (*solve.Times, float64) {
	if x == nil {
		return nil, 0
	}
	return &x.ResponseTime, x.Throughput
}

func opFlowOf(x *solve.OperationResult) (*solve.Times, float64) {
	if x == nil {
		return nil, 0
	}
	return &x.ResponseTime, x.Throughput
}

func orEmpty(t *TimesErrors) *TimesErrors {
	if t == nil {
		return &TimesErrors{}
	}
	return t
}

func ptr(v float64) *float64 { return &v }

func formatOptDuration(v *float64) string {
	if v == nil {
		return "-"
	}
	return textout.Duration(*v)
}

// formatPercent writes a fraction as a percentage with three significant
// digits.
func formatPercent(f float64) string { return textout.Sig3(100*f) + " %" }

// formatErr writes a signed relative error in percent, marked "*" when it
// exceeds its noise.
func formatErr(e, noise *float64) string {
	if e == nil {
		return "-"
	}
	s := textout.Sig3(100 * *e)
	if *e >= 0 {
		s = "+" + s
	}
	s += " %"
	if noise != nil && math.Abs(*e) > *noise {
		s += " *"
	}
	return s
}

func formatNoise(n *float64) string {
	if n == nil {
		return "-"
	}
	return "±" + textout.Sig3(100**n) + " %"
}

func formatAbs(e *float64) string {
	if e == nil {
		return "-"
	}
	return formatPercent(*e)
}
