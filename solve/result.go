// Package solve holds what every perfcast solver shares: the result of solving
// a model (the JSON of the command-line contract), solver options, and the
// bounds that tell up front whether an open workload can be served at all.
package solve

import (
	"context"

	"github.com/perfcast/perfcast/model"
)

// ResultVersion is the version of the result JSON.
const ResultVersion = 1

// Result is the answer of a solver for one model. Its JSON form is the result
// contract: times in seconds, rates per second, utilizations as fractions of a
// resource's capacity. Maps marshal with sorted keys, so output is stable.
type Result struct {
	Perfcast   int    `json:"perfcast"`
	Model      string `json:"model"`
	Solver     string `json:"solver"`
	Stable     bool   `json:"stable"`
	Bottleneck string `json:"bottleneck,omitempty"`
	// Saturation is set when an open workload exceeds what a resource can
	// serve.
	Saturation *Saturation                 `json:"saturation,omitempty"`
	Warnings   []string                    `json:"warnings"`
	Workloads  map[string]*WorkloadResult  `json:"workloads"`
	Operations map[string]*OperationResult `json:"operations"`
	Resources  map[string]*ResourceResult  `json:"resources"`
	// SpeedFactors are, for hosts with a speed curve, the factors their
	// speed was multiplied by at the utilization of this result.
	SpeedFactors map[string]float64 `json:"speed_factors,omitempty"`
	Sim          *SimInfo           `json:"sim,omitempty"`
	MVA          *MVAInfo           `json:"mva,omitempty"`
	Extra        map[string]any     `json:"extra,omitempty"`
}

// Saturation names the resource an open workload saturates and the load at
// which it does: the open rates at which the resource's utilization reaches
// one, all open rates scaled by the same factor.
type Saturation struct {
	Resource string             `json:"resource"`
	At       map[string]float64 `json:"at"`
}

// Times summarizes a response or waiting time. Percentiles and the confidence
// interval are nil when the solver cannot compute them.
type Times struct {
	Mean float64     `json:"mean"`
	P50  *float64    `json:"p50,omitempty"`
	P90  *float64    `json:"p90,omitempty"`
	P95  *float64    `json:"p95,omitempty"`
	P99  *float64    `json:"p99,omitempty"`
	CI95 *[2]float64 `json:"ci95,omitempty"`
}

// WorkloadResult is what one workload (request class) sees.
type WorkloadResult struct {
	Throughput float64 `json:"throughput"`
	// ThroughputCI95 is the confidence interval of the throughput, when
	// simulated.
	ThroughputCI95 *[2]float64 `json:"throughput_ci95,omitempty"`
	ResponseTime   Times       `json:"response_time"`
	// CompletionTime lasts until every asynchronous descendant has ended.
	CompletionTime *Times `json:"completion_time,omitempty"`
	// Dropped is the rate of requests lost to full queues.
	Dropped float64 `json:"dropped,omitempty"`
}

// OperationResult is what one operation `component/operation` sees.
type OperationResult struct {
	Throughput   float64 `json:"throughput"`
	ResponseTime Times   `json:"response_time"`
	// Span is the part of the response time that the operation's span
	// covers, where that differs: without the wait for a thread of its
	// component and, when its steps begin with a hold of a resource taken
	// before spans start (model.Passive.BeforeSpan), without the wait for
	// that hold. A server span starts when the request is given a thread
	// and, in a Go process, a CPU slot; the response time counts from the
	// request's arrival at the component.
	Span *Times `json:"span,omitempty"`
}

// ResourceResult is the load on one resource: a CPU (`HOST.cpu`), a disk
// (`HOST.disk.NAME`), a passive resource, or a thread pool
// (`COMPONENT.threads`).
type ResourceResult struct {
	// Utilization is busy servers / servers, averaged over replicas.
	Utilization float64 `json:"utilization"`
	// UtilizationCI95 is its confidence interval, when simulated.
	UtilizationCI95 *[2]float64 `json:"utilization_ci95,omitempty"`
	// Busy is the mean number of busy servers (cores, units, threads),
	// summed over replicas.
	Busy float64 `json:"busy"`
	// PerReplica is the utilization of each replica, for replicated hosts.
	PerReplica []float64 `json:"per_replica,omitempty"`
	// Wait is the time a request waits for the resource before service.
	Wait *Times `json:"wait,omitempty"`
	// QueueLength is the mean number waiting, when known.
	QueueLength *float64 `json:"queue_length,omitempty"`
	// LimitUtilization is, for a CPU with a limit (model.CPU.Limit), the
	// CPU time used over the time the limit allows: what Kubernetes shows
	// as usage of the limit. It, not Utilization, reaches 1 at saturation.
	LimitUtilization *float64 `json:"limit_utilization,omitempty"`
	// Throttled is, for a CPU with a limit, the fraction of its periods
	// in which the quota ran out and work waited for the next period, of
	// those in which it ran (cgroup's nr_throttled over nr_periods), when
	// simulated or measured.
	Throttled *float64 `json:"throttled,omitempty"`
}

// Load is how close the resource is to saturation: its LimitUtilization
// where it has a limit, else its Utilization.
func (r *ResourceResult) Load() float64 {
	if r.LimitUtilization != nil {
		return *r.LimitUtilization
	}
	return r.Utilization
}

// SimInfo describes a simulation run.
type SimInfo struct {
	Seed         uint64  `json:"seed"`
	Replications int     `json:"replications"`
	Requests     int64   `json:"requests"`
	Events       int64   `json:"events"`
	SimTime      float64 `json:"sim_time"`
	WallSeconds  float64 `json:"wall_seconds"`
	WarmupCut    float64 `json:"warmup_cut,omitempty"`
}

// MVAInfo describes an analytical solution.
type MVAInfo struct {
	Method     string  `json:"method"`
	Iterations int     `json:"iterations,omitempty"`
	Converged  bool    `json:"converged"`
	Residual   float64 `json:"residual,omitempty"`
}

// Options are the settings of a solver run. Simulation settings are ignored by
// analytical solvers.
type Options struct {
	// Seed of the random source (default 1).
	Seed uint64
	// Requests is the number of workload requests to simulate after warm-up,
	// in total over all replications; 0 means run until Precision is met.
	Requests int64
	// Precision is the relative 95 % confidence half-width every reported
	// mean must reach when Requests is 0 (default 0.02).
	Precision float64
	// Workers is the number of parallel replications (default: all cores).
	// Results do not depend on it.
	Workers int
	// Progress, when set, is told how far a long run has come (0 to 1).
	Progress func(done float64)
}

// Solver solves a model.
type Solver interface {
	// Name is the solver's name in results: "sim" or "mva".
	Name() string
	// Solve computes the result. It returns ctx.Err() when cancelled.
	Solve(ctx context.Context, m *model.Model, opts Options) (*Result, error)
}

// NewResult returns an empty result for a model, with the maps made.
func NewResult(m *model.Model, solver string) *Result {
	return &Result{
		Perfcast:   ResultVersion,
		Model:      m.DisplayName(),
		Solver:     solver,
		Stable:     true,
		Warnings:   []string{},
		Workloads:  map[string]*WorkloadResult{},
		Operations: map[string]*OperationResult{},
		Resources:  map[string]*ResourceResult{},
	}
}

// Float returns a pointer to v, for the optional fields of Times.
func Float(v float64) *float64 { return &v }
