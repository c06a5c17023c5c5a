package extract

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/perfcast/perfcast/internal/textout"
	"github.com/perfcast/perfcast/model"
)

// callHold is a passive resource held around calls: one the
// configuration declares (passive, calls) or a connection pool the
// metrics state. Every call to one of targets by a component callers
// match holds one of its units.
type callHold struct {
	name     string
	capacity int
	// callers match the calling components; nil matches every one.
	callers []*regexp.Regexp
	// targets are traced operations (`component/operation`) and external
	// calls (as externalName writes them, `peer: name`).
	targets map[string]bool
}

// holds reports whether a call by component comp to target holds h.
func (h *callHold) holds(comp, target string) bool {
	if !h.targets[target] {
		return false
	}
	if h.callers == nil {
		return true
	}
	for _, re := range h.callers {
		if re.MatchString(comp) {
			return true
		}
	}
	return false
}

// holdOf returns the passive resource a call by operation caller to
// target holds, the first declared by name.
func (g *generator) holdOf(caller, target string) (string, bool) {
	comp, _ := splitID(caller)
	for i := range g.callHolds {
		if h := &g.callHolds[i]; h.holds(comp, target) {
			return h.name, true
		}
	}
	return "", false
}

// holdCapacity is the units of the resource held around calls named
// name, 1 where none is.
func (g *generator) holdCapacity(name string) int {
	for _, h := range g.callHolds {
		if h.name == name {
			return h.capacity
		}
	}
	return 1
}

// externalTargets lists, sorted, the external calls the traces show (as
// externalName writes them), each with the callers that made them, by
// the call sites of siteTimes.
func (g *generator) externalTargets() map[string][]string {
	out := map[string][]string{}
	for _, key := range slices.Sorted(maps.Keys(g.s.siteTimes)) {
		parts := strings.Split(key, "\x00")
		if len(parts) == 3 && strings.Contains(parts[2], ": ") {
			out[parts[2]] = append(out[parts[2]], parts[1])
		}
	}
	return out
}

// declareCalls records the calls the configuration's passive resource
// name, of k units, is held around (pc.Calls, by pc.Callers): the traced
// operations and the external calls each glob matches, the external ones
// by `peer/name`. Around traced operations it takes the place of the
// locks inferred at their call sites and of the operations' own limits.
func (g *generator) declareCalls(name string, pc PassiveConfig, k int) {
	if len(pc.Calls) == 0 {
		return
	}
	h := callHold{name: name, capacity: k, targets: map[string]bool{}}
	for _, c := range pc.Callers {
		h.callers = append(h.callers, glob(c))
	}
	ops := slices.Sorted(maps.Keys(g.s.ops))
	externals := g.externalTargets()
	for _, t := range pc.Calls {
		re := glob(t)
		var matched []string
		for _, id := range ops {
			if id == t || re != nil && re.MatchString(id) {
				matched = append(matched, id)
			}
		}
		for _, x := range slices.Sorted(maps.Keys(externals)) {
			if id := externalTargetID(x); id == t || re != nil && re.MatchString(id) {
				matched = append(matched, x)
			}
		}
		if len(matched) == 0 {
			g.rep.warnf("passive %s: no operation %q in the traces, nor a call to a system without spans", name, t)
			continue
		}
		for _, m := range matched {
			h.targets[m] = true
		}
	}
	if len(h.targets) == 0 {
		return
	}
	g.callHolds = append(g.callHolds, h)
	for _, t := range slices.Sorted(maps.Keys(h.targets)) {
		who := ""
		if len(pc.Callers) > 0 {
			who = fmt.Sprintf(" from %s", strings.Join(pc.Callers, ", "))
		}
		if _, traced := g.s.ops[t]; !traced {
			g.rep.evidencef("calls%s to %s hold %s (capacity %d), as the configuration declares", who, externalTargetID(t), name, k)
			continue
		}
		for caller, sites := range g.siteLimits {
			if h.holds(componentOf(caller), t) {
				delete(sites, t)
			}
		}
		if len(pc.Callers) == 0 {
			delete(g.opLimits, t)
		}
		g.rep.evidencef("calls%s to %s hold %s (capacity %d), as the configuration declares", who, t, name, k)
	}
}

// componentOf is the component of operation id.
func componentOf(id string) string {
	comp, _ := splitID(id)
	return comp
}

