package mva

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/perfcast/perfcast/queueing"
)

// layerOptions tune the layered fixed point.
type layerOptions struct {
	net solveOptions
	// tol is the relative change of every response time, throughput and
	// pool wait below which the fixed point has converged.
	tol float64
	// maxIter caps the iterations.
	maxIter int
	// damping is the weight of the new pool waits in each update (several
	// closed classes).
	damping float64
	// scale multiplies every open rate (for the saturation search).
	scale float64
	// doubtArrivals moves each open queue's arrivals' squared cv as
	// arrivalSCVs says (for arrivalMisjudged).
	doubtArrivals doubt
}

func defaultLayerOptions() layerOptions {
	return layerOptions{net: defaultSolveOptions(), tol: 1e-6, maxIter: 2000, damping: 0.5, scale: 1}
}

// state is the solution of the layered model.
type state struct {
	b   *built
	hw  *solution
	net *network
	// Per class.
	X, R  []float64
	walks []*timeWalk
	// wait[c][p] is the mean wait of class c per acquisition of pool p,
	// hold[c][p] its mean holding time per acquisition, holdSq[c][p] the
	// second moment of that time; batched[c][p] is Σ A·(A − 1)·h² per
	// request over the parallel steps whose lists acquire p together (see
	// timeWalk.batched).
	wait, hold, holdSq, batched [][]float64
	// acqSCV[c][p] is the squared coefficient of variation of the gaps
	// between open class c's acquisitions of one copy of pool p (see
	// arrivalSCVs).
	acqSCV [][]float64
	// again[p] is what an acquisition of pool p that follows its
	// request's own release at once waits beyond wait[c][p], meanHold[p]
	// the pool's mean holding time, and returned[c][p] the sum of those
	// differences per request of class c (see reentry).
	again, meanHold []float64
	returned        [][]float64
	// poolSplit[p], for a leastBusy pool whose copies joined the shortest
	// queue, is what a random pick would have made an acquisition wait,
	// and poolBeyond[p] the share of the joined wait the copies past
	// jsqChecked add; 0 elsewhere (see leastBusyMisjudged).
	poolSplit, poolBeyond []float64
	// poolJoined[p] is the excess the last solve of pool p's station
	// found for its closed classes where its copies queue as one
	// (network.joinedExcess), where the next one starts.
	poolJoined [][][]float64
	// innerOf[q] is the pool p whose holders queue for the one-unit pool
	// q inside it as one flow-equivalent server (see nestedWaits), -1
	// for none; innerWait[q] is then the wait for q of the holds made
	// while holding p, and wait[c][q] that of the others.
	innerOf   []int
	innerWait []float64
	// innerHold[c][q] and innerHoldSq[c][q] are the mean and second
	// moment of class c's holds of q made while holding innerOf[q]
	// (0 while unknown).
	innerHold, innerHoldSq [][]float64
	// Per station and class: the mean time of a visit as a function of the
	// visit's demand: d·stretch + extra.
	stretch, extra [][]float64
	// inStretch[k], where not nil, is the residence-to-demand ratio at
	// processor-sharing station k of a visit made while pool g is the
	// tightest limited pool held, inStretch[k][g] (see boundedStretch);
	// bounded holds those ratios at the stations only open classes visit,
	// where they depend only on the open rates, for the whole solution;
	// at the others (closedAt) they follow the closed classes' throughputs
	// and are computed with each hardware solution.
	inStretch, bounded [][]float64
	// inSquare[k] and boundedSquare[k], where not nil, hold the second
	// moment of the stretch factor per group, E[F²] (see occupancy.squares),
	// beside inStretch[k] and bounded[k].
	inSquare, boundedSquare [][]float64
	// occ[k] is the occupancy chain last solved for station k (see
	// occupancyStretch), the start of the next solution.
	occ []*occupancy
	// closedAt[k]: a closed class with users makes demand at station k.
	closedAt []bool
	// sharedAt[p] is the processor-sharing station where pool p's holders
	// share fewer cores than p has units (-1 where they do not, or p is
	// solved otherwise), and sharedStretch[p] the stretch of their visits
	// there by p's holders' network (see sharedWait).
	sharedAt      []int
	sharedStretch []float64
	// chains holds the pool chains solved so far (see sharedWait): the
	// damped iteration asks for the same ones again and again.
	chains     map[chainKey]chainResult
	iterations int
	converged  bool
	residual   float64
	usesPools  bool
	// saturated names the resource open workloads overload ("" if none).
	saturated string
}

