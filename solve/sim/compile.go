package sim

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/perfcast/perfcast/model"
)

// opcode is the kind of one instruction of a compiled program.
type opcode uint8

// The instructions. A step list compiles to a run of instructions; nested
// lists (loop, branch, switch and parallel bodies, hold bodies) are laid out
// inline and jump back to their continuation, so that a task needs a stack
// frame only for loop counters, held units and operation calls.
const (
	opTaskEnd  opcode = iota // end of an asynchronous task (the return point of a send)
	opCPU                    // a: sampler, b: host; CPU demand on the task's replica
	opDisk                   // a: sampler, b: host, c: disk index
	opDelay                  // a: sampler
	opCall                   // a: operation
	opSend                   // a: operation
	opLoop                   // a: count, b: pc after the loop; the body follows
	opLoopEnd                // a: pc of the body
	opBranch                 // a: branch table
	opJump                   // a: target pc
	opParallel               // a: fork table, b: pc after the join
	opJoin                   // end of one list of a parallel step
	opHold                   // a: passive resource, b: units; the body follows
	opHoldEnd                // releases what the innermost hold took
	opAcquire                // a: passive resource, b: units
	opRelease                // a: passive resource, b: units
	opSwitch                 // a: switch table
	opReturn                 // end of an operation
	opMainEnd                // end of a workload's steps
)

// instr is one instruction; the meaning of a, b and c depends on the opcode.
type instr struct {
	code    opcode
	a, b, c int32
}

// sampler draws a random duration; exponential and constant distributions,
// the most common by far, are drawn without going through model.Dist.
type sampler struct {
	kind uint8 // samplerDet, samplerExp or samplerDist
	mean float64
	d    model.Dist
}

const (
	samplerDet uint8 = iota
	samplerExp
	samplerDist
)

func newSampler(d model.Dist) sampler {
	switch d.Kind {
	case model.DistDet:
		return sampler{kind: samplerDet, mean: d.Mean(), d: d}
	case model.DistExp:
		return sampler{kind: samplerExp, mean: d.Mean(), d: d}
	}
	return sampler{kind: samplerDist, mean: d.Mean(), d: d}
}

func (s *sampler) sample(r *rand.Rand) float64 {
	switch s.kind {
	case samplerDet:
		return s.mean
	case samplerExp:
		return r.ExpFloat64() * s.mean
	}
	return s.d.Sample(r)
}

// branchTable holds the cumulative probabilities of a branch step and the
// entry of each alternative.
type branchTable struct {
	cum []float64
	pcs []int32
}

// switchTable resolves a switch step for each workload: either a fixed entry
// (a switch on `class`, or on a parameter the workload does not declare) or an
// entry per value of one of the workload's parameters.
type switchTable struct {
	perWL []switchEntry
}

type switchEntry struct {
	param int32   // index of the workload's parameter, or -1 when fixed
	fixed int32   // entry when param < 0
	pcs   []int32 // entry per value of the parameter
}

// opInfo is a compiled operation.
type opInfo struct {
	id    string
	comp  int32
	entry int32
	// entryHold: the instruction at entry takes a resource before the
	// operation's span starts (model.Passive.BeforeSpan). span: the span
	// is shorter than the response time (entryHold, or a thread limit),
	// so its time is measured apart.
	entryHold, span bool
}

// compInfo is a compiled component.
type compInfo struct {
	name    string
	host    int32
	threads int32 // 0: unlimited
	queue   int32 // -1: unlimited
	drop    bool
	pool    int32 // index of the pool of replica 0; replicas follow
}

// hostInfo is a compiled host.
type hostInfo struct {
	name     string
	replicas int32
	balancer model.Balancer
	cores    int32
	sched    model.Scheduling
	quantum  float64
	// sigma and window describe a CPU speed that changes over time
	// (model.CPU.SpeedWindow): every window seconds each replica's CPU
	// time per unit of work is redrawn, lognormal of mean 1 with log
	// standard deviation sigma. window 0: a steady speed.
	sigma, window float64
	// limit and period describe a CPU limit (model.CPU.Limit): each
	// replica may use limit × period seconds of CPU per period. limit 0:
	// none, or one that never binds.
	limit, period float64
	disks         []diskInfo
	// station is the index of the CPU station of replica 0; each replica has
	// 1+len(disks) stations in a row: the CPU, then the disks.
	station int32
}

// cpuStation is the index of the CPU station of replica r.
func (h *hostInfo) cpuStation(r int32) int32 { return h.station + r*int32(1+len(h.disks)) }

type diskInfo struct {
	name    string
	servers int32
	sched   model.Scheduling
}

