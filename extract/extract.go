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

	"github.com/perfcast/perfcast/ingest"
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
	r, err := ingest.Open(paths, ingest.Options{Attributes: cfg.paramAttributes()})
	if err != nil {
		return nil, err
	}
	defer r.Close()
	st := NewState()
	astats, err := trace.Run(ctx, r, trace.Options{}, func(t *trace.Tree) error {
		st.Fold(t, cfg)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if st.Traces == 0 {
		return nil, fmt.Errorf("no complete trace in %v", paths)
	}
	if cfg == nil {
		cfg = &Config{}
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
		set, err = metrics.Read(cfg.Metrics)
		if err != nil {
			return nil, err
		}
		opts := DemandOptions{Cores: cores}
		perOp, drep := EstimateDemands(st.Windows, set, cfg.serviceComponent, opts)
		est = &Estimates{PerOp: perOp, Report: drep, Coverage: CPUCoverage(st.Windows, set, cfg.serviceComponent, opts)}
	}
	if !cfg.NoSpeedCurves {
		est.SpeedCurves = EstimateSpeedCurves(st.Windows, set, cfg.serviceComponent, cores, est.PerOp)
	}
	m, rep := st.ModelWith(name, cfg, est)
	read := r.Stats()
	if n := read.Damage.Total(); n > 0 {
		rep.warnf("%d damaged records skipped while reading (see perfcast stats)", n)
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("extracted model is invalid (a bug in perfcast): %w", err)
	}
	return &Result{Model: m, Report: rep, Read: read, Assembly: astats, State: st}, nil
}
