package extract

import (
	"maps"
	"slices"

	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve"
)

// Measured returns what the traces folded into the state measured, in the
// form of a solver's result (solver "measured"), so that predictions can be
// compared with it key by key: per workload (named as Model names them) and
// per operation the throughput and the response-time mean and percentiles;
// per host CPU, when spans carry CPU times, the utilization the measured CPU
// demand implies on the hosts and cores of m (with the CPU time outside spans
// that metrics measured, when m models it). A workload is measured on the
// requests that entered at its entries (WorkloadEntries); entry operations
// that m has no workload for are left out of the workloads.
func (s *State) Measured(m *model.Model) *solve.Result {
	r := solve.NewResult(m, "measured")
	span := s.span()
	if span <= 0 {
		r.Warnings = append(r.Warnings, "fewer than two requests: no rates measured")
		return r
	}
	if ss := s.sessions; ss != nil && m.Workload(sessionWorkload) != nil {
		r.Workloads[sessionWorkload] = &solve.WorkloadResult{Throughput: float64(ss.requests) / span, ResponseTime: times(ss.resp)}
	}
	for _, w := range m.Workloads {
		if r.Workloads[w.Name] != nil {
			continue
		}
		if t, ok := s.EntriesTimes(WorkloadEntries(w)); ok {
			r.Workloads[w.Name] = &solve.WorkloadResult{Throughput: float64(t.Count()) / span, ResponseTime: times(t.s)}
		}
	}
	busy := map[string]float64{}
	cpuKnown := map[string]bool{}
	// In name order: sums in a fixed order, the same figures every run.
	ids := slices.Sorted(maps.Keys(s.ops))
	for _, id := range ids {
		op := s.ops[id]
		r.Operations[id] = &solve.OperationResult{Throughput: float64(op.count) / span, ResponseTime: times(op.resp)}
		c := m.Component(op.component)
		if c == nil {
			continue
		}
		res := model.CPUResource(c.Host)
		if op.cpu.n == op.count && op.count > 0 {
			busy[res] += op.cpu.sum / span
			if _, seen := cpuKnown[res]; !seen {
				cpuKnown[res] = true
			}
		} else {
			cpuKnown[res] = false
		}
	}
	// The CPU the spans missed, as metrics measured it, which the model
	// adds to every execution whose spans carry CPU times.
	for _, id := range ids {
		op := s.ops[id]
		d := s.unattributed[op.component].of(op.cpu.mean())
		c := m.Component(op.component)
		if d <= 0 || c == nil || op.cpu.n != op.count {
			continue
		}
		if res := model.CPUResource(c.Host); cpuKnown[res] {
			busy[res] += d * float64(op.count) / span
		}
	}
	for res, b := range busy {
		if !cpuKnown[res] {
			continue
		}
		if n := m.Servers(res); n > 0 {
			r.Resources[res] = &solve.ResourceResult{Utilization: b / float64(n), Busy: b}
		}
	}
	return r
}

// times summarizes a sample as a result's Times.
func times(s *sample) solve.Times {
	return solve.Times{
		Mean: s.mean(),
		P50:  solve.Float(s.quantile(0.5)),
		P90:  solve.Float(s.quantile(0.9)),
		P95:  solve.Float(s.quantile(0.95)),
		P99:  solve.Float(s.quantile(0.99)),
	}
}
