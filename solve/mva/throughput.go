package mva

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/perfcast/perfcast/model"
)

// byThroughput is the layered fixed point for models with one closed class
// (and any open ones) that acquires limited pools, solved for the class's
// throughput X instead of by iterating think times.
//
// Every layer is a closed model of the class's N users: the hardware, and
// each pool the class acquires, whose think time in the method of surrogate
// delays is the rest of the class's cycle. Iterating those think times is
// ill-conditioned near saturation: the number of users a layer holds is N
// minus X times its think time, a small difference of large numbers, so a
// think time a little short overloads the hardware, a saturated pool then
// multiplies the holding times by N over its capacity, and the iteration
// swings between extremes (at 5 000 users of the shop example it never
// settles).
//
// Given X instead, each layer's think time is the one at which it carries
// X (the inverse of its throughput curve), and the response time R(X)
// composed from the layers grows with X. The fixed point is the root of
// the population equation X·(Z + R(X)) = N, increasing in X, bracketed by
// 0 and the throughput without contention, and found by the Illinois
// method. At the root every layer carries X with a think time equal to the
// rest of the cycle, which is the surrogate-delay fixed point.
//
// A layer far beyond saturation carries its capacity at any think time, so
// its curve cannot be inverted precisely; the root then lies within
// rounding of that capacity, and the layer's time is what the population
// equation leaves for it: the saturated pool's wait is N/X − Z minus the
// rest of R. When the hardware is that layer (large pools), the damped
// iteration, which is well conditioned there, finishes from the root.
func (st *state) byThroughput(ctx context.Context, classes []class, c int, o layerOptions) error {
	b := st.b
	N := classes[c].users
	Z := classes[c].think
	if _, err := st.net.closedDemands(c); err != nil {
		st.saturated = b.stations[st.net.saturatedStation()].name
		return fmt.Errorf("%s: %w", st.saturated, errUnstable)
	}
	// Layers inside a pool hold at most its capacity of the class's users.
	capHw, capPool := st.b.caps(b.classes[c])
	groups := st.hardwareGroups(c, capHw, N)
	// Pool curves at unit demand, scaled to the holding time of each pass.
	poolCurves, joinedCurves := map[int]*curve{}, map[int]*curve{}
	newWait := matrix(len(classes), len(b.pools))
	thinkOf := func(p, cc int, pn *network, i int) (float64, float64, float64) {
		n := math.Min(N, capPool[p].n)
		d, err := pn.closedDemands(i)
		if err != nil || d[0] <= 0 {
			return n, classes[cc].think, math.NaN() // an open overload, which pn.solve reports
		}
		// Open requests that share the pool's units change its rates
		// with their load, so the curves are built again when it moves.
		open := pn.openUtilization()[0]
		joinable := len(pn.joinable()) > 0
		var own float64
		if !joinable || len(pn.classes) == 1 {
			if len(pn.classes) == 1 && !joinable {
				if h, ok := st.sharedHolders(p, []int{cc}); ok {
					// Its holders share fewer cores than it has units:
					// a flow-equivalent server of the holders' network.
					a := b.classes[cc].acq[p]
					x, at := innerThroughputs(h.units, h.servers, h.demand, h.z)
					rates := make([]float64, len(x))
					for j := range x {
						rates[j] = x[j] * d[0] / a
					}
					cv := newCurve(pn.stations, []float64{1}, int(n), [][]float64{rates})
					cv.scale = d[0]
					z, _ := cv.thinkFor(st.X[c])
					if busy, ok := closedBusy(int(n), z, x, at, a); ok {
						st.setSharedStretch(p, h.station, busy/h.load)
					}
					return n, z, n/cv.at(z) - z
				}
			}
			cv := poolCurves[p]
			if cv == nil || cv.open != open {
				cv = newCurve(pn.stations, []float64{1}, int(n), pn.closedRates(pn.stations))
				cv.open = open
				poolCurves[p] = cv
			}
			cv.scale = d[0]
			z, _ := cv.thinkFor(st.X[c])
			own = n/cv.at(z) - z
			if !joinable {
				return n, z, own
			}
		}
		// The pool's copies queue as one (closedNet.solveJoined).
		jc := joinedCurves[p]
		if jc == nil || jc.open != open {
			sts, unit := joinedView(pn.stations, [][]float64{{1}}, []int{0})
			jc = newCurve(sts, unit[0], int(n), pn.closedRates(sts))
			jc.open = open
			joinedCurves[p] = jc
		}
		jc.scale = d[0]
		zj, _ := jc.thinkFor(st.X[c])
		if len(pn.classes) > 1 {
			// Open requests share them: the pool's network keeps the
			// think time at which the joined queue carries the
			// throughput and adds the excess of joining the shortest
			// queue to the residence (network.fixedThink).
			pn.fixedThink = true
			return n, zj, math.NaN()
		}
		return n, zj, st.joinedPool(p, pn.stations[0], st.X[c], b.classes[cc].acq[p], d[0], n/jc.at(zj)-zj, own)
	}
	// pools finds the pool waits for the current hardware solution, in
	// passes until they settle (a pool's wait depends only on the waits
	// nested in its holding time, so passes end after the nesting depth).
	pools := func(x float64) error {
		for pass := 0; pass <= len(b.pools)+1; pass++ {
			st.compose(classes)
			st.X[c] = x
			if err := st.poolWaits(classes, o, newWait, thinkOf); err != nil {
				return err
			}
			change := 0.0
			for cc := range classes {
				for p := range b.pools {
					change = math.Max(change, relChange(newWait[cc][p], st.wait[cc][p]))
				}
				copy(st.wait[cc], newWait[cc])
			}
			if change <= 1e-13 {
				break
			}
		}
		st.compose(classes)
		st.X[c] = x
		return nil
	}

	// The population equation at a given X.
	var failure error
	eval := func(x float64) float64 {
		if failure != nil {
			return 0
		}
		st.iterations++
		if err := ctx.Err(); err != nil {
			failure = err
			return 0
		}
		for _, g := range groups {
			g.think, _ = g.curve.thinkFor(x)
		}
		if err := st.solveGroups(groups, c, o); err != nil {
			failure = err
			return 0
		}
		if err := pools(x); err != nil {
			failure = err
			return 0
		}
		g := (x*(Z+st.R[c]) - N) / N
		if math.IsNaN(g) {
			failure = errNotNumber
		}
		return g
	}

	// The throughput without contention bounds the root from above.
	for k := range b.stations {
		st.inStretch[k], st.inSquare[k] = nil, nil
		for cc := range classes {
			st.stretch[cc][k], st.extra[cc][k] = 1, 0
		}
	}
	st.compose(classes)
	if Z+st.R[c] <= 0 {
		return st.dampedFrom(ctx, classes, o)
	}
	hi := N / (Z + st.R[c])
	ghi := eval(hi)
	x, g := hi, ghi
	if failure == nil && math.Abs(ghi) > 1e-13 {
		x, g = illinois(eval, 0, -1, hi, ghi, 1e-12, 1e-13)
	}
	if failure == errNotNumber {
		// Out of floating-point range somewhere: the damped iteration,
		// from the start, is the fallback.
		st.iterations = 0
		for cc := range classes {
			clear(st.wait[cc])
		}
		st.net.classes[c].users = N
		return st.damped(ctx, classes, o, false)
	}
	if failure != nil {
		return failure
	}
	st.residual = math.Abs(g)
	if st.residual > o.tol {
		if err := st.fixSaturated(classes, c, x, groups, capPool, o, pools); err != nil {
			return err
		}
		st.residual = math.Abs(x*(Z+st.R[c])-N) / N
	}
	st.converged = st.residual <= o.tol && st.hw.converged
	return nil
}

