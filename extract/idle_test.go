package extract_test

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/perfcast/perfcast/extract"
	"github.com/perfcast/perfcast/model"
)

// Traces of two load tests minutes apart: the pause between them is idle
// time, left out of the rates and loads, and the arrivals stay Poisson.
// One test of the same length, and a sparse stream whose gaps are long but
// expected at its rate, have no idle stretch.
func TestIdleStretches(t *testing.T) {
	m, err := model.Parse([]byte(curveModel), "curve.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m.Hosts[0].CPU.SpeedCurve = nil
	at := func(rate float64) *model.Model {
		c, err := m.Clone()
		if err != nil {
			t.Fatal(err)
		}
		c.Workloads[0].Open.Rate = rate
		return c
	}
	dir := t.TempDir()
	path := func(name string) string { return filepath.Join(dir, name) }
	record(t, path("a.jsonl"), at(40), 1, 0, 2400)   // about 60 s
	record(t, path("b.jsonl"), at(40), 2, 360, 2400) // 300 s later
	record(t, path("c.jsonl"), at(40), 3, 0, 4800)   // 120 s in one go
	record(t, path("d.jsonl"), at(0.2), 4, 0, 200)   // 1000 s, gaps of 10–60 s
	cfg := &extract.Config{Hosts: map[string]extract.HostConfig{"app": {Cores: 1}}}
	for _, tc := range []struct {
		name     string
		files    []string
		rate     float64
		duration float64
		idle     bool
	}{
		{"two tests 5 min apart", []string{path("a.jsonl"), path("b.jsonl")}, 40, 120, true},
		{"one test", []string{path("c.jsonl")}, 40, 120, false},
		{"sparse", []string{path("d.jsonl")}, 0.2, 1000, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x, err := extractRun(context.Background(), tc.files, "x", cfg)
			if err != nil {
				t.Fatal(err)
			}
			rep := x.Report
			if tc.idle != (rep.IdleSeconds > 0) {
				t.Errorf("idle %.1f s", rep.IdleSeconds)
			}
			if tc.idle && math.Abs(rep.IdleSeconds-300) > 2 {
				t.Errorf("idle %.1f s, want the 300 s pause", rep.IdleSeconds)
			}
			// n Poisson arrivals: the duration and the rate are known to
			// a relative standard error of 1/√n; allow four.
			n := tc.rate * tc.duration
			tol := 4 / math.Sqrt(n)
			if math.Abs(rep.Duration-tc.duration)/tc.duration > tol {
				t.Errorf("duration %.1f s, want %.0f ± %.0f %%", rep.Duration, tc.duration, 100*tol)
			}
			w := x.Model.Workloads[0]
			if math.Abs(w.Open.Rate-tc.rate)/tc.rate > tol {
				t.Errorf("rate %.4g/s, want %g ± %.0f %%", w.Open.Rate, tc.rate, 100*tol)
			}
			if w.Open.CV != 1 {
				t.Errorf("arrival cv %g, want Poisson", w.Open.CV)
			}
			// The CPU is busy rate × 5 ms of the time the traces cover (the
			// sum of n demands and the duration each within 1/√n).
			meas := x.State.Measured(x.Model)
			u := meas.Resources[model.CPUResource("app")]
			if u == nil {
				t.Fatalf("no measured utilization of app: %v", meas.Resources)
			}
			if want := tc.rate * 0.005; math.Abs(u.Utilization-want)/want > tol {
				t.Errorf("measured utilization %.4f, want %.4f", u.Utilization, want)
			}
		})
	}
}