// errUnstable says that open workloads overload a resource.
var errUnstable = errors.New("open workloads exceed a resource's capacity")

// solveLayers solves the model by the layered fixed point:
//
//  1. the hardware layer: CPUs and disks as a queueing network whose
//     classes are the workloads, with each closed class's think time
//     stretched by everything in its response time that is not hardware
//     residence (pure delays, waits for pools and threads, the overlap of
//     parallel lists);
//  2. the software layer: every pool (lock, connection pool, thread pool)
//     as a multi-server station whose service time is its holding time, the
//     response time of the work done while holding it, nested calls and
//     nested pools included, solved with the rest of each class's cycle as
//     a delay (the method of surrogate delays);
//  3. the response times composed step by step from both.
//
// The waits are damped and iterated to a fixed point.
func solveLayers(ctx context.Context, b *built, o layerOptions) (*state, error) {
	C, K, P := len(b.classes), len(b.stations), len(b.pools)
	st := &state{b: b, X: make([]float64, C), R: make([]float64, C), wait: matrix(C, P), hold: matrix(C, P), holdSq: matrix(C, P), batched: matrix(C, P),
		again: make([]float64, P), meanHold: make([]float64, P), returned: matrix(C, P),
		poolSplit: make([]float64, P), poolBeyond: make([]float64, P), poolJoined: make([][][]float64, P),
		innerOf: make([]int, P), innerWait: make([]float64, P), innerHold: matrix(C, P), innerHoldSq: matrix(C, P),
		stretch: matrix(C, K), extra: matrix(C, K), inStretch: make([][]float64, K), inSquare: make([][]float64, K), occ: make([]*occupancy, K),
		sharedAt: make([]int, P), sharedStretch: make([]float64, P)}
	for p := range st.sharedAt {
		st.sharedAt[p] = -1
	}
	for q := range st.innerOf {
		st.innerOf[q] = -1
	}
	classes := make([]class, C)
	for c, ci := range b.classes {
		w := ci.w
		if w.Open != nil {
			classes[c] = class{name: w.Name, open: true, rate: w.Open.Rate * o.scale}
		} else if w.Closed != nil {
			classes[c] = class{name: w.Name, users: float64(w.Closed.Users), think: w.Closed.Think.Mean()}
		}
	}
	net := newNetwork(b.stations, append([]class(nil), classes...))
	for c, ci := range b.classes {
		for k, s := range b.stations {
			cp := float64(s.copies)
			net.demand[c][k] = ci.demand[k] / cp
			net.visits[c][k] = ci.visits[k] / cp
			net.second[c][k] = ci.second[k] / cp
		}
		for p, pl := range b.pools {
			if pl.limited() && ci.acq[p] > 0 {
				st.usesPools = true
			}
		}
	}
	rates := make([]float64, C)
	for c, cl := range classes {
		rates[c] = cl.rate
	}
	net.ca2, st.acqSCV = arrivalSCVs(b, rates, o.doubtArrivals)
	st.net = net
	st.bounded = make([][]float64, K)
	st.boundedSquare = make([][]float64, K)
	st.closedAt = make([]bool, K)
	for k := range b.stations {
		st.bounded[k], st.boundedSquare[k] = st.boundedStretch(k, nil)
		for c, cl := range classes {
			st.closedAt[k] = st.closedAt[k] || (!cl.open && cl.users > 0 && net.demand[c][k] > 0)
		}
	}
	var closed []int
	for c, ci := range b.classes {
		st.walks = append(st.walks, newTimeWalk(b, ci.w))
		if !classes[c].open && classes[c].users > 0 {
			closed = append(closed, c)
		}
	}
	if len(closed) == 1 && !o.net.forceApprox {
		for p, pl := range b.pools {
			if pl.limited() && b.classes[closed[0]].acq[p] > 0 {
				return st, st.byThroughput(ctx, classes, closed[0], o)
			}
		}
	}
	return st, st.damped(ctx, classes, o, false)
}

