package extract

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/perfcast/perfcast/metrics"
)

// unattributedOp names the operation each component gets for the CPU time
// its spans miss.
const unattributedOp = "unattributed CPU"

// minUnattributed is the smallest share of a host's measured CPU time,
// outside every span, that extraction models: below it the spans are taken
// to account for the host's CPU.
const minUnattributed = 0.02

// Coverage compares, on one host, the CPU time the spans carried
// (perfcast.cpu.time) with the CPU time utilization metrics measured over
// the same windows. What the spans miss (garbage collection, span export,
// the HTTP transport's and the runtime's own goroutines, other processes)
// is CPU demand all the same: it is what makes the measured utilization
// higher than the spans' sum.
type Coverage struct {
	Host    string `json:"host"`
	Metrics string `json:"metrics,omitempty"`
	// Windows is the number of windows compared, each Window seconds long.
	Windows int     `json:"windows"`
	Window  float64 `json:"window"`
	// Measured is the busy core-seconds the metrics measured over the
	// windows; Spans the CPU seconds of the spans that ended in them; and
	// Executions the number of those spans (operation executions).
	Measured   float64 `json:"measured_cpu_seconds"`
	Spans      float64 `json:"span_cpu_seconds"`
	Executions float64 `json:"executions"`
	// Share is Spans/Measured, ShareSE its standard error from the spread
	// of the windows' ratios (a ratio estimator).
	Share   float64 `json:"share"`
	ShareSE float64 `json:"share_se"`
	// PerExecution is the CPU time outside the spans per execution,
	// (Measured − Spans)/Executions, when the spans miss a significant
	// part (more than minUnattributed, and two standard errors); else 0.
	PerExecution float64 `json:"unattributed_per_execution"`
	// Skipped says why the host was not compared.
	Skipped string `json:"skipped,omitempty"`
}

// CPUCoverage compares, per host of the windows, the spans' CPU times with
// the metrics (hosts matched as EstimateDemands matches them). Only hosts
// where every execution carried its CPU time are compared.
func CPUCoverage(w *Windows, series map[string]*metrics.Series, opts DemandOptions) []*Coverage {
	var out []*Coverage
	for _, host := range w.Hosts() {
		out = append(out, coverage(host, w.hosts[host], series, opts))
	}
	return out
}

func coverage(host string, h *hostWindows, series map[string]*metrics.Series, opts DemandOptions) *Coverage {
	c := &Coverage{Host: host}
	s := matchSeries(host, series)
	if s == nil {
		c.Skipped = "no metrics for this host"
		return c
	}
	c.Metrics = s.Source
	cores := float64(s.Cores)
	if cores == 0 {
		cores = float64(opts.Cores[host])
	}
	cw := coveredWindows(h, s, cores)
	c.Window = cw.length
	var ratios []struct{ busy, spans float64 }
	for _, win := range cw.windows {
		var n, withCPU, cpu float64
		for _, cl := range win.cells {
			n += cl.n
			withCPU += cl.cpuN
			cpu += cl.cpu
		}
		if withCPU != n {
			c.Skipped = "not every span carries its CPU time"
			return c
		}
		c.Measured += win.busy
		c.Spans += cpu
		c.Executions += n
		ratios = append(ratios, struct{ busy, spans float64 }{win.busy, cpu})
	}
	c.Windows = len(ratios)
	if c.Windows < 3 || c.Measured <= 0 || c.Spans <= 0 {
		c.Skipped = fmt.Sprintf("the metrics (%s) cover fewer than 3 windows with CPU time", s.Source)
		return c
	}
	// Ratio estimator: share = ΣS/ΣB, its variance from the residuals
	// S_t − share·B_t.
	c.Share = c.Spans / c.Measured
	n := float64(c.Windows)
	meanB := c.Measured / n
	var ss float64
	for _, r := range ratios {
		e := r.spans - c.Share*r.busy
		ss += e * e
	}
	c.ShareSE = math.Sqrt(ss/(n-1)/n) / meanB
	if missing := 1 - c.Share; missing > minUnattributed && missing > 2*c.ShareSE && c.Executions > 0 {
		c.PerExecution = (c.Measured - c.Spans) / c.Executions
	}
	return c
}

// unattributedCPU spreads, per host the metrics compared, the CPU time the
// spans missed evenly over the executions of the host's operations, as
// per-request overhead done outside the spans (the transport, span export,
// the garbage the request left): each component's share is an operation
// of its own that every execution sends to, so that it loads the CPU in
// proportion to the load without lengthening responses, which at the
// observed load already include it. The busy cores it adds count in the
// correction of off-CPU time.
func (g *generator) unattributedCPU(span float64) {
	g.unattributed = map[string]float64{}
	for _, c := range g.est.Coverage {
		if c.Skipped != "" {
			continue
		}
		if c.PerExecution <= 0 {
			g.rep.evidencef("host %s: the spans' CPU times account for %.0f %% (± %.1f %%) of the CPU time the metrics (%s) measured: nothing added",
				c.Host, 100*c.Share, 200*c.ShareSE, c.Metrics)
			continue
		}
		g.rep.evidencef("host %s: the spans' CPU times account for %.0f %% (± %.1f %%) of the CPU time the metrics (%s) measured; the rest, %.3gms per execution, is an operation %q of each component, sent to by every execution",
			c.Host, 100*c.Share, 200*c.ShareSE, c.Metrics, c.PerExecution*1e3, unattributedOp)
	}
	if len(g.est.Coverage) == 0 || span <= 0 {
		return
	}
	perExec := map[string]float64{}
	for _, c := range g.est.Coverage {
		if c.PerExecution > 0 {
			perExec[c.Host] = c.PerExecution
		}
	}
	// Per component, the executions on each compared host.
	sum, n := map[string]float64{}, map[string]float64{}
	for _, host := range g.s.Windows.Hosts() {
		h := g.s.Windows.hosts[host]
		for _, cells := range h.cells {
			for i, cl := range cells {
				comp, _, _ := strings.Cut(h.ops[i], "/")
				n[comp] += cl.n
				sum[comp] += cl.n * perExec[host]
			}
		}
	}
	for _, comp := range slices.Sorted(maps.Keys(sum)) {
		if sum[comp] <= 0 || n[comp] <= 0 {
			continue
		}
		d := sum[comp] / n[comp]
		g.unattributed[comp] = d
		if h := g.hostOf[comp]; h != nil {
			g.busy[h] += d * n[comp] / span
		}
	}
}
