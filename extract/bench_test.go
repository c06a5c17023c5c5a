//go:build unix

package extract_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/perfcast/perfcast/extract"
	"github.com/perfcast/perfcast/ingest"
	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve/sim"
	"github.com/perfcast/perfcast/trace"
	"github.com/perfcast/perfcast/tracegen"
)

// benchRequests gives about 200 000 spans of knownModel (5.6 per request).
const benchRequests = 36000

// benchSet is a benchmark's traces, generated once.
type benchSet struct {
	// database, where set, names a component of knownModel whose spans
	// are left out and whose callers' client spans say it is a database
	// (db.system): a system seen only by its clients.
	database string
	once     sync.Once
	trees    []*trace.Tree
	spans    int
	otlp     []byte // the same spans as OTLP JSON
	err      error
}

var (
	bench benchSet
	// benchProcs is bench's traces with the catalog's and the orders'
	// spans naming four processes of one-thread runtimes each (Node.js,
	// CPython): their replicas' processes are swept for their queues.
	benchProcs benchSet
	// benchDB is bench's traces with the catalog a database without
	// spans: the front end's calls to it are profiled for a pool.
	benchDB = benchSet{database: "catalog"}
)

// benchTrees generates the benchmark's traces once: the spans of knownModel
// at its load, assembled into trees and written as OTLP JSON.
func benchTrees(b *testing.B) ([]*trace.Tree, int, []byte) {
	return bench.get(b, tracegen.Options{Seed: 1})
}

// benchProcTrees is benchTrees for benchProcs.
func benchProcTrees(b *testing.B) ([]*trace.Tree, int, []byte) {
	return benchProcs.get(b, tracegen.Options{Seed: 1, Runtimes: map[string]tracegen.Runtime{
		"catalog": {Language: "nodejs", Name: "nodejs", Processes: 4},
		"orders":  {Language: "python", Name: "cpython", Processes: 4},
	}})
}

func (set *benchSet) get(b *testing.B, opts tracegen.Options) ([]*trace.Tree, int, []byte) {
	set.once.Do(func() {
		m, err := model.Parse([]byte(knownModel), "known.yaml")
		if err != nil {
			set.err = err
			return
		}
		var buf bytes.Buffer
		w := tracegen.NewWriter(&buf, opts)
		asm := trace.New(trace.Options{}, func(t *trace.Tree) error {
			set.trees = append(set.trees, t)
			return nil
		})
		_, err = sim.Record(context.Background(), m, sim.RecordOptions{Seed: 1, Requests: benchRequests},
			func(s *sim.Span) error {
				if set.database != "" && s.Component == set.database {
					return nil
				}
				set.spans++
				if err := w.Add(s); err != nil {
					return err
				}
				sp := tracegen.Convert(s, &opts)
				if set.database != "" && sp.PeerService == set.database {
					sp.DBSystem = "postgresql"
				}
				return asm.Add(sp)
			})
		if err == nil {
			err = asm.Close()
		}
		if err == nil {
			err = w.Close()
		}
		set.otlp, set.err = buf.Bytes(), err
	})
	if set.err != nil {
		b.Fatal(set.err)
	}
	return set.trees, set.spans, set.otlp
}

// cpuTime is the processor time the process has used, which, unlike the
// wall clock, does not count time lost to other processes on a busy machine.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// report records spans per second of wall time and per second of processor
// time (all threads, garbage collection included).
func report(b *testing.B, spans int, cpu time.Duration) {
	b.ReportMetric(float64(spans)*float64(b.N)/b.Elapsed().Seconds(), "spans/s")
	if cpu > 0 {
		b.ReportMetric(float64(spans)*float64(b.N)/cpu.Seconds(), "spans/cpu-s")
	}
}

// BenchmarkExtract measures extraction proper: folding assembled call trees
// into a state and generating the model, on one goroutine, so that
// spans/cpu-s is the rate per core.
func BenchmarkExtract(b *testing.B) {
	trees, spans, _ := benchTrees(b)
	benchFold(b, trees, spans, 3)
}

// BenchmarkExtractDatabase is BenchmarkExtract on traces whose catalog is
// a database seen only by the front end's client spans: what profiling
// calls to databases for connection pools costs.
func BenchmarkExtractDatabase(b *testing.B) {
	trees, spans, _ := benchDB.get(b, tracegen.Options{Seed: 1})
	benchFold(b, trees, spans, 0)
}

// BenchmarkExtractProcesses is BenchmarkExtract on traces whose catalog
// and orders name four processes each, of one-thread runtimes: what
// following processes (slots, workers, callers, their queues) costs.
func BenchmarkExtractProcesses(b *testing.B) {
	trees, spans, _ := benchProcTrees(b)
	benchFold(b, trees, spans, 3)
}

