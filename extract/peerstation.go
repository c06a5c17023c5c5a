package extract

import (
	"cmp"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/perfcast/perfcast/ingest"
	"github.com/perfcast/perfcast/internal/textout"
	"github.com/perfcast/perfcast/model"
)

// How a system seen only by its clients answers its calls. Its calls'
// latencies by the others in flight (fitPeerQueue) show that they wait,
// but not for what: c servers serving in order grow by S/c for each call
// beyond c − 1 (S the mean service) and not before, one core shared among
// the calls by S/(2 − ρ) for each from the first (M/M/1 under processor
// sharing; ρ the core's busy share), and bursty calls, calls in flight on
// the network and a spread of service change both. So extraction
// simulates each station that may answer them, measures the simulated
// calls as the traces' were measured, and keeps the one whose calls'
// latencies at each count of others in flight are nearest the traces'
// (calibrateQueue).
//
// Stations tried: c servers serving in order (a disk of c servers in the
// model) and c cores shared among the calls (the system's host with c
// cores), for c the fit's servers and one either side; of cores, only
// those the configuration gives for the system's machine where it does,
// and none where traced components run on the machine. Each kind of call
// j is a fixed delay D_j (the network) and then an exponential service of
// mean S_j; the calls arrive as a renewal stream at the observed rate with
// the callers' components' arrival cv, kinds mixed by their counts. Each
// station is simulated up to peerSimRounds times, its mean service
// steered to the traces' mean wait and slope together and each D_j to
// kind j's latency without a wait (on shared cores each kind's service to
// its own slope too), and stands for its nearest simulation.
const (
	// peerSimCalls is the number of calls each simulation records; the
	// first tenth are left out as warm-up.
	peerSimCalls = 40000
	// peerSimRounds bounds the simulations of each station; peerCalTol
	// is the relative distance between the simulated slope and each
	// kind's mean latency and the traces' within which they stop.
	peerSimRounds = 6
	peerCalTol    = 0.02
)

// A queueDiscipline is how a station serves a system's calls.
type queueDiscipline int

const (
	// inOrder is c servers serving in order (a disk in the model).
	inOrder queueDiscipline = iota
	// sharedCores is c cores shared among the calls (a host's CPU).
	sharedCores
)

func (d queueDiscipline) String() string {
	if d == inOrder {
		return "servers serving in order"
	}
	return "cores shared among the calls"
}

// queueCalibration is a station tried for a system's calls and what its
// simulation showed.
type queueCalibration struct {
	how     queueDiscipline
	servers int
	mean    float64   // mean service
	share   []float64 // each kind's service over the mean
	network []float64 // per kind
	// distance is how far its calls' mean latencies by the others in
	// flight are from the traces' (peerDistance); slope its fit's.
	distance float64
	slope    float64
	wait     float64 // its simulated mean wait
}

// calibrateQueue tries the stations that may answer the calls obs
// measured (see the top of this file) and returns the one kept, or says
// why none is. cores, where the configuration gives the system's
// machine's, are the only cores tried; none where withCores is false.
func (g *generator) calibrateQueue(obs *peerObserved, cores int, withCores bool) (*queueSystem, string) {
	type station struct {
		how queueDiscipline
		c   int
	}
	var stations []station
	for _, c := range []int{obs.c - 1, obs.c, obs.c + 1} {
		if c >= 1 {
			stations = append(stations, station{inOrder, c})
			if cores == 0 && withCores {
				stations = append(stations, station{sharedCores, c})
			}
		}
	}
	if cores > 0 && withCores {
		stations = append(stations, station{sharedCores, cores})
	}
	// The stations are calibrated at once, each on its own, as many at a
	// time as the processors allow; their order is kept.
	cals := make([]*queueCalibration, len(stations))
	sem := make(chan struct{}, max(runtime.GOMAXPROCS(0), 1))
	var wg sync.WaitGroup
	for i, st := range stations {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			cals[i], _ = g.calibrateStation(obs, st.how, st.c)
		}()
	}
	wg.Wait()
	if g.ctx.Err() != nil {
		return nil, "extraction was cancelled"
	}
	var best *queueCalibration
	var tried []string
	for i, st := range stations {
		cal := cals[i]
		if cal == nil {
			continue
		}
		tried = append(tried, fmt.Sprintf("%d %s: %.3g", st.c, st.how, cal.distance))
		if best == nil || cal.distance < best.distance {
			best = cal
		}
	}
	if best == nil {
		return nil, "no station of servers or cores tried had a steady state at their rate"
	}
	q := &queueSystem{how: best.how, servers: best.servers, network: map[string]float64{}, service: map[string]float64{},
		meanService: best.mean, rate: obs.rate, busy: obs.rate * best.mean / float64(best.servers)}
	for j, kind := range obs.kinds {
		q.network[kind] = best.network[j]
		q.service[kind] = best.mean * best.share[j]
	}
	q.evidence = fmt.Sprintf("simulated at the calls' rate and arrival cv %.3g, its calls wait %s where the traces' waited %s, and grow by %s for each call beyond %d in flight; stations tried, by the mean squared distance of their calls' mean latencies at each count of others in flight from the traces', in standard errors: %s",
		math.Sqrt(obs.scv), textout.Duration(best.wait), textout.Duration(obs.wait), textout.Duration(best.slope), obs.c-1, strings.Join(tried, "; "))
	return q, ""
}

