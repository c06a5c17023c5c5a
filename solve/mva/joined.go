package mva

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/floats"

	"github.com/perfcast/perfcast/queueing"
)

// maxJoinedIterations bounds the fixed point of closedNet.solveJoined; it
// settles in a few rounds, since the excess of joining the shortest queue
// is a small part of the response time that grows slowly with the load.
const maxJoinedIterations = 200

// joinedTolerance is the largest change, relative to a class's cycle
// time, of the excess closedNet.solveJoined stops at.
const joinedTolerance = 1e-9

// joinable reports the stations of the network whose copies take calls by
// load and at which the closed classes queue as one: copies of a host
// balanced least-busy or least-of-two whose CPU no limit binds, where no
// open class visits or closed ones do too (open classes alone join the
// shortest queue by network.joinShortest).
func (n *network) joinable() []int {
	var out []int
	for k, st := range n.stations {
		if !st.leastBusy || st.copies < 2 || st.servers < 1 || st.limit > 0 {
			continue
		}
		open, closed := false, false
		for c, cl := range n.classes {
			visits := n.demand[c][k] > 0 || n.visits[c][k] > 0
			open = open || cl.open && visits
			closed = closed || !cl.open && cl.users > 0 && visits
		}
		if !open || closed {
			out = append(out, k)
		}
	}
	return out
}

// joinedSolution is the solution of a closed network whose joined
// stations' copies queue as one (closedNet.solveJoined): per copy, as the
// network's are; random is the network's solution with each copy its own
// queue, a random pick's; waits what each joined station's classes wait,
// and excess[i][j] class i's excess at the j-th joined station.
type joinedSolution struct {
	*closedSolution
	random *closedSolution
	waits  []joinedWait
	excess [][]float64
	// shared[j] says whether open requests share the j-th joined
	// station (waits[j].open holds their wait).
	shared []bool
}

// joinedWait is what a joined station's closed classes wait per second
// of the system's, at their throughputs: wait as one queue of all the
// copies' servers times queueing.JSQFactor, blend the part least-of-two
// adds toward a random pick's; rho is how busy its servers are. Where
// open requests share the station, open is what they wait per second of
// their demand there (processor sharing; at an FCFS station, per second
// of the mean visit's), the same way.
type joinedWait struct {
	rho, wait, blend, open float64
}

// solveJoined solves the closed network n, in which the stations joined
// (of copies balanced by load, see network.joinable) are taken as one
// queue of all their copies' servers, which joining the shortest queue
// nearly is, and the closed classes' excess over that queue is a delay.
// The excess of a class with wait W at the joined queue, its servers busy
// a fraction ρ of the time, is (queueing.JSQFactor(r, c, ρ) − 1)·W, and
// at a station balanced least-of-two also queueing.OfTwoShare of the way
// from there to the wait a random pick leaves, which the network as it
// is (each copy its own queue) gives. The two are found by a fixed point
// on the excess, from start where it has the excess's shape (the last
// solve's) and from none otherwise. With fixedThink the think times stay
// as given (network.fixedThink): the joined network is solved once, and
// only the excess and the load that holds the population are iterated.
func (n *closedNet) solveJoined(joined []int, start [][]float64, fixedThink bool, o solveOptions) joinedSolution {
	random := n.solve(o)
	one := *n
	one.think = slices.Clone(n.think)
	one.stations, one.demand = joinedView(n.stations, n.demand, joined)
	// Open requests share the joined servers as they share each copy's.
	whole := make([]*sharedServers, len(joined))
	if n.shared != nil {
		one.shared = slices.Clone(n.shared)
		for j, k := range joined {
			if sh := n.shared[k]; sh != nil {
				whole[j] = newSharedServers(one.stations[k].servers, sh.r)
				one.shared[k] = whole[j]
			}
		}
	}
	excess := matrix(len(n.users), len(joined))
	if len(start) == len(excess) && len(start[0]) == len(joined) {
		for i := range excess {
			copy(excess[i], start[i])
			if !fixedThink {
				one.think[i] = n.think[i] + floats.Sum(excess[i])
			}
		}
	}
	waits := make([]joinedWait, len(joined))
	var cs *closedSolution
	for it := 1; ; it++ {
		if cs == nil || !fixedThink {
			cs = one.solve(o)
		}
		clear(waits)
		change := 0.0
		for j, k := range joined {
			var hold, held float64
			for i := range n.users {
				hold += cs.X[i] * (cs.R[i][k] + excess[i][j])
				held += cs.X[i] * cs.R[i][k]
			}
			var open float64
			if whole[j] != nil {
				open = whole[j].openQueue(cs.P[k], held)
			}
			waits[j].rho = openLoadHolding(n.stations[k], hold+open)
			if whole[j] != nil {
				waits[j].open = n.openJoined(k, whole[j], open, random, waits[j].rho)
			}
		}
		for i := range n.users {
			var sum float64
			for j, k := range joined {
				w := n.joinExcess(&one, cs, random, i, k, waits[j].rho)
				e := w.wait + w.blend - (cs.R[i][k] - one.served(i, k))
				if cycle := one.think[i] + cs.R[i][k]; cycle > 0 {
					change = math.Max(change, math.Abs(e-excess[i][j])/cycle)
				}
				excess[i][j] = e
				sum += e
				waits[j].wait += cs.X[i] * w.wait
				waits[j].blend += cs.X[i] * w.blend
			}
			if !fixedThink {
				one.think[i] = n.think[i] + sum
			}
		}
		if change <= joinedTolerance || it == maxJoinedIterations {
			cs.iterations += it
			cs.converged = cs.converged && change <= joinedTolerance
			break
		}
	}
	for i := range n.users {
		for j, k := range joined {
			cs.R[i][k] = (cs.R[i][k] + excess[i][j]) / float64(n.stations[k].copies)
		}
	}
	js := joinedSolution{closedSolution: cs, random: random, waits: waits, excess: excess, shared: make([]bool, len(joined))}
	for j := range joined {
		js.shared[j] = whole[j] != nil
	}
	return js
}

