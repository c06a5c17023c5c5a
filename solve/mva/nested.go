package mva

import (
	"fmt"
	"math"

	"github.com/perfcast/perfcast/model"
)

// nestedWaits replaces, in out, the waits poolWaits gave for a pool p of
// several units whose holders queue inside it for a one-unit pool q (a
// process's CPU slot inside a database's connections, a lock inside a
// thread pool), for the classes that hold p, and sets innerOf[q] and
// innerWait[q], the wait for q of the holds made while holding p (the
// others keep poolWaits's wait for q).
//
// poolWaits solves every pool on its own: q as an open queue that all its
// acquisitions reach, p as c servers whose holding time contains q's wait.
// But no more requests can queue at q from inside p than p's units, and
// when p's holders are slowed together at q, p's units are not c
// independent servers: q's wait is counted without its bound and counted
// again in p's. Near q's capacity the two pools were reported overloaded
// where they were stable.
//
// Here p and what it encloses are one flow-equivalent server (Chandy,
// Herzog and Woo): the requests inside p form a closed network of q (FCFS,
// one unit, the holders' mixed holding time, the mean-value equation with
// the residual of a non-exponential hold) and a delay (the rest of p's
// holding time), solved by mean-value analysis for n = 1 … c holders,
// giving the throughput X(n); q's load from outside p slows it by
// 1/(1 − ρ). The number of requests at p (waiting or holding) is then a
// birth–death process with arrivals at p's acquisition rate and departures
// at X(min(n, c)), exact when the arrivals are Poisson and the network is
// of product form, and in closed form. The acquisitions that the lists of
// a parallel step make together arrive one by one here, since the join
// adds their holds in line (see flowEquivalent). The wait for q inside p
// is what is left of p's mean holding time, n's mean inside over the
// rate, after q's holds and the delay.
//
// It applies when every class that holds p or q is open, p and q are one
// copy each, and every acquisition takes one unit; for each p, q is the
// one-unit pool with the most holding time inside p. Other pools inside p
// stay in the delay.
//
// nested maps each such p to its q (from nestedPools); poolWaits leaves p
// to this function.
func (st *state) nestedWaits(nested map[int]int, out [][]float64) error {
	b := st.b
	// innerOf stays from the last solution while the pair does (the
	// walk has told q's holds inside p apart by it).
	for q, p := range st.innerOf {
		if inner, ok := nested[p]; !ok || inner != q {
			st.innerOf[q] = -1
		}
	}
	for p := range b.pools {
		q, ok := nested[p]
		if !ok {
			continue
		}
		f, ok := st.flowEquivalent(p, q)
		if !ok {
			st.innerOf[q] = -1
			continue
		}
		inside, wait, ok := f.solve()
		if !ok {
			st.saturated = b.pools[p].name
			return fmt.Errorf("%s: %w", b.pools[p].name, errUnstable)
		}
		st.innerOf[q] = p
		st.innerWait[q] = math.Max((inside-f.z-f.visits*f.service)/f.visits, 0)
		for c, ci := range b.classes {
			if ci.acq[p] > 0 {
				out[c][p] = wait
			}
		}
	}
	return nil
}

// nestedPools maps every pool p that nestedWaits solves to its inner pool.
func (st *state) nestedPools(classes []class) map[int]int {
	var out map[int]int
	for p, pp := range st.b.pools {
		if !pp.limited() || pp.capacity < 2 || pp.copies != 1 || pp.component != "" && pp.queue != model.QueueUnlimited {
			continue
		}
		if q := st.innerPool(classes, p); q >= 0 {
			if out == nil {
				out = map[int]int{}
			}
			out[p] = q
		}
	}
	return out
}

