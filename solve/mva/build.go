package mva

import (
	"math"

	"github.com/perfcast/perfcast/model"
)

// pool is a resource held while other work runs: a passive resource (lock,
// connection pool, semaphore) or a component's thread pool.
type pool struct {
	// name is the result name: the passive resource's name or
	// `COMPONENT.threads`.
	name string
	// capacity is the number of units per copy; 0 for an unlimited thread
	// pool.
	capacity int
	// copies is the number of independent instances (the host's replicas
	// for a pool placed on a host, or for a component's threads).
	copies int
	// parts is the copies a replica has: a partitioned resource's
	// capacity, else 1.
	parts int
	// component is set for thread pools.
	component string
	// queue is the waiting room of a thread pool per copy
	// (model.QueueUnlimited when unlimited), onFull its policy.
	queue  int
	onFull model.OnFull
	// beforeSpan is model.Passive.BeforeSpan.
	beforeSpan bool
	// leastBusy marks a pool of each replica of a host whose replicas
	// take calls by load: its copies wait as one queue of all their
	// units, times queueing.JSQFactor (as a station's,
	// network.joinShortest and closedNet.solveJoined); ofTwo marks,
	// among them, one
	// on a host balanced least-of-two over more than two replicas.
	leastBusy, ofTwo bool
}

// limited reports whether requests may wait for the pool.
func (p *pool) limited() bool { return p.capacity > 0 }

// capacityTotal is the number of units over every copy.
func (p *pool) capacityTotal() float64 { return float64(p.capacity * p.copies) }

// classInfo is what one workload puts on the network per request.
type classInfo struct {
	w   *model.Workload
	dem *model.Demands
	// demand, visits and second are per station, summed over the copies of
	// the station (divide by copies for one instance).
	demand, visits, second []float64
	// acq[p] is the expected number of acquisitions of pool p per request;
	// units[p] the expected units they take.
	acq, units []float64
	// sends and forks record whether the workload reaches send and parallel
	// steps.
	sends, forks bool
	// repeat[k] records that station k is visited inside a loop of more
	// than one iteration on average: a request's own visits there follow
	// one another.
	repeat []bool
	// inside[k][g] is the demand per request at station k (summed over its
	// copies) made while pool g is the tightest limited pool holding the
	// request; g = len(pools) for demand no such pool encloses.
	inside [][]float64
	// insideVisits[k][g] counts the visits to station k (summed over its
	// copies) that make the demand inside[k][g].
	insideVisits [][]float64
	// insideSecond[k][g] is the sum over those visits of the second
	// moment of their demand.
	insideSecond [][]float64
	// under[q][p] is the expected number of holds of pool q per request
	// made while the request holds pool p (see nestedWaits).
	under [][]float64
}

// built is a model turned into the structures the solver works on.
type built struct {
	m        *model.Model
	stations []station
	stIndex  map[string]int
	pools    []*pool
	poolIdx  map[string]int
	classes  []*classInfo
	// hostCPU and hostDisk map a host (and disk) to its station.
	hostCPU  map[string]int
	hostDisk map[string]map[string]int
	// burstAt[p] is the station where every hold of pool p that a
	// workload reaches holds one unit for one CPU burst and nothing else
	// (a process's CPU slot), -1 for any other pool.
	burstAt []int
	// reentries are the hold steps that take a pool their request has
	// just let go (see reentry).
	reentries map[*model.Step]reentry
}

// limitServers is the number of servers the solver gives a CPU: its
// cores, or for a CPU whose limit binds (model.CPU.Limit), the limit
// rounded up, each serving limit/⌈limit⌉ of a core (limitScale stretches
// the demands to that). That is the limit's capacity, and a request
// alone runs at full speed where the limit is a whole number of cores.
// A limited CPU runs at full speed on all its cores until its quota is
// spent, then stalls until the period ends: the solver sees neither, so
// it overestimates waits at light load under a fractional limit and
// underestimates those that stalls of tens of milliseconds make.
func limitServers(c model.CPU) int {
	if !c.Limited() {
		return max(c.Cores, 1)
	}
	return int(math.Ceil(c.Limit - 1e-9))
}

