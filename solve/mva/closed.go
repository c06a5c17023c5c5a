package mva

import "math"

// closedNet is the closed part of a network: classes with populations and
// think times, and demands per instance of each station.
type closedNet struct {
	stations []station
	users    []float64
	think    []float64
	demand   [][]float64
}

// closedSolution is the solution of a closed network.
type closedSolution struct {
	X          []float64
	R          [][]float64
	method     string
	iterations int
	converged  bool
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

// residence is the residence time at one instance of a station with s
// servers for a class with demand d, given the queue length q and the
// marginal probabilities p[0..s-2] of j jobs that an arriving job sees:
// R = d·(1 + q) for one server; R = (d/s)·(1 + q + Σ_{j<s−1} (s−1−j)·p_j)
// for s servers (exact load-dependent MVA for a station whose rate is
// min(j, s)/S).
func residence(st *station, d, q float64, p []float64) float64 {
	switch {
	case d == 0:
		return 0
	case st.servers == 0:
		return d
	case st.servers == 1:
		return d * (1 + q)
	}
	s := st.servers
	extra := 0.0
	for j := 0; j <= s-2; j++ {
		extra += float64(s-1-j) * p[j]
	}
	return d / float64(s) * (1 + q + extra)
}

// exactSingle is exact MVA for one closed class. Single-server and delay
// stations follow the classical recursion, which is numerically stable for
// any population. Multi-server stations need the probabilities of fewer
// than s jobs; Reiser's recursion for them computes the idle probability by
// a subtraction whose rounding errors grow geometrically with the
// population, so the idle probabilities are instead taken from the
// normalizing constants: p_k(0|n) = G_{−k}(n)/G(n), with G computed in the
// log domain and the complements G_{−k} scaled by G (which keeps every
// value in [0, 1]). The cost is O(N·(K + L·Σs)) for L multi-server
// stations.
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
			r[k] = residence(&n.stations[k], d[k], q[k], p[k])
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
				s := st.servers
				for j := s - 1; j >= 1; j-- {
					p[k][j] = x * d[k] / float64(j) * p[k][j-1]
				}
				p0 = p0Of[k]
				p[k][0] = p0[pop]
			}
		}
	}
	return &closedSolution{X: []float64{x}, R: [][]float64{r}, method: methodExact, iterations: N, converged: true}
}

// singleConstants computes, for one closed class, the throughput X(n) for
// n = 0..N and, for every multi-server station k, the idle probability
// p_k(0|n) = G_{−k}(n)/G(n).
func (n *closedNet) singleConstants(N int) ([]float64, map[int][]float64) {
	d := n.demand[0]
	// Expand copies: each instance is a station of its own.
	type center struct {
		k       int
		servers int
		d       float64
	}
	var single, multi []center
	for k, st := range n.stations {
		if d[k] == 0 {
			continue
		}
		for range st.copies {
			c := center{k, st.servers, d[k]}
			switch {
			case st.servers == 0:
				// Delay stations join the think time.
			case st.servers == 1:
				single = append(single, c)
			default:
				multi = append(multi, c)
			}
		}
	}
	delay := n.think[0]
	for k, st := range n.stations {
		if st.servers == 0 {
			delay += float64(st.copies) * d[k]
		}
	}
	// Pass 1: log G(n) of the whole network.
	lg := make([]float64, N+1)
	for i := range lg {
		if delay > 0 {
			lg[i] = float64(i)*math.Log(delay) - lgamma(i+1)
		} else if i > 0 {
			lg[i] = math.Inf(-1)
		}
	}
	for _, c := range single {
		ld := math.Log(c.d)
		for i := 1; i <= N; i++ {
			lg[i] = logAdd(lg[i], ld+lg[i-1])
		}
	}
	for _, c := range multi {
		lg = logConvolveMulti(lg, c.servers, c.d)
	}
	x := make([]float64, N+1)
	for i := 1; i <= N; i++ {
		x[i] = math.Exp(lg[i-1] - lg[i])
	}
	// Pass 2: scaled partial constants g_S(n) = G_S(n)/G(n) ∈ [0, 1].
	base := make([]float64, N+1)
	for i := range base {
		if delay > 0 {
			base[i] = math.Exp(float64(i)*math.Log(delay) - lgamma(i+1) - lg[i])
		} else if i == 0 {
			base[i] = 1
		}
	}
	for _, c := range single {
		for i := 1; i <= N; i++ {
			base[i] += c.d * x[i] * base[i-1]
		}
	}
	p0 := map[int][]float64{}
	for i, c := range multi {
		if _, done := p0[c.k]; done {
			continue // copies are identical
		}
		g := append([]float64(nil), base...)
		for j, o := range multi {
			if j != i {
				g = scaledConvolveMulti(g, x, o.servers, o.d)
			}
		}
		p0[c.k] = g
	}
	return x, p0
}

