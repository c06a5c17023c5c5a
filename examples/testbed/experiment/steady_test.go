package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/perfcast/perfcast/examples/testbed/loadgen"
	"github.com/perfcast/perfcast/ingest"
	"github.com/perfcast/perfcast/metrics"
)

// Extraction reads a segment's steady phase, widened by a second on each
// side: a trace stays whole, in every service's file, when its first span
// started in it, and goes whole otherwise, even where a later span of it
// falls inside; a line left without spans goes; the services' CPU time
// keeps the samples in it.
func TestSteadyTraces(t *testing.T) {
	dir, out := t.TempDir(), t.TempDir()
	steady := time.Unix(1_700_000_000, 0)
	ms := time.Millisecond
	write := func(file string, lines ...string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, file), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("gateway.otlp.jsonl",
		otlpSpan("gateway", "01", "01", "", "GET /home", 2, steady.Add(-3*time.Second), 2*time.Second), // in the ramp-up
		otlpSpan("gateway", "02", "02", "", "GET /home", 2, steady.Add(-500*ms), 10*ms),                // in the margin
		otlpSpan("gateway", "03", "03", "", "GET /home", 2, steady.Add(5*time.Second), 10*ms),
		otlpSpan("gateway", "04", "04", "", "GET /home", 2, steady.Add(12*time.Second), 10*ms), // in the ramp-down
	)
	write("catalog.otlp.jsonl",
		otlpSpan("catalog", "01", "11", "01", "GET /products", 2, steady.Add(-800*ms), time.Second), // starts in the margin, its trace before it
		otlpSpan("catalog", "03", "13", "03", "GET /products", 2, steady.Add(5*time.Second+ms), 5*ms),
	)
	load := &loadgen.Result{SteadyStart: steady, SteadyEnd: steady.Add(10 * time.Second)}
	files, err := steadyTraces(context.Background(), dir, out, load)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{filepath.Join(out, "catalog.otlp.jsonl"), filepath.Join(out, "gateway.otlp.jsonl")}; !slices.Equal(files, want) {
		t.Fatalf("files %v, want %v", files, want)
	}
	r, err := ingest.Open(files, ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var got []string
	for {
		s, err := r.Next(context.Background())
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s %s %x", s.Service, s.Name, s.TraceID[15]))
	}
	slices.Sort(got)
	if want := []string{"catalog GET /products 3", "gateway GET /home 2", "gateway GET /home 3"}; !slices.Equal(got, want) {
		t.Fatalf("spans kept %v, want %v", got, want)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "\n"); n != 1 {
		t.Errorf("catalog's file has %d lines, want 1 (the emptied line dropped)", n)
	}

	// The services' CPU time, sampled every second from 3 s before the
	// steady phase to 3 s after it: the samples from 1 s before to 1 s
	// after stay.
	for _, svc := range services {
		var b strings.Builder
		b.WriteString("timestamp,host,cpu_seconds\n")
		for s := -3; s <= 13; s++ {
			fmt.Fprintf(&b, "%s,testbed,%.3f\n", steady.Add(time.Duration(s)*time.Second).UTC().Format(time.RFC3339), float64(s+3)*0.1)
		}
		if err := os.WriteFile(filepath.Join(dir, svc+".csv"), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(out, "services.csv")
	if err := serviceMetrics(path, []*loadgen.Result{load}, dir); err != nil {
		t.Fatal(err)
	}
	set, err := metrics.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	h := set.Series["testbed"]
	if h == nil || len(h.Samples) != 12 {
		t.Fatalf("host series %+v, want the 12 windows of 1 s from 1 s before the steady phase to 1 s after", h)
	}
	if first := h.Samples[0]; first.End != steady.UnixNano() {
		t.Errorf("first window ends at %d, want the steady start %d", first.End, steady.UnixNano())
	}
}
