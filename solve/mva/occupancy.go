package mva

import (
	"math"
	"slices"
)

// occupancy is a Markov chain of the bursts at one processor-sharing
// station whose load is made inside limited pools: per pool g, the
// number n_g of its requests that want the station, of whom min(n_g, c_g)
// hold one of its c_g units and run there (the others wait for the pool),
// so that the pools' presences at the station are correlated as they are
// where every pool's holding time is its bursts (a process's CPU slot).
// Work made inside no pool is one more group, with as many units as
// levels, so that its bursts never wait. Bursts are exponential, arrivals
// Poisson; the station's servers share themselves equally among the
// bursts present.
//
// The chain keeps the levels 0 … c_g + q per pool; the top one
// stands for itself and every level above it, which the chain leaves as a
// geometric tail: a burst that ends at the top leaves the level at the top
// with the probability r_g that another is waiting beyond it, and r_g is
// iterated until as many requests leave the tail as enter it. Against the
// full chain of two to four one-unit pools on one server (eleven cases,
// TestOccupancyAgainstExactChain) two queue levels (q = 2) are within
// 1.4 %, and the 4 to 32 queueLevels keeps for them within 0.3 %.
type occupancy struct {
	servers    float64
	lambda, mu []float64
	// pools[g] is the index among the model's pools of the chain's pool g
	// (the number of the model's pools for the work made inside none).
	pools []int
	// units[g] is pool g's units, levels[g] its queue levels, top[g] its
	// top level.
	units, levels, top []int
	// level[s*G+g] is pool g's level in state s; active[s] the bursts at
	// the station there, and run[s] the rate at which each of them runs.
	level       []int
	active, run []float64
	// atTop[g] lists the states where pool g is at its top level.
	atTop  [][]int
	stride []int
	pi, r  []float64
	// m1[g] and m2[g] are the moments of a tagged burst's remaining time
	// per state (see squares), kept as the start of the next solution.
	m1, m2 [][]float64
	// The transitions at the current rates (see flows): into state s, the
	// entries in[row[s]:row[s+1]]; out of it, fixed[s] plus the entries
	// leave[lrow[s]:lrow[s+1]].
	in, leave []flow
	row, lrow []int
	fixed     []float64
}

// flow is a transition of the chain at rate, from or to state at, times
// 1 − r_tail where tail is a pool whose tail the transition leaves (−1 for
// none).
type flow struct {
	at, tail int
	rate     float64
}

// The chain keeps queue levels beyond each pool's units, between
// minQueueLevels and maxQueueLevels, as many as fit in occupancyStates
// states; stations whose chain would not fit keep the mean-value stretch.
const (
	minQueueLevels  = 1
	maxQueueLevels  = 32
	occupancyStates = 1 << 11
	// maxOccupancyStates caps any chain (tests solve deeper ones).
	maxOccupancyStates = 1 << 14
	// minFreeLevels and maxFreeLevels bound the levels of the load made
	// inside no pool (see state.occupancyStretch).
	minFreeLevels = 4
	maxFreeLevels = 32
)

// queueLevels returns the queue levels the chain keeps per pool, for pools
// busy per unit as busy says (its bursts' stretch included: a pool is
// busier than its demand alone makes it) with the given units, in a chain
// whose other groups multiply its states by times: each starts at the
// levels where busy^q falls below 1e-4, at most maxQueueLevels, and while
// the chain has more than occupancyStates states a level is taken from the
// pool where the last one weighs least (the smallest busy^q), down to
// minQueueLevels; nil where even that does not fit.
func queueLevels(busy []float64, units []int, times int) []int {
	G := len(busy)
	q := make([]int, G)
	rho := make([]float64, G)
	for g := range G {
		rho[g] = math.Min(busy[g], 0.99)
		// Levels whose weight ρ^q is below 1e-4 do not count.
		q[g] = maxQueueLevels
		if rho[g] > 0 {
			q[g] = min(q[g], max(minQueueLevels, int(math.Ceil(math.Log(1e-4)/math.Log(rho[g])))))
		}
	}
	for {
		n := times
		for g, c := range units {
			n *= c + q[g] + 1
			if n > occupancyStates {
				break
			}
		}
		if n <= occupancyStates {
			return q
		}
		cut := -1
		for g := range G {
			if q[g] > minQueueLevels && (cut < 0 || math.Pow(rho[g], float64(q[g])) < math.Pow(rho[cut], float64(q[cut]))) {
				cut = g
			}
		}
		if cut < 0 {
			return nil
		}
		q[cut]--
	}
}

