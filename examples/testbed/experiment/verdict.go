package main

import (
	"fmt"
	"math"
	"strings"
)

// The target: held-out configurations below saturation predicted within
// these relative errors, the mean response time per class and the CPU
// utilization.
const (
	meanLimit = 0.15
	cpuLimit  = 0.05
)

// settlement is what a measurement's confidence interval says of a
// prediction held to a relative limit. A measured mean within the limit
// of the prediction, or beyond it, is one figure; the mean the
// measurement estimates may lie anywhere in the interval.
type settlement int

const (
	// unsettled: the interval holds means within the limit of the
	// prediction and means beyond it, or there is no interval.
	unsettled settlement = iota
	// settledWithin: every mean in the interval is within the limit.
	settledWithin
	// settledBeyond: no mean in the interval is within the limit.
	settledBeyond
)

// settle tells what the interval mean ± half says of pred against limit,
// a relative error: pred is within the limit of a true mean μ when
// |pred/μ − 1| ≤ limit. The interval of means makes an interval of
// errors (see settleErrors). Without an interval (half 0 or unknown)
// nothing is settled.
func settle(pred, mean, half, limit float64) settlement {
	for _, v := range []float64{pred, mean, half} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return unsettled
		}
	}
	if pred <= 0 || mean <= 0 || half <= 0 {
		return unsettled
	}
	hi := math.Inf(1) // the interval reaches a mean of 0
	if mean > half {
		hi = pred/(mean-half) - 1
	}
	return settleErrors(pred/(mean+half)-1, hi, limit)
}

// settleErrors tells what an interval [lo, hi] of relative errors settles
// against limit: within when it lies wholly inside [−limit, limit],
// beyond when wholly outside, and nothing without an interval (NaN).
func settleErrors(lo, hi, limit float64) settlement {
	switch {
	case math.IsNaN(lo) || math.IsNaN(hi) || math.IsNaN(limit) || limit <= 0:
		return unsettled
	case lo >= -limit && hi <= limit:
		return settledWithin
	case hi < -limit || lo > limit:
		return settledBeyond
	}
	return unsettled
}

// String names what was settled, as the reports print it.
func (s settlement) String() string {
	switch s {
	case settledWithin:
		return "within"
	case settledBeyond:
		return "beyond"
	}
	return "no"
}

// tally counts predictions by what the measurements settle, naming the
// ones outside the limit.
type tally struct {
	within, beyond, open int
	// beyondNames and openMisses name the settled misses and the misses
	// the measurement leaves open.
	beyondNames, openMisses []string
}

// add counts one prediction whose relative error is err, named name.
func (t *tally) add(name string, err float64, s settlement, limit float64) {
	miss := math.IsNaN(err) || math.Abs(err) > limit
	switch s {
	case settledWithin:
		t.within++
	case settledBeyond:
		t.beyond++
		t.beyondNames = append(t.beyondNames, fmt.Sprintf("%s (%s)", name, pct(err)))
	default:
		t.open++
		if miss {
			t.openMisses = append(t.openMisses, fmt.Sprintf("%s (%s)", name, pct(err)))
		}
	}
}

// text says what the tally found of n predictions against limit.
func (t *tally) text(n int, limit float64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d within %s for every value in the interval; %d beyond it for every one", t.within, n, absPct(limit), t.beyond)
	if len(t.beyondNames) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(t.beyondNames, ", "))
	}
	fmt.Fprintf(&b, "; %d not settled", t.open)
	if len(t.openMisses) > 0 {
		fmt.Fprintf(&b, ", of which beyond %s by the point estimate: %s", absPct(limit), strings.Join(t.openMisses, ", "))
	}
	return b.String()
}
