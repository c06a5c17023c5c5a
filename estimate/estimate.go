// Package estimate estimates the CPU demand of operations on one host from
// windows of time in which the host's CPU busy time was measured (by
// utilization metrics) and the operations' completions and own times were
// counted (from traces).
//
// Every estimator predicts the busy time of a window the same way,
//
//	busy = Δ·B + Σ_op completions_op·D_op
//
// with D_op the CPU seconds one execution of op needs and B the background
// load in busy cores (work on the host that no traced operation explains).
// The estimators differ in how they find D and B:
//
//   - SDL, the Service Demand Law for a single class: D = busy / completions;
//   - Regression, non-negative least squares of busy on completions with an
//     intercept for the background (utilization-based regression);
//   - Apportion, the utilization split among operations in proportion to
//     their total own time (weighted response-time ratios);
//   - Kalman, a Kalman filter whose state is the demand vector and the
//     background, observing each window's utilization;
//   - ResponseTime, the mean own time at the lowest loads observed, which
//     approximates the demand when there is no waiting.
//
// Choose runs them all, scores each by cross-validation (the error of the
// busy time it predicts for windows it was not fitted on), checks whether
// the data can identify per-operation demands at all (too few windows,
// collinear throughputs, too little or too much load), and picks one.
// Split turns an estimated demand and a measured own time into the CPU and
// off-CPU parts of a model.
package estimate

import (
	"errors"
	"fmt"
	"math"
)

// Window is what one interval of time on one host measured.
type Window struct {
	// Start is the start of the window, in Unix nanoseconds; windows of a
	// Problem are in time order.
	Start int64
	// Length is the window's length in seconds.
	Length float64
	// Busy is the CPU time the host spent busy in the window, in
	// core-seconds (utilization × cores × Length).
	Busy float64
	// Count is, per operation of the Problem, the number of executions
	// that completed in the window.
	Count []float64
	// Own is, per operation, the sum of the own times (duration minus
	// synchronous calls) of those executions, in seconds.
	Own []float64
}

// Problem is the input of the estimators: the windows of one host.
type Problem struct {
	// Ops names the operations; Window.Count and Window.Own are indexed
	// like it.
	Ops     []string
	Windows []Window
	// Cores is the number of cores of the host: it turns busy time into
	// utilization for the checks of Diagnose. Zero means unknown.
	Cores float64
}

// Fit is what one estimator found.
type Fit struct {
	// Method names the estimator.
	Method string `json:"method"`
	// Demands is the CPU demand per execution of each operation, in
	// seconds, indexed like Problem.Ops.
	Demands []float64 `json:"demands"`
	// StdErr is the standard error of each demand, when the estimator
	// gives one (NaN otherwise, encoded as null).
	StdErr []float64 `json:"-"`
	// Background is the busy cores that no operation explains.
	Background float64 `json:"background"`
	// Identified tells whether the data determine the demands: false when
	// the estimator's demands rest on the data in a way they cannot
	// support (collinear throughputs for a regression).
	Identified bool `json:"identified"`
	// Note says what the estimator assumed or why it is not identified.
	Note string `json:"note,omitempty"`
}

// Predict returns the busy time the fit predicts for a window.
func (f *Fit) Predict(w *Window) float64 {
	busy := f.Background * w.Length
	for i, d := range f.Demands {
		busy += d * w.Count[i]
	}
	return busy
}

// Estimator estimates demands from the windows of a problem.
type Estimator interface {
	// Name is the estimator's short name, as reports print it.
	Name() string
	// Estimate fits the windows selected by use (all when use is nil).
	// It returns ErrNotApplicable when the estimator cannot be used on
	// this kind of problem at all.
	Estimate(p *Problem, use []int) (*Fit, error)
}

// ErrNotApplicable is returned by an estimator that does not apply to a
// problem (for instance the single-class Service Demand Law on several
// operations).
var ErrNotApplicable = errors.New("not applicable")

// selected returns the windows use picks, or all.
func selected(p *Problem, use []int) []*Window {
	if use == nil {
		out := make([]*Window, len(p.Windows))
		for i := range p.Windows {
			out[i] = &p.Windows[i]
		}
		return out
	}
	out := make([]*Window, len(use))
	for i, k := range use {
		out[i] = &p.Windows[k]
	}
	return out
}

// Validate checks that the problem is well formed.
func (p *Problem) Validate() error {
	if len(p.Ops) == 0 {
		return errors.New("no operations")
	}
	for i := range p.Windows {
		w := &p.Windows[i]
		if len(w.Count) != len(p.Ops) || len(w.Own) != len(p.Ops) {
			return fmt.Errorf("window %d: %d counts and %d own times for %d operations", i, len(w.Count), len(w.Own), len(p.Ops))
		}
		if !(w.Length > 0) || math.IsInf(w.Length, 0) {
			return fmt.Errorf("window %d: length %v", i, w.Length)
		}
		if !(w.Busy >= 0) || math.IsInf(w.Busy, 0) {
			return fmt.Errorf("window %d: busy time %v", i, w.Busy)
		}
		for j := range w.Count {
			if !(w.Count[j] >= 0) || !(w.Own[j] >= 0) || math.IsInf(w.Count[j], 0) || math.IsInf(w.Own[j], 0) {
				return fmt.Errorf("window %d, operation %s: count %v, own time %v", i, p.Ops[j], w.Count[j], w.Own[j])
			}
		}
	}
	return nil
}

// totals sums the windows: length, busy time, and per operation the
// completions and own time.
func totals(ws []*Window, ops int) (length, busy float64, count, own []float64) {
	count = make([]float64, ops)
	own = make([]float64, ops)
	for _, w := range ws {
		length += w.Length
		busy += w.Busy
		for i := 0; i < ops; i++ {
			count[i] += w.Count[i]
			own[i] += w.Own[i]
		}
	}
	return length, busy, count, own
}

func nanSlice(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = math.NaN()
	}
	return out
}
