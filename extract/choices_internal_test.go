package extract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/perfcast/perfcast/model"
)

// balanced simulates calls to replicas of one component with c servers
// each (first come, first served), Poisson at load rho per server, work of
// mean 10 ms and squared cv scv (exponential at 1, gamma otherwise), the
// replicas chosen by policy ("turns"; "callers": four callers each
// taking turns of its own, a call from one of them at random; "random";
// "load": the fewest in progress, ties at random; "two": the lighter of two
// drawn at random, ties at random). Each execution's span starts and ends
// later than the balancer counts it in and out by an exponential delay of
// mean jitter times the mean work. The replica named "late" is not there
// for the first third of the calls, the one named "early" gone for the
// last third. It returns the sweep that read the spans.
func balanced(policy string, replicas []string, c int, rho, scv, jitter float64, calls int, seed uint64) *choiceSweep {
	rng := rand.New(rand.NewPCG(seed, 7))
	const mean = 10e6 // ns
	r := len(replicas)
	free := make([][]float64, r) // when each server is next free
	for i := range free {
		free[i] = make([]float64, c)
	}
	inProgress := make([][]float64, r) // the balancer's view: when each call leaves
	w := newChoiceSweep()
	up := func(i, k int) bool {
		switch replicas[i] {
		case "late":
			return k >= calls/3
		case "early":
			return k < 2*calls/3
		}
		return true
	}
	work := func() float64 {
		if scv == 1 {
			return rng.ExpFloat64() * mean
		}
		// A gamma of shape 1/scv by summing exponentials (shape an
		// integer here).
		k := int(math.Round(1 / scv))
		x := 0.0
		for range k {
			x += rng.ExpFloat64()
		}
		return x / float64(k) * mean
	}
	live := 0
	for i := range replicas {
		if up(i, 0) {
			live++
		}
	}
	t, turn := 0.0, 0
	var turns [4]int
	for k := range calls {
		t += rng.ExpFloat64() * mean / (rho * float64(c*live))
		var choice int
		var ups []int
		for i := range replicas {
			if up(i, k) {
				ups = append(ups, i)
			}
			kept := inProgress[i][:0]
			for _, e := range inProgress[i] {
				if e > t {
					kept = append(kept, e)
				}
			}
			inProgress[i] = kept
		}
		switch policy {
		case "turns":
			choice = ups[turn%len(ups)]
			turn++
		case "callers":
			c := rng.IntN(len(turns))
			choice = ups[turns[c]%len(ups)]
			turns[c]++
		case "random":
			choice = ups[rng.IntN(len(ups))]
		case "two":
			a, b := ups[rng.IntN(len(ups))], ups[rng.IntN(len(ups)-1)]
			if b >= a {
				b = ups[slices.Index(ups, b)+1]
			}
			choice = a
			if len(inProgress[b]) < len(inProgress[a]) || len(inProgress[b]) == len(inProgress[a]) && rng.IntN(2) == 0 {
				choice = b
			}
		case "load":
			choice = leastLoaded(rng, ups, func(i int) int { return len(inProgress[i]) })
		}
		delay := func() float64 {
			if jitter == 0 {
				return 0
			}
			return rng.ExpFloat64() * jitter * mean
		}
		start := t + delay()
		f := free[choice]
		j := 0
		for s := range f {
			if f[s] < f[j] {
				j = s
			}
		}
		end := math.Max(start, f[j]) + work()
		f[j] = end
		inProgress[choice] = append(inProgress[choice], end+delay())
		w.add(replicas[choice], int64(start), int64(end), true)
	}
	w.finish()
	return w
}

