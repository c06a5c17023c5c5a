package extract

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/perfcast/perfcast/internal/textout"
	"github.com/perfcast/perfcast/metrics"
)

// poolHoldSlack is the share by which the connections' measured mean
// hold may differ from what the spans show before it is warned about,
// where it differs beyond chance too: the clocks of the pool and of the
// spans start and stop a little apart.
const poolHoldSlack = 0.1

// checkPoolTimes sets what each component's connection pools measured
// of their connections (Estimates.PoolTimes, summed over its pools)
// beside what its spans show (tracedHolds): the mean time a connection
// was held against the mean hold of its calls to SQL databases outside
// transactions and of its transactions (first call to last), and the
// mean wait for a connection against the model's expected wait at the
// observed load (resourceWait) where one resource is held around those
// calls. A hold within poolHoldSlack or four standard errors (closeTo)
// is said. One longer, but as long as the component's executions from
// their first call to a database to their end, is a connection kept to
// the request's end: that resource is held so (toEndHolds). Any other is
// warned about: connections taken before the first statement, or kept
// past the last, make the model's pool waits short; spans longer than
// the hold make them long.
func (g *generator) checkPoolTimes() {
	if g.est == nil {
		return
	}
	for _, comp := range slices.Sorted(maps.Keys(g.est.PoolTimes)) {
		var pt metrics.PoolTime
		names := slices.Sorted(maps.Keys(g.est.PoolTimes[comp]))
		for _, pool := range names {
			pt = pt.Plus(g.est.PoolTimes[comp][pool])
		}
		if pt.Uses <= 0 && pt.Waits <= 0 {
			continue
		}
		what := fmt.Sprintf("component %s: its metrics measured pool(s) %q", comp, names)
		if len(names) == 1 {
			what = fmt.Sprintf("component %s: its metrics measured pool %q", comp, names[0])
		}
		th := g.tracedHolds(comp)
		n, sum, sq, held := th.calls.n, th.calls.sum, th.calls.sq, th.held
		n2, sum2, sq2 := th.toEnd.n, th.toEnd.sum, th.toEnd.sq
		if n == 0 {
			g.rep.evidencef("%s, but its spans show no calls to a database (db.system, not a cache or a document store): nothing to set them against", what)
			continue
		}
		traced := sum / n
		var said []string
		if pt.Uses > 0 {
			measured := pt.MeanUse()
			diff := measured - traced
			line := fmt.Sprintf("%s: connections held %s each (%.0f uses), where its spans' calls to databases and their transactions last %s (%.0f)",
				what, textout.Duration(measured), pt.Uses, textout.Duration(traced), n)
			switch {
			case closeTo(measured, pt.Uses, traced, sq/n, n):
				said = append(said, line)
			case diff > 0 && len(held) == 1 && n2 > 0 && closeTo(measured, pt.Uses, sum2/n2, sq2/n2, n2):
				name := held[0]
				if g.toEndHolds == nil {
					g.toEndHolds = map[string]string{}
				}
				g.toEndHolds[comp] = name
				g.declaredWaits = nil // the holds change
				said = append(said, line+fmt.Sprintf(", and its executions last %s from their first call to a database to their end (%.0f): the pool keeps each connection to the request's end (a session kept open for the request, as open-session-in-view does), and %s is held so", textout.Duration(sum2/n2), n2, name))
			case diff > 0:
				why := "longer even than that: it takes them before the first statement (code before a transaction's first statement, a connection taken as the request begins)"
				if n2 > 0 && measured < sum2/n2 {
					why = "but not as long as that: some requests keep theirs past their calls (transactions whose BEGIN and COMMIT have no spans, sessions kept open for some operations only)"
				}
				g.rep.warnf("%s, and its executions %s from their first call to a database to their end: the pool holds its connections %.0f %% longer than the spans show, %s; the model's waits for the pool come out short; a passive resource declared around the operations that hold it (passive NAME: {capacity: N, operations: [...]}) holds it as long", line, toEndText(n2, sum2), 100*diff/traced, why)
			default:
				g.rep.warnf("%s: the spans last %.0f %% longer than the pool holds its connections; the client spans hold more than the connection's use (a wait for the connection inside them, the network), and the model holds the pool that much longer", line, -100*diff/traced)
			}
		}
		if pt.Waits > 0 && len(held) == 1 {
			name := held[0]
			said = append(said, fmt.Sprintf("a wait for a connection of %s (%.0f requests), where the model's %s waits %s at the observed load", textout.Duration(pt.MeanWait()), pt.Waits, name, textout.Duration(g.resourceWait(name))))
		}
		if len(said) > 0 {
			if !strings.HasPrefix(said[0], what) {
				said[0] = what + ": " + said[0]
			}
			g.rep.evidencef("%s", strings.Join(said, "; "))
		}
	}
}

