package mva

import (
	"context"
	"errors"
	"fmt"
	"math"
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
	// hold[c][p] its mean holding time per acquisition.
	wait, hold [][]float64
	// Per station and class: the mean time of a visit as a function of the
	// visit's demand: d·stretch + extra.
	stretch, extra [][]float64
	iterations     int
	converged      bool
	residual       float64
	usesPools      bool
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
	st := &state{b: b, X: make([]float64, C), R: make([]float64, C), wait: matrix(C, P), hold: matrix(C, P),
		stretch: matrix(C, K), extra: matrix(C, K)}
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
	st.net = net
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
		tw.visitTime = func(k int, d float64) float64 { return d*st.stretch[c][k] + st.extra[c][k] }
		st.R[c] = tw.request()
		if cl.open {
			st.X[c] = cl.rate
		} else if cl.users > 0 {
			st.X[c] = cl.users / (cl.think + st.R[c])
		}
		for p := range b.pools {
			if a := b.classes[c].acq[p]; a > 0 {
				st.hold[c][p] = tw.held[p] / a
			}
		}
	}
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
// stations.
func (st *state) setVisitTimes() {
	for c := range st.b.classes {
		for k, s := range st.b.stations {
			d, v, r := st.net.demand[c][k], st.net.visits[c][k], st.hw.R[c][k]
			st.stretch[c][k], st.extra[c][k] = 1, 0
			if d <= 0 || v <= 0 {
				continue
			}
			if s.fcfs {
				st.extra[c][k] = math.Max(r-d, 0) / v
			} else {
				st.stretch[c][k] = r / d
			}
		}
	}
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
	for p, pl := range b.pools {
		for c := range classes {
			out[c][p] = 0
		}
		if !pl.limited() {
			continue
		}
		var users []int
		var any bool
		for c, ci := range b.classes {
			if ci.acq[p] > 0 && (classes[c].open || classes[c].users > 0) {
				users = append(users, c)
				any = true
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
		stn := []station{{name: pl.name, servers: servers, copies: pl.copies}}
		pn := newNetwork(stn, sub)
		for i, c := range users {
			ci := b.classes[c]
			a, h := ci.acq[p], st.hold[c][p]
			sub[i] = classes[c]
			if !classes[c].open {
				sub[i].think = math.Max(classes[c].think+st.R[c]-a*(st.wait[c][p]+h), 0)
			}
			pn.demand[i][0] = a * h / float64(pl.copies)
			pn.visits[i][0] = a / float64(pl.copies)
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
		ps, err := pn.solve(o.net)
		if err != nil {
			if errors.Is(err, errSaturated) {
				st.saturated = pl.name
				return fmt.Errorf("%s: %w", pl.name, errUnstable)
			}
			return err
		}
		for i, c := range users {
			a := pn.visits[i][0]
			if a > 0 {
				out[c][p] = math.Max(ps.R[i][0]-pn.demand[i][0], 0) / a
			}
		}
	}
	return nil
}
