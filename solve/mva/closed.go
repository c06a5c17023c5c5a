package mva

import (
	"math"
	"slices"
)

// closedNet is the closed part of a network: classes with populations and
// think times, and demands per instance of each station.
type closedNet struct {
	stations []station
	users    []float64
	think    []float64
	demand   [][]float64
	// shared[k], where not nil, is station k's servers as open
	// requests share them (sharedServers), whose rates b(0..s) with j of
	// the closed jobs present replace min(j, s), b(s) = s.
	shared []*sharedServers
}

// closedSolution is the solution of a closed network.
type closedSolution struct {
	X          []float64
	R          [][]float64
	method     string
	iterations int
	converged  bool
	// P[k], at a station with rates, holds the probabilities of
	// j = 0..s−1 closed jobs at one of its instances at the full
	// population (exact) or as approximate MVA takes them.
	P [][]float64
}

// Method names reported in results.
const (
	methodExact       = "exact-mva"
	methodExactMulti  = "exact-multiclass-mva"
	methodSchweitzer  = "amva-schweitzer-bard"
	methodOpen        = "open"
	methodLayeredNote = "+layers"
)

// maxExactMultiPopulation is the largest total population solved by exact
// multi-class MVA when multi-server stations are present.
const maxExactMultiPopulation = 60

// solve picks exact MVA for one class or a small multi-class population and
// approximate MVA otherwise.
func (n *closedNet) solve(o solveOptions) *closedSolution {
	n = n.withoutIdleServers()
	integral := true
	states, total := 1.0, 0.0
	for _, u := range n.users {
		if u != math.Trunc(u) {
			integral = false
		}
		states *= u + 1
		total += u
	}
	multi := false
	for _, st := range n.stations {
		multi = multi || st.servers > 1
	}
	if integral && !o.forceApprox {
		if len(n.users) == 1 {
			return n.exactSingle()
		}
		// Multi-class marginals come from Reiser's recursion, whose
		// rounding errors grow geometrically with the population.
		if states <= float64(o.exactStates) && (!multi || total <= maxExactMultiPopulation) {
			return n.exactMulti()
		}
	}
	return n.schweitzer(o.tol, o.maxIter)
}

// withoutIdleServers returns n, or a copy of it in which every station
// with at least as many servers as the network has users is a delay
// station: no user ever waits there (it finds at most the others busy), so
// the solution is the same, and the algorithms need not keep a probability
// per server of a station with a million cores.
func (n *closedNet) withoutIdleServers() *closedNet {
	total := 0.0
	for _, u := range n.users {
		total += u
	}
	var out *closedNet
	for k, st := range n.stations {
		if st.servers <= 1 || float64(st.servers) < math.Ceil(total) || n.ratesAt(k) != nil {
			continue
		}
		if out == nil {
			c := *n
			c.stations = slices.Clone(n.stations)
			out = &c
		}
		out.stations[k].servers = 0
	}
	if out == nil {
		return n
	}
	return out
}

// residence is the residence time at one instance of a station with s
// servers for a class with demand d, given the queue length q and the
// marginal probabilities p[0..s-2] of j jobs that an arriving job sees:
// R = d·(1 + q) for one server; R = (d/s)·(1 + q + Σ_{j<s−1} (s−1−j)·p_j)
// for s servers (exact load-dependent MVA for a station whose rate is
// min(j, s)/S). With rates b (sharedServers) in place of min(j, s),
// R = d·(Σ_{j<s−1} (j+1)/b(j+1)·p_j + (1 + q − Σ_{j<s−1} (j+1)·p_j)/s).
func residence(st *station, d, q float64, p, b []float64) float64 {
	switch {
	case d == 0:
		return 0
	case st.servers == 0:
		return d
	case st.servers == 1:
		return d * (1 + q)
	}
	s := st.servers
	if b != nil {
		var below, held float64
		for j := 0; j <= s-2; j++ {
			n := float64(j+1) * p[j]
			below += n / b[j+1]
			held += n
		}
		return d * (below + math.Max(1+q-held, 0)/float64(s))
	}
	extra := 0.0
	for j := 0; j <= s-2; j++ {
		extra += float64(s-1-j) * p[j]
	}
	return d / float64(s) * (1 + q + extra)
}

// rateAt is the rate of a station's servers with j jobs present, j below
// its servers: b(j) where rates b are given (closedNet.shared), else j.
func rateAt(b []float64, j int) float64 {
	if b != nil {
		return b[j]
	}
	return float64(j)
}

