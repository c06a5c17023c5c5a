package mva

import (
	"github.com/perfcast/perfcast/model"
)

// timeWalk computes, for one request of one class, the mean response time
// from the per-visit times at stations and the waits at pools, composing
// steps as the model says: sums for sequences, mean counts for loops,
// probabilities for branches and switches, the mean of the maximum for
// parallel lists (independent exponential branch times), nothing for sends
// (whose work is walked for the load it causes only). Along the way it
// accumulates, per pool, the expected time the request holds it, and per
// operation, the expected number of executions and their total time.
type timeWalk struct {
	b *built
	w *model.Workload
	// visitTime returns the mean time of one visit to station k with a mean
	// demand d.
	visitTime func(k int, d float64) float64
	// wait[p] is the mean wait per acquisition of pool p.
	wait []float64
	// Outputs, per request.
	held    []float64 // held[p]: Σ executions × time held
	opRuns  map[string]float64
	opTotal map[string]float64
	fixed   map[string]string
}

func newTimeWalk(b *built, w *model.Workload) *timeWalk {
	return &timeWalk{b: b, w: w, wait: make([]float64, len(b.pools)), held: make([]float64, len(b.pools)),
		opRuns: map[string]float64{}, opTotal: map[string]float64{}, fixed: map[string]string{}}
}

// reset clears the outputs.
func (t *timeWalk) reset() {
	for p := range t.held {
		t.held[p] = 0
	}
	clear(t.opRuns)
	clear(t.opTotal)
}

// request walks the workload's steps and returns its mean response time.
func (t *timeWalk) request() float64 {
	t.reset()
	r, _ := t.list(t.w.Steps, nil, 1, 0)
	return r
}

// list returns the mean time of one execution of steps run by component c
// (nil at the workload level) executed `weight` times per request, and the
// change in the held units of pools acquired or released in it and not
// balanced within it (unscoped acquire and release).
func (t *timeWalk) list(steps []model.Step, c *model.Component, weight float64, depth int) (float64, map[int]float64) {
	if depth > maxDepth {
		return 0, nil
	}
	var total float64
	var held map[int]float64
	for i := range steps {
		dt, delta := t.step(&steps[i], c, weight, depth)
		total += dt
		// Time spent while holding an unscoped acquisition counts
		// toward that pool's holding time.
		for p, h := range held {
			if h > 0 {
				t.held[p] += weight * h * dt
			}
		}
		if len(delta) > 0 && held == nil {
			held = map[int]float64{}
		}
		for p, d := range delta {
			held[p] += d
		}
	}
	return total, held
}

func (t *timeWalk) step(s *model.Step, c *model.Component, weight float64, depth int) (float64, map[int]float64) {
	switch s.Kind {
	case model.StepCPU, model.StepDisk:
		k, speed := t.b.stationOf(s, c)
		if k < 0 {
			return 0, nil
		}
		return t.visitTime(k, s.Demand.Mean()/speed), nil
	case model.StepDelay:
		return s.Demand.Mean(), nil
	case model.StepCall:
		return t.call(s.Target, weight, depth), nil
	case model.StepSend:
		t.call(s.Target, weight, depth)
		return 0, nil
	case model.StepLoop:
		n := s.Times.Mean()
		r, delta := t.list(s.Steps, c, weight*n, depth)
		return n * r, delta
	case model.StepBranch:
		var r float64
		var delta map[int]float64
		for _, br := range s.Branches {
			rb, db := t.list(br.Steps, c, weight*br.P, depth)
			r += br.P * rb
			delta = addScaled(delta, db, br.P)
		}
		return r, delta
	case model.StepSwitch:
		var r float64
		var delta map[int]float64
		forCases(t.w, s, t.fixed, func(body []model.Step, p float64) {
			rb, db := t.list(body, c, weight*p, depth)
			r += p * rb
			delta = addScaled(delta, db, p)
		})
		return r, delta
	case model.StepParallel:
		means := make([]float64, len(s.Parallel))
		var delta map[int]float64
		for i, l := range s.Parallel {
			var d map[int]float64
			means[i], d = t.list(l, c, weight, depth)
			delta = addScaled(delta, d, 1)
		}
		return expMax(means), delta
	case model.StepHold:
		p, ok := t.b.poolIdx[s.Resource]
		body, delta := t.list(s.Steps, c, weight, depth)
		if !ok {
			return body, delta
		}
		t.held[p] += weight * body
		return t.wait[p] + body, delta
	case model.StepAcquire:
		p, ok := t.b.poolIdx[s.Resource]
		if !ok {
			return 0, nil
		}
		return t.wait[p], map[int]float64{p: 1}
	case model.StepRelease:
		p, ok := t.b.poolIdx[s.Resource]
		if !ok {
			return 0, nil
		}
		return 0, map[int]float64{p: -1}
	}
	return 0, nil
}

// call walks the operation a call or send targets: the wait for a thread of
// its component, then its steps while holding the thread. It returns the
// operation's response time as its caller sees it.
func (t *timeWalk) call(target string, weight float64, depth int) float64 {
	op := t.b.m.Operation(target)
	if op == nil {
		return 0
	}
	p := t.b.poolIdx[model.ThreadsResource(op.Component)]
	exec, _ := t.list(op.Steps, t.b.m.Component(op.Component), weight, depth+1)
	t.held[p] += weight * exec
	r := t.wait[p] + exec
	id := op.ID()
	t.opRuns[id] += weight
	t.opTotal[id] += weight * r
	return r
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