// passiveInfo is a compiled passive resource.
type passiveInfo struct {
	name     string
	capacity int32 // units per instance
	host     int32 // -1: one for the whole system
	inst     int32 // index of the first instance
	// parts is the instances per replica: the capacity, each of one unit,
	// for a partitioned resource (model.Passive.Partitioned), else 1.
	parts int32
	// beforeSpan: an operation that begins with a hold of it waits before
	// its span starts.
	beforeSpan bool
}

// workloadInfo is a compiled workload.
type workloadInfo struct {
	name   string
	entry  int32
	rate   float64
	arrive sampler // interarrival time of an open workload
	open   bool
	users  int32
	think  sampler
	params [][]float64 // cumulative probabilities per parameter
	// paramDefs are the parameters, for the spans' attributes.
	paramDefs []*model.Param
}

// program is a model compiled for simulation. It is read-only while
// replications run, so they share it.
type program struct {
	code      []instr
	samplers  []sampler
	counts    []model.Count
	branches  []branchTable
	forks     [][]int32
	switches  []switchTable
	ops       []opInfo
	comps     []compInfo
	hosts     []hostInfo
	passives  []passiveInfo
	workloads []workloadInfo

	// Instance counts: stations (CPUs and disks of every replica), thread
	// pools (one per component replica), passive resource instances.
	nStations, nPools, nPassive int
	// hostLoadBase is the index in the per-replica load table of each host's
	// replica 0.
	hostLoadBase []int32
	nHostLoad    int
}

// compiler turns a model into a program.
type compiler struct {
	m    *model.Model
	p    *program
	opIx map[string]int32
	host map[string]int32
	pas  map[string]int32
	wlIx map[string]int32
}

// compile builds the program of a valid model.
func compile(m *model.Model) (*program, error) {
	c := &compiler{m: m, p: &program{}, opIx: map[string]int32{}, host: map[string]int32{},
		pas: map[string]int32{}, wlIx: map[string]int32{}}
	p := c.p
	// pc 0 is the return point of asynchronous tasks.
	p.code = append(p.code, instr{code: opTaskEnd})
	for _, h := range m.Hosts {
		hi := hostInfo{name: h.Name, replicas: int32(max(h.Replicas, 1)), balancer: h.Balancer,
			cores: int32(max(h.CPU.Cores, 1)), sched: h.CPU.Scheduling, quantum: h.CPU.Quantum,
			station: int32(p.nStations)}
		if h.CPU.VariesOverTime() {
			v := h.CPU.SpeedVariation
			hi.sigma, hi.window = math.Sqrt(math.Log1p(v*v)), h.CPU.SpeedWindow
		}
		if h.CPU.Limited() {
			hi.limit, hi.period = h.CPU.Limit, h.CPU.LimitPeriod()
		}
		if hi.sched == "" {
			hi.sched = model.PS
		}
		if hi.sched == model.RR && !(hi.quantum > 0) {
			return nil, fmt.Errorf("host %q: round-robin scheduling needs a positive quantum", h.Name)
		}
		for _, d := range h.Disks {
			di := diskInfo{name: d.Name, servers: int32(max(d.Servers, 1)), sched: d.Scheduling}
			if di.sched == "" {
				di.sched = model.FCFS
			}
			hi.disks = append(hi.disks, di)
		}
		p.nStations += int(hi.replicas) * (1 + len(hi.disks))
		c.host[h.Name] = int32(len(p.hosts))
		p.hostLoadBase = append(p.hostLoadBase, int32(p.nHostLoad))
		p.nHostLoad += int(hi.replicas)
		p.hosts = append(p.hosts, hi)
	}
	for _, pr := range m.Passive {
		pi := passiveInfo{name: pr.Name, capacity: int32(pr.Capacity), host: -1, inst: int32(p.nPassive), parts: 1, beforeSpan: pr.BeforeSpan}
		if pr.Partitioned {
			pi.capacity, pi.parts = 1, int32(pr.Capacity)
		}
		n := 1
		if pr.Host != "" {
			h, ok := c.host[pr.Host]
			if !ok {
				return nil, fmt.Errorf("passive resource %q: no host %q", pr.Name, pr.Host)
			}
			pi.host = h
			n = int(p.hosts[h].replicas)
		}
		p.nPassive += n * int(pi.parts)
		c.pas[pr.Name] = int32(len(p.passives))
		p.passives = append(p.passives, pi)
	}
	for i, w := range m.Workloads {
		c.wlIx[w.Name] = int32(i)
	}
	// Number every operation first, so that calls can refer forward.
	for ci, comp := range m.Components {
		h, ok := c.host[comp.Host]
		if !ok {
			return nil, fmt.Errorf("component %q: no host %q", comp.Name, comp.Host)
		}
		queue := int32(comp.Queue)
		if comp.Queue < 0 {
			queue = -1
		}
		p.comps = append(p.comps, compInfo{name: comp.Name, host: h, threads: int32(comp.Threads),
			queue: queue, drop: comp.OnFull == model.Drop, pool: int32(p.nPools)})
		p.nPools += int(p.hosts[h].replicas)
		for _, op := range comp.Operations {
			c.opIx[op.ID()] = int32(len(p.ops))
			p.ops = append(p.ops, opInfo{id: op.ID(), comp: int32(ci)})
		}
	}
	for _, comp := range m.Components {
		for _, op := range comp.Operations {
			ix := c.opIx[op.ID()]
			p.ops[ix].entry = int32(len(p.code))
			if err := c.steps(op.Steps, p.ops[ix].comp); err != nil {
				return nil, fmt.Errorf("operation %q: %w", op.ID(), err)
			}
			c.emit(instr{code: opReturn})
			o := &p.ops[ix]
			if in := p.code[o.entry]; (in.code == opHold || in.code == opAcquire) && p.passives[in.a].beforeSpan {
				o.entryHold = true
			}
			o.span = o.entryHold || p.comps[o.comp].threads > 0
		}
	}
	for _, w := range m.Workloads {
		wi := workloadInfo{name: w.Name, entry: int32(len(p.code))}
		switch {
		case w.Open != nil:
			wi.open = true
			wi.rate = w.Open.Rate
			if w.Open.Rate > 0 {
				mean := 1 / w.Open.Rate
				if cv := w.Open.CV; cv > 0 && cv != 1 {
					wi.arrive = newSampler(model.Gamma(mean, cv))
				} else {
					wi.arrive = newSampler(model.Exp(mean))
				}
			}
		case w.Closed != nil:
			wi.users = int32(w.Closed.Users)
			wi.think = newSampler(w.Closed.Think)
		}
		for _, prm := range w.Params {
			cum := make([]float64, len(prm.Probs))
			s := 0.0
			for i, q := range prm.Probs {
				s += q
				cum[i] = s
			}
			wi.params = append(wi.params, cum)
			wi.paramDefs = append(wi.paramDefs, prm)
		}
		if err := c.steps(w.Steps, -1); err != nil {
			return nil, fmt.Errorf("workload %q: %w", w.Name, err)
		}
		c.emit(instr{code: opMainEnd})
		p.workloads = append(p.workloads, wi)
	}
	return p, nil
}