// joinedPool is the time per request of the one closed class at pool p,
// whose station stn's copies queue as one (closedNet.solveJoined), given
// its demand d per copy, at the class's throughput x: joined, the time as
// one queue of all the units, and apart, as each copy's own (a random
// pick's), for acq acquisitions per request. It adds the excess of
// joining the shortest queue (and least-of-two's share of the way to the
// random pick's) at the load that holds the class's population there, and
// records what Supports weighs in poolSplit and poolBeyond.
func (st *state) joinedPool(p int, stn station, x, acq, d, joined, apart float64) float64 {
	demand := d * float64(stn.copies)
	wait := math.Max(joined-demand, 0)
	random := math.Max(apart-demand, 0)
	var w joinedWait
	var excess float64
	for range maxJoinedIterations {
		w = waitJoined(stn, openLoadHolding(stn, x*(joined+excess)), wait, random)
		next := w.wait + w.blend - wait
		done := math.Abs(next-excess) <= joinedTolerance*(joined+excess)
		excess = next
		if done {
			break
		}
	}
	if acq > 0 {
		st.poolSplit[p] = random / acq
	}
	st.poolBeyond[p] = joinedBeyond(stn, w.rho, w.wait, w.blend, true)
	return joined + excess
}

// errNotNumber says that a layer's solution left the floating-point range.
var errNotNumber = errors.New("not a number")