// metricPools holds, around each component's calls to the database its
// spans name (db.system, a system seen only by its clients, not a cache
// or a document store: sqlSystem), a connection pool of the size its
// metrics state (Estimates.Pools): one on each replica of its host, of
// the pool's size times the processes that serve at once on a replica
// (each process has a pool of its own; the model shares their
// connections). Calls the configuration holds a resource around keep
// it. A component whose metrics state several pools, or whose spans
// call several such databases, is warned about: the spans do not say
// which calls take which pool.
func (g *generator) metricPools() {
	if g.est == nil {
		return
	}
	externals := g.externalTargets()
	for _, comp := range slices.Sorted(maps.Keys(g.est.Pools)) {
		h := g.hostOf[comp]
		if h == nil {
			continue // a service the traces do not show
		}
		pools := g.est.Pools[comp]
		names := slices.Sorted(maps.Keys(pools))
		shown := make([]string, len(names))
		for i, n := range names {
			shown[i] = fmt.Sprintf("%q of %d", n, pools[n])
		}
		targets := map[string]bool{}
		var peers []string
		for _, t := range slices.Sorted(maps.Keys(externals)) {
			peer, _, _ := strings.Cut(t, ": ")
			if !sqlSystem(g.s.dbPeers[peer]) {
				continue
			}
			for _, caller := range externals[t] {
				if _, held := g.holdOf(caller, t); !held && componentOf(caller) == comp {
					targets[t] = true
					if !slices.Contains(peers, peer) {
						peers = append(peers, peer)
					}
				}
			}
		}
		switch {
		case len(targets) == 0:
			g.rep.evidencef("component %s: its metrics state connection pool(s) %s, but its spans show no calls to a database (db.system, not a cache or a document store) that no declared resource holds: no pool is modeled", comp, strings.Join(shown, ", "))
			continue
		case len(peers) > 1:
			g.rep.warnf("component %s: its metrics state connection pool(s) %s, and its spans call %d databases (%s): which calls take which pool is not known, none is modeled; declare them (passive: NAME: {capacity: N, calls: [PEER/*], callers: [%s], per_replica: true})", comp, strings.Join(shown, ", "), len(peers), strings.Join(peers, ", "), comp)
			continue
		case len(names) > 1:
			g.rep.warnf("component %s: its metrics state %d connection pools (%s), and its spans do not say which calls take which: none is modeled; declare them (passive: NAME: {capacity: N, calls: [PEER/*], callers: [%s], per_replica: true})", comp, len(names), strings.Join(shown, ", "), comp)
			continue
		}
		procs := g.processesPerReplica(comp)
		k := pools[names[0]] * procs
		name := hostSafe(comp) + "-db-pool"
		if g.m.PassiveResource(name) != nil {
			g.rep.warnf("component %s: a passive resource %s is declared already: the connection pool its metrics state is not modeled", comp, name)
			continue
		}
		g.m.Passive = append(g.m.Passive, &model.Passive{Name: name, Capacity: k, Host: h.Name})
		g.declaredHosts[name] = h
		g.callHolds = append(g.callHolds, callHold{name: name, capacity: k, callers: []*regexp.Regexp{glob(comp)}, targets: targets})
		var calls []string
		for _, t := range slices.Sorted(maps.Keys(targets)) {
			calls = append(calls, externalTargetID(t))
		}
		per := "its process"
		if procs > 1 {
			per = fmt.Sprintf("its %d processes serving at once on a replica, each with its own pool (the model shares their connections)", procs)
		}
		g.rep.evidencef("component %s: its metrics state connection pool %s: calls to %s hold %s, %d on each replica of host %s, for %s (--set passive.%s.capacity=N asks about another size)",
			comp, shown[0], textout.Abbreviate(calls, 4), name, k, h.Name, per, name)
	}
}

// notSQL are the database systems (db.system, db.system.name) whose
// clients keep no pool of the kind the pool metrics read describe:
// caches, document, key-value, wide-column, graph and search stores.
var notSQL = map[string]bool{
	"redis": true, "valkey": true, "memcached": true, "mongodb": true, "cassandra": true,
	"elasticsearch": true, "opensearch": true, "couchbase": true, "couchdb": true,
	"dynamodb": true, "aws.dynamodb": true, "cosmosdb": true, "azure.cosmosdb": true,
	"hbase": true, "neo4j": true, "geode": true, "aerospike": true, "influxdb": true,
}

// sqlSystem reports whether a system of db.system sys is one a client
// reaches through a connection pool of the kind the pool metrics read
// describe (JDBC's, database/sql's, SQLAlchemy's): a database, not one
// of notSQL.
func sqlSystem(sys string) bool {
	return sys != "" && !notSQL[strings.ToLower(sys)]
}

