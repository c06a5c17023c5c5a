package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/perfcast/perfcast/examples/testbed/loadgen"
	"github.com/perfcast/perfcast/solve"
)

// otlpSpan is one span as a line of OTLP JSON: service svc, trace and
// span ids ending in the two hex digits given (parent "" for a root),
// kind 2 (server) or 3 (client), from start for d.
func otlpSpan(svc, trace, id, parent, name string, kind int, start time.Time, d time.Duration) string {
	p := ""
	if parent != "" {
		p = `"parentSpanId":"eee19b7ec3c1b1` + parent + `",`
	}
	return fmt.Sprintf(`{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":%q}}]},`+
		`"scopeSpans":[{"spans":[{"traceId":"5b8efff798038103d269b633813fc6%s","spanId":"eee19b7ec3c1b1%s",%s`+
		`"name":%q,"kind":%d,"startTimeUnixNano":"%d","endTimeUnixNano":"%d"}]}]}]}`,
		svc, trace, id, p, name, kind, start.UnixNano(), start.Add(d).UnixNano())
}

// A call is a server span whose parent is a client span of its trace,
// counted where the server span starts in its segment's steady phase:
// before the span is the time from the client span's start, and the
// segments' calls pool. Server spans under a server span, without a
// parent seen, or outside the steady phase are left out, and a segment
// without traces adds nothing.
func TestCallTimes(t *testing.T) {
	steady := time.Unix(1_700_000_000, 0)
	ms := time.Millisecond
	write := func(dir, file string, lines ...string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, file), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const lookup = "GET /products/{id}"
	a, b, empty := t.TempDir(), t.TempDir(), t.TempDir()
	at := steady.Add(time.Second)
	write(a, "gateway.otlp.jsonl",
		otlpSpan("gateway", "01", "01", "", "GET /recommend/{user}", 2, at, 20*ms),
		otlpSpan("gateway", "01", "02", "01", "HTTP GET", 3, at.Add(ms), 10*ms),
		otlpSpan("gateway", "01", "03", "01", "HTTP GET", 3, at.Add(ms), 12*ms),
		otlpSpan("gateway", "02", "04", "", "GET /recommend/{user}", 2, steady.Add(-time.Second), 20*ms),
		otlpSpan("gateway", "02", "05", "04", "HTTP GET", 3, steady.Add(-time.Second), 10*ms))
	write(a, "catalog.otlp.jsonl",
		otlpSpan("catalog", "01", "12", "02", lookup, 2, at.Add(3*ms), 4*ms),             // 2 ms before, 4 in
		otlpSpan("catalog", "01", "13", "03", lookup, 2, at.Add(5*ms), 6*ms),             // 4 before, 6 in
		otlpSpan("catalog", "01", "14", "01", lookup, 2, at.Add(5*ms), 9*ms),             // under a server span
		otlpSpan("catalog", "01", "15", "99", lookup, 2, at.Add(5*ms), 9*ms),             // its parent not seen
		otlpSpan("catalog", "02", "16", "05", lookup, 2, steady.Add(-time.Second), 9*ms)) // before the steady phase
	later := steady.Add(10 * time.Minute)
	write(b, "gateway.otlp.jsonl", otlpSpan("gateway", "03", "21", "", "POST /orders", 3, later.Add(time.Second), 30*ms))
	write(b, "orders.otlp.jsonl",
		otlpSpan("orders", "03", "22", "21", "POST /orders", 2, later.Add(time.Second+ms), 20*ms),
		otlpSpan("orders", "03", "23", "21", "POST /orders", 2, at, 20*ms)) // in the first segment's steady phase, not this one's
	parts := []*loadgen.Result{
		{SteadyStart: steady, SteadyEnd: steady.Add(time.Minute)},
		{SteadyStart: later, SteadyEnd: later.Add(time.Minute)},
		{SteadyStart: steady, SteadyEnd: steady.Add(time.Minute)},
	}
	calls, err := callTimes(context.Background(), []string{a, b, empty}, parts)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]callTime{
		"catalog/" + lookup:   {N: 2, Before: 3e-3, Span: 5e-3},
		"orders/POST /orders": {N: 1, Before: 1e-3, Span: 20e-3},
	}
	if len(calls) != len(want) {
		t.Fatalf("calls %v, want %v", calls, want)
	}
	for op, w := range want {
		c := calls[op]
		if c == nil || c.N != w.N || math.Abs(c.Before-w.Before) > 1e-12 || math.Abs(c.Span-w.Span) > 1e-12 {
			t.Errorf("%s: %+v, want %+v", op, c, w)
		}
	}

	// The report puts each measured call beside the model's operation:
	// before its span the response time less the span.
	r := &report{rows: []reportRow{{
		setup:    setup{Name: "reference"},
		measured: &measured{Calls: calls},
		predicted: &predicted{res: &solve.Result{Stable: true, Operations: map[string]*solve.OperationResult{
			"catalog/" + lookup: {ResponseTime: solve.Times{Mean: 10e-3}, Span: &solve.Times{Mean: 6e-3}},
		}}},
	}}}
	var out bytes.Buffer
	r.writeCalls(&out)
	for _, line := range []string{
		"| reference | catalog/GET /products/{id} | 2 | 3.00 | 5.00 | 8.00 | 4.00 | 6.00 | 10.00 | +25 % |",
		"| reference | orders/POST /orders | 1 | 1.00 | 20.00 | 21.00 | – | – | – | – |",
	} {
		if !strings.Contains(out.String(), line+"\n") {
			t.Errorf("report without the row\n%s\nin\n%s", line, out.String())
		}
	}
}
