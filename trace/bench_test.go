package trace

import (
	"runtime"
	"testing"

	"github.com/perfcast/perfcast/ingest"
	"github.com/perfcast/perfcast/ingest/ingesttest"
)

// BenchmarkAssemble measures assembly alone: 200k spans of 100 interleaved
// traces at a time, added one by one, trees built, skew corrected.
func BenchmarkAssemble(b *testing.B) {
	s := ingesttest.NewStream(1, 200_000, 100)
	var spans []*ingest.Span
	for x := s.Next(); x != nil; x = s.Next() {
		spans = append(spans, x)
	}
	orig := make([]ingest.Span, len(spans))
	for i, x := range spans {
		orig[i] = *x
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := 0.0
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		for j, x := range spans {
			*x = orig[j] // undo the skew correction of the previous round
		}
		b.StartTimer()
		cpu -= cpuSeconds()
		trees := 0
		a := New(Options{}, func(*Tree) error { trees++; return nil })
		for _, x := range spans {
			if err := a.Add(x); err != nil {
				b.Fatal(err)
			}
		}
		if err := a.Close(); err != nil {
			b.Fatal(err)
		}
		cpu += cpuSeconds()
		if trees == 0 {
			b.Fatal("no trees")
		}
	}
	b.ReportMetric(float64(len(spans))*float64(b.N)/b.Elapsed().Seconds(), "spans/s")
	if cpu > 0 {
		b.ReportMetric(float64(len(spans))*float64(b.N)/cpu, "spans/cpu-s")
	}
}

// BenchmarkAssemblePeakMemory10M assembles a generated stream of ten
// million spans (100 traces interleaved at a time) with the default limits,
// and reports the peak heap in use, sampled every 100k spans, and the
// memory obtained from the OS. It runs once whatever -benchtime says.
func BenchmarkAssemblePeakMemory10M(b *testing.B) {
	const total = 10_000_000
	runtime.GC()
	var ms runtime.MemStats
	var peak uint64
	sample := func() {
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapInuse)
	}
	b.ResetTimer()
	n, trees := 0, 0
	s := ingesttest.NewStream(1, total, 100)
	a := New(Options{}, func(*Tree) error { trees++; return nil })
	for x := s.Next(); x != nil; x = s.Next() {
		if err := a.Add(x); err != nil {
			b.Fatal(err)
		}
		n++
		if n%100_000 == 0 {
			sample()
		}
	}
	if err := a.Close(); err != nil {
		b.Fatal(err)
	}
	sample()
	b.StopTimer()
	if n < total || a.Stats().Damage.Total() != 0 || a.Stats().Evicted != 0 {
		b.Fatalf("%d spans, stats %+v", n, a.Stats())
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
	b.ReportMetric(float64(ms.Sys)/(1<<20), "sys-MB")
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "spans/s")
	b.ReportMetric(float64(a.Stats().MaxOpen), "max-open-traces")
}
