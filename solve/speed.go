package solve

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/perfcast/perfcast/model"
)

// SolveFunc solves a model without speed curves.
type SolveFunc func(ctx context.Context, m *model.Model) (*Result, error)

// Speed-curve fixed point: the largest relative change of a factor that
// ends the iteration, and the most iterations.
const (
	speedTolerance  = 0.002
	speedIterations = 30
)

// ResolveSpeeds returns a copy of m in which every host with a speed curve
// runs at its speed times the curve's factor at the CPU utilization the
// model puts on it, the curve dropped, and the factors applied by host. A
// model without curves is returned as it is.
//
// The factor and the utilization depend on each other (a faster CPU is
// less busy). Load from open workloads is known before solving: a host
// only open workloads use gets the factor f that solves f = curve(U₀/f),
// U₀ its utilization at factor 1, by bisection. Closed workloads make the
// utilization depend on the solution: solve then solves candidates, and
// the factors are updated (damped) until they change by less than 0.2 %.
func ResolveSpeeds(ctx context.Context, m *model.Model, solve SolveFunc) (*model.Model, map[string]float64, error) {
	var curved []*model.Host
	for _, h := range m.Hosts {
		if len(h.CPU.SpeedCurve) > 0 {
			curved = append(curved, h)
		}
	}
	if len(curved) == 0 {
		return m, nil, nil
	}
	base, err := m.Clone()
	if err != nil {
		return nil, nil, fmt.Errorf("speed curves: %w", err)
	}
	for _, h := range base.Hosts {
		h.CPU.SpeedCurve = nil
	}
	open := Bounds(base).Utilization
	closedLoad := map[string]bool{}
	for _, w := range base.Workloads {
		if w.Closed == nil || w.Closed.Users == 0 {
			continue
		}
		for r, d := range base.Demands(w).Service {
			if d > 0 {
				closedLoad[r] = true
			}
		}
	}
	factors := map[string]float64{}
	iterate := false
	for _, h := range curved {
		factors[h.Name] = openFixedPoint(h.CPU.SpeedCurve, open[model.CPUResource(h.Name)])
		if closedLoad[model.CPUResource(h.Name)] {
			iterate = true
		}
	}
	// apply sets the factors on to (a clone of base, or base itself last).
	apply := func(to *model.Model) *model.Model {
		for _, h := range curved {
			to.Host(h.Name).CPU.Speed = h.CPU.Speed * factors[h.Name]
		}
		return to
	}
	if iterate && solve != nil {
		for range speedIterations {
			cand, err := base.Clone()
			if err != nil {
				return nil, nil, fmt.Errorf("speed curves: %w", err)
			}
			r, err := solve(ctx, apply(cand))
			if err != nil {
				return nil, nil, fmt.Errorf("speed curves: %w", err)
			}
			change := 0.0
			for _, h := range curved {
				f := factors[h.Name]
				u := 0.0
				if rr := r.Resources[model.CPUResource(h.Name)]; rr != nil {
					u = rr.Utilization
				}
				target := model.SpeedAt(h.CPU.SpeedCurve, u)
				change = max(change, math.Abs(target-f)/f)
				factors[h.Name] = (f + target) / 2
			}
			if change < speedTolerance {
				break
			}
		}
	}
	return apply(base), factors, nil
}

// SolveWithSpeeds solves m by final after ResolveSpeeds, with candidate
// solving the candidates of the closed-workload iteration, and records the
// factors in the result: how a solver applies speed curves.
func SolveWithSpeeds(ctx context.Context, m *model.Model, candidate, final SolveFunc) (*Result, error) {
	resolved, factors, err := ResolveSpeeds(ctx, m, candidate)
	if err != nil {
		return nil, err
	}
	res, err := final(ctx, resolved)
	if res != nil {
		res.SpeedFactors = factors
	}
	return res, err
}

// openFixedPoint solves f = SpeedAt(curve, u0/f) by bisection between the
// curve's smallest and largest factors, where a solution lies since the
// right side stays between them.
func openFixedPoint(curve []model.SpeedPoint, u0 float64) float64 {
	fs := make([]float64, len(curve))
	for i, p := range curve {
		fs[i] = p.Factor
	}
	lo, hi := slices.Min(fs), slices.Max(fs)
	g := func(f float64) float64 { return f - model.SpeedAt(curve, u0/f) }
	if g(lo) >= 0 {
		return lo
	}
	for range 100 {
		mid := (lo + hi) / 2
		if mid == lo || mid == hi {
			break
		}
		if g(mid) < 0 {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}
