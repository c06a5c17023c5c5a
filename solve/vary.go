package solve

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"strings"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/perfcast/perfcast/model"
)

// SpeedScenarios is the number of speeds over which a host's speed
// variation (model.CPU.SpeedVariation) is averaged: equally likely strata
// of its distribution.
const SpeedScenarios = 5

// SpeedMultipliers returns the factors by which a host's CPU demands are
// multiplied in each of the SpeedScenarios strata of a speed variation v
// (a coefficient of variation), in increasing order: the CPU time the same
// work takes is taken to be lognormal with mean 1 and that coefficient of
// variation, cut into equally likely strata, and each factor is its
// stratum's mean, so that the factors average exactly 1. v = 0 gives 1
// for every stratum.
func SpeedMultipliers(v float64) []float64 {
	k := SpeedScenarios
	out := make([]float64, k)
	if !(v > 0) {
		for i := range out {
			out[i] = 1
		}
		return out
	}
	sigma := math.Sqrt(math.Log1p(v * v))
	n := distuv.UnitNormal
	// E[X; a < Z < b] for X = exp(σZ − σ²/2) is Φ(b − σ) − Φ(a − σ).
	cdf := func(z float64) float64 {
		switch {
		case math.IsInf(z, -1):
			return 0
		case math.IsInf(z, 1):
			return 1
		}
		return n.CDF(z - sigma)
	}
	lo := math.Inf(-1)
	for i := range k {
		hi := math.Inf(1)
		if i < k-1 {
			hi = n.Quantile(float64(i+1) / float64(k))
		}
		out[i] = float64(k) * (cdf(hi) - cdf(lo))
		lo = hi
	}
	return out
}

// MeanSpeed is the speed at which a CPU whose speed changes over time (a
// speed variation v with a speed window, model.CPU.SpeedWindow) does work
// over a long run, hence the speed that bounds the load it can carry: the
// mean of its speeds 1/X, for X its CPU time per unit of work, lognormal
// of mean 1, is (1 + v²) times its speed. Other CPUs: their speed.
func MeanSpeed(c model.CPU) float64 {
	if c.VariesOverTime() {
		return c.Speed * (1 + c.SpeedVariation*c.SpeedVariation)
	}
	return c.Speed
}

// varied is a host with a speed variation and its place among them.
type varied struct {
	host  string
	speed float64
	mult  []float64
}

// strata are the orders in which the varied hosts (the first, the
// second, …) run at their strata over the SpeedScenarios scenarios: each
// a permutation, so that every host runs at each of its strata once, and
// chosen so that the hosts' strata are nearly uncorrelated over the
// scenarios, as independent variations would be: the first two not at
// all, any two of the first three within 0.1, of the first four within
// 0.3 (a greedy search over the permutations). A fifth host and beyond
// reuse the orders; their speeds then move with an earlier host's.
var strata = [][SpeedScenarios]int{
	{0, 1, 2, 3, 4},
	{0, 4, 3, 2, 1},
	{2, 0, 4, 3, 1},
	{2, 1, 4, 0, 3},
}

// stratum is the stratum of the i-th varied host in scenario j.
func stratum(i, j int) int { return strata[i%len(strata)][j] }