// joinedView returns copies of stations and of the classes' demands
// (per instance of each station) in which each of the joined stations is
// one instance of all its copies' servers, with all their demand.
func joinedView(stations []station, demand [][]float64, joined []int) ([]station, [][]float64) {
	sts := slices.Clone(stations)
	d := matrix(len(demand), len(stations))
	for i := range demand {
		copy(d[i], demand[i])
	}
	for _, k := range joined {
		st := &sts[k]
		r := float64(st.copies)
		st.servers *= st.copies
		st.copies = 1
		for i := range d {
			d[i][k] *= r
		}
	}
	return sts, d
}

// joinExcess is class i's wait at joined station k (see solveJoined),
// given the solution cs of the joined network one and random of the
// network with each copy apart.
func (n *closedNet) joinExcess(one *closedNet, cs, random *closedSolution, i, k int, rho float64) joinedWait {
	d := one.served(i, k)
	if d <= 0 {
		return joinedWait{rho: rho}
	}
	apart := float64(n.stations[k].copies)*random.R[i][k] - d
	return waitJoined(n.stations[k], rho, cs.R[i][k]-d, apart)
}

// served is class i's demand at station k as its servers serve it,
// without the stretch by the open requests that share them
// (closedNet.shared).
func (n *closedNet) served(i, k int) float64 {
	d := n.demand[i][k]
	if n.shared != nil && n.shared[k] != nil {
		d *= 1 - n.shared[k].r
	}
	return d
}

// openJoined is what open requests wait per second of their demand at
// joined station k, which they share as whole says and where they number
// open on average: the product form's wait there, times
// queueing.JSQFactor at rho, and at a station balanced least-of-two
// queueing.OfTwoShare of the way from there to the wait each copy of the
// random pick's solution gives them.
func (n *closedNet) openJoined(k int, whole *sharedServers, open float64, random *closedSolution, rho float64) float64 {
	st := n.stations[k]
	u := float64(st.copies*st.servers) * whole.r
	wait := queueing.JSQFactor(st.copies, st.servers, rho) * math.Max(open/u-1, 0)
	// The marginals of one server are none (openQueue's sum is then
	// the M/M/1 queue's).
	var p []float64
	if random.P != nil {
		p = random.P[k]
	}
	if st.ofTwo && (p != nil || st.servers == 1) {
		var held float64
		for i := range n.users {
			held += random.X[i] * random.R[i][k]
		}
		apart := n.shared[k].openQueue(p, held)/(float64(st.servers)*whole.r) - 1
		wait += queueing.OfTwoShare(st.copies, st.servers, rho) * math.Max(apart-wait, 0)
	}
	return wait
}

