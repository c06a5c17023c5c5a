package mva

import (
	"math"

	"github.com/perfcast/perfcast/model"
)

// arrivalSCVs returns, per class and station (arrivals at one instance,
// per visit) and per class and pool (per acquisition at one copy), the
// squared coefficient of variation of the gaps between the open classes'
// arrivals there, for the GI/G/c waits of the open queues (network.solve,
// fcfsWait): 1, Poisson's, for the closed classes and wherever nothing
// better is known. rates are the classes' arrival rates.
//
// It follows each request's flow through the model one step at a time,
// as Whitt's queueing network analyzer follows flows between stations,
// from the squared cv of the workload's gaps (model.Open.CV) at its first
// call:
//   - a host whose replicas take calls in turn (round-robin) hands each
//     every r-th call of a flow, gaps summed over r: ca²/r; a random pick
//     (and least-busy, taken as one) thins it: ca²/r + 1 − 1/r; the calls
//     of a replicated caller's replicas merge at the callee's balancer
//     (the simulator's picks a replica for every call, from the callee's
//     host as well): Poisson's;
//   - a visit to a station leaves with 1 + (1 − ρ²)(ca² − 1) +
//     ρ²(cs² − 1)/√m, cs² the step's service's and ρ the share of the
//     station's m servers this step's visits keep busy (a short step on a
//     busy CPU shifts its flow more than it smooths it); where that
//     leaves it burstier than Poisson's, the excess is in doubt (whole
//     for a step that keeps the servers busy burstShare or more);
//   - a branch taken with probability p thins the flow: p·ca² + 1 − p;
//   - a time of variance σ² (a delay; a call to another host, by its
//     steps' variance without waits, back at the caller's replica)
//     spreads gaps of mean g: 1 + (ca² − 1)/(1 + σ²/g²), nothing for a
//     fixed delay, Poisson's for one far longer than the gaps;
//   - inside a loop of more than one iteration on average (its later
//     iterations follow the earlier ones' visits), the flow is taken as
//     Poisson's; so are the workload's later calls (each after the
//     previous one's response).
//
// Pool acquisitions take the flow's at the point of the hold, at one copy
// of a pool placed on the component's host (a pool of one copy on a
// replicated host sees the replicas' flows merged: Poisson's).
//
// The first visits after a balancer's split are the split's, exactly for
// renewal arrivals; every rule after them approximates. With how
// doubtToward or doubtAway, each visit's squared cv is moved toward 1 (not
// past it) or away from it by as much as the approximating rules moved it
// on its way: arrivalMisjudged solves the model all three ways to weigh
// what rides on them.
func arrivalSCVs(b *built, rates []float64, how doubt) (stations, pools [][]float64) {
	stations = matrix(len(b.classes), len(b.stations))
	pools = matrix(len(b.classes), len(b.pools))
	for _, row := range stations {
		for k := range row {
			row[k] = 1
		}
	}
	for _, row := range pools {
		for p := range row {
			row[p] = 1
		}
	}
	for c, ci := range b.classes {
		w := ci.w
		if w.Open == nil || !(rates[c] > 0) {
			continue
		}
		ca2 := 1.0
		if cv := w.Open.CV; cv > 0 && !math.IsInf(cv, 0) {
			ca2 = cv * cv
		}
		f := &flowWalk{b: b, rate: rates[c], w: w, doubt: how, fixed: map[string]string{},
			visits: make([]float64, len(b.stations)), weighted: make([]float64, len(b.stations)),
			work: make([]float64, len(b.stations)), workSq: make([]float64, len(b.stations)),
			acqs: make([]float64, len(b.pools)), acqWeighted: make([]float64, len(b.pools))}
		f.top(w.Steps, ca2)
		for k := range b.stations {
			if f.visits[k] > 0 {
				// As many streams as visits of equal demand make its work.
				n := f.visits[k]
				if f.workSq[k] > 0 {
					n = f.work[k] * f.work[k] / f.workSq[k]
				}
				stations[c][k] = merged(f.weighted[k]/f.visits[k], n, how)
			}
		}
		for p := range b.pools {
			if f.acqs[p] > 0 {
				pools[c][p] = merged(f.acqWeighted[p]/f.acqs[p], f.acqs[p], how)
			}
		}
	}
	return stations, pools
}

// merged is the squared cv a of the visits per request a class makes to
// one queue, their squared cvs averaged by their rates, n of them where
// they are equal (at a station, as many as would make its work at one
// demand: (Σd)²/Σd² over the visits' demands d, so that a short visit
// beside a long one counts little): one flow's visits merged are not a
// renewal flow, so with how set a is moved (toward 1 or away from it) by
// |a − 1|(1 − 1/n) as well.
func merged(a, n float64, how doubt) float64 {
	if n <= 1 {
		return a
	}
	return arrivalFlow{a: a, doubt: math.Abs(a-1) * (1 - 1/n)}.under(how)
}