// TestChoicesTellLoadFromTurns reads the balancer from simulated calls,
// where the truth is known: a balancer by load on two, three and four
// replicas, with one or four servers, at 30 to 90 % load, with the spans
// off the balancer's count by up to 2 % of the work, is read as one; turns
// (one caller's or four's) and random picks never are, turns not even for
// regular work (squared cv 0.2, where the replica next in turn is least
// loaded for 95 % of the calls at 30 % load). The lighter of two replicas
// drawn at random is a balancer by load on two replicas and reads as one;
// on three and four it reads as least-of-two. With a replica that comes a
// third of the way in and one that goes two thirds of the way, a balancer
// by load still sends every contested call to a least loaded live
// replica.
func TestChoicesTellLoadFromTurns(t *testing.T) {
	cases := []struct {
		replicas []string
		c        int
		jitter   float64
	}{
		{[]string{"a", "b"}, 1, 0},
		{[]string{"a", "b", "c"}, 1, 0.02},
		{[]string{"a", "b", "c", "d"}, 4, 0.02},
		{[]string{"early", "a", "late"}, 2, 0},
	}
	for _, tc := range cases {
		for _, rho := range []float64{0.3, 0.6, 0.9} {
			for _, scv := range []float64{1, 0.2} {
				for _, policy := range []string{"load", "turns", "callers", "random", "two"} {
					name := fmt.Sprintf("%s/%d-replicas/%d-servers/jitter-%g/rho-%g/scv-%g", policy, len(tc.replicas), tc.c, tc.jitter, rho, scv)
					t.Run(name, func(t *testing.T) {
						w := balanced(policy, tc.replicas, tc.c, rho, scv, tc.jitter, 20000, 1)
						st := w.stats
						if st.Contested < leastBusyMinContested {
							t.Fatalf("only %.0f contested calls", st.Contested)
						}
						least := st.ContestedLeast / st.Contested
						t.Logf("contested %.0f: least %.3f, at random %.3f, of two %.3f; same turn %.3f", st.Contested, least, st.ContestedAtRandom/st.Contested, st.ContestedOfTwo/st.Contested, st.SameTurn/st.Turns)
						// The lighter of two is the lighter of all on two
						// replicas.
						var want model.Balancer
						switch {
						case policy == "load", policy == "two" && len(tc.replicas) == 2:
							want = model.LeastBusy
						case policy == "two":
							want = model.LeastOfTwo
						}
						if got := st.byLoad(len(tc.replicas)); got != want {
							t.Errorf("read as %q, truth %s", got, policy)
						}
						if policy == "load" && tc.jitter == 0 && least != 1 {
							t.Errorf("a balancer by load sent %.4f of the contested calls to a least loaded replica, want all", least)
						}
					})
				}
			}
		}
	}
}

// TestChoicesSaveFoldOn saves a sweep halfway and loads it back: folding
// the rest into it gives the counts of folding all in one.
func TestChoicesSaveFoldOn(t *testing.T) {
	all := newChoiceSweep()
	half := newChoiceSweep()
	rng := rand.New(rand.NewPCG(3, 4))
	type call struct {
		rep        string
		start, end int64
	}
	var calls []call
	at := int64(0)
	for range 3 * sweepBatch {
		at += int64(rng.ExpFloat64() * 1e9)
		calls = append(calls, call{[]string{"a", "b", "c"}[rng.IntN(3)], at, at + int64(rng.ExpFloat64()*200e9)})
	}
	for i, c := range calls {
		all.add(c.rep, c.start, c.end, true)
		half.add(c.rep, c.start, c.end, true)
		if i == len(calls)/2 {
			b, err := json.Marshal(saveChoices(half))
			if err != nil {
				t.Fatal(err)
			}
			var v savedChoices
			if err := json.NewDecoder(bytes.NewReader(b)).Decode(&v); err != nil {
				t.Fatal(err)
			}
			if half, err = v.restore(); err != nil {
				t.Fatal(err)
			}
		}
	}
	all.finish()
	half.finish()
	if all.stats != half.stats || all.stats.Uneven == 0 {
		t.Errorf("folded on after a save: %+v, in one: %+v", half.stats, all.stats)
	}
}

// TestChoicesAcrossRollingUpdates: three replicas at a time, replaced by
// three new ones thirty times over (ninety replicas seen), behind a
// balancer by load: the calls are judged among the live three all along,
// and read as by load.
func TestChoicesAcrossRollingUpdates(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	w := newChoiceSweep()
	const mean = 10e6
	var ends [3][]float64
	t0 := 0.0
	for gen := range 30 {
		names := [3]string{}
		for i := range names {
			names[i] = fmt.Sprintf("g%d-%d", gen, i)
		}
		for range 500 {
			t0 += rng.ExpFloat64() * mean / (0.6 * 3)
			for i := range ends {
				ends[i] = slices.DeleteFunc(ends[i], func(e float64) bool { return e <= t0 })
			}
			best := leastLoaded(rng, []int{0, 1, 2}, func(i int) int { return len(ends[i]) })
			end := t0 + rng.ExpFloat64()*mean
			ends[best] = append(ends[best], end)
			w.add(names[best], int64(t0), int64(end), true)
		}
	}
	w.finish()
	st := w.stats
	t.Logf("%d replicas seen; contested %.0f: least %.3f, at random %.3f", len(w.replicas), st.Contested, st.ContestedLeast/st.Contested, st.ContestedAtRandom/st.Contested)
	if st.Contested < 1000 || st.byLoad(3) != model.LeastBusy {
		t.Errorf("read as %q on %.0f contested calls, want least-busy on thousands", st.byLoad(3), st.Contested)
	}
}

// leastLoaded is the candidate with the least load, one at random among
// those tied.
func leastLoaded(rng *rand.Rand, candidates []int, load func(int) int) int {
	best, ties := -1, 0
	for _, i := range candidates {
		switch {
		case best < 0 || load(i) < load(best):
			best, ties = i, 1
		case load(i) == load(best):
			ties++
			if rng.IntN(ties) == 0 {
				best = i
			}
		}
	}
	return best
}