// ratesAt returns the rates of station k's servers (closedNet.shared), or
// nil where they are min(j, s).
func (n *closedNet) ratesAt(k int) []float64 {
	if n.shared == nil || n.shared[k] == nil {
		return nil
	}
	return n.shared[k].rates
}

// exactSingle is exact MVA for one closed class. Single-server and delay
// stations follow the classical recursion, which is numerically stable for
// any population. Multi-server stations need the probabilities of fewer
// than s jobs; Reiser's recursion for them computes the idle probability by
// a subtraction whose rounding errors grow geometrically with the
// population, so the idle probabilities are instead taken from normalizing
// constants: p_k(0|n) = G_{−k}(n)/G(n), computed in ratio form (see
// convolveCenter), where every quantity stays in range without logarithms.
// The cost is O(N·(K + Σs + L·Σs)) for L distinct multi-server stations.
func (n *closedNet) exactSingle() *closedSolution {
	K := len(n.stations)
	N := int(n.users[0])
	d := n.demand[0]
	multi := false
	for k, st := range n.stations {
		if st.servers > 1 && d[k] > 0 {
			multi = true
		}
	}
	var xs, p0 []float64 // per population, when multi
	var p0Of map[int][]float64
	if multi {
		xs, p0Of = n.singleConstants(N)
	}
	q := make([]float64, K)
	r := make([]float64, K)
	p := make([][]float64, K)
	for k, st := range n.stations {
		if st.servers > 1 {
			p[k] = make([]float64, st.servers)
			p[k][0] = 1
		}
	}
	var x float64
	for pop := 1; pop <= N; pop++ {
		total := n.think[0]
		for k := range n.stations {
			r[k] = residence(&n.stations[k], d[k], q[k], p[k], n.ratesAt(k))
			total += float64(n.stations[k].copies) * r[k]
		}
		x = float64(pop) / total
		if multi {
			// The recursion's throughput equals G(n−1)/G(n); the
			// constants' value is used so that both parts agree.
			x = xs[pop]
		}
		for k, st := range n.stations {
			q[k] = x * r[k]
			if st.servers > 1 && d[k] > 0 {
				s, b := st.servers, n.ratesAt(k)
				for j := s - 1; j >= 1; j-- {
					p[k][j] = x * d[k] / rateAt(b, j) * p[k][j-1]
				}
				p0 = p0Of[k]
				p[k][0] = p0[pop]
			}
		}
	}
	out := &closedSolution{X: []float64{x}, R: [][]float64{r}, method: methodExact, iterations: N, converged: true}
	out.keepMarginals(n, func(k int) []float64 { return p[k] })
	return out
}

// keepMarginals sets P at the stations with rates from marginals(k), the
// probabilities of 0..s−1 jobs there.
func (cs *closedSolution) keepMarginals(n *closedNet, marginals func(k int) []float64) {
	for k := range n.stations {
		if n.ratesAt(k) == nil {
			continue
		}
		if cs.P == nil {
			cs.P = make([][]float64, len(n.stations))
		}
		cs.P[k] = slices.Clone(marginals(k))
	}
}

// center is one instance of a station with positive demand d, for the
// normalizing constants: s servers (1 for a single server), at the rates
// b(0..s) where not nil (closedNet.shared) and min(j, s) otherwise.
type center struct {
	k     int
	s     int
	d     float64
	rates []float64
}

// singleConstants computes, for one closed class, the throughput X(n) for
// n = 0..N and, for every multi-server station k, the idle probability
// p_k(0|n) = G_{−k}(n)/G(n) of one of its instances: the ratio u of the
// last convolution when an instance of k is convolved last.
func (n *closedNet) singleConstants(N int) ([]float64, map[int][]float64) {
	d := n.demand[0]
	// Delay stations join the think time; every instance of a queueing
	// station is a center of its own.
	delay := n.think[0]
	var single, multi []center
	for k, st := range n.stations {
		if d[k] <= 0 {
			continue
		}
		if st.servers == 0 {
			delay += float64(st.copies) * d[k]
			continue
		}
		for range st.copies {
			c := center{k, st.servers, d[k], n.ratesAt(k)}
			if st.servers == 1 {
				single = append(single, c)
			} else {
				multi = append(multi, c)
			}
		}
	}
	var kinds []int // distinct multi-server stations, in order
	for i, c := range multi {
		if i == 0 || multi[i-1].k != c.k {
			kinds = append(kinds, c.k)
		}
	}
	prefix := newConstants(N, delay, single)
	p0 := map[int][]float64{}
	var x []float64
	for i, k := range kinds {
		// Every multi-server instance but one of k, then that one.
		order := make([]center, 0, len(multi))
		var last center
		skipped := false
		for _, c := range multi {
			if c.k == k && !skipped {
				last, skipped = c, true
				continue
			}
			order = append(order, c)
		}
		cs := prefix.clone()
		for _, c := range order {
			cs.add(c)
		}
		cs.add(last)
		p0[k] = cs.probEmpty()
		if i == len(kinds)-1 {
			x = cs.x
		}
	}
	return x, p0
}