// dampedFrom continues with the damped iteration from the current state.
func (st *state) dampedFrom(ctx context.Context, classes []class, o layerOptions) error {
	return st.damped(ctx, classes, o, true)
}

// damped is the layered fixed point by damped iteration: the hardware layer
// is solved with each closed class's think time stretched by the rest of
// its response time (pure delays to begin with, or what the current state
// says when warm), and the pool waits are damped. It serves models with
// several closed classes or none, or whose one closed class takes no pool
// (the hardware is then solved once, exactly), and is the fallback of
// byThroughput when a layer leaves the floating-point range.
func (st *state) damped(ctx context.Context, classes []class, o layerOptions, warm bool) error {
	b, net := st.b, st.net
	C, P := len(b.classes), len(b.pools)
	// extraDelay[c]: the part of a closed class's response time that is not
	// hardware residence.
	extraDelay := make([]float64, C)
	for c, ci := range b.classes {
		extraDelay[c] = ci.dem.Delay
		if warm && st.hw != nil {
			extraDelay[c] = st.R[c]
			for k, s := range b.stations {
				extraDelay[c] -= float64(s.copies) * st.hw.R[c][k]
			}
		}
	}
	prevR := make([]float64, C)
	prevX := make([]float64, C)
	newWait := matrix(C, P)
	for it := 1; it <= o.maxIter; it++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		st.iterations = it
		for c := range classes {
			if !classes[c].open {
				net.classes[c].think = math.Max(classes[c].think+extraDelay[c], 0)
			}
		}
		hw, err := net.solve(o.net)
		if err != nil {
			if errors.Is(err, errSaturated) {
				st.saturated = b.stations[hw.saturated].name
				return fmt.Errorf("%s: %w", st.saturated, errUnstable)
			}
			return err
		}
		st.hw = hw
		st.setVisitTimes()
		st.compose(classes)
		// Software layer.
		if err := st.poolWaits(classes, o, newWait, nil); err != nil {
			return err
		}
		change := 0.0
		for c := range classes {
			change = math.Max(change, relChange(st.R[c], prevR[c]))
			change = math.Max(change, relChange(st.X[c], prevX[c]))
			prevR[c], prevX[c] = st.R[c], st.X[c]
			for p := range b.pools {
				nw := newWait[c][p]
				change = math.Max(change, relChange(nw, st.wait[c][p]))
				st.wait[c][p] += o.damping * (nw - st.wait[c][p])
			}
			var hwTime float64
			for k, s := range b.stations {
				hwTime += float64(s.copies) * hw.R[c][k]
			}
			extraDelay[c] = st.R[c] - hwTime
		}
		st.residual = change
		if it > 1 && change <= o.tol {
			st.converged = hw.converged
			break
		}
	}
	return nil
}

