package sim

import (
	"context"
	"testing"
	"time"

	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve"
)

const mm1Bench = `perfcast: 1
hosts: {h: {cpu: {scheduling: fcfs}}}
components:
  c: {host: h, operations: {op: {steps: [{cpu: exp(1ms)}]}}}
workload:
  w: {open: {rate: 700/s}, steps: [{call: c/op}]}
`

// benchEngine simulates b.N requests in one replication on one goroutine
// and reports simulated requests per second of one core.
func benchEngine(b *testing.B, m *model.Model) {
	p, err := compile(m)
	if err != nil {
		b.Fatal(err)
	}
	// Warm the pools up so that the timed part shows the steady state.
	warm := newEngine(p, 1, 1, 0, 10000, liveLimit(m))
	if err := warm.run(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	start, cpu := time.Now(), cpuTime()
	e := newEngine(p, 1, 2, 0, int64(b.N), liveLimit(m))
	if err := e.run(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s/core")
	if used := cpuTime() - cpu; used > 0 {
		// The same per second of processor time: robust on a busy machine.
		b.ReportMetric(float64(b.N)/used.Seconds(), "req/cpu-s")
	}
	b.ReportMetric(float64(e.events)/float64(b.N), "events/req")
}

func BenchmarkEngineMM1(b *testing.B) {
	m, err := model.Parse([]byte(mm1Bench), "mm1.yaml")
	if err != nil {
		b.Fatal(err)
	}
	benchEngine(b, m)
}

func BenchmarkEngineShop(b *testing.B) {
	benchEngine(b, exampleModel(b, "shop.yaml"))
}

// benchSolve runs a whole Solve (pilot, replications, aggregation) on one
// worker for 10⁶ requests per iteration.
func benchSolve(b *testing.B, m *model.Model) {
	const n = 1000000
	b.ReportAllocs()
	var wall, cpu time.Duration
	for b.Loop() {
		start, c := time.Now(), cpuTime()
		r, err := New().Solve(context.Background(), m, solve.Options{Seed: 1, Requests: n, Workers: 1})
		if err != nil || !r.Stable {
			b.Fatal(err, r.Warnings)
		}
		wall += time.Since(start)
		cpu += cpuTime() - c
	}
	b.ReportMetric(float64(n)*float64(b.N)/wall.Seconds(), "req/s/core")
	if cpu > 0 {
		b.ReportMetric(float64(n)*float64(b.N)/cpu.Seconds(), "req/cpu-s")
	}
}

func BenchmarkSolveMM1(b *testing.B) {
	m, err := model.Parse([]byte(mm1Bench), "mm1.yaml")
	if err != nil {
		b.Fatal(err)
	}
	benchSolve(b, m)
}

func BenchmarkSolveShop(b *testing.B) {
	benchSolve(b, exampleModel(b, "shop.yaml"))
}

// BenchmarkEngineMM1SpeedWindow is BenchmarkEngineMM1 on a CPU whose speed
// is redrawn every 10 ms (seven requests' time): what following a speed
// over time costs the engine, its events and the rescheduling of the
// service in progress at each change.
func BenchmarkEngineMM1SpeedWindow(b *testing.B) {
	m, err := model.Parse([]byte(mm1Bench), "mm1.yaml")
	if err != nil {
		b.Fatal(err)
	}
	m.Hosts[0].CPU.SpeedVariation, m.Hosts[0].CPU.SpeedWindow = 0.2, 0.01
	benchEngine(b, m)
}

// BenchmarkEngineMM1Limit is BenchmarkEngineMM1 on a CPU limited to 0.8
// of its core (the load 0.7, 88 % of the limit): the quota's events.
func BenchmarkEngineMM1Limit(b *testing.B) {
	m, err := model.Parse([]byte(mm1Bench), "mm1.yaml")
	if err != nil {
		b.Fatal(err)
	}
	m.Hosts[0].CPU.Cores, m.Hosts[0].CPU.Limit = 2, 0.8
	benchEngine(b, m)
}

// BenchmarkRecordShop records the spans of 20 000 requests of the shop
// example and counts the roots, as extraction's simulations of the
// arrivals do: every span built ("all"), or only the roots (RootsOnly).
func BenchmarkRecordShop(b *testing.B) {
	m := exampleModel(b, "shop.yaml")
	const n = 20000
	for _, rootsOnly := range []bool{false, true} {
		name := map[bool]string{false: "all", true: "roots"}[rootsOnly]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				roots := 0
				r, err := Record(context.Background(), m, RecordOptions{Seed: 1, Requests: n, RootsOnly: rootsOnly}, func(s *Span) error {
					if s.Parent == 0 {
						roots++
					}
					return nil
				})
				if err != nil || !r.Stable || roots < n {
					b.Fatal(err, roots)
				}
			}
		})
	}
}
