package mva

import (
	"context"
	"strings"
	"testing"

	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve"
)

// scopedModel is a service whose operation holds a pool of two over
// delays, a call to another service and CPU, STEPS its steps, about
// 60 % busy: as extraction writes a transaction.
const scopedModel = `perfcast: 1
name: scoped
hosts:
  app: {cpu: {cores: 2}}
  ph: {cpu: {cores: 4}}
components:
  api:
    host: app
    operations:
      order: {steps: STEPS}
  pricing:
    host: ph
    operations:
      quote: {steps: [{cpu: exp(0.5ms)}, {delay: exp(1.5ms)}]}
passive:
  pool: {capacity: 2}
workload:
  w:
    open: {rate: 180/s}
    steps: [{call: api/order}]
`

// TestAcquireReleaseScoped solves scopedModel with the pool taken by
// acquire and release, and by a hold of the same steps: the same answer,
// within the simulator's interval and 5 % (unscoped, the layers saw no
// holding time and were 13 % slow at this load).
func TestAcquireReleaseScoped(t *testing.T) {
	parse := func(steps string) *model.Model {
		m, err := model.Parse([]byte(strings.Replace(scopedModel, "STEPS", steps, 1)), "scoped.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	acquired := parse(`[{cpu: exp(1ms)}, {acquire: pool}, {delay: exp(2ms)}, {call: pricing/quote}, {delay: exp(1.5ms)}, {cpu: exp(1ms)}, {release: pool}]`)
	held := parse(`[{cpu: exp(1ms)}, {hold: {resource: pool, steps: [{delay: exp(2ms)}, {call: pricing/quote}, {delay: exp(1.5ms)}, {cpu: exp(1ms)}]}}]`)
	var means []float64
	for _, m := range []*model.Model{acquired, held} {
		r, err := Solver{}.Solve(context.Background(), m, solve.Options{})
		if err != nil {
			t.Fatal(err)
		}
		means = append(means, r.Workloads["w"].ResponseTime.Mean)
	}
	if means[0] != means[1] {
		t.Errorf("acquire and release: %.6g ms; the hold: %.6g ms", 1e3*means[0], 1e3*means[1])
	}
	againstSim(t, "acquire and release", acquired)
}
