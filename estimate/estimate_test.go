package estimate

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// exactProblem builds windows whose busy time is exactly Δ·bg + Σ n·D, the
// completions of each operation given per window by counts(i, op).
func exactProblem(d []float64, bg float64, windows int, counts func(i, op int) float64) *Problem {
	p := &Problem{Cores: 4}
	for j := range d {
		p.Ops = append(p.Ops, string(rune('a'+j)))
	}
	for i := 0; i < windows; i++ {
		w := Window{Start: int64(i) * 1e9, Length: 1, Busy: bg, Count: make([]float64, len(d)), Own: make([]float64, len(d))}
		for j := range d {
			n := counts(i, j)
			w.Count[j] = n
			w.Own[j] = n * d[j] * 1.5
			w.Busy += n * d[j]
		}
		p.Windows = append(p.Windows, w)
	}
	return p
}

// varying gives two operations throughputs that vary independently.
func varying(i, op int) float64 {
	if op == 0 {
		return 20 + 10*math.Sin(float64(i)/7)
	}
	return 15 + 8*math.Cos(float64(i)/3+1)
}

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if !(math.Abs(got-want) <= tol) {
		t.Errorf("%s = %.9g, want %.9g ± %.3g", what, got, want, tol)
	}
}

func TestSDLSingleClass(t *testing.T) {
	// 2 cores half busy for 10 × 10 s with 400 completions:
	// D = U·Δ·cores/completions = 0.5·100·2/400 = 0.25 s.
	p := &Problem{Ops: []string{"op"}, Cores: 2}
	for i := 0; i < 10; i++ {
		p.Windows = append(p.Windows, Window{Length: 10, Busy: 0.5 * 10 * 2, Count: []float64{40}, Own: []float64{12}})
	}
	f, err := SDL{}.Estimate(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "D", f.Demands[0], 0.25, 1e-12)
	c, err := Choose(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Picked != "sdl" {
		t.Errorf("picked %s, want sdl (a constant throughput leaves the regression unidentified): %s", c.Picked, c.Why)
	}
	if !hasFlag(c.Diagnosis, FlagConstantThroughput) {
		t.Errorf("constant throughput not flagged: %+v", c.Diagnosis.Flags)
	}
	if _, err := (SDL{}).Estimate(exactProblem([]float64{1, 2}, 0, 3, varying), nil); err != ErrNotApplicable {
		t.Errorf("SDL on two operations: %v, want ErrNotApplicable", err)
	}
}

func TestApportionBrosigExample(t *testing.T) {
	// Brosig's figure: invocation counts 100 and 200, response times 1.8 s
	// and 0.4 s give run-time portions 180/260 ≈ 0.69 and 80/260 ≈ 0.31.
	// With 26 core-seconds busy: D₁ = 26·0.6923/100 = 0.18 s,
	// D₂ = 26·0.3077/200 = 0.04 s.
	p := &Problem{Ops: []string{"intAct1", "intAct2"}, Windows: []Window{{Length: 100, Busy: 26,
		Count: []float64{100, 200}, Own: []float64{100 * 1.8, 200 * 0.4}}}}
	f, err := Apportion{}.Estimate(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "D1", f.Demands[0], 0.18, 1e-12)
	near(t, "D2", f.Demands[1], 0.04, 1e-12)
	near(t, "portion 1", f.Demands[0]*100/26, 0.69, 0.005)
	near(t, "portion 2", f.Demands[1]*200/26, 0.31, 0.005)
	near(t, "background", f.Background, 0, 0)
}

func TestRegressionTwoClasses(t *testing.T) {
	d := []float64{0.010, 0.030}
	p := exactProblem(d, 0, 60, varying)
	f, err := Regression{}.Estimate(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !f.Identified {
		t.Fatalf("not identified: %s", f.Note)
	}
	for j := range d {
		near(t, "regression D"+p.Ops[j], f.Demands[j], d[j], 1e-9)
	}
	near(t, "background", f.Background, 0, 1e-9)
	k, err := Kalman{}.Estimate(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	for j := range d {
		near(t, "kalman D"+p.Ops[j], k.Demands[j], d[j], 0.01*d[j])
	}
	c, err := Choose(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Picked != "regression" {
		t.Errorf("picked %s: %s", c.Picked, c.Why)
	}
	if c.Diagnosis.Condition > CollinearCondition || hasFlag(c.Diagnosis, FlagCollinear) {
		t.Errorf("independent throughputs flagged collinear: %+v", c.Diagnosis)
	}
	// Own times are 1.5 × the demand for both: apportioning without
	// background finds the demands too, and must say it assumed.
	a := scoreOf(c, "apportion")
	for j := range d {
		near(t, "apportion D"+p.Ops[j], a.Fit.Demands[j], d[j], 1e-9)
	}
}

func TestBackgroundIsIntercept(t *testing.T) {
	d := []float64{0.010, 0.030}
	p := exactProblem(d, 0.3, 60, varying)
	for _, e := range []Estimator{Regression{}, Kalman{}} {
		f, err := e.Estimate(p, nil)
		if err != nil {
			t.Fatal(err)
		}
		tol := 1e-9
		if e.Name() == "kalman" {
			tol = 0.01
		}
		near(t, e.Name()+" background", f.Background, 0.3, tol*30)
		for j := range d {
			near(t, e.Name()+" D"+p.Ops[j], f.Demands[j], d[j], tol*d[j]*100)
		}
	}
	c, err := Choose(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	res := Results(p, c)
	for j, r := range res {
		near(t, "result CPU "+p.Ops[j], r.CPU, d[j], 1e-9)
		// Own time is 1.5 × D: the rest is off the CPU.
		near(t, "result off-CPU "+p.Ops[j], r.OffCPU, 0.5*d[j], 1e-9)
	}
	near(t, "fit background", c.Fit.Background, 0.3, 1e-9)
}

func TestCollinearNotIdentified(t *testing.T) {
	d := []float64{0.010, 0.030}
	// The second operation always runs twice as often as the first.
	p := exactProblem(d, 0.1, 60, func(i, op int) float64 { return float64(op+1) * varying(i, 0) })
	c, err := Choose(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !hasFlag(c.Diagnosis, FlagCollinear) {
		t.Errorf("collinear throughputs not flagged: %+v", c.Diagnosis)
	}
	for _, m := range []string{"regression", "kalman"} {
		if s := scoreOf(c, m); s.Fit.Identified {
			t.Errorf("%s identified on collinear throughputs: %+v", m, s.Fit)
		}
	}
	if c.Picked == "regression" || c.Picked == "kalman" {
		t.Errorf("picked %s on collinear data", c.Picked)
	}
	if !strings.Contains(c.Why, "not identified") {
		t.Errorf("choice does not say why the regression was passed over: %s", c.Why)
	}
	for _, r := range Results(p, c) {
		if r.Identified {
			t.Errorf("result claims identification: %+v", r)
		}
	}
}

func TestTooFewWindows(t *testing.T) {
	p := exactProblem([]float64{0.01, 0.02}, 0, 5, varying)
	c, err := Choose(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !hasFlag(c.Diagnosis, FlagTooFewWindows) {
		t.Errorf("too few windows not flagged: %+v", c.Diagnosis.Flags)
	}
	if s := scoreOf(c, "regression"); s.Fit.Identified {
		t.Errorf("regression identified on 5 windows")
	}
}

func TestUtilizationFlags(t *testing.T) {
	d := []float64{0.0001, 0.0002}
	low := exactProblem(d, 0, 60, varying)
	if dg := Diagnose(low); !hasFlag(dg, FlagLowUtilization) {
		t.Errorf("low utilization %v not flagged", dg.Utilization)
	}
	high := exactProblem([]float64{0.1, 0.1}, 0, 60, varying)
	high.Cores = 3.5
	if dg := Diagnose(high); !hasFlag(dg, FlagSaturated) {
		t.Errorf("saturation %v not flagged", dg.Utilization)
	}
	mid := exactProblem([]float64{0.05, 0.05}, 0, 60, varying)
	if dg := Diagnose(mid); hasFlag(dg, FlagSaturated) || hasFlag(dg, FlagLowUtilization) {
		t.Errorf("utilization %v flagged: %+v", dg.Utilization, dg.Flags)
	}
}

func TestResponseTimeLowLoad(t *testing.T) {
	// Own time grows with load (queueing); at the lowest quarter of load it
	// is close to the demand.
	p := &Problem{Ops: []string{"a"}, Cores: 1}
	for i := 0; i < 40; i++ {
		n := float64(10 + i)
		u := n * 0.01
		p.Windows = append(p.Windows, Window{Length: 1, Busy: u, Count: []float64{n}, Own: []float64{n * 0.01 / (1 - u)}})
	}
	f, err := ResponseTime{}.Estimate(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Windows 0..9 have utilization 0.10..0.19: own time 0.0111..0.0123.
	if f.Demands[0] < 0.0111 || f.Demands[0] > 0.0124 {
		t.Errorf("low-load own time %v outside the low-load range", f.Demands[0])
	}
}

func TestSplit(t *testing.T) {
	for _, c := range []struct{ d, own, cpu, off float64 }{
		{0.002, 0.005, 0.002, 0.003},
		{0.006, 0.005, 0.006, 0},
		{-1, 0.005, 0, 0.005},
		{math.NaN(), 0.004, 0, 0.004},
	} {
		cpu, off := Split(c.d, c.own)
		if cpu != c.cpu || math.Abs(off-c.off) > 1e-15 {
			t.Errorf("Split(%v, %v) = %v, %v; want %v, %v", c.d, c.own, cpu, off, c.cpu, c.off)
		}
	}
}

// TestNNLSBruteForce compares Lawson–Hanson with an exhaustive search over
// the free sets: the solution of min ‖Ax − b‖, x ≥ 0, is the unconstrained
// least-squares solution on some set of columns with the others at zero;
// the feasible one with the smallest residual is it.
func TestNNLSBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 300; trial++ {
		rows, cols := 4+rng.IntN(8), 1+rng.IntN(5)
		a := mat.NewDense(rows, cols, nil)
		b := make([]float64, rows)
		for i := 0; i < rows; i++ {
			for j := 0; j < cols; j++ {
				a.Set(i, j, rng.NormFloat64())
			}
			b[i] = rng.NormFloat64()
		}
		x, _, err := NNLS(a, b)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range x {
			if v < 0 {
				t.Fatalf("trial %d: negative coefficient %v", trial, x)
			}
		}
		best := math.Inf(1)
		for set := 0; set < 1<<cols; set++ {
			free := make([]bool, cols)
			for j := range free {
				free[j] = set&(1<<j) != 0
			}
			s, err := lsqFree(a, b, free)
			if err != nil {
				continue
			}
			ok := true
			for _, v := range s {
				if v < -1e-12 {
					ok = false
				}
			}
			if ok {
				best = math.Min(best, residual(a, b, s))
			}
		}
		if got := residual(a, b, x); got > best*(1+1e-9)+1e-12 {
			t.Errorf("trial %d: residual %v, exhaustive search %v", trial, got, best)
		}
	}
}

func residual(a *mat.Dense, b, x []float64) float64 {
	rows, cols := a.Dims()
	var s float64
	for i := 0; i < rows; i++ {
		r := b[i]
		for j := 0; j < cols; j++ {
			r -= a.At(i, j) * x[j]
		}
		s += r * r
	}
	return s
}

func hasFlag(d Diagnosis, kind string) bool {
	for _, f := range d.Flags {
		if f.Kind == kind {
			return true
		}
	}
	return false
}

func scoreOf(c *Choice, method string) Score {
	for _, s := range c.Scores {
		if s.Method == method {
			return s
		}
	}
	return Score{}
}

// TestBoundTwinNotIdentified: a fit that holds one operation at demand 0
// while an operation whose throughput goes with its own (every checkout
// reserves and notifies) carries the busy time of both has not separated
// them; an operation at 0 whose throughput goes its own way is no such
// case.
func TestBoundTwinNotIdentified(t *testing.T) {
	var ws []*Window
	for i := range 60 {
		n := float64(20 + 15*(i%7))
		carry := float64(i % 2) // a pair split by the window's end
		other := float64(100 + 40*((i*5)%11))
		ws = append(ws, &Window{Length: 5, Count: []float64{n + carry, n - carry + 1, other}, Own: make([]float64, 3), Busy: 1})
	}
	ops := []string{"reserve", "notify", "getitem"}
	f := &Fit{Demands: []float64{0, 0.0025, 0.0012}, StdErr: []float64{math.NaN(), 0.0001, 0.00001}}
	sc := func() *mat.Dense {
		a, _ := design(ws, len(ops))
		m, _ := scaleColumns(a)
		return m
	}
	ok, note := identified(f, ops, ws, sc(), []bool{false, true, true})
	if ok || !strings.Contains(note, "reserve and notify not separable") {
		t.Errorf("identified %v: %s", ok, note)
	}
	// The operation at 0 is getitem's twin in nothing: its throughput
	// swings on its own period.
	for i, w := range ws {
		w.Count[0] = float64(10 + 30*((i*3)%5))
	}
	if ok, note := identified(f, ops, ws, sc(), []bool{false, true, true}); !ok {
		t.Errorf("not identified: %s", note)
	}
}