// hwGroup is the hardware layer for the closed class: a closed network of
// as many users as the pool enclosing all its visits admits. (The type
// allows splitting the hardware by enclosing pool, a disk used only under
// a connection pool of 10 seeing at most 10 users; on the shop example that
// made the holding times too short, the variability of holding times
// inside the pools being left out, and overestimated the throughput at
// 5 000 users by 8.6 % against 2.1 % for one layer.)
type hwGroup struct {
	enclosure
	stations []int
	net      *network
	curve    *curve
	think    float64
}

// hardwareGroups returns the hardware layer of closed class c.
func (st *state) hardwareGroups(c int, capHw enclosure, N float64) []*hwGroup {
	b := st.b
	g := &hwGroup{enclosure: capHw}
	if math.IsInf(g.n, 1) || g.n >= N {
		g.enclosure = enclosure{n: N, by: -1}
	}
	for k := range b.stations {
		g.stations = append(g.stations, k)
	}
	out := []*hwGroup{g}
	for _, g := range out {
		stations := make([]station, len(g.stations))
		for i, k := range g.stations {
			stations[i] = b.stations[k]
		}
		g.net = newNetwork(stations, append([]class(nil), st.net.classes...))
		g.net.fixedThink = true
		for cc := range st.net.classes {
			for i, k := range g.stations {
				g.net.demand[cc][i] = st.net.demand[cc][k]
				g.net.visits[cc][i] = st.net.visits[cc][k]
				g.net.second[cc][i] = st.net.second[cc][k]
			}
		}
		g.net.classes[c].users = g.n
		d, _ := g.net.closedDemands(c)
		// Copies that queue as one are one center of the curve; the
		// excess of joining the shortest queue is then in the think
		// time the curve gives (network.fixedThink).
		joinedStations, joinedDemand := joinedView(stations, [][]float64{d}, g.net.joinable())
		g.curve = newCurve(joinedStations, joinedDemand[0], int(g.n), g.net.closedRates(joinedStations))
	}
	return out
}

// solveGroups solves every hardware group at its think time and gathers
// the solutions into st.hw.
func (st *state) solveGroups(groups []*hwGroup, c int, o layerOptions) error {
	b := st.b
	C, K := len(st.net.classes), len(b.stations)
	hw := newSolution(C, K)
	for _, g := range groups {
		g.net.classes[c].think = g.think
		sol, err := g.net.solve(o.net)
		if err != nil {
			if errors.Is(err, errSaturated) {
				st.saturated = b.stations[g.stations[sol.saturated]].name
				return fmt.Errorf("%s: %w", st.saturated, errUnstable)
			}
			return err
		}
		for i, k := range g.stations {
			hw.U[k], hw.split[k], hw.beyond[k] = sol.U[i], sol.split[i], sol.beyond[i]
			for cc := range st.net.classes {
				hw.R[cc][k] = sol.R[cc][i]
			}
		}
		copy(hw.X, sol.X)
		hw.converged = hw.converged && sol.converged
		if hw.method == "" || sol.method != methodOpen {
			hw.method = sol.method
		}
	}
	st.hw = hw
	st.setVisitTimes()
	return nil
}