// limitScale is the factor by which the solver stretches the CPU demands
// at a limited CPU: ⌈limit⌉/limit; 1 without a limit.
func limitScale(c model.CPU) float64 {
	if !c.Limited() {
		return 1
	}
	return float64(limitServers(c)) / c.Limit
}

// build turns a valid model into stations, pools and per-class demands.
func build(m *model.Model) *built {
	b := &built{m: m, stIndex: map[string]int{}, poolIdx: map[string]int{}, hostCPU: map[string]int{}, hostDisk: map[string]map[string]int{}}
	for _, h := range m.Hosts {
		replicas := max(h.Replicas, 1)
		byLoad, ofTwo := balancedByLoad(h)
		b.hostCPU[h.Name] = len(b.stations)
		b.stIndex[model.CPUResource(h.Name)] = len(b.stations)
		b.stations = append(b.stations, station{
			name:      model.CPUResource(h.Name),
			servers:   limitServers(h.CPU),
			copies:    replicas,
			fcfs:      h.CPU.Scheduling == model.FCFS,
			leastBusy: byLoad,
			ofTwo:     ofTwo,
		})
		if h.CPU.Limited() {
			st := &b.stations[len(b.stations)-1]
			st.limit, st.cores = h.CPU.Limit, max(h.CPU.Cores, 1)
		}
		b.hostDisk[h.Name] = map[string]int{}
		for _, d := range h.Disks {
			b.hostDisk[h.Name][d.Name] = len(b.stations)
			b.stIndex[model.DiskResource(h.Name, d.Name)] = len(b.stations)
			// Random-order service has the mean wait of FCFS.
			b.stations = append(b.stations, station{
				name:      model.DiskResource(h.Name, d.Name),
				servers:   max(d.Servers, 1),
				copies:    replicas,
				fcfs:      true,
				leastBusy: byLoad,
				ofTwo:     ofTwo,
			})
		}
	}
	for _, c := range m.Components {
		p := &pool{name: model.ThreadsResource(c.Name), capacity: c.Threads, copies: b.replicas(c.Host), parts: 1, component: c.Name, queue: c.Queue, onFull: c.OnFull}
		p.leastBusy, p.ofTwo = balancedByLoad(m.Host(c.Host))
		b.poolIdx[p.name] = len(b.pools)
		b.pools = append(b.pools, p)
	}
	for _, ps := range m.Passive {
		copies := 1
		if ps.Host != "" {
			copies = b.replicas(ps.Host)
		}
		p := &pool{name: ps.Name, capacity: max(ps.Capacity, 1), copies: copies, parts: 1, queue: model.QueueUnlimited, beforeSpan: ps.BeforeSpan}
		if ps.Host != "" {
			p.leastBusy, p.ofTwo = balancedByLoad(m.Host(ps.Host))
		}
		if ps.Partitioned {
			// A replica's calls go to a unit at random, whatever
			// picked the replica.
			p.leastBusy, p.ofTwo = false, false
			// Its units are as many independent copies of one unit, each
			// given an equal share of the executions at random.
			p.copies *= p.capacity
			p.parts, p.capacity = p.capacity, 1
		}
		b.poolIdx[p.name] = len(b.pools)
		b.pools = append(b.pools, p)
	}
	b.burstAt = make([]int, len(b.pools))
	for p := range b.burstAt {
		b.burstAt[p] = unseen
	}
	for _, w := range m.Workloads {
		ci := &classInfo{
			w:            w,
			dem:          m.Demands(w),
			demand:       make([]float64, len(b.stations)),
			visits:       make([]float64, len(b.stations)),
			second:       make([]float64, len(b.stations)),
			acq:          make([]float64, len(b.pools)),
			units:        make([]float64, len(b.pools)),
			repeat:       make([]bool, len(b.stations)),
			inside:       matrix(len(b.stations), len(b.pools)+1),
			insideVisits: matrix(len(b.stations), len(b.pools)+1),
			insideSecond: matrix(len(b.stations), len(b.pools)+1),
			under:        matrix(len(b.pools), len(b.pools)),
		}
		for r, s := range ci.dem.Service {
			if k, ok := b.stIndex[r]; ok {
				if st := &b.stations[k]; st.limit > 0 {
					s *= float64(st.servers) / st.limit // as stationOf scales it
				}
				ci.demand[k] = s
			}
		}
		v := &visitWalk{b: b, ci: ci, fixed: map[string]string{}, held: len(b.pools)}
		v.steps(w.Steps, nil, 1, 0)
		b.classes = append(b.classes, ci)
	}
	for p, k := range b.burstAt {
		if k == unseen || !b.pools[p].limited() {
			b.burstAt[p] = -1
		}
	}
	b.reentries = b.findReentries()
	return b
}