func (c *compiler) emit(in instr) int32 {
	c.p.code = append(c.p.code, in)
	return int32(len(c.p.code) - 1)
}

func (c *compiler) pc() int32 { return int32(len(c.p.code)) }

func (c *compiler) sampler(d model.Dist) int32 {
	c.p.samplers = append(c.p.samplers, newSampler(d))
	return int32(len(c.p.samplers) - 1)
}

// steps compiles a step list running in component comp (-1 at workload level).
func (c *compiler) steps(steps []model.Step, comp int32) error {
	for i := range steps {
		if err := c.step(&steps[i], comp); err != nil {
			return fmt.Errorf("steps[%d]: %w", i, err)
		}
	}
	return nil
}

// body compiles a nested list followed by a jump whose target is patched
// later; it returns the list's entry and the jump's index.
func (c *compiler) body(steps []model.Step, comp int32) (entry, jump int32, err error) {
	entry = c.pc()
	if err := c.steps(steps, comp); err != nil {
		return 0, 0, err
	}
	return entry, c.emit(instr{code: opJump}), nil
}

func (c *compiler) step(s *model.Step, comp int32) error {
	p := c.p
	switch s.Kind {
	case model.StepCPU, model.StepDisk:
		if comp < 0 {
			return fmt.Errorf("%s step outside an operation: workload steps run on no host", s.Kind)
		}
		h := p.comps[comp].host
		hm := c.m.Hosts[h]
		if s.Kind == model.StepCPU {
			d := s.Demand
			if sp := hm.CPU.Speed; sp > 0 && sp != 1 {
				d = d.Scale(1 / sp)
			}
			c.emit(instr{code: opCPU, a: c.sampler(d), b: h})
			return nil
		}
		disk := hm.Disk(s.Disk)
		if disk == nil {
			return fmt.Errorf("host %q has no disk %q", hm.Name, s.Disk)
		}
		di := int32(0)
		for i, d := range hm.Disks {
			if d == disk {
				di = int32(i)
			}
		}
		c.emit(instr{code: opDisk, a: c.sampler(s.Demand), b: h, c: di})
	case model.StepDelay:
		c.emit(instr{code: opDelay, a: c.sampler(s.Demand)})
	case model.StepCall, model.StepSend:
		op, ok := c.opIx[s.Target]
		if !ok {
			return fmt.Errorf("no operation %q", s.Target)
		}
		code := opCall
		if s.Kind == model.StepSend {
			code = opSend
		}
		c.emit(instr{code: code, a: op})
	case model.StepLoop:
		p.counts = append(p.counts, s.Times)
		at := c.emit(instr{code: opLoop, a: int32(len(p.counts) - 1)})
		entry := c.pc()
		if err := c.steps(s.Steps, comp); err != nil {
			return err
		}
		c.emit(instr{code: opLoopEnd, a: entry})
		p.code[at].b = c.pc()
	case model.StepBranch:
		t := branchTable{}
		at := c.emit(instr{code: opBranch, a: int32(len(p.branches))})
		p.branches = append(p.branches, branchTable{})
		var jumps []int32
		sum := 0.0
		for _, b := range s.Branches {
			entry, j, err := c.body(b.Steps, comp)
			if err != nil {
				return err
			}
			sum += b.P
			t.cum = append(t.cum, sum)
			t.pcs = append(t.pcs, entry)
			jumps = append(jumps, j)
		}
		for _, j := range jumps {
			p.code[j].a = c.pc()
		}
		p.branches[p.code[at].a] = t
	case model.StepParallel:
		at := c.emit(instr{code: opParallel, a: int32(len(p.forks))})
		p.forks = append(p.forks, nil)
		var pcs []int32
		for _, list := range s.Parallel {
			pcs = append(pcs, c.pc())
			if err := c.steps(list, comp); err != nil {
				return err
			}
			c.emit(instr{code: opJoin})
		}
		p.forks[p.code[at].a] = pcs
		p.code[at].b = c.pc()
	case model.StepHold:
		r, ok := c.pas[s.Resource]
		if !ok {
			return fmt.Errorf("no passive resource %q", s.Resource)
		}
		c.emit(instr{code: opHold, a: r, b: int32(max(s.Units, 1))})
		if err := c.steps(s.Steps, comp); err != nil {
			return err
		}
		c.emit(instr{code: opHoldEnd})
	case model.StepAcquire, model.StepRelease:
		r, ok := c.pas[s.Resource]
		if !ok {
			return fmt.Errorf("no passive resource %q", s.Resource)
		}
		code := opAcquire
		if s.Kind == model.StepRelease {
			code = opRelease
		}
		c.emit(instr{code: code, a: r, b: int32(max(s.Units, 1))})
	case model.StepSwitch:
		return c.switchStep(s, comp)
	default:
		return fmt.Errorf("unknown step kind %v", s.Kind)
	}
	return nil
}

