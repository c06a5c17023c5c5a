package mva

import (
	"fmt"
	"testing"

	"github.com/perfcast/perfcast/model"
)

// TestReplicasInTurn sets the analytical solver, which takes the requests
// a replicated host's replicas get as a random split (Poisson at each),
// against the simulator's balancers: a host of two or three replicas of
// one core each, Poisson arrivals, 10 to 75 % busy, at a processor-sharing
// CPU with exponential bursts or at a lock of two in each replica held
// over 20 ms off the CPU (a connection pool), entered at once or behind
// a front end of one replica that calls it. Round-robin hands each
// replica every r-th request, more regular than Poisson; random does not.
// Wherever Supports takes the model, the two solvers' mean response times
// agree within arrivalShare beyond the simulator's 95 % half-width; the
// random split is taken wherever it is; round-robin at 75 % is reported.
func TestReplicasInTurn(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates the models it takes")
	}
	steps := map[string]string{
		"cpu":    "{cpu: exp(10ms)}",
		"pool":   "{cpu: 0.5ms}, {hold: {resource: pool, steps: [{delay: exp(20ms)}]}}",
		"behind": "{cpu: exp(10ms)}",
	}
	for _, where := range []string{"cpu", "pool", "behind"} {
		for _, replicas := range []int{2, 3} {
			for _, balancer := range []model.Balancer{model.RoundRobin, model.Random} {
				for _, load := range []float64{0.1, 0.4, 0.75} {
					name := fmt.Sprintf("%s replicas=%d %s load=%g", where, replicas, balancer, load)
					// The CPU's busy share, or the pool's.
					rate := load / 0.01 * float64(replicas)
					if where == "pool" {
						rate = load * 2 / 0.02 * float64(replicas)
					}
					entry := "app/op"
					if where == "behind" {
						entry = "front/op"
					}
					src := fmt.Sprintf(`perfcast: 1
hosts: {h: {replicas: %d, balancer: %s, cpu: {cores: 1}}, f: {cpu: {cores: 4}}}
components:
  app: {host: h, operations: {op: {steps: [%s]}}}
  front: {host: f, operations: {op: {steps: [{delay: 0.1ms}, {call: app/op}]}}}
passive: {pool: {capacity: 2, host: h}}
workload:
  w: {open: {rate: %g}, steps: [{call: %s}]}
`, replicas, balancer, steps[where], rate, entry)
					m, err := model.Parse([]byte(src), name+".yaml")
					if err != nil {
						t.Fatal(err)
					}
					ok, reasons := Supports(m)
					if !ok {
						t.Logf("%s: reported: %v", name, reasons)
						if balancer == model.Random {
							t.Errorf("%s: a random split reported: %v", name, reasons)
						}
						continue
					}
					if balancer == model.RoundRobin && load == 0.75 {
						t.Errorf("%s: taken, though each replica's arrivals are far from Poisson and its waits large", name)
					}
					againstSim(t, name, m)
				}
			}
		}
	}
}
