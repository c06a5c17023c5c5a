package extract

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/perfcast/perfcast/internal/textout"
	"github.com/perfcast/perfcast/model"
)

// A wait the traces do not show: an operation whose time off the CPU is
// spent at a device or a system several executions share (a disk, a
// database or a service without spans, a lock inside the spans that no
// configuration declares) waits longer the more of them are under way.
// Kept as a fixed delay, that wait does not grow with the load, and the
// model is short beyond the observed load (a disk of one server 45 %
// busy behind 8 ms off the CPU: −64 % at 1.5 times the load).
//
// The sweep of each host (soloSweep) counts the own times of other
// requests' executions under way as each execution begins
// (opStats.ownAtStart; its own request's parallel calls are left out,
// being alike in cost where the request is). Arrivals
// see the host as it is on average, so where nothing shared lies behind
// the time off the CPU, an execution's own time does not depend on how
// many others it began beside (its CPU time does not, nor a fixed delay).
// Where it waits for a shared server, those that began beside others take
// longer. The executions that began alone are set against those that
// began beside 1 to upTo others, upTo one less than the host's cores (at
// least 1): with a core free as they began they wait little for the CPU.
// What the model already makes wait (the CPU, slots, pools and locks) is
// allowed for: those that began alone hardly wait for it, so the others
// wait at most its mean over the share of executions that did not begin
// alone, and the difference must exceed that, as well as sharedWaitT
// standard errors and sharedWaitShare of the own time of the executions
// that began alone. On one core, the other under way may also hold the
// core for up to its CPU demand.
const (
	sharedWaitT     = 4
	sharedWaitShare = 0.02
)

// sharedServerName names, on a host, the server of the waits the traces
// do not show (see sharedServers).
const sharedServerName = "untraced"

// sharedScvMax bounds the squared coefficient of variation of that
// server's service.
const sharedScvMax = 16

// sharedServer is the server of a host's waits the traces do not show
// (see sharedServers).
type sharedServer struct {
	// wait is the mean wait of a visit at the observed load, scv its
	// service's squared coefficient of variation.
	wait, scv float64
	// demand is its service per execution of each operation that visits
	// it.
	demand map[string]float64
	// seen is each operation's evidence.
	seen map[string]sharedWait
}

