package extract

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/perfcast/perfcast/internal/textout"
	"github.com/perfcast/perfcast/model"
)

// queueSystem is a system seen only by its clients whose calls wait for
// its servers, as the model has it: a component of that name on the host
// of its machine, whose calls each take a fixed delay (the network) and a
// service at the host's disk of the system's name or at its CPU.
type queueSystem struct {
	host *model.Host
	disk string // "" for sharedCores
	// how and servers are the station; network and service each kind's
	// (by span name), meanService the calls' mean service.
	how         queueDiscipline
	servers     int
	network     map[string]float64
	service     map[string]float64
	meanService float64
	// rate is the calls per second; busy the servers' busy share at it.
	rate, busy float64
	// evidence says how the station was found.
	evidence string
}

// peerObserved is what the traces show of a system's calls, at the fit's
// servers c.
type peerObserved struct {
	c       int
	b, se   float64
	kinds   []string
	n       []float64 // calls per kind
	mean    []float64 // mean latency per kind
	meanVar []float64 // the variance of mean per kind
	alone   []float64 // latency without a wait per kind (a_j)
	wait    float64   // the calls' mean wait: mean latency less a_j
	rate    float64   // calls per second
	scv     float64   // the calls' arrival scv
	// levels are the calls' latencies by the others in flight;
	// kindSlope and kindSE each kind's own slope at c and its standard
	// error (NaN where its calls do not reach c).
	levels            []peerLevels
	kindSlope, kindSE []float64
}

// peerMachines names the machine of each system seen only by its clients,
// by the system's component name: "" where its calls went to several
// machines, none where they name none.
func (g *generator) peerMachines() map[string]string {
	out := map[string]string{}
	if g.s.Windows == nil {
		return out
	}
	for _, host := range g.s.Windows.Hosts() {
		h := g.s.Windows.hosts[host]
		for _, op := range h.ops {
			if !h.external[op] {
				continue
			}
			comp, _ := splitID(op)
			if m, ok := out[comp]; ok && m != host {
				out[comp] = ""
				continue
			}
			out[comp] = host
		}
	}
	return out
}

