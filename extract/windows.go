package extract

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/perfcast/perfcast/estimate"
	"github.com/perfcast/perfcast/ingest"
	"github.com/perfcast/perfcast/metrics"
)

// Window sizes of the per-host aggregate.
const (
	// windowWidth is the narrowest window, in nanoseconds: one second.
	windowWidth = int64(1e9)
	// maxWindows bounds the windows kept per host; beyond it the windows
	// double in width (pairs merge), so memory stays bounded whatever the
	// time span of the traces.
	maxWindows = 1 << 14
	// minCoverage is the part of an estimation window the metrics must
	// cover for the window to be used.
	minCoverage = 0.9
)

// Windows counts, per host and per window of time, the completions and own
// times of each operation: the traces' side of CPU demand estimation from
// utilization metrics. It is mergeable like State: the windows of disjoint
// traces add up, whatever the order.
type Windows struct {
	hosts map[string]*hostWindows
}

// hostWindows are the windows of one host. The width is windowWidth times
// a power of two: the smallest that keeps at most maxWindows windows.
type hostWindows struct {
	width int64
	ops   []string
	index map[string]int
	cells map[int64][]cell
	// members are, for a machine the configuration gathers hosts on
	// (Config.Machines), those hosts, each with the components that ran
	// on it, sorted.
	members map[string][]string
	// external holds the operations that are calls to a system without
	// spans of its own (see externals.go).
	external map[string]bool
}

// cell is one operation in one window.
type cell struct {
	n    float64 // completions
	own  float64 // sum of own times, seconds
	cpuN float64 // completions whose span carried its CPU time
	cpu  float64 // sum of those CPU times, seconds
}

// NewWindows returns an empty aggregate.
func NewWindows() *Windows { return &Windows{hosts: map[string]*hostWindows{}} }

// WindowHost is the host key under which an execution's windows are kept
// and metrics are looked up: the span's host.name, else its k8s.pod.name
// (container metrics name pods), else its service.instance.id, else the
// component.
func WindowHost(sp *ingest.Span, component string) string {
	switch {
	case sp.Host != "":
		return sp.Host
	case sp.Pod != "":
		return sp.Pod
	case sp.Instance != "":
		return sp.Instance
	}
	return component
}

// Add counts one execution of op (`component/operation`) on host that
// completed at end (Unix nanoseconds) with the given own time in seconds
// (its duration minus the time it waited for synchronous calls) and the CPU
// time its spans carried (NaN when they carried none). The execution
// stands for weight of the system's (1/p for a trace kept with
// probability p): it counts that many times.
func (w *Windows) Add(host, op string, end int64, ownTime, cpu, weight float64) {
	h := w.host(host)
	if !(ownTime >= 0) || math.IsInf(ownTime, 0) {
		ownTime = 0
	}
	if !(weight > 0) || math.IsInf(weight, 0) {
		weight = 1
	}
	c := cell{n: weight, own: weight * ownTime}
	if cpu >= 0 && !math.IsInf(cpu, 0) {
		c.cpuN, c.cpu = weight, weight*cpu
	}
	h.add(h.opIndex(op), floorDiv(end, h.width), c)
	h.bound()
}

// host returns the windows of host, made empty if it has none.
func (w *Windows) host(host string) *hostWindows {
	h := w.hosts[host]
	if h == nil {
		h = &hostWindows{width: windowWidth, index: map[string]int{}, cells: map[int64][]cell{}}
		w.hosts[host] = h
	}
	return h
}

// addMember records that component comp ran on member, a host of machine.
func (w *Windows) addMember(machine, member, comp string) {
	h := w.host(machine)
	if h.members == nil {
		h.members = map[string][]string{}
	}
	if comps := h.members[member]; !slices.Contains(comps, comp) {
		comps = append(comps, comp)
		slices.Sort(comps)
		h.members[member] = comps
	}
}

