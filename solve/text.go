package solve

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
)

// WriteText writes a result as aligned text tables for people: a headline
// (stable or not, the bottleneck, saturation), warnings, then workloads,
// operations and resources. Times are shown in µs, ms or s, whichever reads
// best; utilizations in percent; confidence intervals as ± half-widths.
// Figures a solver did not compute are shown as "-".
func WriteText(w io.Writer, r *Result) error {
	tw := &textWriter{w: w}
	name := r.Model
	if name == "" {
		name = "(unnamed)"
	}
	state := "stable"
	if !r.Stable {
		state = "UNSTABLE"
	}
	tw.printf("model %s, solver %s: %s", name, r.Solver, state)
	if r.Bottleneck != "" {
		tw.printf(", bottleneck %s", r.Bottleneck)
	}
	tw.printf("\n")
	if s := r.Saturation; s != nil {
		keys := sortedTextKeys(s.At)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + " = " + formatRate(s.At[k])
		}
		tw.printf("saturation: %s is fully used at %s\n", s.Resource, strings.Join(parts, ", "))
	}
	for _, msg := range r.Warnings {
		tw.printf("warning: %s\n", msg)
	}

	if len(r.Workloads) > 0 {
		tw.printf("\n")
		t := tw.table()
		t.row("WORKLOAD", "THROUGHPUT", "MEAN", "P50", "P90", "P95", "P99", "COMPLETION", "DROPPED")
		for _, k := range sortedTextKeys(r.Workloads) {
			x := r.Workloads[k]
			completion := "-"
			if x.CompletionTime != nil {
				completion = formatTime(x.CompletionTime.Mean, x.CompletionTime.CI95)
			}
			dropped := "-"
			if x.Dropped > 0 {
				dropped = formatRate(x.Dropped)
			}
			t.row(append(append([]string{k, formatRateCI(x.Throughput, x.ThroughputCI95)},
				timeColumns(&x.ResponseTime)...), completion, dropped)...)
		}
		t.flush()
	}

	if len(r.Operations) > 0 {
		tw.printf("\n")
		t := tw.table()
		t.row("OPERATION", "THROUGHPUT", "MEAN", "P50", "P90", "P95", "P99")
		for _, k := range sortedTextKeys(r.Operations) {
			x := r.Operations[k]
			t.row(append([]string{k, formatRate(x.Throughput)}, timeColumns(&x.ResponseTime)...)...)
		}
		t.flush()
	}

	if len(r.Resources) > 0 {
		tw.printf("\n")
		t := tw.table()
		t.row("RESOURCE", "UTILIZATION", "BUSY", "WAIT", "PER REPLICA")
		for _, k := range sortedTextKeys(r.Resources) {
			x := r.Resources[k]
			util := formatPercent(x.Utilization)
			if ci := x.UtilizationCI95; ci != nil {
				util += " ±" + formatPercent((ci[1]-ci[0])/2)
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
			t.row(k, util, formatNumber(x.Busy), wait, perText)
		}
		t.flush()
	}

	if s := r.Sim; s != nil {
		tw.printf("\nsimulation: seed %d, %d replications, %d requests after a warm-up of %s per replication, %d events, %s simulated, %s wall\n",
			s.Seed, s.Replications, s.Requests, formatNumber(s.WarmupCut), s.Events,
			formatDuration(s.SimTime), formatDuration(s.WallSeconds))
	}
	if m := r.MVA; m != nil {
		tw.printf("\nanalysis: %s", m.Method)
		if m.Iterations > 0 {
			tw.printf(", %d iterations", m.Iterations)
		}
		if m.Converged {
			tw.printf(", converged")
		} else {
			tw.printf(", not converged")
		}
		if m.Residual > 0 {
			tw.printf(", residual %.3g", m.Residual)
		}
		tw.printf("\n")
	}
	return tw.err
}

// textWriter remembers the first write error.
type textWriter struct {
	w   io.Writer
	err error
}

func (tw *textWriter) printf(format string, args ...any) {
	if tw.err == nil {
		_, tw.err = fmt.Fprintf(tw.w, format, args...)
	}
}

// textTable is one aligned table.
type textTable struct {
	tw  *textWriter
	tab *tabwriter.Writer
}

func (tw *textWriter) table() *textTable {
	return &textTable{tw: tw, tab: tabwriter.NewWriter(tw.w, 0, 0, 2, ' ', 0)}
}

func (t *textTable) row(cells ...string) {
	if t.tw.err == nil {
		_, t.tw.err = io.WriteString(t.tab, strings.Join(cells, "\t")+"\n")
	}
}

func (t *textTable) flush() {
	if t.tw.err == nil {
		t.tw.err = t.tab.Flush()
	}
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
	p := func(v *float64) string {
		if v == nil {
			return "-"
		}
		return formatDuration(*v)
	}
	return []string{formatTime(t.Mean, t.CI95), p(t.P50), p(t.P90), p(t.P95), p(t.P99)}
}

// formatTime renders a mean time and, when known, its interval as ± the
// half-width in the mean's unit.
func formatTime(mean float64, ci *[2]float64) string {
	s, unit, scale := durationParts(mean)
	if ci == nil {
		return s + " " + unit
	}
	return s + " " + unit + " ±" + sig3((ci[1]-ci[0])/2*scale)
}

// formatDuration renders seconds in µs, ms, s, or minutes and hours for
// long spans.
func formatDuration(sec float64) string {
	s, unit, _ := durationParts(sec)
	return s + " " + unit
}

// durationParts chooses a unit for a time in seconds and returns the number
// in that unit, the unit, and the factor from seconds to it.
func durationParts(sec float64) (string, string, float64) {
	a := math.Abs(sec)
	switch {
	case sec == 0 || math.IsNaN(sec) || math.IsInf(sec, 0):
		return sig3(sec), "s", 1
	case a < 1e-3:
		return sig3(sec * 1e6), "µs", 1e6
	case a < 1:
		return sig3(sec * 1e3), "ms", 1e3
	case a < 600:
		return sig3(sec), "s", 1
	case a < 36000:
		return sig3(sec / 60), "min", 1.0 / 60
	}
	return sig3(sec / 3600), "h", 1.0 / 3600
}

// sig3 writes a number with three significant digits, without exponent for
// ordinary magnitudes.
func sig3(v float64) string {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	a := math.Abs(v)
	if a >= 1e6 || a < 1e-3 {
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	digits := 2 - int(math.Floor(math.Log10(a)))
	if digits < 0 {
		digits = 0
	}
	return strconv.FormatFloat(v, 'f', digits, 64)
}

// formatNumber writes a plain quantity with three significant digits.
func formatNumber(v float64) string { return sig3(v) }

func formatRate(v float64) string { return sig3(v) + "/s" }

func formatRateCI(v float64, ci *[2]float64) string {
	if ci == nil {
		return formatRate(v)
	}
	return formatRate(v) + " ±" + sig3((ci[1]-ci[0])/2)
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
