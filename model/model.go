// Package model holds perfcast's performance model: the types of the model file
// format (version 1), its YAML/JSON codec, validation, and the random values
// (durations, rates, distributions, counts) that models are written with.
//
// A model says what runs where (hosts, components), what each request does
// (operations made of steps), which passive resources requests hold (locks,
// pools), and who sends requests (workloads). The extractor writes models, the
// solvers read them, and people edit them; this package is the only interface
// between those stages and depends on nothing else in perfcast.
//
// Named entities are kept in slices in the order of the file, so that output
// and iteration are deterministic; Model.Host, Model.Component and friends look
// them up by name.
package model

import (
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
)

// Version is the model format version this package reads and writes.
const Version = 1

// Model is a whole performance model.
type Model struct {
	// Version is the value of the `perfcast:` key; always Version once loaded.
	Version int
	// Name is an optional human name, used in results.
	Name string
	// Description is an optional free text.
	Description string
	Hosts       []*Host
	Components  []*Component
	Passive     []*Passive
	Workloads   []*Workload

	// File is the file the model was loaded from, for error messages; empty
	// for models built in memory.
	File string
}

// Pos is a place in a model file: a 1-based line and column (0 when the model
// was not loaded from a file) and the model path, such as
// `components.catalog.operations.GetItem.steps[1]`.
type Pos struct {
	Line, Col int
	Path      string
}

// Balancer says how a call picks one of a host's replicas.
type Balancer string

// Balancers.
const (
	RoundRobin Balancer = "round-robin"
	Random     Balancer = "random"
	LeastBusy  Balancer = "least-busy"
	// LeastOfTwo draws two replicas at random and takes the one with
	// fewer operations in progress (the power of two choices).
	LeastOfTwo Balancer = "least-of-two"
)

// Scheduling is a queueing discipline.
type Scheduling string

// Scheduling disciplines. PS and RR apply to CPUs, FCFS to CPUs and disks,
// RandomOrder to disks.
const (
	PS          Scheduling = "ps"
	FCFS        Scheduling = "fcfs"
	RR          Scheduling = "rr"
	RandomOrder Scheduling = "random"
)

// Host is a machine type: its CPU and disks, and how many identical replicas
// of it run every component placed on it.
type Host struct {
	Name string
	// Replicas is the number of identical machines (1 to MaxReplicas).
	Replicas int
	// Balancer picks a replica for each call.
	Balancer Balancer
	CPU      CPU
	Disks    []*Disk
	Pos      Pos
}

// CPU describes a host's processors.
type CPU struct {
	// Cores per replica (≥ 1).
	Cores int
	// Speed divides every CPU demand on this host (> 0; 1 is the reference).
	Speed float64
	// SpeedCurve, when not empty, multiplies Speed by a factor that
	// depends on the host's CPU utilization: CPU work costing less CPU time
	// on a busier machine (caches kept warm, a virtual CPU not descheduled
	// while idle) or more (shared turbo budgets). The points are in
	// increasing utilization; the factor is linear between them and flat
	// beyond. Solvers apply the factor at the utilization of their solution
	// (a fixed point), see SpeedAt.
	SpeedCurve []SpeedPoint
	// SpeedVariation is the coefficient of variation of the CPU time the
	// same work takes from one period to another, beyond what the load
	// explains: a virtual machine's speed wanders with its neighbours'
	// work. 0 (the default) is a steady speed. Without a SpeedWindow,
	// solvers average their results over the speeds it spans, each held
	// long enough for the system to settle (see solve.SolveVaried).
	SpeedVariation float64
	// SpeedWindow, when positive, is how long one speed holds, in seconds:
	// the simulator draws a new speed for each replica of the host every
	// window (lognormal CPU time of mean 1 and coefficient of variation
	// SpeedVariation), so that backlogs built while the host is slow
	// drain when it is fast. Solvers that cannot follow a speed over time
	// take each speed to hold until the system settles, as with 0.
	SpeedWindow float64
	// Scheduling is PS, FCFS or RR.
	Scheduling Scheduling
	// Quantum is the RR time slice in seconds.
	Quantum float64
	// Limit, when positive, caps the CPU time each replica may use, in
	// cores: Linux's CFS bandwidth control, as a container's CPU limit
	// sets it. Work runs on up to Cores at full speed until Limit × Period
	// seconds of CPU are spent within the period, then waits for the next
	// period. 0 (the default) is no limit; a limit of Cores or more never
	// binds.
	Limit float64
	// Period is the bandwidth period in seconds (Linux's cpu.cfs_period_us,
	// DefaultPeriod unless set); meaningful only with a Limit.
	Period float64
}

