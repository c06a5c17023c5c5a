package queueing

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/combin"
)

// JSQChainWait is the mean wait, in mean service times, of a Poisson
// stream that joins the shortest of r identical M/M/c queues, each at
// load rho (a share of its servers), exactly: the stationary distribution
// of the Markov chain of the queues' sorted lengths, by Gauss–Seidel
// sweeps over its balance equations, then Little's law. Which of several
// shortest queues a customer joins does not change the sorted chain, the
// queues being alike. The chain is cut where one M/M/rc queue at the same
// load, which the shortest queue can only trail, has a tail below 1e-12.
//
// Its states grow as the cut's length to the power r: about 17 000 for
// two queues of one server at rho 0.9, 180 000 for four at 0.75. It is
// the reference that JSQWait is built from and tested against, not for
// use inside a solver. NaN for rho outside (0, 1), r or c below 1, or a
// chain whose states' keys would not fit 64 bits.
func JSQChainWait(r, c int, rho float64) float64 {
	return ChoicesChainWait(r, c, r, rho)
}

// ChoicesChainWait is JSQChainWait for a stream whose customers each draw
// d of the r queues at random, without repeats, and join the shortest of
// those: d = r joins the shortest of all, d = 1 picks at random, d = 2 is
// the power of two choices. The customer joins the queue at sorted
// position i (from 0, shortest first) with the chance that the least of
// d positions drawn is i, C(r−1−i, d−1)/C(r, d); ties between drawn
// queues of one length leave the sorted chain as it is whichever is
// taken. NaN where JSQChainWait is, and for d outside [1, r].
func ChoicesChainWait(r, c, d int, rho float64) float64 {
	if r < 1 || c < 1 || d < 1 || d > r || !(rho > 0 && rho < 1) {
		return math.NaN()
	}
	n := r*c + int(math.Ceil(math.Log(1e-12)/math.Log(rho)))
	if float64(r)*math.Log2(float64(n+1)) >= 63 {
		return math.NaN()
	}
	lambda := rho * float64(r*c) // service rate 1 per server
	// A sorted vector of lengths is keyed by its digits in base n + 1.
	key := func(q []int) uint64 {
		var k uint64
		for _, v := range q {
			k = k*uint64(n+1) + uint64(v)
		}
		return k
	}
	var states [][]int
	index := map[uint64]int32{}
	var gen func(q []int, lo, left int)
	gen = func(q []int, lo, left int) {
		if len(q) == r {
			index[key(q)] = int32(len(states))
			states = append(states, slices.Clone(q))
			return
		}
		for v := lo; v <= left; v++ {
			gen(append(q, v), v, left-v)
		}
	}
	gen(make([]int, 0, r), 0, n)
	type arc struct {
		from int32
		rate float64
	}
	in := make([][]arc, len(states))
	out := make([]float64, len(states))
	// join[k] is the chance that a customer joins sorted position k.
	join := make([]float64, r)
	for k := range join {
		if r-1-k >= d-1 {
			join[k] = float64(combin.Binomial(r-1-k, d-1)) / float64(combin.Binomial(r, d))
		}
	}
	next := make([]int, r)
	move := func(i int, rate float64) {
		slices.Sort(next)
		j := index[key(next)]
		in[j] = append(in[j], arc{int32(i), rate})
		out[i] += rate
	}
	for i, q := range states {
		total := 0
		for _, v := range q {
			total += v
		}
		if total < n {
			for k, share := range join {
				if share > 0 {
					copy(next, q)
					next[k]++
					move(i, lambda*share)
				}
			}
		}
		for k, v := range q {
			if v > 0 && (k == 0 || q[k-1] != v) { // one move per distinct length
				copy(next, q)
				next[k]--
				same := 0
				for _, w := range q {
					if w == v {
						same++
					}
				}
				move(i, float64(same*min(v, c)))
			}
		}
	}
	// Sweeps start from a geometric guess in the number of customers
	// (the empty state, 1, fixes the scale).
	p := make([]float64, len(states))
	for i, q := range states {
		total := 0
		for _, v := range q {
			total += v
		}
		p[i] = math.Pow(rho, float64(total))
	}
	waiting := func(p []float64) float64 {
		var sum float64
		for i, q := range states {
			for _, v := range q {
				if v > c {
					sum += p[i] * float64(v-c)
				}
			}
		}
		return sum
	}
	lastWaiting := -1.0
	for sweep := 0; sweep < 1_000_000; sweep++ {
		// The sweep's change over the whole mass, and the waiting
		// customers' (which, without load, sit in states that weigh
		// next to nothing).
		change, mass := 0.0, p[0]
		for j := 1; j < len(states); j++ {
			var sum float64
			for _, a := range in[j] {
				sum += p[a.from] * a.rate
			}
			v := sum / out[j]
			change += math.Abs(v - p[j])
			mass += v
			p[j] = v
		}
		w := waiting(p)
		if change < 1e-13*mass && math.Abs(w-lastWaiting) <= 1e-12*w {
			break
		}
		lastWaiting = w
	}
	var mass float64
	for _, v := range p {
		mass += v
	}
	// Little's law on the customers waiting, not on all of them less
	// those in service, which would cancel where waits are tiny.
	return waiting(p) / mass / lambda
}

