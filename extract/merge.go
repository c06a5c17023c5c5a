package extract

import (
	"maps"
	"slices"
	"sort"
	"strings"
)

// Merge adds the state o, folded from traces disjoint from those of s, into
// s. Afterwards s is the state of all their traces. o must not be used
// afterwards: Merge may take parts of it over.
func (s *State) Merge(o *State) {
	// Whether the two states' requests interleave in time, beyond the
	// lateness sessions allow for (see sessionStats.merge).
	interleaved := s.Traces > 0 && o.Traces > 0 &&
		min(s.Last, o.Last)-max(s.First, o.First) > sessionLag
	s.Traces += o.Traces
	s.Spans += o.Spans
	s.Modeled += o.Modeled
	s.Partial += o.Partial
	s.OutsideWindow += o.OutsideWindow
	s.WithCPU += o.WithCPU
	s.Sampled += o.Sampled
	s.RateLimited += o.RateLimited
	if o.keptMin > 0 && (s.keptMin == 0 || o.keptMin < s.keptMin) {
		s.keptMin = o.keptMin
	}
	s.keptMax = max(s.keptMax, o.keptMax)
	s.weights += o.weights
	s.links.merge(&o.links)
	for k, n := range o.callers {
		s.callers[k] += n
	}
	for rg, w := range o.shapes {
		if mine := s.shapes[rg]; mine != nil {
			mine.merge(w)
		} else {
			s.shapes[rg] = w
		}
	}
	s.First = min(s.First, o.First)
	s.Last = max(s.Last, o.Last)
	// Executions that ran alone in o may have overlapped executions of s,
	// which neither state can see: the merged samples are exact when the
	// two sets did not run at the same time (a split by time) and
	// otherwise count some shared executions as alone.
	o.finishSolo()
	mergeEach(s.calm, o.calm)
	mergeEach(s.occupied, o.occupied)
	mergeEach(s.starts, o.starts)
	mergeEach(s.choices, o.choices)
	for id, op := range o.ops {
		mine := s.ops[id]
		if mine == nil {
			s.ops[id] = op
			continue
		}
		mine.count += op.count
		for i := 1; i < soloLevelCount; i++ {
			mine.within[i].merge(op.within[i])
		}
		for i := range mine.begun {
			mine.begun[i] += op.begun[i]
		}
		for i := range mine.ownAtStart {
			mine.ownAtStart[i].merge(op.ownAtStart[i])
		}
		mine.errors += op.errors
		mine.resumes += op.resumes
		mine.resumedNs += op.resumedNs
		mine.countSq += op.countSq
		mine.cpuSq += op.cpuSq
		mine.resp.merge(op.resp)
		mine.self.merge(op.self)
		mine.solo.merge(op.solo)
		mine.cpu.merge(op.cpu)
		mine.offCPU.merge(op.offCPU)
		mine.preSpan.merge(op.preSpan)
		mine.resumeGap.merge(op.resumeGap)
		mine.gapCalls += op.gapCalls
		mergeParamStats(mine.params, op.params)
		for class, vs := range op.variants {
			byClass := mine.variants[class]
			if byClass == nil {
				mine.variants[class] = vs
				continue
			}
			for sig, v := range vs {
				if w := byClass[sig]; w != nil {
					w.count += v.count
					mergeElems(w.elems, v.elems)
				} else {
					byClass[sig] = v
				}
			}
		}
	}
	s.requests += o.requests
	for id, e := range o.entries {
		mine := s.entries[id]
		if mine == nil {
			s.entries[id] = e
			continue
		}
		mine.count += e.count
		mine.weight += e.weight
		mine.linked += e.linked
		mine.resp.merge(e.resp)
		for sec, n := range e.perSecond {
			mine.perSecond[sec] += n
		}
		mine.arrivals.merge(e.arrivals)
		for p, byBucket := range e.params {
			for b, n := range byBucket {
				mine.foldParamCount(p, b, n)
			}
		}
	}
	s.Windows.Merge(o.Windows)
	mergeEach(s.siteTimes, o.siteTimes)
	mergeEach(s.txTimes, o.txTimes)
	mergeEach(s.txHeld, o.txHeld)
	mergeEach(s.toEnd, o.toEnd)
	mergeEach(s.toEndOwn, o.toEndOwn)
	for k, n := range o.siteBare {
		s.siteBare[k] += n
	}
	if o.sessions != nil {
		if s.sessions == nil {
			s.sessions = newSessionStats()
		}
		s.sessions.merge(o.sessions, interleaved)
	}
	for p, vals := range o.categories {
		if s.categories[p] == nil {
			s.categories[p] = map[string]bool{}
		}
		for v := range vals {
			s.categories[p][v] = true
		}
	}
	s.mergeReplicas(o)
	s.mergeProcesses(o)
	mergeEach(s.conc, o.conc)
	mergeEach(s.peers, o.peers)
	maps.Copy(s.dbPeers, o.dbPeers)
	for comp, p := range o.placement {
		mine := s.placement[comp]
		if mine == nil {
			s.placement[comp] = p
			continue
		}
		mine.hosts = addCounts(mine.hosts, p.hosts)
		mine.instances = addCounts(mine.instances, p.instances)
		mine.runtimes = addCounts(mine.runtimes, p.runtimes)
		mine.procs = addCounts(mine.procs, p.procs)
		mine.hostLife = widenLives(mine.hostLife, p.hostLife)
		mine.instLife = widenLives(mine.instLife, p.instLife)
		mine.procLife = widenLives(mine.procLife, p.procLife)
	}
}

