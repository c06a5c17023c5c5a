package extract

import (
	"cmp"
	"maps"
	"math"
	"net"
	"slices"
	"strings"

	"github.com/perfcast/perfcast/estimate"
	"github.com/perfcast/perfcast/ingest"
	"github.com/perfcast/perfcast/internal/textout"
	"github.com/perfcast/perfcast/model"
)

// A system that answers calls without spans of its own (a database, a
// cache, a service outside the traces) is seen only by its clients'
// spans: an external call, by default a delay of the latency the clients
// measured, which no load changes. Where its machine is known (the client
// spans' server.address, else their peer.service) and the metrics measure
// that machine's CPU, extraction estimates the CPU demand of each kind of
// call from the calls' rates, as it does for operations whose spans carry
// no CPU time, and the system becomes a component on that host: each call
// its CPU demand, then the rest of its latency as a delay. Its CPU then
// queues as the load grows.

// peerOf is the name of the system an external call went to, or "".
func peerOf(sp *ingest.Span) string {
	return cmp.Or(sp.PeerService, sp.DBSystem, sp.ServerAddress)
}

// externalHost names the machine of an external call: its server.address
// without a port, else its peer.service; "" for a loopback address or
// none, whose machine is not told apart from the caller's.
func externalHost(sp *ingest.Span) string {
	h := sp.ServerAddress
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	h = strings.Trim(h, "[]")
	if h == "" {
		h = sp.PeerService
	}
	if ip := net.ParseIP(h); ip != nil && ip.IsLoopback() || strings.EqualFold(h, "localhost") {
		return ""
	}
	return h
}

// externalID is the operation an external call becomes where its system is
// modeled: `peer/name`; "" without a peer.
func externalID(peer, name string) string {
	if peer == "" {
		return ""
	}
	return strings.ReplaceAll(peer, "/", "-") + "/" + name
}

// externalTargetID is externalID of an external call's target as
// externalName writes it ("peer: name").
func externalTargetID(target string) string {
	peer, name, ok := strings.Cut(target, ": ")
	if !ok {
		return ""
	}
	return externalID(peer, name)
}

// addExternal counts one external call, to operation id of a system on
// host, that ended at end (Unix nanoseconds) after latency seconds.
func (w *Windows) addExternal(host, id string, end int64, latency, weight float64) {
	w.Add(host, id, end, latency, math.NaN(), weight)
	h := w.hosts[host]
	if h.external == nil {
		h.external = map[string]bool{}
	}
	h.external[id] = true
}

// allExternal reports whether every operation of the host is an external
// call's.
func (h *hostWindows) allExternal() bool {
	for _, op := range h.ops {
		if !h.external[op] {
			return false
		}
	}
	return len(h.ops) > 0
}

// modeled returns the windows of host that demand estimation uses: none
// for a host of external calls only that the metrics do not measure (it
// stays a delay and needs no word), and without the external calls for a
// host that also runs traced operations (their spans tell its work apart).
func (h *hostWindows) modeled(host string, lookup func(string) string) *hostWindows {
	switch {
	case len(h.external) == 0:
		return h
	case h.allExternal():
		if lookup(host) == "" {
			return nil
		}
		return h
	}
	return h.filter(func(op string) bool { return !h.external[op] })
}

// external is a system seen only by its clients' spans, modeled as a
// component.
type external struct {
	id   string // component/operation
	host *model.Host
	r    estimate.Result
	n    float64 // calls, as many as the traces stand for
}