// burstShare is the share of a station's servers a step's visits keep
// busy from which arrivals burstier than Poisson's leave it with their
// burstiness in doubt whole; below it, in doubt by the square of the
// step's share over it.
const burstShare = 0.05

// arrivalFlow is a request flow at one point of the model: the squared
// cv a of its gaps at one copy, and doubt, how far approximating rules
// moved a on its way there.
type arrivalFlow struct {
	a, doubt float64
}

// moved returns the flow with a replaced by an approximating rule's x.
func (fl arrivalFlow) moved(x float64) arrivalFlow {
	return arrivalFlow{a: x, doubt: fl.doubt + math.Abs(x-fl.a)}
}

// under is a as doubt moves it: not at all for doubtNone; by doubt
// toward 1 (not past it) for doubtToward; away from 1 (not below 0) for
// doubtAway.
func (fl arrivalFlow) under(how doubt) float64 {
	d := fl.doubt
	switch how {
	case doubtNone:
		return fl.a
	case doubtAway:
		d = -d
	}
	if fl.a < 1 {
		return math.Max(math.Min(fl.a+d, 1), 0)
	}
	return math.Max(fl.a-d, 1)
}

// doubt says which way arrivalSCVs moves the squared cvs its
// approximations gave: not at all, toward Poisson's 1, or away from it.
type doubt int

const (
	doubtNone doubt = iota
	doubtToward
	doubtAway
)

// flowWalk carries one open class's flow of requests through the model
// for arrivalSCVs, summing per station and pool the visits (acquisitions)
// and their squared cvs weighted by them.
type flowWalk struct {
	b     *built
	rate  float64
	w     *model.Workload
	doubt doubt
	fixed map[string]string
	// visits[k] and weighted[k] are the visits per request to station k
	// and the sum of their arrivals' squared cvs; acqs and acqWeighted the
	// same for the pools; work[k] and workSq[k] sum the visits' mean
	// demands and their squares.
	visits, weighted  []float64
	work, workSq      []float64
	acqs, acqWeighted []float64
}

// top walks the workload's own steps: its first call carries the
// workload's arrivals, later ones Poisson's.
func (f *flowWalk) top(steps []model.Step, ca2 float64) {
	fl := arrivalFlow{a: ca2}
	for i := range steps {
		fl, _ = f.steps(steps[i:i+1], nil, 1, 1, fl, 0)
		if steps[i].Kind == model.StepCall || steps[i].Kind == model.StepSend {
			fl = arrivalFlow{a: 1}
		}
	}
}

