// Package sim is perfcast's discrete-event simulator, the reference solver:
// it runs every construct of a model (multi-core CPUs under processor
// sharing, FCFS or round robin; disks; delays; thread pools with bounded
// queues that block or drop; locks and pools; replicas behind balancers;
// loops, branches, fork/join, asynchronous sends and request parameters) and
// reports means, percentiles and 95 % confidence intervals.
//
// # Engine
//
// A replication is a single-threaded event loop over a calendar (a 4-ary heap
// ordered by time, then by scheduling order, so that runs are deterministic).
// A model is first compiled into a flat program; a request's threads of
// execution are small pooled structs with a program counter and a stack of
// frames, so that the steady state does not allocate. Processor sharing uses
// virtual time: n jobs on c cores each progress at min(1, c/n), and a job
// leaves when the station's virtual clock reaches its arrival value plus its
// demand, which makes each arrival and departure O(log n). A CPU whose
// speed changes over time (a speed window) runs the same machinery at a
// rate: at each change its virtual time is brought up to date, and the
// ends of the services and round-robin slices under way are rescheduled
// (their old events carry a stale version and are ignored).
//
// # Statistics
//
// Independent replications run in parallel, each from its own random stream
// (PCG seeded with the seed and the replication index). The number of
// replications and the requests each simulates depend only on the options'
// Seed, Requests and Precision, never on Workers, so results are the same
// whatever the parallelism. Means, throughputs and utilizations get 95 %
// confidence intervals from the Student t distribution over the replication
// means; percentiles come from DDSketches (relative accuracy 0.5 %) merged
// over the replications.
//
// # Warm-up
//
// Every replication starts empty, so its first requests see a system less
// loaded than in steady state. Before the replications, a pilot replication
// (its own random stream) records the response times of its requests in
// completion order; MSER-5 (the truncation point that minimizes the marginal
// standard error of the batch means of five) over that sequence gives the
// number of requests d to discard. Each replication then discards its first
// max(d, 100) completed requests and starts all its statistics, time
// integrals included, at that moment; the number is reported as
// sim.warmup_cut. If MSER-5 puts the cut in the second half of the pilot, the
// pilot is run again four times longer (twice at most) before a warning says
// the warm-up may be underestimated.
//
// # Stopping
//
// With Options.Requests set, that many requests (after warm-up, over all
// replications) are split evenly among min(10, Requests/1000) replications
// (at least 2). Otherwise rounds of replications of 20 000 requests run until
// the 95 % half-width of every reported mean (response-time means and
// throughputs of workloads and operations, utilizations) is within Precision
// of it; utilizations are judged against max(u, 0.05) so that an idle
// resource does not demand endless precision. The rounds stop at 500
// replications with a warning.
//
// # Saturation
//
// An open workload that needs more than a resource can give (by the
// utilization law, solve.Bounds) is not simulated: the result is
// `stable: false` with the bottleneck and the rate that saturates it. Loads
// the static bound cannot see (a thread pool or lock saturated by its holding
// times) are caught at run time: when the requests in the system grow beyond
// any steady-state figure, or every request waits for another, the run stops
// and reports `stable: false` with the resource that has the most waiting.
//
// # Results
//
// A workload's response time runs from the start of its steps (the arrival,
// or the end of think time) to their end; its completion time until every
// asynchronous descendant has ended too. An operation's response time runs
// from the call or send that reached its component, waiting for a thread
// included, to the end of its steps. A resource's wait is, at CPUs and disks,
// the time a request spends there beyond its own service (queueing under
// FCFS, sharing under PS and round robin); at thread pools and passive
// resources the time from asking to getting. Utilization is the time
// average of busy servers (cores, disk servers, threads, units) over
// servers, averaged over replicas; thread pools are reported for components
// with a thread limit.
//
// # Drops
//
// A request that meets a full queue of a component with on_full: drop fails:
// the task that was to enter unwinds, giving back threads and passive
// resources, and the request is counted in the workload's `dropped` rate (per
// second) instead of its throughput, response and completion times. A
// dropped asynchronous task does not stop its request's main path, but the
// request counts as dropped.
//
// # Spans
//
// Record runs one replication and hands over, request by request, the spans
// an OpenTelemetry-instrumented system would emit (server, client, producer
// and consumer spans with their CPU times), so that trace-based tools can be
// tested on systems whose model is known; see Span for their semantics.
package sim

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync"
	"time"

	"github.com/DataDog/sketches-go/ddsketch"
	"github.com/DataDog/sketches-go/ddsketch/mapping"
	"github.com/DataDog/sketches-go/ddsketch/store"
	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve"
	"gonum.org/v1/gonum/stat/distuv"
)

