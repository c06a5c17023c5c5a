package mva

import (
	"errors"
	"fmt"
	"math"

	"github.com/perfcast/perfcast/queueing"
)

// station is a service center of a queueing network. A station with
// copies > 1 stands for that many identical instances (the replicas of a
// host), each receiving 1/copies of every class's visits; demands, visits
// and residence times are those of one instance.
type station struct {
	name string
	// servers per instance; 0 makes an infinite-server (delay) station.
	servers int
	// copies is the number of identical instances (≥ 1).
	copies int
	// fcfs marks a first-come-first-served station, where the mean wait is
	// the same for every class and depends on the variability of service
	// (for open classes); other stations are processor sharing.
	fcfs bool
	// limit is, at a CPU whose limit binds, the limit in cores, served
	// by its servers as limitServers says, and cores the host's cores per
	// replica, which its utilization is reported over; 0 elsewhere.
	limit float64
	cores int
	// leastBusy marks the station of a host whose copies take calls
	// by load (least-busy or least-of-two): where no limit binds its
	// CPU, its instances wait as one queue of copies·servers servers
	// does, times queueing.JSQFactor (see network.joinShortest and
	// closedNet.solveJoined). ofTwo marks,
	// among them, one whose calls take the lighter of two copies drawn
	// at random (least-of-two on more than two copies), which waits
	// queueing.OfTwoShare of the way from there to a random pick's wait.
	leastBusy, ofTwo bool
}

// class is a request class of a queueing network: open with an arrival
// rate, or closed with a population and a think time.
type class struct {
	name  string
	open  bool
	rate  float64
	users float64
	think float64
}

// network is a multi-class queueing network with per-class demands.
type network struct {
	stations []station
	classes  []class
	// demand[c][k] is class c's service demand per request at one instance
	// of station k (seconds), visits[c][k] its visits, second[c][k] the sum
	// over those visits of E[S²] (for the open FCFS correction).
	demand, visits, second [][]float64
	// ca2[c][k], where not nil, is the squared coefficient of variation
	// of the gaps between open class c's visits to one instance of
	// station k (see arrivalSCVs); nil takes them as Poisson's.
	ca2 [][]float64
	// fixedThink keeps the closed classes' think times as given where
	// copies queue as one, the excess of joining the shortest queue added
	// to their residence times only: byThroughput's hardware curves (of
	// joinedView) find the think time at which the joined network carries
	// a throughput, which then holds the excess already.
	fixedThink bool
	// joinedExcess is the closed classes' excess at the joined stations
	// the last solve found (closedNet.solveJoined), where the next one
	// starts: the layered iteration solves the same network again and
	// again with think times that change less and less.
	joinedExcess [][]float64
	// shared is what the last call of sharing found, where the next
	// one reuses what has not changed.
	shared []*sharedServers
}

// newNetwork returns a network with zero demands.
func newNetwork(stations []station, classes []class) *network {
	n := &network{stations: stations, classes: classes}
	n.demand = matrix(len(classes), len(stations))
	n.visits = matrix(len(classes), len(stations))
	n.second = matrix(len(classes), len(stations))
	return n
}

func matrix(rows, cols int) [][]float64 {
	out := make([][]float64, rows)
	flat := make([]float64, rows*cols)
	for i := range out {
		out[i] = flat[i*cols : (i+1)*cols : (i+1)*cols]
	}
	return out
}

// solution is the mean-value solution of a network.
type solution struct {
	// X[c] is the throughput of class c (requests per second).
	X []float64
	// R[c][k] is class c's residence time per request at one instance of
	// station k.
	R [][]float64
	// U[k] is the utilization of one server of one instance of station k.
	U []float64
	// method names the algorithm used for the closed classes.
	method     string
	iterations int
	converged  bool
	// saturated is the index of a station the open classes overload, or -1.
	saturated int
	// split[k], at a leastBusy station whose waits joined the shortest
	// queue, is what a random pick would have made of a visit: the
	// stretch of its demand (processor sharing) or its wait (FCFS); 0
	// elsewhere (see leastBusyMisjudged).
	split []float64
	// beyond[k], at such a station, is the share of its joined wait that
	// the copies past jsqChecked add to queueing.JSQFactor: extrapolated
	// past the copies its growth was checked on; 0 elsewhere.
	beyond []float64
}

// newSolution returns an empty solution of C classes at K stations.
func newSolution(C, K int) *solution {
	return &solution{X: make([]float64, C), R: matrix(C, K), U: make([]float64, K), saturated: -1, converged: true, split: make([]float64, K), beyond: make([]float64, K)}
}

