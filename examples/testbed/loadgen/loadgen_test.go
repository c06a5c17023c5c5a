package loadgen

import (
	"context"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// The schedule is a Poisson process at the asked rate: counts within four
// standard deviations (sqrt of the mean) of λ·(steady + ramps/2), and in the
// steady phase counts per 100 ms window with a variance-to-mean ratio near 1
// (its standard error with 100 windows is about sqrt(2/99) = 0.14).
func TestArrivalsPoisson(t *testing.T) {
	const rate = 1000.0
	p := Phases{RampUp: 2 * time.Second, Steady: 10 * time.Second, RampDown: 2 * time.Second}
	for seed := range uint64(3) {
		a := Arrivals(rate, p, rand.New(rand.NewPCG(seed, 1)))
		want := rate * (10 + 1 + 1)
		if d := math.Abs(float64(len(a)) - want); d > 4*math.Sqrt(want) {
			t.Fatalf("seed %d: %d arrivals, want %g ± %g", seed, len(a), want, 4*math.Sqrt(want))
		}
		windows := make([]float64, 100)
		steady := 0
		for i, x := range a {
			if i > 0 && x < a[i-1] {
				t.Fatalf("arrivals out of order at %d", i)
			}
			if x >= p.RampUp && x < p.RampUp+p.Steady {
				steady++
				windows[int((x-p.RampUp)/(100*time.Millisecond))]++
			}
		}
		if d := math.Abs(float64(steady) - rate*10); d > 4*math.Sqrt(rate*10) {
			t.Fatalf("seed %d: %d steady arrivals, want %g", seed, steady, rate*10)
		}
		mean, sq := 0.0, 0.0
		for _, w := range windows {
			mean += w / 100
		}
		for _, w := range windows {
			sq += (w - mean) * (w - mean) / 99
		}
		if r := sq / mean; math.Abs(r-1) > 0.6 {
			t.Fatalf("seed %d: variance/mean of counts per window = %.2f, want 1 ± 0.6", seed, r)
		}
		// The ramp-up half: λ·R/2 expected, rising linearly, so its first
		// half holds a quarter of it.
		first := 0
		for _, x := range a {
			if x < p.RampUp/2 {
				first++
			}
		}
		if want := rate * 0.25; math.Abs(float64(first)-want) > 4*math.Sqrt(want) {
			t.Fatalf("seed %d: %d arrivals in the first second of the ramp-up, want %g", seed, first, want)
		}
	}
}

func TestQuantile(t *testing.T) {
	v := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, c := range []struct{ q, want float64 }{{0.5, 5}, {0.95, 10}, {0.1, 1}, {0.11, 2}, {1, 10}} {
		if got := Quantile(v, c.q); got != c.want {
			t.Errorf("Quantile(%g) = %g, want %g", c.q, got, c.want)
		}
	}
	if !math.IsNaN(Quantile(nil, 0.5)) {
		t.Error("Quantile of nothing is not NaN")
	}
}

func get(path string) func(context.Context, *rand.Rand, string) (*http.Request, error) {
	return func(ctx context.Context, _ *rand.Rand, base string) (*http.Request, error) {
		return http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	}
}

// An open run against a fake server: the steady phase's count is within
// four standard deviations of rate·steady, every request the generator
// counts reached the server, and the slow class's latencies are at least
// the server's delay.
func TestOpenRun(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.URL.Path == "/slow" {
			time.Sleep(20 * time.Millisecond)
		}
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	const rate = 200.0
	cfg := Config{
		BaseURL: srv.URL,
		Classes: []Class{{Name: "fast", Weight: 3, NewRequest: get("/fast")}, {Name: "slow", Weight: 1, NewRequest: get("/slow")}},
		Phases:  Phases{RampUp: 200 * time.Millisecond, Steady: 2 * time.Second, RampDown: 200 * time.Millisecond},
		Rate:    rate,
		Seed:    7,
	}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := rate * 2
	n := res.All.Count + res.All.Errors
	if d := math.Abs(float64(n) - want); d > 4*math.Sqrt(want) {
		t.Fatalf("steady requests %d, want %g ± %g", n, want, 4*math.Sqrt(want))
	}
	if res.All.Errors > 0 || res.Dropped > 0 {
		t.Fatalf("%d errors (%s), %d dropped", res.All.Errors, res.FirstError, res.Dropped)
	}
	if int64(res.Sent) != hits.Load() {
		t.Fatalf("generator sent %d, server saw %d", res.Sent, hits.Load())
	}
	// The slow class has a quarter of the arrivals: binomial tolerance.
	slow := float64(res.Classes["slow"].Count) / float64(n)
	if sd := math.Sqrt(0.25 * 0.75 / float64(n)); math.Abs(slow-0.25) > 4*sd {
		t.Fatalf("slow share %.3f, want 0.25 ± %.3f", slow, 4*sd)
	}
	if s := res.Classes["slow"]; s.P50 < 0.02 || s.Mean < 0.02 || s.P99 < s.P95 || s.P95 < s.P50 {
		t.Fatalf("slow class summary %+v: want p50 and mean ≥ 20ms, ordered percentiles", s)
	}
	if ci := res.All.MeanCI95; !(ci > 0 && ci < res.All.Mean) {
		t.Fatalf("mean %g ± %g: want an interval narrower than the mean", res.All.Mean, ci)
	}
	if res.Mode != "open" || res.SteadySeconds != 2 {
		t.Fatalf("mode %q steady %g", res.Mode, res.SteadySeconds)
	}
}

// A closed run: users never exceed the rate their think time allows
// (N/Z, plus four standard deviations), and stop at the end of the run.
func TestClosedRun(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
	}))
	defer srv.Close()
	cfg := Config{
		BaseURL: srv.URL,
		Classes: []Class{{Name: "a", Weight: 1, NewRequest: get("/a")}},
		Phases:  Phases{RampUp: 100 * time.Millisecond, Steady: 2 * time.Second, RampDown: 100 * time.Millisecond},
		Users:   5,
		Think:   50 * time.Millisecond,
		Seed:    3,
	}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	max := 5 / 0.05 * 2.0
	if n := float64(res.All.Count); n > max+4*math.Sqrt(max) || n == 0 {
		t.Fatalf("closed run: %g requests in the steady phase, want at most %g", n, max+4*math.Sqrt(max))
	}
	sent := hits.Load()
	time.Sleep(100 * time.Millisecond)
	if hits.Load() != sent {
		t.Fatal("users went on after the run ended")
	}
}

