package loadgen

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
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

// handRun summarizes hand-made records, in no particular order, as Run
// would: 300 at random over a run of 1 s + 10 s + 1 s, and one at each of
// the steady phase's batch edges (the one at its end is not in it).
func handRun(t *testing.T, keep bool) *Result {
	t.Helper()
	cfg := Config{
		Classes:      []Class{{Name: "b", Weight: 1}, {Name: "a", Weight: 2}},
		Phases:       Phases{RampUp: time.Second, Steady: 10 * time.Second, RampDown: time.Second},
		Rate:         1,
		KeepRequests: keep,
	}
	g := &gen{cfg: cfg, start: time.Unix(1000, 0), dropped: 2, lagSum: 30 * time.Millisecond, lagMax: 20 * time.Millisecond, lagN: 10}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		g.records = append(g.records, record{
			class:   rng.IntN(2),
			start:   time.Duration(rng.Int64N(int64(cfg.Total()))),
			latency: time.Duration(rng.Int64N(int64(50 * time.Millisecond))),
			failed:  rng.IntN(20) == 0,
		})
	}
	for j := range 11 {
		g.records = append(g.records, record{class: j % 2, start: cfg.RampUp + time.Duration(j)*time.Second, latency: time.Duration(j+1) * time.Millisecond})
	}
	res := &Result{Mode: "open", Rate: cfg.Rate, Start: g.start, Classes: map[string]*Summary{}}
	g.summarize(res)
	return res
}

// sameSummary reports how got differs from want: in nothing, or in the
// last bits of MeanCI95 (the batch sums add the same latencies in another
// order when a merge reads them sorted by start rather than as they
// completed).
func sameSummary(t *testing.T, name string, got, want *Summary) {
	t.Helper()
	g, w := *got, *want
	if math.Abs(g.MeanCI95-w.MeanCI95) > 1e-12*w.MeanCI95 {
		t.Errorf("%s: MeanCI95 %g, want %g", name, g.MeanCI95, w.MeanCI95)
	}
	g.MeanCI95, w.MeanCI95 = 0, 0
	if g != w {
		t.Errorf("%s: %+v, want %+v", name, g, w)
	}
}

// KeepRequests adds the steady phase's requests, sorted, and changes
// nothing else; without it the JSON has no requests. A merge of the one
// run gives its summaries and requests back.
func TestKeepRequestsAndMergeOne(t *testing.T) {
	plain, kept := handRun(t, false), handRun(t, true)
	pj, err := json.Marshal(plain)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(pj), `"requests"`) {
		t.Fatalf("requests in the JSON of a run without KeepRequests: %s", pj)
	}
	n := kept.All.Count + kept.All.Errors
	if len(kept.Requests) != n || n < 250 {
		t.Fatalf("%d requests kept, summary counts %d", len(kept.Requests), n)
	}
	if !slices.IsSortedFunc(kept.Requests, compareRequests) {
		t.Fatal("requests not ordered by at, class, latency")
	}
	for _, r := range kept.Requests {
		if r.At < 0 || r.At >= kept.SteadySeconds {
			t.Fatalf("request at %g outside [0, %g)", r.At, kept.SteadySeconds)
		}
	}
	if r := kept.Requests[0]; r.At != 0 || r.Latency != 0.001 || r.Class != "b" {
		t.Fatalf("first request %+v, want the one at the steady phase's start", r)
	}
	kj, err := json.Marshal(&Result{
		Mode: kept.Mode, Rate: kept.Rate, SteadySeconds: kept.SteadySeconds, Start: kept.Start,
		SteadyStart: kept.SteadyStart, SteadyEnd: kept.SteadyEnd, Classes: kept.Classes, All: kept.All,
		Sent: kept.Sent, Dropped: kept.Dropped, LagMean: kept.LagMean, LagMax: kept.LagMax,
	})
	if err != nil {
		t.Fatal(err)
	}
	if string(kj) != string(pj) {
		t.Fatalf("KeepRequests changed the summaries:\n%s\n%s", kj, pj)
	}

	m, err := Merge(kept)
	if err != nil {
		t.Fatal(err)
	}
	sameSummary(t, "all", m.All, kept.All)
	if len(m.Classes) != 2 {
		t.Fatalf("merged classes %v", m.Classes)
	}
	for name, s := range kept.Classes {
		sameSummary(t, name, m.Classes[name], s)
	}
	if kept.All.MeanCI95 == 0 {
		t.Fatal("no confidence interval to compare")
	}
	m.Classes, m.All, kept.Classes, kept.All = nil, nil, nil, nil
	if !reflect.DeepEqual(m, kept) {
		t.Fatalf("merge of one run:\n%+v\nwant\n%+v", m, kept)
	}
}

