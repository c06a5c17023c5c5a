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
// beside what its spans show: the mean time a connection was held
// against the mean hold of its calls to SQL databases outside
// transactions and of its transactions (first call to last), and the
// mean wait for a connection against the model's expected wait at the
// observed load (resourceWait) where one resource is held around those
// calls. A hold that differs by more than poolHoldSlack and by more than
// four standard errors (the spans' spread, taken for the pool's too) is
// warned about: connections taken before the first statement, or kept
// past the last, make the model's pool waits short.
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
		var n, sum, sq float64
		held := map[string]bool{}
		for _, key := range slices.Sorted(maps.Keys(g.s.siteTimes)) {
			parts := strings.Split(key, "\x00")
			if len(parts) != 3 || componentOf(parts[1]) != comp {
				continue
			}
			peer, _, ok := strings.Cut(parts[2], ": ")
			if !ok || !sqlSystem(g.s.dbPeers[peer]) {
				continue
			}
			for _, d := range []*sample{g.s.siteTimes[key], g.s.txTimes[key]} {
				if d != nil && d.n > 0 {
					n += float64(d.n)
					sum += d.sum
					sq += d.sq
				}
			}
			if name, ok := g.holdOf(parts[1], parts[2]); ok {
				held[name] = true
			}
		}
		if n == 0 {
			g.rep.evidencef("%s, but its spans show no calls to a database (db.system, not a cache or a document store): nothing to set them against", what)
			continue
		}
		traced := sum / n
		var said []string
		if pt.Uses > 0 {
			measured := pt.MeanUse()
			se := math.Sqrt(math.Max(sq/n-traced*traced, 0) * (1/n + 1/pt.Uses))
			diff := measured - traced
			line := fmt.Sprintf("%s: connections held %s each (%.0f uses), where its spans' calls to databases and their transactions last %s (%.0f)",
				what, textout.Duration(measured), pt.Uses, textout.Duration(traced), n)
			switch {
			case math.Abs(diff) <= poolHoldSlack*traced || math.Abs(diff) <= 4*se:
				said = append(said, line)
			case diff > 0:
				g.rep.warnf("%s: the pool holds its connections %.0f %% longer than the spans show; it takes them before the first statement or keeps them past the last (a transaction begun with no BEGIN span and code before its first statement, a framework that keeps the connection for the whole request, as open-session-in-view does), and the model's waits for the pool come out short; a passive resource declared around the operations that hold it (passive NAME: {capacity: N, operations: [...]}) holds it as long", line, 100*diff/traced)
			default:
				g.rep.warnf("%s: the spans last %.0f %% longer than the pool holds its connections; the client spans hold more than the connection's use (a wait for the connection inside them, the network), and the model holds the pool that much longer", line, -100*diff/traced)
			}
		}
		if pt.Waits > 0 && len(held) == 1 {
			name := slices.Collect(maps.Keys(held))[0]
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