// peerHostNames are the machines of the systems seen only by their
// clients, as the configuration may name them.
func (g *generator) peerHostNames() []string {
	var names []string
	for _, m := range g.peerMachines() {
		if m != "" {
			names = append(names, m)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// placeQueues finds the systems seen only by their clients whose calls
// wait for their servers and places them (see the top of this file and
// peerqueue.go): each on the model host of its machine, else a new host
// named after it. Not for sampled traces, nor for a system the metrics
// made a component of (the metrics' CPU is measured, the servers an
// inference) or one named as a traced component is.
func (g *generator) placeQueues() {
	g.queues = map[string]*queueSystem{}
	if len(g.s.peers) == 0 {
		return
	}
	if g.s.Sampled > 0 {
		g.rep.evidencef("systems seen only by their clients' spans: with sampled traces not every call in flight is seen, so whether the calls wait for a system's servers is not asked; they stay delays")
		return
	}
	span := g.s.span()
	if span <= 0 {
		return
	}
	machines := g.peerMachines()
	for _, sys := range slices.Sorted(maps.Keys(g.s.peers)) {
		if g.hostOf[sys] != nil || g.externalSystem(sys) || g.ctx.Err() != nil {
			continue
		}
		obs, why := g.observePeer(sys, g.s.peers[sys].finished(), span)
		if obs == nil {
			if why != "" {
				g.rep.evidencef("%s: a system seen only by its clients' spans: %s; its calls stay delays", sys, why)
			}
			continue
		}
		grew := fmt.Sprintf("%s: a system seen only by its clients' spans whose calls took longer the more others were in flight as they began (%s more for each beyond %d, ± %s)",
			sys, textout.Duration(obs.b), obs.c-1, textout.Duration(obs.se))
		machine, named := machines[sys]
		switch {
		case named && machine == "":
			// Servers on each machine, each with its share of the
			// calls, are not one station of them all.
			if !g.toldExternal[sys] {
				g.rep.evidencef("%s, called on several machines: each machine's servers are not told apart, so its calls stay delays", grew)
			}
		case g.cfg.Simulator == nil:
			g.rep.warnf("%s; with no simulator given, what answers them is not found and they stay delays, which no load lengthens", grew)
		default:
			g.placeQueue(sys, machine, obs, grew)
		}
	}
}

// placeQueue places system sys, whose calls obs measured, on the host of
// its machine (a new one named after the system where none is known), or
// warns where no station answers its calls; grew says what its calls
// showed.
func (g *generator) placeQueue(sys, machine string, obs *peerObserved, grew string) {
	cores := 0
	if hc, ok := g.cfg.Hosts[machine]; ok && machine != "" {
		cores = hc.Cores
	}
	name := hostSafe(cmp.Or(machine, sys))
	h := g.m.Host(name)
	// Where a traced component runs on the machine, its cores serve that
	// too: only servers of the system's own are tried.
	q, why := g.calibrateQueue(obs, cores, h == nil)
	if q == nil {
		g.rep.warnf("%s, but %s; they stay delays, which no load lengthens", grew, why)
		return
	}
	if h == nil {
		h = &model.Host{Name: name, Replicas: 1, Balancer: model.RoundRobin,
			CPU: model.CPU{Cores: 1, Speed: 1, Scheduling: model.PS}}
		g.m.Hosts = append(g.m.Hosts, h)
		g.configured[h] = true
	}
	q.host = h
	resource := h.Name + ".cpu"
	switch q.how {
	case inOrder:
		q.disk = hostSafe(sys)
		h.Disks = append(h.Disks, &model.Disk{Name: q.disk, Servers: q.servers, Scheduling: model.FCFS})
		resource = model.DiskResource(h.Name, q.disk)
	case sharedCores:
		h.CPU.Cores = q.servers
	}
	g.queues[sys] = q
	g.rep.warnf("%s: modeled as %s, %d %s, %.0f %% busy at the observed %.4g calls/s, mean service %s (%s). Read from the calls' latencies alone: metrics of its machine (--metrics) or spans of its own would measure it; where the callers' client spans end only when the caller runs again (Go's HTTP client), the growth may be the callers' wait for a processor: declare their cpu_slots",
		grew, resource, q.servers, q.how, 100*q.busy, q.rate, textout.Duration(q.meanService), q.evidence)
}

// externalSystem reports whether the metrics made system sys a component
// (placeExternals).
func (g *generator) externalSystem(sys string) bool {
	for id := range g.externals {
		if comp, _ := splitID(id); comp == sys {
			return true
		}
	}
	return false
}

// observePeer measures system sys's calls from their sweep p, or says why
// they show no wait ("" where too few calls met others to tell).
func (g *generator) observePeer(sys string, p *peerSweep, span float64) (*peerObserved, string) {
	n := p.calls()
	if n == 0 {
		return nil, ""
	}
	fit, ok := fitPeerQueue(p.levels)
	if !ok || fit.beyond < peerQueueBeyond {
		return nil, ""
	}
	if fit.b < peerQueueT*fit.se {
		return nil, fmt.Sprintf("its calls took no longer the more others were in flight as they began (up to %d others; %s for each beyond %d, ± %s)",
			fit.top, textout.Duration(fit.b), fit.c-1, textout.Duration(fit.se))
	}
	callers := g.peerCallers(sys)
	if share := g.slottedShare(callers); share > 0.5 {
		// A caller with CPU slots needs one again to take the reply, and
		// its client spans end only then (Go's HTTP client): the wait,
		// which grows with the caller's load, is in the calls' latency.
		return nil, fmt.Sprintf("its calls took longer the more others were in flight as they began, but %.0f %% come from components with CPU slots, whose client spans may end only once the caller has a slot again, a wait that grows with the callers' load as one at the system would; not taken for the system's", 100*share)
	}
	obs := &peerObserved{c: fit.c, b: fit.b, se: fit.se, kinds: p.kinds, rate: n / span, scv: g.peerArrivalSCV(callers), levels: p.levels}
	obs.n, obs.mean, obs.alone = peerKinds(p.levels, fit)
	obs.meanVar = kindMeanVariances(p.levels)
	obs.kindSlope, obs.kindSE = kindSlopes(p.levels, fit.c)
	var alone float64
	for j := range obs.kinds {
		alone += obs.n[j] * obs.alone[j] / n
		obs.wait += obs.n[j] * (obs.mean[j] - obs.alone[j]) / n
	}
	if obs.wait < peerQueueShare*alone {
		return nil, fmt.Sprintf("its calls waited %s on average, less than %.0f %% of their %s without a wait", textout.Duration(obs.wait), 100*peerQueueShare, textout.Duration(alone))
	}
	return obs, ""
}

// peerKinds returns each kind's calls, mean latency and latency without a
// wait by fit; a kind with too few calls at any count for the fit takes
// its mean less the fitted kinds' mean wait (at least half its mean).
func peerKinds(levels []peerLevels, fit peerFit) (n, mean, alone []float64) {
	n, mean, alone = make([]float64, len(levels)), make([]float64, len(levels)), make([]float64, len(levels))
	var fitted, wait float64
	for j, lv := range levels {
		var all moments
		for _, m := range lv {
			all.merge(m)
		}
		n[j], mean[j], alone[j] = all.n, all.mean(), fit.a[j]
		if !math.IsNaN(fit.a[j]) {
			fitted += all.n
			wait += all.n * (all.mean() - fit.a[j])
		}
	}
	if fitted > 0 {
		wait /= fitted
	}
	for j := range alone {
		if math.IsNaN(alone[j]) {
			alone[j] = math.Max(mean[j]-wait, mean[j]/2)
		}
	}
	return n, mean, alone
}

// peerCallers counts, per calling component, its calls to system sys.
func (g *generator) peerCallers(sys string) map[string]float64 {
	out := map[string]float64{}
	g.eachExternalCall(func(op *opStats, _ string, v *variant, x string) {
		if comp, _ := splitID(x); comp == sys {
			out[op.component] += float64(v.count)
		}
	})
	return out
}

// peerArrivalSCV is the squared cv of the arrivals of the calls callers
// make: their components', weighted by the calls each makes.
func (g *generator) peerArrivalSCV(callers map[string]float64) float64 {
	var w, sum float64
	for _, comp := range slices.Sorted(maps.Keys(callers)) {
		if g.hostOf[comp] != nil {
			w += callers[comp]
			sum += callers[comp] * g.componentSCV(comp)
		}
	}
	if !(w > 0) || !(sum > 0) {
		return 1
	}
	return sum / w
}

// slottedShare is the share of the calls callers make that come from
// components with CPU slots.
func (g *generator) slottedShare(callers map[string]float64) float64 {
	var all, slotted float64
	for comp, n := range callers {
		all += n
		if g.cpuSlots(comp) > 0 {
			slotted += n
		}
	}
	if all == 0 {
		return 0
	}
	return slotted / all
}

// queueComponents adds the components of the systems placeQueues placed:
// each kind of call its network as a fixed delay, then its service at the
// system's disk or CPU.
func (g *generator) queueComponents() {
	for _, sys := range slices.Sorted(maps.Keys(g.queues)) {
		q := g.queues[sys]
		c := &model.Component{Name: sys, Host: q.host.Name, Queue: model.QueueUnlimited, OnFull: model.Block}
		for _, kind := range slices.Sorted(maps.Keys(q.service)) {
			o := &model.Operation{Name: kind, Component: sys}
			if d := q.network[kind]; d >= minLatency {
				o.Steps = append(o.Steps, model.Step{Kind: model.StepDelay, Demand: model.Det(round(d, 4))})
			}
			demand := model.Exp(round(q.service[kind], 4))
			switch q.how {
			case inOrder:
				o.Steps = append(o.Steps, model.Step{Kind: model.StepDisk, Disk: q.disk, Demand: demand})
			case sharedCores:
				o.Steps = append(o.Steps, model.Step{Kind: model.StepCPU, Demand: demand})
			}
			c.Operations = append(c.Operations, o)
			g.rep.Operations++
		}
		g.m.Components = append(g.m.Components, c)
	}
}

// queueStep is the step of an external call to target where its system's
// calls wait for servers, else nil.
func (g *generator) queueStep(target string) *model.Step {
	comp, op := splitID(externalTargetID(target))
	if q := g.queues[comp]; q != nil {
		if _, ok := q.service[op]; ok {
			return &model.Step{Kind: model.StepCall, Target: comp + "/" + op}
		}
	}
	return nil
}
