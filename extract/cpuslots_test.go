package extract_test

import (
	"context"
	"math"
	"testing"

	"github.com/perfcast/perfcast/extract"
	"github.com/perfcast/perfcast/model"
)

// slottedModel is a host of one core shared by two services, the way a
// Go service with GOMAXPROCS 1 shares a machine: the store runs one
// request's CPU at a time (a slot of capacity 1, FIFO), while the host's
// processor sharing divides the core between the services. CPU
// utilization is 45 % at 50 requests/s.
const slottedModel = `perfcast: 1
name: slotted
hosts:
  box: {cpu: {cores: 1}}
components:
  front:
    host: box
    operations:
      page:
        steps:
          - cpu: exp(1ms)
          - call: store/query
  store:
    host: box
    operations:
      query:
        steps:
          - hold:
              resource: store-procs
              steps: [{cpu: gamma(8ms, cv=0.3)}]
passive:
  store-procs: {capacity: 1}
workload:
  pages:
    open: {rate: 50/s}
    steps: [{call: front/page}]
`

// TestCPUSlotsRoundTrip extracts the slotted system with cpu_slots
// declared and predicts its response time at the observed load and at 1.6
// times that load (72 % CPU) within the round trip's tolerance, and closer
// to the truth than the model extracted without the slots, whose processor
// sharing stretches the store's long bursts.
func TestCPUSlotsRoundTrip(t *testing.T) {
	m0, err := model.Parse([]byte(slottedModel), "slotted.yaml")
	if err != nil {
		t.Fatal(err)
	}
	requests := int64(20000)
	if testing.Short() {
		requests = 6000
	}
	dir := t.TempDir()
	base := generate(t, m0, 5, requests, dir)
	heavy := generate(t, withLoad(t, m0, 1.6), 6, requests, dir)
	cfg := &extract.Config{Hosts: map[string]extract.HostConfig{"box": {Cores: 1}}, CPUSlots: map[string]int{"store": 1}}
	x, err := extract.Run(context.Background(), []string{base.path}, "slotted", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if p := x.Model.PassiveResource("store-cpu-slots"); p == nil || p.Capacity != 1 {
		t.Fatalf("no store-cpu-slots of capacity 1:\n%s", x.Model.Marshal())
	}
	t.Logf("extracted:\n%s", x.Model.Marshal())
	const w = "page"
	var cs []comparison
	for _, c := range []struct {
		label  string
		factor float64
		obs    *observed
	}{{"1x", 1, base}, {"1.6x", 1.6, heavy}} {
		pred := solveSim(t, withLoad(t, x.Model, c.factor)).Workloads[w]
		if pred == nil {
			t.Fatalf("no workload %s", w)
		}
		cs = append(cs, compare(c.label+" mean response", pred.ResponseTime.Mean, pred.ResponseTime.CI95, c.obs.rt, c.obs.rt.mean))
	}
	check(t, cs)
	cfg.CPUSlots = nil
	plain, err := extract.Run(context.Background(), []string{base.path}, "plain", cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := solveSim(t, withLoad(t, plain.Model, 1.6)).Workloads[w]
	t.Logf("without cpu_slots, 1.6x mean response %.4g (measured %.4g)", p.ResponseTime.Mean, heavy.rt.mean)
	if withSlots, without := math.Abs(cs[1].predicted-heavy.rt.mean), math.Abs(p.ResponseTime.Mean-heavy.rt.mean); withSlots >= without {
		t.Errorf("at 1.6x the model with cpu_slots is off by %.3g s, no better than without (%.3g s)", withSlots, without)
	}
}