// SolveVaried solves m with one; when hosts of m have a speed variation,
// it solves once per speed scenario instead and mixes the results (see
// Mix). In scenario j, each such host runs at its speed divided by one of
// the SpeedMultipliers of its variation (stratum) and with no variation
// left; the scenarios are equally likely. Each is a steady state: the
// speed is taken to hold for long enough (a second and more, against the
// tenths of a second queues take at the loads worth predicting) that the
// system settles at it, so the mixture is that of the steady states.
// When timed is true, one follows a speed over time itself (a simulator):
// hosts with a speed window (model.CPU.SpeedWindow) are then left to it
// with their variation, and only the others are mixed; where the mixture
// is unstable (the load more than the slowest speed can serve), those are
// given FallbackSpeedWindow and left to one as well, and the result is
// one's when it is stable. The scenario with the first varied host at its
// slowest is solved first, and an unstable scenario ends the others (the
// mixture is unstable then). one is also told how many scenarios it
// solved before and their number, for progress reports.
func SolveVaried(ctx context.Context, m *model.Model, timed bool, one func(ctx context.Context, m *model.Model, scenario, of int) (*Result, error)) (*Result, error) {
	var hosts []varied
	for _, h := range m.Hosts {
		if h.CPU.SpeedVariation > 0 && !(timed && h.CPU.VariesOverTime()) {
			hosts = append(hosts, varied{host: h.Name, speed: h.CPU.Speed, mult: SpeedMultipliers(h.CPU.SpeedVariation)})
		}
	}
	if len(hosts) == 0 {
		return one(ctx, m, 0, 1)
	}
	// The scenario in which the first varied host is at its slowest goes
	// first: where it is unstable the mixture is too, and the others
	// need not be solved.
	order := make([]int, 0, SpeedScenarios)
	for j := range SpeedScenarios {
		if stratum(0, j) == SpeedScenarios-1 {
			order = append([]int{j}, order...)
		} else {
			order = append(order, j)
		}
	}
	results := make([]*Result, SpeedScenarios)
	for k, j := range order {
		c, err := m.Clone()
		if err != nil {
			return nil, fmt.Errorf("speed variation: %w", err)
		}
		for i, v := range hosts {
			h := c.Host(v.host)
			h.CPU.Speed = v.speed / v.mult[stratum(i, j)]
			h.CPU.SpeedVariation = 0
		}
		res, err := one(ctx, c, k, SpeedScenarios)
		if err != nil {
			return nil, err
		}
		if !res.Stable {
			results = []*Result{res}
			break
		}
		results[j] = res
	}
	out := Mix(results)
	var parts []string
	for _, v := range hosts {
		h := m.Host(v.host)
		parts = append(parts, fmt.Sprintf("%s (speed_variation %.3g: ×%.3g to ×%.3g of its speed)",
			v.host, h.CPU.SpeedVariation, 1/v.mult[len(v.mult)-1], 1/v.mult[0]))
	}
	speeds := fmt.Sprintf("%d equally likely CPU speeds of %s, each taken to last long enough for the system to settle", SpeedScenarios, strings.Join(parts, ", "))
	if out.Stable {
		out.Warnings = append(out.Warnings, "averaged over "+speeds)
		return out, nil
	}
	if timed {
		// A speed at which the system cannot settle cannot hold until it
		// does: follow the speeds over time instead, a new one every
		// FallbackSpeedWindow, where a backlog built while a host is slow
		// drains when it is fast.
		c, err := m.Clone()
		if err != nil {
			return nil, fmt.Errorf("speed variation: %w", err)
		}
		for _, v := range hosts {
			c.Host(v.host).CPU.SpeedWindow = FallbackSpeedWindow
		}
		res, err := one(ctx, c, 0, 1)
		if err != nil {
			return nil, err
		}
		if res.Stable {
			res.Warnings = append(res.Warnings, fmt.Sprintf("unstable at the slowest of %s; simulated instead as a speed redrawn every %s (speed_window), so that a backlog built while a host is slow drains when it is fast", speeds, model.FormatDuration(FallbackSpeedWindow)))
			return res, nil
		}
	}
	out.Warnings = append(out.Warnings, "unstable at the slowest of "+speeds+"; with a speed_window the simulator follows the speed over time instead, and a backlog built while a host is slow drains when it is fast")
	return out, nil
}

// FallbackSpeedWindow is how long one speed holds, in seconds, where a
// timed solver follows a host's speed variation over time because the
// system cannot settle at its slowest speed (SolveVaried): the windows of
// one second over which extraction measures the variation.
const FallbackSpeedWindow = 1.0

