package extract

import (
	"maps"
	"math"
	"slices"

	"github.com/perfcast/perfcast/model"
)

// Bounds of reading a least-busy balancer from the load on the replicas
// (loadBalancerFrom): at least leastBusyMinContested contested choices, a
// least loaded replica taken leastBusyMinExcess of the way from a random
// pick's share to every time, and that beyond leastBusyMinZ standard
// errors of a random pick's.
const (
	leastBusyMinContested = 100
	leastBusyMinExcess    = 0.6
	leastBusyMinZ         = 3
)

// Bounds of telling the lighter of two replicas drawn at random from a
// balancer by load and from a random pick (choiceStats.byLoad): a least
// loaded replica taken at least ofTwoMinShare of the way from a random
// pick's share to the lighter of two's, and less than ofTwoMaxExcess of
// the way from the lighter of two's to all; where the lighter of two
// would have sent ofTwoAll of the contested calls to a least loaded
// replica, the two balancers are one.
const (
	ofTwoMinShare  = 0.75
	ofTwoMaxExcess = 0.3
	ofTwoAll       = 0.999
)

// inferBalancers reads, for each host with several replicas, how its
// callers spread the calls over them, from the gaps between the starts
// of its spans (startGaps): a balancer that hands them in turn
// (round-robin) gives each of r replicas every r-th call, gaps of
// squared cv c²/r where the host's merged starts have c²; one that picks
// a replica at random keeps the excess over Poisson's, (c² − 1)/r + 1.
// The two differ by (r − 1)/r whatever c²: where the replicas' gaps lie
// beyond two standard errors on random's side of the midpoint, the host
// gets `balancer: random` (kube-proxy's iptables mode, many callers each
// taking turns of their own); otherwise round-robin stays, the model's
// default. Queueing before the spans smooths their starts, so a random
// balancer in front of busy slots can read as turns.
//
// Before that, the load on the replicas as each call began tells a
// balancer that sends every call to a replica with the fewest executions
// in progress (`least-busy`: nginx's least_conn, HAProxy's leastconn, a
// queue its replicas' workers take messages from), or to the lighter of
// two drawn at random (`least-of-two`: Envoy's least_request, in service
// meshes' sidecars too, and nginx's random two least_conn); see
// loadBalancerFrom.
func (g *generator) inferBalancers() {
	for _, h := range g.m.Hosts {
		if h.Replicas < 2 || h.Balancer != model.RoundRobin {
			continue
		}
		if b := g.loadBalancerFrom(h); b != "" {
			h.Balancer = b
			continue
		}
		whole, n := g.startGaps(h, "", false)
		per, perN := g.startGaps(h, "", true)
		if n == 0 || perN == 0 {
			continue
		}
		r := float64(h.Replicas)
		turns, random := whole/r, (whole-1)/r+1
		mid := (turns + random) / 2
		// The squared cv of near-exponential gaps has a standard error
		// of about its value times √(2/n).
		se := math.Max(per, 0.1) * math.Sqrt(2/perN)
		switch {
		case per > mid+2*se:
			h.Balancer = model.Random
			g.rep.evidencef("host %s: each replica's spans start with gaps of squared cv %.2f, where the %d replicas' together have %.2f: a balancer that picks a replica at random leaves %.2f, one that takes them in turn %.2f: balancer random (%.0f gaps)",
				h.Name, per, h.Replicas, whole, random, turns, perN)
		case per < mid-2*se:
			g.rep.evidencef("host %s: each replica's spans start with gaps of squared cv %.2f, where the %d replicas' together have %.2f: a balancer that takes them in turn leaves %.2f, one that picks at random %.2f: balancer round-robin (%.0f gaps)",
				h.Name, per, h.Replicas, whole, turns, random, perN)
		}
	}
}