// benchFold folds the trees into a state and generates its model, timed;
// the model must have components components (any number, for 0).
func benchFold(b *testing.B, trees []*trace.Tree, spans, components int) {
	b.ResetTimer()
	cpu := cpuTime()
	for b.Loop() {
		st := extract.NewState()
		for _, t := range trees {
			st.Fold(t, extractConfig)
		}
		if m, _ := st.Model("bench", extractConfig); components > 0 && len(m.Components) != components || len(m.Components) == 0 {
			b.Fatalf("extracted %d components", len(m.Components))
		}
	}
	report(b, spans, cpuTime()-cpu)
}

// BenchmarkExtractRun measures extraction from a file: reading OTLP JSON,
// assembling trees, folding and generating the model (extract.Run).
func BenchmarkExtractRun(b *testing.B) {
	_, spans, data := benchTrees(b)
	path := filepath.Join(b.TempDir(), "traces.otlp.jsonl")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	cpu := cpuTime()
	for b.Loop() {
		if _, err := extractRun(context.Background(), []string{path}, "bench", extractConfig); err != nil {
			b.Fatal(err)
		}
	}
	report(b, spans, cpuTime()-cpu)
}

// BenchmarkStateSave and BenchmarkStateLoad measure the checkpoint of
// perfcast receive: the state of the benchmark's traces written and read
// back (gzipped JSON).
func BenchmarkStateSave(b *testing.B) {
	st := benchState(b)
	var buf bytes.Buffer
	b.ResetTimer()
	for b.Loop() {
		buf.Reset()
		if err := st.Save(&buf); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(buf.Len()), "bytes")
}

func BenchmarkStateLoad(b *testing.B) {
	var buf bytes.Buffer
	if err := benchState(b).Save(&buf); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := extract.LoadState(bytes.NewReader(buf.Bytes())); err != nil {
			b.Fatal(err)
		}
	}
}

// benchState folds the benchmark's trees, as a receiver has them before
// it makes a model.
func benchState(b *testing.B) *extract.State {
	trees, _, _ := benchTrees(b)
	st := extract.NewState()
	for _, t := range trees {
		st.Fold(t, extractConfig)
	}
	return st
}

// BenchmarkExtractManyOperations folds 6000 requests whose span names all
// differ (a value in the path that identifier folding does not catch) and
// generates the model: 6000 operations and as many workloads.
func BenchmarkExtractManyOperations(b *testing.B) {
	const n = 6000
	base := int64(1_700_000_000_000_000_000)
	var trees []*trace.Tree
	a := trace.New(trace.Options{}, func(t *trace.Tree) error { trees = append(trees, t); return nil })
	for i := range n {
		var tid ingest.TraceID
		binary.BigEndian.PutUint64(tid[8:], uint64(i+1))
		var sid ingest.SpanID
		binary.BigEndian.PutUint64(sid[:], uint64(i+1))
		start := base + int64(i)*10e6
		name := fmt.Sprintf("GET /p/item-%c%c%c", 'a'+i%26, 'a'+i/26%26, 'a'+i/676%26)
		if err := a.Add(&ingest.Span{TraceID: tid, SpanID: sid, Kind: ingest.KindServer, Service: "web", Host: "h",
			Name: name, Start: start, End: start + 2e6, CPUTime: 1e-3}); err != nil {
			b.Fatal(err)
		}
	}
	if err := a.Close(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		st := extract.NewState()
		for _, t := range trees {
			st.Fold(t, nil)
		}
		if m, _ := st.Model("many", nil); len(m.Workloads) != n {
			b.Fatalf("extracted %d workloads", len(m.Workloads))
		}
	}
}

// BenchmarkExtractLimited measures extraction with the metrics of a
// service under a CPU limit (limitModel, 10 000 requests), against the
// same traces whose metrics state no limit: the difference is the
// simulation of the limit's stalls (throttleWaitFactor).
func BenchmarkExtractLimited(b *testing.B) {
	_, dir, tracesPath, metricsPath := recordModel(b, limitModel, "limited", tracegen.Options{Seed: 4}, 10000, nil)
	noLimit := filepath.Join(dir, "nolimit.csv")
	data, err := os.ReadFile(metricsPath)
	if err != nil {
		b.Fatal(err)
	}
	stripped := strings.ReplaceAll(strings.ReplaceAll(string(data), ",1.5,100ms", ",,"), ",cpu_limit,cpu_period", "")
	if err := os.WriteFile(noLimit, []byte(stripped), 0o644); err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct{ name, metrics string }{{"limit", metricsPath}, {"none", noLimit}} {
		b.Run(bc.name, func(b *testing.B) {
			cfg := &extract.Config{Metrics: []string{bc.metrics}, Hosts: map[string]extract.HostConfig{"app": {Cores: 2}}}
			for b.Loop() {
				if _, err := extractRun(context.Background(), []string{tracesPath}, "limited", cfg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