// fixSaturated completes a root that lies within rounding of a layer's
// capacity, where the layer's curve cannot be inverted and its time came
// out arbitrary. The saturated layer's time is then what its enclosing
// cycle leaves: when a pool q limits how many users reach it, q is
// saturated too and holds exactly its capacity, so the time q is held per
// request must be capacity/X; the layer's time is set so, and q's own time
// in turn by q's enclosing cycle, up to a layer that no pool encloses, whose
// time is set by the population equation X·(Z + R) = N. The layer to start
// from is the innermost saturated one (the times of those enclosing it are
// the arbitrary ones). A pool's time is set through its wait, a hardware
// group's through its think time.
func (st *state) fixSaturated(classes []class, c int, x float64, groups []*hwGroup, capPool []enclosure, o layerOptions, pools func(float64) error) error {
	b := st.b
	N, Z := classes[c].users, classes[c].think
	recompose := func() {
		st.compose(classes)
		st.X[c] = x
	}
	// gap(q) is what the cycle enclosing a layer limited by q still lacks.
	gap := func(q int) float64 {
		if q < 0 {
			return N/x - Z - st.R[c]
		}
		return b.pools[q].capacityTotal()/x - b.classes[c].units[q]*st.hold[c][q]
	}
	depth := func(q int) int {
		d := 0
		for ; q >= 0 && d <= len(b.pools); d++ {
			q = capPool[q].by
		}
		return d
	}
	// The starting layer: a pool (≥ 0) or a hardware group.
	cur, grp, best := -1, -1, -1
	for q, pl := range b.pools {
		if pl.limited() && b.classes[c].acq[q] > 0 && st.poolUtilization(q) >= 1-1e-6 && depth(q) > best {
			cur, best = q, depth(q)
		}
	}
	for i, g := range groups {
		top := 0.0
		for _, k := range g.stations {
			top = math.Max(top, st.hw.U[k])
		}
		if top >= 1-1e-6 && 1+depth(g.by) > best {
			cur, grp, best = -1, i, 1+depth(g.by)
		}
	}
	if best < 0 {
		cur, _ = st.busiestPool(c)
		if cur < 0 {
			return nil
		}
	}
	// root finds v in [0, ∞) where f, decreasing, crosses 0 (0 if it is
	// negative there already).
	root := func(f func(float64) float64, start float64) {
		if f0 := f(0); f0 > 0 {
			hi := math.Max(start, 1e-9)
			fhi := f(hi)
			for i := 0; fhi > 0 && i < 200; i++ {
				hi *= 2
				fhi = f(hi)
			}
			illinois(f, 0, f0, hi, fhi, 1e-15, 0)
		}
	}
	var failure error
	if grp >= 0 {
		// A hardware group: its time falls as its think time grows, and
		// the pools' holding times with it.
		g := groups[grp]
		enc := g.by
		root(func(z float64) float64 {
			g.think = z
			if err := st.solveGroups(groups, c, o); err != nil {
				failure = err
				return 0
			}
			if err := pools(x); err != nil {
				failure = err
				return 0
			}
			return -gap(enc)
		}, g.think)
		if failure != nil || enc < 0 {
			return failure
		}
		cur = enc
	}
	for guard := 0; cur >= 0 && guard <= len(b.pools); guard++ {
		enc := capPool[cur].by
		// The gap shrinks as the wait grows; joins of parallel lists make
		// it nonlinear.
		root(func(w float64) float64 {
			st.wait[c][cur] = w
			recompose()
			return gap(enc)
		}, st.wait[c][cur])
		cur = enc
	}
	return nil
}

// busiestPool returns the limited pool acquired by class c with the highest
// utilization, and that utilization (−1, 0 when there is none).
func (st *state) busiestPool(c int) (int, float64) {
	b := st.b
	best, top := -1, 0.0
	for p, pl := range b.pools {
		if !pl.limited() || b.classes[c].acq[p] == 0 {
			continue
		}
		if u := st.poolUtilization(p); u > top {
			best, top = p, u
		}
	}
	return best, top
}

// poolUtilization is the utilization of pool p by every class.
func (st *state) poolUtilization(p int) float64 {
	var busy float64
	for c, ci := range st.b.classes {
		busy += st.X[c] * ci.units[p] * st.hold[c][p]
	}
	return busy / st.b.pools[p].capacityTotal()
}

// closedDemands returns closed class c's demands per instance of each
// station, inflated by 1/(1 − U_open) as solve does, or errSaturated when
// the open classes overload a station.
func (n *network) closedDemands(c int) ([]float64, error) {
	uOpen := n.openUtilization()
	_, roomyAt := n.sharing(uOpen)
	out := make([]float64, len(n.stations))
	for k, st := range n.stations {
		d := n.demand[c][k]
		if st.servers > 0 && !roomyAt[k] {
			if uOpen[k] >= 1 {
				return nil, errSaturated
			}
			d /= 1 - uOpen[k]
		}
		out[k] = d
	}
	return out, nil
}

// closedRates returns the rates at which the closed classes see the
// servers of each of stations, n's or a view of them whose copies queue
// as one (joinedView), where open requests share them
// (closedNet.shared); nil where no station's are shared.
func (n *network) closedRates(stations []station) [][]float64 {
	uOpen := n.openUtilization()
	shared, _ := n.sharing(uOpen)
	out := ratesOf(shared)
	for k, sh := range shared {
		if sh != nil && stations[k].servers != n.stations[k].servers {
			out[k] = newSharedServers(stations[k].servers, uOpen[k]).rates
		}
	}
	return out
}

// ratesOf returns the stations' rates (closedNet.shared) of their shared
// servers, nil where none are.
func ratesOf(shared []*sharedServers) [][]float64 {
	var out [][]float64
	for k, sh := range shared {
		if sh != nil {
			if out == nil {
				out = make([][]float64, len(shared))
			}
			out[k] = sh.rates
		}
	}
	return out
}

