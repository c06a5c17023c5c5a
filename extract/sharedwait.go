package extract

import (
	"math"

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
// The sweep of each host (soloSweep) counts the other executions' own
// times under way as each execution begins (opStats.ownAtStart). Arrivals
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

// sharedWait is the evidence of a wait that grows with the executions
// under way on an operation's host (see sharedWaitT).
type sharedWait struct {
	// alone and beside are the own times of the executions that began
	// with no other under way and with 1 to upTo others.
	alone, beside moments
	upTo          int
	// extra is beside's mean own time less alone's, se its standard
	// error; allowed is what the model's waits may make of it; waited is
	// the mean own time of all executions less alone's.
	extra, se, allowed, waited float64
}

// sharedWait reports whether operation id's own times grow with the
// executions under way on its host as each began, beyond what made (the
// waits the model makes again for one execution at the observed load)
// and, on one core, the CPU the others hold may explain. It says nothing
// for sampled traces (the others are not all in them) nor for components
// with CPU slots (their own requests queue for a slot, a wait the model
// makes, in a share that depends on the others as they began).
func (g *generator) sharedWait(id string, op *opStats, made float64) (sharedWait, bool) {
	h := g.hostOf[op.component]
	if h == nil || g.s.Sampled > 0 || g.cfg.cpuSlots(op.component) > 0 {
		return sharedWait{}, false
	}
	sw := sharedWait{alone: op.ownAtStart[0], upTo: max(h.CPU.Cores-1, 1)}
	var all moments
	for i, m := range op.ownAtStart {
		all.merge(m)
		if i > 0 && i < soloLevelCount && soloLevels[i] <= sw.upTo {
			sw.beside.merge(m)
		}
	}
	if sw.alone.n < soloMin || sw.beside.n < soloMin {
		return sharedWait{}, false
	}
	sw.allowed = made / (1 - sw.alone.n/all.n)
	if h.CPU.Cores <= 1 {
		sw.allowed += g.hostCPUPerExecution(h)
	}
	sw.extra = sw.beside.mean() - sw.alone.mean()
	sw.se = math.Sqrt(sw.alone.meanVariance() + sw.beside.meanVariance())
	sw.waited = all.mean() - sw.alone.mean()
	ok := sw.extra > sharedWaitT*sw.se && sw.extra > sw.allowed && sw.extra > sharedWaitShare*sw.alone.mean()
	return sw, ok
}

// hostCPUPerExecution is the mean CPU time measured per execution of the
// operations on host h.
func (g *generator) hostCPUPerExecution(h *model.Host) float64 {
	var sum, n float64
	for _, op := range g.s.ops {
		if g.hostOf[op.component] == h && op.cpu.n > 0 {
			sum += op.cpu.sum
			n += float64(op.cpu.n)
		}
	}
	if n == 0 {
		return 0
	}
	return sum / n
}