// part is a hand-made result of a run of steady seconds with the given
// classes and requests, as far as Merge reads it.
func part(steady float64, classes []string, reqs ...Request) *Result {
	r := &Result{Mode: "open", Rate: 10, SteadySeconds: steady, Classes: map[string]*Summary{}, All: &Summary{}, Requests: reqs}
	for _, c := range classes {
		r.Classes[c] = &Summary{}
	}
	for _, q := range reqs {
		if q.Failed {
			r.All.Errors++
		} else {
			r.All.Count++
		}
	}
	return r
}

// lat is the m-th batch's latency, in seconds, sign δ (0.25 ms) off m ms.
func lat(m int, sign float64) float64 { return float64(m)/1000 + sign*0.00025 }

// Two runs, of 10 s and 5 s, each cut into five batches (of 2 s and 1 s):
// batch m (1 … 10) has a request of class a taking m − δ ms and one of b
// taking m + δ ms; the second run also has two failures of 30 s.
func TestMergeTwo(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var r1, r2 []Request
	r2 = append(r2, Request{Class: "a", At: 0.1, Latency: 30, Failed: true})
	for j := range 5 {
		r1 = append(r1, Request{"a", 2*float64(j) + 0.5, lat(j+1, -1), false}, Request{"b", 2*float64(j) + 1.5, lat(j+1, 1), false})
		r2 = append(r2, Request{"a", float64(j) + 0.25, lat(j+6, -1), false}, Request{"b", float64(j) + 0.75, lat(j+6, 1), false})
	}
	r2 = append(r2, Request{Class: "b", At: 4.9, Latency: 30, Failed: true})
	p1, p2 := part(10, []string{"a", "b"}, r1...), part(5, []string{"b", "a"}, r2...)
	p1.Start, p1.SteadyStart, p1.SteadyEnd = t0, t0.Add(time.Second), t0.Add(11*time.Second)
	p2.Start, p2.SteadyStart, p2.SteadyEnd = t0.Add(time.Hour), t0.Add(time.Hour+time.Second), t0.Add(time.Hour+6*time.Second)
	p1.Sent, p1.Dropped, p1.LagMean, p1.LagMax, p1.CPUSeconds = 30, 1, 0.002, 0.01, 1.5
	p2.Sent, p2.Dropped, p2.LagMean, p2.LagMax, p2.CPUSeconds, p2.FirstError = 20, 2, 0.005, 0.02, 0.5, "boom"
	p2.Rate = 99

	m, err := Merge(p1, p2)
	if err != nil {
		t.Fatal(err)
	}
	// Batch means 1 … 10 ms: t(0.975, 9) · sd / √10, sd = √(55/6) ms; each
	// class's batch means are δ off those, with the same sd.
	hw := 2.2621571628 * math.Sqrt(55.0/6) / 1000 / math.Sqrt(10)
	for _, c := range []struct {
		name                     string
		got                      *Summary
		count, errs              int
		mean, p50, p95, p99, ci9 float64
	}{
		// Nearest ranks of 20: p50 the 10th (5 + δ), p95 the 19th (10 − δ),
		// p99 the 20th; of 10: the 5th, 10th and 10th.
		{"all", m.All, 20, 2, 0.0055, lat(5, 1), lat(10, -1), lat(10, 1), hw},
		{"a", m.Classes["a"], 10, 1, 0.00525, lat(5, -1), lat(10, -1), lat(10, -1), hw},
		{"b", m.Classes["b"], 10, 1, 0.00575, lat(5, 1), lat(10, 1), lat(10, 1), hw},
	} {
		s := c.got
		if s == nil {
			t.Fatalf("%s: no summary", c.name)
		}
		if s.Count != c.count || s.Errors != c.errs || s.P50 != c.p50 || s.P95 != c.p95 || s.P99 != c.p99 {
			t.Errorf("%s: %+v, want count %d errors %d p50 %g p95 %g p99 %g", c.name, *s, c.count, c.errs, c.p50, c.p95, c.p99)
		}
		if want := float64(c.count) / 15; s.Throughput != want {
			t.Errorf("%s: throughput %g, want %g", c.name, s.Throughput, want)
		}
		if math.Abs(s.Mean-c.mean) > 1e-15 || math.Abs(s.MeanCI95-c.ci9) > 1e-12 {
			t.Errorf("%s: mean %g ± %g, want %g ± %g", c.name, s.Mean, s.MeanCI95, c.mean, c.ci9)
		}
	}
	if len(m.Classes) != 2 {
		t.Errorf("classes %v", m.Classes)
	}

	want := slices.Clone(r1)
	for _, r := range r2 {
		r.At += 10
		want = append(want, r)
	}
	if !reflect.DeepEqual(m.Requests, want) {
		t.Errorf("requests\n%v\nwant\n%v", m.Requests, want)
	}
	if p2.Requests[0].At != 0.1 {
		t.Error("Merge changed a part's requests")
	}
	got := *m
	got.Classes, got.All, got.Requests = nil, nil, nil
	wantRes := Result{
		Mode: "open", Rate: 10, SteadySeconds: 15, Start: t0, SteadyStart: t0.Add(time.Second),
		SteadyEnd: t0.Add(time.Hour + 6*time.Second), Sent: 50, Dropped: 3, LagMax: 0.02,
		LagMean: (0.002*30 + 0.005*20) / 50, CPUSeconds: 2, FirstError: "boom",
	}
	if !reflect.DeepEqual(got, wantRes) {
		t.Errorf("merged\n%+v\nwant\n%+v", got, wantRes)
	}
}

