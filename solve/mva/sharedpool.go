package mva

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"

	"github.com/perfcast/perfcast/queueing"
)

// maxSharedUnits is the most units sharedWait solves a pool of: its inner
// network takes O(units²) per solution.
const maxSharedUnits = 1024

// maxChainUnits is the most units sharedWait solves a pool of by its
// Markov chain (poolChainWait), whose blocks have units + 1 phases and
// take O(units³) to multiply (1 ms at 24 units, 5 ms at 48); above, by
// the flow-equivalent server, whose wait there is within 4 % of the
// chain's response time at 90 % of the pool's capacity (2.5 % at 32
// units, 1.3 % at 48; 6 % at 16).
const maxChainUnits = 24

// sharedWait returns the wait for pool p where its holders do their CPU
// work at one processor-sharing station with fewer servers than p has
// units, and true; false where it does not apply (poolWaits then solves p
// as c servers).
//
// Solved as c servers, a pool's units are taken as independent: each
// holder served at its own pace. But holders that share a CPU of fewer
// cores slow each other down, and most when every unit is held, which is
// when requests wait: two threads on one core, each holding its unit for
// 5 ms of CPU and a 5 ms call, serve at most 160 requests/s, not the 200
// two independent servers would. As c servers, 140 requests/s waited
// 103 ms in all where the exact Markov chain gives 44.4; with no call at
// all, 13.4 ms where the chain (an M/M/1 queue) gives 16.7.
//
// Here the requests at p are that Markov chain (poolChainWait): all
// classes as one, with the mean demand per acquisition at the station,
// slowed by 1/(1 − u) by the load made there outside p, as an exponential
// burst, and the rest of p's mean holding time as an exponential delay
// after it. Above maxChainUnits units p is a flow-equivalent server
// (Chandy, Herzog and Woo) as in nestedWaits: mean-value analysis of the
// holders gives the throughput X(n) for n = 1 … c held, and a birth–death
// process with departures at X(min(n, c)) the wait; it is exact without
// a delay and long with one (+21 % on the case above, +11 % at a delay
// four times the burst, where the chain is exact). The chain also gives
// the mean number of holders at the station, and so the time their
// visits there take (setSharedStretch), in place of the CPU's occupancy
// chain's, which lets bursts arrive at random rather than after the
// holders' delays: on the case above that made the CPU time per visit
// 8.50 ms where the chain gives 7.26, and mva's response time 2.9 % long.
// Now mva's response times equal the chain's (TestSharedPoolAgainstChain).
//
// Closed classes alone at such a pool, one class, see it as the same
// flow-equivalent server in their layer (byThroughput), and its marginal
// gives the holders' time at the station (closedBusy); see
// TestSharedPoolClosed and TestSharedPoolClosedLarge.
//
// Arrivals other than Poisson's (after a processor-sharing CPU, or
// bursty workloads) scale the wait by (c_a² + 1)/2, Kingman's factor for
// exponential service.
//
// It applies to a pool of one copy of at least two units that open
// classes alone take (sharedHolders, for closed classes too), one unit
// at a time, and that holds no other limited pool, where the demand made inside it is mostly at one
// processor-sharing station of one copy with fewer servers than the
// pool's units. A pool of CPU bursts alone is the occupancy chain's
// (runsFactor).
func (st *state) sharedWait(p int, users []int, classes []class) (float64, bool) {
	for _, c := range users {
		if !classes[c].open {
			return 0, false
		}
	}
	h, ok := st.sharedHolders(p, users)
	if !ok {
		return 0, false
	}
	x, at := innerThroughputs(h.units, h.servers, h.demand, h.z)
	if !(h.rate < x[h.units]) {
		return math.Inf(1), true
	}
	key := chainKey{h.rate, h.demand, h.z, h.units, h.servers}
	res, seen := st.chains[key]
	if !seen {
		res.wait, res.busy, res.ok = poolWait(h.rate, h.demand, h.z, h.units, h.servers, x, at)
		if st.chains == nil {
			st.chains = make(map[chainKey]chainResult)
		}
		st.chains[key] = res
	}
	if !res.ok {
		return math.Inf(1), true
	}
	st.setSharedStretch(p, h.station, res.busy/h.load)
	// Arrivals other than Poisson's scale the wait as Kingman's law
	// does, (c_a² + 1)/2.
	return res.wait * (h.ca2 + 1) / 2, true
}