// unseen marks, while the model is walked, a pool no hold has reached.
const unseen = -2

// sawHold records in burstAt a hold or acquisition of pool p: a hold
// (acquire false) of one unit whose body is one CPU step of component c,
// made at station k, keeps p a burst pool if every other one was such a
// hold at k. A call holds one of its target component's threads for the
// operation's steps as body.
func (b *built) sawHold(p, units int, body []model.Step, c *model.Component, acquire bool) {
	k := -1
	if !acquire && units <= 1 && len(body) == 1 && body[0].Kind == model.StepCPU && c != nil {
		k, _ = b.stationOf(&body[0], c)
	}
	if b.burstAt[p] == unseen || b.burstAt[p] == k {
		b.burstAt[p] = k
		return
	}
	b.burstAt[p] = -1
}

// balancedByLoad reports whether host h's replicas take calls by their
// load, least-busy or least-of-two (on two replicas the two are one), and
// ofTwo whether least-of-two over more than two replicas.
func balancedByLoad(h *model.Host) (byLoad, ofTwo bool) {
	if h == nil || h.Replicas < 2 {
		return false, false
	}
	switch h.Balancer {
	case model.LeastBusy:
		return true, false
	case model.LeastOfTwo:
		return true, h.Replicas > 2
	}
	return false, false
}

func (b *built) replicas(host string) int {
	if h := b.m.Host(host); h != nil {
		return max(h.Replicas, 1)
	}
	return 1
}

// visitWalk counts, per request of one workload, the visits and second
// moments of service at every station and the acquisitions of every pool.
// (Expected demands come from model.Demands.)
type visitWalk struct {
	b     *built
	ci    *classInfo
	fixed map[string]string
	// loops counts the enclosing loops of more than one iteration.
	loops int
	// held is the tightest limited pool the request holds at this point
	// (see built.within).
	held int
	// holding lists the pools held at this point by hold steps and
	// synchronous calls.
	holding []int
}

