package sim

import (
	"fmt"
	"math"
	"os"
	"testing"
)

// coupledSlots solves exactly (up to truncation at k requests per class) the
// Markov chain of two classes on one processor-sharing core, each class
// behind a one-unit pool (a service limited to one thread): Poisson arrivals
// at rates la and lb, exponential bursts of means da and db, the core split
// equally between the classes that have a burst in service. It returns each
// class's mean number in the system and the probability that its pool is
// held. Gauss–Seidel on the balance equations, to a change below 1e-14.
func coupledSlots(la, da, lb, db float64, k int) (na, nb, pa, pb float64) {
	ma, mb := 1/da, 1/db
	pi := make([]float64, k*k)
	for i := range pi {
		pi[i] = 1 / float64(k*k)
	}
	at := func(a, b int) float64 {
		if a < 0 || b < 0 || a >= k || b >= k {
			return 0
		}
		return pi[a*k+b]
	}
	// rate of a's and b's departures from state (a, b).
	share := func(a, b int) (float64, float64) {
		switch {
		case a > 0 && b > 0:
			return ma / 2, mb / 2
		case a > 0:
			return ma, 0
		case b > 0:
			return 0, mb
		}
		return 0, 0
	}
	for sweep := 0; sweep < 200000; sweep++ {
		change := 0.0
		for a := range k {
			for b := range k {
				outA, outB := share(a, b)
				out := outA + outB
				if a < k-1 {
					out += la
				}
				if b < k-1 {
					out += lb
				}
				in := la*at(a-1, b) + lb*at(a, b-1)
				if a < k-1 {
					d, _ := share(a+1, b)
					in += d * at(a+1, b)
				}
				if b < k-1 {
					_, d := share(a, b+1)
					in += d * at(a, b+1)
				}
				v := in / out
				change = math.Max(change, math.Abs(v-pi[a*k+b]))
				pi[a*k+b] = v
			}
		}
		var sum float64
		for _, v := range pi {
			sum += v
		}
		for i := range pi {
			pi[i] /= sum
		}
		if change/sum < 1e-14 {
			break
		}
	}
	for a := range k {
		for b := range k {
			p := pi[a*k+b]
			na += float64(a) * p
			nb += float64(b) * p
			if a > 0 {
				pa += p
			}
			if b > 0 {
				pb += p
			}
		}
	}
	return na, nb, pa, pb
}

// TestCoupledSlots: two services limited to one thread each share one core
// (the shape of two Go services with GOMAXPROCS 1 on one host). Their pools'
// utilizations and the response times match the exact Markov chain (the
// analytical solver's checks against the chain are in
// solve/mva/occupancy_test.go).
func TestCoupledSlots(t *testing.T) {
	const la, da, lb, db = 225.0, 2e-3, 300.0, 1e-3
	na, nb, pa, pb := coupledSlots(la, da, lb, db, 60)
	tmpl, err := os.ReadFile("../testdata/coupled-slots.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := run(t, fmt.Sprintf(string(tmpl), la, lb), 400000)
	ra, rb := res(t, r, "a-slot"), res(t, r, "b-slot")
	within(t, "a's pool held", ra.Utilization, ra.UtilizationCI95, pa, 0)
	within(t, "b's pool held", rb.Utilization, rb.UtilizationCI95, pb, 0)
	wa, wb := wl(t, r, "wa"), wl(t, r, "wb")
	within(t, "a's response time", wa.ResponseTime.Mean, wa.ResponseTime.CI95, na/la, 0)
	within(t, "b's response time", wb.ResponseTime.Mean, wb.ResponseTime.CI95, nb/lb, 0)
	// The chain's stretches, held time over demand: 1.404 and 1.605.
	withinRel(t, "a's stretch", pa/(la*da), 1.404, 0.001)
	withinRel(t, "b's stretch", pb/(lb*db), 1.605, 0.001)
}
