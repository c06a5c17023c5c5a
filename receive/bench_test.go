package receive

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/perfcast/perfcast/ingest/ingesttest"
)

// BenchmarkReceive measures the receiver's intake: 5 000 traces (about
// 28 000 spans) a round, in export requests of about 500 spans in
// protobuf, each decoded by the handler, assembled and folded by Run,
// without the network; a round ends when Run has folded all its traces
// (complete 10 ms after their last span).
func BenchmarkReceive(b *testing.B) {
	const traces = 5000
	gen := ingesttest.NewGenerator(7)
	r, err := New(Options{Dir: b.TempDir(), Idle: 10 * time.Millisecond, Checkpoint: time.Hour, tick: 2 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	h := r.Handler()
	var spans, folded int
	for b.Loop() {
		b.StopTimer()
		round := gen.Traces(traces)
		spans += len(round)
		var bodies [][]byte
		for _, batch := range batches(round, 500) {
			bodies = append(bodies, ingesttest.ProtoRequest(batch))
		}
		b.StartTimer()
		for _, body := range bodies {
			req := httptest.NewRequest(http.MethodPost, "/v1/traces", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/x-protobuf")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				b.Fatalf("status %d", rec.Code)
			}
		}
		folded += traces
		for r.Stats().Traces < int64(folded) {
			time.Sleep(time.Millisecond)
		}
	}
	b.ReportMetric(float64(spans)/b.Elapsed().Seconds(), "spans/s")
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}