// processesPerReplica is the number of component comp's processes that
// served at once on one of its replicas, on average (1 where its spans
// name fewer than two processes).
func (g *generator) processesPerReplica(comp string) int {
	pl := g.s.placement[comp]
	if pl == nil || len(pl.procs) < 2 {
		return 1
	}
	avg, _ := processesAtOnce(pl)
	return max(1, int(math.Round(avg/float64(g.replicasOf(comp)))))
}

// processesAtOnce is how many of a component's processes (placed as pl
// holds them) served at once, on average and at the most: every one
// seen, where their lives do not say.
func processesAtOnce(pl *placement) (avg float64, peak int) {
	procs := slices.Sorted(maps.Keys(pl.procs))
	avg, peak, ok := activeReplicas(procs, pl.procs, pl.procLife)
	if !ok {
		avg, peak = float64(len(procs)), len(procs)
	}
	return avg, peak
}

// inferPools looks for a connection pool in each component's calls to
// each database its spans name (a system seen only by its clients, with
// db.system) that no declared or measured pool holds: where those calls
// never ran more than k at once (on each replica, or over the system),
// while an unlimited stream of the same mean would have exceeded k often
// (the test inferLimits makes of operations and call sites), and the
// component had more than k requests in service at once on a replica
// (else its requests, not a pool, bound its calls), the calls hold a
// passive resource COMPONENT-PEER-pool of k units, on each replica of
// its host unless the bound is the system's. The pool's wait is before
// the client spans, in the caller's own time, and is taken out there as
// a declared pool's is. A pool whose wait falls inside the client spans
// (a client that opens its span before it takes a connection) leaves
// the calls' concurrency unbounded and is not found.
func (g *generator) inferPools() {
	if g.s.Sampled > 0 {
		return // the calls that overlapped are not all in the traces
	}
	externals := g.externalTargets()
	keys := slices.Sorted(maps.Keys(g.s.conc))
	for _, key := range keys {
		parts := strings.Split(key, "\x00")
		if parts[0] != "dbc" || len(parts) != 3 {
			continue
		}
		comp, peer := parts[1], parts[2]
		h := g.hostOf[comp]
		if h == nil {
			continue
		}
		targets := map[string]bool{}
		held := false
		for _, t := range slices.Sorted(maps.Keys(externals)) {
			if p, _, _ := strings.Cut(t, ": "); p != peer {
				continue
			}
			for _, caller := range externals[t] {
				if componentOf(caller) != comp {
					continue
				}
				if _, ok := g.holdOf(caller, t); ok {
					held = true
				}
				targets[t] = true
			}
		}
		if held || len(targets) == 0 {
			continue
		}
		lim, ok := g.bound(keys, key, "dbcr\x00"+comp+"\x00"+peer+"\x00", comp)
		if !ok {
			continue
		}
		if t, pooled := g.threads[comp]; pooled && t <= lim.k {
			continue // the component's threads bound its calls
		}
		if most := g.mostInService(keys, comp); most <= lim.k {
			continue
		}
		name := hostSafe(comp) + "-" + hostSafe(peer) + "-pool"
		if g.m.PassiveResource(name) != nil {
			continue
		}
		p := &model.Passive{Name: name, Capacity: lim.k}
		if lim.perReplica || h.Replicas <= 1 {
			p.Host = h.Name
			g.declaredHosts[name] = h
		}
		g.m.Passive = append(g.m.Passive, p)
		g.callHolds = append(g.callHolds, callHold{name: name, capacity: lim.k, callers: []*regexp.Regexp{glob(comp)}, targets: targets})
		g.rep.evidencef("component %s: never more than %d calls to database %s at once%s, %.0f%% of the time at %d, where unlimited calls with the same mean (%.2f) would exceed %d %.0f%% of the time, while it had more requests in service: a connection pool %s of %d held around them (passive calls declares another; --set passive.%s.capacity=N asks about another size)",
			comp, lim.k, peer, lim.where(), 100*lim.atLimit, lim.k, lim.mean, lim.k, 100*lim.unlimitedAbove, name, lim.k, name)
	}
}

// mostInService is the most requests component comp had in service at
// once on one of its replicas, by the replicas' profiles among keys
// (sorted).
func (g *generator) mostInService(keys []string, comp string) int {
	prefix := "replica\x00" + comp + "\x00"
	most := 0
	i, _ := slices.BinarySearch(keys, prefix)
	for ; i < len(keys) && strings.HasPrefix(keys[i], prefix); i++ {
		most = max(most, g.s.conc[keys[i]].finished().max)
	}
	return most
}