// ofTwoServersDoubt is the share of the part of a least-of-two wait past
// joining the shortest queue that is in doubt on three and four copies of
// several servers: queueing.OfTwoShare overstated the chain's share by up
// to 8 % on two servers from 30 % load, 16 to 52 % on four between 30
// and 60 %.
const ofTwoServersDoubt = 0.5

// jsqChecked is the most copies on which queueing.JSQFactor's growth with
// them was checked against the exact chain (queueing
// TestJSQWaitAgainstChain: three and four queues within 1.2 %).
const jsqChecked = 4

// solveOptions tune the network solver.
type solveOptions struct {
	// exactStates is the largest closed state space Π(N_c+1) solved by
	// exact multi-class MVA; larger ones use approximate MVA.
	exactStates int
	// forceApprox selects approximate MVA even where exact MVA would do
	// (for measuring its error).
	forceApprox bool
	// tol and maxIter control approximate MVA.
	tol     float64
	maxIter int
}

func defaultSolveOptions() solveOptions {
	return solveOptions{exactStates: 20000, tol: 1e-10, maxIter: 100000}
}

// errSaturated says that the open classes overload a station.
var errSaturated = errors.New("open workload exceeds a station's capacity")

// solve computes the mean-value solution of a network: open classes by the
// M/M/c (and, at FCFS stations, M/G/c) formulas, closed classes by exact or
// approximate MVA on demands inflated by 1/(1 − U_open), the standard
// treatment of mixed networks, which is exact at one server. At a station
// of several servers that both share, the closed classes see the rates of
// the mixed network's product form (sharedServers) and the open requests
// queue as it says given the closed jobs there.
func (n *network) solve(o solveOptions) (*solution, error) {
	K, C := len(n.stations), len(n.classes)
	sol := newSolution(C, K)

	// Utilization by open classes.
	uOpen := make([]float64, K)
	for c, cl := range n.classes {
		if !cl.open {
			continue
		}
		sol.X[c] = cl.rate
		for k, st := range n.stations {
			if st.servers > 0 {
				uOpen[k] += cl.rate * n.demand[c][k] / float64(st.servers)
			}
		}
	}
	for k := range n.stations {
		if uOpen[k] >= 1 {
			sol.saturated = k
			return sol, fmt.Errorf("station %s: %w (utilization %.4g)", n.stations[k].name, errSaturated, uOpen[k])
		}
	}

	// Closed classes on inflated demands.
	var closedIdx []int
	for c, cl := range n.classes {
		if !cl.open && cl.users > 0 {
			closedIdx = append(closedIdx, c)
		}
	}
	qClosed := make([]float64, K)
	uClosed := make([]float64, K)
	shared, roomyAt := n.sharing(uOpen)
	var marginals [][]float64
	// joinedOpen[k] is, at a station whose copies queue as one and that
	// open requests share with closed ones, what the open requests wait
	// per second of their demand (closedNet.openJoined); -1 elsewhere.
	joinedOpen := make([]float64, K)
	for k := range joinedOpen {
		joinedOpen[k] = -1
	}
	if len(closedIdx) > 0 {
		cn := &closedNet{stations: n.stations, think: make([]float64, len(closedIdx)), users: make([]float64, len(closedIdx)), demand: matrix(len(closedIdx), K), shared: shared}
		for i, c := range closedIdx {
			cn.think[i] = n.classes[c].think
			cn.users[i] = n.classes[c].users
			for k, st := range n.stations {
				d := n.demand[c][k]
				if st.servers > 0 && !roomyAt[k] {
					d /= 1 - uOpen[k]
				}
				cn.demand[i][k] = d
			}
		}
		var cs *closedSolution
		if joined := n.joinable(); len(joined) > 0 {
			js := cn.solveJoined(joined, n.joinedExcess, n.fixedThink, o)
			n.joinedExcess = js.excess
			n.keepJoined(sol, joined, closedIdx, js)
			cs = js.closedSolution
			for j, k := range joined {
				if js.shared[j] {
					joinedOpen[k] = js.waits[j].open
				}
			}
		} else {
			cs = cn.solve(o)
		}
		sol.method, sol.iterations, sol.converged = cs.method, cs.iterations, cs.converged
		marginals = cs.P
		for i, c := range closedIdx {
			sol.X[c] = cs.X[i]
			for k, st := range n.stations {
				sol.R[c][k] = cs.R[i][k]
				qClosed[k] += cs.X[i] * cs.R[i][k]
				if st.servers > 0 {
					uClosed[k] += cs.X[i] * n.demand[c][k] / float64(st.servers)
				}
			}
		}
	} else {
		sol.method = "open"
	}

	// Open classes.
	for k, st := range n.stations {
		sol.U[k] = uOpen[k] + uClosed[k]
		anyOpen := false
		for c, cl := range n.classes {
			if cl.open && n.demand[c][k] > 0 {
				anyOpen = true
			}
		}
		if !anyOpen {
			continue
		}
		if st.servers == 0 {
			for c, cl := range n.classes {
				if cl.open {
					sol.R[c][k] = n.demand[c][k]
				}
			}
			continue
		}
		// Where no closed class visits, the open classes queue only
		// among themselves, whatever the closed classes do elsewhere.
		openOnly := true
		for _, c := range closedIdx {
			openOnly = openOnly && n.demand[c][k] == 0 && n.visits[c][k] == 0
		}
		if st.leastBusy && st.copies > 1 && openOnly {
			n.joinShortest(sol, k, uOpen[k])
			continue
		}
		if w := joinedOpen[k]; w >= 0 {
			if st.fcfs {
				w *= n.meanService(k, sol.X)
			}
			n.setOpenWait(sol, k, w)
			continue
		}
		if st.fcfs && openOnly {
			n.setOpenWait(sol, k, n.fcfsWait(k, uOpen[k], n.arrivalSCV(k), st.servers))
			continue
		}
		var stretch float64
		if ca2 := n.arrivalSCV(k); ca2 != 1 && openOnly {
			s := float64(st.servers)
			stretch = 1 + queueing.GIMcWait(st.servers, uOpen[k]*s, ca2)
		} else if st.servers == 1 {
			stretch = (1 + qClosed[k]) / (1 - uOpen[k])
		} else if sh := shared[k]; sh != nil && marginals != nil && marginals[k] != nil {
			stretch = sh.openQueue(marginals[k], qClosed[k]) / (float64(st.servers) * uOpen[k])
			if st.fcfs {
				// In line every request waits alike: the product
				// form's wait at the mean service of a visit.
				n.setOpenWait(sol, k, (stretch-1)*n.meanService(k, sol.X))
				continue
			}
		} else {
			rho := math.Min(uOpen[k]+uClosed[k], 1)
			s := float64(st.servers)
			stretch = 1 + queueing.MMcWait(st.servers, rho*s)
		}
		for c, cl := range n.classes {
			if cl.open {
				sol.R[c][k] = n.demand[c][k] * stretch
			}
		}
	}
	return sol, nil
}

