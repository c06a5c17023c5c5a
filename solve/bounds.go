package solve

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/perfcast/perfcast/model"
)

// Bound is what the utilization law says about a model's open workloads
// before any solving: the load each resource carries from the open arrivals
// alone, and whether some resource cannot carry it.
type Bound struct {
	// Utilization is, per resource, the fraction of its capacity the open
	// workloads need: Σ rate × demand / servers (for a CPU with a limit,
	// over the cores the limit allows, model.CPU.Capacity). For thread pools and passive
	// resources the demand is a lower bound on the holding time (the work done
	// while holding, without any queueing), so a value ≥ 1 is a certain
	// overload while a value below 1 is no promise.
	Utilization map[string]float64
	// Stable is false when some resource's utilization reaches 1.
	Stable bool
	// Bottleneck is the resource with the highest utilization ("" when no
	// open workload puts load anywhere).
	Bottleneck string
	// Saturation, when not Stable, gives the open rates at which the
	// bottleneck reaches full utilization, every open rate scaled alike.
	Saturation *Saturation

	capacity map[string]float64
	servers  map[string]int
}

// Overload writes into res, for a model the bound finds unstable, what a
// solver can say without solving it: unstable, the bottleneck, the rates
// at which it saturates, and per resource what the open workloads ask of
// it (a utilization of 2 is twice what it can serve).
func (b *Bound) Overload(res *Result) {
	res.Stable = false
	res.Bottleneck, res.Saturation = b.Bottleneck, b.Saturation
	if res.Resources == nil {
		res.Resources = map[string]*ResourceResult{}
	}
	for r, u := range b.Utilization {
		rr := &ResourceResult{Utilization: u, Busy: u * b.capacity[r]}
		if n := float64(b.servers[r]); n > b.capacity[r] {
			rr.Utilization, rr.LimitUtilization = rr.Busy/n, &u
		}
		res.Resources[r] = rr
	}
	res.Warnings = append(res.Warnings, fmt.Sprintf(
		"the open workloads need %.3g times what %s can serve (utilization law): there is no steady state; utilizations and busy servers are what they ask of each resource",
		b.Utilization[b.Bottleneck], b.Bottleneck))
}

// Bounds applies the utilization law to the open workloads of a valid model.
// Closed workloads are left out: they are always stable.
func Bounds(m *model.Model) *Bound {
	capacity, servers := map[string]float64{}, map[string]int{}
	eachResource(m, func(name string, n, replicas int) { servers[name] = n * replicas })
	for name, n := range servers {
		capacity[name] = float64(n)
	}
	for _, h := range m.Hosts {
		capacity[model.CPUResource(h.Name)] = h.CPU.Capacity() * float64(h.Replicas)
	}
	b := &Bound{Utilization: map[string]float64{}, Stable: true, capacity: capacity, servers: servers}
	for _, w := range m.Workloads {
		if w.Open == nil || w.Open.Rate == 0 {
			continue
		}
		bw := &boundWalk{m: m, w: w, minMemo: map[*model.Operation]float64{}, holdMemo: map[*model.Operation]map[string]float64{}}
		d := m.Demands(w)
		for r, s := range d.Service {
			if n := capacity[r]; n > 0 {
				b.Utilization[r] += w.Open.Rate * s / n
			}
		}
		// Thread pools: every execution of an operation holds a thread
		// for at least its own work.
		ids := slices.Sorted(maps.Keys(d.Visits))
		for _, id := range ids {
			op := m.Operation(id)
			c := m.Component(op.Component)
			if c == nil || c.Threads == model.Unlimited {
				continue
			}
			t := bw.minOperationTime(op, 0)
			r := model.ThreadsResource(c.Name)
			b.Utilization[r] += w.Open.Rate * d.Visits[id] * t / capacity[r]
		}
		// Passive resources held by hold steps: at least the work inside.
		holdTimes := map[string]float64{}
		bw.collectHolds(w.Steps, nil, 1, holdTimes, 0)
		for r, t := range holdTimes {
			if n := capacity[r]; n > 0 {
				b.Utilization[r] += w.Open.Rate * t / n
			}
		}
	}
	var top float64
	for _, r := range slices.Sorted(maps.Keys(b.Utilization)) {
		if u := b.Utilization[r]; u > top {
			top, b.Bottleneck = u, r
		}
	}
	if top >= 1 {
		b.Stable = false
		at := map[string]float64{}
		for _, w := range m.Workloads {
			if w.Open != nil && w.Open.Rate > 0 {
				at["workload."+w.Name+".open.rate"] = w.Open.Rate / top
			}
		}
		b.Saturation = &Saturation{Resource: b.Bottleneck, At: at}
	}
	return b
}

// Resources lists, sorted, the resources a result of m reports: every
// host's CPU and disks, the threads of components with a limit, the
// passive resources.
func Resources(m *model.Model) []string {
	var out []string
	eachResource(m, func(name string, _, _ int) { out = append(out, name) })
	slices.Sort(out)
	return out
}

// eachResource calls f with every resource of m, the servers of one replica
// and the replicas.
func eachResource(m *model.Model, f func(name string, servers, replicas int)) {
	for _, h := range m.Hosts {
		f(model.CPUResource(h.Name), h.CPU.Cores, h.Replicas)
		for _, d := range h.Disks {
			f(model.DiskResource(h.Name, d.Name), d.Servers, h.Replicas)
		}
	}
	for _, comp := range m.Components {
		if comp.Threads != model.Unlimited {
			replicas := 1
			if h := m.Host(comp.Host); h != nil {
				replicas = h.Replicas
			}
			f(model.ThreadsResource(comp.Name), comp.Threads, replicas)
		}
	}
	for _, p := range m.Passive {
		replicas := 1
		if h := m.Host(p.Host); h != nil && p.Host != "" {
			replicas = h.Replicas
		}
		f(p.Name, p.Capacity, replicas)
	}
}

