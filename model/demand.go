package model

import (
	"sort"
	"strings"
)

// Demands is the expected load one request of a workload puts on the system:
// how often it reaches each operation and how much service it asks of each
// resource. Expectations run through loops (mean count), branches and
// switches (probabilities), parallel blocks (every list), synchronous calls
// and asynchronous sends. They are the visit counts and service demands of the
// queueing network the model stands for.
type Demands struct {
	// Visits is the expected number of executions of each operation
	// (`component/operation`) per request.
	Visits map[string]float64
	// Service is the expected service time per request at each active
	// resource (`HOST.cpu`, `HOST.disk.NAME`), summed over the host's replicas,
	// with CPU demands divided by the host's speed.
	Service map[string]float64
	// Delay is the expected total pure delay per request (delay steps).
	Delay float64
	// Holds is the expected number of acquisitions of each passive resource
	// per request (hold steps and acquire steps).
	Holds map[string]float64
}

// Demands computes the expected demands of one request of workload w. The
// model must be valid (no call cycles).
func (m *Model) Demands(w *Workload) *Demands {
	a := &demandWalk{m: m, w: w, out: &Demands{
		Visits:  map[string]float64{},
		Service: map[string]float64{},
		Holds:   map[string]float64{},
	}, fixed: map[string]string{}, memo: map[string]*Demands{}}
	a.steps(w.Steps, nil, 1)
	return a.out
}

// OperationDemands computes the expected demands of one execution of op,
// including what its calls and sends cause, as seen by workload w (which
// decides the switches; nil takes every switch's default).
func (m *Model) OperationDemands(op *Operation, w *Workload) *Demands {
	a := &demandWalk{m: m, w: w, out: &Demands{
		Visits:  map[string]float64{},
		Service: map[string]float64{},
		Holds:   map[string]float64{},
	}, fixed: map[string]string{}, memo: map[string]*Demands{}}
	a.operation(op, 1, 0)
	return a.out
}

type demandWalk struct {
	m   *Model
	w   *Workload
	out *Demands
	// memo holds the demands of one execution of an operation, by operation
	// and the parameter values fixed when it runs, so that a model whose
	// calls fan out and join again is walked in time linear in its size.
	memo map[string]*Demands
	// fixed holds the parameter values decided by enclosing switches: a
	// request draws each parameter once, so a switch inside a case of a
	// switch on the same parameter has no choice left.
	fixed map[string]string
}

// maxDemandDepth guards the recursion against models that were not validated.
const maxDemandDepth = 256

func (a *demandWalk) operation(op *Operation, weight float64, depth int) {
	if depth > maxDemandDepth || weight == 0 {
		return
	}
	if depth == 0 {
		a.out.Visits[op.ID()] += weight
		a.stepsAt(op.Steps, a.m.Component(op.Component), weight, depth+1)
		return
	}
	key := a.memoKey(op)
	one, ok := a.memo[key]
	if !ok {
		sub := &demandWalk{m: a.m, w: a.w, memo: a.memo, fixed: a.fixed, out: &Demands{
			Visits:  map[string]float64{},
			Service: map[string]float64{},
			Holds:   map[string]float64{},
		}}
		sub.out.Visits[op.ID()] = 1
		sub.stepsAt(op.Steps, a.m.Component(op.Component), 1, depth)
		one = sub.out
		a.memo[key] = one
	}
	for k, v := range one.Visits {
		a.out.Visits[k] += weight * v
	}
	for k, v := range one.Service {
		a.out.Service[k] += weight * v
	}
	for k, v := range one.Holds {
		a.out.Holds[k] += weight * v
	}
	a.out.Delay += weight * one.Delay
}