// New returns the simulator.
func New() solve.Solver { return Solver{} }

// Solver is the simulator. Beyond solve.Solver it records when requests
// start (EntryStarts), which extraction asks of a simulator.
type Solver struct{}

// Name implements solve.Solver.
func (Solver) Name() string { return "sim" }

// Tuning constants; see the package documentation.
const (
	// sketchAccuracy is the relative accuracy of the percentile sketches.
	sketchAccuracy = 0.005
	// maxReplications bounds the replications of a run until precision.
	maxReplications = 500
	// precisionReps and precisionPerRep shape the first round of a run until
	// precision.
	precisionReps   = 10
	precisionPerRep = 20000
	// minPerRep is the smallest number of requests per replication worth a
	// replication of its own when Requests is given.
	minPerRep = 1000
	// fixedReps is the number of replications when Requests is given and
	// large enough.
	fixedReps = 10
	// pilotMin and pilotMax bound the pilot replication's length.
	pilotMin = 5000
	pilotMax = 100000
	// minCut is the least number of requests a replication discards.
	minCut = 100
	// utilFloor is the utilization below which precision is judged in
	// absolute terms (relative to utilFloor).
	utilFloor = 0.05
	// liveBase is the number of live tasks beyond any steady-state estimate
	// at which a run is declared to have no steady state.
	liveBase = 10000
	// pilotStream is the PCG stream of the first pilot; replications use
	// their index.
	pilotStream = 1 << 62
)

// Resource instance kinds.
const (
	resStation uint8 = iota
	resPool
	resPassive
)

func newSketch() *ddsketch.DDSketch {
	m, err := mapping.NewCubicallyInterpolatedMapping(sketchAccuracy)
	if err != nil {
		panic(err) // the accuracy is a valid constant
	}
	return ddsketch.NewDDSketch(m, store.NewDenseStore(), store.NewDenseStore())
}

// resDesc is a reported resource and where its instances are.
type resDesc struct {
	name     string
	kind     uint8
	inst     []int // instance index per replica: the first of parts
	parts    int   // instances per replica (passiveInfo.parts), else 1
	servers  int   // per replica
	replicas int
	// limit is a CPU's limit per replica in cores, 0 for none.
	limit float64
}

// resources lists the reported resources in a fixed order.
func resources(p *program) []resDesc {
	var out []resDesc
	for _, h := range p.hosts {
		per := 1 + len(h.disks)
		d := resDesc{name: model.CPUResource(h.name), kind: resStation, parts: 1, servers: int(h.cores), replicas: int(h.replicas), limit: h.limit}
		for r := 0; r < int(h.replicas); r++ {
			d.inst = append(d.inst, int(h.station)+r*per)
		}
		out = append(out, d)
		for i, disk := range h.disks {
			d := resDesc{name: model.DiskResource(h.name, disk.name), kind: resStation, parts: 1, servers: int(disk.servers), replicas: int(h.replicas)}
			for r := 0; r < int(h.replicas); r++ {
				d.inst = append(d.inst, int(h.station)+r*per+1+i)
			}
			out = append(out, d)
		}
	}
	for _, c := range p.comps {
		if c.threads == 0 {
			continue
		}
		n := int(p.hosts[c.host].replicas)
		d := resDesc{name: model.ThreadsResource(c.name), kind: resPool, parts: 1, servers: int(c.threads), replicas: n}
		for r := 0; r < n; r++ {
			d.inst = append(d.inst, int(c.pool)+r)
		}
		out = append(out, d)
	}
	for _, pi := range p.passives {
		n := 1
		if pi.host >= 0 {
			n = int(p.hosts[pi.host].replicas)
		}
		parts := int(pi.parts)
		d := resDesc{name: pi.name, kind: resPassive, parts: parts, servers: int(pi.capacity) * parts, replicas: n}
		for r := 0; r < n; r++ {
			d.inst = append(d.inst, int(pi.inst)+r*parts)
		}
		out = append(out, d)
	}
	return out
}

