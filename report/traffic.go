package report

import (
	"cmp"
	"maps"
	"slices"

	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve"
)

// Call is one edge of the architecture: the calls (or asynchronous sends)
// per second from a component, or from a workload's users, to a component,
// at the observed load.
type Call struct {
	// From is the calling component; empty when the calls come from the
	// users of Workload.
	From     string `json:"from,omitempty"`
	Workload string `json:"workload,omitempty"`
	To       string `json:"to"`
	// Rate is in calls per second.
	Rate  float64 `json:"rate"`
	Async bool    `json:"async"`
}

// OperationLoad is what one execution of an operation does by itself, not
// counting what the operations it calls do.
type OperationLoad struct {
	// CPU is the expected CPU time per execution, in seconds of the host's
	// CPU (demands divided by its speed).
	CPU float64 `json:"cpu"`
	// Delay is the expected pure delay per execution (delay steps: services
	// outside the model, off-CPU waits), in seconds.
	Delay float64 `json:"delay"`
}

// ownLoad accumulates what the steps of one operation do by themselves.
type ownLoad struct {
	cpu, delay float64
	calls      map[string]float64 // target operation → expected calls
	sends      map[string]float64 // target operation → expected sends
}

// maxWalkDepth guards the step recursion against models that were not
// validated.
const maxWalkDepth = 256

// walkOwn adds the expected own work and outgoing calls of steps, run weight
// times, on host h (nil for a workload's own steps), as seen by workload w.
func walkOwn(steps []model.Step, h *model.Host, w *model.Workload, weight float64, out *ownLoad, depth int) {
	if depth > maxWalkDepth || weight == 0 {
		return
	}
	for i := range steps {
		s := &steps[i]
		switch s.Kind {
		case model.StepCPU:
			speed := 1.0
			if h != nil && h.CPU.Speed > 0 {
				speed = h.CPU.Speed
			}
			out.cpu += weight * s.Demand.Mean() / speed
		case model.StepDelay:
			out.delay += weight * s.Demand.Mean()
		case model.StepCall:
			out.calls[s.Target] += weight
		case model.StepSend:
			out.sends[s.Target] += weight
		case model.StepLoop:
			walkOwn(s.Steps, h, w, weight*s.Times.Mean(), out, depth+1)
		case model.StepBranch:
			for _, b := range s.Branches {
				walkOwn(b.Steps, h, w, weight*b.P, out, depth+1)
			}
		case model.StepParallel:
			for _, list := range s.Parallel {
				walkOwn(list, h, w, weight, out, depth+1)
			}
		case model.StepHold:
			walkOwn(s.Steps, h, w, weight, out, depth+1)
		case model.StepSwitch:
			for _, c := range s.Alternatives(w) {
				walkOwn(c.Steps, h, w, weight*c.P, out, depth+1)
			}
		}
	}
}

// workloadRate is the request rate of a workload at the observed load: the
// open rate, or the throughput a solver found for a closed workload.
func workloadRate(w *model.Workload, res *solve.Result) float64 {
	if res != nil {
		if wr := res.Workloads[w.Name]; wr != nil && res.Stable {
			return wr.Throughput
		}
	}
	if w.Open != nil {
		return w.Open.Rate
	}
	return 0
}

// traffic computes the architecture's call edges at the observed load and
// the own load per execution of every operation, averaged over the
// workloads by how often each runs it. res gives closed workloads' rates.
func traffic(m *model.Model, res *solve.Result) ([]Call, map[string]OperationLoad) {
	type edgeKey struct {
		from, workload, to string
		async              bool
	}
	edges := map[edgeKey]float64{}
	type acc struct{ cpu, delay, visits float64 }
	loads := map[string]*acc{}
	for _, w := range m.Workloads {
		rate := workloadRate(w, res)
		own := &ownLoad{calls: map[string]float64{}, sends: map[string]float64{}}
		walkOwn(w.Steps, nil, w, 1, own, 0)
		for target, n := range own.calls {
			if op := m.Operation(target); op != nil {
				edges[edgeKey{workload: w.Name, to: op.Component}] += rate * n
			}
		}
		for target, n := range own.sends {
			if op := m.Operation(target); op != nil {
				edges[edgeKey{workload: w.Name, to: op.Component, async: true}] += rate * n
			}
		}
		d := m.Demands(w)
		for _, id := range slices.Sorted(maps.Keys(d.Visits)) {
			visits := d.Visits[id]
			op := m.Operation(id)
			if op == nil {
				continue
			}
			var h *model.Host
			if c := m.Component(op.Component); c != nil {
				h = m.Host(c.Host)
			}
			own := &ownLoad{calls: map[string]float64{}, sends: map[string]float64{}}
			walkOwn(op.Steps, h, w, 1, own, 0)
			a := loads[id]
			if a == nil {
				a = &acc{}
				loads[id] = a
			}
			weight := visits
			if rate > 0 {
				weight = visits * rate
			}
			a.cpu += weight * own.cpu
			a.delay += weight * own.delay
			a.visits += weight
			for target, n := range own.calls {
				if to := m.Operation(target); to != nil {
					edges[edgeKey{from: op.Component, to: to.Component}] += rate * visits * n
				}
			}
			for target, n := range own.sends {
				if to := m.Operation(target); to != nil {
					edges[edgeKey{from: op.Component, to: to.Component, async: true}] += rate * visits * n
				}
			}
		}
	}
	// Operations no workload reaches still get their own load, seen by no
	// workload.
	for _, c := range m.Components {
		for _, op := range c.Operations {
			if _, ok := loads[op.ID()]; ok {
				continue
			}
			own := &ownLoad{calls: map[string]float64{}, sends: map[string]float64{}}
			walkOwn(op.Steps, m.Host(c.Host), nil, 1, own, 0)
			loads[op.ID()] = &acc{cpu: own.cpu, delay: own.delay, visits: 1}
		}
	}
	keys := slices.SortedFunc(maps.Keys(edges), func(a, b edgeKey) int {
		switch {
		case a.workload != b.workload:
			return cmp.Compare(a.workload, b.workload)
		case a.from != b.from:
			return cmp.Compare(a.from, b.from)
		case a.to != b.to:
			return cmp.Compare(a.to, b.to)
		case a.async != b.async:
			if a.async {
				return 1
			}
			return -1
		}
		return 0
	})
	calls := make([]Call, 0, len(keys))
	for _, k := range keys {
		calls = append(calls, Call{From: k.from, Workload: k.workload, To: k.to, Rate: edges[k], Async: k.async})
	}
	out := make(map[string]OperationLoad, len(loads))
	for id, a := range loads {
		if a.visits > 0 {
			out[id] = OperationLoad{CPU: a.cpu / a.visits, Delay: a.delay / a.visits}
		}
	}
	return calls, out
}
