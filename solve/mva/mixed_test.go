package mva

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve"
	"github.com/perfcast/perfcast/solve/sim"
)

// closedUsers is a closed class of the product form: n users thinking z
// between requests of exponential demand d.
type closedUsers struct {
	n    int
	z, d float64
}

// mixedExact is the exact mean response time of closed classes and an
// open one (rate lambda, demand dOpen) at one processor-sharing station of
// c servers: the mixed network's product form, summed over the closed
// users j_i of each class and the open requests m at the station,
//
//	P(j, m) ∝ Π_i z_i^(n_i−j_i)/(n_i−j_i)! · (J+m)!/(Π_i j_i!·m!) ·
//	          Π_i d_i^(j_i) · (λ·dOpen)^m / Π_{k ≤ J+m} min(k, c),
//
// J = Σ_i j_i, the open requests truncated where their terms no longer
// count. It holds for an FCFS station too where every class has one
// exponential demand.
func mixedExact(c int, closed []closedUsers, lambda, dOpen float64) (closedR []float64, open float64) {
	const most = 2000
	total := 0
	for _, cl := range closed {
		total += cl.n
	}
	logA := make([]float64, total+most+1)
	lf := make([]float64, total+most+1) // log k!
	for i := 1; i < len(logA); i++ {
		logA[i] = logA[i-1] + math.Log(float64(min(i, c)))
		lf[i] = lf[i-1] + math.Log(float64(i))
	}
	// The closed states, and the log of their factor without the open
	// requests.
	type state struct {
		j []int
		l float64
	}
	states := []state{{}}
	for _, cl := range closed {
		var next []state
		for _, s := range states {
			for j := 0; j <= cl.n; j++ {
				l := s.l + float64(cl.n-j)*math.Log(cl.z) - lf[cl.n-j] - lf[j] + float64(j)*math.Log(cl.d)
				next = append(next, state{append(append([]int(nil), s.j...), j), l})
			}
		}
		states = next
	}
	top := math.Inf(-1)
	logs := make([][]float64, len(states))
	for si, s := range states {
		J := 0
		for _, j := range s.j {
			J += j
		}
		logs[si] = make([]float64, most+1)
		for m := 0; m <= most; m++ {
			l := s.l + lf[J+m] - lf[m] - logA[J+m]
			if m > 0 {
				l += float64(m) * math.Log(lambda*dOpen)
			}
			logs[si][m] = l
			top = math.Max(top, l)
		}
	}
	var sum, sumM float64
	sumJ := make([]float64, len(closed))
	for si, s := range states {
		for m, l := range logs[si] {
			p := math.Exp(l - top)
			sum += p
			sumM += float64(m) * p
			for i, j := range s.j {
				sumJ[i] += float64(j) * p
			}
		}
	}
	for i, cl := range closed {
		in := sumJ[i] / sum
		x := (float64(cl.n) - in) / cl.z
		closedR = append(closedR, in/x)
	}
	return closedR, sumM / sum / lambda
}

// TestMixedSharedServers sets the analytical solver against the exact
// product form of one four-core station, or one pool of four held over
// a delay, that a closed workload (1 to 16 users, think time 30 ms) and
// an open one (10 to 300 requests/s) share, 10 ms of exponential demand
// or holding time each, and of the four cores where the open requests
// take 4 ms. Until the closed workloads saw the servers' rates of the
// product form (sharedServers), the solver stretched their demand by
// the open load, as is exact for one server only, and queued the open
// requests at the whole load as Poisson arrivals: the closed workload
// came out up to 165 % long, the open one −3 % to many times the exact
// mean near saturation. Now every case is taken and within 1e-6 of the
// exact means.
func TestMixedSharedServers(t *testing.T) {
	steps := map[string][2]string{
		"cpu":    {"{cpu: exp(10ms)}", "{cpu: exp(10ms)}"},
		"uneven": {"{cpu: exp(10ms)}", "{cpu: exp(4ms)}"},
		"pool":   {"{hold: {resource: pool, steps: [{delay: exp(10ms)}]}}", "{hold: {resource: pool, steps: [{delay: exp(10ms)}]}}"},
	}
	for _, where := range []string{"cpu", "uneven", "pool"} {
		dOpen := 0.010
		if where == "uneven" {
			dOpen = 0.004
		}
		for _, rate := range []float64{10, 20, 100, 200, 300} {
			for _, users := range []int{1, 4, 8, 12, 16} {
				name := fmt.Sprintf("%s rate=%g users=%d", where, rate, users)
				m, got := solveMixed(t, 4, steps[where][0], steps[where][1], rate, users)
				closed, open := mixedExact(4, []closedUsers{{users, 0.030, 0.010}}, rate, dOpen)
				offClosed := (got.Workloads["w"].ResponseTime.Mean - closed[0]) / closed[0]
				offOpen := (got.Workloads["o"].ResponseTime.Mean - open) / open
				if ok, reasons := Supports(m); !ok {
					t.Errorf("%s: reported: %v", name, reasons)
				}
				if worst := math.Max(math.Abs(offClosed), math.Abs(offOpen)); worst > 1e-6 {
					t.Errorf("%s: closed %+.2g, open %+.2g off the exact means (%.6g and %.6g ms)", name, offClosed, offOpen, 1e3*closed[0], 1e3*open)
				}
			}
		}
	}
}