// Members returns the hosts the configuration gathers on machine, with the
// components that ran on each; nil for a host that is no such machine.
func (w *Windows) Members(machine string) map[string][]string {
	if h := w.hosts[machine]; h != nil {
		return h.members
	}
	return nil
}

func (h *hostWindows) opIndex(op string) int {
	i, ok := h.index[op]
	if !ok {
		i = len(h.ops)
		h.index[op] = i
		h.ops = append(h.ops, op)
	}
	return i
}

func (h *hostWindows) add(op int, idx int64, c cell) {
	cs := h.cells[idx]
	for len(cs) <= op {
		cs = append(cs, cell{})
	}
	cs[op].n += c.n
	cs[op].own += c.own
	cs[op].cpuN += c.cpuN
	cs[op].cpu += c.cpu
	h.cells[idx] = cs
}

// bound doubles the width until at most maxWindows windows remain.
func (h *hostWindows) bound() {
	for len(h.cells) > maxWindows {
		h.widen(h.width * 2)
	}
}

// widen regroups the windows into windows of the given width, a multiple
// of the current one.
func (h *hostWindows) widen(width int64) {
	if width <= h.width {
		return
	}
	old := h.cells
	h.cells = make(map[int64][]cell, len(old)/2+1)
	for _, idx := range slices.Sorted(maps.Keys(old)) {
		to := floorDiv(idx*h.width, width)
		for op, c := range old[idx] {
			if c.n != 0 || c.own != 0 || c.cpuN != 0 {
				h.add(op, to, c)
			}
		}
	}
	h.width = width
}

// Merge adds the windows of o, counted from traces disjoint from those of
// w. o must not be used afterwards.
func (w *Windows) Merge(o *Windows) {
	if o == nil {
		return
	}
	for _, host := range slices.Sorted(maps.Keys(o.hosts)) {
		oh := o.hosts[host]
		h := w.hosts[host]
		if h == nil {
			w.hosts[host] = oh
			continue
		}
		for _, m := range slices.Sorted(maps.Keys(oh.members)) {
			for _, comp := range oh.members[m] {
				w.addMember(host, m, comp)
			}
		}
		for op := range oh.external {
			if h.external == nil {
				h.external = map[string]bool{}
			}
			h.external[op] = true
		}
		width := max(h.width, oh.width)
		h.widen(width)
		oh.widen(width)
		for _, idx := range slices.Sorted(maps.Keys(oh.cells)) {
			for op, c := range oh.cells[idx] {
				if c.n != 0 || c.own != 0 || c.cpuN != 0 {
					h.add(h.opIndex(oh.ops[op]), idx, c)
				}
			}
		}
		h.bound()
	}
}

// allMeasured reports whether every execution on the host carried its
// CPU time.
func (h *hostWindows) allMeasured() bool {
	for _, cells := range h.cells {
		for _, c := range cells {
			if c.cpuN != c.n {
				return false
			}
		}
	}
	return len(h.cells) > 0
}

// Hosts returns the hosts with windows, sorted.
func (w *Windows) Hosts() []string { return slices.Sorted(maps.Keys(w.hosts)) }

// TimeRange returns the time a host's windows cover, from the start of the
// first to the end of the last, in Unix nanoseconds; ok is false for a
// host without windows.
func (w *Windows) TimeRange(host string) (from, to int64, ok bool) {
	h := w.hosts[host]
	if h == nil || len(h.cells) == 0 {
		return 0, 0, false
	}
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for idx := range h.cells {
		lo, hi = min(lo, idx), max(hi, idx)
	}
	return lo * h.width, (hi + 1) * h.width, true
}

// DemandOptions tunes EstimateDemands.
type DemandOptions struct {
	// Cores gives the cores of hosts, by host name, where the metrics do
	// not (Config.Hosts).
	Cores map[string]int
	// Folds is the number of cross-validation folds; 0 means 5.
	Folds int
}