// placeExternals finds the external calls whose CPU demand the metrics
// gave (see the top of this file) and places their systems: one host per
// system, the model host of that name if there is one, else a new one. A
// system whose calls went to several machines, or that has the name of a
// traced component, stays a delay. It returns the names of the hosts, as
// the configuration may give them.
func (g *generator) placeExternals() []string {
	g.externals = map[string]*external{}
	if len(g.est.PerOp) == 0 || g.s.Windows == nil {
		return nil
	}
	hostsOf := map[string][]string{} // operation → window hosts
	calls := map[string]float64{}
	for _, host := range g.s.Windows.Hosts() {
		h := g.s.Windows.hosts[host]
		for i, op := range h.ops {
			if !h.external[op] {
				continue
			}
			hostsOf[op] = append(hostsOf[op], host)
			for _, idx := range slices.Sorted(maps.Keys(h.cells)) {
				if cells := h.cells[idx]; i < len(cells) {
					calls[op] += cells[i].n
				}
			}
		}
	}
	// A system is modeled when all its calls went to one machine.
	machineOf := map[string]string{}
	for _, id := range slices.Sorted(maps.Keys(hostsOf)) {
		comp, _ := splitID(id)
		hs := hostsOf[id]
		if m, ok := machineOf[comp]; len(hs) > 1 || ok && m != hs[0] {
			machineOf[comp] = "" // several
			continue
		}
		machineOf[comp] = hs[0]
	}
	var names []string
	g.toldExternal = map[string]bool{} // systems whose calls stay delays, said once
	told := g.toldExternal
	for _, id := range slices.Sorted(maps.Keys(hostsOf)) {
		r, ok := g.est.PerOp[id]
		if !ok || !(r.CPU > 0) {
			continue
		}
		comp, _ := splitID(id)
		machine := machineOf[comp]
		if machine == "" || g.hostOf[comp] != nil {
			if !told[comp] {
				told[comp] = true
				why := "called on several machines"
				if machine != "" {
					why = "named as a traced component is"
				}
				g.rep.evidencef("%s: a system seen only by its clients' spans, %s: its calls stay delays", comp, why)
			}
			continue
		}
		h := g.m.Host(hostSafe(machine))
		if h == nil {
			h = &model.Host{Name: hostSafe(machine), Replicas: 1, Balancer: model.RoundRobin,
				CPU: model.CPU{Cores: 1, Speed: 1, Scheduling: model.PS}}
			if hc, ok := g.cfg.Hosts[machine]; ok {
				g.configure(h, hc)
			}
			g.m.Hosts = append(g.m.Hosts, h)
		}
		if !slices.Contains(names, machine) {
			names = append(names, machine)
		}
		g.externals[id] = &external{id: id, host: h, r: r, n: calls[id]}
	}
	return names
}

// externalBusy adds the modeled external systems' CPU to their hosts'
// busy cores.
func (g *generator) externalBusy() {
	covered := g.s.covered()
	if covered <= 0 {
		return
	}
	for _, id := range slices.Sorted(maps.Keys(g.externals)) {
		x := g.externals[id]
		g.busy[x.host] += x.r.CPU * x.n / covered
	}
}

// externalComponents adds the components of the modeled external systems:
// each call its CPU demand, then the rest of the latency its clients
// measured as a delay.
func (g *generator) externalComponents() {
	comps := map[string]*model.Component{}
	for _, id := range slices.Sorted(maps.Keys(g.externals)) {
		x := g.externals[id]
		compName, opName := splitID(id)
		c := comps[compName]
		if c == nil {
			c = &model.Component{Name: compName, Host: x.host.Name, Queue: model.QueueUnlimited, OnFull: model.Block}
			comps[compName] = c
			g.m.Components = append(g.m.Components, c)
		}
		lat := g.externalLatency(id)
		o := &model.Operation{Name: opName, Component: compName}
		o.Steps = append(o.Steps, model.Step{Kind: model.StepCPU, Demand: model.Exp(round(x.r.CPU, 4))})
		// The latency less the CPU demand and the wait for the CPU at
		// the observed loads, which the model makes again.
		rest := lat.mean() - x.r.CPU - x.r.CPU*g.waitFactorOn(x.host, "", 0)
		if rest >= minLatency {
			o.Steps = append(o.Steps, model.Step{Kind: model.StepDelay, Demand: withMean(g.fit("external "+id, lat), rest)})
		}
		c.Operations = append(c.Operations, o)
		g.rep.Operations++
		how := "identified"
		if !x.r.Identified {
			how = "not identified by the data; an assumption"
		}
		g.rep.evidencef("%s: called without a span of its own, on host %s whose CPU the metrics measure: CPU demand %s estimated from utilization by %s (%s), the rest of its %s latency (%s) a delay",
			id, x.host.Name, textout.Duration(x.r.CPU), x.r.Method, how, textout.Duration(lat.mean()), textout.Duration(math.Max(rest, 0)))
	}
}

// externalLatency is the latency the callers measured of the calls that
// became operation id.
func (g *generator) externalLatency(id string) *sample {
	out := newSample()
	var walk func(es []*elem)
	walk = func(es []*elem) {
		for _, e := range es {
			if e.kind == elemExternal && externalTargetID(e.target) == id {
				out.merge(e.latency)
			}
			for _, l := range e.lists {
				walk(l)
			}
		}
	}
	for _, opID := range slices.Sorted(maps.Keys(g.s.ops)) {
		op := g.s.ops[opID]
		for _, class := range slices.Sorted(maps.Keys(op.variants)) {
			for _, sig := range slices.Sorted(maps.Keys(op.variants[class])) {
				walk(op.variants[class][sig].elems)
			}
		}
	}
	return out
}

// externalStep is the step of an external call to target: a call to its
// system's operation where the system is modeled, else nil.
func (g *generator) externalStep(target string) *model.Step {
	if x := g.externals[externalTargetID(target)]; x != nil {
		return &model.Step{Kind: model.StepCall, Target: x.id}
	}
	return nil
}
