package estimate

import "math"

// Result is the estimate for one operation: its CPU demand, and the part of
// its measured own time that is not CPU.
type Result struct {
	// CPU is the estimated CPU demand of one execution, in seconds.
	CPU float64 `json:"cpu"`
	// StdErr is the standard error of CPU (NaN when the estimator gives
	// none; encoded as 0).
	StdErr float64 `json:"-"`
	// OwnTime is the measured mean own time (duration minus synchronous
	// calls), in seconds.
	OwnTime float64 `json:"own_time"`
	// OffCPU is the delay the model keeps besides the CPU demand:
	// max(0, OwnTime − CPU).
	OffCPU float64 `json:"off_cpu"`
	// Count is the number of executions the estimate rests on.
	Count float64 `json:"count"`
	// Share is the part of the host's measured busy time the operation
	// explains.
	Share float64 `json:"share"`
	// Method names the estimator that gave CPU.
	Method string `json:"method"`
	// Identified is false when the data could not determine the demand
	// and CPU rests on an estimator's assumption.
	Identified bool `json:"identified"`
}

// Split divides a measured own time into the CPU demand and an off-CPU
// delay: the model keeps cpu = demand and off = max(0, own − demand), so
// that at the observed load it reproduces both the utilization (through the
// CPU demand) and the own time (CPU plus delay, the queueing for the CPU at
// the observed load aside).
func Split(demand, own float64) (cpu, off float64) {
	if !(demand > 0) {
		demand = 0
	}
	return demand, math.Max(0, own-demand)
}

// Results turns the picked fit of a choice into one Result per operation,
// indexed like p.Ops.
func Results(p *Problem, c *Choice) []Result {
	k := len(p.Ops)
	_, busy, count, own := totals(selected(p, nil), k)
	out := make([]Result, k)
	identified := c.Fit.Identified && (c.Picked == "regression" || c.Picked == "kalman" || c.Picked == "sdl")
	for i := range out {
		r := Result{Count: count[i], Method: c.Picked, Identified: identified, StdErr: math.NaN()}
		if count[i] > 0 {
			r.OwnTime = own[i] / count[i]
		}
		r.CPU, r.OffCPU = Split(c.Fit.Demands[i], r.OwnTime)
		if i < len(c.Fit.StdErr) {
			r.StdErr = c.Fit.StdErr[i]
		}
		if busy > 0 {
			r.Share = r.CPU * count[i] / busy
		}
		out[i] = r
	}
	return out
}
