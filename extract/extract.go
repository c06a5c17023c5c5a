// Package extract builds a perfcast model from call trees: components and
// hosts from where spans ran, operations and their control flow (branches,
// loops, parallel blocks, asynchronous sends, external calls) from the
// observed call sequences, resource demands from span CPU times or own
// times, and workloads from the requests' entry operations and arrivals.
//
// Trees are folded into a State whose size grows with the model, not with
// the traces; states of disjoint traces merge; the model is generated from
// the state at the end.
package extract

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/perfcast/perfcast/ingest"
	"github.com/perfcast/perfcast/internal/textout"
	"github.com/perfcast/perfcast/metrics"
	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/trace"
)

// Result is what Run produces.
type Result struct {
	Model  *model.Model
	Report *Report
	// Read and Assembly describe the input: files, formats, damage, trees.
	Read     ingest.Stats
	Assembly trace.Stats
	State    *State
}

// Run reads the trace files, folds their call trees into a state and
// generates the model named name.
func Run(ctx context.Context, paths []string, name string, cfg *Config) (*Result, error) {
	return RunWith(ctx, paths, nil, name, cfg)
}

// RunWith is Run with states folded elsewhere (perfcast receive, another
// extraction) merged in before the model is generated; paths may then be
// empty. The states are taken over: they must not be used afterwards.
func RunWith(ctx context.Context, paths []string, states []*State, name string, cfg *Config) (*Result, error) {
	st := NewState()
	var read ingest.Stats
	var astats trace.Stats
	if len(paths) > 0 {
		var err error
		if read, astats, err = Fold(ctx, st, paths, cfg); err != nil {
			return nil, err
		}
	}
	for _, o := range states {
		st.Merge(o)
	}
	if st.Traces == 0 {
		where := strings.Join(paths, ", ")
		if n := skippedFiles(read); read.Spans == 0 && len(n) > 0 {
			where += fmt.Sprintf(" (%s skipped, none holds traces: %s)", textout.Plural(len(n), "file"), textout.Abbreviate(n, 3))
		}
		if st.OutsideWindow > 0 {
			where += fmt.Sprintf(" %s (%s outside it)", cfg.window(), textout.Plural(int(st.OutsideWindow), "trace"))
		}
		if len(states) > 0 {
			return nil, fmt.Errorf("no complete trace in %s nor in the %d states given", where, len(states))
		}
		return nil, fmt.Errorf("no complete trace in %s", where)
	}
	m, rep, err := Generate(ctx, st, name, cfg)
	if err != nil {
		return nil, err
	}
	if n := read.Damage.Total(); n > 0 {
		rep.warnf("%d damaged records skipped while reading (see perfcast stats)", n)
	}
	if skipped := skippedFiles(read); len(skipped) > 0 {
		rep.warnf("%d files of the directories given hold no traces and were skipped (see perfcast stats): %s", len(skipped), textout.Abbreviate(skipped, 5))
	}
	return &Result{Model: m, Report: rep, Read: read, Assembly: astats, State: st}, nil
}

// stamp writes a time in Unix nanoseconds for a warning.
func stamp(ns int64) string { return time.Unix(0, ns).UTC().Format("2006-01-02 15:04:05 UTC") }

// skippedFiles lists the files of directories that the reader skipped as
// holding no traces.
func skippedFiles(read ingest.Stats) []string {
	var out []string
	for _, f := range read.Files {
		if f.Skipped != "" {
			out = append(out, f.Path)
		}
	}
	return out
}

// Fold reads the trace files and folds their call trees into st.
func Fold(ctx context.Context, st *State, paths []string, cfg *Config) (ingest.Stats, trace.Stats, error) {
	r, err := ingest.Open(paths, ingest.Options{Attributes: cfg.Attributes()})
	if err != nil {
		return ingest.Stats{}, trace.Stats{}, err
	}
	defer r.Close()
	astats, err := trace.Run(ctx, r, trace.Options{}, func(t *trace.Tree) error {
		st.Fold(t, cfg)
		return nil
	})
	return r.Stats(), astats, err
}

// Generate makes the model named name from a state: CPU demands from the
// configuration's utilization metrics where spans carry no CPU time, speed
// curves where the load varied, and the rest from the state alone.
// Generating finishes the state's sweeps: fold no more into it afterwards
// (Clone it first to go on folding). It stops with ctx's error once ctx is
// done.
func Generate(ctx context.Context, st *State, name string, cfg *Config) (*model.Model, *Report, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	// A configuration built in code, not by LoadConfig, is checked here.
	if err := cfg.check(); err != nil {
		return nil, nil, fmt.Errorf("configuration: %w", err)
	}
	cores := map[string]int{}
	for h, hc := range cfg.Hosts {
		if hc.Cores > 0 {
			cores[h] = hc.Cores
		}
	}
	est := &Estimates{}
	var set *metrics.Set
	if len(cfg.Metrics) > 0 {
		var err error
		set, err = metrics.Read(cfg.Metrics)
		if err != nil {
			return nil, nil, err
		}
		opts := DemandOptions{Cores: cores}
		perOp, drep := EstimateDemands(st.Windows, set, cfg.serviceComponent, opts)
		est = &Estimates{PerOp: perOp, Report: drep, Coverage: CPUCoverage(st.Windows, set, cfg.serviceComponent, opts),
			Limits: windowLimits(st.Windows, set), Cores: windowCores(st.Windows, set),
			Processors: componentProcessors(set, cfg.serviceComponent), Pools: componentPools(set, cfg.serviceComponent),
			PoolTimes: componentPoolTimes(set, cfg.serviceComponent)}
	}
	if !cfg.NoSpeedCurves {
		est.SpeedCurves = EstimateSpeedCurves(st.Windows, set, cfg.serviceComponent, cores, est.PerOp, st.cpuVariances())
	}
	m, rep, err := st.ModelWith(ctx, name, cfg, est)
	if err != nil {
		return nil, nil, err
	}
	if err := m.Validate(); err != nil {
		return nil, nil, fmt.Errorf("extracted model is invalid (a bug in perfcast): %w", err)
	}
	if set != nil {
		warnUnmatched(rep, st.Windows, set)
	}
	return m, rep, nil
}