// sharedServers gives each operation on a host whose own times show a
// wait the traces do not (sharedWait) a visit to one server of that host,
// shared by those operations, FCFS (the model's disk sharedServerName).
//
// Its wait W at the observed load is each operation's mean own time less
// that of its executions that began alone, pooled over the operations by
// their rates. How busy it is, ρ, comes from the executions that began
// beside exactly one other: that one is at the server, by Little's law,
// for a share ρ/N₀ of the time it is under way (N₀ the host's executions
// under way at no contention: each operation's rate times its own time
// alone), and an arrival that finds it there waits its residual service
// R; so they take ρR/N₀ longer than those that began alone, and with
// Pollaczek–Khinchine's W = ρR/(1 − ρ), ρ = 1 − N₀·X₁/W, X₁ that
// difference (fitShared takes, within its 95 % interval, the value
// nearest to the most the executions allow). ρ is at most the
// operations' time off the CPU alone times their rates (all of it at the
// server), and at most the share of executions that did not begin alone
// (one that begins alone finds the server idle); where the estimate
// fails, it is the lesser of the two.
// Each operation's service is its time off the CPU alone, scaled to make
// ρ; its variability makes W at ρ (a squared coefficient of variation
// 2W(1 − ρ)/(ρ·D̄) − 1, D̄ the mean service), or, where W is shorter than
// constant service would make it, ρ is lowered to what constant service
// makes W. Each execution's delay keeps the rest of its time off the
// CPU, less its service and the wait the model makes there again.
//
// Where requests visit the server once, this recovers it (a disk or a
// lock of one 50 % busy behind 4 ms of 6.5 ms off the CPU: 52 and 53 %;
// TestSharedWait). Where they visit it several times (the pipeline
// example's reads, a loop of one to four), those that began alone wait
// after they began too: ρ comes out short (40 % for 45 %, the top of its
// interval) and so does the wait's growth. The report says so.
func (g *generator) sharedServers() map[string]*sharedServer {
	span := g.s.span()
	if span <= 0 {
		return nil
	}
	type found struct {
		id string
		sw sharedWait
	}
	byHost := map[*model.Host][]found{}
	for _, id := range slices.Sorted(maps.Keys(g.s.ops)) {
		op := g.s.ops[id]
		if op.count == 0 || op.cpu.n != op.count || op.offCPU.mean() <= 0 {
			continue // CPU time not measured: its time off the CPU is not known
		}
		made := func() float64 { return g.waitsMadeAgain(id, op, op.cpu.mean()) }
		if sw, ok := g.sharedWait(op, made); ok {
			h := g.hostOf[op.component]
			byHost[h] = append(byHost[h], found{id, sw})
		}
	}
	rateOf := func(op *opStats) float64 {
		return float64(op.count) / span / float64(g.replicasOf(op.component))
	}
	out := map[string]*sharedServer{}
	for _, h := range slices.SortedFunc(maps.Keys(byHost), func(a, b *model.Host) int { return strings.Compare(a.Name, b.Name) }) {
		list := byHost[h]
		sv := &sharedServer{demand: map[string]float64{}, seen: map[string]sharedWait{}}
		offAlone := map[string]float64{}
		var rate, scvRate, offRate, waitRate, alone, all float64
		var beside1 moments // own times beside one other, less alone's
		// The variances of the pooled wait's mean and beside1's, before
		// their weights' sums divide them.
		var waitVar, besideVar float64
		ids := make([]string, len(list))
		for i, f := range list {
			op := g.s.ops[f.id]
			r := rateOf(op)
			off := math.Max(f.sw.alone.mean()-op.cpu.mean(), 0)
			ids[i], offAlone[f.id], sv.seen[f.id] = f.id, off, f.sw
			rate += r
			scvRate += r * g.componentSCV(op.component)
			offRate += r * off
			waitRate += r * math.Max(f.sw.waited, 0)
			waitVar += r * r * (f.sw.all.meanVariance() + f.sw.alone.meanVariance())
			alone += f.sw.alone.n
			all += f.sw.all.n
			if l1 := op.ownAtStart[1]; l1.n > 0 {
				beside1.n += l1.n
				beside1.sum += l1.sum - l1.n*f.sw.alone.mean()
				besideVar += l1.n * l1.n * (l1.meanVariance() + f.sw.alone.meanVariance())
			}
		}
		if offRate <= 0 || waitRate <= 0 {
			continue
		}
		w := waitRate / rate
		var n0 float64 // executions under way at no contention
		for _, id := range slices.Sorted(maps.Keys(g.s.ops)) {
			if op := g.s.ops[id]; g.hostOf[op.component] == h && op.count > 0 {
				a := op.self.mean()
				if op.ownAtStart[0].n > 0 {
					a = op.ownAtStart[0].mean()
				}
				n0 += rateOf(op) * a
			}
		}
		relErr := math.Inf(1)
		if x1 := beside1.mean(); beside1.n >= soloMin && x1 > 0 {
			relErr = math.Hypot(math.Sqrt(waitVar)/waitRate, math.Sqrt(besideVar)/beside1.n/x1)
		}
		fit := fitShared(sharedFacts{wait: w, beside1: beside1.mean(), relErr: relErr, underWay: n0,
			rate: rate, most: math.Min(offRate, 1-alone/all), whole: offRate, arrivalSCV: scvRate / rate})
		sv.wait, sv.scv = w, fit.scv
		for _, f := range list {
			sv.demand[f.id] = offAlone[f.id] * fit.busy / offRate
			out[f.id] = sv
		}
		if h.Disk(sharedServerName) == nil {
			h.Disks = append(h.Disks, &model.Disk{Name: sharedServerName, Servers: 1, Scheduling: model.FCFS})
		}
		g.rep.warnf("host %s: the time off the CPU of %s waits for something the traces do not show, modeled as %s: one FCFS server that each execution visits once, %.0f %% busy at the observed load (%s), its wait there %s as measured (service cv %.2g). Where a request visits it several times, the model's wait grows more slowly than the truth's",
			h.Name, strings.Join(ids, ", "), model.DiskResource(h.Name, sharedServerName), 100*fit.busy, fit.how, textout.Duration(w), math.Sqrt(fit.scv))
	}
	return out
}

