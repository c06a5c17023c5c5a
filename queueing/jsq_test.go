package queueing

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestJSQChainIsMMc checks the chain itself: one queue is M/M/c.
func TestJSQChainIsMMc(t *testing.T) {
	for _, c := range []int{1, 3} {
		for _, rho := range []float64{0.3, 0.8} {
			got, want := JSQChainWait(1, c, rho), MMcWait(c, rho*float64(c))
			if math.Abs(got-want) > 1e-6*want {
				t.Errorf("c=%d rho=%g: chain %.8g, Erlang %.8g", c, rho, got, want)
			}
		}
	}
}

// TestJSQTable prints jsqTable's rows from the chain, to standard error,
// with PERFCAST_JSQ_TABLE set (to all, or to servers such as 1,2);
// otherwise it checks a spread of its entries against the chain.
func TestJSQTable(t *testing.T) {
	f := func(c int, rho float64) float64 {
		return JSQChainWait(2, c, rho)/MMcWait(2*c, 2*float64(c)*rho) - 1
	}
	if rows := os.Getenv("PERFCAST_JSQ_TABLE"); rows != "" {
		// Each row as it is done: the slowest take minutes.
		for _, c := range jsqServers {
			if rows != "all" && !slices.Contains(strings.Split(rows, ","), fmt.Sprint(c)) {
				continue
			}
			var b strings.Builder
			b.WriteString("\t{1")
			for j := 1; j < jsqPoints; j++ {
				fmt.Fprintf(&b, ", %.4f", f(c, float64(j)*jsqStep))
			}
			fmt.Fprintf(&b, "}, // c = %d\n", c)
			fmt.Fprint(os.Stderr, b.String())
		}
		return
	}
	// A spread of entries whose chains are quick to solve.
	for _, e := range []struct{ i, j int }{{0, 1}, {0, 18}, {1, 6}, {1, 12}, {3, 1}, {3, 8}, {4, 4}} {
		c, rho := jsqServers[e.i], float64(e.j)*jsqStep
		if got, want := jsqTable[e.i][e.j], f(c, rho); math.Abs(got-want) > 1e-4 {
			t.Errorf("jsqTable c=%d rho=%g: %.4f, the chain %.5f", c, rho, got, want)
		}
	}
}

// TestJSQWaitAgainstChain sets JSQWait, tabulated on two queues and taken
// as linear in the queues beyond, against the exact chain on three and
// four, and checks that it lies between one shared queue and a random
// split.
func TestJSQWaitAgainstChain(t *testing.T) {
	for _, tc := range []struct {
		r, c int
		rho  float64
	}{{2, 1, 0.3}, {2, 3, 0.85}, {3, 1, 0.4}, {3, 2, 0.6}, {4, 1, 0.5}, {4, 2, 0.4}} {
		got, want := JSQWait(tc.r, tc.c, tc.rho), JSQChainWait(tc.r, tc.c, tc.rho)
		t.Logf("r=%d c=%d rho=%g: JSQWait %.5f, the chain %.5f (%+.2f %%)", tc.r, tc.c, tc.rho, got, want, 100*(got-want)/want)
		if math.Abs(got-want) > 0.02*want {
			t.Errorf("r=%d c=%d rho=%g: JSQWait %.5f, the chain %.5f", tc.r, tc.c, tc.rho, got, want)
		}
		pooled, split := MMcWait(tc.r*tc.c, tc.rho*float64(tc.r*tc.c)), MMcWait(tc.c, tc.rho*float64(tc.c))
		if !(pooled <= got && got <= split) {
			t.Errorf("r=%d c=%d rho=%g: JSQWait %.5f outside one queue's %.5f and a random split's %.5f", tc.r, tc.c, tc.rho, got, pooled, split)
		}
	}
	rho := 0.7
	if JSQWait(1, 3, rho) != MMcWait(3, rho*3) || JSQFactor(1, 3, rho) != 1 {
		t.Error("one queue is not M/M/c")
	}
	if !math.IsNaN(JSQChainWait(12, 8, 0.9)) || !math.IsNaN(JSQChainWait(2, 1, 1)) {
		t.Error("JSQChainWait solved a chain it cannot key, or a full load")
	}
	if !math.IsNaN(JSQFactor(2, 1, math.NaN())) || JSQFactor(3, 100, 0.5) <= 1 || JSQFactor(3, 1, 2) != 1 {
		t.Error("JSQFactor outside its table")
	}
	if !math.IsInf(JSQWait(2, 1, 1), 1) || JSQWait(2, 1, 0) != 0 {
		t.Error("JSQWait at the ends of its range")
	}
}

