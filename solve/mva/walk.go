package mva

import (
	"math"

	"github.com/perfcast/perfcast/model"
)

// timeWalk computes, for one request of one class, the mean response time
// from the per-visit times at stations and the waits at pools, composing
// steps as the model says: sums for sequences, mean counts for loops,
// probabilities for branches and switches, the mean of the maximum for
// parallel lists (independent gamma-distributed list times), nothing for sends
// (whose work is walked for the load it causes only). Along the way it
// accumulates, per pool, the expected time the request holds it and its
// second moment, and per operation, the expected number of executions and
// their total time.
//
// Variances are composed alongside the means, as a guide to how variable
// holding times are: steps in sequence are taken as independent, a visit's
// queueing delay (its time beyond its demand) and a wait for a pool as
// exponential, the demand as stretched by the station's mean stretch, and
// parallel lists as independent (see maxMoments).
type timeWalk struct {
	b *built
	w *model.Workload
	// visitTime returns the mean time of one visit to station k with a mean
	// demand d, made while pool g is the tightest limited pool the request
	// holds (len(b.pools) for none), and the second moment of the factor by
	// which the visit stretches its demand where that is known (0
	// elsewhere).
	visitTime func(k int, d float64, g int) (mean, square float64)
	// wait[p] is the mean wait per acquisition of pool p; again[p] is
	// what an acquisition that follows the request's own release at once
	// waits beyond it, and meanHold[p] the pool's mean holding time, over
	// which that difference fades with the time in between (see reentry).
	wait, again, meanHold []float64
	// in is the tightest limited pool held at the point walked, and
	// holds[p] counts the holds of pool p the request is in there (work
	// sent runs in none of its sender's).
	in    int
	holds []int
	// innerOf and innerWait are state.innerOf and state.innerWait: a
	// hold of pool q made while holding innerOf[q] waits innerWait[q].
	innerOf   []int
	innerWait []float64
	// Outputs, per request.
	held   []float64 // held[p]: Σ executions × time held
	heldSq []float64 // heldSq[p]: Σ executions × second moment of the time held
	loose  []bool    // loose[p]: some of held[p] is between an acquire and a release
	// For joins, outside sends: per pool, Σ acquisitions × mean wait,
	// Σ acquisitions, Σ acquisitions × time held less the waits for pools
	// inside it (the part that lists holding it in line take one after
	// another) and × its variance; waitSum is Σ waited.
	waited, taken, kept, keptVar []float64
	waitSum                      float64
	// whole[p]: Σ acquisitions × time held, waits inside included.
	whole []float64
	// returned[p]: Σ acquisitions × the wait beyond wait[p] of those that
	// take p again after letting it go (see reentry).
	returned []float64
	// innerTaken[q], innerHeld[q] and innerHeldSq[q]: Σ holds of q made
	// while holding innerOf[q], × the time held and × its second moment.
	innerTaken, innerHeld, innerHeldSq []float64
	// sent counts the sends the point walked is in; from is the tightest
	// limited pool the innermost of them was sent from, and after the
	// pool its sender had let go just before it, with nothing timed in
	// between (len(pools) for none; see sentAhead).
	sent, from, after int
	// released is the limited pool the step walked follows the release
	// of, with only sends in between (len(pools) for none).
	released int
	// sentLog records, in the order walked, each acquisition of a pool q
	// by work sent while the sender held pool p as its tightest, or just
	// after it let p go: index p·P + q, weight × time held without the
	// waits inside (see join).
	sentLog []sentHold
	// together[p]: the lists of a parallel step acquire pool p together
	// (see join).
	together []bool
	// batched[p]: Σ parallel steps × A·(A − 1)·h², for the A acquisitions
	// of pool p their lists make together beyond its units less one, each
	// held for h (as in kept).
	batched []float64
	opRuns  map[string]float64
	opTotal map[string]float64
	// opSpan sums, for operations whose span is shorter than their
	// response time (see spanWait), the span's times.
	opSpan map[string]float64
	fixed  map[string]string
}

// sentHold is one entry of timeWalk.sentLog; behind marks work sent just
// after the release of the pool rather than while holding it.
type sentHold struct {
	at     int
	held   float64
	behind bool
}

// moments are the mean and the variance of a time.
type moments struct{ mean, vari float64 }

// second is the second moment.
func (m moments) second() float64 { return m.vari + m.mean*m.mean }