// JSQWait is the mean wait, in mean service times, of a Poisson stream
// that joins the shortest of r identical M/M/c queues, each at load rho:
// one M/M/rc queue's wait, which the shortest queue trails, times
// 1 + (r − 1)·f(c, ρ). Tabulated from JSQChainWait on two queues, f falls
// from 1 without load (where a customer that waits waits for its own
// queue's c servers, not for all rc) to 0 with it; on three and four
// queues JSQChainWait's f is within a few percent of two's (see the
// tests), so the factor is taken as linear in r. Between the table's
// points f is interpolated linearly in rho and in log c; past 12 servers
// a queue takes 12's, which is larger, and so is the wait (on two queues
// of 16 servers f is 0.057 at 0.75 where 12's is 0.063). +Inf from
// rho 1 on, 0 without load.
func JSQWait(r, c int, rho float64) float64 {
	if rho >= 1 {
		return math.Inf(1)
	}
	if !(rho > 0) || r < 1 || c < 1 {
		return 0
	}
	return JSQFactor(r, c, rho) * MMcWait(r*c, rho*float64(r*c))
}

// JSQFactor is JSQWait's factor over one M/M/rc queue's wait:
// 1 + (r − 1)·f(c, ρ), r without load, 1 at full load; NaN for a NaN
// load.
func JSQFactor(r, c int, rho float64) float64 {
	switch {
	case r <= 1:
		return 1
	case math.IsNaN(rho):
		return math.NaN()
	}
	return 1 + float64(r-1)*jsqExcess(max(c, 1), math.Min(math.Max(rho, 0), 1))
}

// jsqExcess is f(c, ρ) of JSQWait, from jsqTable.
func jsqExcess(c int, rho float64) float64 {
	// Near ρ = 1 f falls as 1 − ρ (on two queues of one server, 0.0497
	// at 0.9 and 0.0249 at 0.95).
	at := func(row []float64) float64 { return tableAt(row, jsqStep, rho) }
	lc := math.Log(float64(c))
	for i := 1; i < len(jsqServers); i++ {
		if c <= jsqServers[i] {
			lo, hi := math.Log(float64(jsqServers[i-1])), math.Log(float64(jsqServers[i]))
			w := (lc - lo) / (hi - lo)
			return (1-w)*at(jsqTable[i-1]) + w*at(jsqTable[i])
		}
	}
	return at(jsqTable[len(jsqTable)-1])
}

// jsqStep is the table's step in rho, from 0, and jsqPoints its points,
// to 0.9.
const (
	jsqStep   = 0.05
	jsqPoints = 19
)

// jsqServers are the table's servers per queue.
var jsqServers = []int{1, 2, 3, 4, 6, 8, 12}

// jsqTable[i][j] is f(jsqServers[i], j·jsqStep) of JSQWait on two queues,
// (JSQChainWait(2, c, ρ)/MMcWait(2c, 2cρ) − 1), f(c, 0) = 1, printed by
// PERFCAST_JSQ_TABLE=all go test ./queueing -run TestJSQTable -v and checked
// against the chain by TestJSQTable.
var jsqTable = [][]float64{
	{1, 0.8647, 0.7537, 0.6611, 0.5825, 0.5150, 0.4563, 0.4045, 0.3583, 0.3168, 0.2790, 0.2442, 0.2120, 0.1819, 0.1534, 0.1263, 0.1001, 0.0747, 0.0497}, // c = 1
	{1, 0.8619, 0.7451, 0.6460, 0.5615, 0.4891, 0.4265, 0.3722, 0.3245, 0.2825, 0.2450, 0.2114, 0.1810, 0.1532, 0.1276, 0.1037, 0.0813, 0.0599, 0.0395}, // c = 2
	{1, 0.8614, 0.7430, 0.6415, 0.5545, 0.4794, 0.4146, 0.3584, 0.3094, 0.2666, 0.2288, 0.1953, 0.1655, 0.1386, 0.1143, 0.0920, 0.0714, 0.0522, 0.0341}, // c = 3
	{1, 0.8611, 0.7420, 0.6396, 0.5512, 0.4748, 0.4086, 0.3511, 0.3011, 0.2574, 0.2192, 0.1856, 0.1559, 0.1295, 0.1059, 0.0846, 0.0651, 0.0472, 0.0306}, // c = 4
	{1, 0.8609, 0.7412, 0.6378, 0.5482, 0.4704, 0.4027, 0.3437, 0.2923, 0.2475, 0.2085, 0.1744, 0.1447, 0.1186, 0.0957, 0.0754, 0.0573, 0.0410, 0.0263}, // c = 6
	{1, 0.8608, 0.7409, 0.6370, 0.5469, 0.4684, 0.3999, 0.3401, 0.2879, 0.2424, 0.2027, 0.1682, 0.1382, 0.1122, 0.0896, 0.0698, 0.0525, 0.0371, 0.0234}, // c = 8
	{1, 0.8607, 0.7405, 0.6363, 0.5456, 0.4664, 0.3972, 0.3366, 0.2836, 0.2372, 0.1968, 0.1616, 0.1311, 0.1049, 0.0824, 0.0631, 0.0466, 0.0324, 0.0200}, // c = 12
}