// repOut is what one replication observed.
type repOut struct {
	t        float64 // measured simulated time (after warm-up)
	events   int64
	requests int64
	st       stats
	res      [][]acct // per resDesc, per replica
	// throttle counts, per resDesc of a limited CPU, the periods begun
	// and those in which the quota ran out, over its replicas.
	throttle [][2]int64
	trace    []float64
	unstable *instability
}

// instability says why a replication was stopped.
type instability struct {
	resource string
	deadlock bool
	ratio    float64 // departures / arrivals at the resource (0: unknown)
	live     int
}

// collect extracts a replication's observations from its engine.
func collect(e *engine, descs []resDesc) *repOut {
	o := &repOut{t: e.now - e.tCut, events: e.events, requests: e.mainEnds - e.cut, st: e.st, trace: e.trace}
	o.res = make([][]acct, len(descs))
	o.throttle = make([][2]int64, len(descs))
	for i, d := range descs {
		o.res[i] = make([]acct, len(d.inst))
		for r, in := range d.inst {
			switch d.kind {
			case resStation:
				o.res[i][r] = e.stations[in].acct
				if l := e.stations[in].cpuLimit; l != nil {
					o.throttle[i][0] += l.periods
					o.throttle[i][1] += l.stalled
				}
			case resPool:
				o.res[i][r] = e.pools[in].acct
			default:
				for _, ps := range e.passives[in : in+d.parts] {
					o.res[i][r].add(&ps.acct)
				}
			}
		}
	}
	if e.overflow || e.deadlock {
		o.unstable = blame(e, descs)
	}
	return o
}

// blame finds the resource with the most requests waiting.
func blame(e *engine, descs []resDesc) *instability {
	u := &instability{deadlock: e.deadlock, live: e.live}
	best := -1
	for _, d := range descs {
		n := 0
		var in, out int64
		for _, first := range d.inst {
			for i := first; i < first+d.parts; i++ {
				n += e.waitingAt(d.kind, i)
				var a *acct
				switch d.kind {
				case resStation:
					a = &e.stations[i].acct
				case resPool:
					a = &e.pools[i].acct
				default:
					a = &e.passives[i].acct
				}
				in += a.in
				out += a.out
			}
		}
		if n > best {
			best = n
			u.resource = d.name
			u.ratio = 0
			if in > 0 {
				u.ratio = float64(out) / float64(in)
			}
		}
	}
	// Unbounded components (no thread limit) do not queue; the requests in
	// the system then pile up at a station or a lock, found above.
	return u
}

// config is a resolved run configuration.
type config struct {
	seed      uint64
	workers   int
	precision float64
	liveLimit int
}

// Solve implements solve.Solver. Hosts with a speed curve run at the
// factor of their utilization, found by solve.ResolveSpeeds; where closed
// workloads load them, candidates are simulated at precision 0.05. Hosts
// with a speed variation and a speed window change speed over the run,
// every window; those without a window are simulated at each of its
// speeds in turn, with the same seed (solve.SolveVaried).
func (s Solver) Solve(ctx context.Context, m *model.Model, opts solve.Options) (*solve.Result, error) {
	return solve.SolveVaried(ctx, m, true, func(ctx context.Context, m *model.Model, j, of int) (*solve.Result, error) {
		o := opts
		if opts.Progress != nil && of > 1 {
			o.Progress = func(done float64) { opts.Progress((float64(j) + done) / float64(of)) }
		}
		quick := o
		quick.Precision, quick.Progress = max(o.Precision, 0.05), nil
		return solve.SolveWithSpeeds(ctx, m,
			func(ctx context.Context, c *model.Model) (*solve.Result, error) { return s.solve(ctx, c, quick) },
			func(ctx context.Context, c *model.Model) (*solve.Result, error) { return s.solve(ctx, c, o) })
	})
}

