package extract

import (
	"context"

	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve"
)

// Simulator is what generating a model asks of a discrete-event simulator
// where the traces show a queue's effect but no closed form gives it: the
// stalls a CPU quota adds (throttleTable), how much a queue before an
// entry span evens out the arrivals measured on the span's starts
// (unsmoothArrivals), and how a system seen only by its clients answers
// its calls (calibrateQueue). Extraction does not solve models itself; the caller
// passes a simulator in Config.Simulator (perfcast passes sim.Solver).
// Without one those corrections are left out and the report says so.
type Simulator interface {
	// Solve solves m as solve.Solver does.
	Solve(ctx context.Context, m *model.Model, opts solve.Options) (*solve.Result, error)
	// EntryStarts simulates m for the given number of workload requests,
	// from empty, and returns by entry operation ("component/operation")
	// when its requests' root server spans started, in seconds. stable is
	// false when the model has no steady state.
	EntryStarts(ctx context.Context, m *model.Model, seed uint64, requests int64) (starts map[string][]float64, stable bool, err error)
	// EntrySpans is EntryStarts with each root server span's start and
	// end.
	EntrySpans(ctx context.Context, m *model.Model, seed uint64, requests int64) (spans map[string][][2]float64, stable bool, err error)
}