func lgamma(n int) float64 {
	v, _ := math.Lgamma(float64(n))
	return v
}

// logAdd returns log(e^a + e^b).
func logAdd(a, b float64) float64 {
	if a < b {
		a, b = b, a
	}
	if math.IsInf(b, -1) {
		return a
	}
	return a + math.Log1p(math.Exp(b-a))
}

// logConvolveMulti convolves log-domain constants with an s-server station
// of demand D, whose factor is F(j) = D^j/Π_{i≤j} min(i, s); the terms j ≥ s
// form a geometric tail T(n) = F(s)·G(n−s) + (D/s)·T(n−1).
func logConvolveMulti(lg []float64, s int, D float64) []float64 {
	N := len(lg) - 1
	lf := make([]float64, s+1)
	for j := 1; j <= s; j++ {
		lf[j] = lf[j-1] + math.Log(D/float64(j))
	}
	out := make([]float64, N+1)
	tail := math.Inf(-1)
	lr := math.Log(D / float64(s))
	terms := make([]float64, 0, s+1)
	for i := 0; i <= N; i++ {
		if i >= s {
			tail = logAdd(lf[s]+lg[i-s], lr+tail)
		}
		terms = terms[:0]
		top := tail
		for j := 0; j < s && j <= i; j++ {
			t := lf[j] + lg[i-j]
			terms = append(terms, t)
			top = math.Max(top, t)
		}
		if math.IsInf(top, -1) {
			out[i] = top
			continue
		}
		sum := math.Exp(tail - top)
		for _, t := range terms {
			sum += math.Exp(t - top)
		}
		out[i] = top + math.Log(sum)
	}
	return out
}

// scaledConvolveMulti is logConvolveMulti on constants scaled by the whole
// network's G(n), given X(n) = G(n−1)/G(n).
func scaledConvolveMulti(g, x []float64, s int, D float64) []float64 {
	N := len(g) - 1
	out := make([]float64, N+1)
	var tail float64
	fs := 1.0
	for j := 1; j <= s; j++ {
		fs *= D / float64(j)
	}
	for i := 0; i <= N; i++ {
		// ratio = G(i−j)/G(i) = Π_{m=i−j+1}^{i} X(m), built up with j.
		ratio, f := 1.0, 1.0
		var sum float64
		for j := 0; j < s && j <= i; j++ {
			if j > 0 {
				ratio *= x[i-j+1]
				f *= D / float64(j)
			}
			sum += f * g[i-j] * ratio
		}
		if i >= s {
			// F(s)·g(i−s)·G(i−s)/G(i) + (D/s)·X(i)·tail(i−1)
			ratio *= x[i-s+1]
			tail = fs*g[i-s]*ratio + D/float64(s)*x[i]*tail
			sum += tail
		}
		out[i] = sum
	}
	return out
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
				r[c][k] = residence(st, n.demand[c][k], prev[k], p)
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
			s := st.servers
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
					p[j] += a / float64(j) * prev[j-1]
				}
			}
			sum := busy
			for j := 1; j < s; j++ {
				sum += float64(s-j) * p[j]
			}
			p[0] = math.Max(1-sum/float64(s), 0)
		}
	}
	out := &closedSolution{X: append([]float64(nil), x...), R: matrix(C, K), method: methodExactMulti, iterations: states, converged: true}
	for c := range r {
		copy(out.R[c], r[c])
	}
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
					marginalsAt(pk, st.servers, math.Max(a, 0))
				}
				r[c][k] = residence(st, d, seen, pk)
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
	return out
}
