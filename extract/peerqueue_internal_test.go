package extract

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/perfcast/perfcast/ingest"
)

// queueCalls simulates n calls with Poisson arrivals at rate lambda to c
// servers serving in order, exponential service of mean s (c = 0: as many
// servers as calls, no wait), and feeds them to a sweep, each call its own
// request.
func queueCalls(r *rand.Rand, lambda float64, c int, s float64, n int) *peerSweep {
	p := newPeerSweep()
	free := make([]float64, max(c, 1))
	t := 0.0
	for i := range n {
		t += r.ExpFloat64() / lambda
		begin := t
		if c > 0 {
			j := 0
			for k := range free {
				if free[k] < free[j] {
					j = k
				}
			}
			begin = math.Max(t, free[j])
			free[j] = begin + r.ExpFloat64()*s
			begin = free[j]
		} else {
			begin = t + r.ExpFloat64()*s
		}
		var tid ingest.TraceID
		tid[0], tid[1], tid[2] = byte(i), byte(i>>8), byte(i>>16)
		p.add("query", int64(t*1e9), int64(begin*1e9), tid)
	}
	p.finish()
	return p
}

// TestFitPeerQueue: in M/M/c a call that finds k others waits for
// k − c + 1 departures, each s/c apart on average, so its mean latency is
// s + max(0, k − c + 1)·s/c exactly. The fit finds c and the slope s/c
// within four standard errors, 60 % busy; with as many servers as calls
// there is no slope to find.
func TestFitPeerQueue(t *testing.T) {
	const s = 8e-3
	for _, c := range []int{1, 2, 4} {
		r := rand.New(rand.NewPCG(uint64(c), 7))
		p := queueCalls(r, 0.6*float64(c)/s, c, s, 40000)
		fit, ok := fitPeerQueue(p.levels)
		if !ok {
			t.Fatalf("c = %d: no fit", c)
		}
		t.Logf("c = %d: fit c = %d, b = %.3g ms ± %.2g (truth %.3g), a = %.3g ms, %g calls beyond, counts up to %d",
			c, fit.c, fit.b*1e3, fit.se*1e3, s/float64(c)*1e3, fit.a[0]*1e3, fit.beyond, fit.top)
		if fit.c != c || math.Abs(fit.b-s/float64(c)) > 4*fit.se {
			t.Errorf("c = %d: fit c = %d, b = %.3g ms ± %.2g, want %.3g", c, fit.c, fit.b*1e3, fit.se*1e3, s/float64(c)*1e3)
		}
		if math.Abs(fit.a[0]-s) > 0.1*s {
			t.Errorf("c = %d: latency without a wait %.3g ms, want %.3g", c, fit.a[0]*1e3, s*1e3)
		}
	}
	r := rand.New(rand.NewPCG(0, 7))
	p := queueCalls(r, 200, 0, s, 40000)
	if fit, ok := fitPeerQueue(p.levels); ok && fit.b > peerQueueT*fit.se {
		t.Errorf("no wait: slope %.3g ms ± %.2g at c = %d", fit.b*1e3, fit.se*1e3, fit.c)
	}
}

// TestPeerSweepSaved: a sweep saved and restored halfway, with calls in
// flight and not yet placed, then fed the rest, places every call as the
// sweep that never stopped does.
func TestPeerSweepSaved(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 7))
	whole := newPeerSweep()
	var calls []peerCall
	start := int64(1_700_000_000_000_000_000)
	for i := range 6000 {
		start += int64(r.ExpFloat64() * 5e6)
		var tid ingest.TraceID
		tid[0], tid[1] = byte(i), byte(i>>8)
		calls = append(calls, peerCall{start: start, end: start + int64(r.ExpFloat64()*2e7), trace: tid, kind: int32(i % 2)})
	}
	kinds := []string{"query", "update"}
	for _, c := range calls {
		whole.add(kinds[c.kind], c.start, c.end, c.trace)
	}
	whole.finish()

	half := newPeerSweep()
	for _, c := range calls[:len(calls)/2] {
		half.add(kinds[c.kind], c.start, c.end, c.trace)
	}
	half.sweep(calls[len(calls)/2-1].start - 1e8) // some placed, some pending, some in flight
	if len(half.pending) == 0 || len(half.active) == 0 {
		t.Fatalf("%d pending, %d in flight: the test wants both", len(half.pending), len(half.active))
	}
	data, err := json.Marshal(savePeers(half))
	if err != nil {
		t.Fatal(err)
	}
	var v savedPeers
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	restored, err := v.restore()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range calls[len(calls)/2:] {
		restored.add(kinds[c.kind], c.start, c.end, c.trace)
	}
	restored.finish()
	if !reflect.DeepEqual(restored.levels, whole.levels) || !reflect.DeepEqual(restored.kinds, whole.kinds) {
		t.Errorf("restored halfway: other counts")
	}
}