func (v *visitWalk) steps(steps []model.Step, c *model.Component, weight float64, depth int) {
	if weight == 0 || depth > maxDepth {
		return
	}
	for i := range steps {
		s := &steps[i]
		switch s.Kind {
		case model.StepCPU, model.StepDisk:
			k, speed := v.b.stationOf(s, c)
			if k < 0 {
				continue
			}
			mean := s.Demand.Mean() / speed
			v.ci.inside[k][v.held] += weight * mean
			second := s.Demand.Var()/(speed*speed) + mean*mean
			v.ci.insideVisits[k][v.held] += weight
			v.ci.insideSecond[k][v.held] += weight * second
			v.ci.visits[k] += weight
			v.ci.second[k] += weight * second
			if v.loops > 0 {
				v.ci.repeat[k] = true
			}
		case model.StepCall, model.StepSend:
			if s.Kind == model.StepSend {
				v.ci.sends = true
			}
			op := v.b.m.Operation(s.Target)
			if op == nil {
				continue
			}
			tp := v.b.poolIdx[model.ThreadsResource(op.Component)]
			v.b.sawHold(tp, 1, op.Steps, v.b.m.Component(op.Component), false)
			v.ci.acq[tp] += weight
			v.ci.units[tp] += weight
			outer, holding := v.held, v.holding
			if s.Kind == model.StepSend {
				// The target runs on its own, after the sender's holds.
				v.held, v.holding = len(v.b.pools), nil
			}
			v.hold(tp, weight)
			v.held = v.b.within(v.held, tp)
			v.steps(op.Steps, v.b.m.Component(op.Component), weight, depth+1)
			v.held, v.holding = outer, holding
		case model.StepLoop:
			n := s.Times.Mean()
			if n > 1 {
				v.loops++
			}
			v.steps(s.Steps, c, weight*n, depth)
			if n > 1 {
				v.loops--
			}
		case model.StepBranch:
			for _, br := range s.Branches {
				v.steps(br.Steps, c, weight*br.P, depth)
			}
		case model.StepParallel:
			v.ci.forks = true
			// The lists of one request run at once under the same holds,
			// so those holds no longer bound the request's work at a
			// station.
			outer := v.held
			v.held = len(v.b.pools)
			for _, list := range s.Parallel {
				v.steps(list, c, weight, depth)
			}
			v.held = outer
		case model.StepHold, model.StepAcquire:
			outer, holding := v.held, v.holding
			if p, ok := v.b.poolIdx[s.Resource]; ok {
				v.ci.acq[p] += weight
				v.ci.units[p] += weight * float64(max(s.Units, 1))
				v.b.sawHold(p, s.Units, s.Steps, c, s.Kind == model.StepAcquire)
				if s.Kind == model.StepHold {
					v.hold(p, weight)
					v.held = v.b.within(v.held, p)
				}
			}
			v.steps(s.Steps, c, weight, depth)
			v.held, v.holding = outer, holding
		case model.StepSwitch:
			forCases(v.ci.w, s, v.fixed, func(body []model.Step, p float64) {
				v.steps(body, c, weight*p, depth)
			})
		}
	}
}

// hold records a hold of pool p under the pools held and adds p to them
// (on a fresh slice: the caller restores the previous one).
func (v *visitWalk) hold(p int, weight float64) {
	for _, h := range v.holding {
		v.ci.under[p][h] += weight
	}
	v.holding = append(v.holding[:len(v.holding):len(v.holding)], p)
}

// within returns the tightest limited pool a request holds once it also
// holds pool p, given held, the tightest it held before (len(b.pools) for
// none): the one with the fewest units, which bounds how many requests can
// be inside it at once.
func (b *built) within(held, p int) int {
	if !b.pools[p].limited() {
		return held
	}
	if held == len(b.pools) || b.pools[p].capacityTotal() < b.pools[held].capacityTotal() {
		return p
	}
	return held
}

// maxDepth guards recursions against models that were not validated.
const maxDepth = 256

// stationOf returns the station a cpu or disk step of component c uses, and
// the speed its demand is divided by; -1 when there is none.
func (b *built) stationOf(s *model.Step, c *model.Component) (int, float64) {
	if c == nil {
		return -1, 1
	}
	h := b.m.Host(c.Host)
	if h == nil {
		return -1, 1
	}
	if s.Kind == model.StepCPU {
		speed := h.CPU.Speed
		if speed <= 0 {
			speed = 1
		}
		return b.hostCPU[h.Name], speed / limitScale(h.CPU)
	}
	d := h.Disk(s.Disk)
	if d == nil {
		return -1, 1
	}
	return b.hostDisk[h.Name][d.Name], 1
}

// forCases calls f with each body a switch step takes for a request of
// workload w, and its probability. A parameter decided by an enclosing
// switch (in fixed) is not drawn again.
func forCases(w *model.Workload, s *model.Step, fixed map[string]string, f func(body []model.Step, p float64)) {
	pick := func(value string) []model.Step {
		for _, cs := range s.Cases {
			if cs.Value == value {
				return cs.Steps
			}
		}
		return s.Default
	}
	if s.On == "class" {
		if w == nil {
			f(s.Default, 1)
		} else {
			f(pick(w.Name), 1)
		}
		return
	}
	if v, ok := fixed[s.On]; ok {
		f(pick(v), 1)
		return
	}
	var p *model.Param
	if w != nil {
		p = w.Param(s.On)
	}
	if p == nil {
		f(s.Default, 1)
		return
	}
	for i, v := range p.Values {
		fixed[s.On] = v
		f(pick(v), p.Probs[i])
	}
	delete(fixed, s.On)
}
