package mva

import (
	"fmt"
	"testing"

	"github.com/perfcast/perfcast/model"
)

// replicaSteps are the replicated operation's steps the balancer tests
// solve: at the CPU, at a pool held off the CPU, at the CPU behind a
// front end (which calls it), at a pool held over a CPU burst (a
// process's CPU slots), and at such a slot taken again after a call.
var replicaSteps = map[string]string{
	"cpu":       "{cpu: exp(10ms)}",
	"pool":      "{cpu: 0.5ms}, {hold: {resource: pool, steps: [{delay: exp(20ms)}]}}",
	"behind":    "{cpu: exp(10ms)}",
	"slot":      "{cpu: 0.2ms}, {hold: {resource: pool, steps: [{cpu: exp(10ms)}]}}",
	"slot call": "{hold: {resource: pool, steps: [{cpu: exp(5ms)}]}}, {call: back/op}, {hold: {resource: pool, steps: [{cpu: exp(5ms)}]}}",
}

// TestReplicasInTurn sets the analytical solver against the simulator's
// balancers: a host of two or four replicas of two cores each, Poisson
// arrivals, 10 to 75 % busy, at a processor-sharing CPU with exponential
// bursts, at a pool of two in each replica held over 20 ms off the CPU (a
// connection pool) or over a CPU burst (a process's CPU slots), entered
// at once or behind a front end of one replica that calls it, or holding
// the slot for a burst, calling a service on another host and holding it
// again. Round-robin hands each replica every r-th request, gaps of
// squared cv 1/r; random does not; least-busy sends each request to the
// replica with the fewest in progress, which the solver takes as joining
// the shortest queue at the CPU and at the pools (taken at every load,
// directly and behind the front end; the slot taken again after a call,
// where the replica's operations spend time elsewhere, is reported at
// 75 %: until the pools joined the shortest queue too, they were a random
// pick's, reported from 40 % load on). Wherever Supports takes the model,
// the two solvers' mean response times agree within arrivalShare beyond
// the simulator's 95 % half-width. Round-robin at 75 % load is taken wherever
// the turns' regularity reaches a queue unchanged (taking it as a random
// split put those response times 23 to 38 % too long); the slot taken
// again after a call, whose second arrivals' regularity rests on
// approximations, is reported on four replicas at 75 %.
func TestReplicasInTurn(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates the models it takes")
	}
	type key struct {
		where    string
		replicas int
		balancer model.Balancer
		load     float64
	}
	taken := map[key]bool{}
	for _, where := range []string{"cpu", "pool", "behind", "slot", "slot call"} {
		for _, replicas := range []int{2, 4} {
			for _, balancer := range []model.Balancer{model.RoundRobin, model.Random, model.LeastBusy} {
				for _, load := range []float64{0.1, 0.4, 0.75} {
					name := fmt.Sprintf("%s replicas=%d %s load=%g", where, replicas, balancer, load)
					// The CPU's busy share, or the pool's.
					rate := load * 2 / 0.01 * float64(replicas)
					if where == "pool" {
						rate = load * 2 / 0.02 * float64(replicas)
					}
					entry := "app/op"
					if where == "behind" {
						entry = "front/op"
					}
					src := fmt.Sprintf(`perfcast: 1
hosts: {h: {replicas: %d, balancer: %s, cpu: {cores: 2}}, f: {cpu: {cores: 4}}}
components:
  app: {host: h, operations: {op: {steps: [%s]}}}
  front: {host: f, operations: {op: {steps: [{delay: 0.1ms}, {call: app/op}]}}}
  back: {host: f, operations: {op: {steps: [{delay: exp(5ms)}]}}}
passive: {pool: {capacity: 2, host: h}}
workload:
  w: {open: {rate: %g}, steps: [{call: %s}]}
`, replicas, balancer, replicaSteps[where], rate, entry)
					m, err := model.Parse([]byte(src), name+".yaml")
					if err != nil {
						t.Fatal(err)
					}
					ok, reasons := Supports(m)
					taken[key{where, replicas, balancer, load}] = ok
					if !ok {
						t.Logf("%s: reported: %v", name, reasons)
						continue
					}
					againstSim(t, name, m)
				}
			}
		}
	}
	for k, ok := range taken {
		switch {
		case !ok && k.balancer == model.Random:
			t.Errorf("%+v: a random split of Poisson arrivals reported", k)
		case !ok && k.balancer == model.RoundRobin && k.load == 0.75 && k.where != "slot call":
			t.Errorf("%+v: reported, though the turns' regularity reaches its queue unchanged", k)
		case !ok && k.balancer == model.LeastBusy && k.where != "slot call":
			t.Errorf("%+v: reported, though its replicas join the shortest queue at their one station or pool", k)
		}
	}
	if k := (key{"slot call", 4, model.RoundRobin, 0.75}); taken[k] {
		t.Errorf("%+v: taken, though its second hold's arrivals rest on approximations", k)
	}
}