// laid is n runs of steady seconds each, each cut into k batches, a pair
// of requests in each batch (at a quarter and three quarters of it,
// m ± δ ms for the m-th batch of all, from 1) unless skip says otherwise.
func laid(n, k int, steady float64, skip func(m int) bool) []*Result {
	var parts []*Result
	w := steady / float64(k)
	for p := range n {
		var reqs []Request
		for j := range k {
			if m := p*k + j + 1; !skip(m) {
				reqs = append(reqs, Request{"a", (float64(j) + 0.25) * w, lat(m, -1), false}, Request{"a", (float64(j) + 0.75) * w, lat(m, 1), false})
			}
		}
		parts = append(parts, part(steady, []string{"a"}, reqs...))
	}
	return parts
}

// The number of batches: ceil(10/runs) per run. Pairs of requests whose
// mean is m ms fill each batch; had Merge cut the runs finer the pairs
// would split, coarser and they would mix, and the half-width would not
// be t(0.975, n−1) · sd(1 … n) / √n ms, sd(1 … n) = √(n(n+1)/12).
func TestMergeBatches(t *testing.T) {
	hw := func(n int, tq float64) float64 {
		return tq * math.Sqrt(float64(n*(n+1))/12) / 1000 / math.Sqrt(float64(n))
	}
	none := func(int) bool { return false }
	for _, c := range []struct {
		name     string
		parts    []*Result
		want     float64
		requests int
	}{
		{"one run, ten batches", laid(1, 10, 10, none), hw(10, 2.2621571628), 20},
		{"two runs, five each", laid(2, 5, 7, none), hw(10, 2.2621571628), 20},
		{"three runs, four each", laid(3, 4, 4, none), hw(12, 2.2009851601), 24},
		{"four runs, three each", laid(4, 3, 3, none), hw(12, 2.2009851601), 24},
		{"ten runs, one each", laid(10, 1, 1, none), hw(10, 2.2621571628), 20},
		{"four batches with requests", laid(2, 5, 10, func(m int) bool { return m > 4 }), 0, 8},
		{"five batches with requests", laid(2, 5, 10, func(m int) bool { return m%2 == 0 }), 2.7764451052 * math.Sqrt(10) / 1000 / math.Sqrt(5), 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := Merge(c.parts...)
			if err != nil {
				t.Fatal(err)
			}
			if got := m.All.MeanCI95; math.Abs(got-c.want) > 1e-12 {
				t.Errorf("half-width %g, want %g", got, c.want)
			}
			if m.All.Count != c.requests || len(m.Requests) != c.requests {
				t.Errorf("%d requests, %d kept, want %d", m.All.Count, len(m.Requests), c.requests)
			}
		})
	}
}