// peerMeanAlone is the calls' mean latency without a wait.
func peerMeanAlone(obs *peerObserved) float64 {
	var sum, n float64
	for j := range obs.kinds {
		sum += obs.n[j] * obs.alone[j]
		n += obs.n[j]
	}
	return sum / n
}

// calibrateStation simulates a station of c servers or cores answering
// obs's calls, steering its mean service towards the traces' mean wait
// and slope (the geometric mean of the two ratios: the wait alone gave a
// shared core 10 % too much service on TestExternalSystem's database, the
// slope alone its two servers 3 % too much and, moving the networks with
// the mean latencies, swung between far too little and far too much on
// the shop example's) and each kind's network towards the kind's latency
// without a wait, and returns the simulation whose calls' latencies by
// the others in flight are nearest the traces' (peerDistance). ok is
// false where no simulation had a steady state and enough calls to fit.
//
// Each kind's service starts in proportion to its latency without a
// wait. On shared cores a long call meets more of the calls that arrive
// while it runs than a short one, and its own slope is the steeper (in
// M/M/1 under processor sharing, S_j/(1 + (1 − ρ)S_j/S) for a kind of
// mean service S_j): there each kind's share is steered towards its own
// slope too, where that is known within a quarter.
func (g *generator) calibrateStation(obs *peerObserved, how queueDiscipline, c int) (*queueCalibration, bool) {
	ref := peerMeanAlone(obs)
	lo, hi := 0.0, math.Min(peerBusyMax*float64(c)/obs.rate, ref)
	mean := math.Min(obs.b*float64(c), 0.9*hi)
	share := make([]float64, len(obs.kinds))
	network := make([]float64, len(obs.kinds))
	for j := range network {
		share[j] = obs.alone[j] / ref
		network[j] = math.Max(obs.alone[j]-mean*share[j], 0)
	}
	var best *queueCalibration
	for range peerSimRounds {
		sim, ok := g.simulateStation(obs, how, c, mean, share, network)
		if g.ctx.Err() != nil {
			return nil, false
		}
		if !ok {
			hi = mean // beyond saturation, or too few calls to fit
			mean = (lo + hi) / 2
			continue
		}
		cal := &queueCalibration{how: how, servers: c, mean: mean, share: slices.Clone(share), network: slices.Clone(network),
			slope: sim.fit.b, wait: sim.wait, distance: peerDistance(obs.levels, sim.levels)}
		if best == nil || cal.distance < best.distance {
			best = cal
		}
		// Settled when the mean wait, the slope and the kinds' latencies
		// without a wait are within the tolerance (or two standard
		// errors) of the traces'. The networks follow the latencies
		// without a wait, which the service moves far less than it
		// moves the waits.
		settled := math.Abs(sim.wait-obs.wait) <= peerCalTol*obs.wait &&
			math.Abs(sim.fit.b-obs.b) <= math.Max(peerCalTol*obs.b, 2*math.Hypot(obs.se, sim.fit.se))
		for j := range network {
			d := obs.alone[j] - sim.alone[j]
			settled = settled && math.Abs(d) <= math.Max(peerCalTol*obs.alone[j], 2*math.Sqrt(obs.meanVar[j]+sim.meanVar[j]))
			network[j] = math.Min(math.Max(network[j]+d, 0), obs.alone[j])
		}
		if how == sharedCores {
			settled = steerShares(obs, sim, share) && settled
		}
		if settled {
			break
		}
		// The wait and the slope both grow with the service, faster
		// near saturation: a step of the fourth root of each ratio,
		// within the bracket.
		// A simulation that shows no wait or no slope had too little.
		ratio := math.Sqrt(obs.wait / math.Max(sim.wait, 1e-12) * obs.b / math.Max(sim.fit.b, 1e-12))
		if ratio > 1 {
			lo = mean
		} else {
			hi = mean
		}
		next := mean * math.Sqrt(ratio)
		if !(next > lo && next < hi) {
			next = (lo + hi) / 2
		}
		mean = next
	}
	return best, best != nil
}

