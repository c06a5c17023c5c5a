package extract

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/perfcast/perfcast/internal/textout"
	"github.com/perfcast/perfcast/metrics"
	"github.com/perfcast/perfcast/model"
)

// minUnattributed is the smallest share of a host's measured CPU time,
// outside every span, that extraction models: below it the spans are taken
// to account for the host's CPU.
const minUnattributed = 0.02

// Coverage compares, on one host or for one component's processes there,
// the CPU time the spans carried (perfcast.cpu.time) with the CPU time
// utilization metrics measured over the same windows. What the spans miss (garbage collection, span export,
// the HTTP transport's and the runtime's own goroutines, other processes)
// is CPU demand all the same: it is what makes the measured utilization
// higher than the spans' sum.
type Coverage struct {
	Host string `json:"host"`
	// Component is the component whose processes the metrics measured,
	// "" when they measured the whole host.
	Component string `json:"component,omitempty"`
	Metrics   string `json:"metrics,omitempty"`
	// Windows is the number of windows compared, each Window seconds long.
	Windows int     `json:"windows"`
	Window  float64 `json:"window"`
	// Measured is the busy core-seconds the metrics measured over the
	// windows; Spans the CPU seconds of the spans that ended in them; and
	// Executions the number of those spans (operation executions).
	Measured   float64 `json:"measured_cpu_seconds"`
	Spans      float64 `json:"span_cpu_seconds"`
	Executions float64 `json:"executions"`
	// Share is the part of the measured CPU time the spans account for,
	// Spans/Measured, and ShareSE its standard error from the spread of
	// the windows (a ratio estimator).
	Share   float64 `json:"share"`
	ShareSE float64 `json:"share_se"`
	// PerExecution is the CPU time outside the spans per execution,
	// (Measured − Spans)/Executions, when the spans miss a significant
	// part (more than minUnattributed, and two standard errors); else 0.
	PerExecution float64 `json:"unattributed_per_execution"`
	// Skipped says why the host or component was not compared.
	Skipped string `json:"skipped,omitempty"`
}

// CPUCoverage compares, per host of the windows, the spans' CPU times with
// the metrics, in the scopes EstimateDemands estimates in: per component
// against its service's processes where the metrics measure them, else the
// host as a whole. Only hosts and components where every execution carried
// its CPU time are compared; the others are returned with Skipped set.
func CPUCoverage(w *Windows, set *metrics.Set, component func(service string) string, opts DemandOptions) []*Coverage {
	var out []*Coverage
	for _, host := range w.Hosts() {
		for _, sc := range scopes(host, w.hosts[host], set, component) {
			if sc.s == nil {
				out = append(out, &Coverage{Host: host, Component: sc.component, Skipped: sc.skipped})
				continue
			}
			c := coverage(host, sc.h, sc.s, opts)
			c.Component = sc.component
			out = append(out, c)
		}
	}
	return out
}

// coverage compares the metrics s with the spans of the operations of h
// on host.
func coverage(host string, h *hostWindows, s *metrics.Series, opts DemandOptions) *Coverage {
	c := &Coverage{Host: host}
	c.Metrics = s.Source
	cw := coveredWindows(h, s, seriesCores(s, float64(opts.Cores[host])))
	c.Window = cw.length
	var ratios []windowCPU
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
		ratios = append(ratios, windowCPU{busy: win.busy, spans: cpu})
	}
	c.Windows = len(ratios)
	if c.Windows < 3 || c.Measured <= 0 || c.Spans <= 0 {
		c.Skipped = fmt.Sprintf("the metrics (%s) cover fewer than 3 windows with CPU time", s.Source)
		return c
	}
	// Ratio estimator: share = ΣS/ΣB, its variance from the residuals
	// S_t − share·B_t. A constant background (timers, idle work, other
	// processes) is not told apart: at one load level the intercept of a
	// regression of B on S is an extrapolation, which on the testbed moved
	// between 0.007 and 0.026 cores from run to run; it is spread over the
	// executions with the rest.
	n := float64(c.Windows)
	meanB, meanS, meanN := c.Measured/n, c.Spans/n, c.Executions/n
	c.Share = meanS / meanB
	var ss float64
	for _, r := range ratios {
		e := r.spans - c.Share*r.busy
		ss += e * e
	}
	c.ShareSE = math.Sqrt(ss/(n-1)/n) / meanB
	if missing := 1 - c.Share; missing > minUnattributed && missing > 2*c.ShareSE && c.Executions > 0 {
		c.PerExecution = (meanB - meanS) / meanN
	}
	return c
}

// seriesCores is the number of cores that converts s's utilization
// fractions into busy cores: the series' own, else the host's (given).
func seriesCores(s *metrics.Series, host float64) float64 {
	if s.Cores > 0 {
		return float64(s.Cores)
	}
	return host
}

// windowCPU is one window's busy core-seconds by the metrics and the
// spans' CPU seconds.
type windowCPU struct{ busy, spans float64 }

// lowCoverage is the share of the metrics' CPU time in the spans' below
// which, on every host or component compared, the traces may be a sample:
// the testbed's Go services, traced whole, keep 56 to 93 % of their CPU
// time in their spans, all but its slow dependency (18 %).
const lowCoverage = 0.4

