package extract_test

import (
	"fmt"
	"testing"

	"github.com/perfcast/perfcast/extract"
)

// sharedSlotModel is a store with one CPU slot, running 6 ms queries and
// 0.2 ms lookups one at a time, on a core it shares with the front; every
// query also spends 0.3 ms off the CPU.
const sharedSlotModel = `perfcast: 1
name: shared-slot
hosts:
  box: {cpu: {cores: 1}}
components:
  front:
    host: box
    operations:
      page:
        steps:
          - cpu: exp(0.3ms)
          - branch:
              - p: 0.5
                steps: [{call: store/query}]
              - p: 0.5
                steps: [{call: store/lookup}]
  store:
    host: box
    operations:
      query:
        steps:
          - hold:
              resource: store-procs
              steps: [{cpu: gamma(6ms, cv=0.3)}]
          - delay: exp(0.3ms)
      lookup:
        steps:
          - hold:
              resource: store-procs
              steps: [{cpu: exp(0.2ms)}]
passive:
  store-procs: {capacity: 1}
workload:
  pages:
    open: {rate: 60/s}
    steps: [{call: front/page}]
`

// TestSlotWaitAcrossLoads extracts the store from a load test alternating
// 60 and 190 pages/s (the core 20 % and 65 % busy, the slot 19 % and 59 %)
// with its one CPU slot declared. The waits for the slot are taken out of
// the store's time off the CPU window by window, with the slot held for
// as long as its burst shares the core: the query keeps about its 0.3 ms
// as fixed delay, not the 1.4 ms that the bursts' bare CPU time left
// (a quarter of the wait at the heavier load), and the model predicts the
// mean response time at both loads.
func TestSlotWaitAcrossLoads(t *testing.T) {
	seconds := 20.0
	if testing.Short() {
		seconds = 10
	}
	rates := []float64{60, 190, 190, 60, 60, 190, 190, 60, 60, 190, 190, 60}
	cfg := &extract.Config{Hosts: map[string]extract.HostConfig{"box": {Cores: 1}}, CPUSlots: map[string]int{"store": 1}, NoSpeedCurves: true}
	m, x := extractSteps(t, sharedSlotModel, rates, seconds, 30, cfg)
	t.Logf("extracted:\n%s", x.Model.Marshal())
	query := x.Model.Operation("store/query")
	if query == nil {
		t.Fatal("no store/query")
	}
	if d := fixedDelay(query); d > 0.8e-3 {
		t.Errorf("store/query keeps %.3g ms off the CPU as its fixed delay, want about 0.3", d*1e3)
	}
	dir := t.TempDir()
	var cs []comparison
	for i, rate := range []float64{60, 190} {
		truth, err := m.Clone()
		if err != nil {
			t.Fatal(err)
		}
		truth.Workloads[0].Open.Rate = rate
		obs := generate(t, truth, uint64(40+i), int64(rate*60), dir)
		cs = append(cs, compare(fmt.Sprintf("%g/s mean response", rate), meanAt(t, x.Model, rate), nil, obs.rt, obs.rt.mean))
	}
	check(t, cs)
}
