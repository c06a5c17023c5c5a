package queueing

import (
	"fmt"
	"math"
	"testing"
)

// erlangCDirect is Erlang's C formula written with the sum over states.
func erlangCDirect(c int, a float64) float64 {
	term, sum := 1.0, 1.0
	for k := 1; k < c; k++ {
		term *= a / float64(k)
		sum += term
	}
	last := term * a / float64(c) * float64(c) / (float64(c) - a)
	return last / (sum + last)
}

// The recursion is the sum over states where that does not overflow, and
// stays finite beyond it.
func TestErlangC(t *testing.T) {
	for _, c := range []int{1, 2, 5, 20, 100, 150} {
		for _, rho := range []float64{0.1, 0.5, 0.8, 0.99} {
			a := rho * float64(c)
			if got, want := ErlangC(c, a), erlangCDirect(c, a); math.Abs(got-want) > 1e-12 {
				t.Errorf("C(%d, %g) = %.15g, want %.15g", c, a, got, want)
			}
		}
	}
	if got := ErlangC(1_000_000_000, 10); got != 0 {
		t.Errorf("a billion servers at a load of 10: C = %g, want 0", got)
	}
	if got := MMcWait(1, 0.5); math.Abs(got-1) > 1e-15 {
		t.Errorf("M/M/1 at half load waits %g service times, want 1", got)
	}
	if !math.IsInf(MMcWait(2, 2), 1) || !math.IsInf(GIMcWait(2, 2, 0.5), 1) {
		t.Error("a saturated queue's wait is not +Inf")
	}
}

// With Poisson's gaps Takács's sum is Erlang's formula, and with one
// server GI/M/1's σ/(1 − σ), for every load that is not a pole of a term.
func TestGIMcClosedForms(t *testing.T) {
	compared := 0
	for _, c := range []int{1, 2, 3, 5, 8, 16, 32, 64} {
		for _, rho := range []float64{0.05, 0.3, 0.55, 0.8, 0.93} {
			a := rho * float64(c)
			got, ok := giMcWait(c, a, 1)
			if !ok {
				continue // a pole: GIMcWait steps around it
			}
			compared++
			want := MMcWait(c, a)
			if math.Abs(got-want) > 1e-9*want+1e-300 {
				t.Errorf("M/M/%d at %.2f: %.12g, Erlang %.12g", c, rho, got, want)
			}
		}
	}
	if compared < 35 {
		t.Errorf("%d of 40 loads compared with Erlang's", compared)
	}
	for _, scv := range []float64{0.25, 2, 4, 9} {
		for _, rho := range []float64{0.1, 0.5, 0.9} {
			k := 1 / scv
			sigma := gapRoot(func(x float64) float64 { return math.Pow(1+(1-x)/(k*rho), -k) })
			want := sigma / (1 - sigma)
			if got := GIMcWait(1, rho, scv); math.Abs(got-want) > 1e-9*want {
				t.Errorf("GI/M/1, scv %g, at %.1f: %.12g, want %.12g", scv, rho, got, want)
			}
		}
	}
}

// Erlang-2 gaps at one server, three quarters busy: σ solves
// σ(2.5 − σ)² = 2.25 (σ = A*(1 − σ) with A*(s) = (1.5/(1.5 + s))²):
// 0.677124 to six places (the cubic bisected apart), a wait of
// σ/(1 − σ) = 2.097 service times against M/M/1's 3.
func TestGIMcErlangTwo(t *testing.T) {
	got := GIMcWait(1, 0.75, 0.5)
	sigma := got / (1 + got)
	if math.Abs(sigma*(2.5-sigma)*(2.5-sigma)-2.25) > 1e-9 || math.Abs(sigma-0.677124) > 5e-7 {
		t.Errorf("E2/M/1 at 0.75: σ = %.6f (wait %.4f)", sigma, got)
	}
}

// Poles: where c(1 − ω) = j for a term j, as at M/M/2 at half load, the
// wait is the limit either side (M/M/2 at half load waits 1/3).
func TestGIMcPole(t *testing.T) {
	if _, ok := giMcWait(2, 1, 1); ok {
		t.Fatal("M/M/2 at half load is a pole of the sum")
	}
	if got := GIMcWait(2, 1, 1.000001); math.Abs(got-1.0/3) > 1e-5 {
		t.Errorf("GI/M/2 at half load with scv 1.000001: %.9g, want 1/3", got)
	}
}

// The wait stays finite, not negative, and grows with the load, on
// hundreds of servers and for bursty and smooth arrivals, where the sum's
// terms overflow a float64 and cancel.
func TestGIMcRange(t *testing.T) {
	for _, c := range []int{1, 7, 48, 256, 1024} {
		for _, scv := range []float64{0.04, 0.5, 2, 25} {
			prev := 0.0
			for i := 1; i <= 99; i++ {
				a := float64(i) / 100 * float64(c)
				f := GIMcWait(c, a, scv)
				if math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
					t.Fatalf("GI/M/%d, scv %g, at %d %%: %g", c, scv, i, f)
				}
				if f < prev*(1-1e-6) {
					t.Errorf("GI/M/%d, scv %g: %g at %d %% after %g", c, scv, f, i, prev)
				}
				prev = f
			}
		}
	}
}

// GI/G/c is Allen and Cunneen's (1 + cs²)/2 times Erlang's for Poisson
// arrivals and GI/M/c's for exponential service.
func TestGIGc(t *testing.T) {
	for _, c := range []int{1, 3} {
		a := 0.6 * float64(c)
		if got, want := GIGcWait(c, a, 1, 0.25), MMcWait(c, a)*0.625; math.Abs(got-want) > 1e-12*want {
			t.Errorf("M/G/%d: %g, want %g", c, got, want)
		}
		if got, want := GIGcWait(c, a, 0.5, 1), GIMcWait(c, a, 0.5); math.Abs(got-want) > 1e-12*want {
			t.Errorf("GI/M/%d: %g, want %g", c, got, want)
		}
	}
}

// BenchmarkGIMcWait is one GI/M/c wait for bursty arrivals, on 2 and 64
// servers.
func BenchmarkGIMcWait(b *testing.B) {
	for _, c := range []int{2, 64} {
		b.Run(fmt.Sprintf("servers=%d", c), func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				GIMcWait(c, float64(c)*(0.3+0.001*float64(i%500)), 4)
			}
		})
	}
}