// constants are the normalizing constants G(0..N) of a single-class closed
// network in ratio form: x[n] = G(n−1)/G(n), the network's throughput at
// population n, and u[n] = G_{−c}(n)/G(n) ∈ [0, 1] for the center c added
// last (the probability that it is empty). An empty network (no think
// time, no center yet) has x = nil.
type constants struct {
	x []float64
	// u[n] is held as um[n]·2^ue[n]: the probability that the last center
	// is empty falls geometrically with n in saturation and would
	// underflow, while the terms it multiplies grow as fast.
	um []float64
	ue []int
	// scratch for the next convolution
	next []float64
}

// newConstants starts from a delay of mean z (the think time with every
// delay station) and adds the single-server centers.
func newConstants(N int, z float64, single []center) *constants {
	cs := &constants{um: make([]float64, N+1), ue: make([]int, N+1)}
	if z > 0 {
		cs.x = make([]float64, N+1)
		for i := 1; i <= N; i++ {
			cs.x[i] = float64(i) / z
		}
	}
	for _, c := range single {
		cs.add(c)
	}
	return cs
}

func (cs *constants) clone() *constants {
	out := &constants{um: append([]float64(nil), cs.um...), ue: append([]int(nil), cs.ue...)}
	if cs.x != nil {
		out.x = append([]float64(nil), cs.x...)
	}
	return out
}

// add convolves a center into the network.
func (cs *constants) add(c center) {
	N := len(cs.um) - 1
	if cs.x == nil {
		// The first center alone: G(n) = F(n), X(n) = min(n, s)/D; the
		// network without it is empty.
		cs.x = make([]float64, N+1)
		for i := 1; i <= N; i++ {
			if c.rates != nil {
				cs.x[i] = c.rates[min(i, c.s)] / c.d
			} else {
				cs.x[i] = float64(min(i, c.s)) / c.d
			}
		}
		clear(cs.um)
		clear(cs.ue)
		cs.um[0] = 1
		return
	}
	if len(cs.next) != N+1 {
		cs.next = make([]float64, N+1)
	}
	convolveCenter(cs.x, c.s, c.d, c.rates, cs.next, cs.um, cs.ue)
	cs.x, cs.next = cs.next, cs.x
}

// probEmpty returns u[n], the probability that the last center added is
// empty, for n = 0..N.
func (cs *constants) probEmpty() []float64 {
	out := make([]float64, len(cs.um))
	for i, m := range cs.um {
		out[i] = math.Ldexp(m, cs.ue[i])
	}
	return out
}

