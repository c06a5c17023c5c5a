package mva

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/perfcast/perfcast/solve"
	"github.com/perfcast/perfcast/solve/sim"
)

// TestSolvesEveryCombination builds models from every combination of a
// host's replicas and balancer, the workload's kind and what its request
// does at that host (CPU, a disk, a pool, a lock, a thread limit, a call
// to a second host, parallel lists, a send), at light and heavy load, and
// asks Supports and Solve of each, and the simulator for a short run:
// none may crash, and a solution is either an error or finite where
// stable. A closed workload holding a
// pool on least-busy replicas once crashed Supports, a combination no
// test had made. Least-busy and least-of-two share the solver's paths;
// least-of-two on six replicas takes the share from the limit of many.
func TestSolvesEveryCombination(t *testing.T) {
	hosts := []string{
		"{cpu: {cores: 2}, disks: {d: {}}}",
		"{replicas: 3, cpu: {cores: 2}, disks: {d: {}}}",
		"{replicas: 3, balancer: random, cpu: {cores: 1, scheduling: fcfs}, disks: {d: {}}}",
		"{replicas: 3, balancer: least-busy, cpu: {cores: 2}, disks: {d: {}}}",
		"{replicas: 6, balancer: least-of-two, cpu: {cores: 1}, disks: {d: {}}}",
	}
	steps := map[string]string{
		"cpu":      "{cpu: exp(4ms)}",
		"disk":     "{cpu: 1ms}, {disk: exp(3ms)}",
		"pool":     "{cpu: 1ms}, {hold: {resource: pool, steps: [{cpu: exp(2ms)}, {delay: exp(5ms)}]}}",
		"lock":     "{hold: {resource: lock, steps: [{cpu: exp(1ms)}]}}, {cpu: 2ms}",
		"call":     "{cpu: 1ms}, {call: back/op}",
		"parallel": "{parallel: [[{cpu: exp(2ms)}], [{call: back/op}]]}",
		"send":     "{cpu: 2ms}, {send: back/op}",
	}
	workloads := map[string][2]string{
		"open":   {"{open: {rate: %g}, steps: [{call: front/op}]}", ""},
		"bursty": {"{open: {rate: %g, cv: 2}, steps: [{call: front/op}]}", ""},
		"closed": {"{closed: {users: %g, think: exp(50ms)}, steps: [{call: front/op}]}", ""},
	}
	for hi, host := range hosts {
		for _, threads := range []string{"", "threads: 2, "} {
			for sname, step := range steps {
				for wname, w := range workloads {
					for _, load := range []float64{0.2, 0.9} {
						level := load * 200 // requests per second, or users at 50 ms think
						if wname == "closed" {
							level = load * 20
						}
						src := fmt.Sprintf(`perfcast: 1
hosts:
  web: %s
  app: {cpu: {cores: 2}}
passive:
  pool: {capacity: 2, host: web}
  lock: {capacity: 1}
components:
  front: {host: web, %soperations: {op: {steps: [%s]}}}
  back: {host: app, operations: {op: {steps: [{cpu: exp(2ms)}]}}}
workload:
  w: %s
`, host, threads, step, fmt.Sprintf(w[0], level))
						name := fmt.Sprintf("host%d/%s%s/%s/%g", hi, threads, sname, wname, load)
						t.Run(name, func(t *testing.T) {
							m := parse(t, src)
							Supports(m)
							ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
							defer cancel()
							for _, solver := range []solve.Solver{New(), sim.New()} {
								r, err := solver.Solve(ctx, m, solve.Options{Requests: 1000, Workers: 1})
								if err != nil || !r.Stable {
									continue
								}
								if wr := r.Workloads["w"]; wr == nil || !(wr.ResponseTime.Mean > 0 && wr.ResponseTime.Mean < 1e3) {
									t.Errorf("%s: stable, with the workload's results %+v\n%s", solver.Name(), wr, src)
								}
							}
						})
					}
				}
			}
		}
	}
}