// steerShares moves each kind's share of the service on shared cores
// towards its own slope where that is known within a quarter (its
// service over the mean, the mean kept), and reports whether every such
// slope is within peerCalTol of the traces'.
func steerShares(obs *peerObserved, sim stationRun, share []float64) bool {
	simSlope, _ := kindSlopes(sim.levels, obs.c)
	settled := true
	var sum, n float64
	for j := range share {
		if b, se := obs.kindSlope[j], obs.kindSE[j]; b > 0 && se < b/4 && simSlope[j] > 0 {
			settled = settled && math.Abs(simSlope[j]-b) <= peerCalTol*b
			share[j] *= b / simSlope[j]
		}
		sum += obs.n[j] * share[j]
		n += obs.n[j]
	}
	for j := range share {
		share[j] *= n / sum
	}
	return settled
}

// kindSlopes fits each kind's latencies by the others in flight at c
// servers on its own: its slope and the slope's standard error, NaN where
// its counts do not reach c.
func kindSlopes(levels []peerLevels, c int) (slope, se []float64) {
	slope, se = make([]float64, len(levels)), make([]float64, len(levels))
	for j := range levels {
		fit, ok := fitPeerAt(levels[j:j+1], c)
		slope[j], se[j] = math.NaN(), math.NaN()
		if ok {
			slope[j], se[j] = fit.b, fit.se
		}
	}
	return slope, se
}

// simulateStation simulates a station of c servers or cores answering
// obs's calls with the given mean service and networks, and measures its
// calls as the traces' were. ok is false where the station has no steady
// state or too few calls for the fit.
func (g *generator) simulateStation(obs *peerObserved, how queueDiscipline, c int, mean float64, share, network []float64) (stationRun, bool) {
	var run stationRun
	m := stationModel(obs, how, c, mean, share, network)
	if m == nil {
		return run, false
	}
	spans, stable, err := g.cfg.Simulator.EntrySpans(g.ctx, m, 1, peerSimCalls)
	if err != nil || !stable {
		return run, false
	}
	p := newPeerSweep()
	for j := range obs.kinds {
		p.kindOf(obs.kinds[j])
	}
	// The calls in order of start, as the sweep takes them, each its own
	// request.
	type call struct {
		start, end int64
		kind       int
	}
	var calls []call
	for j := range obs.kinds {
		for _, iv := range spans[stationComponent+"/"+stationOp(j)] {
			calls = append(calls, call{int64(math.Round(iv[0] * 1e9)), int64(math.Round(iv[1] * 1e9)), j})
		}
	}
	if len(calls) == 0 {
		return run, false
	}
	slices.SortFunc(calls, func(a, b call) int {
		return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(a.end, b.end), cmp.Compare(a.kind, b.kind))
	})
	// The first tenth of the run is warm-up: the calls that started in
	// it count as others but are not recorded.
	first, last := calls[0].start, calls[len(calls)-1].start
	p.warmUntil = first + (last-first)/10
	for i, c := range calls {
		var tid ingest.TraceID
		for k := range 8 {
			tid[8+k] = byte(uint64(i+1) >> (56 - 8*k))
		}
		p.add(obs.kinds[c.kind], c.start, c.end, tid)
	}
	p.finish()
	fit, ok := fitPeerAt(p.levels, obs.c)
	if !ok {
		return run, false
	}
	n, means, alone := peerKinds(p.levels, fit)
	var total float64
	for j := range n {
		run.wait += n[j] * (means[j] - alone[j])
		total += n[j]
	}
	run.fit, run.mean, run.alone, run.meanVar, run.levels = fit, means, alone, kindMeanVariances(p.levels), p.levels
	run.wait /= total
	return run, total > 0
}