// addCounts adds src's counts to dst's, making dst where it is nil and
// src holds any, and returns it.
func addCounts(dst, src map[string]int64) map[string]int64 {
	if dst == nil && len(src) > 0 {
		dst = map[string]int64{}
	}
	for k, n := range src {
		dst[k] += n
	}
	return dst
}

// widenLives widens dst's lifetimes to take in src's, making dst where it
// is nil and src holds any, and returns it.
func widenLives(dst, src map[string]lifetime) map[string]lifetime {
	if dst == nil && len(src) > 0 {
		dst = map[string]lifetime{}
	}
	for k, l := range src {
		dst[k] = dst[k].widen(l.First, l.Last)
	}
	return dst
}

func mergeElems(a, b []*elem) {
	for i, e := range b {
		for k, n := range e.times {
			a[i].times[k] += n
		}
		a[i].latency.merge(e.latency)
		for j := range e.lists {
			mergeElems(a[i].lists[j], e.lists[j])
		}
	}
}

// covered is the time the traces cover, in seconds: from the first to the
// last arrival, widened by one mean interarrival time so that n arrivals
// measure n intervals, less the idle stretches (see activity).
func (s *State) covered() float64 { return s.activity().span }

// span is the time over which the traces' counts of requests, executions
// and calls are the system's rates: the covered time times the fraction of
// the requests the traces kept (see Kept). Sums the windows hold, which
// count each execution as often as it stands for, are rates over the
// covered time.
func (s *State) span() float64 { return s.covered() * s.Kept() }

// Idle stretches: at least idleMinSeconds whole seconds without an arrival,
// in which the traces' rate would have brought idleArrivals or more. At any
// steady rate a Poisson stream leaves such a gap with probability below
// e^-20; a gap that long is a pause of the system's use (a night, the time
// between two load tests), whose length says nothing about the rates.
const (
	idleMinSeconds = 10
	idleArrivals   = 20
)

// activity is when the traces' requests arrived.
type activity struct {
	// n counts the requests, first and last bound their arrivals (Unix
	// nanoseconds): the key of the cache.
	n, first, last int64
	// span is the covered time less the idle stretches, in seconds.
	span float64
	// gaps are the idle stretches, whole Unix seconds [from, to), in order.
	gaps []idleGap
	// idle is their length in seconds.
	idle float64
}

