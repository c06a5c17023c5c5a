package extract

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/perfcast/perfcast/internal/textout"
	"github.com/perfcast/perfcast/model"
)

// Arrivals measured after a wait. A workload's arrivals are measured on its
// entry operation's server spans' starts (arrivalCV). Where a request waits
// before the entry's span starts, for a CPU slot of its component (a Go
// server needs a processor to read the request), a thread of its pool or
// a limit on the operation, a queue evens out what leaves it: the starts
// are less bursty than the arrivals. Gamma arrivals of cv 2 at a Go front
// end whose one slot was 60 % busy started their spans with a cv of 1.47,
// and the model, given that, predicted the page 27 % fast at the observed
// load and 29 % fast at 1.2 times it (TestArrivalsBeforeSlot); at a pool
// of four threads 72 % busy, 1.42, and 25 to 46 % fast at 0.8 to 1.2 times
// the load (TestArrivalsBeforePool); at an operation limited to two at
// once, 67 % busy, 1.4, and 33 to 37 % fast (TestArrivalsBeforeOpLimit).
// The model itself tells how much its
// queue evens arrivals out: unsmoothArrivals simulates it, measures its
// own starts as the traces' were measured, and sets each such workload's
// cv to the one whose starts show the traces' cv.
const (
	// unsmoothLoad is the least load of the queue before the entry's span
	// (busy servers over servers) at which the starts are corrected: a
	// queue less busy than that keeps squared cv within about a tenth of
	// the way to its bursts' (the departures' squared cv is about
	// ρ²·cs² + (1 − ρ²)·ca², Whitt's QNA), and a simulation per
	// extraction would cost more than it tells.
	unsmoothLoad = 0.3
	// unsmoothStarts is the number of a workload's starts each simulation
	// records, about the arrivals arrivalCV measures in a block, or twice
	// the starts its traces hold where they hold fewer (the simulated cv's
	// noise then about 0.7 times the measured one's), but at least
	// unsmoothMinStarts.
	unsmoothStarts    = 20000
	unsmoothMinStarts = 4000
	// unsmoothRounds bounds the simulations; unsmoothTol is the relative
	// distance between the simulated starts' cv and the traces' within
	// which the search stops.
	unsmoothRounds = 5
	unsmoothTol    = 0.02
	// unsmoothMaxRequests bounds a simulation's requests over all
	// workloads, unsmoothMaxExecutions the operations they execute (as
	// many per request as the traces show): recording the spans of 214 528
	// requests of the shop example, about five operations each, took 3 s.
	unsmoothMaxRequests   = 400000
	unsmoothMaxExecutions = 2000000
)

// startCandidate is a workload whose arrivals unsmoothArrivals corrects.
type startCandidate struct {
	w        *model.Workload
	id       string  // its entry operation
	what     string  // names the queue before the entry's span
	measured float64 // the cv of its entry's starts in the traces
	load     float64 // of that queue
	// cv is the arrivals' cv being tried; last and lastGot the one tried
	// before and the starts' cv it gave (lastGot 0 before the first); best
	// and bestGot the one tried whose starts came closest to measured.
	cv, last, lastGot float64
	best, bestGot     float64
	done              bool
}

// unsmoothArrivals corrects the cv of the open workloads whose entry
// operation's requests wait before its span starts in a queue at least
// unsmoothLoad busy (entryQueue): by the secant method on the simulated
// starts' cv (simulatedStartCVs), all such workloads at once, from their
// measured cv, between 0.2 and 5 (arrivalCV's bounds). It leaves a workload as it
// is where its traces were sampled, its measured cv was taken as
// Poisson's, or a simulation does not reach a steady state.
func (g *generator) unsmoothArrivals() {
	var cs []*startCandidate
	// need is the simulated seconds the candidates' starts take.
	rate, need := 0.0, 0.0
	for _, w := range g.m.Workloads {
		if w.Open != nil {
			rate += w.Open.Rate
		}
		if w.Open == nil || w.Open.CV == 1 || w.Open.Rate <= 0 || len(w.Steps) != 1 || w.Steps[0].Kind != model.StepCall {
			continue
		}
		id := w.Steps[0].Target
		e := g.s.entries[id]
		if e == nil || float64(e.count) < e.weight || g.s.Sampled > 0 {
			continue
		}
		if load, what, ok := g.entryQueue(id); ok && load >= unsmoothLoad {
			cs = append(cs, &startCandidate{w: w, id: id, what: what, measured: w.Open.CV, load: load, cv: w.Open.CV})
			starts := math.Max(math.Min(unsmoothStarts, 2*float64(e.count)), unsmoothMinStarts)
			need = math.Max(need, starts/w.Open.Rate)
		}
	}
	if len(cs) == 0 {
		return
	}
	if g.cfg.Simulator == nil {
		for _, c := range cs {
			g.rep.warnf("workload %s: its requests wait for %s (%.0f %% busy) before the spans of %s start, which evens out the starts its interarrival cv (%.3g) is measured on; with no simulator given the cv is not corrected and may be too low",
				c.w.Name, c.what, 100*c.load, c.id, c.measured)
		}
		return
	}
	limit := float64(unsmoothMaxRequests)
	if perRequest := g.executionsPerRequest(); perRequest > 0 {
		limit = math.Min(limit, unsmoothMaxExecutions/perRequest)
	}
	requests := int64(math.Min(need*rate, limit))
	sims := 0
	for range unsmoothRounds {
		got, ok := g.simulatedStartCVs(cs, requests)
		if !ok {
			return
		}
		sims++
		more := false
		for _, c := range cs {
			s, seen := got[c.id]
			if c.done || !seen || s <= 0 {
				c.done = true
				continue
			}
			if c.bestGot == 0 || math.Abs(s-c.measured) < math.Abs(c.bestGot-c.measured) {
				c.best, c.bestGot = c.cv, s
			}
			if math.Abs(s-c.measured) <= unsmoothTol*c.measured {
				c.done = true
				continue
			}
			next := c.cv * c.measured / s // the starts' cv taken as proportional
			if c.lastGot > 0 && s != c.lastGot {
				next = c.cv + (c.measured-s)*(c.cv-c.last)/(s-c.lastGot)
			}
			c.last, c.lastGot = c.cv, s
			c.cv = math.Min(math.Max(next, 0.2), 5)
			more = true
		}
		if !more {
			break
		}
	}
	for _, c := range cs {
		// Out of rounds, the last step is untried: the closest tried stays.
		if cv := round(c.best, 3); c.bestGot > 0 && cv != c.w.Open.CV {
			c.w.Open.CV = cv
			g.rep.evidencef("workload %s: its requests wait for %s (%.0f %% busy) before the spans of %s start, which evens out the starts their cv is measured on: the model's own starts, simulated with arrivals of cv %.3g, show cv %.3g where the traces' show %.3g (the closest of %s of %d requests): interarrival cv %.3g",
				c.w.Name, c.what, 100*c.load, c.id, cv, c.bestGot, c.measured, textout.Plural(sims, "simulation"), requests, cv)
		}
	}
}