// OfTwoShare is how far the mean wait of a Poisson stream that joins the
// shorter of two of r identical M/M/c queues drawn at random lies from
// joining the shortest of all (JSQChainWait) toward a random pick's
// (MMcWait of one queue): 0 on two queues, where the two are one.
//
// For one server it is tabulated from ChoicesChainWait on three and four
// queues; past the table's last load it falls as 1 − ρ, as it does there.
// On five queues and more it is the larger of four's and the limit of
// many queues, where a queue holds at least i customers with chance
// ρ^(2^i − 1) (Mitzenmacher; Vvedenskaya, Dobrushin and Karpelevich) and
// the queue joined at the shortest of all waits no time.
//
// With c servers it is one server's times C(c, cρ)/ρ, the chance that a
// queue has no server free over one server's: a customer that draws two
// busy queues waits only when their servers are all busy. Against the
// chain on three queues it overstates the share: on two servers by 2 to
// 8 % between 30 and 80 % load (the wait by 0.7 to 2.1 %), on four by 16
// to 52 % between 30 and 60 % (the wait by 5 to 34 %, where it is below
// 3 % of a service time). 0 without load or from full load on.
func OfTwoShare(r, c int, rho float64) float64 {
	if r <= 2 || c < 1 || !(rho > 0 && rho < 1) {
		return 0
	}
	busy := ErlangC(c, rho*float64(c)) / rho
	if r <= 4 {
		return busy * tableAt(ofTwoTable[r-3], ofTwoStep, rho)
	}
	// The limit's wait, in service times: Σ_{i≥2} ρ^(2^i − 2), over a
	// random pick's ρ/(1 − ρ).
	var w float64
	for e := 4.0; ; e *= 2 {
		term := math.Pow(rho, e-2)
		w += term
		if term < 1e-12*w {
			break
		}
	}
	return busy * math.Max(tableAt(ofTwoTable[1], ofTwoStep, rho), w*(1-rho)/rho)
}

// ofTwoStep is ofTwoTable's step in rho, from 0.
const ofTwoStep = 0.1

// ofTwoTable[r−3][j] is OfTwoShare on r queues at load j·ofTwoStep,
// (ChoicesChainWait(r, 1, 2, ρ) − JSQChainWait(r, 1, ρ)) over
// (MMcWait(1, ρ) − JSQChainWait(r, 1, ρ)), printed by
// PERFCAST_OF_TWO_TABLE=all go test ./queueing -run TestOfTwoTable -v and
// checked against the chain by TestOfTwoTable. The chain of four queues
// grows past a solve of minutes beyond 80 % load.
var ofTwoTable = [][]float64{
	{0, 0.0980, 0.1374, 0.1505, 0.1502, 0.1419, 0.1278, 0.1083, 0.0827}, // three queues
	{0, 0.1088, 0.1697, 0.1972, 0.2040, 0.1976, 0.1817, 0.1575, 0.1237}, // four queues
}

// tableAt reads a row of values at loads 0, step, 2·step, … at rho in
// [0, 1]: linearly between its points, and past its last falling as
// 1 − ρ to 0 at full load.
func tableAt(row []float64, step, rho float64) float64 {
	x := rho / step
	i := int(x)
	if i >= len(row)-1 {
		last := float64(len(row)-1) * step
		return row[len(row)-1] * (1 - rho) / (1 - last)
	}
	return row[i] + (x-float64(i))*(row[i+1]-row[i])
}