// loadBalancerFrom reads whether the calls to host h's components went
// by the replicas' load (choiceSweep), with evidence either way where
// enough calls tell: least-busy, least-of-two, or "" for neither. A
// balancer in turns also often finds the replica next in turn least
// loaded, the more so the more regular the work; the choices that tell
// the two apart are the contested ones, made while the replica the turns
// would give was not among the least loaded. Of those, a balancer by load
// sends all to a least loaded replica, one in turns none, one at random
// its share, and the lighter of two drawn at random the share of the
// draws that hold a least loaded one (see byLoad). The reading assumes
// one balancer (or several sharing their counts) and spans that begin and
// end near when the balancer counts the call in and out: clocks apart, or
// a network hop's delay that varies by a good part of the work's, make
// calls look contested that were not, and the share falls toward a
// random pick's (on four replicas of four cores, a hop whose delay varies
// by 2 % of the work brought a balancer by load from all to 83 to 93 %,
// and the lighter of two sent 56 to 62 % where its share was 58 to 63 %,
// TestChoicesTellLoadFromTurns). Where the replicas are taken again in
// turn more than halfway from a random pick's 1/r to always, it is turns
// whatever the load says.
func (g *generator) loadBalancerFrom(h *model.Host) model.Balancer {
	if g.s.Sampled > 0 || g.s.RateLimited > 0 {
		return "" // calls not traced were in progress too
	}
	var st choiceStats
	for _, comp := range slices.Sorted(maps.Keys(g.s.choices)) {
		if g.hostOf[comp] != h {
			continue
		}
		w := g.s.choices[comp]
		w.finish()
		st.add(w.stats)
	}
	if st.Contested < leastBusyMinContested || st.Turns == 0 {
		return ""
	}
	n := st.Contested
	least, random, two, turns := st.ContestedLeast/n, st.ContestedAtRandom/n, st.ContestedOfTwo/n, st.SameTurn/st.Turns
	b := st.byLoad(h.Replicas)
	read := string(b)
	if b == "" {
		read = "neither least-busy nor least-of-two"
	}
	g.rep.evidencef("host %s: of %.0f calls that came while the replica next in turn was not among the least loaded, %.0f %% went to a least loaded replica, where a pick at random sends %.0f %%, the lighter of two drawn at random %.0f %% and a balancer by load all; the replica of the call %d before was taken again for %.0f %% of the calls (%.0f %% at random, all in turns): balancer %s",
		h.Name, n, 100*least, 100*random, 100*two, h.Replicas, 100*turns, 100/float64(h.Replicas), read)
	return b
}

// byLoad reads the balancer from the choices among r replicas (see
// loadBalancerFrom): least-busy where a least loaded replica took the
// contested calls leastBusyMinExcess of the way from a random pick's
// share to all, and beyond the lighter of two's share by ofTwoMaxExcess
// of the way to all (the two are one balancer where every draw of two
// holds a least loaded replica, as on two replicas); least-of-two where
// it took them ofTwoMinShare of the way from a random pick's share to the
// lighter of two's; "" otherwise, and where a random pick's share is
// within leastBusyMinZ standard errors, or the replicas are taken again
// in turn more than halfway from 1/r to always. The lighter of two came
// within 0.03 of its share in every case of TestChoicesTellLoadFromTurns
// on three and four replicas (0.90 to 1.01 of the way from a random
// pick's share to it), callers each taking turns of their own at most
// 0.59 of the way, and a balancer by load at least 0.55 of the way from
// the lighter of two's share to all.
func (c choiceStats) byLoad(r int) model.Balancer {
	if c.Contested < leastBusyMinContested || c.Turns == 0 || c.SameTurn/c.Turns >= (1+1/float64(r))/2 {
		return ""
	}
	n := c.Contested
	least, random, two := c.ContestedLeast/n, c.ContestedAtRandom/n, c.ContestedOfTwo/n
	se := func(p float64) float64 { return math.Sqrt(p * (1 - p) / n) }
	if least-random <= leastBusyMinZ*se(random) {
		return ""
	}
	if (least-random)/(1-random) >= leastBusyMinExcess && (two >= ofTwoAll || least-two >= ofTwoMaxExcess*(1-two) && least-two > leastBusyMinZ*se(two)) {
		return model.LeastBusy
	}
	if two < ofTwoAll && least-random >= ofTwoMinShare*(two-random) {
		return model.LeastOfTwo
	}
	return ""
}
