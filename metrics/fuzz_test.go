package metrics

import (
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var updateCorpus = flag.Bool("update-corpus", false, "rewrite the seed corpora in testdata/fuzz")

// fuzzSeeds are the seed inputs of each fuzz target: the golden test files
// of its format, and a few damaged variants.
var fuzzSeeds = map[string][]string{
	"FuzzParse":      {"testdata/csv_utilization.csv", "testdata/prom_node.json", "testdata/otlp_process.jsonl", "testdata/otlp_kubelet.jsonl", "testdata/otlp_docker_jvm.json"},
	"FuzzCSV":        {"testdata/csv_utilization.csv", "testdata/csv_seconds.csv", "testdata/csv_services.csv"},
	"FuzzPrometheus": {"testdata/prom_process.json", "testdata/prom_node.json", "testdata/prom_rate.json", "testdata/prom_cadvisor_k8s.json", "testdata/prom_cadvisor_docker.json", "testdata/prom_runtimes.json", "testdata/prom_pools.json", "testdata/prom_pool_times.json"},
	"FuzzOTLP":       {"testdata/otlp_system.json", "testdata/otlp_process.jsonl", "testdata/otlp_kubelet.jsonl", "testdata/otlp_docker_jvm.json", "testdata/otlp_runtimes.jsonl", "testdata/otlp_pools.jsonl", "testdata/otlp_pool_times.jsonl"},
}

// TestWriteCorpus writes the seed corpora with -update-corpus; otherwise
// it checks that they exist.
func TestWriteCorpus(t *testing.T) {
	for name, files := range fuzzSeeds {
		dir := filepath.Join("testdata", "fuzz", name)
		if !*updateCorpus {
			if entries, err := os.ReadDir(dir); err != nil || len(entries) == 0 {
				t.Errorf("no seed corpus in %s (run go test -run TestWriteCorpus -update-corpus)", dir)
			}
			continue
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for i, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			write := func(suffix string, b []byte) {
				body := "go test fuzz v1\n[]byte(" + strconv.Quote(string(b)) + ")\n"
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%d%s", i, suffix)), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			write("", data)
			write("-cut", data[:len(data)*2/3])
		}
	}
}

func addSeeds(f *testing.F, name string) {
	for _, p := range fuzzSeeds[name] {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
}

// check verifies what every reader must guarantee, whatever the input: an
// error of one line naming the input, or series in order, without overlap,
// with finite non-negative values and fractions not above 1.05, and
// limits, throttling counts and pool sizes that make sense.
func check(t *testing.T, s *Set, err error) {
	if err != nil {
		if !strings.HasPrefix(err.Error(), "fuzz:") || strings.Contains(err.Error(), "\n") {
			t.Fatalf("error not of one line naming the input: %q", err)
		}
		return
	}
	if len(s.Series) == 0 && len(s.Limits) == 0 && len(s.Throttling) == 0 && len(s.Processors) == 0 && len(s.Pools) == 0 && len(s.PoolTimes) == 0 {
		t.Fatal("no series, limits, throttling, processors or pools, and no error")
	}
	for h, bySvc := range s.Pools {
		for svc, byPool := range bySvc {
			for pool, n := range byPool {
				if svc == "" || n < 1 || n > maxPoolSize {
					t.Fatalf("host %q, service %q: pool %q of %d", h, svc, pool, n)
				}
			}
		}
	}
	for h, bySvc := range s.PoolTimes {
		for svc, byPool := range bySvc {
			for pool, pt := range byPool {
				if svc == "" || !finite(pt.Uses) || !finite(pt.Use) || !finite(pt.Waits) || !finite(pt.Wait) {
					t.Fatalf("host %q, service %q: pool %q times %+v", h, svc, pool, pt)
				}
			}
		}
	}
	for h, l := range s.Limits {
		if h == "" || !(l.Cores > 0 && l.Cores <= maxCores) || !(l.Period >= 0) || math.IsInf(l.Period, 0) {
			t.Fatalf("host %q: limit %+v", h, l)
		}
	}
	for h, th := range s.Throttling {
		for _, sm := range th.Samples {
			if h == "" || sm.End <= sm.Start || !(sm.Throttled >= 0 && sm.Throttled <= sm.Periods) || math.IsInf(sm.Periods, 0) {
				t.Fatalf("host %q: throttling %+v", h, sm)
			}
		}
	}
	for h, sr := range s.Series {
		if h == "" || sr.Host != h {
			t.Fatalf("series host %q under key %q", sr.Host, h)
		}
		for i, sm := range sr.Samples {
			if sm.End <= sm.Start || (i > 0 && sm.Start < sr.Samples[i-1].End) {
				t.Fatalf("host %s: sample %d (%d, %d] out of order", h, i, sm.Start, sm.End)
			}
			if math.IsNaN(sm.Value) || math.IsInf(sm.Value, 0) || sm.Value < 0 {
				t.Fatalf("host %s: value %v", h, sm.Value)
			}
			if sr.Unit == Fraction && sm.Value > maxUtilization {
				t.Fatalf("host %s: fraction %v", h, sm.Value)
			}
		}
	}
	for _, f := range s.Files {
		for _, k := range f.Damage.Kinds() {
			for _, m := range f.Damage.Samples[k] {
				if strings.Contains(m, "\n") {
					t.Fatalf("damage message spans lines: %q", m)
				}
			}
		}
	}
}

// parseAs runs one reader on data, bypassing format detection.
func parseAs(data []byte, read func(*reader, []byte) error) (*Set, error) {
	r := &reader{name: "fuzz"}
	if err := read(r, data); err != nil {
		return nil, err
	}
	return r.build()
}

func FuzzParse(f *testing.F) {
	addSeeds(f, "FuzzParse")
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(strings.NewReader(string(data)), "fuzz")
		check(t, s, err)
	})
}

func FuzzCSV(f *testing.F) {
	addSeeds(f, "FuzzCSV")
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := parseAs(data, (*reader).csv)
		check(t, s, err)
	})
}

func FuzzPrometheus(f *testing.F) {
	addSeeds(f, "FuzzPrometheus")
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := parseAs(data, (*reader).prometheus)
		check(t, s, err)
	})
}

func FuzzOTLP(f *testing.F) {
	addSeeds(f, "FuzzOTLP")
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := parseAs(data, (*reader).otlp)
		check(t, s, err)
	})
}
