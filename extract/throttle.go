package extract

import (
	"maps"
	"math"
	"slices"

	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve"
)

// A CPU limit (model.CPU.Limit) makes work wait beyond the CPU's queue:
// once a replica has spent its quota for the period, its work stalls
// until the next period. The traces show those stalls as time off the
// CPU, and the simulator makes them again from the limit, so extraction
// takes their mean out of each operation's time off the CPU, as it takes
// out the wait for the CPU itself (cpuWaitFactor). No closed form gives
// the stalls' mean, so it is simulated: the host's CPU alone, fed Poisson
// bursts of the host's mean CPU per execution, with the limit and
// without, at throttleLoads of the limit; the difference of the two mean
// waits, per second of CPU, is the factor at that load, linear between
// the loads and flat beyond the last. The bursts arrive as burstily as the
// host's requests (arrivalSCV), which run the quota out more often.

// throttleLoads are the fractions of the limit the factor is simulated at.
var throttleLoads = []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95}

// throttleRequests is how many bursts each simulation runs: with the same
// seed for both, their waits' difference is precise to a few percent.
const throttleRequests = 40_000

// throttlePoint is the factor at one load.
type throttlePoint struct {
	// load is busy cores per replica; factor the mean wait the limit
	// adds per second of CPU there.
	load, factor float64
}

// throttleWaitFactor is, for a burst on host h, the mean over executions
// of the wait the host's CPU limit adds per second of CPU, at their
// windows' loads of the host; 0 without a limit that binds.
func (g *generator) throttleWaitFactor(h *model.Host) float64 {
	if !h.CPU.Limited() {
		return 0
	}
	if f, ok := g.throttleWaits[h]; ok {
		return f
	}
	if g.throttleWaits == nil {
		g.throttleWaits = map[*model.Host]float64{}
	}
	perServer := float64(h.Replicas) * h.CPU.Speed
	mean := g.busy[h] / perServer
	f := 0.0
	if tab := g.throttleTable(h); len(tab) > 0 && mean > 0 {
		on := func(id string) bool {
			if x := g.externals[id]; x != nil {
				return x.host == h
			}
			op := g.s.ops[id]
			return op != nil && g.hostOf[op.component] == h
		}
		wins, width := g.loadWindows(on, g.meanDemand)
		scale := 0.0
		if b := sumBusy(wins); b > 0 && g.s.span() > 0 {
			scale = g.busy[h] * g.s.span() / b / perServer
		}
		if scale <= 0 {
			wins = nil
		}
		f = meanOverWindows(wins, width, scale, mean, g.arrivalSCV(h), func(a float64) float64 { return throttleAt(tab, a) })
	}
	g.throttleWaits[h] = f
	return f
}

// throttleAt interpolates the factor at load a: from 0 at no load,
// linear between the points, the last point's beyond it.
func throttleAt(tab []throttlePoint, a float64) float64 {
	prev := throttlePoint{}
	for _, p := range tab {
		if a <= p.load {
			return prev.factor + (p.factor-prev.factor)*(a-prev.load)/(p.load-prev.load)
		}
		prev = p
	}
	return prev.factor
}

// throttleTable simulates the factor of host h at throttleLoads of its
// limit (see the comment at the top of this file).
func (g *generator) throttleTable(h *model.Host) []throttlePoint {
	if g.cfg.Simulator == nil {
		g.rep.warnf("host %s: with no simulator given, the stalls its CPU limit adds are left in the operations' time off the CPU, where the model adds them again", h.Name)
		return nil
	}
	var cpu, n float64
	for _, id := range slices.Sorted(maps.Keys(g.s.ops)) {
		op := g.s.ops[id]
		if g.hostOf[op.component] == h {
			cpu += float64(op.count) * g.meanDemand(id)
			n += float64(op.count)
		}
	}
	if !(cpu > 0) {
		return nil
	}
	burst := cpu / n / h.CPU.Speed // CPU seconds per execution
	// Bursty arrivals run the quota out more often: the host's own.
	cv := 1.0
	if scv := g.arrivalSCV(h); scv > 0 && math.Abs(scv-1) > 0.01 {
		cv = math.Sqrt(scv)
	}
	alone := func(limit, rate float64) *model.Model {
		c := h.CPU
		c.Speed, c.SpeedCurve, c.SpeedVariation, c.SpeedWindow, c.Limit = 1, nil, 0, 0, limit
		m := &model.Model{Version: model.Version, Name: "throttle",
			Hosts: []*model.Host{{Name: "h", Replicas: 1, Balancer: model.RoundRobin, CPU: c}},
			Components: []*model.Component{{Name: "c", Host: "h", Threads: model.Unlimited, Queue: model.Unlimited,
				Operations: []*model.Operation{{Name: "op", Component: "c",
					Steps: []model.Step{{Kind: model.StepCPU, Demand: model.Exp(burst)}}}}}},
			Workloads: []*model.Workload{{Name: "w", Open: &model.Open{Rate: rate, CV: cv},
				Steps: []model.Step{{Kind: model.StepCall, Target: "c/op"}}}},
		}
		if c, err := m.Clone(); err == nil { // as the model files are read
			return c
		}
		return nil
	}
	wait := func(m *model.Model) (float64, bool) {
		if m == nil {
			return 0, false
		}
		r, err := g.cfg.Simulator.Solve(g.ctx, m, solve.Options{Seed: 1, Requests: throttleRequests, Workers: 1})
		if err != nil || !r.Stable {
			return 0, false
		}
		cpu := r.Resources[model.CPUResource("h")]
		if cpu == nil || cpu.Wait == nil {
			return 0, false
		}
		return cpu.Wait.Mean, true
	}
	var tab []throttlePoint
	for _, frac := range throttleLoads {
		a := frac * h.CPU.Limit
		rate := a / burst
		with, ok1 := wait(alone(h.CPU.Limit, rate))
		without, ok2 := wait(alone(0, rate))
		if !ok1 || !ok2 {
			break
		}
		f := math.Max(with-without, 0) / burst
		if n := len(tab); n > 0 {
			f = math.Max(f, tab[n-1].factor) // the wait grows with the load
		}
		tab = append(tab, throttlePoint{load: a, factor: f})
	}
	return tab
}