// waitMoments are the moments of a wait with mean w, taken as exponential.
func waitMoments(w float64) moments { return moments{w, w * w} }

func (m moments) plus(o moments) moments { return moments{m.mean + o.mean, m.vari + o.vari} }

// less returns m without waits totalling waited over weight executions
// (taken as exponential).
func (m moments) less(waited, weight float64) moments {
	if weight <= 0 || waited <= 0 {
		return m
	}
	w := waited / weight
	return moments{math.Max(m.mean-w, 0), math.Max(m.vari-w*w, 0)}
}

func newTimeWalk(b *built, w *model.Workload) *timeWalk {
	P := len(b.pools)
	return &timeWalk{b: b, w: w, holds: make([]int, P), wait: make([]float64, P), again: make([]float64, P), meanHold: make([]float64, P), returned: make([]float64, P), innerTaken: make([]float64, P), innerHeld: make([]float64, P), innerHeldSq: make([]float64, P), held: make([]float64, P), heldSq: make([]float64, P),
		loose: make([]bool, P), waited: make([]float64, P), taken: make([]float64, P), kept: make([]float64, P), keptVar: make([]float64, P), whole: make([]float64, P), together: make([]bool, P), batched: make([]float64, P), opRuns: map[string]float64{}, opTotal: map[string]float64{}, opSpan: map[string]float64{}, fixed: map[string]string{}}
}

// reset clears the outputs.
func (t *timeWalk) reset() {
	t.sentLog = t.sentLog[:0]
	for _, v := range [][]float64{t.held, t.heldSq, t.waited, t.taken, t.kept, t.keptVar, t.whole, t.batched, t.returned, t.innerTaken, t.innerHeld, t.innerHeldSq} {
		clear(v)
	}
	clear(t.loose)
	clear(t.together)
	t.waitSum = 0
	clear(t.opRuns)
	clear(t.opTotal)
	clear(t.opSpan)
}

// request walks the workload's steps and returns its mean response time.
func (t *timeWalk) request() float64 {
	t.reset()
	t.in, t.from, t.after, t.released = len(t.b.pools), len(t.b.pools), len(t.b.pools), len(t.b.pools)
	clear(t.holds)
	r, _ := t.list(t.w.Steps, nil, 1, 0)
	return r.mean
}

// holdSecond returns the second moment of the time pool p is held per
// acquisition with mean h, a acquisitions per request: as walked where
// every acquisition is scoped, as exponential otherwise.
func (t *timeWalk) holdSecond(p int, a, h float64) float64 {
	if t.loose[p] || t.heldSq[p] <= 0 {
		return 2 * h * h
	}
	return t.heldSq[p] / a
}

// list returns the moments of one execution of steps run by component c
// (nil at the workload level) executed `weight` times per request, and the
// change in the held units of pools acquired or released in it and not
// balanced within it (unscoped acquire and release).
func (t *timeWalk) list(steps []model.Step, c *model.Component, weight float64, depth int) (moments, map[int]float64) {
	if depth > maxDepth {
		return moments{}, nil
	}
	var total moments
	var held map[int]float64
	P := len(t.b.pools)
	outer := t.released
	t.released = P
	for i := range steps {
		s := &steps[i]
		if s.Kind != model.StepSend {
			t.released = P
		}
		dt, delta := t.step(s, c, weight, depth)
		if p, ok := t.b.poolIdx[s.Resource]; ok && s.Kind == model.StepHold && t.b.pools[p].limited() {
			t.released = p
		}
		total = total.plus(dt)
		// Time spent while holding an unscoped acquisition counts
		// toward that pool's holding time.
		for p, h := range held {
			if h > 0 {
				t.held[p] += weight * h * dt.mean
				t.loose[p] = true
			}
		}
		if len(delta) > 0 && held == nil {
			held = map[int]float64{}
		}
		for p, d := range delta {
			held[p] += d
		}
	}
	t.released = outer
	return total, held
}

// mixture returns the moments of a time that is x_i with probability p_i,
// from Σp_i·mean_i and Σp_i·second_i.
func mixture(mean, second float64) moments {
	return moments{mean, math.Max(second-mean*mean, 0)}
}

