package mva

import (
	"maps"
	"math"

	"github.com/perfcast/perfcast/model"
)

// A request that lets a pool go and soon takes it again (a loop of holds,
// a Go handler that resumes on its process's CPU slot after each time it
// blocks) does not find the pool as an arrival from outside does. It
// rejoins the queue its own release left behind: at one unit, the holder
// it finds has only just begun, so it waits for a whole holding time
// where an outside arrival waits for the rest of one (E[H²]/2E[H]). By
// level crossing, departures leave behind as many requests on average as
// arrivals find, and with the fresh arrivals Poisson the number found is
// the time average in both cases; so the one difference is the holder in
// service: Δ₀ = Σᵢ Uᵢ·(hᵢ − E[Hᵢ²]/2hᵢ) more wait at one unit, Uᵢ the
// pool's busy fraction by class i and hᵢ its holding time. At c units
// only the unit let go starts afresh: the difference is taken as the
// Erlang C probability of waiting times the same mean over c. It is
// positive for holding times less variable than exponential (CPU bursts),
// negative for more variable ones, zero for exponential ones. The
// request's own waits in between (delays) let the holder run on, so the
// difference fades with the gap g as Δ₀·e^(−g/h̄).
//
// The longer waits of the requests that return lengthen the queue, which
// every other acquisition then finds: Little's law gives the extra queue
// from the extra waits, and the extra wait is that queue's holding times
// at the pool's rate, over 1 − ρ for the queue that waits behind it in
// turn.

// reentry says how often a hold step takes a pool its request has just let
// go, and after how long.
type reentry struct {
	// frac is the fraction of the step's executions that follow the same
	// request's release of the pool with only delays in between; gap is
	// the mean of those delays.
	frac, gap float64
}

// plus returns r with a fraction f after a mean gap g merged in: the
// fractions add, the gaps average.
func (r reentry) plus(f, g float64) reentry {
	if f <= 0 {
		return r
	}
	sum := r.frac + f
	return reentry{sum, (r.frac*r.gap + f*g) / sum}
}

// releases maps pools to a request's last release of each at a point of a
// walk: with probability frac it was followed by delays only, of mean gap.
type releases map[int]reentry

// reentryWalk finds, in the steps of every operation and workload, the
// holds that re-acquire a pool the request has just released (see
// reentry). Anything between the release and the next hold other than a
// delay or a send (CPU or disk work, calls, waits for other pools) ends the
// release's account: the request may then find any queue.
type reentryWalk struct {
	b   *built
	out map[*model.Step]reentry
}

// findReentries returns the re-entering holds of the model b is built from.
func (b *built) findReentries() map[*model.Step]reentry {
	w := &reentryWalk{b: b, out: map[*model.Step]reentry{}}
	for _, c := range b.m.Components {
		for _, op := range c.Operations {
			w.steps(op.Steps, releases{}, w.out, 0)
		}
	}
	for _, wl := range b.m.Workloads {
		w.steps(wl.Steps, releases{}, w.out, 0)
	}
	return w.out
}

// steps walks a list from the releases in, records the holds it reaches in
// rec and returns the releases open at its end.
func (w *reentryWalk) steps(steps []model.Step, in releases, rec map[*model.Step]reentry, depth int) releases {
	if depth > maxDepth {
		return releases{}
	}
	cur := in
	for i := range steps {
		cur = w.step(&steps[i], cur, rec, depth)
	}
	return cur
}

func (w *reentryWalk) step(s *model.Step, in releases, rec map[*model.Step]reentry, depth int) releases {
	switch s.Kind {
	case model.StepDelay:
		out := releases{}
		for p, r := range in {
			out[p] = reentry{r.frac, r.gap + s.Demand.Mean()}
		}
		return out
	case model.StepSend:
		return in
	case model.StepHold:
		p, ok := w.b.poolIdx[s.Resource]
		if !ok || !w.b.pools[p].limited() {
			return w.steps(s.Steps, in, rec, depth+1)
		}
		if r, ok := in[p]; ok && r.frac > 0 {
			rec[s] = r
		}
		// The wait for the pool ends every other release's account.
		out := maps.Clone(w.steps(s.Steps, releases{}, rec, depth+1))
		out[p] = reentry{frac: 1}
		return out
	case model.StepLoop:
		return w.loop(s, in, rec, depth)
	case model.StepBranch:
		out := releases{}
		for _, br := range s.Branches {
			mix(out, w.steps(br.Steps, in, rec, depth+1), br.P)
		}
		return out
	case model.StepParallel:
		for _, l := range s.Parallel {
			w.steps(l, in, rec, depth+1)
		}
	case model.StepSwitch:
		// The cases' probabilities are the workload's: what follows
		// the switch starts afresh.
		for _, c := range s.Cases {
			w.steps(c.Steps, in, rec, depth+1)
		}
		w.steps(s.Default, in, rec, depth+1)
	}
	return releases{}
}

// loop walks a loop's body twice: from in, for the first iteration, and
// from where the first ends, for every later one (the body's releases at
// its end are then the same each time). A hold's share of executions in
// each is P(n ≥ 1)/E[n] and E[n − 1 | n ≥ 1]·P(n ≥ 1)/E[n].
func (w *reentryWalk) loop(s *model.Step, in releases, rec map[*model.Step]reentry, depth int) releases {
	n := s.Times.Mean()
	p0 := s.Times.Prob(0)
	if n <= 0 || p0 >= 1 {
		return in
	}
	first, later := map[*model.Step]reentry{}, map[*model.Step]reentry{}
	end := w.steps(s.Steps, in, first, depth+1)
	again := w.steps(s.Steps, end, later, depth+1)
	wFirst, wLater := (1-p0)/n, math.Max(n-1+p0, 0)/n
	for st, r := range first {
		rec[st] = rec[st].plus(wFirst*r.frac, r.gap)
	}
	for st, r := range later {
		rec[st] = rec[st].plus(wLater*r.frac, r.gap)
	}
	out := releases{}
	mix(out, in, p0)
	mix(out, again, 1-p0)
	return out
}

// mix adds the releases from with probability p into out.
func mix(out, from releases, p float64) {
	for q, r := range from {
		if f := p * r.frac; f > 0 {
			out[q] = out[q].plus(f, r.gap)
		}
	}
}
