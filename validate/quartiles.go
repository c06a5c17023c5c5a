package validate

import (
	"context"
	"fmt"

	"github.com/perfcast/perfcast/extract"
	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve"
	"github.com/perfcast/perfcast/solve/sim"
	"github.com/perfcast/perfcast/trace"
	"github.com/perfcast/perfcast/tracegen"
)

// AddSimulatedQuartiles predicts the response-time quartiles of m, which
// results do not carry, and stores them in res.Extra under QuartilesKey, so
// that Compare can compare interquartile ranges. It simulates n requests of
// m with the given seed, recording the spans the system would emit, and
// measures them as it measures traces: per operation from the operation's
// spans, per workload from the spans of its entry operation that start a
// trace, shifted by the workload's leading deterministic delays. A workload
// whose leading delays are not deterministic gets no quartiles. The
// recorded run starts empty and keeps its first requests, so n should be
// large against the time the model takes to reach steady state.
func AddSimulatedQuartiles(ctx context.Context, m *model.Model, res *solve.Result, seed uint64, n int64) error {
	st := extract.NewState()
	cfg := &extract.Config{NoIDFolding: true}
	asm := trace.New(trace.Options{}, func(t *trace.Tree) error {
		st.Fold(t, cfg)
		return nil
	})
	opts := &tracegen.Options{Seed: seed}
	rec, err := sim.Record(ctx, m, sim.RecordOptions{Seed: seed, Requests: n}, func(s *sim.Span) error {
		return asm.Add(tracegen.Convert(s, opts))
	})
	if err != nil {
		return fmt.Errorf("record quartiles: %w", err)
	}
	if err := asm.Close(); err != nil {
		return fmt.Errorf("record quartiles: %w", err)
	}
	if !rec.Stable {
		return nil
	}
	q := &Quartiles{Workloads: map[string][2]float64{}, Operations: map[string][2]float64{}}
	for _, id := range st.Operations() {
		if t, ok := st.OperationTimes(id); ok && t.Count() > 0 {
			q.Operations[id] = [2]float64{t.Quantile(0.25), t.Quantile(0.75)}
		}
	}
	for _, w := range m.Workloads {
		shift, ok := leadingDelay(w)
		if !ok {
			continue
		}
		if t, found := st.EntriesTimes(extract.WorkloadEntries(w)); found && t.Count() > 0 {
			q.Workloads[w.Name] = [2]float64{shift + t.Quantile(0.25), shift + t.Quantile(0.75)}
		}
	}
	if res.Extra == nil {
		res.Extra = map[string]any{}
	}
	res.Extra[QuartilesKey] = q
	return nil
}

// leadingDelay is the sum of a workload's leading delay steps; ok is false
// when one of them is not deterministic.
func leadingDelay(w *model.Workload) (sum float64, ok bool) {
	for _, s := range w.Steps {
		if s.Kind != model.StepDelay {
			break
		}
		if s.Demand.Kind != model.DistDet {
			return 0, false
		}
		sum += s.Demand.Mean()
	}
	return sum, true
}