// NoLoad is the warning of a result whose model sends no requests.
const NoLoad = "no workload sends requests (all open rates and user counts are zero)"

// HasLoad reports whether some workload of m sends requests.
func HasLoad(m *model.Model) bool {
	for _, w := range m.Workloads {
		if w.Open != nil && w.Open.Rate > 0 || w.Closed != nil && w.Closed.Users > 0 {
			return true
		}
	}
	return false
}

// FillIdle writes the result of a model that sends no requests, whichever
// solver is asked: every workload and resource, at zero, and the NoLoad
// warning. No response time is given, for there is no request.
func FillIdle(res *Result, m *model.Model) {
	res.Warnings = append(res.Warnings, NoLoad)
	for _, w := range m.Workloads {
		res.Workloads[w.Name] = &WorkloadResult{}
	}
	eachResource(m, func(name string, _, replicas int) {
		rr := &ResourceResult{}
		if replicas > 1 {
			rr.PerReplica = make([]float64, replicas)
		}
		res.Resources[name] = rr
	})
}

// maxBoundDepth guards the recursions below.
const maxBoundDepth = 256

// boundWalk computes lower bounds of holding times for one workload, each
// operation once.
type boundWalk struct {
	m        *model.Model
	w        *model.Workload
	minMemo  map[*model.Operation]float64
	holdMemo map[*model.Operation]map[string]float64
}

// minOperationTime is a lower bound on the mean time one execution of op
// takes: its service and delays without any queueing, the longest list of a
// parallel block, synchronous calls included, sends free.
func (b *boundWalk) minOperationTime(op *model.Operation, depth int) float64 {
	if depth > maxBoundDepth {
		return 0
	}
	if t, ok := b.minMemo[op]; ok {
		return t
	}
	t := b.minStepsTime(b.m.Component(op.Component), op.Steps, depth)
	b.minMemo[op] = t
	return t
}

func (b *boundWalk) minStepsTime(c *model.Component, steps []model.Step, depth int) float64 {
	var t float64
	for i := range steps {
		t += b.minStepTime(c, &steps[i], depth)
	}
	return t
}

func (b *boundWalk) minStepTime(c *model.Component, s *model.Step, depth int) float64 {
	m, w := b.m, b.w
	switch s.Kind {
	case model.StepCPU:
		speed := 1.0
		if c != nil {
			if h := m.Host(c.Host); h != nil && h.CPU.Speed > 0 {
				speed = h.CPU.Speed
			}
		}
		return s.Demand.Mean() / speed
	case model.StepDisk, model.StepDelay:
		return s.Demand.Mean()
	case model.StepCall:
		if op := m.Operation(s.Target); op != nil {
			return b.minOperationTime(op, depth+1)
		}
	case model.StepLoop:
		return s.Times.Mean() * b.minStepsTime(c, s.Steps, depth)
	case model.StepBranch:
		var t float64
		for _, br := range s.Branches {
			t += br.P * b.minStepsTime(c, br.Steps, depth)
		}
		return t
	case model.StepParallel:
		var t float64
		for _, list := range s.Parallel {
			t = math.Max(t, b.minStepsTime(c, list, depth))
		}
		return t
	case model.StepHold:
		return b.minStepsTime(c, s.Steps, depth)
	case model.StepSwitch:
		var t float64
		for _, ws := range s.Alternatives(w) {
			t += ws.P * b.minStepsTime(c, ws.Steps, depth)
		}
		return t
	}
	return 0
}

// collectHolds adds, per passive resource, the expected holding time per
// request implied by hold steps (the minimal time of their bodies), weighted
// by how often they run.
func (b *boundWalk) collectHolds(steps []model.Step, c *model.Component, weight float64, out map[string]float64, depth int) {
	m := b.m
	if depth > maxBoundDepth || weight == 0 {
		return
	}
	for i := range steps {
		s := &steps[i]
		switch s.Kind {
		case model.StepHold:
			out[s.Resource] += weight * float64(s.Units) * b.minStepsTime(c, s.Steps, depth)
			b.collectHolds(s.Steps, c, weight, out, depth)
		case model.StepCall, model.StepSend:
			if op := m.Operation(s.Target); op != nil {
				one, ok := b.holdMemo[op]
				if !ok {
					one = map[string]float64{}
					b.collectHolds(op.Steps, m.Component(op.Component), 1, one, depth+1)
					b.holdMemo[op] = one
				}
				for r, t := range one {
					out[r] += weight * t
				}
			}
		case model.StepLoop:
			b.collectHolds(s.Steps, c, weight*s.Times.Mean(), out, depth)
		case model.StepBranch:
			for _, br := range s.Branches {
				b.collectHolds(br.Steps, c, weight*br.P, out, depth)
			}
		case model.StepParallel:
			for _, list := range s.Parallel {
				b.collectHolds(list, c, weight, out, depth)
			}
		case model.StepSwitch:
			for _, ws := range s.Alternatives(b.w) {
				b.collectHolds(ws.Steps, c, weight*ws.P, out, depth)
			}
		}
	}
}