// Mix combines the results of equally likely steady states of one model
// (the scenarios of SolveVaried) into one: throughputs, utilizations,
// busy servers and queue lengths are the scenarios' means; response and
// waiting times are mixtures, each scenario's weighted by its throughput
// (for waits, equally), with confidence half-widths combined as those of
// independent estimates. Percentiles are those of the mixture of the
// scenarios' distributions, each distribution read from its percentiles
// (50, 90, 95 and 99) with the logarithm of its survival function linear
// between them and beyond the last, from zero at zero: exact for
// exponential distributions, an interpolation otherwise. If a scenario
// is unstable, the mixture is too, and Mix returns (a copy of) the first
// unstable one. The warnings are the union of the scenarios': the middle
// scenario's first, then those of the others that say something else than
// a warning already kept with other figures.
func Mix(results []*Result) *Result {
	if len(results) == 1 {
		return results[0]
	}
	var warnings []string
	seen := map[string]bool{}
	for i := range results {
		for _, w := range results[(len(results)/2+i)%len(results)].Warnings {
			if key := figures.ReplaceAllString(w, "#"); !seen[key] {
				seen[key] = true
				warnings = append(warnings, w)
			}
		}
	}
	for _, r := range results {
		if !r.Stable {
			out := *r
			out.Warnings = warnings
			return &out
		}
	}
	mid := results[len(results)/2]
	out := &Result{
		Perfcast: mid.Perfcast, Model: mid.Model, Solver: mid.Solver, Stable: true,
		Bottleneck: mid.Bottleneck, Warnings: warnings, Extra: mid.Extra,
		Workloads:  map[string]*WorkloadResult{},
		Operations: map[string]*OperationResult{},
		Resources:  map[string]*ResourceResult{},
	}
	n := float64(len(results))
	for name := range mid.Workloads {
		ws := gather(results, func(r *Result) *WorkloadResult { return r.Workloads[name] })
		if ws == nil {
			continue
		}
		x := make([]float64, len(ws))
		w := &WorkloadResult{}
		for j, s := range ws {
			x[j] = s.Throughput
			w.Throughput += s.Throughput / n
			w.Dropped += s.Dropped / n
		}
		w.ThroughputCI95 = meanCI(ws, func(s *WorkloadResult) *[2]float64 { return s.ThroughputCI95 })
		w.ResponseTime = *mixOf(ws, x, func(s *WorkloadResult) *Times { return &s.ResponseTime })
		w.CompletionTime = mixOf(ws, x, func(s *WorkloadResult) *Times { return s.CompletionTime })
		out.Workloads[name] = w
	}
	for name := range mid.Operations {
		os := gather(results, func(r *Result) *OperationResult { return r.Operations[name] })
		if os == nil {
			continue
		}
		x := make([]float64, len(os))
		o := &OperationResult{}
		for j, s := range os {
			x[j] = s.Throughput
			o.Throughput += s.Throughput / n
		}
		o.ResponseTime = *mixOf(os, x, func(s *OperationResult) *Times { return &s.ResponseTime })
		o.Span = mixOf(os, x, func(s *OperationResult) *Times { return s.Span })
		out.Operations[name] = o
	}
	for name := range mid.Resources {
		rs := gather(results, func(r *Result) *ResourceResult { return r.Resources[name] })
		if rs == nil {
			continue
		}
		o := &ResourceResult{}
		var queue float64
		queued := 0
		for _, s := range rs {
			o.Utilization += s.Utilization / n
			o.Busy += s.Busy / n
			if s.QueueLength != nil {
				queue += *s.QueueLength / n
				queued++
			}
		}
		o.UtilizationCI95 = meanCI(rs, func(s *ResourceResult) *[2]float64 { return s.UtilizationCI95 })
		if len(rs[0].PerReplica) > 0 {
			o.PerReplica = make([]float64, len(rs[0].PerReplica))
			for _, s := range rs {
				for i := range min(len(s.PerReplica), len(o.PerReplica)) {
					o.PerReplica[i] += s.PerReplica[i] / n
				}
			}
		}
		o.Wait = mixOf(rs, nil, func(s *ResourceResult) *Times { return s.Wait })
		if queued == len(rs) {
			o.QueueLength = Float(queue)
		}
		out.Resources[name] = o
	}
	if mid.SpeedFactors != nil {
		out.SpeedFactors = map[string]float64{}
		for _, r := range results {
			for h, f := range r.SpeedFactors {
				out.SpeedFactors[h] += f / n
			}
		}
	}
	if mid.Sim != nil {
		s := *mid.Sim
		s.Replications, s.Requests, s.Events, s.SimTime, s.WallSeconds = 0, 0, 0, 0, 0
		for _, r := range results {
			if r.Sim == nil {
				continue
			}
			s.Replications += r.Sim.Replications
			s.Requests += r.Sim.Requests
			s.Events += r.Sim.Events
			s.SimTime += r.Sim.SimTime
			s.WallSeconds += r.Sim.WallSeconds
			s.WarmupCut = max(s.WarmupCut, r.Sim.WarmupCut)
		}
		out.Sim = &s
	}
	if mid.MVA != nil {
		a := *mid.MVA
		a.Iterations, a.Converged, a.Residual = 0, true, 0
		for _, r := range results {
			if r.MVA == nil {
				continue
			}
			a.Iterations += r.MVA.Iterations
			a.Converged = a.Converged && r.MVA.Converged
			a.Residual = max(a.Residual, r.MVA.Residual)
		}
		out.MVA = &a
	}
	return out
}

// gather returns the entry get reads from each result, or nil when a
// result lacks it.
func gather[T any](results []*Result, get func(*Result) *T) []*T {
	out := make([]*T, len(results))
	for j, r := range results {
		if out[j] = get(r); out[j] == nil {
			return nil
		}
	}
	return out
}