// holders describes the holders of a pool that do their CPU work at one
// processor-sharing station of fewer servers than the pool has units
// (see sharedHolders).
type holders struct {
	// rate is the acquisitions per second, ca2 the squared coefficient
	// of variation of the gaps between them.
	rate, ca2 float64
	// demand is the mean demand per acquisition at the station, slowed
	// by the load made there outside the pool; z the rest of the mean
	// holding time.
	demand, z      float64
	units, servers int
	// station is the processor-sharing station, load the demand made
	// there per second inside the pool (before any slowing).
	station int
	load    float64
}

// sharedHolders returns the holders of pool p, which the classes users
// take, where their CPU work shares fewer cores than p has units, and
// true; false where p is not such a pool (see sharedWait for which are).
func (st *state) sharedHolders(p int, users []int) (holders, bool) {
	b := st.b
	pl := b.pools[p]
	if pl.capacity < 2 || pl.capacity > maxSharedUnits || pl.copies != 1 || pl.leastBusy || b.burstAt[p] >= 0 {
		return holders{}, false
	}
	var rate, holdSum, ca2 float64
	inside := make([]float64, len(b.stations))
	for _, c := range users {
		ci := b.classes[c]
		if ci.units[p] > ci.acq[p]*(1+1e-9) {
			return holders{}, false
		}
		for q := range b.pools {
			if q != p && b.pools[q].limited() && ci.under[q][p] > 0 {
				return holders{}, false
			}
		}
		x := st.X[c]
		rate += x * ci.acq[p]
		ca2 += x * ci.acq[p] * st.acqSCV[c][p]
		holdSum += x * ci.acq[p] * st.hold[c][p]
		for k := range b.stations {
			inside[k] += x * ci.inside[k][p]
		}
	}
	k, most := -1, 0.0
	var all float64
	for i, d := range inside {
		all += d
		if d > most {
			k, most = i, d
		}
	}
	if k < 0 || !(rate > 0) || most < 0.5*all {
		return holders{}, false
	}
	s := b.stations[k]
	if s.fcfs || s.servers < 1 || s.servers >= pl.capacity || s.copies != 1 || s.limit > 0 || st.inStretch[k] == nil {
		return holders{}, false
	}
	// Per acquisition: the demand at k, its time there, and the rest.
	demand := most / rate
	z := math.Max(holdSum/rate-demand*st.inStretch[k][p], 0)
	u, _, _, ok := st.groupLoads(k, st.X)
	if !ok {
		return holders{}, false
	}
	var out float64
	for g, x := range u {
		if g != p {
			out += x
		}
	}
	if out >= 1 {
		return holders{}, false
	}
	// The load made there outside p slows the holders as a queue of
	// its own would stretch its visits: 1/(1 − u) at one server, less
	// at several.
	demand *= 1 + queueing.MMcWait(s.servers, out*float64(s.servers))
	return holders{rate: rate, ca2: ca2 / rate, demand: demand, z: z, units: pl.capacity, servers: s.servers, station: k, load: most}, true
}

// closedBusy returns the mean number of a pool's holders at their
// station when n users, each thinking z between requests, take it as a
// flow-equivalent server: with j requests there, min(j, c) hold a unit
// and complete x[min(j, c)]/a requests per second (a acquisitions per
// request), and at[min(j, c)] of them are at the station (see
// innerThroughputs). The two-station network's marginal is P(j) ∝
// z^(n−j)/(n−j)! · Π_{i≤j} a/x[min(i, c)], summed in logarithms; false
// where it cannot be.
func closedBusy(n int, z float64, x, at []float64, a float64) (float64, bool) {
	c := len(x) - 1
	if n < 1 || c < 1 || !(a > 0) || z < 0 {
		return 0, false
	}
	if z == 0 {
		return at[min(n, c)], true
	}
	// logs[j] = log of P(j)'s unnormalized term.
	logs := make([]float64, n+1)
	lz := math.Log(z)
	top := math.Inf(-1)
	var rates float64 // Σ_{i≤j} log(a/x[min(i, c)])
	for j := 0; j <= n; j++ {
		if j > 0 {
			xi := x[min(j, c)]
			if !(xi > 0) {
				return 0, false
			}
			rates += math.Log(a / xi)
		}
		lg, _ := math.Lgamma(float64(n-j) + 1)
		logs[j] = float64(n-j)*lz - lg + rates
		top = math.Max(top, logs[j])
	}
	var sum, busy float64
	for j, l := range logs {
		w := math.Exp(l - top)
		sum += w
		busy += w * at[min(j, c)]
	}
	if !(sum > 0) {
		return 0, false
	}
	return busy / sum, true
}