func (t *timeWalk) step(s *model.Step, c *model.Component, weight float64, depth int) (moments, map[int]float64) {
	switch s.Kind {
	case model.StepCPU, model.StepDisk:
		k, speed := t.b.stationOf(s, c)
		if k < 0 {
			return moments{}, nil
		}
		d := s.Demand.Mean() / speed
		r, f2 := t.visitTime(k, d, t.in)
		if f2 > 0 {
			// The demand D and its stretch F independent: E[(DF)²] =
			// E[D²]·E[F²].
			second := (s.Demand.Var()/(speed*speed) + d*d) * f2
			return moments{mean: r, vari: math.Max(second-r*r, 0)}, nil
		}
		m := moments{mean: r, vari: s.Demand.Var() / (speed * speed)}
		if d > 0 {
			m.vari *= (r / d) * (r / d)
		}
		return m.plus(moments{vari: (r - d) * (r - d)}), nil
	case model.StepDelay:
		return moments{s.Demand.Mean(), s.Demand.Var()}, nil
	case model.StepCall:
		return t.call(s.Target, weight, depth, false), nil
	case model.StepSend:
		t.call(s.Target, weight, depth, true)
		return moments{}, nil
	case model.StepLoop:
		n, nv := s.Times.Mean(), s.Times.Var()
		r, delta := t.list(s.Steps, c, weight*n, depth)
		return moments{n * r.mean, n*r.vari + nv*r.mean*r.mean}, delta
	case model.StepBranch:
		var mean, second float64
		var delta map[int]float64
		for _, br := range s.Branches {
			rb, db := t.list(br.Steps, c, weight*br.P, depth)
			mean += br.P * rb.mean
			second += br.P * rb.second()
			delta = addScaled(delta, db, br.P)
		}
		return mixture(mean, second), delta
	case model.StepSwitch:
		var mean, second float64
		var delta map[int]float64
		forCases(t.w, s, t.fixed, func(body []model.Step, p float64) {
			rb, db := t.list(body, c, weight*p, depth)
			mean += p * rb.mean
			second += p * rb.second()
			delta = addScaled(delta, db, p)
		})
		return mixture(mean, second), delta
	case model.StepParallel:
		lists := make([]moments, len(s.Parallel))
		var delta map[int]float64
		outer := t.in
		t.in = len(t.b.pools)
		j := t.newJoin(len(s.Parallel))
		for i, l := range s.Parallel {
			var d map[int]float64
			j.start()
			lists[i], d = t.list(l, c, weight, depth)
			j.end(i)
			delta = addScaled(delta, d, 1)
		}
		t.in = outer
		return j.join(lists, weight), delta
	case model.StepHold:
		p, ok := t.b.poolIdx[s.Resource]
		outer := t.in
		if ok {
			t.in = t.b.within(t.in, p)
			t.holds[p]++
		}
		before := t.waitSum
		body, delta := t.list(s.Steps, c, weight, depth)
		t.in = outer
		if !ok {
			return body, delta
		}
		t.holds[p]--
		t.held[p] += weight * body.mean
		t.heldSq[p] += weight * body.second()
		if r := t.innerOf[p]; r >= 0 && t.holds[r] > 0 {
			t.innerTaken[p] += weight
			t.innerHeld[p] += weight * body.mean
			t.innerHeldSq[p] += weight * body.second()
		}
		w := t.waitAt(s, p, weight)
		t.acquired(p, w, weight, body.less(t.waitSum-before, weight), body.mean)
		return waitMoments(w).plus(body), delta
	case model.StepAcquire:
		p, ok := t.b.poolIdx[s.Resource]
		if !ok {
			return moments{}, nil
		}
		t.acquired(p, t.wait[p], weight, moments{}, 0)
		return waitMoments(t.wait[p]), map[int]float64{p: 1}
	case model.StepRelease:
		p, ok := t.b.poolIdx[s.Resource]
		if !ok {
			return moments{}, nil
		}
		return moments{}, map[int]float64{p: -1}
	}
	return moments{}, nil
}