func TestConfigErrors(t *testing.T) {
	c := Class{Name: "a", Weight: 1, NewRequest: get("/")}
	bad := []Config{
		{Classes: nil, Rate: 1, Phases: Phases{Steady: time.Second}},
		{Classes: []Class{c}, Phases: Phases{Steady: time.Second}},
		{Classes: []Class{c}, Rate: 1, Users: 1, Phases: Phases{Steady: time.Second}},
		{Classes: []Class{c}, Rate: 1},
		{Classes: []Class{{Name: "a"}}, Rate: 1, Phases: Phases{Steady: time.Second}},
	}
	for i, cfg := range bad {
		if _, err := Run(context.Background(), cfg); err == nil {
			t.Errorf("config %d accepted", i)
		}
	}
}

// The half-width of the batch means' interval: t(0.975, 9) · sd / √10 for
// ten parts whose means are 1 … 10; parts without requests do not count,
// and fewer than five parts give none.
func TestBatchHalfWidth(t *testing.T) {
	var b batchMeans
	for i := range batches {
		b.add(i, float64(i+1)-0.5)
		b.add(i, float64(i+1)+0.5)
	}
	// sd of 1 … 10 is √(55/6); t(0.975, 9) = 2.2622.
	want := 2.2621571628 * math.Sqrt(55.0/6) / math.Sqrt(10)
	if got := b.halfWidth(); math.Abs(got-want) > 1e-6 {
		t.Fatalf("half-width %g, want %g", got, want)
	}
	var few batchMeans
	for i := range 4 {
		few.add(i, 1)
	}
	if got := few.halfWidth(); got != 0 {
		t.Fatalf("four parts: half-width %g, want 0", got)
	}
}
