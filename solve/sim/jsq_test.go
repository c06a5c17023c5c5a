package sim

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

// jsqResponse is the exact mean sojourn time of r identical M/M/c queues
// fed by one Poisson stream of rate lambda that joins a queue with the
// fewest customers (mean service s): the stationary distribution of the
// Markov chain of the sorted queue lengths, by Gauss–Seidel sweeps over
// its balance equations, then Little's law. Which of several shortest
// queues an arrival joins does not change the sorted chain, as the queues
// are alike. The chain is cut at n customers in all, where an M/M/rc
// queue at the same load (which joining the shortest queue can only trail)
// has a tail below 1e-12.
func jsqResponse(r, c int, lambda, s float64) float64 {
	rho := lambda * s / float64(r*c)
	n := r*c + int(math.Ceil(math.Log(1e-12)/math.Log(rho)))
	var states [][]int
	index := map[string]int{}
	key := func(q []int) string { return fmt.Sprint(q) }
	var gen func(q []int, lo, left int)
	gen = func(q []int, lo, left int) {
		if len(q) == r {
			index[key(q)] = len(states)
			states = append(states, slices.Clone(q))
			return
		}
		for v := lo; v <= left; v++ {
			gen(append(q, v), v, left-v)
		}
	}
	gen(nil, 0, n)
	// in[j] lists the transitions into state j; out[j] is its total rate
	// out.
	type arc struct {
		from int
		rate float64
	}
	in := make([][]arc, len(states))
	out := make([]float64, len(states))
	move := func(i int, q []int, rate float64) {
		next := slices.Clone(q)
		slices.Sort(next)
		j := index[key(next)]
		in[j] = append(in[j], arc{i, rate})
		out[i] += rate
	}
	for i, q := range states {
		total := 0
		for _, v := range q {
			total += v
		}
		if total < n {
			next := slices.Clone(q)
			next[0]++ // the sorted state's first queue is a shortest
			move(i, next, lambda)
		}
		for k, v := range q {
			if v > 0 {
				next := slices.Clone(q)
				next[k]--
				move(i, next, float64(min(v, c))/s)
			}
		}
	}
	p := make([]float64, len(states))
	p[0] = 1
	for sweep := 0; sweep < 200000; sweep++ {
		change := 0.0
		for j := range states {
			if out[j] == 0 {
				continue
			}
			var sum float64
			for _, a := range in[j] {
				sum += p[a.from] * a.rate
			}
			v := sum / out[j]
			if j == 0 {
				v = p[0] // state 0 fixes the scale
			}
			change = math.Max(change, math.Abs(v-p[j])/math.Max(v, 1e-300))
			p[j] = v
		}
		if change < 1e-11 {
			break
		}
	}
	var mass, customers float64
	for i, q := range states {
		mass += p[i]
		for _, v := range q {
			customers += p[i] * float64(v)
		}
	}
	return customers / mass / lambda
}

// TestJSQChainIsMMc checks jsqResponse itself: with one queue it is M/M/c.
func TestJSQChainIsMMc(t *testing.T) {
	for _, c := range []int{1, 3} {
		for _, rho := range []float64{0.3, 0.8} {
			lambda := rho * float64(c) / 1e-3
			withinRel(t, fmt.Sprintf("c=%d rho=%g", c, rho), jsqResponse(1, c, lambda, 1e-3), mmcResponse(c, lambda, 1e-3), 1e-6)
		}
	}
}
