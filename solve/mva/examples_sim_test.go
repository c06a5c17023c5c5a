package mva

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve"
	"github.com/perfcast/perfcast/solve/sim"
)

// TestExamplesVsSim solves the example models analytically and by
// simulation. Where Supports accepts a model, every workload's mean
// response time and throughput must agree within 5 % (the approximation's
// error on such models, docs/accuracy.md) plus the simulator's 95 %
// half-width; with -v it prints every operation and resource side by
// side:
//
//	go test -run TestExamplesVsSim -v ./solve/mva
func TestExamplesVsSim(t *testing.T) {
	files, _ := filepath.Glob("../../examples/models/*.yaml")
	if len(files) == 0 {
		t.Fatal("no example models in ../../examples/models")
	}
	for _, f := range files {
		m, err := model.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		a, err := New().Solve(context.Background(), m, solve.Options{})
		if err != nil {
			t.Fatal(err)
		}
		s, err := sim.New().Solve(context.Background(), m, solve.Options{Seed: 1, Precision: 0.02})
		if err != nil {
			t.Fatal(err)
		}
		supported, _ := Supports(m)
		for n, w := range s.Workloads {
			aw := a.Workloads[n]
			t.Logf("%s %s R mva %.5f sim %.5f X %.3f/%.3f", f, n, aw.ResponseTime.Mean, w.ResponseTime.Mean, aw.Throughput, w.Throughput)
			if !supported {
				continue
			}
			half := 0.0
			if ci := w.ResponseTime.CI95; ci != nil {
				half = (ci[1] - ci[0]) / 2
			}
			if d := math.Abs(aw.ResponseTime.Mean - w.ResponseTime.Mean); d > 0.05*w.ResponseTime.Mean+half {
				t.Errorf("%s %s: mean response time %.5f s analytically, %.5f ± %.5f s simulated", f, n, aw.ResponseTime.Mean, w.ResponseTime.Mean, half)
			}
			half = 0
			if ci := w.ThroughputCI95; ci != nil {
				half = (ci[1] - ci[0]) / 2
			}
			if d := math.Abs(aw.Throughput - w.Throughput); d > 0.05*w.Throughput+half {
				t.Errorf("%s %s: throughput %.3f/s analytically, %.3f ± %.3f/s simulated", f, n, aw.Throughput, w.Throughput, half)
			}
		}
		for n, o := range s.Operations {
			t.Logf("  op %s R mva %.5f sim %.5f", n, a.Operations[n].ResponseTime.Mean, o.ResponseTime.Mean)
		}
		for n, r := range s.Resources {
			ar := a.Resources[n]
			if ar == nil {
				t.Logf("  res %s missing in mva: sim %+v", n, r)
				continue
			}
			aw, sw := 0.0, 0.0
			if ar.Wait != nil {
				aw = ar.Wait.Mean
			}
			if r.Wait != nil {
				sw = r.Wait.Mean
			}
			t.Logf("  res %s U mva %.4f sim %.4f wait %.6f/%.6f", n, ar.Utilization, r.Utilization, aw, sw)
		}
	}
}

// TestNoLoadAlike solves the examples with no load: both solvers give the
// same answer, every resource idle, no bottleneck, no response time, and
// the warning that nothing is sent.
func TestNoLoadAlike(t *testing.T) {
	files, _ := filepath.Glob("../../examples/models/*.yaml")
	for _, f := range files {
		m, err := model.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range m.Workloads {
			if w.Open != nil {
				w.Open.Rate = 0
			} else {
				w.Closed.Users = 0
			}
		}
		a, err := New().Solve(context.Background(), m, solve.Options{})
		if err != nil {
			t.Fatal(err)
		}
		s, err := sim.New().Solve(context.Background(), m, solve.Options{Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range []*solve.Result{a, s} {
			if !r.Stable || r.Bottleneck != "" || len(r.Warnings) != 1 || r.Warnings[0] != solve.NoLoad {
				t.Errorf("%s, %s: stable %v, bottleneck %q, warnings %q", f, r.Solver, r.Stable, r.Bottleneck, r.Warnings)
			}
			if got, want := len(r.Resources), len(solve.Resources(m)); got != want {
				t.Errorf("%s, %s: %d resources, want %d", f, r.Solver, got, want)
			}
			for name, rr := range r.Resources {
				if rr.Utilization != 0 || rr.Busy != 0 {
					t.Errorf("%s, %s: %s busy at no load: %+v", f, r.Solver, name, rr)
				}
			}
			for name, wr := range r.Workloads {
				if wr.Throughput != 0 || wr.ResponseTime.Mean != 0 {
					t.Errorf("%s, %s: workload %s at no load: %+v", f, r.Solver, name, wr)
				}
			}
		}
	}
}
