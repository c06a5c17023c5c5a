package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/perfcast/perfcast/examples/testbed/loadgen"
	"github.com/perfcast/perfcast/examples/testbed/shop"
	"github.com/perfcast/perfcast/extract"
	"github.com/perfcast/perfcast/ingest"
	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve"
	"github.com/perfcast/perfcast/solve/sim"
	"github.com/perfcast/perfcast/whatif"
)

// Passive resources the testbed declares: extraction does not infer pools
// and locks from traces at these loads, so the experiment declares them
// to it where the code has them.
const (
	poolResource = "gateway-pool" // the recommendation fan-out's workers
	lockResource = "stock-lock"   // the orders service's stock mutex
	poolTarget   = "catalog/GET /products/{id}"
	lockTarget   = "payments/POST /charge"
	// The catalog's database/sql pool (the testbed's -db-conns default),
	// declared to extraction around the catalog's operations (dbHolders).
	dbResource  = "catalog-db"
	dbComponent = "catalog"
	dbConns     = 4
	// The load generator, modelled where it shares the services' CPUs.
	generator = "load-generator"
)

// dbHolders are the catalog's operations, each of which takes one of its
// database connections for its queries (the work outside spans takes
// none). Declared to extraction, which places the wait for one before
// or inside their spans as the spans' overlap says, inside after the
// first burst of CPU (a goroutine takes a connection once it runs), and
// takes the waits it saw inside out of their time off the CPU; wrapped
// around the operations after extraction (until 2026-12-03), a
// connection was held from before the catalog's slot was taken to the
// end of the span, and a wait for one inside a span counted twice.
var dbHolders = []string{dbComponent + "/GET /products", poolTarget}

// extraction holds extractModel's choices: where the CPU time outside
// spans goes (the configuration's outside_spans), the host CPU's
// round-robin quantum (0: processor sharing), and whether the CPU's speed
// variation is redrawn every window (speed_window), and whether it reads
// the segments' steady phases alone (steadyTraces).
type extraction struct {
	outside     string
	slice       time.Duration
	speedWindow bool
	steadyOnly  bool
}