// unattributedCPU spreads, per host the metrics compared, the CPU time the
// spans missed evenly over the executions of the host's operations, as
// per-request overhead done around the spans: reading the request and
// writing the response, the transport, the span's export, the garbage the
// request left. Each execution sends that much CPU (an exponential
// demand) to its component's background operation (outsideOperations), or,
// inline (Config.OutsideSpans), starts with it, taken out of its callers'
// time outside its span, where it was spent; either way the model keeps
// the observed response times at the observed load while the CPU carries
// the load the metrics saw. The busy cores it adds count in the correction
// of off-CPU time.
func (g *generator) unattributedCPU(span float64) {
	g.unattributed = map[string]float64{}
	g.s.unattributed = g.unattributed
	for _, c := range g.est.Coverage {
		if c.Skipped != "" {
			continue
		}
		what := "host " + c.Host
		if c.Component != "" {
			what = "component " + c.Component + " on host " + c.Host
		}
		if c.PerExecution <= 0 {
			g.rep.evidencef("%s: the spans' CPU times account for %.0f %% (± %.1f %%) of the CPU time the metrics (%s) measured: nothing added",
				what, 100*c.Share, 200*c.ShareSE, c.Metrics)
			continue
		}
		where := "is CPU demand at the start of every operation there, taken out of its callers' time outside its span"
		if g.cfg.background() {
			where = "is CPU demand outside its spans, run in the background"
		}
		g.rep.evidencef("%s: the spans' CPU times account for %.0f %% (± %.1f %%) of the CPU time the metrics (%s) measured; the rest, %s per execution, %s",
			what, 100*c.Share, 200*c.ShareSE, c.Metrics, textout.Duration(c.PerExecution), where)
	}
	// Sampling thins every request alike, so it shows as little CPU in
	// the spans everywhere; one service's own runtime and I/O show as
	// little in that service's.
	var measured, spans float64
	highest := 0.0
	for _, c := range g.est.Coverage {
		if c.Skipped == "" {
			measured, spans = measured+c.Measured, spans+c.Spans
			highest = max(highest, c.Share+2*c.ShareSE)
		}
	}
	if g.s.Sampled == 0 && measured > 0 && highest < lowCoverage {
		g.rep.warnf("the spans' CPU times account for %.0f %% of the CPU the metrics measured, and less than %.0f %% wherever compared: if the traces were sampled, say with what probability (sampling: P in --config); else the rest is taken as CPU outside the spans",
			100*spans/measured, 100*lowCoverage)
	}
	if len(g.est.Coverage) == 0 || span <= 0 {
		return
	}
	// Per host, the time per execution of the whole host, or of each
	// component where the metrics measured components' processes.
	hostExec := map[string]float64{}
	compExec := map[string]map[string]float64{}
	for _, c := range g.est.Coverage {
		switch {
		case c.Component != "":
			if compExec[c.Host] == nil {
				compExec[c.Host] = map[string]float64{}
			}
			compExec[c.Host][c.Component] = c.PerExecution
		case c.PerExecution > 0:
			hostExec[c.Host] = c.PerExecution
		}
	}
	// Per component, the executions on each compared host.
	sum, n := map[string]float64{}, map[string]float64{}
	for _, host := range g.s.Windows.Hosts() {
		h := g.s.Windows.hosts[host]
		// In window order: sums in a fixed order, the same output every run.
		for _, idx := range slices.Sorted(maps.Keys(h.cells)) {
			for i, cl := range h.cells[idx] {
				comp, _, _ := strings.Cut(h.ops[i], "/")
				d := hostExec[host]
				if byComp, ok := compExec[host]; ok {
					d = byComp[comp]
				}
				n[comp] += cl.n
				sum[comp] += cl.n * d
			}
		}
	}
	for _, comp := range slices.Sorted(maps.Keys(sum)) {
		if sum[comp] <= 0 || n[comp] <= 0 {
			continue
		}
		d := round(sum[comp]/n[comp], 4)
		g.unattributed[comp] = d
		if h := g.hostOf[comp]; h != nil {
			g.busy[h] += d * n[comp] / g.s.covered() // the windows count what sampled traces stand for
		}
	}
}

// unattributedOf is the CPU time outside its spans that operation id gets
// at its start: its component's share, when its spans carry CPU times.
func (g *generator) unattributedOf(id string) float64 {
	op := g.s.ops[id]
	if op == nil || op.count == 0 || op.cpu.n != op.count {
		return 0
	}
	return g.unattributed[op.component]
}

// outsideOperations gives every component of comps that sends (the set
// sends) its CPU time outside spans to the background (Config.OutsideSpans)
// the operation that receives it: that CPU time, exponential, in one of the
// component's CPU slots when it has them.
func (g *generator) outsideOperations(comps map[string]*model.Component, sends map[string]bool) {
	for _, name := range slices.Sorted(maps.Keys(sends)) {
		d := g.unattributed[name]
		steps := []model.Step{{Kind: model.StepCPU, Demand: model.Exp(d)}}
		if k := g.cpuSlots(name); k > 0 {
			steps = holdCPU(steps, g.cpuSlotsResource(name, k))
		}
		c := comps[name]
		c.Operations = append(c.Operations, &model.Operation{Name: OutsideSpansOperation, Component: name, Steps: steps})
		g.rep.evidencef("component %s: %s of CPU time per execution outside its spans runs in the background (outside_spans: background): each execution sends it to %s/%s", name, textout.Duration(d), name, OutsideSpansOperation)
	}
}