// call walks the operation a call or send (async) targets: the wait for a
// thread of its component, then its steps while holding the thread. It
// returns the moments of the operation's response time as its caller sees
// it.
func (t *timeWalk) call(target string, weight float64, depth int, async bool) moments {
	op := t.b.m.Operation(target)
	if op == nil {
		return moments{}
	}
	p := t.b.poolIdx[model.ThreadsResource(op.Component)]
	outer, from, after, holds := t.in, t.from, t.after, t.holds
	if async {
		t.in = len(t.b.pools)
		t.sent++
		t.from, t.after = outer, t.released
		t.holds = make([]int, len(holds))
	}
	t.in = t.b.within(t.in, p)
	t.holds[p]++
	before := t.waitSum
	exec, _ := t.list(op.Steps, t.b.m.Component(op.Component), weight, depth+1)
	t.holds[p]--
	t.in = outer
	if async {
		t.sent--
		t.from, t.after, t.holds = from, after, holds
	}
	t.held[p] += weight * exec.mean
	t.heldSq[p] += weight * exec.second()
	t.acquired(p, t.wait[p], weight, exec.less(t.waitSum-before, weight), exec.mean)
	r := waitMoments(t.wait[p]).plus(exec)
	id := op.ID()
	t.opRuns[id] += weight
	t.opTotal[id] += weight * r.mean
	if q, ok := spanWait(t.b, op, p); ok {
		entry := 0.0
		if q >= 0 {
			entry = t.wait[q]
		}
		t.opSpan[id] += weight * math.Max(exec.mean-entry, 0)
	}
	return r
}

// spanWait reports whether operation op's span is shorter than its
// response time: its component's threads, pool threads, are limited (the
// span starts when the request has one), or its steps begin with a hold of
// a resource taken before spans start (model.Passive.BeforeSpan), whose
// pool q is; q is -1 without such a hold.
func spanWait(b *built, op *model.Operation, threads int) (q int, ok bool) {
	q = -1
	if s := op.Steps; len(s) > 0 && (s[0].Kind == model.StepHold || s[0].Kind == model.StepAcquire) {
		if i, found := b.poolIdx[s[0].Resource]; found && b.pools[i].beforeSpan {
			q = i
		}
	}
	return q, q >= 0 || b.pools[threads].limited()
}

// waitAt returns the mean wait of hold step s for pool p, executed weight
// times per request: the pool's wait, and for the share of executions that
// follow the request's own release of p, the difference that makes (see
// reentry), recorded in returned.
func (t *timeWalk) waitAt(s *model.Step, p int, weight float64) float64 {
	base := t.wait[p]
	if q := t.innerOf[p]; q >= 0 && t.holds[q] > 0 {
		base = t.innerWait[p]
	}
	r, ok := t.b.reentries[s]
	if !ok || t.again[p] == 0 {
		return base
	}
	fade := 0.0
	if h := t.meanHold[p]; h > 0 {
		fade = math.Exp(-r.gap / h)
	}
	w := math.Max(base+r.frac*fade*t.again[p], 0)
	t.returned[p] += weight * (w - base)
	return w
}

// acquired records, outside sends, weight acquisitions of pool p, each
// after a mean wait w and held for a time with moments h (zero where
// unknown: an acquire).
func (t *timeWalk) acquired(p int, w, weight float64, h moments, whole float64) {
	if t.sent > 0 {
		P := len(t.b.pools)
		if t.from < P {
			t.sentLog = append(t.sentLog, sentHold{t.from*P + p, weight * h.mean, false})
		}
		if t.after < P && t.after != t.from {
			t.sentLog = append(t.sentLog, sentHold{t.after*P + p, weight * h.mean, true})
		}
		return
	}
	t.waited[p] += weight * w
	t.waitSum += weight * w
	t.taken[p] += weight
	t.kept[p] += weight * h.mean
	t.keptVar[p] += weight * h.vari
	t.whole[p] += weight * whole
}

// join composes the lists of a parallel step, minding the pools they wait
// for together: lists that start at once and acquire the same limited pool
// find the same queue there (their waits are one wait, not independent
// ones) and then queue behind each other when they outnumber its units.
// For each such pool the lists' times are joined without their waits for
// it, and the largest of those waits is added once. Where the lists'
// acquisitions A outnumber the pool's c units, they are served in rounds:
// the largest over such pools of (A − c)/c mean holds is added, each hold
// with the waits inside it (a later round may wait afresh at a pool inside;
// where the lists still queue there together this overestimates), and the
// holds' variance is left out of the lists (a sum of holds in line does not
// grow with their spread the way a maximum does). The pool sees batches,
// which poolWaits counts through batched, from holds without the waits
// inside them.
type join struct {
	t *timeWalk
	// per list and pool, per request: the walk's waited, taken, kept,
	// keptVar and whole added by the list.
	waited, taken, held, heldVar, whole [][]float64
	// sent[i] is what list i added to the walk's sentLog.
	sent [][]sentHold
	// The walk's totals when the list began.
	before [5][]float64
	mark   int
}

