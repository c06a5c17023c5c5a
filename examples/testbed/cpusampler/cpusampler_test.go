package cpusampler

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/csv"
	"strconv"
	"testing"
	"time"
)

// The output parses as CSV with the header perfcast reads, RFC 3339
// timestamps in order and a cumulative CPU time that never decreases and
// grows by at least the CPU the test burns meanwhile.
func TestCSV(t *testing.T) {
	var buf bytes.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	before, err := ProcessCPU()
	if err != nil {
		t.Fatal(err)
	}
	go func() { done <- Run(ctx, &buf, "node-1", 5*time.Millisecond) }()
	// Burn CPU until this goroutine alone has used 50 ms of it.
	var sum [32]byte
	for {
		now, err := ProcessCPU()
		if err != nil {
			t.Fatal(err)
		}
		if now-before > 50*time.Millisecond {
			break
		}
		for range 1000 {
			sum = sha256.Sum256(sum[:])
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatalf("output does not parse as CSV: %v\n%s", err, buf.String())
	}
	if len(recs) < 3 {
		t.Fatalf("%d records, want a header and at least two samples", len(recs))
	}
	if h := recs[0]; len(h) != 3 || h[0] != "timestamp" || h[1] != "host" || h[2] != "cpu_seconds" {
		t.Fatalf("header %q", h)
	}
	var lastT time.Time
	first, last := -1.0, -1.0
	for i, r := range recs[1:] {
		ts, err := time.Parse(time.RFC3339, r[0])
		if err != nil {
			t.Fatalf("line %d: timestamp: %v", i+2, err)
		}
		if ts.Before(lastT) {
			t.Fatalf("line %d: timestamp %v before %v", i+2, ts, lastT)
		}
		lastT = ts
		if r[1] != "node-1" {
			t.Fatalf("line %d: host %q", i+2, r[1])
		}
		v, err := strconv.ParseFloat(r[2], 64)
		if err != nil {
			t.Fatalf("line %d: cpu_seconds: %v", i+2, err)
		}
		if v < last {
			t.Fatalf("line %d: cpu_seconds %g decreased from %g", i+2, v, last)
		}
		if first < 0 {
			first = v
		}
		last = v
	}
	// The last sample is taken after the burn: at least 50 ms later than
	// the reading before it, less the 6-decimal rounding.
	if grew := last - before.Seconds(); grew < 0.0499 {
		t.Fatalf("cpu_seconds grew by %g (first sample %g) while the test burned 0.05 s", grew, first)
	}
}