// waitJoined is the wait at station st, whose copies closed classes join,
// its servers busy rho as the population says (openLoadHolding), of a
// class that waits wait in one queue of all the copies' servers and apart
// where each copy is its own queue: wait times queueing.JSQFactor, and at
// a station balanced least-of-two queueing.OfTwoShare of the way from
// there to apart.
func waitJoined(st station, rho, wait, apart float64) joinedWait {
	w := joinedWait{rho: rho, wait: queueing.JSQFactor(st.copies, st.servers, rho) * math.Max(wait, 0)}
	if st.ofTwo {
		w.blend = queueing.OfTwoShare(st.copies, st.servers, rho) * math.Max(apart-w.wait, 0)
	}
	return w
}

// joinedBeyond is the share of a joined wait at station st (wait, as one
// queue of all its copies' servers times queueing.JSQFactor, plus blend,
// least-of-two's part of the way to a random pick's) that rests on
// extrapolation: the part the copies past jsqChecked add to the factor,
// and of blend all of it for closed classes (the share is the open
// chain's at the load that holds their population: on four copies of one
// core it made the wait 6 to 7 % short of the simulator's at three users
// per copy) or past jsqChecked copies, where the share is the limit of
// many queues', and ofTwoServersDoubt on copies of several servers, where
// it is one server's scaled; for open classes on one server it is the
// exact chain's.
func joinedBeyond(st station, rho, wait, blend float64, closed bool) float64 {
	r, c := st.copies, st.servers
	if !(wait+blend > 0) {
		return 0
	}
	var unchecked float64
	if r > jsqChecked {
		unchecked = 1 - queueing.JSQFactor(jsqChecked, c, rho)/queueing.JSQFactor(r, c, rho)
	}
	beyond := unchecked * wait / (wait + blend)
	switch {
	case blend == 0:
	case closed || r > jsqChecked:
		beyond += blend / (wait + blend)
	case c > 1:
		beyond += ofTwoServersDoubt * blend / (wait + blend)
	}
	return beyond
}

// keepJoined records, at the joined stations of a closed solution js,
// what Supports weighs: in sol.split what the random pick made of a
// visit, the stretch of its demand (processor sharing) or its wait
// (FCFS), over the closed classes at their throughputs, and in
// sol.beyond the share of the joined wait that rests on extrapolation.
// closedIdx maps the closed network's classes to n's.
func (n *network) keepJoined(sol *solution, joined, closedIdx []int, js joinedSolution) {
	random := js.random
	for j, k := range joined {
		var demand, visits, time float64
		for i, c := range closedIdx {
			demand += random.X[i] * n.demand[c][k]
			visits += random.X[i] * n.visits[c][k]
			time += random.X[i] * random.R[i][k]
		}
		switch {
		case !(demand > 0):
			continue
		case !n.stations[k].fcfs:
			sol.split[k] = time / demand
		case visits > 0:
			sol.split[k] = math.Max(time-demand, 0) / visits
		default:
			continue
		}
		w := js.waits[j]
		sol.beyond[k] = joinedBeyond(n.stations[k], w.rho, w.wait, w.blend, true)
	}
}

// openLoadHolding is the load per server at which the copies of station
// st, balanced as they are, hold n operations on average, waiting or
// served, under Poisson arrivals and exponential service: the ρ with
// rcρ·(1 + w(ρ)) = n, w the joined wait in service times (one queue of
// all r·c servers times queueing.JSQFactor, and least-of-two's share of
// the way to a random pick's), found by bisection. It indexes the tables
// of the open queue by the population a closed network keeps there.
func openLoadHolding(st station, n float64) float64 {
	if !(n > 0) {
		return 0
	}
	r, c := st.copies, st.servers
	s := float64(r * c)
	lo, hi := 0.0, 1.0
	for hi-lo > 1e-12 {
		rho := (lo + hi) / 2
		w := queueing.JSQFactor(r, c, rho) * queueing.MMcWait(r*c, s*rho)
		if st.ofTwo {
			w += queueing.OfTwoShare(r, c, rho) * math.Max(queueing.MMcWait(c, float64(c)*rho)-w, 0)
		}
		if s*rho*(1+w) < n {
			lo = rho
		} else {
			hi = rho
		}
	}
	return (lo + hi) / 2
}
