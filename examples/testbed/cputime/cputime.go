// Package cputime measures the CPU time that one request consumes on the
// goroutine that serves it, and records it on the request's span as the
// attribute perfcast.cpu.time (seconds, double).
//
// Method: at the start of a request the serving goroutine is locked to its
// operating-system thread (runtime.LockOSThread), so that no other goroutine
// runs on that thread until it is unlocked; the thread's CPU clock
// (CLOCK_THREAD_CPUTIME_ID) is read at the start and at the end, and the
// difference is the CPU time the request's goroutine used, in user and
// kernel mode.
//
// Limits: work the request hands to other goroutines (worker pools, the
// HTTP transport's connection goroutines, the span exporter) is not counted,
// nor is the garbage collector's background work; GC assists the request's
// goroutine makes are counted. While a locked goroutine blocks, its thread
// sleeps and the runtime hands the processor to another thread, which costs
// a few microseconds per block; see the package benchmarks.
package cputime

import (
	"net/http"
	"runtime"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Attribute is the span attribute perfcast reads the CPU time of a span from.
const Attribute = "perfcast.cpu.time"

// Meter measures the CPU time of the current goroutine between Start and
// Stop. The zero Meter measures nothing.
type Meter struct {
	start  time.Duration
	locked bool
	ok     bool
}

// Start locks the calling goroutine to its thread and reads the thread's
// CPU clock. Stop must be called on the same goroutine.
func Start() Meter {
	runtime.LockOSThread()
	t, err := Thread()
	return Meter{start: t, locked: true, ok: err == nil}
}

// Stop reads the thread's CPU clock again, unlocks the goroutine and
// returns the CPU time used since Start; ok is false when the clock could
// not be read (an unsupported system) or the meter was not started.
func (m Meter) Stop() (d time.Duration, ok bool) {
	if !m.locked {
		return 0, false
	}
	t, err := Thread()
	runtime.UnlockOSThread()
	if err != nil || !m.ok {
		return 0, false
	}
	return t - m.start, true
}

// Record sets the attribute perfcast.cpu.time of span to d in seconds.
func Record(span trace.Span, d time.Duration) {
	span.SetAttributes(attribute.Float64(Attribute, d.Seconds()))
}

// Middleware measures the CPU time of each request next serves and records
// it on the span found in the request's context (so it must run inside the
// tracing middleware). When enabled is false it passes requests through
// untouched and records nothing.
func Middleware(next http.Handler, enabled bool) http.Handler {
	if !enabled {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m := Start()
		next.ServeHTTP(w, r)
		if d, ok := m.Stop(); ok {
			Record(trace.SpanFromContext(r.Context()), d)
		}
	})
}