// sharedFacts are what sharedServers measures of a host's server of the
// waits the traces do not show.
type sharedFacts struct {
	// wait is the mean wait per execution at the observed load (W);
	// beside1 how much longer the executions that began beside one other
	// took than those that began alone (X₁); relErr the relative standard
	// error of X₁/W (infinite where too few began beside one other).
	wait, beside1, relErr float64
	// underWay is the executions under way on the host at no contention
	// (N₀); rate the visits' rate.
	underWay, rate float64
	// most is the largest busy share the executions allow, whole the
	// share where all of the time off the CPU alone is service.
	most, whole float64
	// arrivalSCV is the squared cv of the arrivals' interarrival times:
	// those of the operations' components, as their CPU slots see them
	// (componentSCV), weighted by their rates. The host's would count
	// every hop of a request on it as an arrival.
	arrivalSCV float64
}

// sharedFit is the server fitted to sharedFacts: its busy share, its
// service's squared cv, and how the busy share was found.
type sharedFit struct {
	busy, scv float64
	how       string
}

// fitShared fits the server of sharedServers to f. The busy share that
// the executions beside one other tell, 1 − N₀·X₁/W, is a difference of
// two near numbers at light load, and its 95 % interval wide: the share
// taken is the one within that interval nearest to all of the time off
// the CPU alone (f.most, the reading kept unless the data reject it).
// Arrivals other than Poisson's wait (ca² + cs²)/(1 + cs²) times what
// Poisson's would (Kingman): the formulas take the wait Poisson's would
// see, W·(1 + cs²)/(ca² + cs²), which the service's squared cv cs² fitted
// to it changes; cs² is the fixed point, found by bisection (a round-robin
// balancer makes each replica's arrivals smoother than Poisson's, which
// hid a third of a disk's busy share: 28 % for 50).
func fitShared(f sharedFacts) sharedFit {
	ca2 := f.arrivalSCV
	if !(ca2 > 0) {
		ca2 = 1
	}
	most := "the share of executions that did not begin alone"
	if f.most == f.whole {
		most = "all of the time off the CPU alone"
	}
	// at is the fit where the service's squared cv is cs2, and the
	// squared cv the wait then asks for (negative where constant service
	// would wait longer).
	at := func(cs2 float64) (sharedFit, float64) {
		fit := sharedFit{scv: cs2, busy: f.most, how: "as busy as " + most + " makes it; those beside one other do not tell"}
		w := f.wait * (1 + cs2) / (ca2 + cs2)
		rho := 1 - f.underWay*f.beside1/w
		half := 1.96 * (1 - rho) * f.relErr
		switch lo, hi := rho-half, rho+half; {
		case math.IsInf(half, 0) || math.IsNaN(half) || hi <= 0:
		case f.most > hi:
			fit.busy = hi
			fit.how = fmt.Sprintf("as those beside one other tell it, %.0f to %.0f %%, the nearest to %s", 100*math.Max(lo, 0), 100*hi, most)
		default:
			fit.how = fmt.Sprintf("as %s makes it, within the %.0f to %.0f %% those beside one other tell", most, 100*math.Max(lo, 0), 100*hi)
			if f.most < lo {
				fit.how = fmt.Sprintf("as %s makes it, below the %.0f to %.0f %% those beside one other tell", most, 100*lo, 100*hi)
			}
		}
		return fit, 2*w*(1-fit.busy)/(fit.busy*fit.busy/f.rate) - 1
	}
	if fit, want := at(0); want <= 0 {
		// M/D/1: W = ρ²/(2λ(1 − ρ)), with Poisson's wait at cs² = 0.
		lw := f.rate * f.wait / ca2
		fit.busy = -lw + math.Sqrt(lw*lw+2*lw)
		fit.how += "; lowered to what constant service makes of the wait"
		return fit
	}
	if fit, want := at(sharedScvMax); want >= sharedScvMax {
		return fit
	}
	lo, hi := 0.0, float64(sharedScvMax)
	for range 60 {
		mid := (lo + hi) / 2
		if _, want := at(mid); want > mid {
			lo = mid
		} else {
			hi = mid
		}
	}
	fit, _ := at((lo + hi) / 2)
	return fit
}