// compose walks every class with the current visit times and pool waits:
// response times, throughputs of closed classes, holding times.
func (st *state) compose(classes []class) {
	b := st.b
	for c, cl := range classes {
		tw := st.walks[c]
		copy(tw.wait, st.wait[c])
		copy(tw.again, st.again)
		copy(tw.meanHold, st.meanHold)
		tw.innerOf, tw.innerWait = st.innerOf, st.innerWait
		tw.visitTime = func(k int, d float64, g int) (float64, float64) {
			if in := st.inStretch[k]; in != nil {
				if sq := st.inSquare[k]; sq != nil {
					return d * in[g], sq[g]
				}
				return d * in[g], 0
			}
			return d*st.stretch[c][k] + st.extra[c][k], 0
		}
		st.R[c] = tw.request()
		if cl.open {
			st.X[c] = cl.rate
		} else if cl.users > 0 {
			st.X[c] = cl.users / (cl.think + st.R[c])
		}
		for p := range b.pools {
			if a := b.classes[c].acq[p]; a > 0 {
				st.hold[c][p] = tw.held[p] / a
				st.holdSq[c][p] = tw.holdSecond(p, a, st.hold[c][p])
				st.batched[c][p] = tw.batched[p]
				st.returned[c][p] = tw.returned[p]
				st.innerHold[c][p], st.innerHoldSq[c][p] = 0, 0
				if n := tw.innerTaken[p]; n > 0 {
					st.innerHold[c][p], st.innerHoldSq[c][p] = tw.innerHeld[p]/n, tw.innerHeldSq[p]/n
				}
			}
		}
	}
}

// waitOf is class c's mean wait per acquisition of pool q: inside the pool
// q is nested in (innerWait) and elsewhere (wait), and the waits of the
// acquisitions that take q again after letting it go beyond them.
func (st *state) waitOf(c, q int) float64 {
	ci := st.b.classes[c]
	a := ci.acq[q]
	if a <= 0 {
		return 0
	}
	w := st.wait[c][q] + st.returned[c][q]/a
	if p := st.innerOf[q]; p >= 0 {
		n := min(ci.under[q][p], a)
		w += n / a * (st.innerWait[q] - st.wait[c][q])
	}
	return w
}

// relChange is |a−b| relative to the larger magnitude (absolute below 1e-12).
func relChange(a, b float64) float64 {
	d := math.Abs(a - b)
	m := math.Max(math.Abs(a), math.Abs(b))
	if m < 1e-12 {
		return d
	}
	return d / m
}

// setVisitTimes derives, from the hardware solution, the mean time of a
// visit with demand d at each station for each class: d times the
// residence-to-demand ratio at processor-sharing stations (where residence
// is proportional to demand), d plus the class's mean wait per visit at FCFS
// stations. Where limited pools bound the requests at a processor-sharing
// station, the ratio depends on the pool a visit is made in
// (boundedStretch), and the class's residence there follows.
func (st *state) setVisitTimes() {
	for k := range st.b.stations {
		st.inStretch[k], st.inSquare[k] = st.bounded[k], st.boundedSquare[k]
		if st.inStretch[k] == nil && st.closedAt[k] {
			st.inStretch[k], st.inSquare[k] = st.boundedStretch(k, st.hw.X)
		}
	}
	for p := range st.sharedAt {
		st.applySharedStretch(p)
	}
	for c := range st.b.classes {
		for k, s := range st.b.stations {
			d, v, r := st.net.demand[c][k], st.net.visits[c][k], st.hw.R[c][k]
			st.stretch[c][k], st.extra[c][k] = 1, 0
			if d <= 0 || v <= 0 {
				continue
			}
			switch {
			case s.fcfs:
				st.extra[c][k] = math.Max(r-d, 0) / v
			case st.inStretch[k] != nil:
				var sum, in float64
				for g, x := range st.b.classes[c].inside[k] {
					sum += x
					in += x * st.inStretch[k][g]
				}
				st.stretch[c][k] = r / d
				if sum > 0 {
					st.stretch[c][k] = in / sum
					st.hw.R[c][k] = d * st.stretch[c][k]
				}
			default:
				st.stretch[c][k] = r / d
			}
		}
	}
}