// extractModel extracts a model from the traces of a setup's segments in
// dirs and the services' processes' CPU time (once a second), with the
// host's cores and every service's GOMAXPROCS as its CPU slots. The
// segments' metrics go into one file in the first segment's parent. With
// x.slice > 0 the host's CPU is round-robin with that quantum (see
// hostConfig). With x.steadyOnly it reads the segments' steady phases
// alone (steadyTraces), else the whole segments, ramps included. Without
// metrics the traces alone are read: where their spans carry no CPU time,
// extraction splits their own times by how they grow with the load.
func extractModel(ctx context.Context, dirs []string, s setup, x extraction, metrics bool) (*extract.Result, error) {
	var (
		files []string
		loads []*loadgen.Result
	)
	tmp := ""
	if x.steadyOnly {
		// The steady phases alone, their traces in a scratch directory.
		var err error
		if tmp, err = os.MkdirTemp("", "perfcast-steady-"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
	}
	for i, dir := range dirs {
		if !x.steadyOnly {
			f, err := filepath.Glob(filepath.Join(dir, "*.otlp.jsonl"))
			if err != nil || len(f) == 0 {
				return nil, fmt.Errorf("no traces in %s", dir)
			}
			files = append(files, f...)
			continue
		}
		load, err := readLoad(filepath.Join(dir, "load.json"))
		if err != nil {
			return nil, err
		}
		out := filepath.Join(tmp, strconv.Itoa(i))
		if err := os.Mkdir(out, 0o755); err != nil {
			return nil, err
		}
		f, err := steadyTraces(ctx, dir, out, load)
		if err != nil {
			return nil, err
		}
		files, loads = append(files, f...), append(loads, load)
	}
	var cpu []string
	if metrics {
		f := filepath.Join(dirs[0], "services-cpu.csv")
		if len(dirs) > 1 {
			f = filepath.Join(filepath.Dir(dirs[0]), fmt.Sprintf("services-cpu-%d.csv", len(dirs)))
		}
		if err := serviceMetrics(f, loads, dirs...); err != nil {
			return nil, err
		}
		cpu = []string{f}
	}
	// The pool and the lock are declared to extraction, which then takes
	// their waits out of the callers' time off the CPU (the model makes
	// them again) and wraps the calls in them; the database connections
	// likewise around the catalog's operations, their waits inside the
	// spans out of those operations' time off the CPU.
	passive := map[string]extract.PassiveConfig{
		poolResource: {Capacity: s.Pool, Calls: []string{poolTarget}},
		dbResource:   {Capacity: dbConns, Operations: dbHolders},
	}
	if s.CoarseLock {
		passive[lockResource] = extract.PassiveConfig{Capacity: 1, Calls: []string{lockTarget}}
	}
	return extract.Run(ctx, files, "testbed", &extract.Config{
		Hosts:        map[string]extract.HostConfig{hostName: hostConfig(s, x.slice)},
		CPUSlots:     map[string]int{"*": s.GOMAXPROCS},
		Metrics:      cpu,
		OutsideSpans: x.outside,
		SpeedWindow:  x.speedWindow,
		Passive:      passive,
		Simulator:    sim.Solver{},
	})
}

// hostConfig declares the host of setup s to extraction: its cores, and
// with slice > 0 its CPU round-robin with quantum slice, as Linux runs
// threads: one that wakes while another runs on its CPU waits up to the
// rest of that one's slice, where processor sharing, the default, would
// serve both at once. Short bursts, such as the orders' and the
// gateway's, wait behind the catalog's long ones.
func hostConfig(s setup, slice time.Duration) extract.HostConfig {
	h := extract.HostConfig{Cores: s.ModelCores}
	if slice > 0 {
		// In milliseconds, written in fixed point to read plainly in the
		// model (model.ParseDuration would read an exponent as well).
		h.Scheduling, h.Quantum = string(model.RR), strconv.FormatFloat(float64(slice)/float64(time.Millisecond), 'f', -1, 64)+"ms"
	}
	return h
}

// setSlots gives every component of m the CPU slots of GOMAXPROCS k.
func setSlots(m *model.Model, k int) error {
	for _, c := range m.Components {
		if c.Name == generator {
			continue // not a service: its GOMAXPROCS stays 1, its CPU bursts short
		}
		name := extract.CPUSlotsResource(c.Name)
		if m.PassiveResource(name) == nil {
			return fmt.Errorf("the extracted model has no passive resource %s", name)
		}
		if err := whatif.SetKey(m, "passive."+name+".capacity", fmt.Sprint(k)); err != nil {
			return err
		}
	}
	return nil
}

// declare makes m, extracted with the reference's pool and lock, a model of
// configuration s: the pool's size, the coarse lock dropped where s has
// none, and the load generator where it shares the services' CPUs. The
// catalog's database connections, declared to extraction, stay as they
// are.
func declare(m *model.Model, s setup) error {
	pool := m.PassiveResource(poolResource)
	if pool == nil {
		return fmt.Errorf("the extracted model has no passive resource %s", poolResource)
	}
	pool.Capacity = s.Pool
	if lock := m.PassiveResource(lockResource); lock == nil && s.CoarseLock {
		return fmt.Errorf("the extracted model has no passive resource %s", lockResource)
	} else if lock != nil && !s.CoarseLock {
		unhold(m, lockResource)
	}
	if m.PassiveResource(dbResource) == nil {
		return fmt.Errorf("the extracted model has no passive resource %s", dbResource)
	}
	if s.GeneratorCPU > 0 {
		// The generator's CPU time per request, on the services' host:
		// load the model has to carry when they share CPUs.
		m.Components = append(m.Components, &model.Component{Name: generator, Host: hostName, Queue: model.QueueUnlimited, OnFull: model.Block,
			Operations: []*model.Operation{{Name: "send", Component: generator,
				Steps: []model.Step{{Kind: model.StepCPU, Demand: model.Exp(s.GeneratorCPU)}}}}})
		m.Workloads = append(m.Workloads, &model.Workload{Name: generator, Open: &model.Open{Rate: s.Rate, CV: 1},
			Steps: []model.Step{{Kind: model.StepCall, Target: generator + "/send"}}})
	}
	return nil
}

// unhold removes the passive resource name from m: its holds give way to
// the steps they held.
func unhold(m *model.Model, name string) {
	rewrite := func(steps []model.Step) []model.Step {
		return model.RewriteLists(steps, func(list []model.Step) []model.Step {
			var out []model.Step
			for _, s := range list {
				if s.Kind == model.StepHold && s.Resource == name {
					out = append(out, s.Steps...)
					continue
				}
				out = append(out, s)
			}
			return out
		})
	}
	for _, c := range m.Components {
		for _, op := range c.Operations {
			op.Steps = rewrite(op.Steps)
		}
	}
	for _, w := range m.Workloads {
		w.Steps = rewrite(w.Steps)
	}
	m.Passive = slices.DeleteFunc(m.Passive, func(p *model.Passive) bool { return p.Name == name })
}

// servicesCPU is the predicted CPU utilization of the services alone: the
// host's, less the load generator's share when the model carries it.
func servicesCPU(res *solve.Result, s setup) float64 {
	r := res.Resources[hostName+".cpu"]
	if r == nil {
		return math.NaN()
	}
	return r.Utilization - s.Rate*s.GeneratorCPU/float64(s.ModelCores)
}

// workloadOf maps each class to the model's workload entering by its
// gateway operation.
func workloadOf(m *model.Model) map[string]string {
	out := map[string]string{}
	for class, entry := range shop.EntryOperations {
		for _, w := range m.Workloads {
			// The call, after the client's delay when there is one.
			if k := len(w.Steps); k > 0 && k <= 2 && w.Steps[k-1].Kind == model.StepCall && w.Steps[k-1].Target == entry {
				out[class] = w.Name
			}
		}
	}
	return out
}

// predict solves base changed to configuration s (see configure) by
// simulation.
func predict(ctx context.Context, base *model.Model, s setup, mix map[string]float64, requests int64, speed float64) (*solve.Result, error) {
	m, err := configure(base, s, mix, speed)
	if err != nil {
		return nil, err
	}
	return simulate(ctx, m, requests)
}

// simulate solves a configured model as every prediction of the
// experiment does: requests workload requests after the warm-up, over all
// replications.
func simulate(ctx context.Context, m *model.Model, requests int64) (*solve.Result, error) {
	return sim.New().Solve(ctx, m, solve.Options{Seed: 1, Requests: requests})
}

// configure returns base changed to configuration s, with the open rates
// of the mix at s.Rate and the host's CPU speed (1: the reference's, with
// the extracted speed curve; any other value replaces the curve).
func configure(base *model.Model, s setup, mix map[string]float64, speed float64) (*model.Model, error) {
	m, err := base.Clone()
	if err != nil {
		return nil, err
	}
	if err := declare(m, s); err != nil {
		return nil, err
	}
	total := 0.0
	for _, w := range mix {
		total += w
	}
	names := workloadOf(m)
	for class, w := range mix {
		name, ok := names[class]
		if !ok {
			return nil, fmt.Errorf("the model has no workload for class %s", class)
		}
		if err := whatif.SetKey(m, "workload."+name+".open.rate", fmt.Sprintf("%g", s.Rate*w/total)); err != nil {
			return nil, err
		}
	}
	if err := whatif.SetKey(m, "hosts."+hostName+".cpu.cores", fmt.Sprint(s.ModelCores)); err != nil {
		return nil, err
	}
	if err := setSlots(m, s.GOMAXPROCS); err != nil {
		return nil, err
	}
	if speed != 1 {
		if err := whatif.SetKey(m, "hosts."+hostName+".cpu.speed", fmt.Sprintf("%g", speed)); err != nil {
			return nil, err
		}
		// The run's measured speed already holds what the speed curve
		// would add for its load.
		if h := m.Host(hostName); h != nil {
			h.CPU.SpeedCurve = nil
		}
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("%s: model: %w", s.Name, err)
	}
	return m, nil
}

// saveModel writes m, with the reference's pool and lock declared, to path.
func saveModel(path string, m *model.Model, s setup) error {
	c, err := m.Clone()
	if err != nil {
		return err
	}
	if err := declare(c, s); err != nil {
		return err
	}
	return writeModel(path, c)
}

// writeModel writes m to path as YAML.
func writeModel(path string, m *model.Model) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := m.Encode(f, model.YAML); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// clientGaps returns, per request class, how much longer the load
// generator measured a request over the steady phases of the segments in
// dirs (parts their results, load all of them together) than the
// gateway's root span for it lasted: the time between the client and the
// first span (the loopback network, the client's own work, the gateway
// reading the request before its span starts and writing the response
// after it ends), which no trace shows. Classes whose root spans are
// missing are left out.
func clientGaps(ctx context.Context, dirs []string, parts []*loadgen.Result, load *loadgen.Result) (map[string]float64, error) {
	sum, n := map[string]float64{}, map[string]float64{}
	for i, dir := range dirs {
		if err := rootSpans(ctx, filepath.Join(dir, "gateway.otlp.jsonl"), parts[i], sum, n); err != nil {
			return nil, err
		}
	}
	out := map[string]float64{}
	for class, entry := range shop.EntryOperations {
		_, op, _ := strings.Cut(entry, "/")
		c := load.Classes[class]
		if c == nil || c.Count == 0 || n[op] == 0 {
			continue
		}
		out[class] = c.Mean - sum[op]/n[op]
	}
	return out, nil
}

// rootSpans adds the durations (seconds) of the root spans in the traces
// at path that started in load's steady phase to sum and counts them in n,
// by span name.
func rootSpans(ctx context.Context, path string, load *loadgen.Result, sum, n map[string]float64) error {
	r, err := ingest.Open([]string{path}, ingest.Options{})
	if err != nil {
		return err
	}
	defer r.Close()
	from, to := load.SteadyStart.UnixNano(), load.SteadyEnd.UnixNano()
	for {
		s, err := r.Next(ctx)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if s.ParentID.IsZero() && s.Start >= from && s.Start < to {
			sum[s.Name] += float64(s.End-s.Start) / 1e9
			n[s.Name]++
		}
	}
}

// lessModeled returns gaps less what model m, solved by simulation in
// configuration s (the one the gaps were measured in), already puts
// outside the gateway's root spans: the wait for the gateway's first CPU
// slot, which a Go server takes before its span starts, so that the load
// generator's time holds it and no span does. Extraction leaves that wait
// in no own time and the model makes it again, so the gap's fixed delay
// keeps only the rest (the loopback network, the client's own work);
// gaps do not go below zero.
func lessModeled(ctx context.Context, m *model.Model, s setup, mix map[string]float64, requests int64, gaps map[string]float64) (map[string]float64, error) {
	res, err := predict(ctx, m, s, mix, requests, 1)
	if err != nil {
		return nil, err
	}
	names := workloadOf(m)
	out := map[string]float64{}
	for class, gap := range gaps {
		out[class] = gap
		w, op := res.Workloads[names[class]], res.Operations[shop.EntryOperations[class]]
		if w == nil || op == nil || op.Span == nil {
			continue
		}
		out[class] = math.Max(gap-(w.ResponseTime.Mean-op.Span.Mean), 0)
	}
	return out, nil
}

// addClientDelays puts each class's gap (clientGaps) as a fixed delay at
// the start of its workload in m, so that predictions are of the
// response time the load generator measures. Negative gaps are left out.
func addClientDelays(m *model.Model, gaps map[string]float64) {
	names := workloadOf(m)
	for _, w := range m.Workloads {
		for class, name := range names {
			if name == w.Name && gaps[class] > 0 {
				w.Steps = append([]model.Step{{Kind: model.StepDelay, Demand: model.Det(gaps[class])}}, w.Steps...)
			}
		}
	}
}

// saveJSON writes v to path as indented JSON.
func saveJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