// componentProcessors gives, by component (component names a service's),
// the most threads the metrics say its Go processes ran Go code on at
// once, over every host.
func componentProcessors(set *metrics.Set, component func(service string) string) map[string]int {
	out := map[string]int{}
	for _, bySvc := range set.Processors {
		for svc, n := range bySvc {
			c := component(svc)
			out[c] = max(out[c], n)
		}
	}
	return out
}

// componentPools gives, by component (component names a service's) and
// pool name, the most connections the metrics say a process's pool of
// that name may open, over every host.
func componentPools(set *metrics.Set, component func(service string) string) map[string]map[string]int {
	out := map[string]map[string]int{}
	for _, bySvc := range set.Pools {
		for svc, byPool := range bySvc {
			c := component(svc)
			if out[c] == nil {
				out[c] = map[string]int{}
			}
			for pool, n := range byPool {
				out[c][pool] = max(out[c][pool], n)
			}
		}
	}
	return out
}

// componentPoolTimes gives, by component (component names a service's)
// and pool name, the pools' measured times, summed over every host.
func componentPoolTimes(set *metrics.Set, component func(service string) string) map[string]map[string]metrics.PoolTime {
	out := map[string]map[string]metrics.PoolTime{}
	for _, bySvc := range set.PoolTimes {
		for svc, byPool := range bySvc {
			c := component(svc)
			if out[c] == nil {
				out[c] = map[string]metrics.PoolTime{}
			}
			for pool, t := range byPool {
				out[c][pool] = out[c][pool].Plus(t)
			}
		}
	}
	return out
}

// windowLimits gives the CPU limits the metrics state for the hosts the
// windows name, found by Lookup's rules (a limit of a host that has no
// usage series is found by its own name).
func windowLimits(w *Windows, set *metrics.Set) map[string]metrics.Limit {
	out := map[string]metrics.Limit{}
	for _, h := range w.Hosts() {
		if l, ok := set.Limits[h]; ok {
			out[h] = l
		} else if l, ok := set.Limits[set.Lookup(h)]; ok {
			out[h] = l
		}
	}
	return out
}

// windowCores gives the cores the metrics state for the hosts the windows
// name (HostSeries).
func windowCores(w *Windows, set *metrics.Set) map[string]int {
	out := map[string]int{}
	for _, h := range w.Hosts() {
		if s := w.HostSeries(h, set); s != nil && s.Cores > 0 {
			out[h] = s.Cores
		}
	}
	return out
}

// warnUnmatched warns of the metrics' hosts that no span comes from, most
// often named otherwise in the metrics than in the spans, and of readings
// at other times than the spans' (another run, a clock or time zone off):
// neither is used.
func warnUnmatched(rep *Report, w *Windows, set *metrics.Set) {
	traced := w.Hosts()
	used := map[string]bool{}
	for _, h := range traced {
		for m := range w.Members(h) {
			if k := set.Lookup(m); k != "" {
				used[k] = true
			}
		}
		s := w.HostSeries(h, set)
		if s == nil {
			continue
		}
		used[set.Lookup(h)] = true
		from, to, ok := w.TimeRange(h)
		if _, covered := s.Busy(from, to, 1); ok && covered == 0 && len(s.Samples) > 0 {
			rep.warnf("metrics: host %s: its readings (%s to %s) do not overlap its spans (%s to %s), so they are not used",
				h, stamp(s.Samples[0].Start), stamp(s.Samples[len(s.Samples)-1].End), stamp(from), stamp(to))
		}
	}
	var unused []string
	for _, h := range set.Hosts() {
		if !used[h] {
			unused = append(unused, h)
		}
	}
	switch {
	case len(unused) == 1:
		rep.warnf("metrics: host %s: no span comes from it, so its readings are not used (hosts in the traces: %s)", unused[0], textout.Abbreviate(traced, 8))
	case len(unused) > 1:
		rep.warnf("metrics: no span comes from %d of their hosts (%s), so their readings are not used (hosts in the traces: %s)",
			len(unused), textout.Abbreviate(unused, 8), textout.Abbreviate(traced, 8))
	}
}