func TestMergeErrors(t *testing.T) {
	ab := []string{"a", "b"}
	ok := part(1, ab, Request{Class: "a", At: 0.5, Latency: 0.01})
	unkept := part(1, ab)
	unkept.All.Count, unkept.All.Errors = 4, 1
	closed := part(1, ab, Request{Class: "a", At: 0.5, Latency: 0.01})
	closed.Mode = "closed"
	for _, c := range []struct {
		name  string
		parts []*Result
		want  string
	}{
		{"no parts", nil, "no results"},
		{"nil part", []*Result{ok, nil}, "part 2 of 2 is nil"},
		{"requests not kept", []*Result{ok, ok, unkept}, "part 3 of 3 has 5 steady-phase requests but kept none"},
		{"mode", []*Result{ok, closed}, `part 2 of 2 is a "closed" run`},
		{"fewer classes", []*Result{ok, part(1, []string{"a"}, Request{Class: "a"})}, `part 2 of 2 has classes ["a"], part 1 has ["a" "b"]`},
		{"other classes", []*Result{ok, part(1, []string{"a", "c"}, Request{Class: "a"})}, `part 2 of 2 has classes ["a" "c"]`},
		{"request of no class", []*Result{ok, part(1, ab, Request{Class: "a"}, Request{Class: "z"})}, `part 2 of 2: request 2 has class "z"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := Merge(c.parts...)
			if err == nil {
				t.Fatalf("merged: %+v", m)
			}
			if msg := err.Error(); !strings.Contains(msg, c.want) || !strings.HasPrefix(msg, "loadgen: merge: ") || strings.Contains(msg, "\n") {
				t.Errorf("error %q, want one line with %q", msg, c.want)
			}
		})
	}
	// A run without requests in its steady phase needs none kept.
	if m, err := Merge(ok, part(3, ab)); err != nil || m.SteadySeconds != 4 || m.All.Count != 1 || m.All.Throughput != 0.25 {
		t.Errorf("merge with an empty run: %v, %+v", err, m)
	}
}

// An open run against a fake server with KeepRequests keeps every request
// of the steady phase, each within it, and merging it alone gives its
// summaries back.
func TestOpenRunKeepRequests(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			time.Sleep(5 * time.Millisecond)
		}
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	cfg := Config{
		BaseURL:      srv.URL,
		Classes:      []Class{{Name: "fast", Weight: 3, NewRequest: get("/fast")}, {Name: "slow", Weight: 1, NewRequest: get("/slow")}},
		Phases:       Phases{RampUp: 100 * time.Millisecond, Steady: time.Second, RampDown: 100 * time.Millisecond},
		Rate:         200,
		Seed:         11,
		KeepRequests: true,
	}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if n := res.All.Count + res.All.Errors; len(res.Requests) != n || n == 0 {
		t.Fatalf("%d requests kept, %d in the summary", len(res.Requests), n)
	}
	perClass := map[string]int{}
	for _, r := range res.Requests {
		if r.At < 0 || r.At >= res.SteadySeconds {
			t.Fatalf("request at %g outside [0, %g)", r.At, res.SteadySeconds)
		}
		perClass[r.Class]++
	}
	for name, s := range res.Classes {
		if perClass[name] != s.Count+s.Errors {
			t.Errorf("class %s: %d kept, %d in the summary", name, perClass[name], s.Count+s.Errors)
		}
	}
	if !slices.IsSortedFunc(res.Requests, compareRequests) {
		t.Error("requests not ordered")
	}
	m, err := Merge(res)
	if err != nil {
		t.Fatal(err)
	}
	sameSummary(t, "all", m.All, res.All)
	for name, s := range res.Classes {
		sameSummary(t, name, m.Classes[name], s)
	}
}
