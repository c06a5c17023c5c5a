package model

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// Validate checks the rules of the model format that span more than one
// value: references name something that exists, calls form no cycle, every
// path releases what it acquires, values are in range. Every problem found is
// returned as Errors, in file order.
func (m *Model) Validate() error {
	v := &validator{m: m, errorSink: errorSink{file: m.File}}
	v.run()
	sort.SliceStable(v.errs, func(i, j int) bool { return v.errs[i].Pos.Line < v.errs[j].Pos.Line })
	return v.err()
}

type validator struct {
	m *Model
	errorSink
	// paramValues holds, per parameter name, every value some workload
	// declares for it.
	paramValues map[string]map[string]bool
}

func (v *validator) run() {
	m := v.m
	if m.Version != Version {
		v.add(Pos{}, "unsupported model version %d; this perfcast reads version %d", m.Version, Version)
	}
	v.unique()
	for _, h := range m.Hosts {
		v.host(h)
	}
	v.paramValues = map[string]map[string]bool{}
	for _, w := range m.Workloads {
		for _, p := range w.Params {
			if v.paramValues[p.Name] == nil {
				v.paramValues[p.Name] = map[string]bool{}
			}
			for _, val := range p.Values {
				v.paramValues[p.Name][val] = true
			}
		}
	}
	for _, c := range m.Components {
		v.component(c)
	}
	for _, p := range m.Passive {
		if p.Capacity < 1 {
			v.add(p.Pos, "capacity must be at least 1, found %d", p.Capacity)
		}
		if p.Host != "" && m.Host(p.Host) == nil {
			v.add(p.Pos, "host %q does not exist (hosts: %s)", p.Host, v.names("hosts"))
		}
	}
	for _, w := range m.Workloads {
		v.workload(w)
	}
	v.cycles()
}

// unique reports names given twice, which decoding cannot produce but models
// built in memory can.
func (v *validator) unique() {
	check := func(kind string, names []string, poss []Pos) {
		seen := map[string]bool{}
		for i, n := range names {
			if n == "" {
				v.add(poss[i], "a %s needs a name", kind)
			}
			if seen[n] {
				v.add(poss[i], "duplicate %s name %q", kind, n)
			}
			seen[n] = true
		}
	}
	var names []string
	var poss []Pos
	for _, h := range v.m.Hosts {
		names, poss = append(names, h.Name), append(poss, h.Pos)
	}
	check("host", names, poss)
	names, poss = nil, nil
	for _, c := range v.m.Components {
		names, poss = append(names, c.Name), append(poss, c.Pos)
		if strings.Contains(c.Name, "/") {
			v.add(c.Pos, "a component name may not contain '/', which separates it from the operation in references")
		}
		var on []string
		var op []Pos
		for _, o := range c.Operations {
			on, op = append(on, o.Name), append(op, o.Pos)
		}
		check("operation", on, op)
	}
	check("component", names, poss)
	names, poss = nil, nil
	for _, p := range v.m.Passive {
		names, poss = append(names, p.Name), append(poss, p.Pos)
	}
	check("passive resource", names, poss)
	names, poss = nil, nil
	for _, w := range v.m.Workloads {
		names, poss = append(names, w.Name), append(poss, w.Pos)
	}
	check("workload", names, poss)
}