// Bounds of CPU.Limit and CPU.Period: a thousandth of a core (Kubernetes'
// smallest unit, 1m), and Linux's bounds on cpu.cfs_period_us.
const (
	MinLimit  = 1e-3
	MinPeriod = 1e-3
	MaxPeriod = 1.0
)

// ParseCores reads a number of cores, as Kubernetes writes CPU quantities:
// a decimal number ("1.5") or millicores ("500m"). Surrounding white space
// is ignored; negative, infinite and unreadable values are errors.
func ParseCores(s string) (float64, error) {
	t := strings.TrimSpace(s)
	scale := 1.0
	if m, ok := strings.CutSuffix(t, "m"); ok {
		t, scale = m, 1e-3
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || !(v >= 0) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("want a number of cores (1.5) or millicores (500m), not %q", s)
	}
	return v * scale, nil
}

// DefaultPeriod is the CFS bandwidth period Linux, Docker and Kubernetes
// use unless told otherwise: 100 ms.
const DefaultPeriod = 0.1

// Limited reports whether the CPU's limit can bind: positive and below
// its cores.
func (c CPU) Limited() bool { return c.Limit > 0 && c.Limit < float64(max(c.Cores, 1)) }

// LimitPeriod is the CPU's bandwidth period: Period, or DefaultPeriod.
func (c CPU) LimitPeriod() float64 {
	if c.Period > 0 {
		return c.Period
	}
	return DefaultPeriod
}

// Capacity is the CPU time a replica can give per second, in cores: its
// limit where that binds, else its cores.
func (c CPU) Capacity() float64 {
	if c.Limited() {
		return c.Limit
	}
	return float64(max(c.Cores, 1))
}

// MaxReplicas is the most replicas a host may have: the solvers keep
// each replica's queues apart, so time and memory grow with their number
// (ten thousand replicas: about two seconds).
const MaxReplicas = 10_000

// MaxSpeedVariation is the largest CPU.SpeedVariation a model may set: at
// a coefficient of variation of 1 the slowest fifth of the time already
// takes 2.5 times the mean CPU time, the fastest a quarter of it.
const MaxSpeedVariation = 1.0

// VariesOverTime reports whether the CPU's speed changes over time, one
// speed every SpeedWindow, rather than holding each of its variation's
// speeds until the system settles.
func (c CPU) VariesOverTime() bool { return c.SpeedVariation > 0 && c.SpeedWindow > 0 }

// MinSpeedWindow is the shortest CPU.SpeedWindow a model may set, in
// seconds: shorter windows would cost the simulator more events for the
// speed changes than for the requests, and a speed that changes faster
// than a CPU burst lasts acts as its mean.
const MinSpeedWindow = 1e-3

// SpeedPoint is one point of a host's speed curve.
type SpeedPoint struct {
	// Utilization is the host's CPU utilization, a fraction of its cores
	// in [0, 1].
	Utilization float64 `json:"utilization"`
	// Factor multiplies the host's speed at that utilization (> 0).
	Factor float64 `json:"factor"`
}

// SpeedAt is the factor of the curve at utilization u: linear between the
// points, the end points' factors beyond them, 1 for an empty curve.
func SpeedAt(curve []SpeedPoint, u float64) float64 {
	if len(curve) == 0 {
		return 1
	}
	if u <= curve[0].Utilization {
		return curve[0].Factor
	}
	for i := 1; i < len(curve); i++ {
		a, b := curve[i-1], curve[i]
		if u <= b.Utilization {
			if b.Utilization == a.Utilization {
				return b.Factor
			}
			return a.Factor + (b.Factor-a.Factor)*(u-a.Utilization)/(b.Utilization-a.Utilization)
		}
	}
	return curve[len(curve)-1].Factor
}