// TestMixedTwoClosedExact sets exact multi-class MVA on the rates of
// shared servers against the product form: two closed workloads (3 users
// thinking 30 ms, 10 ms of demand; 5 users thinking 50 ms, 20 ms) beside
// open requests of 10 ms at 50 and 200 requests/s, on four cores.
func TestMixedTwoClosedExact(t *testing.T) {
	for _, rate := range []float64{50, 200} {
		m, err := model.Parse([]byte(fmt.Sprintf(`perfcast: 1
hosts: {h: {cpu: {cores: 4}}}
components:
  app: {host: h, operations: {a: {steps: [{cpu: exp(10ms)}]}, b: {steps: [{cpu: exp(20ms)}]}}}
workload:
  o: {open: {rate: %g}, steps: [{call: app/a}]}
  w: {closed: {users: 3, think: exp(30ms)}, steps: [{call: app/a}]}
  v: {closed: {users: 5, think: exp(50ms)}, steps: [{call: app/b}]}
`, rate)), "mixed2.yaml")
		if err != nil {
			t.Fatal(err)
		}
		got, err := Solver{}.Solve(context.Background(), m, solve.Options{})
		if err != nil {
			t.Fatal(err)
		}
		closed, open := mixedExact(4, []closedUsers{{3, 0.030, 0.010}, {5, 0.050, 0.020}}, rate, 0.010)
		for name, want := range map[string]float64{"w": closed[0], "v": closed[1], "o": open} {
			if g := got.Workloads[name].ResponseTime.Mean; math.Abs(g-want) > 1e-6*want {
				t.Errorf("rate=%g: workload %s %.9g ms, product form %.9g ms", rate, name, 1e3*g, 1e3*want)
			}
		}
	}
}

// TestMixedExactOneServer checks mixedExact where the standard treatment
// of mixed networks is exact, on one server: the closed workload's
// demand stretched by 1/(1 − U_open) and the open one's by
// (1 + Q_closed)/(1 − U_open).
func TestMixedExactOneServer(t *testing.T) {
	for _, rate := range []float64{20, 50} {
		for _, users := range []int{1, 4} {
			_, got := solveMixed(t, 1, "{cpu: exp(10ms)}", "{cpu: exp(10ms)}", rate, users)
			closed, open := mixedExact(1, []closedUsers{{users, 0.030, 0.010}}, rate, 0.010)
			for name, want := range map[string]float64{"w": closed[0], "o": open} {
				if g := got.Workloads[name].ResponseTime.Mean; math.Abs(g-want) > 1e-6*want {
					t.Errorf("rate=%g users=%d: workload %s %.9g ms, product form %.9g ms", rate, users, name, 1e3*g, 1e3*want)
				}
			}
		}
	}
}

