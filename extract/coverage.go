package extract

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/gonum/stat/distuv"

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
	// PerExecution and PerCPUSecond are the CPU time outside the spans,
	// when the spans miss a significant part (more than minUnattributed,
	// and two standard errors; else both 0): per execution, and per
	// second of the execution's own CPU time (perfcast.cpu.time). Which
	// of them the windows hold (see splitOutside): the time per
	// execution, as much for every one ((Measured − Spans)/Executions,
	// PerCPUSecond 0); the time in proportion to the spans' CPU time
	// (PerExecution 0); or both. Together they make Measured − Spans
	// over the windows.
	PerExecution float64 `json:"unattributed_per_execution"`
	PerCPUSecond float64 `json:"unattributed_per_cpu_second,omitempty"`
	// Split says which of the three the windows chose: "execution",
	// "cpu" or "both".
	Split string `json:"unattributed_split,omitempty"`
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
		ratios = append(ratios, windowCPU{busy: win.busy, spans: cpu, execs: n})
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
	// between 0.007 and 0.026 cores from run to run; it goes with the rest
	// (splitOutside).
	n := float64(c.Windows)
	meanB, meanS := c.Measured/n, c.Spans/n
	c.Share = meanS / meanB
	var ss float64
	for _, r := range ratios {
		e := r.spans - c.Share*r.busy
		ss += e * e
	}
	c.ShareSE = math.Sqrt(ss/(n-1)/n) / meanB
	if missing := 1 - c.Share; missing > minUnattributed && missing > 2*c.ShareSE && c.Executions > 0 {
		c.PerExecution, c.PerCPUSecond, c.Split = splitOutside(pooledWindows(ratios, c.Window))
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

// windowCPU is one window's busy core-seconds by the metrics, the spans'
// CPU seconds, and the executions those spans are of.
type windowCPU struct{ busy, spans, execs float64 }

// pooledWindows sums ws, windows of length seconds in order of time, in
// groups of consecutive ones at least curveWindow seconds long. The
// metrics' samples and the spans' windows do not line up (a sample's
// CPU time is spread over its interval, a span's counted where it
// ended), so that part of a busy second's work falls in the next:
// over the testbed's windows of a second that pushed a busy window's
// time outside spans below zero and its neighbour's up, and made the
// time per execution fit them better than the time per second of CPU,
// which fits windows of five seconds clearly better (the residual sum of
// squares 0.14 against 0.25).
func pooledWindows(ws []windowCPU, length float64) []windowCPU {
	k := 1
	if length > 0 {
		k = max(1, int(math.Ceil(curveWindow/length-1e-9)))
	}
	if k == 1 {
		return ws
	}
	out := make([]windowCPU, 0, (len(ws)+k-1)/k)
	for i := 0; i < len(ws); i += k {
		var p windowCPU
		for _, w := range ws[i:min(i+k, len(ws))] {
			p.busy, p.spans, p.execs = p.busy+w.busy, p.spans+w.spans, p.execs+w.execs
		}
		out = append(out, p)
	}
	return out
}

// splitOutsideP is the level of the F test by which splitOutside takes
// the CPU time outside spans as made of both a time per execution and a
// time per second of CPU, rather than of the one that fits the windows
// better.
const splitOutsideP = 0.01

// splitOutside tells how the CPU time outside the spans, window by window
// the metrics' busy time less the spans' CPU time (U), follows the work:
// as much per execution (U = a·N, N the window's executions), in
// proportion to the spans' CPU time (U = b·S: garbage collection grows
// with what a request allocates, which its CPU time follows better than
// its count), or both (U = a·N + b·S, least squares through the origin).
// Each single law's coefficient is a ratio (ΣU/ΣN, ΣU/ΣS), so that it
// makes the windows' whole; the pair is scaled to make it too. The pair
// is taken where both are positive and it fits the windows better than
// the better single law by an F test at splitOutsideP, else that single
// law. On the testbed's catalog, a listing of 10 ms of CPU and a lookup
// of 0.2 ms each got 0.5 ms spread evenly; the windows of three runs
// gave 0.09 to 0.11 s per second of CPU (± 0.01) and 0.01 to 0.10 ms
// per execution (± 0.05): about 1 ms a listing, 0.03 to 0.12 a lookup
// (extraction, choosing the CPU time alone, gives a lookup 0.02).
func splitOutside(ws []windowCPU) (perExec, perCPU float64, split string) {
	var u, n, s, nn, ss, ns, un, us float64
	for _, w := range ws {
		o := w.busy - w.spans
		u, n, s = u+o, n+w.execs, s+w.spans
		nn, ss, ns = nn+w.execs*w.execs, ss+w.spans*w.spans, ns+w.execs*w.spans
		un, us = un+o*w.execs, us+o*w.spans
	}
	if n <= 0 {
		return 0, 0, ""
	}
	rss := func(a, b float64) float64 {
		var r float64
		for _, w := range ws {
			e := w.busy - w.spans - a*w.execs - b*w.spans
			r += e * e
		}
		return r
	}
	perExec, split = u/n, "execution"
	best := rss(perExec, 0)
	if s > 0 {
		if b := u / s; rss(0, b) < best {
			perExec, perCPU, split, best = 0, b, "cpu", rss(0, b)
		}
	}
	det := nn*ss - ns*ns
	df := float64(len(ws) - 2)
	if det <= 0 || df < 1 {
		return perExec, perCPU, split
	}
	a, b := (un*ss-us*ns)/det, (us*nn-un*ns)/det
	if a <= 0 || b <= 0 {
		return perExec, perCPU, split
	}
	scale := u / (a*n + b*s)
	a, b = a*scale, b*scale
	both := rss(a, b)
	if both <= 0 {
		return a, b, "both"
	}
	f := (best - both) / (both / df)
	if f > 0 && 1-(distuv.F{D1: 1, D2: df}).CDF(f) < splitOutsideP {
		return a, b, "both"
	}
	return perExec, perCPU, split
}

// lowCoverage is the share of the metrics' CPU time in the spans' below
// which, on every host or component compared, the traces may be a sample:
// the testbed's Go services, traced whole, keep 56 to 93 % of their CPU
// time in their spans, all but its slow dependency (18 %).
const lowCoverage = 0.4

// outsideShare is a component's CPU time outside its spans, per
// execution of its operations (see Coverage.PerExecution): perExec for
// every one, and perCPU per second of its own CPU time.
type outsideShare struct{ perExec, perCPU float64 }

// of is the CPU time outside spans of an execution whose spans carry cpu
// seconds of CPU time.
func (o outsideShare) of(cpu float64) float64 { return o.perExec + o.perCPU*cpu }

// any reports whether the share adds any CPU time.
func (o outsideShare) any() bool { return o.perExec > 0 || o.perCPU > 0 }

// unattributedCPU spreads, per host the metrics compared, the CPU time the
// spans missed over the executions of the host's operations, as their
// windows say (per execution, in proportion to their CPU time, or both:
// see splitOutside): per-request overhead done around the spans, reading
// the request and writing the response, the transport, the span's export,
// the garbage the request left. Each execution sends its share of CPU (an
// exponential demand) to its component's background operation
// (outsideOperations), or, inline (Config.OutsideSpans), starts with it,
// taken out of its callers' time outside its span, where it was spent;
// either way the model keeps the observed response times at the observed
// load while the CPU carries the load the metrics saw. The busy cores it
// adds count in the correction of off-CPU time.
func (g *generator) unattributedCPU(span float64) {
	g.unattributed = map[string]outsideShare{}
	g.s.unattributed = g.unattributed
	for _, c := range g.est.Coverage {
		if c.Skipped != "" {
			continue
		}
		what := "host " + c.Host
		if c.Component != "" {
			what = "component " + c.Component + " on host " + c.Host
		}
		if c.PerExecution <= 0 && c.PerCPUSecond <= 0 {
			g.rep.evidencef("%s: the spans' CPU times account for %.0f %% (± %.1f %%) of the CPU time the metrics (%s) measured: nothing added",
				what, 100*c.Share, 200*c.ShareSE, c.Metrics)
			continue
		}
		where := "is CPU demand at the start of every operation there, taken out of its callers' time outside its span"
		if g.cfg.background() {
			where = "is CPU demand outside its spans, run in the background"
		}
		g.rep.evidencef("%s: the spans' CPU times account for %.0f %% (± %.1f %%) of the CPU time the metrics (%s) measured; the rest, %s, %s",
			what, 100*c.Share, 200*c.ShareSE, c.Metrics, outsideText(c), where)
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
	// Per host, the share of the whole host, or of each component where
	// the metrics measured components' processes.
	hostShare := map[string]outsideShare{}
	compShare := map[string]map[string]outsideShare{}
	for _, c := range g.est.Coverage {
		o := outsideShare{perExec: round(c.PerExecution, 4), perCPU: round(c.PerCPUSecond, 4)}
		switch {
		case c.Component != "":
			if compShare[c.Host] == nil {
				compShare[c.Host] = map[string]outsideShare{}
			}
			compShare[c.Host][c.Component] = o
		case o.any():
			hostShare[c.Host] = o
		}
	}
	// Per component, over the compared hosts its executions ran on, the
	// time per execution weighted by executions and the time per second
	// of CPU by CPU time, so that together they add what each host's
	// share adds to its executions.
	type sums struct{ n, perExec, cpu, perCPU float64 }
	byComp := map[string]*sums{}
	for _, host := range g.s.Windows.Hosts() {
		h := g.s.Windows.hosts[host]
		// In window order: sums in a fixed order, the same output every run.
		for _, idx := range slices.Sorted(maps.Keys(h.cells)) {
			for i, cl := range h.cells[idx] {
				comp, _, _ := strings.Cut(h.ops[i], "/")
				o, ok := hostShare[host]
				if shares, found := compShare[host]; found {
					o, ok = shares[comp]
				}
				if !ok || !o.any() {
					continue
				}
				sm := byComp[comp]
				if sm == nil {
					sm = &sums{}
					byComp[comp] = sm
				}
				sm.n, sm.perExec = sm.n+cl.n, sm.perExec+cl.n*o.perExec
				sm.cpu, sm.perCPU = sm.cpu+cl.cpu, sm.perCPU+cl.cpu*o.perCPU
			}
		}
	}
	for _, comp := range slices.Sorted(maps.Keys(byComp)) {
		sm := byComp[comp]
		var o outsideShare
		if sm.n > 0 {
			o.perExec = round(sm.perExec/sm.n, 4)
		}
		if sm.cpu > 0 {
			o.perCPU = round(sm.perCPU/sm.cpu, 4)
		}
		if !o.any() {
			continue
		}
		g.unattributed[comp] = o
		if h := g.hostOf[comp]; h != nil {
			g.busy[h] += (sm.perExec + sm.perCPU) / g.s.covered() // the windows count what sampled traces stand for
		}
	}
}

// outsideText says how c spreads the CPU time outside spans.
func outsideText(c *Coverage) string {
	switch c.Split {
	case "cpu":
		return fmt.Sprintf("%s per second of each execution's CPU time (the windows follow the spans' CPU time better than their count)",
			textout.Duration(c.PerCPUSecond))
	case "both":
		return fmt.Sprintf("%s per execution and %s per second of its CPU time (both, F test at %g)",
			textout.Duration(c.PerExecution), textout.Duration(c.PerCPUSecond), splitOutsideP)
	}
	return textout.Duration(c.PerExecution) + " per execution"
}

// unattributedOf is the CPU time outside its spans that operation id gets:
// its component's share (see outsideShare) at its mean CPU time, when its
// spans carry CPU times.
func (g *generator) unattributedOf(id string) float64 {
	op := g.s.ops[id]
	if op == nil || op.count == 0 || op.cpu.n != op.count {
		return 0
	}
	return g.unattributed[op.component].of(op.cpu.mean())
}

// outsideOperation is the name of the operation of its component to which
// operation op (of that component) sends its CPU time outside spans:
// OutsideSpansOperation where every execution there sends as much, else
// one of its own, named after it, since their demands differ.
func (g *generator) outsideOperation(op *opStats) string {
	if g.unattributed[op.component].perCPU == 0 {
		return OutsideSpansOperation
	}
	return OutsideSpansOperation + " (" + op.name + ")"
}

// outsideOperations gives every component of comps that sends its CPU
// time outside spans to the background (Config.OutsideSpans) the
// operations that receive it (sends: by component, the operations' names
// and their demands): that CPU time, exponential, in one of the
// component's CPU slots when it has them. Where a single operation of the
// component sends, its background operation takes the plain name
// (OutsideSpansOperation), since no other's demand differs from it.
func (g *generator) outsideOperations(comps map[string]*model.Component, sends map[string]map[string]float64) {
	for _, name := range slices.Sorted(maps.Keys(sends)) {
		if len(sends[name]) == 1 {
			for own, d := range sends[name] {
				if own == OutsideSpansOperation {
					break
				}
				from, to := name+"/"+own, name+"/"+OutsideSpansOperation
				for _, op := range comps[name].Operations {
					model.Walk(op.Steps, func(s *model.Step) {
						if s.Kind == model.StepSend && s.Target == from {
							s.Target = to
						}
					})
				}
				sends[name] = map[string]float64{OutsideSpansOperation: d}
			}
		}
		for _, opName := range slices.Sorted(maps.Keys(sends[name])) {
			d := sends[name][opName]
			steps := []model.Step{{Kind: model.StepCPU, Demand: model.Exp(round(d, 4))}}
			if k := g.cpuSlots(name); k > 0 {
				steps = holdCPU(steps, g.cpuSlotsResource(name, k))
			}
			c := comps[name]
			c.Operations = append(c.Operations, &model.Operation{Name: opName, Component: name, Steps: steps})
			g.rep.evidencef("component %s: %s of CPU time per execution outside its spans runs in the background (outside_spans: background): each execution sends it to %s/%s", name, textout.Duration(d), name, opName)
		}
	}
}
