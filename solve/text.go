package solve

import (
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/perfcast/perfcast/internal/textout"
)

// WriteText writes a result as aligned text tables for people: a headline
// (stable or not, the bottleneck, saturation), warnings, then workloads,
// operations and resources. Times are shown in µs, ms or s, whichever reads
// best; utilizations in percent; confidence intervals as ± half-widths.
// Figures a solver did not compute are shown as "-".
func WriteText(w io.Writer, r *Result) error {
	tw := textout.NewWriter(w)
	name := r.Model
	if name == "" {
		name = "(unnamed)"
	}
	state := "stable"
	if !r.Stable {
		state = "UNSTABLE"
	}
	tw.Printf("model %s, solver %s: %s", name, r.Solver, state)
	if r.Bottleneck != "" {
		tw.Printf(", bottleneck %s", r.Bottleneck)
	}
	tw.Printf("\n")
	if s := r.Saturation; s != nil {
		keys := sortedTextKeys(s.At)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + " = " + textout.Rate(s.At[k])
		}
		tw.Printf("saturation: %s is fully used at %s\n", s.Resource, strings.Join(parts, ", "))
	}
	for _, h := range sortedTextKeys(r.SpeedFactors) {
		tw.Printf("speed curve: host %s runs at %s × its speed at this load\n", h, formatNumber(r.SpeedFactors[h]))
	}
	for _, msg := range r.Warnings {
		tw.Printf("warning: %s\n", msg)
	}

	if len(r.Workloads) > 0 {
		tw.Printf("\n")
		t := tw.Table()
		t.Row("WORKLOAD", "THROUGHPUT", "MEAN", "P50", "P90", "P95", "P99", "COMPLETION", "DROPPED")
		for _, k := range sortedTextKeys(r.Workloads) {
			x := r.Workloads[k]
			completion := "-"
			if x.CompletionTime != nil {
				completion = formatTime(x.CompletionTime.Mean, x.CompletionTime.CI95)
			}
			dropped := "-"
			if x.Dropped > 0 {
				dropped = textout.Rate(x.Dropped)
			}
			t.Row(append(append([]string{k, formatRateCI(x.Throughput, x.ThroughputCI95)},
				timeColumns(&x.ResponseTime)...), completion, dropped)...)
		}
		t.Flush()
	}

	if len(r.Operations) > 0 {
		tw.Printf("\n")
		t := tw.Table()
		// SPAN: the mean time the operation's span covers, where waits
		// before it make that shorter than the response time.
		spans := false
		for _, x := range r.Operations {
			spans = spans || x.Span != nil
		}
		head := []string{"OPERATION", "THROUGHPUT", "MEAN", "P50", "P90", "P95", "P99"}
		if spans {
			head = append(head, "SPAN")
		}
		t.Row(head...)
		for _, k := range sortedTextKeys(r.Operations) {
			x := r.Operations[k]
			row := append([]string{k, textout.Rate(x.Throughput)}, timeColumns(&x.ResponseTime)...)
			if spans {
				span := "-"
				if x.Span != nil {
					span = formatTime(x.Span.Mean, x.Span.CI95)
				}
				row = append(row, span)
			}
			t.Row(row...)
		}
		t.Flush()
	}

	if len(r.Resources) > 0 {
		tw.Printf("\n")
		t := tw.Table()
		t.Row("RESOURCE", "UTILIZATION", "BUSY", "WAIT", "PER REPLICA")
		for _, k := range sortedTextKeys(r.Resources) {
			x := r.Resources[k]
			util := formatPercent(x.Utilization)
			if ci := x.UtilizationCI95; ci != nil {
				util += " ±" + formatPercent((ci[1]-ci[0])/2)
			}
			if l := x.LimitUtilization; l != nil {
				util += ", " + formatPercent(*l) + " of its limit"
				if th := x.Throttled; th != nil {
					util += ", throttled in " + formatPercent(*th) + " of periods"
				}
			}
			wait := "-"
			if x.Wait != nil {
				wait = formatTime(x.Wait.Mean, x.Wait.CI95)
			}
			per := make([]string, len(x.PerReplica))
			for i, u := range x.PerReplica {
				per[i] = formatPercent(u)
			}
			perText := "-"
			if len(per) > 0 {
				perText = strings.Join(per, " ")
			}
			t.Row(k, util, formatNumber(x.Busy), wait, perText)
		}
		t.Flush()
	}

	if s := r.Sim; s != nil && s.Replications > 0 {
		tw.Printf("\nsimulation: seed %d, %d replications, %d requests after a warm-up of %s per replication, %d events, %s simulated, %s wall\n",
			s.Seed, s.Replications, s.Requests, formatNumber(s.WarmupCut), s.Events,
			textout.Duration(s.SimTime), textout.Duration(s.WallSeconds))
	}
	if m := r.MVA; m != nil {
		tw.Printf("\nanalysis: %s", m.Method)
		if m.Iterations > 0 {
			tw.Printf(", %d iterations", m.Iterations)
		}
		if m.Converged {
			tw.Printf(", converged")
		} else {
			tw.Printf(", not converged")
		}
		if m.Residual > 0 {
			tw.Printf(", residual %.3g", m.Residual)
		}
		tw.Printf("\n")
	}
	return tw.Err()
}

func sortedTextKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// timeColumns renders the mean (with its interval) and the percentiles.
func timeColumns(t *Times) []string {
	if t.Mean == 0 && t.CI95 == nil && t.P50 == nil {
		// No request was served: there is no time to give.
		return []string{"-", "-", "-", "-", "-"}
	}
	p := func(v *float64) string {
		if v == nil {
			return "-"
		}
		return textout.Duration(*v)
	}
	return []string{formatTime(t.Mean, t.CI95), p(t.P50), p(t.P90), p(t.P95), p(t.P99)}
}

// formatTime renders a mean time and, when known, its interval as ± the
// half-width in the mean's unit.
func formatTime(mean float64, ci *[2]float64) string {
	s, unit, scale := textout.DurationParts(mean)
	if ci == nil {
		return s + " " + unit
	}
	return s + " " + unit + " ±" + textout.Sig3((ci[1]-ci[0])/2*scale)
}

// formatNumber writes a plain quantity with three significant digits.
func formatNumber(v float64) string { return textout.Sig3(v) }

func formatRateCI(v float64, ci *[2]float64) string {
	if ci == nil {
		return textout.Rate(v)
	}
	return textout.Rate(v) + " ±" + textout.Sig3((ci[1]-ci[0])/2)
}

// formatPercent writes a fraction as a percentage with one decimal (more
// for tiny values).
func formatPercent(f float64) string {
	p := f * 100
	if p != 0 && math.Abs(p) < 0.1 {
		return strconv.FormatFloat(p, 'g', 2, 64) + " %"
	}
	return strconv.FormatFloat(p, 'f', 1, 64) + " %"
}