// openUtilization is the utilization of one server of each station by the
// open classes.
func (n *network) openUtilization() []float64 {
	uOpen := make([]float64, len(n.stations))
	for c, cl := range n.classes {
		if !cl.open {
			continue
		}
		for k, st := range n.stations {
			if st.servers > 0 {
				uOpen[k] += cl.rate * n.demand[c][k] / float64(st.servers)
			}
		}
	}
	return uOpen
}

// saturatedStation is the first station the open classes overload, or 0.
func (n *network) saturatedStation() int {
	for k, u := range n.openUtilization() {
		if u >= 1 {
			return k
		}
	}
	return 0
}

// caps returns, for a closed class, how many of its users the hardware and
// each pool can hold at most, and the pool that limits it. A layer all of
// whose visits (acquisitions, for a pool) happen while some limited pools
// are held holds no more users than the smallest of those pools'
// capacities over its copies; +Inf when no pool encloses every visit. Work sent
// asynchronously is counted with its sender's pools. Without these caps a
// layer inside a saturated pool would be solved with every user of the
// class, the ones queued outside the pool included, and its queues would
// keep growing with the population.
func (b *built) caps(ci *classInfo) (enclosure, []enclosure) {
	e := &encloser{b: b, ci: ci, pools: make([]map[int]bool, len(b.pools)), fixed: map[string]string{}}
	e.steps(ci.w.Steps, nil, nil, 1, 0)
	capOf := func(set map[int]bool) enclosure {
		out := enclosure{n: math.Inf(1), by: -1}
		for q := range set {
			pl := b.pools[q]
			if n := pl.capacityTotal(); n < out.n || (n == out.n && q < out.by) {
				out = enclosure{n, q}
			}
		}
		return out
	}
	pools := make([]enclosure, len(b.pools))
	for p := range pools {
		pools[p] = capOf(e.pools[p])
	}
	return capOf(e.hw), pools
}

// enclosure is the most users a layer can hold, n, and the pool that
// limits it (−1 for none).
type enclosure struct {
	n  float64
	by int
}

// encloser walks a workload and intersects the sets of limited pools held
// at its hardware visits and at its acquisitions of each pool.
type encloser struct {
	b     *built
	ci    *classInfo
	hw    map[int]bool
	pools []map[int]bool
	fixed map[string]string
}

func intersect(set map[int]bool, held []int) map[int]bool {
	in := map[int]bool{}
	for _, q := range held {
		in[q] = true
	}
	if set == nil {
		return in
	}
	for q := range set {
		if !in[q] {
			delete(set, q)
		}
	}
	return set
}

func (e *encloser) acquire(p int, held []int) []int {
	e.pools[p] = intersect(e.pools[p], held)
	if !e.b.pools[p].limited() {
		return held
	}
	return append(append([]int(nil), held...), p)
}

func (e *encloser) steps(steps []model.Step, c *model.Component, held []int, weight float64, depth int) {
	if weight == 0 || depth > maxDepth {
		return
	}
	for i := range steps {
		s := &steps[i]
		switch s.Kind {
		case model.StepCPU, model.StepDisk:
			if k, _ := e.b.stationOf(s, c); k >= 0 && s.Demand.Mean() > 0 {
				e.hw = intersect(e.hw, held)
			}
		case model.StepCall, model.StepSend:
			op := e.b.m.Operation(s.Target)
			if op == nil {
				continue
			}
			inner := e.acquire(e.b.poolIdx[model.ThreadsResource(op.Component)], held)
			e.steps(op.Steps, e.b.m.Component(op.Component), inner, weight, depth+1)
		case model.StepLoop:
			e.steps(s.Steps, c, held, weight*s.Times.Mean(), depth)
		case model.StepBranch:
			for _, br := range s.Branches {
				e.steps(br.Steps, c, held, weight*br.P, depth)
			}
		case model.StepParallel:
			for _, list := range s.Parallel {
				e.steps(list, c, held, weight, depth)
			}
		case model.StepHold:
			inner := held
			if p, ok := e.b.poolIdx[s.Resource]; ok {
				inner = e.acquire(p, held)
			}
			e.steps(s.Steps, c, inner, weight, depth)
		case model.StepAcquire:
			if p, ok := e.b.poolIdx[s.Resource]; ok {
				e.pools[p] = intersect(e.pools[p], held)
			}
		case model.StepSwitch:
			forCases(e.ci.w, s, e.fixed, func(body []model.Step, p float64) {
				e.steps(body, c, held, weight*p, depth)
			})
		}
	}
}