// setSharedStretch records that the visits to station k made while
// holding pool p take stretch times their demand, as p's holders'
// network says (see sharedWait), and sets it in inStretch, keeping the
// second moment's ratio to the mean's square (setVisitTimes sets it again
// after every hardware solution).
func (st *state) setSharedStretch(p, k int, stretch float64) {
	if !(stretch > 0) || math.IsInf(stretch, 0) {
		return
	}
	st.sharedAt[p], st.sharedStretch[p] = k, stretch
	st.applySharedStretch(p)
}

// applySharedStretch sets pool p's stretch at its station (see
// setSharedStretch) in inStretch and inSquare, on copies: those of
// stations that only open classes visit are kept for the whole solution.
func (st *state) applySharedStretch(p int) {
	k := st.sharedAt[p]
	if k < 0 || st.inStretch[k] == nil {
		return
	}
	old := st.inStretch[k][p]
	in := slices.Clone(st.inStretch[k])
	in[p] = st.sharedStretch[p]
	st.inStretch[k] = in
	if sq := st.inSquare[k]; sq != nil && old > 0 {
		sq = slices.Clone(sq)
		sq[p] *= (in[p] / old) * (in[p] / old)
		st.inSquare[k] = sq
	}
}

// chainKey is what poolWait's answer depends on, and chainResult that
// answer.
type chainKey struct {
	rate, demand, z float64
	units, servers  int
}

type chainResult struct {
	wait, busy float64
	ok         bool
}

// poolWait is the wait for a unit of a pool of c units whose holders run
// a burst of the demand at m servers and then a delay z (see
// poolChainWait), at the given rate, and the mean number of holders at
// the servers: by the chain up to maxChainUnits and with a delay, else by
// the birth–death process of the inner network's throughputs x and mean
// numbers at the servers at.
func poolWait(rate, demand, z float64, c, m int, x, at []float64) (wait, busy float64, ok bool) {
	if c <= maxChainUnits && z > 1e-9*demand {
		return poolChainWait(rate, demand, z, c, m)
	}
	_, wait, busy, ok = birthDeath(rate, x, at)
	return wait, busy, ok
}

// innerThroughputs returns X(n), n = 0 … units, of a closed network of
// one processor-sharing station of the given servers (rate min(j,
// servers) times 1/demand with j requests there) and a delay z, and
// at[n], the mean number of requests at the station. The network is a
// product form of two stations, so its marginal is explicit: with n in
// it, P(j at the station) ∝ z^(n−j)/(n−j)! · Π_{i≤j} demand/min(i,
// servers), and X(n) = G(n−1)/G(n) for G(n) the sum of those terms. Both
// are summed in logarithms. (Mean-value analysis with the station's
// marginal probabilities, the recursion used until 2026-12-02, takes P(0)
// as one less the others, which loses every digit once the servers are
// busy: at 100 units on 25 servers X(100) moved by 1 % when z moved by
// 2 %, and not monotonically.)
func innerThroughputs(units, servers int, demand, z float64) (x, at []float64) {
	x = make([]float64, units+1)
	at = make([]float64, units+1)
	if units < 1 || !(demand > 0) || servers < 1 {
		return x, at
	}
	// prod[j] = log Π_{i≤j} demand/min(i, servers); fact[k] = log k!.
	prod, fact := make([]float64, units+1), make([]float64, units+1)
	for j := 1; j <= units; j++ {
		prod[j] = prod[j-1] + math.Log(demand/float64(min(j, servers)))
		fact[j] = fact[j-1] + math.Log(float64(j))
	}
	if !(z > 0) {
		// No delay: all n at the station.
		for n := 1; n <= units; n++ {
			x[n] = float64(min(n, servers)) / demand
			at[n] = float64(n)
		}
		return x, at
	}
	lz := math.Log(z)
	logs := make([]float64, units+1)
	logG := 0.0 // G(0) = 1
	for n := 1; n <= units; n++ {
		top := math.Inf(-1)
		for j := 0; j <= n; j++ {
			logs[j] = float64(n-j)*lz - fact[n-j] + prod[j]
			top = math.Max(top, logs[j])
		}
		var sum, mean float64
		for j := 0; j <= n; j++ {
			w := math.Exp(logs[j] - top)
			sum += w
			mean += float64(j) * w
		}
		next := top + math.Log(sum)
		x[n] = math.Exp(logG - next)
		at[n] = mean / sum
		logG = next
	}
	return x, at
}