// newOccupancy returns the chain of pools with arrival rates lambda, mean
// bursts 1/mu, units, and levels[g] queue levels beyond each pool's units,
// at a station of the given servers; nil beyond maxOccupancyStates states.
func newOccupancy(servers int, lambda, mu []float64, units, levels []int) *occupancy {
	G := len(lambda)
	o := &occupancy{servers: float64(servers), lambda: lambda, mu: mu, units: units, levels: levels,
		top: make([]int, G), stride: make([]int, G), r: make([]float64, G)}
	n := 1
	for g := range G {
		o.top[g] = units[g] + levels[g]
		o.stride[g] = n
		n *= o.top[g] + 1
		if n > maxOccupancyStates {
			return nil
		}
	}
	o.level = make([]int, n*G)
	o.active = make([]float64, n)
	o.run = make([]float64, n)
	o.atTop = make([][]int, G)
	o.pi = make([]float64, n)
	for s := range n {
		x, m := s, 0
		for g := range G {
			l := x % (o.top[g] + 1)
			x /= o.top[g] + 1
			o.level[s*G+g] = l
			m += min(l, units[g])
		}
		o.active[s] = float64(m)
		o.run[s] = 1
		if o.active[s] > o.servers {
			o.run[s] = o.servers / o.active[s]
		}
		for g := range G {
			if o.level[s*G+g] == o.top[g] {
				o.atTop[g] = append(o.atTop[g], s)
			}
		}
	}
	for s := range o.pi {
		o.pi[s] = 1 / float64(n)
	}
	for g := range o.r {
		o.r[g] = 0.5
	}
	return o
}

// flows lists the chain's transitions at the current rates, as solve
// reads them: per state, the flows into it from its neighbours, and the
// rate out of it, part of it through the tails.
func (o *occupancy) flows() {
	G, n := len(o.lambda), len(o.pi)
	o.in, o.leave = o.in[:0], o.leave[:0]
	o.row, o.lrow = append(o.row[:0], 0), append(o.lrow[:0], 0)
	o.fixed = slices.Grow(o.fixed[:0], n)[:n]
	for s := range n {
		ls := o.level[s*G : s*G+G]
		var fixed float64
		for g, l := range ls {
			if l > 0 {
				o.in = append(o.in, flow{at: s - o.stride[g], tail: -1, rate: o.lambda[g]})
				a := float64(min(l, o.units[g])) * o.mu[g] * o.run[s]
				if l == o.top[g] {
					o.leave = append(o.leave, flow{at: s, tail: g, rate: a})
				} else {
					fixed += a
				}
			}
			if l < o.top[g] {
				fixed += o.lambda[g]
				up := s + o.stride[g]
				f := flow{at: up, tail: -1, rate: float64(min(l+1, o.units[g])) * o.mu[g] * o.run[up]}
				if l+1 == o.top[g] {
					f.tail = g
				}
				o.in = append(o.in, f)
			}
		}
		o.fixed[s] = fixed
		o.row, o.lrow = append(o.row, len(o.in)), append(o.lrow, len(o.leave))
	}
}

