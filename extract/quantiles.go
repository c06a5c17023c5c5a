package extract

import (
	"maps"
	"math"
	"slices"

	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve"
)

// Times is a read-only view of one measured quantity of a state (a response
// time or a CPU time, in seconds): its count, moments and quantiles. The zero
// Times is empty.
type Times struct{ s *sample }

// Count is the number of values.
func (t Times) Count() int64 {
	if t.s == nil {
		return 0
	}
	return t.s.n
}

// Sum is the sum of the values.
func (t Times) Sum() float64 {
	if t.s == nil {
		return 0
	}
	return t.s.sum
}

// SumSquares is the sum of the squared values.
func (t Times) SumSquares() float64 {
	if t.s == nil {
		return 0
	}
	return t.s.sq
}

// Mean is the mean value (0 when empty).
func (t Times) Mean() float64 {
	if t.s == nil {
		return 0
	}
	return t.s.mean()
}

// StdDev is the sample standard deviation (0 with fewer than two values).
func (t Times) StdDev() float64 {
	if t.s == nil {
		return 0
	}
	return math.Sqrt(t.s.variance())
}

// Quantile returns the q-quantile (0 ≤ q ≤ 1) from the sketch, within 1 %
// of the true value; 0 when empty.
func (t Times) Quantile(q float64) float64 {
	if t.s == nil {
		return 0
	}
	return t.s.quantile(q)
}

// Summary gives the mean and the percentiles as a result's Times (0 when
// empty).
func (t Times) Summary() solve.Times {
	if t.s == nil {
		return solve.Times{}
	}
	return times(t.s)
}

// Entries returns the entry operations (`component/operation`) of the
// requests folded into the state, sorted.
func (s *State) Entries() []string { return slices.Sorted(maps.Keys(s.entries)) }

// Operations returns the operations (`component/operation`) seen in the
// state, sorted.
func (s *State) Operations() []string { return slices.Sorted(maps.Keys(s.ops)) }

// EntryTimes returns the response times of the requests that entered at
// the operation entry (the duration of the entry span); ok is false when no
// request entered there.
func (s *State) EntryTimes(entry string) (t Times, ok bool) {
	e := s.entries[entry]
	if e == nil {
		return Times{}, false
	}
	return Times{e.resp}, true
}

// EntriesTimes returns the response times of the requests that entered at
// any of the given operations, merged; ok is false when none did.
func (s *State) EntriesTimes(entries []string) (t Times, ok bool) {
	if len(entries) == 1 {
		return s.EntryTimes(entries[0])
	}
	merged := newSample()
	for _, id := range entries {
		if e := s.entries[id]; e != nil {
			merged.merge(e.resp)
			ok = true
		}
	}
	if !ok {
		return Times{}, false
	}
	return Times{merged}, true
}

// WorkloadEntries returns the operations at which a workload's requests
// enter, as traces show them: the target of its first call, or, when it
// starts with a branch whose every branch starts with a call, the targets
// of those calls (a mix of requests, as the session workload is). Leading
// delay steps are passed over. It returns nil for a workload that starts
// otherwise.
func WorkloadEntries(w *model.Workload) []string {
	for _, st := range w.Steps {
		switch st.Kind {
		case model.StepDelay:
			continue
		case model.StepCall:
			return []string{st.Target}
		case model.StepBranch:
			var out []string
			for _, b := range st.Branches {
				if len(b.Steps) == 0 || b.Steps[0].Kind != model.StepCall {
					return nil
				}
				if !slices.Contains(out, b.Steps[0].Target) {
					out = append(out, b.Steps[0].Target)
				}
			}
			return out
		}
		return nil
	}
	return nil
}

// OperationTimes returns the response times of every execution of the
// operation id; ok is false when the operation was not seen.
func (s *State) OperationTimes(id string) (t Times, ok bool) {
	op := s.ops[id]
	if op == nil {
		return Times{}, false
	}
	return Times{op.resp}, true
}

// OperationCPU returns the measured CPU times of the operation's
// executions that carried one; ok is false when the operation was not seen.
// Count is below the operation's executions when some lacked a CPU time.
func (s *State) OperationCPU(id string) (t Times, ok bool) {
	op := s.ops[id]
	if op == nil {
		return Times{}, false
	}
	return Times{op.cpu}, true
}

// Bunching is how an operation's executions gather in requests.
type Bunching struct {
	// Requests counts the requests of the classes (entry operations) that
	// ran the operation, whether or not each request did.
	Requests int64
	// CountSq and CPUSq are the sums over requests of the squares of the
	// request's executions of the operation and of their CPU time in
	// seconds; both are 0 for a state saved without them.
	CountSq, CPUSq float64
}

// OperationBunching gives how an operation's executions gather in
// requests. When requests arrive as a Poisson stream, CountSq and CPUSq are
// the variances of the operation's count and total CPU time (compound
// Poisson); given the number of requests, less the square of the sum over
// Requests. An operation run several times per request varies more than
// its count alone says.
func (s *State) OperationBunching(id string) (b Bunching, ok bool) {
	op := s.ops[id]
	if op == nil {
		return Bunching{}, false
	}
	for class := range op.variants {
		if e := s.entries[class]; e != nil {
			b.Requests += e.count
		}
	}
	b.CountSq, b.CPUSq = op.countSq, op.cpuSq
	return b, true
}

// Duration is the observed time over which the requests arrived, in
// seconds: from the first to the last arrival, widened by one mean
// interarrival time, less the idle stretches (pauses far longer than the
// rate explains). It is 0 with fewer than two requests. The rates in models
// and in Measured are counts over Duration times Kept.
func (s *State) Duration() float64 { return s.covered() }

// Machines returns the machines (the host.name of its spans) the
// operations of a component ran on, sorted; none when its spans name no
// host.
func (s *State) Machines(component string) []string {
	pl := s.placement[component]
	if pl == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(pl.hosts))
}