func (Solver) solve(ctx context.Context, m *model.Model, opts solve.Options) (*solve.Result, error) {
	start := time.Now()
	res := solve.NewResult(m, "sim")
	cfg := config{seed: opts.Seed, workers: opts.Workers, precision: opts.Precision}
	if cfg.seed == 0 {
		cfg.seed = 1
	}
	if cfg.workers <= 0 {
		cfg.workers = runtime.GOMAXPROCS(0)
	}
	if !(cfg.precision > 0) {
		cfg.precision = 0.02
	}
	if opts.Requests < 0 {
		return nil, fmt.Errorf("simulate %s: negative number of requests %d", modelName(m), opts.Requests)
	}

	if overloaded(m, res, cfg.seed, start) {
		return res, nil
	}

	p, err := compile(m)
	if err != nil {
		return nil, fmt.Errorf("simulate %s: %w", modelName(m), err)
	}
	descs := resources(p)
	cfg.liveLimit = liveLimit(m)

	if !solve.HasLoad(m) {
		solve.FillIdle(res, m)
		res.Sim = &solve.SimInfo{Seed: cfg.seed, WallSeconds: time.Since(start).Seconds()}
		return res, nil
	}

	r := &runner{p: p, descs: descs, cfg: cfg, ctx: ctx, progress: opts.Progress}
	if err := r.run(opts.Requests); err != nil {
		return nil, err
	}
	if r.unstable != nil {
		reportUnstable(res, m, r.unstable)
	} else {
		r.fill(res)
	}
	res.Warnings = append(res.Warnings, r.warnings...)
	res.Warnings = append(res.Warnings, speedWindows(m)...)
	res.Sim = &solve.SimInfo{
		Seed:         cfg.seed,
		Replications: len(r.outs),
		Requests:     r.requests,
		Events:       r.events,
		SimTime:      r.simTime,
		WallSeconds:  time.Since(start).Seconds(),
		WarmupCut:    float64(r.cut),
	}
	return res, nil
}

// speedWindows says which hosts change speed over a run.
func speedWindows(m *model.Model) []string {
	var out []string
	for _, h := range m.Hosts {
		if h.CPU.VariesOverTime() {
			out = append(out, fmt.Sprintf("host %s: its CPU speed is redrawn every %s (speed_variation %.3g)", h.Name, model.FormatDuration(h.CPU.SpeedWindow), h.CPU.SpeedVariation))
		}
	}
	return out
}

func modelName(m *model.Model) string {
	switch {
	case m.File != "":
		return m.File
	case m.Name != "":
		return m.Name
	}
	return "model"
}

// liveLimit is the number of tasks in the system beyond which a run has no
// steady state: far above what Little's law gives for the open workloads
// with no queueing at all, plus the closed populations.
func liveLimit(m *model.Model) int {
	n := 0.0
	for _, w := range m.Workloads {
		switch {
		case w.Open != nil && w.Open.Rate > 0:
			d := m.Demands(w)
			t := d.Delay
			for _, s := range d.Service {
				t += s
			}
			visits := 1.0
			for _, v := range d.Visits {
				visits += v
			}
			n += w.Open.Rate*t + visits
		case w.Closed != nil:
			n += float64(w.Closed.Users)
		}
	}
	return liveBase + int(math.Min(100*n, 1e8))
}

// runner runs the replications of one Solve.
type runner struct {
	p        *program
	descs    []resDesc
	cfg      config
	ctx      context.Context
	progress func(float64)

	cut      int64
	outs     []*repOut
	warnings []string
	unstable *instability
	requests int64
	events   int64
	simTime  float64

	// Sketches merged over all replications so far (opSpanSk: nil for
	// operations whose span is their response time).
	wlSk, opSk, opSpanSk []*ddsketch.DDSketch
}