// birthDeath solves the requests at a flow-equivalent server of c = len(x)
// − 1 units: arrivals at rate, departures at x[min(n, c)] with n present.
// It returns the mean time a unit is held per request, the mean wait for
// one and, where f is not nil, the mean of f[min(n, c)]; false when rate
// is not below x[c].
func birthDeath(rate float64, x, f []float64) (held, wait, mean float64, ok bool) {
	c := len(x) - 1
	if c < 1 || !(rate < x[c]) {
		return 0, 0, 0, false
	}
	at := func(n int) float64 {
		if f == nil {
			return 0
		}
		return f[n]
	}
	// π(n) = π(n−1)·λ/X(n) up to c (π(0) = 1, unnormalized), then
	// geometric with ratio r = λ/X(c), in closed form.
	pi, sum, busy, fsum := 1.0, 1.0, 0.0, at(0)
	for n := 1; n <= c; n++ {
		pi *= rate / x[n]
		sum += pi
		busy += float64(n) * pi
		fsum += at(n) * pi
	}
	r := rate / x[c]
	tail := pi * r / (1 - r) // Σ_{j≥1} π(c+j)
	sum += tail
	busy += float64(c) * tail
	fsum += at(c) * tail
	// A request that finds c + j (j ≥ 0) waits for j + 1 departures.
	waiting := pi / ((1 - r) * (1 - r)) // Σ_{j≥0} π(c+j)·(j+1)
	return busy / sum / rate, waiting / sum / x[c], fsum / sum, true
}

// poolChainWait returns the mean wait for a unit of a pool of c units at
// Poisson arrivals of the given rate, whose holders each run an
// exponential burst of mean demand at a processor-sharing station of m
// servers (rate min(k, m)/demand with k bursts there) and then an
// exponential delay of mean z before they let the unit go, and the mean
// number of holders at the station; false when the chain cannot be
// solved (the arrivals at or beyond the pool's capacity).
//
// The chain's levels are the requests present, its phases the holders at
// the station. From level c on the levels repeat (a quasi-birth–death
// process): the stationary vector is π_c·R^j there, R the minimal solution
// of A0 + R·A1 + R²·A2 = 0, from G (A2 + A1·G + A0·G² = 0) by Latouche and
// Ramaswami's logarithmic reduction. The levels below c are reduced onto
// level 0 one by one. The wait is the mean queue π_c·R·(I − R)⁻²·1 over
// the rate (Little); the holders at the station are Σ_l π_l·k below c
// and π_c·(I − R)⁻¹·k from c on.
func poolChainWait(rate, demand, z float64, c, m int) (wait, busy float64, ok bool) {
	mu, nu := 1/demand, 1/z
	n := c + 1
	cpu := func(k int) float64 { return mu * float64(min(k, m)) }
	// The repeating blocks, levels c and up (phases k = 0 … c).
	a0 := mat.NewDense(n, n, nil)
	a1 := mat.NewDense(n, n, nil)
	a2 := mat.NewDense(n, n, nil)
	for k := 0; k <= c; k++ {
		a0.Set(k, k, rate)
		if k > 0 {
			a1.Set(k, k-1, cpu(k))
		}
		if k < c {
			a2.Set(k, k+1, float64(c-k)*nu) // the first waiting starts at the station
		}
		a1.Set(k, k, -(rate + cpu(k) + float64(c-k)*nu))
	}
	g, ok := logReduction(a0, a1, a2)
	if !ok {
		return 0, 0, false
	}
	// R = A0·(−A1 − A0·G)⁻¹.
	var t, inv, r mat.Dense
	t.Mul(a0, g)
	t.Add(&t, a1)
	t.Scale(-1, &t)
	if err := inv.Inverse(&t); err != nil {
		return 0, 0, false
	}
	r.Mul(a0, &inv)
	// Levels c … 1 reduced downwards: π_l = π_{l−1}·Rl with
	// Rl = −Up_{l−1}·(L_l + R_{l+1}·Down_{l+1})⁻¹, and at level c the
	// repeating part's R·A2 in place of R_{c+1}·Down_{c+1}.
	var below mat.Dense // R_{l+1}·Down_{l+1}, or R·A2 at level c
	below.Mul(&r, a2)
	rl := make([]*mat.Dense, c+1)
	for l := c; l >= 1; l-- {
		ph, lower := l+1, l // phases at l and at l − 1
		local := mat.NewDense(ph, ph, nil)
		if l == c {
			local.Copy(a1)
		} else {
			for k := 0; k < ph; k++ {
				if k > 0 {
					local.Set(k, k-1, cpu(k))
				}
				local.Set(k, k, -(rate + cpu(k) + float64(l-k)*nu))
			}
		}
		var s mat.Dense
		s.Add(local, &below)
		var sinv mat.Dense
		if err := sinv.Inverse(&s); err != nil {
			return 0, 0, false
		}
		up := mat.NewDense(lower, ph, nil) // level l − 1 to l: the arrival starts at the station
		for k := 0; k < lower; k++ {
			up.Set(k, k+1, rate)
		}
		rl[l] = new(mat.Dense)
		rl[l].Mul(up, &sinv)
		rl[l].Scale(-1, rl[l])
		if l > 1 {
			down := mat.NewDense(ph, lower, nil) // level l to l − 1: a holder leaves
			for k := 0; k < lower; k++ {
				down.Set(k, k, float64(l-k)*nu)
			}
			below.Reset()
			below.Mul(rl[l], down)
		}
	}
	// atStation is Σ k·v(k), the holders at the station, of a level.
	atStation := func(v mat.Matrix) float64 {
		_, cols := v.Dims()
		var sum float64
		for k := 1; k < cols; k++ {
			sum += float64(k) * v.At(0, k)
		}
		return sum
	}
	pi := mat.NewDense(1, 1, []float64{1})
	total, at := 1.0, 0.0
	for l := 1; l <= c; l++ {
		var next mat.Dense
		next.Mul(pi, rl[l])
		pi = &next
		if l < c {
			total += mat.Sum(pi)
			at += atStation(pi)
		}
	}
	// Σ_j π_c·R^j = π_c·(I − R)⁻¹; the queue Σ_j j·π_c·R^j = π_c·R·(I − R)⁻².
	var ir, irInv mat.Dense
	ir.Sub(eye(n), &r)
	if err := irInv.Inverse(&ir); err != nil {
		return 0, 0, false
	}
	var tail, queue mat.Dense
	tail.Mul(pi, &irInv)
	total += mat.Sum(&tail)
	at += atStation(&tail)
	queue.Mul(&tail, &r)
	queue.Mul(&queue, &irInv)
	w := mat.Sum(&queue) / total / rate
	busy = at / total
	ok = w >= 0 && busy >= 0 && !math.IsInf(w, 0) && !math.IsNaN(w) && !math.IsNaN(busy)
	return w, busy, ok
}

