package ingest_test

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/perfcast/perfcast/ingest"
	"github.com/perfcast/perfcast/ingest/ingesttest"
)

// benchInput generates n traces written by write, once per benchmark.
func benchInput(b *testing.B, n int, write func(io.Writer, []*ingest.Span) error) ([]byte, int) {
	b.Helper()
	spans := ingesttest.NewGenerator(1).Traces(n)
	var buf bytes.Buffer
	if err := write(&buf, spans); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes(), len(spans)
}

// readAll reads every span of data and returns how many there were.
func readAll(b *testing.B, data []byte) int {
	r, err := ingest.Open([]string{"-"}, ingest.Options{Stdin: bytes.NewReader(data)})
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	ctx := context.Background()
	for {
		_, err := r.Next(ctx)
		if err == io.EOF {
			return n
		}
		if err != nil {
			b.Fatal(err)
		}
		n++
	}
}

func benchRead(b *testing.B, data []byte, spans int) {
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuSeconds()
	for b.Loop() {
		if n := readAll(b, data); n != spans {
			b.Fatalf("read %d spans, want %d", n, spans)
		}
	}
	cpu = cpuSeconds() - cpu
	b.ReportMetric(float64(spans)*float64(b.N)/b.Elapsed().Seconds(), "spans/s")
	if cpu > 0 {
		// All processor time of the process, garbage collection included.
		b.ReportMetric(float64(spans)*float64(b.N)/cpu, "spans/cpu-s")
	}
}

func BenchmarkReadOTLPProto(b *testing.B) {
	data, n := benchInput(b, 20000, func(w io.Writer, s []*ingest.Span) error {
		return ingesttest.WriteOTLPProto(w, s, ingesttest.Varint)
	})
	benchRead(b, data, n)
}

func BenchmarkReadOTLPProtoSingle(b *testing.B) {
	data, n := benchInput(b, 20000, func(w io.Writer, s []*ingest.Span) error {
		return ingesttest.WriteOTLPProto(w, s, ingesttest.Single)
	})
	benchRead(b, data, n)
}

func BenchmarkReadOTLPJSON(b *testing.B) {
	data, n := benchInput(b, 20000, func(w io.Writer, s []*ingest.Span) error {
		return ingesttest.WriteOTLPJSON(w, s, 50)
	})
	benchRead(b, data, n)
}

func BenchmarkReadZipkin(b *testing.B) {
	data, n := benchInput(b, 5000, ingesttest.WriteZipkin)
	benchRead(b, data, n)
}

func BenchmarkReadJaeger(b *testing.B) {
	data, n := benchInput(b, 5000, ingesttest.WriteJaeger)
	benchRead(b, data, n)
}