// TestReplicasLeastOfTwoAgainstSim sets the analytical solver's
// least-of-two against the simulator's: three and four replicas of one
// core and three of two, Poisson arrivals, 30 and 70 % busy, at the CPU
// (processor sharing, exponential bursts), at a pool of as many units as
// cores in each replica held over 20 ms off the CPU, and at the CPU
// behind a front end of one replica that calls it. The stations and
// pools join the shortest queue, then go queueing.OfTwoShare of the way
// to a random pick's wait (the exact chain's for one server, scaled by
// the chance that all are busy for two), and are taken at every load;
// the two solvers' mean response times agree within arrivalShare beyond
// the simulator's 95 % half-width.
func TestReplicasLeastOfTwoAgainstSim(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates the models it takes")
	}
	for _, where := range []string{"cpu", "pool", "behind"} {
		for _, size := range []struct{ replicas, cores int }{{3, 1}, {4, 1}, {3, 2}} {
			for _, load := range []float64{0.3, 0.7} {
				replicas, cores := size.replicas, size.cores
				name := fmt.Sprintf("%s replicas=%d cores=%d load=%g", where, replicas, cores, load)
				rate := load / 0.01 * float64(replicas*cores)
				if where == "pool" {
					rate = load / 0.02 * float64(replicas*cores)
				}
				entry := "app/op"
				if where == "behind" {
					entry = "front/op"
				}
				m, err := model.Parse([]byte(fmt.Sprintf(`perfcast: 1
hosts: {h: {replicas: %d, balancer: least-of-two, cpu: {cores: %d}}, f: {cpu: {cores: 4}}}
components:
  app: {host: h, operations: {op: {steps: [%s]}}}
  front: {host: f, operations: {op: {steps: [{delay: 0.1ms}, {call: app/op}]}}}
passive: {pool: {capacity: %d, host: h}}
workload:
  w: {open: {rate: %g}, steps: [{call: %s}]}
`, replicas, cores, replicaSteps[where], cores, rate, entry)), name+".yaml")
				if err != nil {
					t.Fatal(err)
				}
				if ok, reasons := Supports(m); !ok {
					t.Errorf("%s: reported: %v", name, reasons)
					continue
				}
				againstSim(t, name, m)
			}
		}
	}
}

// TestReplicasClosedAgainstSim sets the analytical solver against the
// simulator where closed users (think time exponential, 30 ms) reach
// replicas balanced by load: two and four replicas of one core and two
// of two, least-busy and least-of-two, at the CPU, at a pool held off
// the CPU (taken by two workloads alike, which the damped iteration
// solves, or by one alone, solved by its throughput with the layers as
// curves), at the CPU behind a front end, and at the CPU followed by a
// call to a connection pool beyond the replicas (one workload: its
// hardware layer a curve), one, three and six users per server. The
// replicas queue as one (network.joinable, closedNet.solveJoined,
// state.joinedPool); before they did, they were a random pick's, 15 to
// 49 % too long on four replicas of one core. Wherever Supports takes
// the model, the two solvers' mean response times agree within
// arrivalShare beyond the simulator's 95 % half-width; least-busy is
// taken at every population but where the call beyond leaves the
// balancer counting time the CPU does not see (four replicas at three
// users per server: 0.74 ms of 13.1 in doubt; mva −4.9 % by hand).
// Least-of-two's part past joining the shortest queue is in doubt whole
// for closed workloads (6.5 and 7.1 % short at the CPU on four replicas
// at three users per server).
func TestReplicasClosedAgainstSim(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates the models it takes")
	}
	for _, where := range []string{"cpu", "pool", "pool alone", "behind", "cpu, pool beyond"} {
		for _, size := range []struct{ replicas, cores int }{{2, 1}, {4, 1}, {2, 2}} {
			for _, balancer := range []model.Balancer{model.LeastBusy, model.LeastOfTwo} {
				if balancer == model.LeastOfTwo && size.replicas == 2 {
					continue // least-busy on two replicas
				}
				for _, perServer := range []float64{1, 3, 6} {
					replicas, cores := size.replicas, size.cores
					users := int(perServer * float64(replicas*cores))
					name := fmt.Sprintf("%s replicas=%d cores=%d %s users=%d", where, replicas, cores, balancer, users)
					entry := "app/op"
					if where == "behind" {
						entry = "front/op"
					}
					// At the pool the users are two workloads alike, which
					// the damped iteration solves; one workload that takes
					// a pool (the replicas' or one beyond them) is solved
					// by its throughput, whose layers are curves.
					steps := replicaSteps[where]
					others, other := 0, ""
					switch where {
					case "pool alone":
						steps = replicaSteps["pool"]
					case "cpu, pool beyond":
						steps = replicaSteps["cpu"] + ", {call: db/q}"
					}
					if where == "pool" {
						others = users / 2
						other = fmt.Sprintf("  v: {closed: {users: %d, think: exp(30ms)}, steps: [{call: %s}]}\n", others, entry)
					}
					m, err := model.Parse([]byte(fmt.Sprintf(`perfcast: 1
hosts: {h: {replicas: %d, balancer: %s, cpu: {cores: %d}}, f: {cpu: {cores: 4}}}
components:
  app: {host: h, operations: {op: {steps: [%s]}}}
  front: {host: f, operations: {op: {steps: [{delay: 0.1ms}, {call: app/op}]}}}
  db: {host: f, operations: {q: {steps: [{hold: {resource: conn, steps: [{cpu: exp(1ms)}]}}]}}}
passive: {pool: {capacity: %d, host: h}, conn: {capacity: 2, host: f}}
workload:
  w: {closed: {users: %d, think: exp(30ms)}, steps: [{call: %s}]}
%s`, replicas, balancer, cores, steps, cores, users-others, entry, other)), name+".yaml")
					if err != nil {
						t.Fatal(err)
					}
					if ok, reasons := Supports(m); !ok {
						if balancer == model.LeastBusy && where != "cpu, pool beyond" {
							t.Errorf("%s: reported: %v", name, reasons)
						} else {
							t.Logf("%s: reported: %v", name, reasons)
						}
						continue
					}
					againstSim(t, name, m)
				}
			}
		}
	}
}