// names lists the names of one section, for messages.
func (v *validator) names(section string) string {
	var out []string
	switch section {
	case "hosts":
		for _, h := range v.m.Hosts {
			out = append(out, h.Name)
		}
	case "passive":
		for _, p := range v.m.Passive {
			out = append(out, p.Name)
		}
	case "workload":
		for _, w := range v.m.Workloads {
			out = append(out, w.Name)
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

func (v *validator) host(h *Host) {
	if h.Replicas > MaxReplicas {
		v.add(h.Pos, "replicas: %d are more than perfcast solves (at most %d)", h.Replicas, MaxReplicas)
	}
	if h.Replicas < 1 {
		v.add(h.Pos, "replicas must be at least 1, found %d", h.Replicas)
	}
	switch h.Balancer {
	case RoundRobin, Random, LeastBusy, LeastOfTwo:
	default:
		v.add(h.Pos, "unknown balancer %q", h.Balancer)
	}
	if h.CPU.Cores < 1 {
		v.add(h.Pos, "cpu.cores must be at least 1, found %d", h.CPU.Cores)
	}
	if !(h.CPU.Speed > 0) {
		v.add(h.Pos, "cpu.speed must be positive, found %g", h.CPU.Speed)
	}
	if !(h.CPU.SpeedVariation >= 0 && h.CPU.SpeedVariation <= MaxSpeedVariation) {
		v.add(h.Pos, "cpu.speed_variation must lie in [0, %g], found %g", MaxSpeedVariation, h.CPU.SpeedVariation)
	}
	if w := h.CPU.SpeedWindow; w != 0 && !(w >= MinSpeedWindow && !math.IsInf(w, 0)) {
		v.add(h.Pos, "cpu.speed_window must be 0 or at least %s, found %s", FormatDuration(MinSpeedWindow), FormatDuration(w))
	}
	for i, pt := range h.CPU.SpeedCurve {
		if !(pt.Utilization >= 0 && pt.Utilization <= 1) {
			v.add(h.Pos, "cpu.speed_curve[%d].utilization must lie in [0, 1], found %g", i, pt.Utilization)
		}
		if !(pt.Factor > 0) || math.IsInf(pt.Factor, 0) {
			v.add(h.Pos, "cpu.speed_curve[%d].factor must be positive, found %g", i, pt.Factor)
		}
		if i > 0 && !(pt.Utilization > h.CPU.SpeedCurve[i-1].Utilization) {
			v.add(h.Pos, "cpu.speed_curve points must be in increasing utilization (point %d at %g follows %g)", i, pt.Utilization, h.CPU.SpeedCurve[i-1].Utilization)
		}
	}
	if l := h.CPU.Limit; l != 0 && !(l >= MinLimit && !math.IsInf(l, 0)) {
		v.add(h.Pos, "cpu.limit must be 0 (none) or at least %g cores, found %g", MinLimit, l)
	}
	if p := h.CPU.Period; p != 0 && !(p >= MinPeriod && p <= MaxPeriod) {
		v.add(h.Pos, "cpu.period must lie in [%s, %s], found %s", FormatDuration(MinPeriod), FormatDuration(MaxPeriod), FormatDuration(p))
	}
	switch h.CPU.Scheduling {
	case PS, FCFS:
	case RR:
		if !(h.CPU.Quantum > 0) {
			v.add(h.Pos, "cpu.scheduling rr needs a positive cpu.quantum")
		}
	default:
		v.add(h.Pos, "unknown CPU scheduling %q", h.CPU.Scheduling)
	}
	for _, d := range h.Disks {
		if d.Servers < 1 {
			v.add(d.Pos, "servers must be at least 1, found %d", d.Servers)
		}
		if d.Scheduling != FCFS && d.Scheduling != RandomOrder {
			v.add(d.Pos, "unknown disk scheduling %q", d.Scheduling)
		}
	}
}

func (v *validator) component(c *Component) {
	if c.Host == "" {
		v.add(c.Pos, "component has no host (add `host: NAME`)")
	} else if v.m.Host(c.Host) == nil {
		v.add(c.Pos, "host %q does not exist (hosts: %s)", c.Host, v.names("hosts"))
	}
	if c.Threads < 0 {
		v.add(c.Pos, "threads must be at least 1, found %d", c.Threads)
	}
	if c.Queue < QueueUnlimited {
		v.add(c.Pos, "queue must be at least 0, found %d", c.Queue)
	}
	if c.OnFull != Block && c.OnFull != Drop {
		v.add(c.Pos, "unknown on_full %q", c.OnFull)
	}
	for _, o := range c.Operations {
		ctx := &stepContext{component: c, host: v.m.Host(c.Host), where: o.Pos}
		v.steps(o.Steps, ctx)
		held := v.balance(o.Steps, holding{}, o.Pos)
		for _, r := range held.names() {
			v.add(o.Pos, "acquires %q without releasing it on some path", r)
		}
	}
}

func (v *validator) workload(w *Workload) {
	if w.Open != nil {
		if !(w.Open.Rate >= 0) {
			v.add(w.Pos, "open.rate must not be negative")
		}
		if !(w.Open.CV > 0) {
			v.add(w.Pos, "open.cv must be positive")
		}
	}
	if w.Closed != nil && w.Closed.Users < 0 {
		v.add(w.Pos, "closed.users must not be negative")
	}
	if w.Closed != nil && w.Closed.Users > MaxUsers {
		v.add(w.Pos, "closed.users: %d users are more than perfcast solves (at most %d); model so large a population as an open workload at its arrival rate", w.Closed.Users, MaxUsers)
	}
	for _, p := range w.Params {
		if len(p.Values) != len(p.Probs) || len(p.Values) == 0 {
			v.add(p.Pos, "a parameter needs values with probabilities")
			continue
		}
		sum := 0.0
		for _, pr := range p.Probs {
			if pr < 0 || pr > 1 {
				v.add(p.Pos, "a probability must lie in [0, 1], found %g", pr)
			}
			sum += pr
		}
		if !probSumOK(sum) {
			v.add(p.Pos, "probabilities sum to %g, not 1", sum)
		}
	}
	ctx := &stepContext{workload: w, where: w.Pos}
	v.steps(w.Steps, ctx)
	held := v.balance(w.Steps, holding{}, w.Pos)
	for _, r := range held.names() {
		v.add(w.Pos, "acquires %q without releasing it on some path", r)
	}
}

// stepContext says where a step list runs.
type stepContext struct {
	component *Component
	host      *Host
	workload  *Workload
	where     Pos
}

func (v *validator) steps(steps []Step, ctx *stepContext) {
	for i := range steps {
		v.step(&steps[i], ctx)
	}
}

func (v *validator) step(s *Step, ctx *stepContext) {
	switch s.Kind {
	case StepCPU, StepDisk:
		if ctx.component == nil {
			v.add(s.Pos, "%s runs on a host, and workload steps run on none; put it in an operation", s.Kind)
			return
		}
		v.demand(s)
		if s.Kind == StepDisk && ctx.host != nil && ctx.host.Disk(s.Disk) == nil {
			switch {
			case len(ctx.host.Disks) == 0:
				v.add(s.Pos, "host %q has no disks", ctx.host.Name)
			case s.Disk == "":
				v.add(s.Pos, "host %q has %d disks; name one (`disk: {name: NAME, demand: ...}`)", ctx.host.Name, len(ctx.host.Disks))
			default:
				var names []string
				for _, d := range ctx.host.Disks {
					names = append(names, d.Name)
				}
				v.add(s.Pos, "host %q has no disk %q (disks: %s)", ctx.host.Name, s.Disk, strings.Join(names, ", "))
			}
		}
	case StepDelay:
		v.demand(s)
	case StepCall, StepSend:
		if _, _, ok := SplitRef(s.Target); !ok {
			v.add(s.Pos, "%s target %q is not `component/operation`", s.Kind, s.Target)
		} else if v.m.Operation(s.Target) == nil {
			comp, _, _ := SplitRef(s.Target)
			if c := v.m.Component(comp); c == nil {
				v.add(s.Pos, "%s target %q: no component %q", s.Kind, s.Target, comp)
			} else {
				var ops []string
				for _, o := range c.Operations {
					ops = append(ops, o.Name)
				}
				v.add(s.Pos, "%s target %q: component %q has no such operation (operations: %s)", s.Kind, s.Target, comp, strings.Join(ops, ", "))
			}
		}
	case StepLoop:
		if s.Times.Mean() < 0 {
			v.add(s.Pos, "loop count must not be negative")
		}
		v.steps(s.Steps, ctx)
	case StepBranch:
		sum := 0.0
		for _, b := range s.Branches {
			if b.P < 0 || b.P > 1 {
				v.add(b.Pos, "a probability must lie in [0, 1], found %g", b.P)
			}
			sum += b.P
			v.steps(b.Steps, ctx)
		}
		if len(s.Branches) == 0 {
			v.add(s.Pos, "a branch needs at least one alternative")
		} else if !probSumOK(sum) {
			v.add(s.Pos, "branch probabilities sum to %g, not 1", sum)
		}
	case StepParallel:
		if len(s.Parallel) == 0 {
			v.add(s.Pos, "parallel needs at least one list of steps")
		}
		for _, list := range s.Parallel {
			v.steps(list, ctx)
		}
	case StepHold, StepAcquire, StepRelease:
		p := v.m.PassiveResource(s.Resource)
		if p == nil {
			v.add(s.Pos, "passive resource %q does not exist (passive: %s)", s.Resource, v.names("passive"))
		} else if s.Units < 1 || s.Units > p.Capacity {
			v.add(s.Pos, "units must lie between 1 and the capacity of %q (%d), found %d", p.Name, p.Capacity, s.Units)
		} else if p.Partitioned && s.Units != 1 {
			v.add(s.Pos, "units of %q, which is partitioned, must be 1 (each execution waits for one unit of its own), found %d", p.Name, s.Units)
		}
		v.steps(s.Steps, ctx)
	case StepSwitch:
		v.switchStep(s, ctx)
	default:
		v.add(s.Pos, "invalid step")
	}
}

func (v *validator) demand(s *Step) {
	if m := s.Demand.Mean(); !(m >= 0) {
		v.add(s.Pos, "%s demand must not be negative", s.Kind)
	}
}

func (v *validator) switchStep(s *Step, ctx *stepContext) {
	seen := map[string]bool{}
	for _, c := range s.Cases {
		if seen[c.Value] {
			v.add(c.Pos, "duplicate case %q", c.Value)
		}
		seen[c.Value] = true
		switch {
		case s.On == "class":
			if v.m.Workload(c.Value) == nil {
				v.add(c.Pos, "no workload %q to match `on: class` (workloads: %s)", c.Value, v.names("workload"))
			}
		case v.paramValues[s.On] == nil:
		case !v.paramValues[s.On][c.Value]:
			v.add(c.Pos, "no workload gives parameter %q the value %q", s.On, c.Value)
		}
		v.steps(c.Steps, ctx)
	}
	if s.On != "class" && v.paramValues[s.On] == nil {
		v.add(s.Pos, "switch on %q: no workload declares that parameter (in `params`), and it is not `class`", s.On)
	}
	v.steps(s.Default, ctx)
}

// holding is how many units of each passive resource a path holds through
// unscoped acquire steps.
type holding map[string]int

func (h holding) clone() holding {
	c := make(holding, len(h))
	for k, n := range h {
		c[k] = n
	}
	return c
}

func (h holding) equal(o holding) bool {
	if len(h) != len(o) {
		return false
	}
	for k, n := range h {
		if o[k] != n {
			return false
		}
	}
	return true
}

func (h holding) names() []string {
	var out []string
	for k := range h {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (h holding) String() string {
	if len(h) == 0 {
		return "nothing"
	}
	var parts []string
	for _, k := range h.names() {
		parts = append(parts, fmt.Sprintf("%d of %q", h[k], k))
	}
	return strings.Join(parts, ", ")
}

// balance follows acquire and release through a step list and returns what is
// held at its end. Alternatives of a branch or switch must end holding the
// same; a loop body, a parallel list and a hold body must release what they
// acquire; a release must match an earlier acquire.
func (v *validator) balance(steps []Step, in holding, where Pos) holding {
	h := in.clone()
	for i := range steps {
		s := &steps[i]
		switch s.Kind {
		case StepAcquire:
			h[s.Resource] += s.Units
		case StepRelease:
			if h[s.Resource] < s.Units {
				v.add(s.Pos, "releases %q, which this path does not hold", s.Resource)
				continue
			}
			h[s.Resource] -= s.Units
			if h[s.Resource] == 0 {
				delete(h, s.Resource)
			}
		case StepLoop, StepHold:
			if out := v.balance(s.Steps, h, s.Pos); !out.equal(h) {
				v.add(s.Pos, "a %s body must release what it acquires (it ends holding %s)", s.Kind, v.diff(out, h))
			}
		case StepParallel:
			for _, list := range s.Parallel {
				if out := v.balance(list, h, s.Pos); !out.equal(h) {
					v.add(s.Pos, "each list of a parallel block must release what it acquires")
				}
			}
		case StepBranch, StepSwitch:
			var outs []holding
			if s.Kind == StepBranch {
				for _, b := range s.Branches {
					outs = append(outs, v.balance(b.Steps, h, b.Pos))
				}
			} else {
				for _, c := range s.Cases {
					outs = append(outs, v.balance(c.Steps, h, c.Pos))
				}
				outs = append(outs, v.balance(s.Default, h, s.Pos))
			}
			for _, o := range outs[1:] {
				if !o.equal(outs[0]) {
					v.add(s.Pos, "acquire is not released on some path: one alternative ends holding %s, another %s", outs[0], o)
					break
				}
			}
			if len(outs) > 0 {
				h = outs[0]
			}
		}
	}
	return h
}

func (v *validator) diff(out, in holding) holding {
	d := holding{}
	for k, n := range out {
		if n != in[k] {
			d[k] = n - in[k]
		}
	}
	return d
}

// cycles reports calls and sends that lead back to an operation already on
// the way: a request that would never end.
func (v *validator) cycles() {
	const (
		unvisited = iota
		active
		done
	)
	state := map[*Operation]int{}
	var stack []string
	var visit func(op *Operation)
	visit = func(op *Operation) {
		state[op] = active
		stack = append(stack, op.ID())
		Walk(op.Steps, func(s *Step) {
			if s.Kind != StepCall && s.Kind != StepSend {
				return
			}
			t := v.m.Operation(s.Target)
			if t == nil {
				return
			}
			switch state[t] {
			case active:
				i := len(stack) - 1
				for i > 0 && stack[i] != t.ID() {
					i--
				}
				v.add(s.Pos, "calls form a cycle: %s → %s", strings.Join(stack[i:], " → "), t.ID())
			case unvisited:
				visit(t)
			}
		})
		stack = stack[:len(stack)-1]
		state[op] = done
	}
	for _, c := range v.m.Components {
		for _, op := range c.Operations {
			if state[op] == unvisited {
				visit(op)
			}
		}
	}
}

// RewriteLists returns steps with every non-empty step list, at any depth,
// replaced by what f makes of it. Nested lists go first, so that f gets a
// list whose steps' bodies are already rewritten, and what f returns is not
// rewritten again. Steps and their bodies are copied, never changed in
// place.
func RewriteLists(steps []Step, f func([]Step) []Step) []Step {
	if len(steps) == 0 {
		return steps
	}
	out := make([]Step, len(steps))
	for i, s := range steps {
		s.Steps = RewriteLists(s.Steps, f)
		s.Branches = slices.Clone(s.Branches)
		for j := range s.Branches {
			s.Branches[j].Steps = RewriteLists(s.Branches[j].Steps, f)
		}
		s.Parallel = slices.Clone(s.Parallel)
		for j := range s.Parallel {
			s.Parallel[j] = RewriteLists(s.Parallel[j], f)
		}
		s.Cases = slices.Clone(s.Cases)
		for j := range s.Cases {
			s.Cases[j].Steps = RewriteLists(s.Cases[j].Steps, f)
		}
		s.Default = RewriteLists(s.Default, f)
		out[i] = s
	}
	return f(out)
}

// Walk calls f for every step of a list, depth first, nested bodies
// included.
func Walk(steps []Step, f func(*Step)) {
	for i := range steps {
		s := &steps[i]
		f(s)
		Walk(s.Steps, f)
		for _, b := range s.Branches {
			Walk(b.Steps, f)
		}
		for _, list := range s.Parallel {
			Walk(list, f)
		}
		for _, c := range s.Cases {
			Walk(c.Steps, f)
		}
		Walk(s.Default, f)
	}
}