func (a *demandWalk) memoKey(op *Operation) string {
	if len(a.fixed) == 0 {
		return op.ID()
	}
	names := make([]string, 0, len(a.fixed))
	for k := range a.fixed {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString(op.ID())
	for _, k := range names {
		b.WriteString("\x00" + k + "=" + a.fixed[k])
	}
	return b.String()
}

func (a *demandWalk) steps(steps []Step, c *Component, weight float64) {
	a.stepsAt(steps, c, weight, 0)
}

func (a *demandWalk) stepsAt(steps []Step, c *Component, weight float64, depth int) {
	if weight == 0 {
		return
	}
	for i := range steps {
		a.step(&steps[i], c, weight, depth)
	}
}

func (a *demandWalk) host(c *Component) *Host {
	if c == nil {
		return nil
	}
	return a.m.Host(c.Host)
}

func (a *demandWalk) step(s *Step, c *Component, weight float64, depth int) {
	switch s.Kind {
	case StepCPU:
		if h := a.host(c); h != nil {
			speed := h.CPU.Speed
			if speed <= 0 {
				speed = 1
			}
			a.out.Service[CPUResource(h.Name)] += weight * s.Demand.Mean() / speed
		}
	case StepDisk:
		if h := a.host(c); h != nil {
			if d := h.Disk(s.Disk); d != nil {
				a.out.Service[DiskResource(h.Name, d.Name)] += weight * s.Demand.Mean()
			}
		}
	case StepDelay:
		a.out.Delay += weight * s.Demand.Mean()
	case StepCall, StepSend:
		if op := a.m.Operation(s.Target); op != nil {
			a.operation(op, weight, depth+1)
		}
	case StepLoop:
		a.stepsAt(s.Steps, c, weight*s.Times.Mean(), depth)
	case StepBranch:
		for _, b := range s.Branches {
			a.stepsAt(b.Steps, c, weight*b.P, depth)
		}
	case StepParallel:
		for _, list := range s.Parallel {
			a.stepsAt(list, c, weight, depth)
		}
	case StepHold:
		a.out.Holds[s.Resource] += weight
		a.stepsAt(s.Steps, c, weight, depth)
	case StepAcquire:
		a.out.Holds[s.Resource] += weight
	case StepRelease:
	case StepSwitch:
		a.switchStep(s, c, weight, depth)
	}
}

func (a *demandWalk) switchStep(s *Step, c *Component, weight float64, depth int) {
	pick := func(value string) []Step {
		for _, cs := range s.Cases {
			if cs.Value == value {
				return cs.Steps
			}
		}
		return s.Default
	}
	if s.On == "class" {
		if a.w == nil {
			a.stepsAt(s.Default, c, weight, depth)
			return
		}
		a.stepsAt(pick(a.w.Name), c, weight, depth)
		return
	}
	if v, ok := a.fixed[s.On]; ok {
		a.stepsAt(pick(v), c, weight, depth)
		return
	}
	var p *Param
	if a.w != nil {
		p = a.w.Param(s.On)
	}
	if p == nil {
		a.stepsAt(s.Default, c, weight, depth)
		return
	}
	for i, v := range p.Values {
		a.fixed[s.On] = v
		a.stepsAt(pick(v), c, weight*p.Probs[i], depth)
	}
	delete(a.fixed, s.On)
}

// Servers is the number of servers of an active resource (`HOST.cpu` or
// `HOST.disk.NAME`) over all replicas of its host, or 0 when the name is
// unknown.
func (m *Model) Servers(resource string) int {
	for _, h := range m.Hosts {
		if resource == CPUResource(h.Name) {
			return h.CPU.Cores * h.Replicas
		}
		for _, d := range h.Disks {
			if resource == DiskResource(h.Name, d.Name) {
				return d.Servers * h.Replicas
			}
		}
	}
	return 0
}

// Alternative is one body a switch step may take, with its probability.
type Alternative struct {
	Steps []Step
	P     float64
}

// Alternatives lists the bodies a switch step takes for requests of
// workload w, with their probabilities: the case of the workload's name for
// `on: class`, the cases of the parameter's values weighted by its
// distribution, or the default (for a nil w, or a parameter w does not
// declare). Nested switches on one parameter are treated as independent
// draws; Demands keeps them consistent.
func (s *Step) Alternatives(w *Workload) []Alternative {
	pick := func(v string) []Step {
		for _, c := range s.Cases {
			if c.Value == v {
				return c.Steps
			}
		}
		return s.Default
	}
	if w == nil {
		return []Alternative{{s.Default, 1}}
	}
	if s.On == "class" {
		return []Alternative{{pick(w.Name), 1}}
	}
	p := w.Param(s.On)
	if p == nil {
		return []Alternative{{s.Default, 1}}
	}
	out := make([]Alternative, len(p.Values))
	for i, v := range p.Values {
		out[i] = Alternative{pick(v), p.Probs[i]}
	}
	return out
}