// boundedStretch returns, for a processor-sharing station k where some of
// the classes' demand is made inside a limited pool, the residence-to-demand
// ratio of a visit made while pool g is the tightest pool held (index
// len(pools) for none), and where the occupancy chain gives it, the second
// moment of that ratio per visit; nil elsewhere. Closed classes count at their
// throughputs in closedX, like open ones at their rates (a request's own
// load is in its group's N_g/c_g only; counting a closed class's load at
// (N−1)/N of it, Schweitzer's estimate, made the throughput fall, if by
// a millionth, as users were added beyond saturation); with closedX nil a
// station that a closed class with users visits gets nil. A closed class
// without users carries no load and is left out.
//
// The network counts every request's demand as competing with every
// other's, but no more requests can be inside a pool of c units than c: a
// one-unit pool around CPU work (a lock, a process limited to one thread)
// never makes its holders queue behind each other at the CPU. The ratios
// come from the Markov chain of the pools' presences there, the work
// outside pools included (occupancy). Where that chain would not fit, by
// the arrival theorem a visit finds N_h requests of each group h at the
// station (N_h over c_h of its own group being itself, Schweitzer's
// estimate), so at one server its stretch is s_g = 1 + Σ_h N_h − N_g/c_g,
// and with N_h = u_h·s_h (Little) the mean-value equations solve in closed
// form: s_g = (1+S)/(1+u_g/c_g), where S = A/(1−A) and
// A = Σ_h u_h/(1+u_h/c_h). Without pools this is the M/M/1 stretch
// 1/(1−U); at several servers the waiting part is scaled by the M/M/c wait
// over the M/M/1 wait at the same utilization, so that it is the M/M/c
// stretch without pools. That closed form takes a burst's company as
// present for the whole burst and the pools' presences as independent;
// against the exact chain of two one-unit pools on one core it is high by
// 2 % at the median and up to 12 % (66 cases, utilizations 0.05–0.75), and
// with work outside the pools as well it put two slots' response times up
// to 2.6 times the simulator's (TestPoolsAndJoinsVsSim).
func (st *state) boundedStretch(k int, closedX []float64) (mean, square []float64) {
	b, s := st.b, st.b.stations[k]
	if s.fcfs || s.servers == 0 {
		return nil, nil
	}
	free := len(b.pools)
	u, lambda, bounded, ok := st.groupLoads(k, closedX)
	if !ok {
		return nil, nil
	}
	units := make([]float64, free+1)
	var U float64
	for g, x := range u {
		U += x
		units[g] = math.Inf(1)
		if g != free {
			units[g] = math.Max(b.pools[g].capacityTotal()/float64(s.copies), 1)
		}
	}
	if !bounded || U <= 0 || U >= 1 {
		return nil, nil
	}
	out := meanValueStretch(u, units, s.servers)
	if mean, square := st.occupancyStretch(k, u, lambda, units, out); mean != nil {
		return mean, square
	}
	return out, nil
}

// meanValueStretch is boundedStretch's closed form: the stretch per group
// of a station of the given servers whose load per server is u[g] per
// group, made inside pools of units[g] (+Inf for the last group, the load
// inside no pool); the total load must be below 1.
func meanValueStretch(u, units []float64, servers int) []float64 {
	var U, A float64
	for g, x := range u {
		U += x
		A += x / (1 + x/units[g])
	}
	scale := 1.0
	if servers > 1 {
		scale = queueing.MMcWait(servers, U*float64(servers)) / (U / (1 - U))
	}
	S := A / (1 - A)
	out := make([]float64, len(u))
	for g, x := range u {
		out[g] = 1 + scale*((1+S)/(1+x/units[g])-1)
	}
	return out
}