// convolveCenter adds a center with s servers and demand D (at rates b
// where not nil: F(j) = D^j/Π_{i≤j} b(min(i, s))) to a network
// whose throughputs are x (x[n] = G(n−1)/G(n)), writing the new network's
// throughputs to xOut and u[n] = G(n)/G'(n) = um[n]·2^ue[n]. With the
// center's factor F(j) = D^j/Π_{i≤j} min(i, s), G'(n) = Σ_j F(j)·G(n−j),
// and dividing by G'(n−1) every term becomes a product
//
//	F(j)·G(n−j)/G'(n−1) = u(n−j) · F(j) · Π_{m=n−j+1}^{n−1} x'(m),
//
// the j = 0 term being u(n−1)/x(n). The terms j ≥ s form a geometric tail
// T(n) = F(s)·G(n−s) + (D/s)·T(n−1), carried as τ(n) = T(n)/G'(n). Every
// term is positive, so nothing cancels. The terms stay in range; their
// factors need not for hundreds of servers (the product grows like s^j/j!
// while u falls as fast), so both carry binary exponents. Cost O(N·s).
func convolveCenter(x []float64, s int, D float64, b, xOut, um []float64, ue []int) {
	N := len(x) - 1
	um[0], ue[0] = 1, 0
	// a(i) = u(i−1)/x(i) = G(i)/G'(i−1), as a mantissa with exponent
	// ue[i−1].
	norm := func(i int) {
		if m := um[i]; m != 0 && m < 0x1p-500 {
			um[i] = m * 0x1p500
			ue[i] -= 500
		}
	}
	if s <= 1 {
		// G'(n) = G(n) + D·G'(n−1).
		for i := 1; i <= N; i++ {
			am := um[i-1] / x[i]
			a := math.Ldexp(am, ue[i-1])
			inv := 1 / (a + D)
			xOut[i] = inv
			um[i], ue[i] = am*inv, ue[i-1]
			norm(i)
		}
		return
	}
	dj := make([]float64, s+1) // D/j, or D/b(j)
	for j := 1; j <= s; j++ {
		if b != nil {
			dj[j] = D / b[j]
		} else {
			dj[j] = D / float64(j)
		}
	}
	ds := dj[s]
	var tau float64
	for i := 1; i <= N; i++ {
		am := um[i-1] / x[i]
		a := math.Ldexp(am, ue[i-1])
		sum := a + math.Ldexp(dj[1]*um[i-1], ue[i-1])
		// c·2^e is F(j)·G'(i−j)/G'(i−1).
		c, e := dj[1], 0
		top := min(i, s-1)
		for j := 2; j <= top; j++ {
			c *= dj[j] * xOut[i-j+1]
			if c > 0x1p500 {
				c *= 0x1p-500
				e += 500
			}
			if k := e + ue[i-j]; k == 0 {
				sum += c * um[i-j]
			} else {
				sum += math.Ldexp(c*um[i-j], k)
			}
		}
		var tail float64
		if i >= s {
			// c·2^e holds F(s−1)·G'(i−s+1)/G'(i−1).
			tail = math.Ldexp(c*ds*xOut[i-s+1]*um[i-s], e+ue[i-s]) + ds*tau
		}
		inv := 1 / (sum + tail)
		xOut[i] = inv
		um[i], ue[i] = am*inv, ue[i-1]
		norm(i)
		tau = tail * inv
	}
}

// exactMulti is exact multi-class MVA over every population vector
// 0 ≤ n ≤ N, with the same load-dependent treatment of multi-server
// stations: p_k(j|n) = (1/j)·Σ_c X_c(n)·D_ck·p_k(j−1|n−e_c).
func (n *closedNet) exactMulti() *closedSolution {
	K, C := len(n.stations), len(n.users)
	N := make([]int, C)
	stride := make([]int, C)
	states := 1
	for c := range N {
		N[c] = int(n.users[c])
		stride[c] = states
		states *= N[c] + 1
	}
	// Per state: total queue length per station, and the marginals of
	// multi-server stations.
	offP := make([]int, K)
	width := K
	for k, st := range n.stations {
		if st.servers > 1 {
			offP[k] = width
			width += st.servers
		}
	}
	store := make([]float64, states*width)
	// State 0: empty network.
	for k, st := range n.stations {
		if st.servers > 1 {
			store[offP[k]] = 1
		}
	}
	pop := make([]int, C)
	x := make([]float64, C)
	r := matrix(C, K)
	for idx := 1; idx < states; idx++ {
		// Decode the population vector.
		rem := idx
		for c := C - 1; c >= 0; c-- {
			pop[c] = rem / stride[c]
			rem %= stride[c]
		}
		cur := store[idx*width : (idx+1)*width]
		for c := 0; c < C; c++ {
			x[c] = 0
			if pop[c] == 0 {
				for k := range r[c] {
					r[c][k] = 0
				}
				continue
			}
			prev := store[(idx-stride[c])*width : (idx-stride[c]+1)*width]
			total := n.think[c]
			for k := range n.stations {
				st := &n.stations[k]
				var p []float64
				if st.servers > 1 {
					p = prev[offP[k] : offP[k]+st.servers]
				}
				r[c][k] = residence(st, n.demand[c][k], prev[k], p, n.ratesAt(k))
				total += float64(st.copies) * r[c][k]
			}
			x[c] = float64(pop[c]) / total
		}
		for k, st := range n.stations {
			for c := 0; c < C; c++ {
				cur[k] += x[c] * r[c][k]
			}
			if st.servers <= 1 {
				continue
			}
			s, b := st.servers, n.ratesAt(k)
			p := cur[offP[k] : offP[k]+s]
			busy := 0.0
			for c := 0; c < C; c++ {
				if pop[c] == 0 {
					continue
				}
				a := x[c] * n.demand[c][k]
				busy += a
				prev := store[(idx-stride[c])*width+offP[k]:]
				for j := 1; j < s; j++ {
					p[j] += a / rateAt(b, j) * prev[j-1]
				}
			}
			// Σ_j b(j)·p_j = busy, b(j) = s from j = s on.
			sum := busy
			for j := 1; j < s; j++ {
				sum += (float64(s) - rateAt(b, j)) * p[j]
			}
			p[0] = math.Max(1-sum/float64(s), 0)
		}
	}
	out := &closedSolution{X: append([]float64(nil), x...), R: matrix(C, K), method: methodExactMulti, iterations: states, converged: true}
	for c := range r {
		copy(out.R[c], r[c])
	}
	last := store[(states-1)*width:]
	out.keepMarginals(n, func(k int) []float64 { return last[offP[k] : offP[k]+n.stations[k].servers] })
	return out
}