// innerPool returns the one-unit pool held inside pool p with the most
// holding time there, -1 when there is none or when p or it does not meet
// nestedWaits's conditions.
func (st *state) innerPool(classes []class, p int) int {
	b := st.b
	best, most := -1, 0.0
	for q, pq := range b.pools {
		if q == p || pq.capacity != 1 || pq.copies != 1 || pq.component != "" && pq.queue != model.QueueUnlimited {
			continue
		}
		var held float64
		for c, ci := range b.classes {
			held += st.X[c] * ci.under[q][p] * st.hold[c][q]
		}
		if held > most {
			best, most = q, held
		}
	}
	if best < 0 {
		return -1
	}
	// A tighter pool of several units between p and q is the one to
	// solve with q; p's holding time then composes its waits.
	for r, pr := range b.pools {
		if r == p || r == best || !pr.limited() || pr.capacity < 2 {
			continue
		}
		for _, ci := range b.classes {
			if ci.under[best][r] > 0 && ci.under[r][p] > 0 {
				return -1
			}
		}
	}
	for c, ci := range b.classes {
		uses := ci.acq[p] > 0 || ci.acq[best] > 0
		if !uses {
			continue
		}
		if !classes[c].open && classes[c].users > 0 {
			return -1
		}
		if ci.units[p] > ci.acq[p]*(1+1e-9) || ci.units[best] > ci.acq[best]*(1+1e-9) {
			return -1
		}
	}
	return best
}

// flowEquivalent is pool p with the one-unit pool q inside it, per
// acquisition of p.
type flowEquivalent struct {
	units int
	// visits to q, q's mean holding time and its second moment per visit,
	// the rest of p's holding time (z), q's utilization from outside p.
	visits, service, second, z, background float64
	// rate is the rate of p's acquisitions.
	rate float64
}

// flowEquivalent gathers p's and q's loads from the current state; false
// when p carries no load.
func (st *state) flowEquivalent(p, q int) (*flowEquivalent, bool) {
	b := st.b
	f := &flowEquivalent{units: b.pools[p].capacity}
	var holdSum, qVisits, qHold, qSq, qWait float64
	for c, ci := range b.classes {
		x := st.X[c]
		if x <= 0 {
			continue
		}
		// The holds of q inside p, where the walk has told them apart
		// from q's others (sent work's, say), and as q's holds on
		// average until it has.
		n := ci.under[q][p]
		h, sq := st.hold[c][q], st.holdSq[c][q]
		if st.innerOf[q] == p && st.innerHold[c][q] > 0 {
			h, sq = st.innerHold[c][q], st.innerHoldSq[c][q]
		}
		f.background += x * math.Max(ci.acq[q]*st.hold[c][q]-n*h, 0)
		a := ci.acq[p]
		if a <= 0 {
			continue
		}
		f.rate += x * a
		holdSum += x * a * st.hold[c][p]
		if n > 0 {
			qVisits += x * n
			qHold += x * n * h
			qSq += x * n * sq
			qWait += x * n * st.innerWait[q]
		}
	}
	if f.rate <= 0 || qVisits <= 0 || qHold <= 0 {
		return nil, false
	}
	f.visits = qVisits / f.rate
	f.service = qHold / qVisits
	f.second = math.Max(qSq/qVisits, f.service*f.service)
	f.z = math.Max(holdSum/f.rate-(qHold+qWait)/f.rate, 0)
	// The acquisitions arrive one by one: the lists of a parallel step
	// that acquire p together are one batch, but the join already adds
	// their holds in line behind each other (at p and at q); arriving as
	// batches here too counted those waits twice (the catalog of the
	// tests: +54 and +184 % against the simulator, where single arrivals
	// give +1 and +17 %).
	return f, true
}

// solve returns the mean time p is held per acquisition and the mean wait
// for p; false when the arrivals exceed the throughput with every unit
// held.
func (f *flowEquivalent) solve() (inside, wait float64, ok bool) {
	c := f.units
	// Throughput with n = 1 … c requests inside p.
	x := make([]float64, c+1)
	slow := 1 / math.Max(1-f.background, 1e-9)
	residual := f.second / (2 * f.service)
	var queue, util float64
	for n := 1; n <= c; n++ {
		r := f.visits * slow * (f.service*(1+queue-util) + util*residual)
		x[n] = float64(n) / (r + f.z)
		queue = x[n] * r
		util = math.Min(x[n]*f.visits*f.service, 1)
	}
	inside, wait, _, ok = birthDeath(f.rate, x, nil)
	return inside, wait, ok
}