// logReduction returns G, the minimal non-negative solution of
// A2 + A1·G + A0·G² = 0 of a continuous-time quasi-birth–death process
// with blocks A0 (a level up), A1 (within) and A2 (a level down), by
// Latouche and Ramaswami's logarithmic reduction; false when it does not
// converge to a stochastic matrix (the process not positive recurrent).
func logReduction(a0, a1, a2 *mat.Dense) (*mat.Dense, bool) {
	n, _ := a1.Dims()
	var neg, inv mat.Dense
	neg.Scale(-1, a1)
	if err := inv.Inverse(&neg); err != nil {
		return nil, false
	}
	var b0, b2 mat.Dense
	b0.Mul(&inv, a0)
	b2.Mul(&inv, a2)
	g := mat.DenseCopyOf(&b2)
	t := mat.DenseCopyOf(&b0)
	for range 64 {
		var u, x, m, nb0, nb2, tb mat.Dense
		u.Mul(&b0, &b2)
		x.Mul(&b2, &b0)
		u.Add(&u, &x)
		u.Sub(eye(n), &u)
		if err := m.Inverse(&u); err != nil {
			return nil, false
		}
		x.Reset()
		x.Mul(&b0, &b0)
		nb0.Mul(&m, &x)
		x.Reset()
		x.Mul(&b2, &b2)
		nb2.Mul(&m, &x)
		tb.Mul(t, &nb2)
		g.Add(g, &tb)
		t.Mul(t, &nb0)
		b0, b2 = nb0, nb2
		worst := 0.0
		for i := 0; i < n; i++ {
			worst = math.Max(worst, math.Abs(1-mat.Sum(g.RowView(i))))
		}
		if worst < 1e-12 {
			return g, true
		}
	}
	return nil, false
}

// eye returns the n×n identity.
func eye(n int) *mat.Dense {
	d := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		d.Set(i, i, 1)
	}
	return d
}