// TestReplicasMixedAgainstSim sets the analytical solver against the
// simulator where open requests and closed users (think time exponential,
// 30 ms) share replicas balanced by load: four replicas of one core and
// two of two at the CPU (exponential bursts of 10 ms), least-busy, four of
// one least-of-two, and a pool of two in each of four replicas held 20 ms
// off the CPU, least-busy; the open requests busy a quarter or half of
// the servers, beside one or three users per server. The replicas queue
// as one station of all their servers, which the open requests share
// as the mixed network's product form says (sharedServers), with the
// excess of joining the shortest queue at the load that holds both
// kinds there (closedNet.solveJoined, closedNet.openJoined); until they
// did, the replicas were a random pick's there, up to 43 ms against the
// simulator's 26 at the pool, and reported. Least-busy is taken
// everywhere; wherever Supports takes the model, both workloads' means
// agree with the simulator's within arrivalShare beyond its 95 %
// half-width. Least-of-two's part past joining the shortest queue is in
// doubt whole for closed workloads, as without open requests.
func TestReplicasMixedAgainstSim(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates the models it takes")
	}
	for _, c := range []struct {
		where           string
		replicas, cores int
		balancer        model.Balancer
	}{{"cpu", 4, 1, model.LeastBusy}, {"cpu", 2, 2, model.LeastBusy}, {"cpu", 4, 1, model.LeastOfTwo}, {"pool", 4, 2, model.LeastBusy}} {
		for _, share := range []float64{0.25, 0.5} {
			for _, perServer := range []int{1, 3} {
				servers := c.replicas * c.cores
				steps, hold := "{cpu: exp(10ms)}", 0.010
				if c.where == "pool" {
					steps, hold = "{cpu: 0.5ms}, {hold: {resource: pool, steps: [{delay: exp(20ms)}]}}", 0.020
				}
				rate := share * float64(servers) / hold
				name := fmt.Sprintf("%s replicas=%d cores=%d %s rate=%g users=%d", c.where, c.replicas, c.cores, c.balancer, rate, perServer*servers)
				m, err := model.Parse([]byte(fmt.Sprintf(`perfcast: 1
hosts: {h: {replicas: %d, balancer: %s, cpu: {cores: %d}}}
components:
  app: {host: h, operations: {op: {steps: [%s]}, open: {steps: [%s]}}}
passive: {pool: {capacity: %d, host: h}}
workload:
  o: {open: {rate: %g}, steps: [{call: app/open}]}
  w: {closed: {users: %d, think: exp(30ms)}, steps: [{call: app/op}]}
`, c.replicas, c.balancer, c.cores, steps, steps, c.cores, rate, perServer*servers)), name+".yaml")
				if err != nil {
					t.Fatal(err)
				}
				ok, reasons := Supports(m)
				if !ok {
					if c.balancer == model.LeastBusy {
						t.Errorf("%s: reported: %v", name, reasons)
					} else {
						t.Logf("%s: reported: %v", name, reasons)
					}
					continue
				}
				againstSim(t, name, m, "o", "w")
			}
		}
	}
}