// switchStep lays out every case body and the default once, and builds for
// each workload the table from its parameter's values to bodies. A value
// without a case and without a default jumps straight past the switch.
func (c *compiler) switchStep(s *model.Step, comp int32) error {
	p := c.p
	at := c.emit(instr{code: opSwitch, a: int32(len(p.switches))})
	p.switches = append(p.switches, switchTable{})
	caseEntry := map[string]int32{}
	var jumps []int32
	for _, cs := range s.Cases {
		entry, j, err := c.body(cs.Steps, comp)
		if err != nil {
			return err
		}
		caseEntry[cs.Value] = entry
		jumps = append(jumps, j)
	}
	def := int32(-1)
	if len(s.Default) > 0 {
		entry, j, err := c.body(s.Default, comp)
		if err != nil {
			return err
		}
		def = entry
		jumps = append(jumps, j)
	}
	after := c.pc()
	for _, j := range jumps {
		p.code[j].a = after
	}
	if def < 0 {
		def = after
	}
	pick := func(v string) int32 {
		if e, ok := caseEntry[v]; ok {
			return e
		}
		return def
	}
	t := switchTable{perWL: make([]switchEntry, len(c.m.Workloads))}
	for wi, w := range c.m.Workloads {
		if s.On == "class" {
			t.perWL[wi] = switchEntry{param: -1, fixed: pick(w.Name)}
			continue
		}
		e := switchEntry{param: -1, fixed: def}
		for pi, prm := range w.Params {
			if prm.Name != s.On {
				continue
			}
			e.param = int32(pi)
			for _, v := range prm.Values {
				e.pcs = append(e.pcs, pick(v))
			}
		}
		t.perWL[wi] = e
	}
	p.switches[p.code[at].a] = t
	return nil
}