// run plans and runs the replications: a pilot for the warm-up, then either
// a fixed split of the requests or rounds until precision.
func (r *runner) run(requests int64) error {
	reps, perRep := 0, int64(precisionPerRep)
	if requests > 0 {
		reps = int(min(int64(fixedReps), max(requests/minPerRep, 2)))
		if requests < 2 {
			reps = 1
		}
		perRep = (requests + int64(reps) - 1) / int64(reps)
	}
	if err := r.pilot(perRep); err != nil || r.unstable != nil {
		return err
	}
	r.wlSk = make([]*ddsketch.DDSketch, len(r.p.workloads))
	for i := range r.wlSk {
		r.wlSk[i] = newSketch()
	}
	r.opSk = make([]*ddsketch.DDSketch, len(r.p.ops))
	r.opSpanSk = make([]*ddsketch.DDSketch, len(r.p.ops))
	for i := range r.opSk {
		r.opSk[i] = newSketch()
		if r.p.ops[i].span {
			r.opSpanSk[i] = newSketch()
		}
	}
	if requests > 0 {
		quotas := make([]int64, reps)
		for i := range quotas {
			quotas[i] = requests / int64(reps)
			if int64(i) < requests%int64(reps) {
				quotas[i]++
			}
		}
		return r.round(quotas, 1)
	}
	quotas := make([]int64, precisionReps)
	for i := range quotas {
		quotas[i] = precisionPerRep
	}
	for {
		if err := r.round(quotas, float64(len(r.outs)+len(quotas))/float64(maxReplications)); err != nil || r.unstable != nil {
			return err
		}
		f := r.precisionFactor()
		if f <= 1 {
			return nil
		}
		n := len(r.outs)
		if n >= maxReplications {
			r.warnings = append(r.warnings, fmt.Sprintf(
				"stopped at %d replications before every mean reached the requested precision %.3g (the worst half-width is %.3g times too wide)",
				n, r.cfg.precision, math.Sqrt(f)))
			return nil
		}
		// Half-widths shrink as 1/√replications: aim 10 % past the need.
		want := int(math.Ceil(float64(n)*f*1.1)) - n
		want = max(want, 2)
		want = min(want, maxReplications-n)
		quotas = quotas[:0]
		for range want {
			quotas = append(quotas, precisionPerRep)
		}
	}
}

// pilot runs the pilot replication(s) and sets the warm-up cut.
func (r *runner) pilot(perRep int64) error {
	n := min(max(perRep, pilotMin), pilotMax)
	for attempt := 0; ; attempt++ {
		e := newEngine(r.p, r.cfg.seed, pilotStream+uint64(attempt), 0, n, r.cfg.liveLimit)
		e.trace = make([]float64, 0, n)
		if err := e.run(r.ctx); err != nil {
			return err
		}
		r.events += e.events
		if e.overflow || e.deadlock {
			r.unstable = blame(e, r.descs)
			return nil
		}
		d, ok := mser5(e.trace)
		if ok || attempt == 2 {
			if !ok {
				r.warnings = append(r.warnings, fmt.Sprintf(
					"the warm-up did not settle within a pilot of %d requests; the first %d of each replication are discarded, which may be too few",
					n, d))
			}
			r.cut = max(int64(d), minCut)
			return nil
		}
		n *= 4
	}
}

// mser5 returns the number of observations to discard from the front of x by
// MSER-5: over batch means of five, the truncation d (in batches) that
// minimizes the squared standard error of the remaining mean,
// Σ_{i>d}(y_i − ȳ_d)² / (n−d)², among d ≤ n/2. ok is false when the minimum
// is at the end of that range, which means the sequence is too short to show
// the end of the transient.
func mser5(x []float64) (discard int, ok bool) {
	const b = 5
	n := len(x) / b
	if n < 4 {
		return 0, true
	}
	y := make([]float64, n)
	for i := range y {
		s := 0.0
		for _, v := range x[i*b : i*b+b] {
			s += v
		}
		y[i] = s / b
	}
	// Suffix sums, with values centred on the overall mean for precision.
	mu := 0.0
	for _, v := range y {
		mu += v
	}
	mu /= float64(n)
	s1 := make([]float64, n+1)
	s2 := make([]float64, n+1)
	for i := n - 1; i >= 0; i-- {
		v := y[i] - mu
		s1[i] = s1[i+1] + v
		s2[i] = s2[i+1] + v*v
	}
	best, bestD := math.Inf(1), 0
	limit := n / 2
	for d := 0; d <= limit; d++ {
		k := float64(n - d)
		sse := s2[d] - s1[d]*s1[d]/k
		if stat := sse / (k * k); stat < best {
			best, bestD = stat, d
		}
	}
	return bestD * b, bestD < limit
}