// foldToEnd records, for each database (dbPeers) an execution of
// operation op (id) that ended at end called (fs its calls), the time
// from its first call to that database to the execution's end and its
// own time in it (State.toEnd, toEndOwn), at the site of that first call
// on replica, as externalCall keeps it.
func (s *State) foldToEnd(op *opStats, id string, fs []found, replica string, end int64) {
	first := -1
	for i, f := range fs {
		peer, _, ok := s.dbCall(f)
		if !ok {
			continue
		}
		if first >= 0 {
			if p, _, _ := strings.Cut(fs[first].target, ": "); p != peer {
				// Calls to several databases: each its own, the rare case.
				s.foldToEndEach(op, id, fs, replica, end)
				return
			}
			if f.start >= fs[first].start {
				continue
			}
		}
		first = i
	}
	if first >= 0 {
		s.addToEnd(op, id, fs, replica, fs[first], end)
	}
}

// foldToEndEach is foldToEnd for an execution that called several
// databases.
func (s *State) foldToEndEach(op *opStats, id string, fs []found, replica string, end int64) {
	firsts := map[string]int{}
	for i, f := range fs {
		peer, _, ok := s.dbCall(f)
		if !ok {
			continue
		}
		if j, seen := firsts[peer]; !seen || f.start < fs[j].start {
			firsts[peer] = i
		}
	}
	for _, peer := range slices.Sorted(maps.Keys(firsts)) {
		s.addToEnd(op, id, fs, replica, fs[firsts[peer]], end)
	}
}

// addToEnd adds to the site of first the time from its start to end and
// the execution's own time in it.
func (s *State) addToEnd(op *opStats, id string, fs []found, replica string, first found, end int64) {
	e := s.extSiteOf(op, id, first.target, replica)
	if e.toEnd == nil {
		peer, _, _ := strings.Cut(first.target, ": ")
		key := siteGroup(id, peer)
		e.toEnd, e.toEndOwn = sampleAt(s.toEnd, key), sampleAt(s.toEndOwn, key)
	}
	var own []interval
	own, s.callBuf = ownIntervals(s.ownBuf[:0], s.callBuf, first.start, max(end, first.start), fs)
	s.ownBuf = own
	var ownNs int64
	for _, iv := range own {
		ownNs += iv.end - iv.start
	}
	e.toEnd.add(seconds(max(end-first.start, 0)))
	e.toEndOwn.add(seconds(ownNs))
}

// closeTo reports whether a pool's measured mean hold, over uses, is
// within poolHoldSlack or four standard errors of a mean the spans show
// over n holds with mean square sq: the spans' spread, taken for the
// pool's too.
func closeTo(measured, uses, mean, sq, n float64) bool {
	se := math.Sqrt(math.Max(sq-mean*mean, 0) * (1/n + 1/uses))
	return math.Abs(measured-mean) <= max(poolHoldSlack*mean, 4*se)
}

// sums are a count of holds, their sum and their sum of squares.
type sums struct{ n, sum, sq float64 }

// add adds d's holds.
func (s *sums) add(d *sample) {
	if d != nil && d.n > 0 {
		s.n, s.sum, s.sq = s.n+float64(d.n), s.sum+d.sum, s.sq+d.sq
	}
}

// tracedHolds are what component comp's spans show of its connections'
// holds: its calls to SQL databases outside transactions and its
// transactions (calls), its executions' times from their first call to
// such a database to their end (toEnd), and the resources held around
// those calls, sorted.
type tracedHolds struct {
	calls, toEnd sums
	held         []string
}

// tracedHolds sums, for component comp, its spans' holds (tracedHolds).
func (g *generator) tracedHolds(comp string) tracedHolds {
	var th tracedHolds
	sqlKey := func(key string) (caller, target string, ok bool) {
		parts := strings.Split(key, "\x00")
		if len(parts) != 3 || componentOf(parts[1]) != comp {
			return "", "", false
		}
		peer, _, _ := strings.Cut(parts[2], ": ")
		return parts[1], parts[2], sqlSystem(g.s.dbPeers[peer])
	}
	for _, key := range slices.Sorted(maps.Keys(g.s.toEnd)) {
		if _, _, ok := sqlKey(key); ok {
			th.toEnd.add(g.s.toEnd[key])
		}
	}
	held := map[string]bool{}
	for _, key := range slices.Sorted(maps.Keys(g.s.siteTimes)) {
		caller, target, ok := sqlKey(key)
		if !ok || !strings.Contains(target, ": ") {
			continue
		}
		th.calls.add(g.s.siteTimes[key])
		th.calls.add(g.s.txTimes[key])
		if name, ok := g.holdOf(caller, target); ok {
			held[name] = true
		}
	}
	th.held = slices.Sorted(maps.Keys(held))
	return th
}

// toEndText says how long executions last from their first call to a
// database to their end: n of them, sum seconds in all.
func toEndText(n, sum float64) string {
	if n <= 0 {
		return "show no such time"
	}
	return fmt.Sprintf("last %s", textout.Duration(sum/n))
}