// stationRun is what a simulation of a station showed of its calls,
// measured as the traces' were: the fit at the traces' c, the mean wait,
// each kind's mean latency and latency without a wait, and the latencies
// by the others in flight.
type stationRun struct {
	fit                  peerFit
	wait                 float64
	mean, alone, meanVar []float64
	levels               []peerLevels
}

// kindMeanVariances is the variance of each kind's mean latency.
func kindMeanVariances(levels []peerLevels) []float64 {
	out := make([]float64, len(levels))
	for j, lv := range levels {
		var all moments
		for _, m := range lv {
			all.merge(m)
		}
		out[j] = all.meanVariance()
	}
	return out
}

// peerDistance is the mean squared distance, in standard errors, between
// two sets of calls' mean latencies at each kind and count of others in
// flight where both have peerCellMin calls or more.
func peerDistance(a, b []peerLevels) float64 {
	var sum, cells float64
	for j := range min(len(a), len(b)) {
		for k := range peerLevelCount - 1 {
			x, y := a[j][k], b[j][k]
			if x.n < peerCellMin || y.n < peerCellMin {
				continue
			}
			v := x.meanVariance() + y.meanVariance()
			if !(v > 0) {
				continue
			}
			d := x.mean() - y.mean()
			sum += d * d / v
			cells++
		}
	}
	if cells == 0 {
		return math.Inf(1)
	}
	return sum / cells
}

// stationComponent names the component of a station model.
const stationComponent = "system"

// stationOp names kind j's operation in a station model.
func stationOp(j int) string { return fmt.Sprintf("k%d", j) }

// stationModel is the model of a station answering obs's calls (see
// calibrateQueue), or nil where it does not validate.
func stationModel(obs *peerObserved, how queueDiscipline, c int, mean float64, share, network []float64) *model.Model {
	var b strings.Builder
	fmt.Fprintf(&b, "perfcast: 1\nname: station\nhosts:\n")
	switch how {
	case inOrder:
		fmt.Fprintf(&b, "  h: {disks: {d: {servers: %d}}}\n", c)
	case sharedCores:
		fmt.Fprintf(&b, "  h: {cpu: {cores: %d}}\n", c)
	}
	fmt.Fprintf(&b, "components:\n  %s:\n    host: h\n    operations:\n", stationComponent)
	counts := make([]int64, len(obs.kinds))
	for j := range obs.kinds {
		counts[j] = int64(math.Max(obs.n[j], 1))
		service := math.Max(mean*share[j], 1e-9)
		var steps []string
		if network[j] > 0 {
			steps = append(steps, fmt.Sprintf("{delay: %.9gs}", network[j]))
		}
		switch how {
		case inOrder:
			steps = append(steps, fmt.Sprintf("{disk: {name: d, demand: exp(%.9gs)}}", service))
		case sharedCores:
			steps = append(steps, fmt.Sprintf("{cpu: exp(%.9gs)}", service))
		}
		fmt.Fprintf(&b, "      %s: {steps: [%s]}\n", stationOp(j), strings.Join(steps, ", "))
	}
	fmt.Fprintf(&b, "workload:\n  calls:\n    open: {rate: %.9g, cv: %.6g}\n    steps:\n      - branch:\n", obs.rate, math.Sqrt(math.Max(obs.scv, 0.01)))
	for j, p := range roundedProbs(counts) {
		fmt.Fprintf(&b, "          - {p: %.4f, steps: [{call: %s/%s}]}\n", p, stationComponent, stationOp(j))
	}
	m, err := model.Parse([]byte(b.String()), "station.yaml")
	if err != nil {
		return nil
	}
	return m
}
