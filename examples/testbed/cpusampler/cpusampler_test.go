package cpusampler

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/csv"
	"os"
	"runtime"
	"strconv"
	"strings"
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

func TestBusy(t *testing.T) {
	const stat = `cpu  100 5 50 1000 7 3 2 40 0 0
cpu0 60 5 20 500 3 1 1 20 0 0
cpu1 40 0 30 500 4 2 1 20 0 0
intr 12345
`
	for _, c := range []struct {
		cpus []int
		want time.Duration
	}{
		{nil, 160 * clockTick},         // 100+5+50+3+2
		{[]int{1}, 73 * clockTick},     // 40+0+30+2+1
		{[]int{0, 1}, 160 * clockTick}, // both
	} {
		got, err := busy(strings.NewReader(stat), c.cpus)
		if err != nil || got != c.want {
			t.Errorf("cpus %v: %v, %v, want %v", c.cpus, got, err, c.want)
		}
	}
	if _, err := busy(strings.NewReader(stat), []int{2}); err == nil {
		t.Error("a CPU the machine lacks: no error")
	}
	if _, err := busy(strings.NewReader("cpu 1 2 3\n"), nil); err == nil {
		t.Error("a short line: no error")
	}
	if got, err := sumColumns(strings.NewReader(stat), []int{1}, stealColumns); err != nil || got != 20*clockTick {
		t.Errorf("steal of CPU 1: %v, %v, want %v", got, err, 20*clockTick)
	}
	if _, err := sumColumns(strings.NewReader("cpu 1 2 3 4 5 6 7\n"), nil, stealColumns); err == nil {
		t.Error("a line without steal: no error")
	}
}

func TestCPUsBusy(t *testing.T) {
	if _, err := os.Stat("/proc/stat"); err != nil {
		t.Skip("no /proc/stat:", err)
	}
	a, err := CPUsBusy()
	if err != nil {
		t.Fatal(err)
	}
	spin := time.Now()
	for time.Since(spin) < 50*time.Millisecond {
	}
	b, err := CPUsBusy()
	if err != nil {
		t.Fatal(err)
	}
	// 50 ms of spinning, counted at 10 ms ticks.
	if b-a < 30*time.Millisecond {
		t.Errorf("the machine's busy time grew by %v while the test spun for 50 ms", b-a)
	}
}

func TestSchedWait(t *testing.T) {
	if got, err := schedWait("7044374 1331386 10\n"); err != nil || got != 1331386 {
		t.Errorf("a schedstat line: %v, %v, want 1331386ns", got, err)
	}
	for _, bad := range []string{"", "12", "12 x 3", "12 -5 3"} {
		if _, err := schedWait(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestProcessors spins on a processor for 50 ms between two garbage
// collections: the processors' busy time grows by at least that much,
// and their total by at least the wall time times GOMAXPROCS.
func TestProcessors(t *testing.T) {
	runtime.GC()
	busy0, err := ProcessorsBusy()
	if err != nil {
		t.Fatal(err)
	}
	total0, err := ProcessorsTotal()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for time.Since(start) < 50*time.Millisecond {
	}
	runtime.GC()
	wall := time.Since(start)
	busy1, _ := ProcessorsBusy()
	total1, _ := ProcessorsTotal()
	if busy1-busy0 < 45*time.Millisecond {
		t.Errorf("processors busy for %v while a goroutine spun for 50 ms", busy1-busy0)
	}
	if procs := time.Duration(runtime.GOMAXPROCS(0)); total1-total0 < procs*wall*9/10 {
		t.Errorf("processors' total grew by %v over %v with GOMAXPROCS %d", total1-total0, wall, procs)
	}
	if busy1 > total1 || busy0 < 0 {
		t.Errorf("busy %v of a total %v", busy1, total1)
	}
}