// occupancyStretch solves the occupancy chain of station k, whose load u
// per server (at visit rates lambda per copy) is made inside limited
// pools of the given units and, last, inside none, starting from its
// previous solution where the groups are the same: the stretch per group
// and its second moment (see occupancy.squares); nil if the chain is too
// large or does not converge. The load inside no pool is a group of the
// chain whose bursts never wait: as many units as levels, enough for its
// presence beyond them to weigh under 1e-4 (at most maxFreeLevels). A
// pool without load there gets the stretch of a burst made inside no pool
// that would arrive now. The closed form's stretch guess sizes the
// chain's levels.
func (st *state) occupancyStretch(k int, u, lambda, units, guess []float64) (mean, square []float64) {
	servers := st.b.stations[k].servers
	free := len(u) - 1
	var idx []int
	var lam, mu, busy []float64
	var c []int
	for g, x := range u[:free] {
		if x <= 0 || lambda[g] <= 0 {
			continue
		}
		idx = append(idx, g)
		lam = append(lam, lambda[g])
		mu = append(mu, lambda[g]/(x*float64(servers)))
		c = append(c, int(math.Round(units[g])))
		busy = append(busy, x*float64(servers)*guess[g]/units[g])
	}
	if len(idx) == 0 {
		return nil, nil
	}
	freeLevels := 0
	if x := u[free]; x > 0 && lambda[free] > 0 {
		// The free bursts present are about geometric, of mean E.
		e := x * float64(servers) * guess[free]
		freeLevels = maxFreeLevels
		if ratio := e / (1 + e); ratio > 0 {
			freeLevels = min(freeLevels, max(minFreeLevels, int(math.Ceil(math.Log(1e-4)/math.Log(ratio)))))
		}
	}
	q := queueLevels(busy, c, freeLevels+1)
	if q == nil {
		return nil, nil
	}
	if freeLevels > 0 {
		idx = append(idx, free)
		lam = append(lam, lambda[free])
		mu = append(mu, lambda[free]/(u[free]*float64(servers)))
		c = append(c, freeLevels)
		q = append(q, 0)
	}
	o := st.occ[k]
	if o == nil || !slices.Equal(o.units, c) || !slices.Equal(o.levels, q) {
		if o = newOccupancy(servers, lam, mu, c, q); o == nil {
			return nil, nil
		}
	}
	o.lambda, o.mu, o.pools = lam, mu, idx
	st.occ[k] = o
	var in, sq []float64
	if o.solve() {
		in, sq = o.stretches(), o.squares()
	}
	if sq == nil {
		st.occ[k] = nil
		return nil, nil
	}
	// The last entries are those of a burst made inside no pool that
	// would arrive now; the free group's own, where it is in the chain,
	// replace them below.
	mean, square = make([]float64, len(u)), make([]float64, len(u))
	for g := range mean {
		mean[g], square[g] = in[len(idx)], sq[len(idx)]
	}
	for i, g := range idx {
		mean[g], square[g] = in[i], sq[i]
	}
	return mean, square
}

// groupLoads returns the utilization per server of station k that the
// classes' demand makes while pool g is the tightest pool held, u[g]
// (index len(pools) for none), the rate of the visits that make it per
// copy of the station, lambda[g], and whether any of it is made inside a
// limited pool. Closed classes count at their throughputs in closedX; ok
// is false when closedX is nil and a closed class with users visits k.
func (st *state) groupLoads(k int, closedX []float64) (u, lambda []float64, bounded, ok bool) {
	b, s := st.b, st.b.stations[k]
	free := len(b.pools)
	u = make([]float64, free+1)
	lambda = make([]float64, free+1)
	for c, ci := range b.classes {
		cl := st.net.classes[c]
		d := st.net.demand[c][k]
		if d <= 0 {
			continue
		}
		rate := cl.rate
		if !cl.open {
			if cl.users <= 0 {
				// No users, no load.
				continue
			}
			if closedX == nil {
				return nil, nil, false, false
			}
			rate = closedX[c]
		}
		var sum float64
		for _, x := range ci.inside[k] {
			sum += x
		}
		if sum <= 0 {
			continue
		}
		for g, x := range ci.inside[k] {
			u[g] += rate * d / float64(s.servers) * x / sum
			lambda[g] += rate * ci.insideVisits[k][g] / float64(s.copies)
			if g != free && x > 0 {
				bounded = true
			}
		}
	}
	return u, lambda, bounded, true
}