// sharing returns, per station that open and closed classes share, the
// closed classes' view of it (sharedServers; at one server its rates are
// the server's own, but the copies of a station may queue as one of
// several, closedNet.solveJoined), nil elsewhere; and where the station is
// roomy (see roomy), which the closed classes then take as a delay,
// without stretching their demands by the open load.
func (n *network) sharing(uOpen []float64) ([]*sharedServers, []bool) {
	K := len(n.stations)
	shared, roomyAt := make([]*sharedServers, K), make([]bool, K)
	var users float64
	for _, cl := range n.classes {
		if !cl.open && cl.users > 0 {
			users += cl.users
		}
	}
	for k, st := range n.stations {
		if st.servers < 1 || !(uOpen[k] > 0) || uOpen[k] >= 1 {
			continue
		}
		closed := false
		for c, cl := range n.classes {
			closed = closed || (!cl.open && cl.users > 0 && n.demand[c][k] > 0)
		}
		switch {
		case !closed:
		case roomy(st.servers, uOpen[k], math.Ceil(users)):
			roomyAt[k] = true
		default:
			// The layered iteration solves the hardware again and
			// again at one open load.
			var last *sharedServers
			if k < len(n.shared) {
				last = n.shared[k]
			}
			if last != nil && last.r == uOpen[k] && len(last.rates) == st.servers+1 {
				shared[k] = last
			} else {
				shared[k] = newSharedServers(st.servers, uOpen[k])
			}
		}
	}
	n.shared = shared
	return shared, roomyAt
}

// meanService is the mean service time of a visit to station k over
// every class's visits, at throughputs x.
func (n *network) meanService(k int, x []float64) float64 {
	var work, visits float64
	for c := range n.classes {
		work += x[c] * n.demand[c][k]
		visits += x[c] * n.visits[c][k]
	}
	if !(visits > 0) {
		return 0
	}
	return work / visits
}

