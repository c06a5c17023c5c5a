// Package mva is perfcast's analytical solver: mean values of throughput,
// response time, utilization, waits and queue lengths in milliseconds, for
// sweeps, capacity search and interactive what-if questions.
//
// A model becomes a queueing network: every host's CPU and disks are
// stations (a replicated host is one station per replica, each receiving
// 1/r of the visits); every workload is a class whose visits and demands
// come from model.Demands (loops by their mean count, branches and
// switches by probability, speed factors applied); delays and think times
// are infinite servers. Least-busy replicas join the shortest queue: at a
// station or pool only open classes visit, the replicas wait as one queue
// of all their servers (units) times queueing.JSQFactor (the exact
// chain's excess for Poisson arrivals and exponential service), and
// least-of-two replicas queueing.OfTwoShare of the way from there to a
// random pick's wait; at one only closed classes visit, the closed
// network has one station of all their servers and the same excess as a
// delay, at the load that holds their population (closedNet.solveJoined;
// in the curves of byThroughput's layers, one center and the excess
// added, state.joinedPool); where open and closed classes meet, the
// one station is shared as the mixed network's product form says
// (sharedServers) and both take the excess at the load that holds both
// (closedNet.openJoined). Under a binding CPU limit, and for bursts that
// pools bound, the replicas are a random pick's, which overestimates the
// waits, and Supports reports a workload where those could move it by
// 5 %.
//
// Open classes are solved by the M/M/c formulas (Erlang C), with the
// Pollaczek–Khinchine / Allen–Cunneen correction for the service variability
// at FCFS stations; processor-sharing multi-server stations use the M/M/c
// formula as well, which product form justifies for class-independent
// exponential service. Where arrivals are not Poisson's (an open
// workload's cv, a round-robin balancer's turns, which hand each replica
// gaps summed over the replicas), the waits of the stations and pools only
// open classes visit are GI/G/c's (Takács's GI/M/c scaled for the
// service), the arrivals' squared cv followed through the model step by
// step (arrivalSCVs); the occupancy chain of a CPU whose bursts run inside
// pools keeps Poisson arrivals, the pools' own waits take the cv. Closed
// classes are solved by exact MVA for one class
// (any population; multi-server stations through their marginal
// probabilities, computed from log-domain normalizing constants so that
// N = 10 000 is stable), by exact multi-class MVA while the state space is
// small, and by Schweitzer–Bard approximate MVA otherwise. Mixed networks
// inflate closed demands by 1/(1 − U_open) at each station, exact for one
// server; where open and closed classes share several servers, the closed
// ones see the load-dependent rates of the product form and the open
// ones queue as it says given the closed jobs there (sharedServers),
// exact where every class has one exponential mean in line (any means at
// processor sharing); with other means in line, Supports reports an open
// workload whose wait there reaches 5 % (mixedMisjudged).
//
// Thread pools, locks and connection pools, and synchronous calls that hold
// a caller's thread are solved by a layered fixed point (method of surrogate
// delays): each pool is a multi-server queue whose service time is the
// response time of the work done while holding it; with open workloads a
// first-come-first-served M/G/c queue, whose holding times' second moments
// are composed along the steps (sums of independent steps, mixtures for
// branches, waits taken as exponential). A pool of c units admits no more
// than c requests to the CPU work inside it, so at a processor-sharing
// station that only open workloads visit, a visit made inside a pool meets
// the other pools' and the outside work's requests but at most c − 1 of its
// own: a Markov chain of the pools' occupancy there (the work outside
// pools a group whose bursts never wait), truncated with geometric tails,
// gives each pool's stretch and its second moment, and to a pool held for
// its bursts alone its wait; where the chain would not fit, mean-value
// equations per pool, solved in closed form. With one
// closed workload that takes pools, the fixed point is solved for its
// throughput (each layer's think time from the inverse of its throughput
// curve, each layer limited to the users its enclosing pool admits), which
// stays well conditioned far beyond saturation. Parallel lists join at the
// mean maximum of independent list times, each a gamma distribution with
// the list's mean and variance, except for the waits at pools they acquire
// together: one common wait, then the holds beyond the pool's units in
// line (with the work they send while holding a pool they wait for in
// line, which reaches the pool ahead of the lists still waiting), the pool
// seeing batches; sends add load but not response time.
// A pool of several units whose holders queue for a one-unit pool inside
// it is, with open workloads, one flow-equivalent server: mean-value
// analysis of the holders inside gives its throughput per number held, and
// a birth–death chain the wait for it. A pool of more units than the
// cores its holders run their CPU work on, with open workloads, waits as
// the Markov chain of its requests and of its holders at the CPU says
// (exponential bursts and a delay for the rest of the holding time, a
// quasi-birth–death process solved by logarithmic reduction; above 24
// units a flow-equivalent server): as independent servers, its units
// served faster than holders that slow each other down (sharedWait). The
// chain also gives the holders' time at the CPU. One closed class alone
// at such a pool of up to 24 units sees it as a flow-equivalent server of
// its holders; other closed or mixed workloads there take it as
// independent servers, which Supports reports where its waits matter.
// A hold that takes a pool its request has just let go, with only delays
// in between, finds the holder it let in just begun rather than part way
// through, and waits the difference more (see reentry.go).
// Supports says which models fall outside what these methods treat
// faithfully; docs/accuracy.md gives measured errors.
package mva