// idleGap is an idle stretch of whole seconds [from, to).
type idleGap struct{ from, to int64 }

// across tells whether an idle stretch lies within seconds [from, to].
func (a *activity) across(from, to int64) bool {
	i := sort.Search(len(a.gaps), func(i int) bool { return a.gaps[i].to > from })
	return i < len(a.gaps) && a.gaps[i].from <= to
}

// activity finds the idle stretches from the arrivals per second: a
// stretch of empty seconds is idle when it is idleMinSeconds long and the
// rate over the time outside the idle stretches would have brought
// idleArrivals into it. Removing a stretch raises that rate, so the test is
// repeated until no further stretch qualifies. The result is cached until
// the state changes.
func (s *State) activity() *activity {
	n := s.requests
	if a := s.active; a != nil && a.n == n && a.first == s.First && a.last == s.Last {
		return a
	}
	a := &activity{n: n, first: s.First, last: s.Last}
	s.active = a
	if n < 2 || s.Last <= s.First {
		return a
	}
	total := seconds(s.Last-s.First) * float64(n) / float64(n-1)
	a.span = total
	seen := map[int64]bool{}
	for _, e := range s.entries {
		for sec := range e.perSecond {
			seen[sec] = true
		}
	}
	secs := slices.Sorted(maps.Keys(seen))
	var empty []idleGap
	for i := 1; i < len(secs); i++ {
		if secs[i]-secs[i-1]-1 >= idleMinSeconds {
			empty = append(empty, idleGap{secs[i-1] + 1, secs[i]})
		}
	}
	for {
		rate := float64(n) / (total - a.idle)
		var gaps []idleGap
		idle := 0.0
		for _, g := range empty {
			if l := float64(g.to - g.from); rate*l >= idleArrivals {
				gaps = append(gaps, g)
				idle += l
			}
		}
		if len(gaps) == len(a.gaps) {
			break
		}
		a.gaps, a.idle = gaps, idle
	}
	a.span = total - a.idle
	return a
}

// merger is a part of the state that takes in another of its kind.
type merger[T any] interface{ merge(T) }

// mergeEach merges each part of o into the part of s under the same key,
// taking over those s does not have.
func mergeEach[K comparable, V merger[V]](s, o map[K]V) {
	for k, v := range o {
		if mine, ok := s[k]; ok {
			mine.merge(v)
		} else {
			s[k] = v
		}
	}
}

// mergeProcesses makes s and o agree, before their profiles merge, on the
// replicas that ran several processes, as mergeReplicas does on the
// components that ran on several replicas (splitProcess).
func (s *State) mergeProcesses(o *State) {
	comp := func(rg string) string { return strings.Split(rg, "\x00")[1] }
	mergeSoles(s.soleProcess, o.soleProcess,
		func(rg, one string) { s.splitProcess(rg, comp(rg), one) },
		func(rg, one string) { o.splitProcess(rg, comp(rg), one) })
}

// mergeSoles makes the one values seen per key in two states (noteSole),
// mine and theirs, agree: a key only theirs has comes over as it is; where
// the two differ, each side that saw one value splits it off (split and
// splitTheirs), and both then hold "".
func mergeSoles(mine, theirs map[string]string, split, splitTheirs func(key, one string)) {
	for _, key := range slices.Sorted(maps.Keys(theirs)) {
		a, seen := mine[key]
		b := theirs[key]
		switch {
		case !seen:
			mine[key] = b
		case a == b:
			// The same one value, or several in both.
		default:
			if a != "" {
				split(key, a)
			}
			if b != "" {
				splitTheirs(key, b)
			}
		}
	}
}

// mergeReplicas makes s and o agree, before their profiles merge, on the
// components that ran on several replicas: one that ran on one replica in
// a state and on another, or on several, in the other gets its
// per-replica profiles where it had none (splitReplicas).
func (s *State) mergeReplicas(o *State) {
	mergeSoles(s.soleReplica, o.soleReplica, s.splitReplicas, o.splitReplicas)
}