func (t *timeWalk) newJoin(n int) *join {
	P := len(t.b.pools)
	j := &join{t: t, waited: matrix(n, P), taken: matrix(n, P), held: matrix(n, P), heldVar: matrix(n, P), whole: matrix(n, P), sent: make([][]sentHold, n)}
	for k := range j.before {
		j.before[k] = make([]float64, P)
	}
	return j
}

func (j *join) totals() [5][]float64 {
	return [5][]float64{j.t.waited, j.t.taken, j.t.kept, j.t.keptVar, j.t.whole}
}

// start notes the walk's totals before a list.
func (j *join) start() {
	for k, v := range j.totals() {
		copy(j.before[k], v)
	}
	j.mark = len(j.t.sentLog)
}

// end records what list i added.
func (j *join) end(i int) {
	for k, v := range j.totals() {
		out := [5][][]float64{j.waited, j.taken, j.held, j.heldVar, j.whole}[k]
		for p := range v {
			out[i][p] = v[p] - j.before[k][p]
		}
	}
	// The log only grows during a walk, so the entries stay as they are.
	j.sent[i] = j.t.sentLog[j.mark:]
}

// join returns the moments of the parallel step executed weight times per
// request, from its lists' moments.
func (j *join) join(lists []moments, weight float64) moments {
	if weight <= 0 {
		return maxMoments(lists)
	}
	var common moments
	var behind float64
	for p, pl := range j.t.b.pools {
		if !pl.limited() {
			continue
		}
		n := 0
		var taken, held, whole, most float64
		for i := range lists {
			if j.taken[i][p] > 0 {
				n++
				taken += j.taken[i][p]
				held += j.held[i][p]
				whole += j.whole[i][p]
			}
		}
		if n < 2 {
			continue
		}
		j.t.together[p] = true
		units := pl.capacityTotal()
		a := taken / weight
		inLine := a > units
		h := held / taken
		j.t.batched[p] += weight * a * math.Max(a-1, 0) * h * h
		for i := range lists {
			w := j.waited[i][p] / weight
			v := w * w
			if inLine {
				v += j.heldVar[i][p] / weight
			}
			lists[i].mean = math.Max(lists[i].mean-w, 0)
			lists[i].vari = math.Max(lists[i].vari-v, 0)
			most = math.Max(most, w)
		}
		common = common.plus(waitMoments(most))
		if inLine {
			behind = math.Max(behind, (a-units)/units*whole/taken+j.sentAhead(p, n, weight))
		}
	}
	common.mean += behind
	return maxMoments(lists).plus(common)
}

// sentAhead returns the time by which work that the lists send to pool q
// delays its line there: where the lists wait in line for a pool r of
// fewer units than lists and send work that holds q while holding r, the
// work sent by the lists that release r first reaches q ahead of the
// lists still waiting for r, so that the lists beyond r's units wait
// behind one sent hold each (the largest over such r). Work sent just
// after a list lets r go reaches q behind the list that release lets in,
// so the lists beyond r's units wait behind one such hold fewer. n lists
// acquire q. (Three lookups of six behind a pool of four connections,
// each sending 0.17 ms of work to the CPU slot they queue at: 1.33 ms
// without this, the simulator 1.69; sending 0.52 ms just after letting
// the connection go, −22 % from the simulator without it.)
func (j *join) sentAhead(q, n int, weight float64) float64 {
	pools := j.t.b.pools
	P := len(pools)
	var most float64
	for r, pr := range pools {
		if r == q || !pr.limited() {
			continue
		}
		var acq, in, after float64
		for i, log := range j.sent {
			acq += j.taken[i][r]
			for _, e := range log {
				switch {
				case e.at != r*P+q:
				case e.behind:
					after += e.held
				default:
					in += e.held
				}
			}
		}
		acq /= weight
		if beyond := acq - pr.capacityTotal(); beyond > 0 && in+after > 0 {
			most = math.Max(most, (beyond*in+math.Max(beyond-1, 0)*after)/weight/float64(n))
		}
	}
	return most
}

func addScaled(dst, src map[int]float64, f float64) map[int]float64 {
	if len(src) == 0 {
		return dst
	}
	if dst == nil {
		dst = map[int]float64{}
	}
	for k, v := range src {
		dst[k] += f * v
	}
	return dst
}
