package extract

import (
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/perfcast/perfcast/internal/textout"
	"github.com/perfcast/perfcast/trace"
)

// workerMinOverlaps is how many times executions arriving at random
// would have found one of a component's processes busy, at the least,
// for its processes' never doing so to show that each serves one request
// at a time (no overlap where Poisson's count has this mean: e^−20).
const workerMinOverlaps = 20

// keepShare is the share of a caller process's calls to a component that
// must have gone to one of its processes for the caller to keep to it,
// and the share of the component's executions that must have come from
// such callers for them to explain its processes' serving one request
// at a time (inferWorkers).
const keepShare = 0.9

// keepMinCalls is the fewest calls a caller process must have sent a
// component for its keeping to one process to count: callers spreading
// their calls at random over two processes send nine in ten of twenty to
// one with a probability of 4·10⁻⁴, while a caller that sent one call
// keeps to its process whatever it does.
const keepMinCalls = 20

// processPair names a process of a component on a machine (ProcessOf)
// and a process that called it: the caller's component and its process,
// else its replica, else its host; both "" where the execution had no
// caller in another process (a root span, a call from within its own
// process).
type processPair struct {
	comp, proc             string
	callerComp, callerProc string
}

// noteCaller counts the execution of component comp in process p,
// rooted at node n, under the process that called it. Every execution
// on a machine that names its process is counted, not only those of
// replicas profiled apart (noteProcess), so that merged parts count what
// the whole does.
func (s *State) noteCaller(comp, p string, n *trace.Node) {
	k := processPair{comp: comp, proc: p}
	if n.Parent != nil {
		ps := n.Parent.Span
		c := ProcessOf(ps)
		if c == "" {
			c = ps.Replica()
		}
		if c == "" {
			c = ps.HostKey()
		}
		if ps.Service != comp || c != p {
			k.callerComp, k.callerProc = ps.Service, c
		}
	}
	s.callers[k]++
}

// keptTo is the share of the executions of component comp's processes
// procs that came from callers that each kept to one of them: sent
// keepShare or more of their calls to comp, keepMinCalls or more, to
// that one process.
func (s *State) keptTo(comp string, procs []string) float64 {
	in := make(map[string]bool, len(procs))
	for _, p := range procs {
		in[p] = true
	}
	type caller struct{ comp, proc string }
	sent := map[caller]int64{}
	most := map[caller]int64{}
	var total int64
	for k, n := range s.callers {
		if k.comp != comp || !in[k.proc] {
			continue
		}
		total += n
		if k.callerComp == "" && k.callerProc == "" {
			continue
		}
		c := caller{k.callerComp, k.callerProc}
		sent[c] += n
		most[c] = max(most[c], n)
	}
	if total == 0 {
		return 0
	}
	var kept int64
	for c, n := range sent {
		if n >= keepMinCalls && float64(most[c]) >= keepShare*float64(n) {
			kept += most[c]
		}
	}
	return float64(kept) / float64(total)
}

// inferWorkers finds the components that serve each request in a process
// of its own for the whole request, as a pre-forking server's workers do
// (gunicorn's sync workers, PHP-FPM's children, Unicorn, Puma in cluster
// mode with one thread): their spans name several processes on a machine
// (by service.instance.id, else process.pid), none of which ever ran two
// executions at once, where as many executions arriving at random would
// have found it busy workerMinOverlaps times or more (each its number
// of executions times 1 − e^−ρ, ρ its busy share), while a replica ran
// several at once in different processes (so the callers do not wait for
// each other). Such a component gets a pool of as many threads a replica
// as processes served at once (their lifetimes averaged as replicas'
// are), which a request holds through its calls, as the hidden limits'
// pools are; the hidden limits, which need the pool full 5 % of the time,
// find none below about half its load.
//
// Callers that each keep to one process and wait for each reply (a
// caller's sync workers, each with a keep-alive connection of its own to
// one of an event-loop server's processes) make the same profile: where
// keepShare or more of the executions came from callers that kept to
// one process (keptTo), the callers' own waits explain it and no pool is
// inferred. Callers that name no process, replica or host (spans whose
// parent is missing) explain nothing.
func (g *generator) inferWorkers(keys []string) {
	type proc struct {
		name string
		c    *concurrency
	}
	byComp := map[string][]proc{}
	for _, key := range keys {
		rest, ok := strings.CutPrefix(key, "proc\x00")
		if !ok {
			continue
		}
		comp, name, _ := strings.Cut(rest, "\x00")
		if _, pooled := g.threads[comp]; !pooled {
			byComp[comp] = append(byComp[comp], proc{name, g.s.conc[key].finished()})
		}
	}
	for _, comp := range slices.Sorted(maps.Keys(byComp)) {
		procs := byComp[comp]
		var expected float64
		var execs int64
		var names []string
		counts, lives := map[string]int64{}, map[string]lifetime{}
		one := len(procs) > 1
		for _, p := range procs {
			c := p.c
			if c.max > 1 {
				one = false
				break
			}
			if c.max < 1 || c.last <= c.first {
				continue
			}
			busy := float64(c.levelTime[1]) / float64(c.last-c.first)
			expected += float64(c.busyPeriods) * -math.Expm1(-busy)
			execs += c.busyPeriods
			names = append(names, p.name)
			counts[p.name], lives[p.name] = c.busyPeriods, lifetime{c.first, c.last}
		}
		if !one || expected < workerMinOverlaps || len(names) < 2 {
			continue
		}
		several := false
		for _, key := range keys {
			if strings.HasPrefix(key, "replica\x00"+comp+"\x00") && g.s.conc[key].finished().max >= 2 {
				several = true
				break
			}
		}
		if !several {
			continue
		}
		if kept := g.s.keptTo(comp, names); kept >= keepShare {
			g.rep.evidencef("component %s: each of its %d processes (%s) served one request at a time, but %.0f%% of its executions came from callers that each sent %.0f%% or more of their calls to one of them: the callers' waits, not a pool of workers, keep each to one request; no pool inferred",
				comp, len(names), textout.Abbreviate(names, 4), 100*kept, 100*keepShare)
			continue
		}
		replicas := g.replicasOf(comp)
		avg, peak, _ := activeReplicas(names, counts, lives)
		k := max(1, int(math.Round(avg/float64(replicas))))
		g.threads[comp] = k
		g.rep.evidencef("component %s: each of its %d processes (%s) served one request at a time, over %d executions where as many arriving at random would have found one busy %.0f times, while a replica served several at once: a pre-forking server's workers, a pool of %d threads a replica (%.1f processes at once on average, at most %d, over %d replica(s))",
			comp, len(names), textout.Abbreviate(names, 4), execs, expected, k, avg, peak, replicas)
	}
}
