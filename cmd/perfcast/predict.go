package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve"
	"github.com/perfcast/perfcast/solve/mva"
	"github.com/perfcast/perfcast/solve/sim"
	"github.com/perfcast/perfcast/whatif"
)

// solveFlags are the flags of every command that solves models.
type solveFlags struct {
	solver    string
	seed      uint64
	requests  int64
	precision float64
	workers   int
	json      bool
	sets      []string
	// progress, when set, is told how far a simulation has come.
	progress func(done float64)
	// base is the model as loaded, before the --set assignments (nil
	// without any): solveModel warns where a solved model runs more at
	// once than it (whatif.Beyond).
	base *model.Model
}

func (f *solveFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.solver, "solver", "auto", "`sim`ulation, `mva` (analytical), or `auto`: mva where the model is within its reach, sim otherwise")
	cmd.Flags().Uint64Var(&f.seed, "seed", 1, "random seed of the simulation")
	cmd.Flags().Int64Var(&f.requests, "requests", 0, "simulate this many workload requests after warm-up, over all replications (0: until --precision is met)")
	cmd.Flags().Float64Var(&f.precision, "precision", 0.02, "relative 95 % confidence half-width every reported mean must reach")
	cmd.Flags().IntVar(&f.workers, "workers", runtime.NumCPU(), "parallel replications (results do not depend on it)")
	cmd.Flags().BoolVar(&f.json, "json", false, "print the result as JSON")
	cmd.Flags().StringArrayVar(&f.sets, "set", nil, "change the model before solving: `KEY=VALUE`, e.g. hosts.app.cpu.cores=8 or workload.*.load=2; repeatable")
}

// loadModel loads a model and applies the --set assignments, keeping the
// model as loaded in f.base.
func (f *solveFlags) loadModel(path string) (*model.Model, error) {
	m, err := model.Load(path)
	if err != nil {
		return nil, err
	}
	if len(f.sets) == 0 {
		f.base = m
		return m, nil
	}
	if f.base, err = m.Clone(); err != nil {
		return nil, err
	}
	for _, s := range f.sets {
		if err := whatif.Set(m, s); err != nil {
			return nil, usageError{err}
		}
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("after --set: %w", err)
	}
	return m, nil
}

func (f *solveFlags) options() (solve.Options, error) {
	if f.precision <= 0 || f.precision >= 1 {
		return solve.Options{}, usagef("--precision must lie between 0 and 1, not %g", f.precision)
	}
	if f.requests < 0 {
		return solve.Options{}, usagef("--requests must not be negative, not %d", f.requests)
	}
	if f.workers < 1 {
		return solve.Options{}, usagef("--workers must be at least 1, not %d", f.workers)
	}
	return solve.Options{Seed: f.seed, Requests: f.requests, Precision: f.precision, Workers: f.workers, Progress: f.progress}, nil
}

// solveModel solves m with the chosen solver; auto picks the analytical
// solver where the model is within its reach and says why it did not.
func solveModel(ctx context.Context, m *model.Model, f *solveFlags) (*solve.Result, error) {
	opts, err := f.options()
	if err != nil {
		return nil, err
	}
	var s solve.Solver
	var note []string
	switch f.solver {
	case "sim":
		s = sim.New()
	case "mva":
		s = mva.New()
	case "auto":
		ok, reasons := mva.Supports(m)
		if ok {
			s = mva.New()
		} else {
			s = sim.New()
			for _, r := range reasons {
				note = append(note, "solver auto chose simulation: "+r)
			}
		}
	default:
		return nil, usagef("--solver takes sim, mva or auto, not %q", f.solver)
	}
	res, err := s.Solve(ctx, m, opts)
	if err != nil {
		return nil, err
	}
	if f.base != nil {
		note = append(note, whatif.Beyond(f.base, m)...)
	}
	if len(note) > 0 {
		res.Warnings = append(note, res.Warnings...)
	}
	return res, nil
}

func writeResult(w io.Writer, res *solve.Result, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	return solve.WriteText(w, res)
}

func newPredictCmd() *cobra.Command {
	var f solveFlags
	cmd := &cobra.Command{
		Use:   "predict MODEL",
		Short: "Solve a model: throughput, response times, utilization",
		Long: `Solve a model and print, per workload and operation, throughput and response
times (mean and, when simulated, percentiles with 95 % confidence intervals),
and per resource the utilization and waiting time.

An open workload that some resource cannot serve is reported as unstable, with
the bottleneck and the rate at which it saturates, instead of being simulated
forever. Exit status 0 means a result was produced, stable or not.`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			m, err := f.loadModel(a[0])
			if err != nil {
				return err
			}
			res, err := solveModel(cmd.Context(), m, &f)
			if err != nil {
				return fmt.Errorf("%s: %w", a[0], err)
			}
			return writeResult(cmd.OutOrStdout(), res, f.json)
		},
	}
	f.register(cmd)
	return cmd
}
