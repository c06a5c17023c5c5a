package mva

import (
	"context"
	"testing"

	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve"
	"github.com/perfcast/perfcast/solve/sim"
)

// TestExamplesVsSim prints the analytical and simulated means of the
// example models side by side. Run it with
//
//	go test -run TestExamplesVsSim -v ./solve/mva -args -long
func TestExamplesVsSim(t *testing.T) {
	if !*long {
		t.Skip("comparison with the simulator runs with -args -long")
	}
	for _, f := range []string{"/work/shared/examples/shop.yaml", "/work/shared/examples/pipeline.yaml"} {
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
		for n, w := range s.Workloads {
			t.Logf("%s %s R mva %.5f sim %.5f X %.3f/%.3f", f, n, a.Workloads[n].ResponseTime.Mean, w.ResponseTime.Mean, a.Workloads[n].Throughput, w.Throughput)
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
