package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve"
)

// exampleDirs are where the example models may be, first the repository's.
var exampleDirs = []string{"../../examples/models", "../../examples", "../../../shared/examples"}

// exampleModel loads an example model.
func exampleModel(t testing.TB, name string) *model.Model {
	t.Helper()
	for _, dir := range exampleDirs {
		m, err := model.Load(filepath.Join(dir, name))
		if err == nil {
			return m
		}
	}
	t.Skipf("example %s not found", name)
	return nil
}

func encode(t *testing.T, r *solve.Result) []byte {
	t.Helper()
	c := *r
	sim := *c.Sim
	sim.WallSeconds = 0 // the only figure that measures the machine
	c.Sim = &sim
	b, err := json.Marshal(&c)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestWorkersDoNotChangeResults: the same seed and requests give the same
// JSON, byte for byte, with 1, 2 and 5 workers, for fixed runs and runs
// until precision.
func TestWorkersDoNotChangeResults(t *testing.T) {
	m := exampleModel(t, "shop.yaml")
	for _, opts := range []solve.Options{
		{Seed: 3, Requests: requests(40000)},
		{Seed: 3, Precision: 0.1},
	} {
		var first []byte
		for _, workers := range []int{1, 2, 5} {
			opts.Workers = workers
			b := encode(t, runModel(t, m, opts))
			if first == nil {
				first = b
				continue
			}
			if !bytes.Equal(first, b) {
				t.Errorf("requests %d: %d workers give a different result:\n%s\nvs\n%s", opts.Requests, workers, first, b)
			}
		}
		// Another seed gives another result.
		opts.Seed = 4
		if bytes.Equal(first, encode(t, runModel(t, m, opts))) {
			t.Error("seeds 3 and 4 give the same result")
		}
	}
}

// TestExamples: the example models solve, are stable and give figures that
// agree with the laws every model obeys.
func TestExamples(t *testing.T) {
	t.Run("shop", func(t *testing.T) {
		m := exampleModel(t, "shop.yaml")
		r := runModel(t, m, solve.Options{Seed: 1, Requests: requests(200000)})
		w := wl(t, r, "shoppers")
		// Little's law on the closed loop: X = N / (Z + R).
		want := 200 / (5 + w.ResponseTime.Mean)
		within(t, "throughput", w.Throughput, w.ThroughputCI95, want, 0)
		// Visits: every request browses once, 10 % check out; browsing
		// gets 0.5·1 + 0.3·4 + 0.2·8 = 3.3 items.
		T := r.Sim.SimTime
		for id, v := range map[string]float64{"frontend/GET /browse": 1, "frontend/POST /checkout": 0.1, "catalog/GetItem": 3.3} {
			o := op(t, r, id)
			// Counts are (compound) Poisson over T; E[V²] ≤ 8·v bounds the
			// variance of the item count (at most 8 per request).
			se := math.Sqrt(w.Throughput*8*v/T) + v*halfWidth(w.ThroughputCI95)
			if d := math.Abs(o.Throughput - v*w.Throughput); d > 4*se {
				t.Errorf("%s throughput %.4g, want %.4g", id, o.Throughput, v*w.Throughput)
			}
		}
		// Utilization law at the web tier: 2 ms + 1 ms per browse, 3 ms per
		// checkout, over 2 replicas × 2 cores.
		web := res(t, r, "web.cpu")
		within(t, "web cpu", web.Utilization, web.UtilizationCI95, w.Throughput*(0.003+0.1*0.003)/4,
			ciFactor*halfWidth(w.ThroughputCI95)*0.0033/4)
		if len(web.PerReplica) != 2 {
			t.Errorf("web.cpu per_replica: %v", web.PerReplica)
		}
		if r.Bottleneck == "" {
			t.Error("no bottleneck named")
		}
		if c := w.CompletionTime; c == nil || c.Mean < w.ResponseTime.Mean {
			t.Errorf("completion time %v below the response time %.4g", c, w.ResponseTime.Mean)
		}
	})
	t.Run("pipeline", func(t *testing.T) {
		m := exampleModel(t, "pipeline.yaml")
		r := runModel(t, m, solve.Options{Seed: 1, Requests: requests(100000)})
		w := wl(t, r, "clients")
		within(t, "throughput", w.Throughput, w.ThroughputCI95, 120, 0)
		// The queue of 1024 never fills at 13 % thread utilization.
		if w.Dropped != 0 {
			t.Errorf("dropped %.4g/s", w.Dropped)
		}
		// The disk: 25 % of requests read uniform(1, 4) times 6 ms.
		disk := res(t, r, "box.disk.hdd")
		within(t, "disk utilization", disk.Utilization, disk.UtilizationCI95, 120*0.25*2.5*0.006, 0)
		if w.CompletionTime.Mean <= w.ResponseTime.Mean {
			t.Errorf("completion %.4g should include the asynchronous serve beyond the response %.4g",
				w.CompletionTime.Mean, w.ResponseTime.Mean)
		}
	})
}

// TestStaticSaturation: an open load beyond a CPU's capacity is not
// simulated; the result says which resource and at which rate.
func TestStaticSaturation(t *testing.T) {
	m := parse(t, singleQueue(`{cpu: {cores: 2}}`, "", `[{cpu: exp(10ms)}]`, 250))
	r, err := New().Solve(context.Background(), m, solve.Options{Requests: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if r.Stable || r.Bottleneck != "h.cpu" || r.Saturation == nil {
		t.Fatalf("want unstable at h.cpu with a saturation, got stable=%v bottleneck=%q saturation=%v", r.Stable, r.Bottleneck, r.Saturation)
	}
	withinRel(t, "saturation rate", r.Saturation.At["workload.w.open.rate"], 200, 1e-9)
	if len(r.Warnings) == 0 {
		t.Error("no warning")
	}
	// 250/s of 10 ms asks 2.5 cores of 2.
	if cpu := r.Resources["h.cpu"]; cpu == nil || math.Abs(cpu.Utilization-1.25) > 1e-9 || math.Abs(cpu.Busy-2.5) > 1e-9 {
		t.Errorf("h.cpu: %+v, want utilization 1.25, busy 2.5", cpu)
	}
}

// TestRuntimeSaturation: a lock (outer) held while waiting for another lock
// that a closed population keeps busy saturates although the work done under
// it is small. The utilization law over the open workloads cannot see that;
// the run must stop and name the lock.
func TestRuntimeSaturation(t *testing.T) {
	src := `perfcast: 1
passive:
  outer: {capacity: 1}
  inner: {capacity: 1}
workload:
  background: {closed: {users: 50, think: 0}, steps: [{hold: {resource: inner, steps: [{delay: det(10ms)}]}}]}
  front:
    open: {rate: 100/s}
    steps: [{hold: {resource: outer, steps: [{hold: {resource: inner, steps: [{delay: det(1ms)}]}}]}}]
`
	m := parse(t, src)
	if b := solve.Bounds(m); !b.Stable {
		t.Fatalf("the static bound should not see this saturation: %+v", b)
	}
	start := time.Now()
	r, err := New().Solve(context.Background(), m, solve.Options{Requests: 200000, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if r.Stable || r.Bottleneck != "outer" {
		t.Fatalf("want unstable at outer, got stable=%v bottleneck=%q warnings=%v", r.Stable, r.Bottleneck, r.Warnings)
	}
	if r.Saturation == nil || !(r.Saturation.At["workload.front.open.rate"] < 100) {
		t.Errorf("saturation estimate %+v, want a front rate below 100/s", r.Saturation)
	}
	t.Logf("stopped after %v: %v", time.Since(start), r.Warnings)
}

// TestDeadlock: two closed classes taking two locks in opposite orders end
// up waiting for each other; the run stops and says so.
func TestDeadlock(t *testing.T) {
	src := `perfcast: 1
passive:
  a: {capacity: 1}
  b: {capacity: 1}
workload:
  ab: {closed: {users: 3, think: exp(1ms)}, steps: [{hold: {resource: a, steps: [{delay: exp(1ms)}, {hold: {resource: b, steps: [{delay: exp(1ms)}]}}]}}]}
  ba: {closed: {users: 3, think: exp(1ms)}, steps: [{hold: {resource: b, steps: [{delay: exp(1ms)}, {hold: {resource: a, steps: [{delay: exp(1ms)}]}}]}}]}
`
	r, err := New().Solve(context.Background(), parse(t, src), solve.Options{Requests: 100000})
	if err != nil {
		t.Fatal(err)
	}
	if r.Stable || !strings.Contains(strings.Join(r.Warnings, " "), "deadlock") {
		t.Fatalf("want a deadlock report, got stable=%v warnings=%v", r.Stable, r.Warnings)
	}
}

// TestCancel: a cancelled context stops the run with its error.
func TestCancel(t *testing.T) {
	m := exampleModel(t, "shop.yaml")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := New().Solve(ctx, m, solve.Options{Requests: 1 << 40})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = New().Solve(ctx, m, solve.Options{Requests: 1 << 40})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v to stop", d)
	}
}

// TestPrecision: without a number of requests, the run goes on until every
// reported mean's half-width is within the precision.
func TestPrecision(t *testing.T) {
	const p = 0.03
	m := parse(t, singleQueue(`{cpu: {scheduling: fcfs}}`, "", `[{cpu: exp(1ms)}]`, 500))
	r := runModel(t, m, solve.Options{Seed: 2, Precision: p})
	w := wl(t, r, "w")
	for what, e := range map[string]struct {
		mean float64
		ci   *[2]float64
	}{
		"response":   {w.ResponseTime.Mean, w.ResponseTime.CI95},
		"throughput": {w.Throughput, w.ThroughputCI95},
		"util":       {r.Resources["h.cpu"].Utilization, r.Resources["h.cpu"].UtilizationCI95},
	} {
		if hw := halfWidth(e.ci); !(hw <= p*e.mean) {
			t.Errorf("%s: half-width %.3g is above %.3g of the mean %.4g", what, hw, p, e.mean)
		}
	}
	within(t, "mean response", w.ResponseTime.Mean, w.ResponseTime.CI95, 1/(1000-500.0), 0)
	if r.Sim.Replications < precisionReps {
		t.Errorf("%d replications", r.Sim.Replications)
	}
}

// TestNoLoad: a model without requests gives an empty, stable result.
func TestNoLoad(t *testing.T) {
	r := runModel(t, parse(t, singleQueue(`{}`, "", `[{cpu: exp(1ms)}]`, 0)), solve.Options{})
	if w := wl(t, r, "w"); w.Throughput != 0 {
		t.Errorf("throughput %v", w.Throughput)
	}
}

// TestNoTime: requests that take no time at all leave rates undefined; the
// result says so and still encodes as JSON.
func TestNoTime(t *testing.T) {
	r := runModel(t, parse(t, `perfcast: 1
workload:
  w: {closed: {users: 2, think: 0}, steps: [{delay: 0}]}
`), solve.Options{Requests: 1000})
	if len(r.Warnings) == 0 {
		t.Error("no warning")
	}
	if _, err := json.Marshal(r); err != nil {
		t.Error(err)
	}
	if w := wl(t, r, "w"); w.ResponseTime.Mean != 0 {
		t.Errorf("response %v", w.ResponseTime.Mean)
	}
}

// TestMSER5 checks the warm-up rule on sequences whose transient is known.
func TestMSER5(t *testing.T) {
	x := make([]float64, 2000)
	for i := range x {
		x[i] = float64(i % 2) // stationary: nothing to cut
		if i < 300 {
			x[i] += 10 // a transient of 300 observations
		}
	}
	if d, ok := mser5(x); d != 300 || !ok {
		t.Errorf("cut %d (ok %v), want 300", d, ok)
	}
	for i := range x {
		x[i] = float64(i) // a trend never settles
	}
	if _, ok := mser5(x); ok {
		t.Error("a trend should not be accepted as settled")
	}
}