// round runs replications with the given quotas, in parallel, and adds them
// to the runner's observations in index order.
func (r *runner) round(quotas []int64, progressAfter float64) error {
	first := len(r.outs)
	outs := make([]*repOut, len(quotas))
	errs := make([]error, len(quotas))
	next := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	finished := 0
	for range min(r.cfg.workers, len(quotas)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				e := newEngine(r.p, r.cfg.seed, uint64(first+i), r.cut, quotas[i], r.cfg.liveLimit)
				if err := e.run(r.ctx); err != nil {
					errs[i] = err
					continue
				}
				outs[i] = collect(e, r.descs)
				if r.progress != nil {
					mu.Lock()
					finished++
					done := float64(first+finished) / float64(first+len(quotas)) * progressAfter
					r.progress(math.Min(done, 1))
					mu.Unlock()
				}
			}
		}()
	}
	for i := range quotas {
		if r.ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if err := r.ctx.Err(); err != nil {
		return err
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	for _, o := range outs {
		r.events += o.events
		if o.unstable != nil && r.unstable == nil {
			r.unstable = o.unstable
		}
		r.outs = append(r.outs, o)
		r.requests += o.requests
		r.simTime += o.t
		for i, s := range o.st.wlSk {
			if err := r.wlSk[i].MergeWith(s); err != nil {
				return err
			}
		}
		for i, s := range o.st.opSk {
			if err := r.opSk[i].MergeWith(s); err != nil {
				return err
			}
			if sp := o.st.opSpanSk[i]; sp != nil {
				if err := r.opSpanSk[i].MergeWith(sp); err != nil {
					return err
				}
			}
		}
		// The sketches are merged; free them.
		o.st.wlSk, o.st.opSk, o.st.opSpanSk = nil, nil, nil
	}
	return nil
}

// estimate is a mean over replications with its 95 % half-width.
type estimate struct {
	mean, hw float64
	n        int
}

func (e estimate) ci() *[2]float64 {
	if e.n < 2 || math.IsNaN(e.hw) || math.IsInf(e.hw, 0) || math.IsInf(e.mean, 0) {
		return nil
	}
	return &[2]float64{e.mean - e.hw, e.mean + e.hw}
}

// estimateOf computes the mean and Student-t 95 % half-width of the values
// that are not NaN.
func estimateOf(values []float64) estimate {
	var s float64
	n := 0
	for _, v := range values {
		if !math.IsNaN(v) {
			s += v
			n++
		}
	}
	if n == 0 {
		return estimate{mean: math.NaN(), hw: math.NaN()}
	}
	mean := s / float64(n)
	if n < 2 {
		return estimate{mean: mean, hw: math.NaN(), n: n}
	}
	var ss float64
	for _, v := range values {
		if !math.IsNaN(v) {
			ss += (v - mean) * (v - mean)
		}
	}
	sd := math.Sqrt(ss / float64(n-1))
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(n - 1)}.Quantile(0.975)
	return estimate{mean: mean, hw: t * sd / math.Sqrt(float64(n)), n: n}
}

// series collects one value per replication.
func (r *runner) series(f func(o *repOut) float64) estimate {
	v := make([]float64, len(r.outs))
	for i, o := range r.outs {
		v[i] = f(o)
	}
	return estimateOf(v)
}

func ratio(a float64, n int64) float64 {
	if n == 0 {
		return math.NaN()
	}
	return a / float64(n)
}

// utilization is a resource's busy fraction in one replication, over all
// replicas (rep < 0) or of one.
func utilization(o *repOut, d *resDesc, i, rep int) float64 {
	if o.t <= 0 {
		return math.NaN()
	}
	if rep >= 0 {
		return o.res[i][rep].area / (float64(d.servers) * o.t)
	}
	var a float64
	for _, x := range o.res[i] {
		a += x.area
	}
	return a / (float64(d.servers*d.replicas) * o.t)
}