// TestMixedPoolAgainstSim sets the analytical solver against the
// simulator on a pool of four held by 8 closed users (think time 30 ms)
// for 20 ms and by open requests for 5 ms (100 and 400 requests/s),
// 20 ms (100 requests/s) or 40 ms (20 and 60 requests/s), every holding
// time exponential. With one mean the product form is exact, and the
// model is taken. With other means neither the closed users' MVA nor the
// open requests' wait is: the closed users' mean stays within
// arrivalShare of the simulator's beyond its half-width, and the open
// workload, whose wait came out −49 to +18 % of the simulator's, is
// reported (mixedMisjudged).
func TestMixedPoolAgainstSim(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates")
	}
	for _, c := range []struct{ hold, rate float64 }{{5, 100}, {5, 400}, {20, 100}, {40, 20}, {40, 60}} {
		name := fmt.Sprintf("open hold=%gms rate=%g", c.hold, c.rate)
		m, got := solveMixed(t, 64, "{hold: {resource: pool, steps: [{delay: exp(20ms)}]}}", fmt.Sprintf("{hold: {resource: pool, steps: [{delay: exp(%gms)}]}}", c.hold), c.rate, 8)
		want, err := sim.New().Solve(context.Background(), m, solve.Options{Seed: 1, Precision: gridPrecision})
		if err != nil {
			t.Fatal(err)
		}
		ok, reasons := Supports(m)
		for _, w := range []string{"w", "o"} {
			g := got.Workloads[w].ResponseTime.Mean
			mean, half := simMean(want, w)
			far := math.Abs(g-mean) > arrivalShare*mean+half
			t.Logf("%s: workload %s: mva %.4g ms, sim %.4g ± %.2g ms (%+.1f %%), taken %v", name, w, 1e3*g, 1e3*mean, 1e3*half, 100*(g-mean)/mean, ok)
			if far && (ok || w == "w") {
				t.Errorf("%s: workload %s: mva %.4g ms against the simulator's %.4g ± %.2g ms", name, w, 1e3*g, 1e3*mean, 1e3*half)
			}
		}
		if ok != (c.hold == 20) {
			t.Errorf("%s: taken %v: %v", name, ok, reasons)
		}
	}
}

// solveMixed solves, with the analytical solver, the model of the mixed
// tests: operations of the given steps on a host of the given cores
// (beside a pool of four), one called by a closed workload w of users
// with think time exp(30 ms), the other by an open workload o at rate.
func solveMixed(t *testing.T, cores int, closedSteps, openSteps string, rate float64, users int) (*model.Model, *solve.Result) {
	t.Helper()
	m, err := model.Parse([]byte(fmt.Sprintf(`perfcast: 1
hosts: {h: {cpu: {cores: %d}}}
components:
  app: {host: h, operations: {op: {steps: [%s]}, open: {steps: [%s]}}}
passive: {pool: {capacity: 4}}
workload:
  o: {open: {rate: %g}, steps: [{call: app/open}]}
  w: {closed: {users: %d, think: exp(30ms)}, steps: [{call: app/op}]}
`, cores, closedSteps, openSteps, rate, users)), "mixed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got, err := Solver{}.Solve(context.Background(), m, solve.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return m, got
}

// TestMixedArrivalsNotPoisson: open requests whose arrivals are not
// Poisson's (cv 0.5 and 2) beside 8 users on four cores, and at cv 2 on
// one, are reported (mixedArrivalsMisjudged), where the product form
// taken with Poisson arrivals put the open workload 9 to 28 % and the
// users 3 to 12 % off the simulator (by hand); with Poisson arrivals the
// same models are taken.
func TestMixedArrivalsNotPoisson(t *testing.T) {
	for _, c := range []struct {
		cores int
		rate  float64
	}{{4, 100}, {4, 250}, {1, 25}} {
		for _, cv := range []float64{0.5, 1, 2} {
			m, err := model.Parse([]byte(fmt.Sprintf(`perfcast: 1
hosts: {h: {cpu: {cores: %d}}}
components:
  app: {host: h, operations: {op: {steps: [{cpu: exp(10ms)}]}, open: {steps: [{cpu: exp(10ms)}]}}}
workload:
  o: {open: {rate: %g, cv: %g}, steps: [{call: app/open}]}
  w: {closed: {users: 8, think: exp(30ms)}, steps: [{call: app/op}]}
`, c.cores, c.rate, cv)), "gi.yaml")
			if err != nil {
				t.Fatal(err)
			}
			ok, reasons := Supports(m)
			if ok != (cv == 1) {
				t.Errorf("cores=%d rate=%g cv=%g: taken %v: %v", c.cores, c.rate, cv, ok, reasons)
			}
		}
	}
}
