package whatif

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"

	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve"
)

// Vary is one key swept over a range of values.
type Vary struct {
	Key    string
	Values []float64
}

// defaultPoints is the number of values of a range given without a step.
const defaultPoints = 10

// maxPoints bounds the values of one range.
const maxPoints = 10000

// ParseVary reads `KEY=FROM..TO[:STEP]`. Rates may carry their unit
// (`10/s..100/s`). Without a step, integer keys (cores, replicas, threads,
// capacity, users) take every whole number when there are at most 20, and
// otherwise the range is cut into 10 steps.
func ParseVary(s string) (Vary, error) {
	key, rng, ok := strings.Cut(s, "=")
	if !ok {
		return Vary{}, fmt.Errorf("--vary %q: want KEY=FROM..TO[:STEP]", s)
	}
	key = strings.TrimSpace(key)
	rng, stepText, hasStep := strings.Cut(rng, ":")
	fromText, toText, ok := strings.Cut(rng, "..")
	if !ok {
		return Vary{}, fmt.Errorf("--vary %q: want KEY=FROM..TO[:STEP]", s)
	}
	parse := func(t string) (float64, error) {
		t = strings.TrimSpace(t)
		if strings.Contains(t, "/") {
			return model.ParseRate(t)
		}
		v, err := strconv.ParseFloat(t, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, fmt.Errorf("not a number: %q", t)
		}
		return v, nil
	}
	from, err := parse(fromText)
	if err != nil {
		return Vary{}, fmt.Errorf("--vary %s: %w", s, err)
	}
	to, err := parse(toText)
	if err != nil {
		return Vary{}, fmt.Errorf("--vary %s: %w", s, err)
	}
	if to < from {
		return Vary{}, fmt.Errorf("--vary %s: the range ends below its start", s)
	}
	var step float64
	switch {
	case hasStep:
		if step, err = parse(stepText); err != nil || !(step > 0) {
			return Vary{}, fmt.Errorf("--vary %s: the step must be a positive number", s)
		}
	case IntegerKey(key) && to-from <= 20:
		step = 1
	default:
		step = (to - from) / defaultPoints
	}
	v := Vary{Key: key}
	if step == 0 {
		v.Values = []float64{from}
		return v, nil
	}
	n := int(math.Floor((to-from)/step+1e-9)) + 1
	if n > maxPoints {
		return Vary{}, fmt.Errorf("--vary %s: %d values, more than %d", s, n, maxPoints)
	}
	for i := 0; i < n; i++ {
		x := from + float64(i)*step
		if IntegerKey(key) {
			x = math.Round(x)
			if len(v.Values) > 0 && v.Values[len(v.Values)-1] == x {
				continue
			}
		}
		v.Values = append(v.Values, x)
	}
	return v, nil
}

// IntegerKey reports whether a key takes whole numbers.
func IntegerKey(key string) bool {
	for _, s := range []string{".cores", ".replicas", ".threads", ".capacity", ".users", ".queue", ".servers"} {
		if strings.HasSuffix(key, s) {
			return true
		}
	}
	return false
}

// FormatValue prints a swept value as --set takes it: whole numbers in
// plain digits (1000000, not 1e+06, which a whole-number key refuses).
func FormatValue(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// formatPoint writes a grid point as the --set assignments that make it.
func formatPoint(point map[string]float64, order []string) string {
	parts := make([]string, len(order))
	for i, k := range order {
		parts[i] = k + "=" + FormatValue(point[k])
	}
	return strings.Join(parts, " ")
}

// Point is one solved point of a sweep.
type Point struct {
	Set    map[string]float64 `json:"set"`
	Result *solve.Result      `json:"result"`
}

// Grid returns every combination of the values of the varied keys, the
// first key varying slowest.
func Grid(vs []Vary) []map[string]float64 {
	out := []map[string]float64{{}}
	for _, v := range vs {
		var next []map[string]float64
		for _, p := range out {
			for _, x := range v.Values {
				q := make(map[string]float64, len(p)+1)
				for k, y := range p {
					q[k] = y
				}
				q[v.Key] = x
				next = append(next, q)
			}
		}
		out = next
	}
	return out
}

// Apply returns a copy of base with the point's values set, validated.
func Apply(base *model.Model, point map[string]float64, order []string) (*model.Model, error) {
	m, err := base.Clone()
	if err != nil {
		return nil, err
	}
	for _, k := range order {
		if err := SetKey(m, k, FormatValue(point[k])); err != nil {
			return nil, err
		}
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return m, nil
}

// SolveFunc solves one model.
type SolveFunc func(ctx context.Context, m *model.Model) (*solve.Result, error)

// Sweep solves the model at every point of the grid of vs, workers points at
// a time, and returns the points in grid order.
func Sweep(ctx context.Context, base *model.Model, vs []Vary, workers int, solveFn SolveFunc) ([]Point, error) {
	order := make([]string, len(vs))
	for i, v := range vs {
		order[i] = v.Key
	}
	grid := Grid(vs)
	// Check the keys once, before any work.
	if _, err := Apply(base, grid[0], order); err != nil {
		return nil, err
	}
	points := make([]Point, len(grid))
	errs := make([]error, len(grid))
	if workers < 1 {
		workers = 1
	}
	sem := make(chan struct{}, workers)
	var wg sync.WaitGroup
	for i := range grid {
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			m, err := Apply(base, grid[i], order)
			if err == nil {
				points[i].Result, err = solveFn(ctx, m)
			}
			points[i].Set = grid[i]
			errs[i] = err
		}(i)
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("at %s: %w", formatPoint(grid[i], order), err)
		}
	}
	return points, nil
}