// Disk is a storage device of a host.
type Disk struct {
	Name string
	// Servers is the number of requests the disk serves at once (≥ 1).
	Servers int
	// Scheduling is FCFS or RandomOrder.
	Scheduling Scheduling
	Pos        Pos
}

// OnFull says what happens to a request that finds a component's queue full.
type OnFull string

// OnFull policies.
const (
	Block OnFull = "block"
	Drop  OnFull = "drop"
)

// Unlimited marks a component without a thread or queue limit.
const Unlimited = 0

// Component is a deployed service or a thread pool of a program.
type Component struct {
	Name string
	// Host is the name of the host the component runs on.
	Host string
	// Threads is the number of worker threads per replica; Unlimited (0)
	// when not set.
	Threads int
	// Queue is the number of requests allowed to wait per replica beyond the
	// busy threads; QueueUnlimited when not set.
	Queue int
	// OnFull says what a full queue does to a new request.
	OnFull     OnFull
	Operations []*Operation
	Pos        Pos
}

// QueueUnlimited is the Queue of a component with no queue limit.
const QueueUnlimited = -1

// Operation is something a component does when called: a list of steps.
type Operation struct {
	Name string
	// Component is the name of the owning component.
	Component string
	Steps     []Step
	Pos       Pos
}

// ID is the operation's reference, `component/operation`.
func (o *Operation) ID() string { return o.Component + "/" + o.Name }

// StepKind tells which of a Step's fields are in use.
type StepKind uint8

// Step kinds.
const (
	StepCPU StepKind = iota + 1
	StepDisk
	StepDelay
	StepCall
	StepSend
	StepLoop
	StepBranch
	StepParallel
	StepHold
	StepAcquire
	StepRelease
	StepSwitch
)

var stepKeys = [...]string{
	StepCPU: "cpu", StepDisk: "disk", StepDelay: "delay", StepCall: "call", StepSend: "send",
	StepLoop: "loop", StepBranch: "branch", StepParallel: "parallel", StepHold: "hold",
	StepAcquire: "acquire", StepRelease: "release", StepSwitch: "switch",
}

// String returns the step's key in the model file.
func (k StepKind) String() string {
	if int(k) < len(stepKeys) && stepKeys[k] != "" {
		return stepKeys[k]
	}
	return "invalid"
}

// Step is one item of a step list. Kind tells which fields apply:
//
//	cpu, delay        Demand
//	disk              Demand, Disk (empty: the host's only disk)
//	call, send        Target (`component/operation`)
//	loop              Times, Steps
//	branch            Branches
//	parallel          Parallel
//	hold              Resource, Units, Steps
//	acquire, release  Resource, Units
//	switch            On, Cases, Default, HasDefault
type Step struct {
	Kind     StepKind
	Demand   Dist
	Disk     string
	Target   string
	Times    Count
	Steps    []Step
	Branches []Branch
	Parallel [][]Step
	Resource string
	Units    int
	On       string
	Cases    []Case
	Default  []Step
	// HasDefault records whether a default list was written, so that an
	// empty default round-trips.
	HasDefault bool
	Pos        Pos
}

// Branch is one alternative of a branch step.
type Branch struct {
	P     float64
	Steps []Step
	Pos   Pos
}

// Case is one alternative of a switch step.
type Case struct {
	Value string
	Steps []Step
	Pos   Pos
}

// Passive is a passive resource: a lock, a connection pool, a semaphore.
type Passive struct {
	Name string
	// Capacity is the number of units (≥ 1).
	Capacity int
	// Host, when set, makes one resource per replica of that host;
	// otherwise there is one for the whole system.
	Host string
	// BeforeSpan says that an operation whose steps begin with a hold of
	// this resource waits for it before its span starts: the resource
	// stands for something the runtime must give a request before any of
	// its handler's code runs, such as a CPU slot of a Go process
	// (GOMAXPROCS). It changes no queueing; solvers report those
	// operations' times without that first wait as well (see
	// solve.OperationResult.Span), which is what their spans measure.
	BeforeSpan bool
	// Partitioned binds each execution of an operation to one unit of
	// the resource, drawn at random when the execution first asks for
	// it, for the whole execution: it waits for that unit alone, whose
	// queue is its own. Capacity n is then n queues of one unit each (on
	// every replica, with Host), as n processes of a one-thread runtime
	// are, each its own event loop behind a balancer that hands it
	// connections in turn (a Node.js cluster's workers); without it, n
	// units serve one queue. Holds and acquires of it take one unit.
	Partitioned bool
	Pos         Pos
}

