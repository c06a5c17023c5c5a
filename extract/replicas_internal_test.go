package extract

import (
	"math"
	"testing"
)

func TestActiveReplicas(t *testing.T) {
	names := []string{"a", "b", "c", "d", "e", "f"}
	cases := []struct {
		name    string
		n       int
		counts  []int64
		lives   []lifetime
		avg     float64
		peak    int
		missing bool
	}{
		// Two replicas serving ten requests each over the whole time:
		// their first and last requests fall inside it, and the widening
		// makes up for that.
		{"sparse", 2, []int64{10, 10}, []lifetime{{0, 90}, {5, 95}}, 2, 2, false},
		// A rolling update: three replicas, then three others.
		{"rolling", 6, []int64{100, 100, 100, 100, 100, 100},
			[]lifetime{{0, 50}, {0, 50}, {0, 50}, {50, 100}, {50, 100}, {50, 100}}, 3 * 50 * 101.0 / 99 * 2 / 100, 3, false},
		// One request says nothing of how long the replica lived.
		{"single", 2, []int64{1, 40}, []lifetime{{10, 11}, {0, 100}}, 2, 2, false},
		{"no lifetimes", 2, []int64{5, 5}, []lifetime{{0, 10}}, 0, 0, true},
	}
	for _, c := range cases {
		counts, lives := map[string]int64{}, map[string]lifetime{}
		for i := range c.n {
			counts[names[i]] = c.counts[i]
			if i < len(c.lives) {
				lives[names[i]] = c.lives[i]
			}
		}
		avg, peak, ok := activeReplicas(names[:c.n], counts, lives)
		if ok == c.missing || ok && (math.Abs(avg-c.avg) > 1e-9 || peak != c.peak) {
			t.Errorf("%s: %g on average, at most %d, ok %v; want %g, %d, %v", c.name, avg, peak, ok, c.avg, c.peak, !c.missing)
		}
	}
}