// DemandReport says, per host, which estimator was picked and why, what
// every estimator found, and what makes the estimates doubtful.
type DemandReport struct {
	Hosts []*HostDemands `json:"hosts"`
	// Warnings are one-line messages for the extraction report.
	Warnings []string `json:"warnings"`
}

// HostDemands is the estimation on one host, or on one component of it
// where the metrics measure the processes of each service.
type HostDemands struct {
	Host string `json:"host"`
	// Component, when set, limits the estimation to its operations,
	// measured by its service's processes' series.
	Component string `json:"component,omitempty"`
	// Metrics names the series used (file and metric), empty when none
	// matched the host.
	Metrics string `json:"metrics,omitempty"`
	// Window is the estimation window's length in seconds; Windows the
	// windows used, Uncovered those left out because the metrics did not
	// cover them.
	Window    float64 `json:"window"`
	Windows   int     `json:"windows"`
	Uncovered int     `json:"uncovered"`
	// Cores is the cores used to read utilization; CoresAssumed is true
	// when neither the metrics nor the configuration gave them.
	Cores        float64 `json:"cores"`
	CoresAssumed bool    `json:"cores_assumed,omitempty"`
	// Ops are the operations, in the order of the estimators' demands.
	Ops    []string          `json:"operations"`
	Choice *estimate.Choice  `json:"choice,omitempty"`
	Result []estimate.Result `json:"results,omitempty"`
	// Background is the busy cores no operation explains, by the picked
	// estimator; the model does not spread it over the operations.
	Background float64 `json:"background"`
	// Skipped says why the host has no estimate.
	Skipped string `json:"skipped,omitempty"`
}

// EstimateDemands estimates the CPU demand of every operation on the hosts
// the windows and the metric series of set have in common (a host is
// looked up by its name, then case-insensitively, then by its first
// dot-separated label). Where set measures the processes of services on a
// host (set.Services), the operations of each component that
// component(service) names (nil: the service's name) are estimated
// against that service's series alone, which tells apart operations whose
// loads rise and fall together on the host; the host's other components
// then have no estimate. The estimation windows are the narrowest multiple
// of the aggregate's windows at least as long as the series' readings;
// windows the metrics cover less than 90 % are left out, and so are the
// first and the last, which the traces may cover in part. An operation
// that ran on several hosts gets the mean of its per-host estimates
// weighted by its executions.
func EstimateDemands(w *Windows, set *metrics.Set, component func(service string) string, opts DemandOptions) (map[string]estimate.Result, *DemandReport) {
	rep := &DemandReport{Hosts: []*HostDemands{}, Warnings: []string{}}
	type part struct {
		r    estimate.Result
		host string
	}
	byOp := map[string][]part{}
	for _, host := range w.Hosts() {
		for _, sc := range scopes(host, w.hosts[host], set, component) {
			hd := estimateScope(sc, opts)
			rep.Hosts = append(rep.Hosts, hd)
			for i, op := range hd.Ops {
				if hd.Skipped == "" {
					byOp[op] = append(byOp[op], part{hd.Result[i], host})
				}
			}
			if msg := hd.warning(); msg != "" {
				rep.Warnings = append(rep.Warnings, msg)
			}
		}
	}
	out := map[string]estimate.Result{}
	for op, parts := range byOp {
		if len(parts) == 1 {
			out[op] = parts[0].r
			continue
		}
		var n, cpu, own, share, se2 float64
		identified := true
		var methods []string
		for _, p := range parts {
			n += p.r.Count
		}
		for _, p := range parts {
			wt := p.r.Count / math.Max(n, 1)
			cpu += wt * p.r.CPU
			own += wt * p.r.OwnTime
			share += wt * p.r.Share
			se2 += wt * wt * p.r.StdErr * p.r.StdErr
			identified = identified && p.r.Identified
			if !slices.Contains(methods, p.r.Method) {
				methods = append(methods, p.r.Method)
			}
		}
		sort.Strings(methods)
		r := estimate.Result{Count: n, OwnTime: own, Share: share, StdErr: math.Sqrt(se2),
			Method: strings.Join(methods, "+"), Identified: identified}
		r.CPU, r.OffCPU = estimate.Split(cpu, own)
		out[op] = r
	}
	return out, rep
}