// mixOf mixes the times get reads from the scenarios' items with weights
// w (nil: equal), or returns nil when an item has none.
func mixOf[T any](items []*T, w []float64, get func(*T) *Times) *Times {
	ts := make([]Times, len(items))
	for j, it := range items {
		t := get(it)
		if t == nil {
			return nil
		}
		ts[j] = *t
	}
	m := mixTimes(ts, w)
	return &m
}

// figures matches the numbers in a warning, so that warnings differing
// only in them count as one.
var figures = regexp.MustCompile(`[0-9]+(\.[0-9]+)?(e[-+]?[0-9]+)?`)

// meanCI averages the scenarios' confidence bounds, when all have them.
func meanCI[T any](items []T, ci func(T) *[2]float64) *[2]float64 {
	var sum [2]float64
	for _, it := range items {
		c := ci(it)
		if c == nil {
			return nil
		}
		sum[0] += c[0] / float64(len(items))
		sum[1] += c[1] / float64(len(items))
	}
	return &sum
}

// mixTimes mixes the scenarios' times with weights w (nil: equal).
func mixTimes(ts []Times, w []float64) Times {
	if w == nil {
		w = make([]float64, len(ts))
		for i := range w {
			w[i] = 1
		}
	}
	total := 0.0
	for _, x := range w {
		total += x
	}
	if !(total > 0) {
		w = make([]float64, len(ts))
		for i := range w {
			w[i] = 1
		}
		total = float64(len(ts))
	}
	var out Times
	var half2 float64
	withCI := true
	for i, t := range ts {
		p := w[i] / total
		out.Mean += p * t.Mean
		if t.CI95 == nil {
			withCI = false
			continue
		}
		h := (t.CI95[1] - t.CI95[0]) / 2
		half2 += p * p * h * h
	}
	if withCI {
		h := math.Sqrt(half2)
		out.CI95 = &[2]float64{out.Mean - h, out.Mean + h}
	}
	curves := make([]survival, len(ts))
	for i, t := range ts {
		if t.P50 == nil || t.P90 == nil || t.P95 == nil || t.P99 == nil {
			return out
		}
		curves[i] = newSurvival(*t.P50, *t.P90, *t.P95, *t.P99)
	}
	q := func(p float64) *float64 {
		return Float(mixQuantile(curves, w, total, p))
	}
	out.P50, out.P90, out.P95, out.P99 = q(0.5), q(0.9), q(0.95), q(0.99)
	return out
}

// survival is a distribution read from four percentiles: the logarithm
// of its survival function, linear in time between the knots (zero at
// zero) and beyond the last with the last piece's slope.
type survival struct{ t, l [5]float64 }

func newSurvival(p50, p90, p95, p99 float64) survival {
	var s survival
	s.t = [5]float64{0, p50, p90, p95, p99}
	s.l = [5]float64{0, math.Log(0.5), math.Log(0.1), math.Log(0.05), math.Log(0.01)}
	for i := 1; i < 5; i++ {
		// Keep the knots in order when percentiles tie or cross.
		s.t[i] = max(s.t[i], s.t[i-1])
	}
	return s
}

// logS is the logarithm of the survival function at t.
func (s survival) logS(t float64) float64 {
	i := 1
	for i < 4 && t > s.t[i] {
		i++
	}
	dt := s.t[i] - s.t[i-1]
	if !(dt > 0) {
		if t < s.t[i] {
			return s.l[i-1]
		}
		if i == 4 {
			return math.Inf(-1)
		}
		return s.l[i]
	}
	return s.l[i-1] + (s.l[i]-s.l[i-1])*(t-s.t[i-1])/dt
}

// mixQuantile is the p-quantile of the mixture of curves with weights w
// summing to total, by bisection.
func mixQuantile(curves []survival, w []float64, total, p float64) float64 {
	surv := func(t float64) float64 {
		s := 0.0
		for i, c := range curves {
			s += w[i] / total * math.Exp(c.logS(t))
		}
		return s
	}
	lo, hi := 0.0, 0.0
	for _, c := range curves {
		hi = max(hi, c.t[4])
	}
	for surv(hi) > 1-p {
		hi *= 2
		if hi > 1e12 || hi == 0 {
			return hi
		}
	}
	for range 200 {
		mid := (lo + hi) / 2
		if mid == lo || mid == hi {
			break
		}
		if surv(mid) > 1-p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}
