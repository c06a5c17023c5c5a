package solve_test

import (
	"context"
	"math"
	"testing"

	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve"
	"github.com/perfcast/perfcast/solve/mva"
	"github.com/perfcast/perfcast/solve/sim"
)

// speedModel is an M/M/1 queue whose CPU runs faster the busier it is:
// factor 0.8 when idle, 1.2 when saturated.
const speedModel = `perfcast: 1
hosts:
  app: {cpu: {speed_curve: [{utilization: 0, factor: 0.8}, {utilization: 1, factor: 1.2}]}}
components:
  svc:
    host: app
    operations:
      op: {steps: [{cpu: exp(10ms)}]}
workload:
  w:
    open: {rate: 60/s}
    steps: [{call: svc/op}]
`

func TestSpeedCurveOpen(t *testing.T) {
	m, err := model.Parse([]byte(speedModel), "speed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// f = 0.8 + 0.4·U with U = 0.6/f: f² − 0.8f − 0.24 = 0.
	f := (0.8 + math.Sqrt(0.64+0.96)) / 2
	u := 0.6 / f
	s := 0.010 / f
	r := s / (1 - u) // M/M/1
	res, err := mva.New().Solve(context.Background(), m, solve.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.SpeedFactors["app"]; math.Abs(got-f) > 1e-9 {
		t.Errorf("mva factor %g, want %g", got, f)
	}
	if got := res.Resources["app.cpu"].Utilization; math.Abs(got-u) > 1e-6 {
		t.Errorf("mva utilization %g, want %g", got, u)
	}
	if got := res.Workloads["w"].ResponseTime.Mean; math.Abs(got-r)/r > 1e-6 {
		t.Errorf("mva response time %g, want %g", got, r)
	}
	res, err = sim.New().Solve(context.Background(), m, solve.Options{Seed: 3, Precision: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	rt := res.Workloads["w"].ResponseTime
	if rt.CI95 == nil || r < rt.CI95[0] || r > rt.CI95[1] {
		t.Errorf("simulated response time %g (95 %% CI %v), want %g inside", rt.Mean, rt.CI95, r)
	}
	if got := res.SpeedFactors["app"]; math.Abs(got-f) > 1e-9 {
		t.Errorf("sim factor %g, want %g", got, f)
	}
}

// With closed users the utilization depends on the solution: the factor
// found must be the curve's at the utilization of the result.
func TestSpeedCurveClosed(t *testing.T) {
	src := `perfcast: 1
hosts:
  app: {cpu: {speed_curve: [{utilization: 0.2, factor: 0.8}, {utilization: 0.9, factor: 1.25}]}}
components:
  svc:
    host: app
    operations:
      op: {steps: [{cpu: exp(10ms)}]}
workload:
  w:
    closed: {users: 5, think: exp(50ms)}
    steps: [{call: svc/op}]
`
	m, err := model.Parse([]byte(src), "closed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	res, err := mva.New().Solve(context.Background(), m, solve.Options{})
	if err != nil {
		t.Fatal(err)
	}
	u := res.Resources["app.cpu"].Utilization
	f := res.SpeedFactors["app"]
	if want := model.SpeedAt(m.Host("app").CPU.SpeedCurve, u); math.Abs(f-want)/want > 0.003 {
		t.Errorf("factor %g at utilization %g, the curve says %g", f, u, want)
	}
	if f <= 0.8 || f >= 1.25 {
		t.Errorf("factor %g outside the curve's range", f)
	}
	// Utilization law at the factor found.
	x := res.Workloads["w"].Throughput
	if want := x * 0.010 / f; math.Abs(u-want) > 1e-6 {
		t.Errorf("utilization %g, X·S/f = %g", u, want)
	}
}

func TestNoSpeedCurve(t *testing.T) {
	m, err := model.Parse([]byte(speedModel), "speed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m.Host("app").CPU.SpeedCurve = nil
	got, factors, err := solve.ResolveSpeeds(context.Background(), m, nil)
	if err != nil || got != m || factors != nil {
		t.Errorf("a model without curves came back changed: %v %v %v", got == m, factors, err)
	}
}