// poolWaits solves each limited pool as a multi-server station whose
// service time per acquisition is the holding time, visited by the classes
// that acquire it; closed classes cycle through a delay that is the rest of
// their cycle (think time plus response time outside this pool), or the
// population and think time thinkOf gives when it is not nil (called with
// the pool, the class, the pool's network and the class's index in it; a
// class alone at the pool may also receive its time there, own, sparing
// the network's solution). Several units per
// acquisition are approximated by fewer servers: capacity divided by the
// mean units, rounded down.
func (st *state) poolWaits(classes []class, o layerOptions, out [][]float64, thinkOf func(p, c int, pn *network, i int) (users, think, own float64)) error {
	b := st.b
	nested := st.nestedPools(classes)
	for p, pl := range b.pools {
		for c := range classes {
			out[c][p] = 0
		}
		st.poolSplit[p], st.poolBeyond[p] = 0, 0
		st.sharedAt[p] = -1
		if _, ok := nested[p]; ok || !pl.limited() {
			continue
		}
		var users []int
		var any bool
		open := true
		for c, ci := range b.classes {
			if ci.acq[p] > 0 && (classes[c].open || classes[c].users > 0) {
				users = append(users, c)
				any = true
				open = open && classes[c].open
			}
		}
		if !any {
			continue
		}
		var acqAll, unitsAll float64
		for _, c := range users {
			acqAll += st.X[c] * b.classes[c].acq[p]
			unitsAll += st.X[c] * b.classes[c].units[p]
		}
		servers := pl.capacity
		if acqAll > 0 && unitsAll > acqAll {
			servers = max(int(float64(pl.capacity)*acqAll/unitsAll), 1)
		}
		sub := make([]class, len(users))
		// Requests wait for a pool in line, whatever they hold it for.
		stn := []station{{name: pl.name, servers: servers, copies: pl.copies, fcfs: true, leastBusy: pl.leastBusy, ofTwo: pl.ofTwo}}
		pn := newNetwork(stn, sub)
		pn.joinedExcess = st.poolJoined[p]
		pn.ca2 = matrix(len(users), 1)
		for i, c := range users {
			pn.ca2[i][0] = st.acqSCV[c][p]
			ci := b.classes[c]
			a, h := ci.acq[p], st.hold[c][p]
			sub[i] = classes[c]
			if !classes[c].open {
				sub[i].think = math.Max(classes[c].think+st.R[c]-a*(st.wait[c][p]+h), 0)
			}
			pn.demand[i][0] = a * h / float64(pl.copies)
			pn.visits[i][0] = a / float64(pl.copies)
			// Acquisitions that arrive together (A lists of a parallel
			// step) make the pool's arrivals batches: at one unit the
			// wait of the first of a batch is the Pollaczek–Khinchine
			// wait for the batch's total holding time, which adds
			// A·(A − 1)·h² to the second moment per batch (the later
			// ones' wait behind it is the join's). At c units the
			// same term goes into the Allen–Cunneen wait: on a pool of
			// two with batches of four, 7 to 15 % short of the
			// simulator, where counting only the lists beyond the
			// units as the batch was 26 % short.
			pn.second[i][0] = (a*st.holdSq[c][p] + st.batched[c][p]) / float64(pl.copies)
		}
		if thinkOf != nil {
			own := math.NaN()
			for i, c := range users {
				if !classes[c].open {
					sub[i].users, sub[i].think, own = thinkOf(p, c, pn, i)
				}
			}
			if c := users[0]; len(users) == 1 && !classes[c].open && !math.IsNaN(own) {
				a := b.classes[c].acq[p]
				out[c][p] = math.Max(own/a-st.hold[c][p], 0)
				continue
			}
		}
		if open {
			if w, ok := st.sharedWait(p, users, classes); ok {
				if math.IsInf(w, 1) {
					st.saturated = pl.name
					return fmt.Errorf("%s: %w", pl.name, errUnstable)
				}
				more := st.returnedWaits(p, servers, users, pn, 1)
				for _, c := range users {
					out[c][p] = w + more
				}
				continue
			}
		}
		ps, err := pn.solve(o.net)
		if err != nil {
			if errors.Is(err, errSaturated) {
				st.saturated = pl.name
				return fmt.Errorf("%s: %w", pl.name, errUnstable)
			}
			return err
		}
		st.poolSplit[p], st.poolBeyond[p], st.poolJoined[p] = ps.split[0], ps.beyond[0], pn.joinedExcess
		runs := 1.0
		if open {
			runs = st.runsFactor(p, o)
		}
		more := st.returnedWaits(p, servers, users, pn, runs)
		for i, c := range users {
			a := pn.visits[i][0]
			if a > 0 {
				out[c][p] = runs*math.Max(ps.R[i][0]-pn.demand[i][0], 0)/a + more
			}
		}
	}
	return st.nestedWaits(nested, out)
}