// steps walks steps run by component c (nil for the workload) on a host
// of the given copies, weight times per request, entered with flow fl at
// one copy. It returns the flow after them and the variance of the time
// they take without waits.
func (f *flowWalk) steps(steps []model.Step, c *model.Component, copies int, weight float64, fl arrivalFlow, depth int) (arrivalFlow, float64) {
	var v float64
	if weight == 0 || depth > maxDepth {
		return fl, v
	}
	for i := range steps {
		s := &steps[i]
		switch s.Kind {
		case model.StepCPU, model.StepDisk:
			k, speed := f.b.stationOf(s, c)
			if k < 0 {
				continue
			}
			mean, sv := s.Demand.Mean()/speed, s.Demand.Var()/(speed*speed)
			f.visits[k] += weight
			f.weighted[k] += weight * fl.under(f.doubt)
			f.work[k] += weight * mean
			f.workSq[k] += weight * mean * mean
			v += sv
			cs2 := 1.0
			if mean > 0 {
				cs2 = sv / (mean * mean)
			}
			st := f.b.stations[k]
			m := float64(max(st.servers, 1))
			rho := math.Min(f.rate*weight*mean/(m*float64(st.copies)), 1)
			out := fl.moved(math.Max(1+(1-rho*rho)*(fl.a-1)+rho*rho*(cs2-1)/math.Sqrt(m), 0))
			if out.a > 1 {
				// How much of a burst a queue passes on is not known:
				// the departure rule holds it nearly whole at light
				// load, where a processor-sharing CPU spreads it.
				out.doubt += (out.a - 1) * math.Min(1, (rho/burstShare)*(rho/burstShare))
			}
			fl = out
		case model.StepDelay:
			v += s.Demand.Var()
			fl = f.spread(fl, s.Demand.Var(), copies, weight)
		case model.StepCall, model.StepSend:
			op := f.b.m.Operation(s.Target)
			if op == nil {
				continue
			}
			callee := f.b.m.Component(op.Component)
			if callee == nil {
				continue
			}
			h := f.b.m.Host(callee.Host)
			r := f.b.replicas(callee.Host)
			in := arrivalFlow{a: split(h, fl.a), doubt: fl.doubt / float64(r)}
			if copies > 1 {
				// The replicas' calls merge at the callee.
				in = arrivalFlow{a: split(h, 1)}
			}
			if tp, ok := f.b.poolIdx[model.ThreadsResource(op.Component)]; ok {
				f.acqs[tp] += weight
				f.acqWeighted[tp] += weight * in.under(f.doubt)
			}
			out, cv := f.steps(op.Steps, callee, r, weight, in, depth+1)
			if s.Kind == model.StepSend {
				continue
			}
			v += cv
			if copies == 1 && r == 1 {
				fl = out
			} else {
				// Back at this copy after the callee's time.
				fl = f.spread(fl, cv, copies, weight)
			}
		case model.StepLoop:
			n := s.Times.Mean()
			if n > 1 {
				_, lv := f.steps(s.Steps, c, copies, weight*n, fl.moved(1), depth)
				v += n * lv
				fl = fl.moved(1)
			} else {
				var lv float64
				fl, lv = f.steps(s.Steps, c, copies, weight*n, fl, depth)
				v += n * lv
			}
		case model.StepBranch:
			var bv float64
			fl, bv = f.arms(c, copies, weight, fl, depth, func(arm func(body []model.Step, p float64)) {
				for _, br := range s.Branches {
					arm(br.Steps, br.P)
				}
			})
			v += bv
		case model.StepSwitch:
			var bv float64
			fl, bv = f.arms(c, copies, weight, fl, depth, func(arm func(body []model.Step, p float64)) {
				forCases(f.w, s, f.fixed, arm)
			})
			v += bv
		case model.StepParallel:
			var out arrivalFlow
			var pv float64
			for _, list := range s.Parallel {
				lf, lv := f.steps(list, c, copies, weight, fl, depth)
				if lf.a > out.a {
					out = lf
				}
				pv = math.Max(pv, lv)
			}
			if len(s.Parallel) > 0 {
				fl = out
				v += pv
			}
		case model.StepHold, model.StepAcquire:
			if p, ok := f.b.poolIdx[s.Resource]; ok {
				at := fl
				switch pl := f.b.pools[p]; {
				case pl.copies == copies:
				case pl.parts > 1 && pl.copies == copies*pl.parts:
					// A partitioned resource's units are picked at random.
					n := float64(pl.parts)
					at = arrivalFlow{a: fl.a/n + 1 - 1/n, doubt: fl.doubt / n}
				default:
					at = arrivalFlow{a: 1}
				}
				f.acqs[p] += weight
				f.acqWeighted[p] += weight * at.under(f.doubt)
			}
			var hv float64
			fl, hv = f.steps(s.Steps, c, copies, weight, fl, depth)
			v += hv
		}
	}
	return fl, v
}

// spread is flow fl at one of the given copies, weight times per request,
// after a time of variance v: gaps of mean g spread by it to
// 1 + (a − 1)/(1 + v/g²).
func (f *flowWalk) spread(fl arrivalFlow, v float64, copies int, weight float64) arrivalFlow {
	gap := float64(copies) / (f.rate * weight)
	if !(v > 0) || !(gap > 0) || math.IsInf(gap, 0) {
		return fl
	}
	return fl.moved(1 + (fl.a-1)/(1+v/(gap*gap)))
}

// split is the squared cv of the calls each replica of host h gets of a
// flow of squared cv a: every r-th in turn (round-robin), a/r; a random
// pick (and least-busy, taken as one) thins it, a/r + 1 − 1/r.
func split(h *model.Host, a float64) float64 {
	if h == nil || h.Replicas <= 1 {
		return a
	}
	r := float64(h.Replicas)
	if h.Balancer == "" || h.Balancer == model.RoundRobin {
		return a / r
	}
	return a/r + 1 - 1/r
}

// arms walks the bodies each enters with probability p, thinning the flow
// to each (p·a + 1 − p). It returns the flow the arms merge back into, a
// moved by what each arm did to its part, weighted by its probability,
// and the arms' variance weighted alike.
func (f *flowWalk) arms(c *model.Component, copies int, weight float64, fl arrivalFlow, depth int, each func(arm func(body []model.Step, p float64))) (arrivalFlow, float64) {
	out, v := fl, 0.0
	each(func(body []model.Step, p float64) {
		if p <= 0 {
			return
		}
		in := arrivalFlow{a: p*fl.a + 1 - p, doubt: p * fl.doubt}
		bf, bv := f.steps(body, c, copies, weight*p, in, depth)
		out.a += p * (bf.a - in.a)
		out.doubt += p * (bf.doubt - in.doubt)
		v += p * bv
	})
	out.a = math.Max(out.a, 0)
	return out, v
}
