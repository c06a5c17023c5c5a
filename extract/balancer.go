package extract

import (
	"math"

	"github.com/perfcast/perfcast/model"
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
func (g *generator) inferBalancers() {
	for _, h := range g.m.Hosts {
		if h.Replicas < 2 || h.Balancer != model.RoundRobin {
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
