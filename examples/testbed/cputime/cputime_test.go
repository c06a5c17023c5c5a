package cputime

import (
	"crypto/sha256"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
)

// burn hashes n blocks: CPU work proportional to n.
func burn(n int) byte {
	var sum [32]byte
	for range n {
		sum = sha256.Sum256(sum[:])
	}
	return sum[0]
}

var sink byte

func measure(t *testing.T, f func()) time.Duration {
	t.Helper()
	m := Start()
	f()
	d, ok := m.Stop()
	if !ok {
		t.Skip("no thread CPU clock on this system")
	}
	return d
}

// More work measures more CPU: ten times the hashing must read at least
// five times the CPU time (the clock's resolution is far below the ~2 ms of
// the small run; preemption and cache effects change CPU time by a few
// percent, not by a factor of two).
func TestMoreWorkMoreCPU(t *testing.T) {
	const n = 5000 // about 2 ms of SHA-256 on a slow core
	small := measure(t, func() { sink = burn(n) })
	large := measure(t, func() { sink = burn(10 * n) })
	if small <= 0 {
		t.Fatalf("CPU time of %d hashes = %v, want > 0", n, small)
	}
	if large < 5*small {
		t.Fatalf("CPU time of %d hashes = %v, of %d hashes = %v: want at least 5 times as much", n, small, 10*n, large)
	}
}

// Time off the CPU is not counted: a 50 ms sleep on a locked thread uses
// almost no CPU (the thread waits in the kernel).
func TestSleepIsNotCPU(t *testing.T) {
	d := measure(t, func() { time.Sleep(50 * time.Millisecond) })
	if d > 10*time.Millisecond {
		t.Fatalf("CPU time of a 50ms sleep = %v, want < 10ms", d)
	}
}

// The zero Meter measures nothing.
func TestZeroMeter(t *testing.T) {
	if _, ok := (Meter{}).Stop(); ok {
		t.Fatal("zero Meter reported a measurement")
	}
}

func TestMiddleware(t *testing.T) {
	for _, enabled := range []bool{true, false} {
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		h := otelhttp.NewHandler(Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			sink = burn(5000)
			w.WriteHeader(http.StatusNoContent)
		}), enabled), "test", otelhttp.WithTracerProvider(tp))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/x", nil))
		spans := rec.Ended()
		if len(spans) != 1 {
			t.Fatalf("enabled=%v: %d spans, want 1", enabled, len(spans))
		}
		var got float64
		found := false
		for _, kv := range spans[0].Attributes() {
			if string(kv.Key) == Attribute {
				got, found = kv.Value.AsFloat64(), true
			}
		}
		if found != enabled {
			t.Fatalf("enabled=%v: attribute %s present = %v", enabled, Attribute, found)
		}
		if enabled && got <= 0 {
			t.Fatalf("%s = %g, want > 0", Attribute, got)
		}
	}
}

// BenchmarkThread is the cost of one reading of the thread CPU clock.
func BenchmarkThread(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for b.Loop() {
		if _, err := Thread(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMeter is the cost of Start and Stop around a request that never
// blocks.
func BenchmarkMeter(b *testing.B) {
	for b.Loop() {
		m := Start()
		m.Stop()
	}
}

// pingPong blocks the calling goroutine once: it hands a value to another
// goroutine and waits for the answer, as a request waits for a call.
func pingPong(in, out chan int) {
	in <- 1
	<-out
}

func echo(in, out chan int) {
	for v := range in {
		out <- v
	}
}

// BenchmarkBlockUnlocked is one block and wake-up of an ordinary goroutine,
// the baseline for BenchmarkBlockLocked.
func BenchmarkBlockUnlocked(b *testing.B) {
	in, out := make(chan int), make(chan int)
	go echo(in, out)
	defer close(in)
	for b.Loop() {
		pingPong(in, out)
	}
}

// BenchmarkBlockLocked is one block and wake-up of a goroutine locked to its
// thread, measured with a Meter: what a traced request pays per call it
// waits for.
func BenchmarkBlockLocked(b *testing.B) {
	in, out := make(chan int), make(chan int)
	go echo(in, out)
	defer close(in)
	for b.Loop() {
		m := Start()
		pingPong(in, out)
		m.Stop()
	}
}