// sharedWait is the evidence of a wait that grows with the executions
// under way on an operation's host (see sharedWaitT).
type sharedWait struct {
	// alone and beside are the own times of the executions that began
	// with no other under way and with 1 to upTo others, all those of
	// every execution.
	alone, beside, all moments
	upTo               int
	// extra is beside's mean own time less alone's, se its standard
	// error; allowed is what the model's waits may make of it; waited is
	// the mean own time of all executions less alone's.
	extra, se, allowed, waited float64
}

// sharedWait reports whether operation id's own times grow with the
// executions under way on its host as each began, beyond what made
// returns (the waits the model makes again for one execution at the
// observed load, asked only where the growth is clear of its noise) and,
// on one core, the CPU the others hold may explain. It says nothing
// for sampled or rate-limited traces (the others are not all in them),
// nor for components with CPU slots (their own requests queue for a
// slot, a wait the model makes, in a share that depends on the others as
// they began).
func (g *generator) sharedWait(op *opStats, made func() float64) (sharedWait, bool) {
	h := g.hostOf[op.component]
	if h == nil || g.s.Sampled > 0 || g.s.RateLimited > 0 || g.cpuSlots(op.component) > 0 {
		return sharedWait{}, false
	}
	sw := sharedWait{alone: op.ownAtStart[0], upTo: max(h.CPU.Cores-1, 1)}
	for i, m := range op.ownAtStart {
		sw.all.merge(m)
		if i > 0 && i < soloLevelCount && soloLevels[i] <= sw.upTo {
			sw.beside.merge(m)
		}
	}
	if sw.alone.n < soloMin || sw.beside.n < soloMin {
		return sharedWait{}, false
	}
	sw.extra = sw.beside.mean() - sw.alone.mean()
	sw.se = math.Sqrt(sw.alone.meanVariance() + sw.beside.meanVariance())
	sw.waited = sw.all.mean() - sw.alone.mean()
	if !(sw.extra > sharedWaitT*sw.se && sw.extra > sharedWaitShare*sw.alone.mean()) {
		return sw, false
	}
	sw.allowed = made() / (1 - sw.alone.n/sw.all.n)
	if h.CPU.Cores <= 1 {
		sw.allowed += g.hostCPUPerExecution(h)
	}
	return sw, sw.extra > sw.allowed
}

// hostCPUPerExecution is the mean CPU time measured per execution of the
// operations on host h.
func (g *generator) hostCPUPerExecution(h *model.Host) float64 {
	var sum, n float64
	for _, id := range slices.Sorted(maps.Keys(g.s.ops)) {
		if op := g.s.ops[id]; g.hostOf[op.component] == h && op.cpu.n > 0 {
			sum += op.cpu.sum
			n += float64(op.cpu.n)
		}
	}
	if n == 0 {
		return 0
	}
	return sum / n
}