// TestOfTwoTable prints ofTwoTable's rows from the chain, to standard
// error, with PERFCAST_OF_TWO_TABLE set (to all, or to queues such as 3);
// otherwise it checks a spread of its entries against the chain, five
// queues' share (from the limit of many) against the chain where it is
// quick to solve, and the share for several servers, taken from one
// server's, against the chain: never below it, and within a fifth of it
// at half load.
func TestOfTwoTable(t *testing.T) {
	g := func(r, c int, rho float64) float64 {
		jsq := JSQChainWait(r, c, rho)
		return (ChoicesChainWait(r, c, 2, rho) - jsq) / (MMcWait(c, rho*float64(c)) - jsq)
	}
	if rows := os.Getenv("PERFCAST_OF_TWO_TABLE"); rows != "" {
		for i, row := range ofTwoTable {
			r := i + 3
			if rows != "all" && !slices.Contains(strings.Split(rows, ","), fmt.Sprint(r)) {
				continue
			}
			var b strings.Builder
			b.WriteString("\t{0")
			for j := 1; j < len(row); j++ {
				fmt.Fprintf(&b, ", %.4f", g(r, 1, float64(j)*ofTwoStep))
			}
			fmt.Fprintf(&b, "}, // %d queues\n", r)
			fmt.Fprint(os.Stderr, b.String())
		}
		return
	}
	for _, e := range []struct{ r, j int }{{3, 1}, {3, 5}, {4, 2}} {
		rho := float64(e.j) * ofTwoStep
		if got, want := ofTwoTable[e.r-3][e.j], g(e.r, 1, rho); math.Abs(got-want) > 1e-4 {
			t.Errorf("ofTwoTable r=%d rho=%g: %.4f, the chain %.5f", e.r, rho, got, want)
		}
	}
	for _, tc := range []struct {
		r, c    int
		rho     float64
		lo, tol float64 // got − want within [lo·want, tol·want]
	}{
		{5, 1, 0.2, -0.3, 0.3}, // from the limit of many queues
		{5, 1, 0.4, -0.3, 0.3},
		{3, 2, 0.5, 0, 0.2}, // from one server's
		{3, 4, 0.5, 0, 0.2},
		{3, 2, 0.3, 0, 1},
	} {
		got, want := OfTwoShare(tc.r, tc.c, tc.rho), g(tc.r, tc.c, tc.rho)
		t.Logf("r=%d c=%d rho=%g: OfTwoShare %.4f, the chain %.4f", tc.r, tc.c, tc.rho, got, want)
		if d := got - want; d < tc.lo*want || d > tc.tol*want {
			t.Errorf("r=%d c=%d rho=%g: OfTwoShare %.4f, the chain %.4f", tc.r, tc.c, tc.rho, got, want)
		}
	}
	if OfTwoShare(2, 1, 0.5) != 0 || OfTwoShare(3, 1, 0) != 0 || OfTwoShare(4, 2, 1) != 0 || OfTwoShare(64, 1, math.NaN()) != 0 || OfTwoShare(3, 0, 0.5) != 0 {
		t.Error("OfTwoShare at the ends of its range")
	}
}