// simulatedStartCVs simulates the model with each candidate workload's
// arrivals at the cv being tried, for the given requests over all
// workloads, and measures the cv of each candidate's entry span starts as
// arrivalCV measures the traces' (without taking a cv near 1 as
// Poisson's), the first tenth of the run, which starts empty, left out.
func (g *generator) simulatedStartCVs(cs []*startCandidate, requests int64) (map[string]float64, bool) {
	m, err := g.m.Clone()
	if err != nil {
		return nil, false
	}
	want := map[string]bool{}
	for _, c := range cs {
		want[c.id] = true
		if w := m.Workload(c.w.Name); w != nil && w.Open != nil {
			w.Open.CV = c.cv
		}
	}
	got, stable, err := g.cfg.Simulator.EntryStarts(g.ctx, m, 1, requests)
	if err != nil || !stable {
		return nil, false
	}
	starts := map[string][]int64{}
	for id, ts := range got {
		if want[id] {
			ns := make([]int64, len(ts))
			for i, t := range ts {
				ns[i] = int64(math.Round(t * 1e9))
			}
			starts[id] = ns
		}
	}
	out := map[string]float64{}
	for id, t := range starts {
		slices.Sort(t)
		t = t[len(t)/10:]
		if cv, n := runsCV([][]int64{t}, false); n >= arrivalMinGaps {
			out[id] = cv
		}
	}
	return out, true
}

// entryQueue returns the busiest queue the model makes a request to
// operation id wait in before the operation's span starts, with its load
// (busy servers over servers, per replica) and words that name it: its
// component's CPU slots, its component's thread pool (inferLimits), a
// limit inferred on the operation, or a passive resource the
// configuration declares around it whose wait is not inside the spans
// (declared). ok is false where there is none.
func (g *generator) entryQueue(id string) (load float64, what string, ok bool) {
	comp, _ := splitID(id)
	if k := g.cpuSlots(comp); k > 0 {
		if _, _, a, measured := g.slotBursts(comp); measured {
			load, what, ok = a/float64(k), "a CPU slot of "+comp, true
		}
	}
	if k, pooled := g.threads[comp]; pooled && k > 0 {
		if _, _, a, held := g.poolHolds(comp); held && a/float64(k) > load {
			load, what, ok = a/float64(k), fmt.Sprintf("a thread of the pool of %d of %s", k, comp), true
		}
	}
	if lim, limited := g.opLimits[id]; limited && lim.k > 0 && lim.mean/float64(lim.k) > load {
		load, what, ok = lim.mean/float64(lim.k), fmt.Sprintf("the limit of %d inferred on %s", lim.k, id), true
	}
	if name, declared := g.declaredBefore(id); declared {
		c := float64(max(g.cfg.Passive[name].Capacity, 1) * g.declaredReplicas(name))
		busy := 0.0
		if span := g.s.span(); span > 0 {
			for _, other := range slices.Sorted(maps.Keys(g.declaredOps)) {
				if op := g.s.ops[other]; op != nil && g.declaredOps[other] == name && op.resp.n > 0 {
					busy += float64(op.count) * op.resp.mean() / span
				}
			}
		}
		if busy/c > load {
			load, what, ok = busy/c, fmt.Sprintf("the declared %s of %d", name, int(c)), true
		}
	}
	return load, what, ok
}

// executionsPerRequest is the operations the traces' requests executed on
// average, their sends' consumers included; 0 without requests.
func (g *generator) executionsPerRequest() float64 {
	var execs, requests float64
	for _, id := range slices.Sorted(maps.Keys(g.s.ops)) {
		execs += float64(g.s.ops[id].count)
	}
	for _, id := range slices.Sorted(maps.Keys(g.s.entries)) {
		requests += float64(g.s.entries[id].count)
	}
	if requests == 0 {
		return 0
	}
	return execs / requests
}