// warning is the extraction report's line on hd, "" when there is
// nothing to say (every span carried its CPU time).
func (hd *HostDemands) warning() string {
	what := "host " + hd.Host
	if hd.Component != "" {
		what = "component " + hd.Component + " on host " + hd.Host
	}
	switch hd.Skipped {
	case allMeasured:
		return ""
	case "":
	default:
		return fmt.Sprintf("%s: CPU demands not estimated: %s", what, hd.Skipped)
	}
	c := hd.Choice
	msg := fmt.Sprintf("%s: CPU demands by %s (%s)", what, c.Picked, c.Why)
	if hd.CoresAssumed {
		msg += "; cores unknown, 1 assumed (give them in --config hosts)"
	}
	for _, f := range c.Diagnosis.Flags {
		if f.Kind != estimate.FlagUnknownCores {
			msg += "; " + f.Message
		}
	}
	if hd.Background > 0 && c.Fit != nil {
		msg += fmt.Sprintf("; background load %.3g cores not attributed to any operation", hd.Background)
	}
	return msg
}

// scope is what one estimation or coverage check covers: a host's windows
// and the series measuring them, or one component's operations on the
// host and its service's processes' series.
type scope struct {
	host, component string
	h               *hostWindows
	// s is nil when no series measures the scope; skipped then says why.
	s       *metrics.Series
	skipped string
}

// scopes splits a host's windows by the series of set that measure them:
// per component where set has series of the services' processes on the
// host, whole otherwise (also when two services make one component). A
// component of the host whose service has no series of its own gets a
// scope with none.
func scopes(host string, h *hostWindows, set *metrics.Set, component func(service string) string) []scope {
	if component == nil {
		component = func(s string) string { return s }
	}
	if h = h.modeled(host, set.Lookup); h == nil {
		return nil
	}
	var out []scope
	bySvc := map[string]string{}
	comps := h.components()
	if set.Lookup(host) == "" && len(h.members) > 0 {
		return memberScopes(host, h, set)
	}
	if svcs := set.Services[set.Lookup(host)]; len(svcs) > 0 {
		for _, svc := range slices.Sorted(maps.Keys(svcs)) {
			comp := component(svc)
			if !slices.Contains(comps, comp) {
				continue
			}
			if _, ok := bySvc[comp]; ok {
				// Two services' processes make one component: their
				// series would have to be added; the host's is taken.
				out = nil
				break
			}
			bySvc[comp] = svc
			out = append(out, scope{host: host, component: comp, h: h.only(comp), s: svcs[svc]})
		}
	}
	if len(out) == 0 {
		sc := scope{host: host, h: h, s: set.Series[set.Lookup(host)]}
		if sc.s == nil {
			sc.skipped = "no metrics for this host"
		}
		return []scope{sc}
	}
	for _, comp := range comps {
		if _, ok := bySvc[comp]; !ok {
			out = append(out, scope{host: host, component: comp, h: h.only(comp),
				skipped: "no metrics for its processes (the host's are measured per service)"})
		}
	}
	return out
}