// solve finds the stationary distribution by Gauss–Seidel sweeps,
// updating the tails' continuation probabilities as it goes (from the
// previous solution where the chain was solved before), and reports
// whether it converged.
func (o *occupancy) solve() bool {
	n := len(o.pi)
	o.flows()
	keep := make([]float64, len(o.r))
	const maxSweeps = 20000
	for sweep := range maxSweeps {
		for g, r := range o.r {
			keep[g] = 1 - r
		}
		var change float64
		for s := range n {
			var in float64
			for _, f := range o.in[o.row[s]:o.row[s+1]] {
				x := o.pi[f.at] * f.rate
				if f.tail >= 0 {
					x *= keep[f.tail]
				}
				in += x
			}
			out := o.fixed[s]
			for _, f := range o.leave[o.lrow[s]:o.lrow[s+1]] {
				out += f.rate * keep[f.tail]
			}
			if out > 0 {
				v := in / out
				change += math.Abs(v - o.pi[s])
				o.pi[s] = v
			}
		}
		var sum float64
		for _, v := range o.pi {
			sum += v
		}
		if sum <= 0 || math.IsNaN(sum) || math.IsInf(sum, 0) {
			return false
		}
		for s := range o.pi {
			o.pi[s] /= sum
		}
		change /= sum
		rChange := o.updateTails()
		if sweep > 0 && change < 1e-12 && rChange < 1e-11 {
			return true
		}
	}
	return false
}

// updateTails moves each pool's continuation probability halfway to the
// one that balances the flows into and out of its tail at the current
// distribution, and returns the largest change.
func (o *occupancy) updateTails() float64 {
	var most float64
	for g := range o.r {
		var atTop, leave float64
		for _, s := range o.atTop[g] {
			p := o.pi[s]
			atTop += p
			leave += p * float64(o.units[g]) * o.mu[g] * o.run[s]
		}
		want := 0.0
		if leave > 0 {
			want = math.Min(o.lambda[g]*atTop/leave, 0.999)
		}
		next := 0.5*o.r[g] + 0.5*want
		most = math.Max(most, math.Abs(next-o.r[g]))
		o.r[g] = next
	}
	return most
}

// queued returns the mean number of pool g's requests that wait for one
// of its units, the tail beyond its top level included (a geometric number
// with continuation r_g, of mean r_g/(1 − r_g)).
func (o *occupancy) queued(g int) float64 {
	G := len(o.lambda)
	var n float64
	for s, p := range o.pi {
		if l := o.level[s*G+g]; l > o.units[g] {
			n += p * float64(l-o.units[g])
		}
	}
	var top float64
	for _, s := range o.atTop[g] {
		top += o.pi[s]
	}
	if r := o.r[g]; r < 1 {
		n += top * r / (1 - r)
	}
	return n
}

// stretches returns, per pool, the mean time its bursts spend at the
// station over their mean demand (residence per demand), and, last, that
// of a burst made inside no pool that would arrive now (running at its
// share of the servers with the bursts it finds).
func (o *occupancy) stretches() []float64 {
	G := len(o.lambda)
	out := make([]float64, G+1)
	for g := range G {
		var present, done float64
		for s, p := range o.pi {
			a := float64(min(o.level[s*G+g], o.units[g]))
			present += p * a
			done += p * a * o.mu[g] * o.run[s]
		}
		out[g] = 1
		if done > 0 {
			out[g] = present * o.mu[g] / done
		}
	}
	for s, p := range o.pi {
		out[G] += p * math.Max(1, (o.active[s]+1)/o.servers)
	}
	return out
}