// arrivalSCV is the squared coefficient of variation of the gaps between
// the open classes' visits to one instance of station k: each class's
// weighted by its visit rate, as merged flows are in Whitt's queueing
// network analyzer; 1 without ca2.
func (n *network) arrivalSCV(k int) float64 {
	if n.ca2 == nil {
		return 1
	}
	var rate, sum float64
	for c, cl := range n.classes {
		if cl.open {
			r := cl.rate * n.visits[c][k]
			rate += r
			sum += r * n.ca2[c][k]
		}
	}
	if !(rate > 0) {
		return 1
	}
	return sum / rate
}

// fcfsWait is the mean wait per visit at an FCFS station k of s servers,
// with open classes only, whose servers are busy a fraction rho of the
// time and whose visits' gaps have squared coefficient of variation ca2:
// GI/G/c (queueing.GIGcWait; for Poisson arrivals the Allen–Cunneen
// formula, Pollaczek–Khinchine's, exact, for one server), with the mean
// and squared coefficient of variation of service over every class's
// visits.
func (n *network) fcfsWait(k int, rho, ca2 float64, s int) float64 {
	var rate, work, second float64
	for c, cl := range n.classes {
		if !cl.open {
			continue
		}
		rate += cl.rate * n.visits[c][k]
		work += cl.rate * n.demand[c][k]
		second += cl.rate * n.second[c][k]
	}
	if rate == 0 {
		return 0
	}
	if rho >= 1 {
		return math.Inf(1)
	}
	mean := work / rate
	scv := 1.0
	if mean > 0 && second > 0 {
		scv = math.Max(second/rate/(mean*mean)-1, 0)
	}
	if ca2 == 1 {
		return queueing.MMcWait(s, rho*float64(s)) * mean * (1 + scv) / 2
	}
	return queueing.GIGcWait(s, rho*float64(s), ca2, scv) * mean
}

// joinShortest sets the open classes' residence times at station k of a
// host whose copies take calls least-busy, each copy's servers busy a
// fraction rho of the time, as the r copies of c servers nearly queue as
// one: the wait of one queue of rc servers, for the flow before it was
// split (a random pick leaves ca² = a/r + 1 − 1/r at a copy; arrivalSCVs
// takes least-busy as one), times queueing.JSQFactor, the exact chain's
// excess over one queue for Poisson arrivals and exponential service. It
// keeps what the random pick would have made in sol.split for Supports.
// At a station balanced least-of-two, the wait lies queueing.OfTwoShare
// of the way from there to the random pick's. In doubt (in sol.beyond)
// are that part of the wait past four copies, where the share is the
// limit of many queues', and ofTwoServersDoubt of it on three and four
// copies of several servers, where the share is one server's scaled;
// on one server it is the exact chain's.
func (n *network) joinShortest(sol *solution, k int, rho float64) {
	st := n.stations[k]
	r, c := st.copies, st.servers
	ca2 := n.arrivalSCV(k)
	whole := math.Max(float64(r)*(ca2-1)+1, 0)
	factor := queueing.JSQFactor(r, c, rho)
	var wait, split float64 // per visit at FCFS, per unit of demand at PS
	if st.fcfs {
		wait = factor * n.fcfsWait(k, rho, whole, r*c)
		split = n.fcfsWait(k, rho, ca2, c)
		sol.split[k] = split
	} else {
		wait = factor * queueing.GIMcWait(r*c, rho*float64(r*c), whole)
		split = queueing.GIMcWait(c, rho*float64(c), ca2)
		sol.split[k] = 1 + split
	}
	var blend float64
	if st.ofTwo {
		blend = queueing.OfTwoShare(r, c, rho) * math.Max(split-wait, 0)
	}
	sol.beyond[k] = joinedBeyond(st, rho, wait, blend, false)
	n.setOpenWait(sol, k, wait+blend)
}

// setOpenWait sets the open classes' residence times at station k from
// their wait there: w per visit at an FCFS station, w per second of
// demand (a stretch of 1 + w) at a processor-sharing one.
func (n *network) setOpenWait(sol *solution, k int, w float64) {
	fcfs := n.stations[k].fcfs
	for c, cl := range n.classes {
		switch {
		case !cl.open:
		case fcfs:
			sol.R[c][k] = n.demand[c][k] + n.visits[c][k]*w
		default:
			sol.R[c][k] = n.demand[c][k] * (1 + w)
		}
	}
}
