package mva

import (
	"math"
	"testing"

	"github.com/perfcast/perfcast/model"
)

// TestFindReentries checks which holds take a pool their request has just
// let go, how often and after how long, on each kind of step between.
func TestFindReentries(t *testing.T) {
	m := parse(t, `perfcast: 1
hosts: {h: {}}
components:
  app:
    host: h
    operations:
      again: {steps: [{hold: {resource: s, steps: [{cpu: 1ms}]}}, {delay: 1ms}, {send: app/other}, {hold: {resource: s, steps: [{cpu: 1ms}]}}]}
      resumes: {steps: [{hold: {resource: s, steps: [{cpu: 1ms}]}}, {loop: {times: {pmf: {"0": 0.2, "1": 0.5, "2": 0.3}}, steps: [{delay: 0.5ms}, {hold: {resource: s, steps: [{cpu: 1ms}]}}]}}]}
      loop: {steps: [{loop: {times: 3, steps: [{hold: {resource: s, steps: [{cpu: 1ms}]}}, {delay: 2ms}]}}]}
      cpu: {steps: [{hold: {resource: s, steps: [{cpu: 1ms}]}}, {cpu: 1ms}, {hold: {resource: s, steps: [{cpu: 1ms}]}}]}
      branch: {steps: [{hold: {resource: s, steps: [{cpu: 1ms}]}}, {branch: [{p: 0.25, steps: [{delay: 1ms}]}, {p: 0.25, steps: [{delay: 3ms}]}, {p: 0.5, steps: [{call: app/other}]}]}, {hold: {resource: s, steps: [{cpu: 1ms}]}}]}
      other pool: {steps: [{hold: {resource: s, steps: [{cpu: 1ms}]}}, {hold: {resource: q, steps: [{delay: 1ms}]}}, {hold: {resource: s, steps: [{cpu: 1ms}]}}]}
      inside: {steps: [{hold: {resource: q, steps: [{loop: {times: 2, steps: [{hold: {resource: s, steps: [{cpu: 1ms}]}}]}}]}}]}
      other: {steps: [{cpu: 1ms}]}
passive: {s: {capacity: 1}, q: {capacity: 2}}
workload:
  w: {open: {rate: 1}, steps: [{call: app/again}]}
`)
	found := build(m).findReentries()
	at := func(op string, path ...int) *model.Step {
		steps := m.Operation("app/" + op).Steps
		var s *model.Step
		for _, i := range path {
			s = &steps[i]
			steps = s.Steps
		}
		return s
	}
	for _, c := range []struct {
		name      string
		step      *model.Step
		frac, gap float64 // frac 0: not found
	}{
		{"again: first hold", at("again", 0), 0, 0},
		{"again: after a delay and a send", at("again", 3), 1, 1e-3},
		// Every execution of the loop's hold follows a hold, the first
		// the one before the loop.
		{"resumes", at("resumes", 1, 1), 1, 0.5e-3},
		// Two of three iterations follow the one before.
		{"loop", at("loop", 0, 0), 2.0 / 3, 2e-3},
		{"cpu between", at("cpu", 2), 0, 0},
		{"branch", at("branch", 2), 0.5, 2e-3},
		{"a wait for another pool between", at("other pool", 2), 0, 0},
		{"inside another pool's hold", at("inside", 0, 0, 0), 0.5, 0},
	} {
		r, ok := found[c.step]
		if c.frac == 0 {
			if ok {
				t.Errorf("%s: found %+v, want none", c.name, r)
			}
			continue
		}
		if !ok || math.Abs(r.frac-c.frac) > 1e-12 || math.Abs(r.gap-c.gap) > 1e-12 {
			t.Errorf("%s: got %+v (found %v), want frac %g, gap %g", c.name, r, ok, c.frac, c.gap)
		}
	}
}