// memberScopes are the scopes of a machine the configuration gathers hosts
// on, without metrics of its own: one per component, measured by the sum
// of the series of the hosts it ran on (its containers), where each of
// those hosts has a series in busy cores and ran no other component.
func memberScopes(machine string, h *hostWindows, set *metrics.Set) []scope {
	series := map[string][]*metrics.Series{}
	lacking := map[string]string{}
	for _, m := range slices.Sorted(maps.Keys(h.members)) {
		comps := h.members[m]
		s := set.Series[set.Lookup(m)]
		why := ""
		switch {
		case s == nil:
			why = "no metrics for its host " + m + " (nor for the machine)"
		case s.Unit != metrics.Cores:
			why = "the metrics of its host " + m + " are a fraction of cores not given"
		case len(comps) > 1:
			why = "its host " + m + " ran " + strings.Join(comps, " and ") + ", which its metrics do not tell apart"
		}
		for _, c := range comps {
			if why != "" {
				lacking[c] = cmp.Or(lacking[c], why)
				continue
			}
			series[c] = append(series[c], s)
		}
	}
	var out []scope
	for _, comp := range h.components() {
		sc := scope{host: machine, component: comp, h: h.only(comp)}
		if why, ok := lacking[comp]; ok {
			sc.skipped = why
		} else if sc.s = metrics.Sum(machine, series[comp]); sc.s == nil {
			sc.skipped = "no metrics for its hosts (nor for the machine)"
		}
		out = append(out, sc)
	}
	return out
}

// HostSeries returns the metrics of a host as WindowHost names it: its own
// series; else, for a machine the configuration gathers hosts on, the sum
// of its hosts' series where every one has a series in busy cores; else
// nil.
func (w *Windows) HostSeries(host string, set *metrics.Set) *metrics.Series {
	if s := set.Series[set.Lookup(host)]; s != nil {
		return s
	}
	members := w.Members(host)
	if len(members) == 0 {
		return nil
	}
	var all []*metrics.Series
	for _, m := range slices.Sorted(maps.Keys(members)) {
		s := set.Series[set.Lookup(m)]
		if s == nil {
			return nil
		}
		all = append(all, s)
	}
	return metrics.Sum(host, all)
}

// only returns the windows of comp's operations.
func (h *hostWindows) only(comp string) *hostWindows {
	return h.filter(func(op string) bool {
		oc, _, _ := strings.Cut(op, "/")
		return oc == comp
	})
}

// filter returns the windows of the operations keep keeps.
func (h *hostWindows) filter(keep func(op string) bool) *hostWindows {
	sub := &hostWindows{width: h.width, index: map[string]int{}, cells: map[int64][]cell{}}
	for _, idx := range slices.Sorted(maps.Keys(h.cells)) {
		for op, c := range h.cells[idx] {
			if c.n > 0 && keep(h.ops[op]) {
				sub.add(sub.opIndex(h.ops[op]), idx, c)
			}
		}
	}
	for op := range h.external {
		if _, ok := sub.index[op]; ok {
			if sub.external == nil {
				sub.external = map[string]bool{}
			}
			sub.external[op] = true
		}
	}
	return sub
}

// HostsOf returns the hosts, as WindowHost names them, that component's
// operations ran on, sorted.
func (w *Windows) HostsOf(component string) []string {
	var out []string
	for _, h := range w.Hosts() {
		if slices.Contains(w.hosts[h].components(), component) {
			out = append(out, h)
		}
	}
	return out
}

