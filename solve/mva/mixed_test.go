package mva

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve"
)

// mixedExact is the exact mean response time of a closed class of n users
// (think time z) and an open class (rate lambda) at one processor-sharing
// station of c servers, both with exponential demand d: the mixed
// network's product form, summed over the closed users j and the open
// requests m at the station, P(j, m) ∝ z^(n−j)/(n−j)! · C(j+m, j) ·
// d^j · (λd)^m / Π_{i ≤ j+m} min(i, c), the open ones truncated where
// their terms no longer count.
func mixedExact(c, n int, z, lambda, d float64) (closed, open float64) {
	const most = 2000
	logA := make([]float64, n+most+1)
	for i := 1; i < len(logA); i++ {
		logA[i] = logA[i-1] + math.Log(float64(min(i, c)))
	}
	var sum, sumJ, sumM, top float64
	top = math.Inf(-1)
	logs := make([][]float64, n+1)
	for j := 0; j <= n; j++ {
		logs[j] = make([]float64, most+1)
		for m := 0; m <= most; m++ {
			lj, _ := math.Lgamma(float64(n - j + 1))
			lc1, _ := math.Lgamma(float64(j + m + 1))
			lc2, _ := math.Lgamma(float64(j + 1))
			lc3, _ := math.Lgamma(float64(m + 1))
			l := float64(n-j)*math.Log(z) - lj + lc1 - lc2 - lc3 + float64(j)*math.Log(d) - logA[j+m]
			if m > 0 {
				l += float64(m) * math.Log(lambda*d)
			}
			logs[j][m] = l
			top = math.Max(top, l)
		}
	}
	for j := range logs {
		for m, l := range logs[j] {
			p := math.Exp(l - top)
			sum += p
			sumJ += float64(j) * p
			sumM += float64(m) * p
		}
	}
	inJ, inM := sumJ/sum, sumM/sum
	x := (float64(n) - inJ) / z
	return inJ / x, inM / lambda
}

// TestMixedSharedServers sets the analytical solver against the exact
// product form of one four-core station, or one pool of four held over
// a delay, that a closed workload (1 to 16 users, think time 30 ms) and
// an open one (10 to 300 requests/s) share, 10 ms of exponential demand
// or holding time each. The solver stretches the closed workload's
// demand by the open load, as is exact for one server, and queues the
// open one at the whole load as Poisson arrivals: the closed
// workload came out up to 165 % long, the open one −3 % to many times
// the exact mean near saturation, and Supports took them all. Wherever
// it takes the model now (mixedMisjudged), both are within arrivalShare
// of the exact means.
func TestMixedSharedServers(t *testing.T) {
	steps := map[string]string{
		"cpu":  "{cpu: exp(10ms)}",
		"pool": "{hold: {resource: pool, steps: [{delay: exp(10ms)}]}}",
	}
	for _, where := range []string{"cpu", "pool"} {
		for _, rate := range []float64{10, 20, 100, 200, 300} {
			for _, users := range []int{1, 4, 8, 12, 16} {
				mixedAgainstExact(t, where, steps[where], rate, users)
			}
		}
	}
}

// mixedAgainstExact is one case of TestMixedSharedServers.
func mixedAgainstExact(t *testing.T, where, steps string, rate float64, users int) {
	t.Helper()
	name := fmt.Sprintf("%s rate=%g users=%d", where, rate, users)
	m, got := solveMixed(t, 4, steps, rate, users)
	closed, open := mixedExact(4, users, 0.030, rate, 0.010)
	offClosed := (got.Workloads["w"].ResponseTime.Mean - closed) / closed
	offOpen := (got.Workloads["o"].ResponseTime.Mean - open) / open
	ok, reasons := Supports(m)
	t.Logf("%s: taken %v: closed %+.1f %% (exact %.4g ms), open %+.1f %% (exact %.4g ms)", name, ok, 100*offClosed, 1e3*closed, 100*offOpen, 1e3*open)
	worst := math.Max(math.Abs(offClosed), math.Abs(offOpen))
	if ok && worst > arrivalShare {
		t.Errorf("%s: taken, but off the exact means by %.1f %%", name, 100*worst)
	}
	if !ok && worst <= arrivalShare {
		t.Logf("%s: reported, though within %.0f %%: %v", name, 100*arrivalShare, reasons)
	}
}

// TestMixedExactOneServer checks mixedExact where the solver is exact: on
// one server the closed workload's demand stretched by 1/(1 − U_open)
// and the open one's by (1 + Q_closed)/(1 − U_open) are the product
// form's means.
func TestMixedExactOneServer(t *testing.T) {
	for _, rate := range []float64{20, 50} {
		for _, users := range []int{1, 4} {
			_, got := solveMixed(t, 1, "{cpu: exp(10ms)}", rate, users)
			closed, open := mixedExact(1, users, 0.030, rate, 0.010)
			for name, want := range map[string]float64{"w": closed, "o": open} {
				if g := got.Workloads[name].ResponseTime.Mean; math.Abs(g-want) > 1e-6*want {
					t.Errorf("rate=%g users=%d: workload %s %.9g ms, product form %.9g ms", rate, users, name, 1e3*g, 1e3*want)
				}
			}
		}
	}
}

// solveMixed solves, with the analytical solver, the model of the mixed
// tests: an operation of the given steps on a host of the given cores
// (beside a pool of four), called by an open workload o at rate and a
// closed one w of users with think time exp(30 ms).
func solveMixed(t *testing.T, cores int, steps string, rate float64, users int) (*model.Model, *solve.Result) {
	t.Helper()
	m, err := model.Parse([]byte(fmt.Sprintf(`perfcast: 1
hosts: {h: {cpu: {cores: %d}}}
components:
  app: {host: h, operations: {op: {steps: [%s]}}}
passive: {pool: {capacity: 4}}
workload:
  o: {open: {rate: %g}, steps: [{call: app/op}]}
  w: {closed: {users: %d, think: exp(30ms)}, steps: [{call: app/op}]}
`, cores, steps, rate, users)), "mixed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got, err := Solver{}.Solve(context.Background(), m, solve.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return m, got
}