// squares returns, per pool, the second moment of the factor F by which
// its bursts are stretched, E[F²] = E[H²]/E[D²] for a burst of exponential
// demand D that holds the station for H, and, last, that of a burst made
// inside no pool that would arrive now (its share of the servers when it
// arrives, held for the whole burst). H is the time to absorption of the
// chain with one of the pool's bursts tagged, started where the pool's
// bursts start: an arrival that finds a unit free, or the end of another
// burst of the pool with requests waiting. Its moments solve
// (−T)·m₁ = 1 and (−T)·m₂ = 2·m₁ over the chain's generator T with the
// tagged burst's end as the absorbing state, by Gauss–Seidel sweeps.
func (o *occupancy) squares() []float64 {
	G, n := len(o.lambda), len(o.pi)
	out := make([]float64, G+1)
	if o.m1 == nil {
		o.m1, o.m2 = make([][]float64, G), make([][]float64, G)
		for g := range G {
			o.m1[g], o.m2[g] = make([]float64, n), make([]float64, n)
		}
	}
	start := make([]float64, n)
	for g := range G {
		// Where the pool's bursts start, weighted by how often.
		clear(start)
		var starts float64
		for s, p := range o.pi {
			l := o.level[s*G+g]
			switch {
			case l < o.units[g]:
				start[s+o.stride[g]] += p * o.lambda[g]
				starts += p * o.lambda[g]
			case l > o.units[g]:
				done := p * float64(o.units[g]) * o.mu[g] * o.run[s]
				if l == o.top[g] {
					start[s] += done * o.r[g]
					start[s-o.stride[g]] += done * (1 - o.r[g])
				} else {
					start[s-o.stride[g]] += done
				}
				starts += done
			}
		}
		if starts <= 0 {
			out[g] = 1
			continue
		}
		m1, m2 := o.m1[g], o.m2[g]
		o.tagged(g)
		if !o.absorb(g, m1, nil) || !o.absorb(g, m2, m1) {
			return nil
		}
		var h2 float64
		for s, w := range start {
			h2 += w / starts * m2[s]
		}
		out[g] = h2 * o.mu[g] * o.mu[g] / 2
	}
	for s, p := range o.pi {
		f := math.Max(1, (o.active[s]+1)/o.servers)
		out[G] += p * f * f
	}
	return out
}

// tagged lists, in o.in, o.row and o.fixed, the transitions of the chain
// with a burst of pool g tagged, over the states where g has a burst at
// the station: out of each, the tagged burst's end (absorbing) and every
// other transition, whose targets are listed with their rates.
func (o *occupancy) tagged(g int) {
	G, n := len(o.lambda), len(o.pi)
	o.in, o.row = o.in[:0], append(o.row[:0], 0)
	o.fixed = slices.Grow(o.fixed[:0], n)[:n]
	for s := range n {
		ls := o.level[s*G : s*G+G]
		if ls[g] > 0 {
			run := o.run[s]
			// The tagged burst ends at its own rate.
			out := o.mu[g] * run
			for h, l := range ls {
				if l < o.top[h] {
					out += o.lambda[h]
					o.in = append(o.in, flow{at: s + o.stride[h], tail: -1, rate: o.lambda[h]})
				}
				a := float64(min(l, o.units[h]))
				if h == g {
					a-- // the tagged burst's end absorbs
				}
				if a <= 0 {
					continue
				}
				rate := a * o.mu[h] * run
				if l == o.top[h] {
					rate *= 1 - o.r[h]
				}
				out += rate
				o.in = append(o.in, flow{at: s - o.stride[h], tail: -1, rate: rate})
			}
			o.fixed[s] = out
		}
		o.row = append(o.row, len(o.in))
	}
}

// absorb solves, by Gauss–Seidel sweeps over the transitions tagged lists
// for pool g, for the moment m of the time until the tagged burst ends:
// the first (with prev nil), m(s)·out(s) = 1 + Σ q(s,s')·m(s'), or the
// second, with 2·prev(s) in place of 1. It reports whether the sweeps
// converged.
func (o *occupancy) absorb(g int, m, prev []float64) bool {
	G, n := len(o.lambda), len(o.pi)
	const maxSweeps = 20000
	for range maxSweeps {
		var change, size float64
		for s := range n {
			if o.level[s*G+g] == 0 {
				continue
			}
			in := 1.0
			if prev != nil {
				in = 2 * prev[s]
			}
			for _, f := range o.in[o.row[s]:o.row[s+1]] {
				in += f.rate * m[f.at]
			}
			v := in / o.fixed[s]
			change = math.Max(change, math.Abs(v-m[s]))
			size = math.Max(size, math.Abs(v))
			m[s] = v
		}
		if change <= 1e-12*size {
			return true
		}
	}
	return false
}