// precisionFactor is the largest (half-width / allowed half-width)² over the
// reported means: 1 or less when every one is precise enough.
func (r *runner) precisionFactor() float64 {
	worst := 0.0
	check := func(e estimate, scale float64) {
		if e.n < 2 || math.IsNaN(e.hw) || !(scale > 0) {
			return
		}
		if f := e.hw / (r.cfg.precision * scale); f*f > worst {
			worst = f * f
		}
	}
	for w := range r.p.workloads {
		x := r.series(func(o *repOut) float64 { return float64(o.st.wlN[w]) / o.t })
		check(x, math.Abs(x.mean))
		rt := r.series(func(o *repOut) float64 { return ratio(o.st.wlRT[w], o.st.wlN[w]) })
		check(rt, math.Abs(rt.mean))
	}
	for op := range r.p.ops {
		x := r.series(func(o *repOut) float64 { return float64(o.st.opN[op]) / o.t })
		if x.mean == 0 {
			continue
		}
		check(x, math.Abs(x.mean))
		rt := r.series(func(o *repOut) float64 { return ratio(o.st.opRT[op], o.st.opN[op]) })
		check(rt, math.Abs(rt.mean))
	}
	for i := range r.descs {
		d := &r.descs[i]
		u := r.series(func(o *repOut) float64 { return utilization(o, d, i, -1) })
		if u.mean > 0 {
			check(u, math.Max(u.mean, utilFloor))
		}
	}
	return worst
}

// quantiles are the reported percentiles.
var quantiles = [...]float64{0.50, 0.90, 0.95, 0.99}

// times builds a Times from a mean estimate and a sketch.
func times(e estimate, sk *ddsketch.DDSketch) solve.Times {
	t := solve.Times{Mean: e.mean, CI95: e.ci()}
	if sk != nil && sk.GetCount() > 0 {
		var q [len(quantiles)]float64
		for i, p := range quantiles {
			v, err := sk.GetValueAtQuantile(p)
			if err != nil {
				return t
			}
			q[i] = v
		}
		t.P50, t.P90, t.P95, t.P99 = solve.Float(q[0]), solve.Float(q[1]), solve.Float(q[2]), solve.Float(q[3])
	}
	return t
}

// finite replaces a value that JSON cannot carry (a rate over no time at
// all) by zero.
func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