// Workload is a class of requests.
type Workload struct {
	Name string
	// Exactly one of Open and Closed is set.
	Open   *Open
	Closed *Closed
	Params []*Param
	Steps  []Step
	Pos    Pos
}

// Open is an open workload: requests arrive at a rate, independent of how
// fast they are served.
type Open struct {
	// Rate in requests per second.
	Rate float64
	// CV is the interarrival times' coefficient of variation; 1 (Poisson)
	// when not set. Other values give gamma (cv < 1 or > 1) arrivals.
	CV float64
}

// Closed is a closed workload: a fixed population of users that each think,
// then send a request and wait for it, forever.
type Closed struct {
	Users int
	Think Dist
}

// MaxUsers is the largest population a closed workload may have. The
// exact analytical solution takes time and memory in proportion to the
// population (a million users: about ten seconds and a hundred MB per
// workload), the simulator keeps every user; a population beyond it is
// better modeled as an open workload at its arrival rate.
const MaxUsers = 1_000_000

// Param is a request parameter, drawn once per request from a categorical
// distribution and visible to every operation the request reaches.
type Param struct {
	Name   string
	Values []string
	Probs  []float64
	Pos    Pos
}

// DisplayName is the model's name, or, for a model without one, its
// file's name without the extension ("" when it has neither, or was read
// from standard input, "-").
func (m *Model) DisplayName() string {
	if m.Name != "" || m.File == "" || m.File == "-" {
		return m.Name
	}
	base := filepath.Base(m.File)
	return strings.TrimSuffix(base, filepath.Ext(base))
}

// Host returns the named host, or nil.
func (m *Model) Host(name string) *Host {
	for _, h := range m.Hosts {
		if h.Name == name {
			return h
		}
	}
	return nil
}

// Component returns the named component, or nil.
func (m *Model) Component(name string) *Component {
	for _, c := range m.Components {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// PassiveResource returns the named passive resource, or nil.
func (m *Model) PassiveResource(name string) *Passive {
	for _, p := range m.Passive {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// Workload returns the named workload, or nil.
func (m *Model) Workload(name string) *Workload {
	for _, w := range m.Workloads {
		if w.Name == name {
			return w
		}
	}
	return nil
}

// Operation returns the operation a reference `component/operation` names,
// or nil. The component is the text before the first slash.
func (m *Model) Operation(ref string) *Operation {
	comp, op, ok := SplitRef(ref)
	if !ok {
		return nil
	}
	c := m.Component(comp)
	if c == nil {
		return nil
	}
	return c.Operation(op)
}

// Operation returns the named operation of the component, or nil.
func (c *Component) Operation(name string) *Operation {
	for _, o := range c.Operations {
		if o.Name == name {
			return o
		}
	}
	return nil
}

// Disk returns the named disk of the host, or nil. An empty name picks the
// host's only disk.
func (h *Host) Disk(name string) *Disk {
	if name == "" {
		if len(h.Disks) == 1 {
			return h.Disks[0]
		}
		return nil
	}
	for _, d := range h.Disks {
		if d.Name == name {
			return d
		}
	}
	return nil
}

// Param returns the named parameter of the workload, or nil.
func (w *Workload) Param(name string) *Param {
	for _, p := range w.Params {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// SplitRef splits `component/operation` at the first slash.
func SplitRef(ref string) (component, operation string, ok bool) {
	for i := 0; i < len(ref); i++ {
		if ref[i] == '/' {
			return ref[:i], ref[i+1:], i > 0 && i < len(ref)-1
		}
	}
	return "", "", false
}

// CPUResource is the result name of a host's CPU, `HOST.cpu`.
func CPUResource(host string) string { return host + ".cpu" }

// DiskResource is the result name of a disk, `HOST.disk.NAME`.
func DiskResource(host, disk string) string { return host + ".disk." + disk }

// ThreadsResource is the result name of a component's thread pool,
// `COMPONENT.threads`.
func ThreadsResource(component string) string { return component + ".threads" }