// schweitzer is approximate MVA by the Schweitzer–Bard fixed point: an
// arriving job of class c sees the queue lengths at the full population,
// its own class's reduced by the factor (N_c−1)/N_c. Multi-server stations
// use the residence formula of exact load-dependent MVA with marginal
// probabilities taken as those of an M/M/s station carrying the busy
// servers seen by the arriving job (the same Schweitzer reduction applied
// to its own class's share), which is exact at N = 1 and at saturation.
// Populations may be fractional.
func (n *closedNet) schweitzer(tol float64, maxIter int) *closedSolution {
	K, C := len(n.stations), len(n.users)
	q := matrix(C, K)
	r := matrix(C, K)
	x := make([]float64, C)
	qTot := make([]float64, K)
	maxServers := 1
	for _, st := range n.stations {
		maxServers = max(maxServers, st.servers)
	}
	p := make([]float64, maxServers)
	busy := make([]float64, K)
	// Start from the throughput bound, spread over the stations.
	for c := 0; c < C; c++ {
		var dTot float64
		for k := range n.stations {
			dTot += float64(n.stations[k].copies) * n.demand[c][k]
		}
		if dTot+n.think[c] > 0 {
			x[c] = n.users[c] / (dTot + n.think[c])
		}
		for k := range n.stations {
			q[c][k] = x[c] * n.demand[c][k]
		}
	}
	out := &closedSolution{method: methodSchweitzer}
	for it := 1; it <= maxIter; it++ {
		out.iterations = it
		for k := range qTot {
			qTot[k], busy[k] = 0, 0
			for c := 0; c < C; c++ {
				qTot[k] += q[c][k]
				busy[k] += x[c] * n.demand[c][k]
			}
		}
		change := 0.0
		for c := 0; c < C; c++ {
			if n.users[c] <= 0 {
				continue
			}
			keep := math.Max(n.users[c]-1, 0) / n.users[c]
			total := n.think[c]
			for k := range n.stations {
				st := &n.stations[k]
				d := n.demand[c][k]
				seen := qTot[k] - q[c][k]*(1-keep)
				var pk []float64
				if st.servers > 1 && d > 0 {
					a := busy[k] - x[c]*d*(1-keep)
					pk = p[:st.servers]
					marginalsAt(pk, st.servers, math.Max(a, 0), n.ratesAt(k))
				}
				r[c][k] = residence(st, d, seen, pk, n.ratesAt(k))
				total += float64(st.copies) * r[c][k]
			}
			x[c] = n.users[c] / total
		}
		for c := 0; c < C; c++ {
			for k := range n.stations {
				nq := x[c] * r[c][k]
				if dq := math.Abs(nq - q[c][k]); n.users[c] > 0 && dq/n.users[c] > change {
					change = dq / n.users[c]
				}
				q[c][k] = nq
			}
		}
		if change <= tol {
			out.converged = true
			break
		}
	}
	out.X, out.R = x, r
	out.keepMarginals(n, func(k int) []float64 {
		var a float64
		for c := range C {
			a += x[c] * n.demand[c][k]
		}
		pk := p[:n.stations[k].servers]
		marginalsAt(pk, len(pk), a, n.ratesAt(k))
		return pk
	})
	return out
}