// components returns the components of the host's operations, sorted.
func (h *hostWindows) components() []string {
	var out []string
	for _, op := range h.ops {
		if c, _, _ := strings.Cut(op, "/"); !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out
}

// allMeasured is why a host whose spans all carry their CPU times has no
// estimate.
const allMeasured = "every span carries its CPU time"

func estimateScope(sc scope, opts DemandOptions) *HostDemands {
	host, h, s := sc.host, sc.h, sc.s
	hd := &HostDemands{Host: host, Component: sc.component, Ops: []string{}}
	if h.allMeasured() {
		hd.Skipped = allMeasured
		return hd
	}
	if s == nil {
		hd.Skipped = sc.skipped
		return hd
	}
	hd.Metrics = s.Source
	switch {
	case s.Cores > 0:
		hd.Cores = float64(s.Cores)
	case opts.Cores[host] > 0:
		hd.Cores = float64(opts.Cores[host])
	case s.Unit == metrics.Fraction:
		hd.Cores, hd.CoresAssumed = 1, true
	}
	cw := coveredWindows(h, s, hd.Cores)
	hd.Window, hd.Uncovered = cw.length, cw.uncovered
	if cw.empty {
		hd.Skipped = "no executions"
		return hd
	}
	hd.Ops = cw.ops
	p := &estimate.Problem{Ops: cw.ops, Cores: hd.Cores}
	for _, win := range cw.windows {
		ew := estimate.Window{Start: win.start, Length: cw.length, Busy: win.busy,
			Count: make([]float64, len(cw.ops)), Own: make([]float64, len(cw.ops))}
		for j, c := range win.cells {
			ew.Count[j], ew.Own[j] = c.n, c.own
		}
		p.Windows = append(p.Windows, ew)
	}
	hd.Windows = len(p.Windows)
	if len(p.Windows) == 0 {
		hd.Skipped = fmt.Sprintf("the metrics (%s) do not cover the time of the traces", s.Source)
		return hd
	}
	c, err := estimate.Choose(p, estimate.Options{Folds: opts.Folds})
	if err != nil {
		hd.Skipped = err.Error()
		return hd
	}
	hd.Choice = c
	hd.Result = estimate.Results(p, c)
	hd.Background = c.Fit.Background
	return hd
}

// coveredSet is a host's windows regrouped to the metrics' resolution, with
// the busy core-seconds the metrics measured in each.
type coveredSet struct {
	// length is the windows' length in seconds.
	length float64
	// ops are the operations in name order, the order of cells.
	ops []string
	// windows are those the metrics cover (at least minCoverage of
	// each), the first and last left out when there are more than three.
	windows []coveredWindow
	// uncovered counts the windows left out for lack of metrics.
	uncovered int
	// empty is true when the host had no executions.
	empty bool
}

type coveredWindow struct {
	start int64
	busy  float64 // core-seconds
	cells []cell  // per operation
}

// coveredWindows regroups h into windows a multiple of its width at least
// as long as a reading of s, and measures each window's busy core-seconds
// (cores converts a utilization fraction; 0 counts as 1); windows the
// metrics cover for more than minCoverage have their busy time scaled to
// the whole window.
func coveredWindows(h *hostWindows, s *metrics.Series, cores float64) coveredSet {
	k := max(int64(1), (s.Step()+h.width-1)/h.width)
	width := h.width * k
	cw := coveredSet{length: float64(width) / 1e9, ops: []string{}}
	if len(h.cells) == 0 {
		cw.empty = true
		return cw
	}
	idxs := slices.Sorted(maps.Keys(h.cells))
	first, last := floorDiv(idxs[0]*h.width, width), floorDiv(idxs[len(idxs)-1]*h.width, width)
	cw.ops = slices.Sorted(maps.Keys(h.index))
	agg := map[int64][]cell{}
	for _, idx := range idxs {
		e := floorDiv(idx*h.width, width)
		cells := agg[e]
		if cells == nil {
			cells = make([]cell, len(cw.ops))
			agg[e] = cells
		}
		for op, c := range h.cells[idx] {
			j, _ := slices.BinarySearch(cw.ops, h.ops[op])
			cells[j].n += c.n
			cells[j].own += c.own
			cells[j].cpuN += c.cpuN
			cells[j].cpu += c.cpu
		}
	}
	if cores == 0 {
		cores = 1
	}
	lo, hi := first, last
	if last-first >= 3 {
		lo, hi = first+1, last-1
	}
	for e := lo; e <= hi; e++ {
		start := e * width
		busy, got := s.Busy(start, start+width, cores)
		if got < minCoverage*cw.length {
			cw.uncovered++
			continue
		}
		cells := agg[e]
		if cells == nil {
			cells = make([]cell, len(cw.ops))
		}
		cw.windows = append(cw.windows, coveredWindow{start: start, busy: busy * cw.length / got, cells: cells})
	}
	return cw
}

// Estimated reports whether some host needed an estimate: false when on
// every host each span carried its CPU time.
func (r *DemandReport) Estimated() bool {
	for _, h := range r.Hosts {
		if h.Skipped != allMeasured {
			return true
		}
	}
	return false
}

// WriteText renders the report for people: per host (or component), the estimators'
// errors, the one picked and why, the doubts, and per operation the CPU
// demand, its standard error, the own time and the off-CPU rest.
func (r *DemandReport) WriteText(w io.Writer) error {
	var b strings.Builder
	ms := func(v float64) string {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return "-"
		}
		return fmt.Sprintf("%.3f", v*1e3)
	}
	pct := func(v float64) string {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return "-"
		}
		return fmt.Sprintf("%.1f %%", 100*v)
	}
	for _, h := range r.Hosts {
		if h.Component != "" {
			fmt.Fprintf(&b, "host %s, component %s\n", h.Host, h.Component)
		} else {
			fmt.Fprintf(&b, "host %s\n", h.Host)
		}
		if h.Skipped != "" {
			fmt.Fprintf(&b, "  not estimated: %s\n\n", h.Skipped)
			continue
		}
		d := h.Choice.Diagnosis
		cores := fmt.Sprintf("%g cores", h.Cores)
		if h.CoresAssumed {
			cores = "1 core (assumed)"
		}
		fmt.Fprintf(&b, "  metrics: %s\n", h.Metrics)
		fmt.Fprintf(&b, "  %d windows of %gs (%d not covered by the metrics), %s, busy %.3g cores", h.Windows, h.Window, h.Uncovered, cores, d.Busy)
		if !math.IsNaN(d.Utilization[0]) {
			fmt.Fprintf(&b, ", utilization %s (%s to %s)", pct(d.Utilization[0]), pct(d.Utilization[1]), pct(d.Utilization[2]))
		}
		fmt.Fprintf(&b, ", condition number %.3g\n", d.Condition)
		fmt.Fprintf(&b, "  %-14s %10s %10s %8s  %s\n", "estimator", "cv error", "fit error", "bias", "")
		for _, s := range h.Choice.Scores {
			mark := ""
			if s.Method == h.Choice.Picked {
				mark = "<- picked"
			}
			switch {
			case s.Fit == nil:
				mark = "not applicable: " + s.Skipped
			case !s.Fit.Identified:
				mark = "not identified: " + s.Fit.Note
			}
			fmt.Fprintf(&b, "  %-14s %10s %10s %8s  %s\n", s.Method, pct(s.CVError), pct(s.FitError), pct(s.Bias), mark)
		}
		fmt.Fprintf(&b, "  picked %s\n", h.Choice.Why)
		fmt.Fprintf(&b, "  background %.3g cores (not attributed to operations)\n", h.Background)
		if f := h.Choice.Fit; f != nil && f.Note != "" {
			fmt.Fprintf(&b, "  %s: %s\n", h.Choice.Picked, f.Note)
		}
		for _, f := range d.Flags {
			fmt.Fprintf(&b, "  ! %s: %s\n", f.Kind, f.Message)
		}
		fmt.Fprintf(&b, "  %-32s %8s %9s %9s %9s %9s %7s\n", "operation", "count", "cpu ms", "± ms", "own ms", "off ms", "share")
		for i, op := range h.Ops {
			res := h.Result[i]
			fmt.Fprintf(&b, "  %-32s %8.0f %9s %9s %9s %9s %7s\n", op, res.Count, ms(res.CPU), ms(res.StdErr), ms(res.OwnTime), ms(res.OffCPU), pct(res.Share))
		}
		b.WriteByte('\n')
	}
	lines := strings.Split(b.String(), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	_, err := io.WriteString(w, strings.Join(lines, "\n"))
	return err
}