// fill writes the aggregated observations into res.
func (r *runner) fill(res *solve.Result) {
	if !(r.simTime > 0) {
		res.Warnings = append(res.Warnings, "no simulated time passed: every request ended at once, so rates and utilizations are undefined and shown as zero")
	}
	for w, wi := range r.p.workloads {
		x := r.series(func(o *repOut) float64 { return float64(o.st.wlN[w]) / o.t })
		rt := r.series(func(o *repOut) float64 { return ratio(o.st.wlRT[w], o.st.wlN[w]) })
		ct := r.series(func(o *repOut) float64 { return ratio(o.st.wlCT[w], o.st.wlCTN[w]) })
		dr := r.series(func(o *repOut) float64 { return float64(o.st.wlDropped[w]) / o.t })
		wr := &solve.WorkloadResult{Throughput: finite(x.mean), ThroughputCI95: x.ci(), Dropped: finite(dr.mean)}
		if !math.IsNaN(rt.mean) {
			wr.ResponseTime = times(rt, r.wlSk[w])
		}
		if !math.IsNaN(ct.mean) {
			wr.CompletionTime = &solve.Times{Mean: ct.mean, CI95: ct.ci()}
		}
		res.Workloads[wi.name] = wr
	}
	for op, oi := range r.p.ops {
		x := r.series(func(o *repOut) float64 { return float64(o.st.opN[op]) / o.t })
		if !(x.mean > 0) {
			continue
		}
		x.mean = finite(x.mean)
		rt := r.series(func(o *repOut) float64 { return ratio(o.st.opRT[op], o.st.opN[op]) })
		or := &solve.OperationResult{Throughput: x.mean, ResponseTime: times(rt, r.opSk[op])}
		if oi.span {
			sp := r.series(func(o *repOut) float64 { return ratio(o.st.opSpanRT[op], o.st.opN[op]) })
			st := times(sp, r.opSpanSk[op])
			or.Span = &st
		}
		res.Operations[oi.id] = or
	}
	top := -1.0
	for i := range r.descs {
		d := &r.descs[i]
		u := r.series(func(o *repOut) float64 { return utilization(o, d, i, -1) })
		rr := &solve.ResourceResult{Utilization: finite(u.mean), UtilizationCI95: u.ci(), Busy: finite(u.mean) * float64(d.servers*d.replicas)}
		if d.replicas > 1 {
			for rep := range d.replicas {
				rr.PerReplica = append(rr.PerReplica, finite(r.series(func(o *repOut) float64 { return utilization(o, d, i, rep) }).mean))
			}
		}
		var ws float64
		var wn int64
		for _, o := range r.outs {
			for _, a := range o.res[i] {
				ws += a.waitSum
				wn += a.waitN
			}
		}
		if wn > 0 {
			rr.Wait = &solve.Times{Mean: math.Max(ws/float64(wn), 0)}
		}
		if d.limit > 0 {
			lu := finite(u.mean) * float64(d.servers) / d.limit
			rr.LimitUtilization = &lu
			var periods, stalled int64
			for _, o := range r.outs {
				periods += o.throttle[i][0]
				stalled += o.throttle[i][1]
			}
			if periods > 0 {
				f := float64(stalled) / float64(periods)
				rr.Throttled = &f
			}
		}
		res.Resources[d.name] = rr
		if b := rr.Load(); b > top {
			top, res.Bottleneck = b, d.name
		}
	}
	if top <= 0 {
		res.Bottleneck = ""
	}
}

// reportUnstable writes the result of a run stopped for lack of a steady
// state.
func reportUnstable(res *solve.Result, m *model.Model, u *instability) {
	res.Stable = false
	res.Bottleneck = u.resource
	if u.deadlock {
		res.Warnings = append(res.Warnings, fmt.Sprintf(
			"deadlock: every request in the system waits for another (most wait at %s); results would mean nothing", u.resource))
		return
	}
	res.Warnings = append(res.Warnings, fmt.Sprintf(
		"no steady state: %d requests piled up in the system, most of them waiting at %s; stopped the simulation", u.live, u.resource))
	if u.ratio > 0 && u.ratio < 1 {
		at := map[string]float64{}
		for _, w := range m.Workloads {
			if w.Open != nil && w.Open.Rate > 0 {
				at["workload."+w.Name+".open.rate"] = w.Open.Rate * u.ratio
			}
		}
		if len(at) > 0 {
			res.Saturation = &solve.Saturation{Resource: u.resource, At: at}
			res.Warnings = append(res.Warnings, fmt.Sprintf(
				"the saturation rate of %s is estimated from the rate at which it served requests before the stop", u.resource))
		}
	}
}

// overloaded reports whether the open workloads of m need more than a
// resource can serve (the utilization law), in which case nothing is
// simulated and res says so.
func overloaded(m *model.Model, res *solve.Result, seed uint64, start time.Time) bool {
	b := solve.Bounds(atMeanSpeed(m))
	if b.Stable {
		return false
	}
	b.Overload(res)
	res.Warnings = append(res.Warnings, "not simulated: an overloaded model has no steady state to measure")
	res.Sim = &solve.SimInfo{Seed: seed, WallSeconds: time.Since(start).Seconds()}
	return true
}

// atMeanSpeed is m, or a copy of it whose hosts that change speed over
// time run at the mean of their speeds (solve.MeanSpeed): what they can
// carry over a long run.
func atMeanSpeed(m *model.Model) *model.Model {
	for _, h := range m.Hosts {
		if solve.MeanSpeed(h.CPU) == h.CPU.Speed {
			continue
		}
		c, err := m.Clone()
		if err != nil {
			return m
		}
		for _, h := range c.Hosts {
			h.CPU.Speed = solve.MeanSpeed(h.CPU)
		}
		return c
	}
	return m
}