// returnedWaits sets again[p] and meanHold[p] for pool p, of the given
// servers per copy, from its station pn (the users' classes in order, runs
// the factor on its waits) and returns the wait the requests that take p
// again after letting it go add to every acquisition's (see reentry).
func (st *state) returnedWaits(p, servers int, users []int, pn *network, runs float64) float64 {
	st.again[p], st.meanHold[p] = 0, 0
	var busy, busyHold, spread, queue float64
	for i, c := range users {
		u := st.X[c] * pn.demand[i][0]
		h := st.hold[c][p]
		busy += u
		busyHold += u * h
		if h > 0 {
			spread += u * (h - st.holdSq[c][p]/(2*h))
		}
		// The returning requests' longer waits put more of them in the
		// queue, each to be held for its own holding time.
		queue += st.X[c] * st.returned[c][p] / float64(st.b.pools[p].copies) * h
	}
	c := float64(servers)
	if !(busy > 0) || busy >= c {
		return 0
	}
	// The holder a returning request finds is one in progress, so its
	// holding time is the busy-weighted mean.
	st.meanHold[p] = busyHold / busy
	st.again[p] = runs * queueing.ErlangC(servers, busy) / c * spread / busy
	return queue / c / (1 - busy/c)
}

// runsFactor returns, for a pool p whose holds are each one CPU burst at a
// station where the occupancy chain gives the bursts' stretch, the ratio
// of the chain's mean wait for a unit (its mean queue over the arrival
// rate, Little) to the wait the pool's station gives for the chain's own
// holding time (exponential bursts stretched by a factor of the chain's
// first two moments), and 1 for every other pool. The pool's station takes
// successive holding times as independent; the chain knows that a burst
// stretched while another pool's holders are present is followed by
// others stretched alike, so that two one-unit pools 85 % busy on one core
// wait in the chain up to half as long again (TestCoupledSlotsAgainstExactChain).
// Scaling the station's wait for the holding times as they are (their
// distribution, batches of lists) by that ratio keeps what the station
// knows and adds what only the chain does.
func (st *state) runsFactor(p int, o layerOptions) float64 {
	k := st.b.burstAt[p]
	if k < 0 || st.occ[k] == nil || st.inStretch[k] == nil || st.inSquare[k] == nil {
		return 1
	}
	oc := st.occ[k]
	g := slices.Index(oc.pools, p)
	if g < 0 || oc.lambda[g] <= 0 {
		return 1
	}
	lambda, mu, units := oc.lambda[g], oc.mu[g], oc.units[g]
	chain := oc.queued(g) / lambda
	hold := st.inStretch[k][p] / mu
	pn := newNetwork([]station{{name: "", servers: units, copies: 1, fcfs: true}}, []class{{open: true, rate: lambda}})
	pn.demand[0][0], pn.visits[0][0] = hold, 1
	pn.second[0][0] = 2 * st.inSquare[k][p] / (mu * mu)
	ps, err := pn.solve(o.net)
	if err != nil {
		return 1
	}
	station := ps.R[0][0] - hold
	if !(station > 0) || !(chain > 0) {
		return 1
	}
	return chain / station
}
