// Command experiment measures how well perfcast predicts the example shop
// (../shop) running for real: it deploys the shop's four services as
// processes (pinned to CPU 1, the load generator to CPU 0, when taskset and
// two CPUs are there), runs a reference configuration and load steps of
// it, extracts a model from their traces, predicts a set of other configurations (load levels
// from light to near saturation, GOMAXPROCS, two cores, a smaller worker
// pool, the mutex narrowed, span CPU time off), runs each of them, and
// writes the comparison as Markdown into the generated section of
// docs/accuracy.md.
//
//	go run ./examples/testbed/experiment            # the full experiment (about 27 minutes)
//	go run ./examples/testbed/experiment -quick     # a smoke run of a few seconds per configuration
//	go run ./examples/testbed/experiment -dataset examples/data   # the example data set
//
// Measurements need a quiet machine: the report records the load average
// before and after.
package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/perfcast/perfcast/examples/testbed/loadgen"
	"github.com/perfcast/perfcast/examples/testbed/shop"
	"github.com/perfcast/perfcast/extract"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "experiment:", err)
		os.Exit(1)
	}
}

type options struct {
	quick     bool
	out       string
	work      string
	dataset   string
	refRate   float64
	refLoad   float64
	requests  int64
	small     bool
	only      string
	reuse     bool
	pool      string
	clientGap bool
	outside   string
	rounds    int
	rampUp    time.Duration
	steps     bool
	// slice is the host CPU's round-robin quantum in the models (0:
	// processor sharing), sliceFrom where its default came from.
	slice     time.Duration
	sliceFrom string
	// speedWindow has extraction simulate the CPU's speed variation as a
	// speed redrawn every window it was measured over (speed_window).
	speedWindow bool
	// steadyOnly has extraction read the segments' steady phases alone
	// (see steadyTraces).
	steadyOnly bool
}

// extraction is what of the options extractModel takes.
func (o options) extraction() extraction {
	return extraction{outside: o.outside, slice: o.slice, speedWindow: o.speedWindow, steadyOnly: o.steadyOnly}
}

func run() error {
	var o options
	flag.BoolVar(&o.quick, "quick", false, "a smoke run: a few seconds per configuration, the small data set")
	flag.StringVar(&o.out, "o", "docs/accuracy.md", "write the report into this `file`'s generated section (at its end when it has none)")
	flag.StringVar(&o.work, "work", "", "keep the runs' files (traces, metrics, logs, models) in this `dir` (default: a temporary one, removed)")
	flag.StringVar(&o.dataset, "dataset", "", "instead of the experiment, make the example data set in this `dir` (90 s at 25 requests/s)")
	flag.Float64Var(&o.refRate, "ref-rate", 50, "the warm-up's arrival rate, requests per second; when set, the reference's too (instead of -ref-load)")
	flag.Float64Var(&o.refLoad, "ref-load", 0.5, "the reference's arrival rate as a `fraction` of the rate that saturates one core by the warm-up's CPU time per request (mid-range: predictions interpolate rather than extrapolate)")
	flag.Int64Var(&o.requests, "requests", 400000, "workload requests each prediction simulates (after warm-up, over its replications)")
	flag.StringVar(&o.only, "only", "", "run only these `configurations` (comma-separated names) besides the reference")
	flag.StringVar(&o.pool, "pool", "", "instead of running, predict again the runs in these work `dirs` (comma-separated; each as -reuse would, its report written into it as accuracy.md) and report the errors pooled over them")
	flag.BoolVar(&o.reuse, "reuse", false, "with -work, take the runs already there instead of running them again (to try another extraction on the same measurements)")
	flag.BoolVar(&o.clientGap, "client-gap", true, "add each class's time outside the gateway's root span (the load generator's latency less the span's, in the reference's steady phase) to the model's workload as a fixed delay")
	flag.BoolVar(&o.speedWindow, "speed-window", false, "have extraction simulate the CPU's speed variation as a speed redrawn every second (the extraction configuration's speed_window) instead of five speeds each held until the queues settle")
	flag.StringVar(&o.outside, "outside-spans", extract.OutsideBackground, "where extraction puts the CPU time outside spans: inline or background (the extraction configuration's outside_spans)")
	flag.IntVar(&o.rounds, "rounds", 6, "run every configuration in this many segments, one per round, the rounds one after the other, so that the machine's drift over the invocation falls alike on all configurations (-quick: 2)")
	flag.BoolVar(&o.steadyOnly, "steady-only", true, "extract from the segments' steady phases alone (each widened by a second), leaving out the ramps, where fresh processes warm up; false: the whole segments")
	flag.BoolVar(&o.steps, "steps", true, "extract the model from the reference and load steps at 25 % and 75 % of the saturation rate (fresh processes, a segment of each per round), from which extraction can fit a CPU speed curve")
	flag.DurationVar(&o.rampUp, "ramp-up", 5*time.Second, "each segment's ramp-up (fresh processes warm up in it)")
	slice, sliceFrom := schedulerSlice()
	flag.DurationVar(&o.slice, "cpu-slice", slice, "model the host's CPU as round-robin with this quantum, Linux's scheduler slice (default: this kernel's); 0: processor sharing")
	flag.Parse()
	o.sliceFrom = sliceFrom
	if flagSet("cpu-slice") {
		o.sliceFrom = "-cpu-slice"
	}
	o.small = o.quick
	if o.quick && !flagSet("rounds") {
		o.rounds = 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	root, err := moduleRoot()
	if err != nil {
		return err
	}
	if o.rounds < 1 {
		return fmt.Errorf("-rounds %d: want at least 1", o.rounds)
	}
	if !(o.refLoad > 0 && o.refLoad < 1) {
		return fmt.Errorf("-ref-load %g: want a fraction between 0 and 1", o.refLoad)
	}
	if o.pool != "" {
		return pool(ctx, root, o)
	}
	work := o.work
	if work == "" {
		work, err = os.MkdirTemp("", "perfcast-testbed-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(work)
	}
	e, err := newEnv(ctx, root, work, o)
	if err != nil {
		return err
	}
	if o.dataset != "" {
		return e.makeDataset(ctx, filepath.Join(root, o.dataset) /* relative to the module */, o)
	}
	rep, err := e.experiment(ctx, o)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	rep.write(&buf, os.Args[1:])
	return writeReportTo(root, o.out, buf.Bytes())
}

// newEnv builds the testbed into work and seeds the databases the runs
// copy.
func newEnv(ctx context.Context, root, work string, o options) (*env, error) {
	work, err := filepath.Abs(work)
	if err != nil {
		return nil, err
	}
	e := &env{work: work, mix: shop.DefaultMix, small: o.small, seed: 1, reuse: o.reuse && o.work != "", rounds: o.rounds}
	e.bin = filepath.Join(work, "testbed")
	slog.Info("build", "bin", e.bin)
	build := exec.CommandContext(ctx, "go", "build", "-o", e.bin, "./examples/testbed")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build testbed: %w: %s", err, out)
	}
	_, tsErr := exec.LookPath("taskset")
	e.pin = tsErr == nil && runtime.NumCPU() >= 2
	if err := e.seedDatabases(ctx); err != nil {
		return nil, err
	}
	return e, nil
}

// writeReportTo writes report into the generated section of out (relative
// to the module's root unless absolute); see writeReport.
func writeReportTo(root, out string, report []byte) error {
	if !filepath.IsAbs(out) {
		out = filepath.Join(root, out)
	}
	if err := writeReport(out, report, beginReport, endReport); err != nil {
		return err
	}
	slog.Info("wrote", "report", out)
	return nil
}

// flagSet tells whether the command line set the flag name.
func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// moduleRoot finds the directory of the go.mod above the working directory.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("run from inside the perfcast module")
	}
	return filepath.Dir(mod), nil
}

func (e *env) seedDatabases(ctx context.Context) error {
	e.baseCatalog = filepath.Join(e.work, "base-catalog.db")
	e.baseOrders = filepath.Join(e.work, "base-orders.db")
	args := []string{"seed", "-catalog-db", e.baseCatalog, "-orders-db", e.baseOrders}
	if e.small {
		args = append(args, "-small")
	}
	slog.Info("seed databases")
	cmd := exec.CommandContext(ctx, e.bin, args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("seed: %w: %s", err, out)
	}
	// Fold the write-ahead logs into the files that runs copy.
	for _, p := range []string{e.baseCatalog, e.baseOrders} {
		for _, suffix := range []string{"-wal", "-shm"} {
			if _, err := os.Stat(p + suffix); err == nil {
				return fmt.Errorf("%s%s left behind by seeding", p, suffix)
			}
		}
	}
	return nil
}

// reference is the configuration the model is extracted from.
func reference(rate float64, pin bool) setup {
	cores := ""
	if pin {
		cores = "1"
	}
	return setup{Name: "reference", What: "reference: 1 CPU, GOMAXPROCS 1, pool 8, coarse lock, span CPU time on",
		Rate: rate, GOMAXPROCS: 1, Cores: cores, ModelCores: 1, Pool: 8, CoarseLock: true, SpanCPU: true}
}

// saturationRate is the rate that keeps one core busy at the dearer of two
// estimates of the CPU time per request: the first reference segment's
// (rate first) and the warm-up's (rate warm, 0 without one). Either alone
// is one short stretch of a machine whose CPU time per request wanders by
// 10–20 % over minutes; the lower rate keeps the highest load level below
// saturation when one of them was cheap. In one invocation the first
// segment alone cost 12 % less than the reference's six segments, and the
// 80 % level ran at 78 % measured utilization and the lock-free one at 82 %.
func saturationRate(first, warm float64) float64 {
	if warm <= 0 || math.IsNaN(warm) || math.IsInf(warm, 0) {
		return first
	}
	return min(first, warm)
}

// referenceRate is the reference's arrival rate: the fraction load of the
// warm-up's saturation rate, rounded to a tenth of a request per second so
// that the report reads well.
func referenceRate(load, saturation float64) float64 {
	return math.Round(10*load*saturation) / 10
}

// stepRates are the rates of the reference's load steps: 25 % and 75 % of
// the saturation rate the load levels are fractions of, so that the
// steps span most of the levels' range (the speed curve is flat beyond the
// loads it was fitted over) without repeating any of them.
//
// The steps run in fresh processes, a segment of each per round. Steps
// served by the reference's own processes after its measured phase (until
// 2026-11-24) measured a far steeper slope than fresh processes showed at
// those loads, and a speed curve from them under-predicted every high load
// by 11–16 %.
func stepRates(saturation float64) (low, high float64) {
	return 0.25 * saturation, 0.75 * saturation
}

// stepSteady is the steady phase of each load step's segment.
const stepSteady = 15 * time.Second

// extractionPause is the pause between two segments that extraction reads
// when they run one after the other: more than three of its 5 s windows
// without work, so that it sees two runs (see extract.SpeedCurve).
const extractionPause = 20 * time.Second

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// loadAverage describes the 1- and 5-minute load averages of
// /proc/loadavg, and tells whether either is above 1.5 (a machine busy
// with other work).
func loadAverage() (string, bool) {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown", false
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "unknown", false
	}
	busy := false
	for _, v := range f[:2] {
		if x, err := strconv.ParseFloat(v, 64); err == nil && x > 1.5 {
			busy = true
		}
	}
	return f[0] + " (1 min), " + f[1] + " (5 min)", busy
}

// experiment runs every configuration's segments (or, with -reuse, takes
// those in the work dir), extracts the model from the reference's runs
// and load steps, predicts every configuration with it, and returns the
// report; the caller writes it.
func (e *env) experiment(ctx context.Context, o options) (*report, error) {
	e.phases = loadgen.Phases{RampUp: o.rampUp, Steady: 60 * time.Second, RampDown: 2 * time.Second}
	if o.quick {
		e.phases = loadgen.Phases{RampUp: time.Second, Steady: 5 * time.Second, RampDown: 500 * time.Millisecond}
	}
	if e.reuse {
		// Runs of another -rounds are not the ones asked for.
		if n := madeRounds(filepath.Join(e.work, "reference")); n > 0 && n != e.rounds {
			return nil, fmt.Errorf("-reuse: %s holds runs of -rounds %d, not %d", e.work, n, e.rounds)
		}
	}
	started := time.Now()
	loadBefore, busyBefore := loadAverage()
	ref := reference(o.refRate, e.pin)
	// The reference is measured twice as long as the others: its CPU time
	// per request goes into every prediction.
	ref.Steady = 2 * e.phases.Steady
	warmSaturation := 0.0
	if !o.quick {
		// A warm-up run, discarded: in earlier invocations the first runs
		// after building and seeding used 10–40 % more CPU per request
		// than the later ones.
		warm, phases := ref, e.phases
		warm.Name, warm.What, warm.Steady = "warm-up", "warm-up, discarded", 0
		e.phases = loadgen.Phases{RampUp: 5 * time.Second, Steady: 40 * time.Second, RampDown: 2 * time.Second}
		dir := []string{filepath.Join(e.work, warm.Name)}
		err := e.runSegment(ctx, warm, dir[0], 0, 1)
		e.phases = phases
		if err != nil {
			return nil, err
		}
		wm, err := e.measure(warm, dir)
		if err != nil {
			return nil, err
		}
		if wm.CPUSeconds > 0 {
			warmSaturation = wm.Load.All.Throughput / wm.CPUSeconds
		}
		// The reference in the middle of the load levels, wherever this
		// machine puts them: a fixed rate of 50 requests/s was 40 % of a
		// core on one machine and 20 % on one twice as fast.
		if !flagSet("ref-rate") && warmSaturation > 0 {
			ref.Rate = referenceRate(o.refLoad, warmSaturation)
		}
	}
	// Round 1 opens with the reference, whose first segment sets the
	// other configurations' rates.
	refDirs := e.segments(ref.Name)
	if err := e.runSegment(ctx, ref, refDirs[0], 0, len(refDirs)); err != nil {
		return nil, err
	}
	first, err := e.measure(ref, refDirs[:1])
	if err != nil {
		return nil, err
	}
	// Load levels as fractions of the rate that would keep the services'
	// CPU busy, at the dearer CPU time per request of the warm-up and the
	// reference's first segment.
	firstSaturation := first.Load.All.Throughput / first.CPUSeconds
	saturation := saturationRate(firstSaturation, warmSaturation)
	slog.Info("reference", "cpu_per_request", 1/saturation, "saturation_rate", saturation)
	at := func(f float64) float64 { return f * saturation }
	// The coarse lock saturates before the CPU when orders are frequent
	// enough: keep the two-core run below 70 % of the lock, by a model of
	// the first segment.
	firstX, err := extractModel(ctx, refDirs[:1], ref, o.extraction(), true)
	if err != nil {
		return nil, err
	}
	refPred, err := predict(ctx, firstX.Model, ref, e.mix, o.requests, 1)
	if err != nil {
		return nil, err
	}
	twoCores := at(1.2)
	if lk := refPred.Resources[lockResource]; lk != nil && lk.Utilization > 0 {
		twoCores = min(twoCores, 0.7*ref.Rate/lk.Utilization)
	}
	// The load generator's CPU time per request in the reference run,
	// where it has CPU 0 to itself.
	generatorCPU := 0.0
	if first.Load.Sent > 0 {
		generatorCPU = first.Load.CPUSeconds / float64(first.Load.Sent)
	}
	var setups []setup
	for _, f := range []float64{0.2, 0.4, 0.6, 0.8} {
		s := ref
		s.Name, s.Rate, s.Steady = fmt.Sprintf("load-%02.0f", f*100), at(f), 0
		s.What = fmt.Sprintf("%.0f %% of the reference's CPU saturation rate", f*100)
		setups = append(setups, s)
	}
	g2 := ref
	g2.Name, g2.Rate, g2.GOMAXPROCS, g2.Steady = "gomaxprocs-2", at(0.6), 2, 0
	g2.What = "GOMAXPROCS 2 on the same single CPU (model: 2 CPU slots per service, 1 core)"
	setups = append(setups, g2)
	if e.pin {
		c2 := ref
		c2.Name, c2.Rate, c2.GOMAXPROCS, c2.Cores, c2.ModelCores, c2.Steady = "cores-2", twoCores, 2, "0,1", 2, 0
		c2.What = fmt.Sprintf("2 CPUs, GOMAXPROCS 2, %.0f %% of the 1-CPU saturation rate (the load generator shares CPU 0; model: its CPU time per request in the reference run, %.2f ms, as a load on the host)", 100*twoCores/saturation, 1000*generatorCPU)
		c2.GeneratorCPU = generatorCPU
		setups = append(setups, c2)
	}
	p2 := ref
	p2.Name, p2.Rate, p2.Pool, p2.Steady = "pool-2", at(0.6), 2, 0
	p2.What = "fan-out pool of 2 workers instead of 8"
	nl := ref
	nl.Name, nl.Rate, nl.CoarseLock, nl.Steady = "no-coarse-lock", at(0.8), false, 0
	nl.What = "the stock mutex no longer held across the payment call (compare load-80)"
	nc := ref
	nc.Name, nc.SpanCPU, nc.Steady = "span-cpu-off", false, 0
	nc.What = "per-span CPU time off, reference rate (shows the instrumentation's cost)"
	// The reference's configuration once more, measured as long as the
	// others: the same code, rate and seeds, so its errors are the
	// machine's drift alone.
	again := ref
	again.Name, again.Steady = "repeat", 0
	again.What = "the reference's configuration again (same code, rate and seeds, other times): what a perfect model would be off by"
	setups = append(setups, p2, nl, nc, again)
	if o.only != "" {
		keep := strings.Split(o.only, ",")
		setups = slices.DeleteFunc(setups, func(s setup) bool { return !slices.Contains(keep, s.Name) })
	}

	// With -steps extraction reads, besides the reference, a low and a
	// high load in fresh processes of the reference's configuration, a
	// segment of each per round, so that it sees how the CPU time of the
	// same work changes with the load.
	ref.Extraction = true
	var steps []setup
	if o.steps {
		low, high := stepRates(saturation)
		for _, st := range []struct {
			name string
			rate float64
		}{{"steps-low", low}, {"steps-high", high}} {
			s := ref
			s.Name, s.Rate = st.name, st.rate
			s.What = fmt.Sprintf("load step for extraction at %.1f requests/s", st.rate)
			s.Steady = time.Duration(e.rounds) * stepSteady
			if o.quick {
				s.Steady = e.phases.Steady
			}
			steps = append(steps, s)
		}
	}

	type row struct {
		s        setup
		m        *measured
		pred     *predicted
		adjusted *predicted
		speed    float64
	}
	rows := []row{{s: ref}}
	for _, s := range setups {
		rows = append(rows, row{s: s})
	}
	// Every configuration runs in rounds, one segment each, in a shuffled
	// order per round (the reference first in the first), so that the
	// machine's drift over the invocation falls alike on all of them and
	// does not line up with the load levels; the report lists the order.
	// The load steps, when run, are the last in the schedule. Two runs
	// extraction reads one right after the other would be one stretch of
	// traces to it, so a pause keeps them apart.
	sched := make([]setup, 0, len(rows)+len(steps))
	for _, r := range rows {
		sched = append(sched, r.s)
	}
	sched = append(sched, steps...)
	var order [][]string
	prev := true // the reference's first segment
	for r, round := range roundOrder(len(sched), e.rounds, e.seed) {
		var names []string
		for _, i := range round {
			names = append(names, sched[i].Name)
			if r == 0 && i == 0 {
				continue // ran above
			}
			s := sched[i]
			if s.Extraction && prev && !e.reuse {
				if err := sleep(ctx, extractionPause); err != nil {
					return nil, err
				}
			}
			prev = s.Extraction
			if err := e.runSegment(ctx, s, e.segments(s.Name)[r], r, e.rounds); err != nil {
				return nil, err
			}
		}
		order = append(order, names)
	}
	for i := range rows {
		m, err := e.measure(rows[i].s, e.segments(rows[i].s.Name))
		if err != nil {
			return nil, err
		}
		if m.Calls, err = callTimes(ctx, m.Dirs, m.Parts); err != nil {
			return nil, err
		}
		rows[i].m = m
		// Runs reused from an invocation whose rates were set otherwise
		// are predicted at the rate they ran at.
		if r := m.Parts[0].Rate; e.reuse && r > 0 && math.Abs(r-rows[i].s.Rate) > 1e-4*r { // load.json rounds rates to 1e-3
			slog.Warn("reuse: the runs ran at another rate than this invocation sets", "run", rows[i].s.Name, "ran", r, "set", rows[i].s.Rate)
			rows[i].s.Rate = r
		}
	}
	refM := rows[0].m
	refDirs = refM.Dirs
	var stepM []*measured
	for _, st := range steps {
		m, err := e.measure(st, e.segments(st.Name))
		if err != nil {
			return nil, err
		}
		stepM = append(stepM, m)
		refDirs = append(slices.Clip(refDirs), m.Dirs...)
	}
	refX, err := extractModel(ctx, refDirs, ref, o.extraction(), true)
	if err != nil {
		return nil, err
	}
	var gaps, fixedGaps map[string]float64
	if o.clientGap {
		if gaps, err = clientGaps(ctx, refM.Dirs, refM.Parts, refM.Load); err != nil {
			return nil, err
		}
		if fixedGaps, err = lessModeled(ctx, refX.Model, ref, e.mix, o.requests, gaps); err != nil {
			return nil, err
		}
		addClientDelays(refX.Model, fixedGaps)
	}
	if err := saveModel(filepath.Join(e.work, "reference-model.yaml"), refX.Model, ref); err != nil {
		return nil, err
	}
	if err := saveJSON(filepath.Join(e.work, "reference-extraction.json"), refX.Report); err != nil {
		return nil, err
	}
	perRequest := refM.CPUSeconds / refM.Load.All.Throughput
	var spans, busy float64
	for _, c := range refX.Report.CPUCoverage {
		if c.Host == hostName && c.Skipped == "" {
			spans, busy = spans+c.Spans, busy+c.Measured
		}
	}
	spanShare := 0.0
	if busy > 0 {
		spanShare = spans / busy
	}
	loadAfter, _ := loadAverage()
	// Predictions after all runs, so that solving does not disturb them.
	for i := range rows {
		p, err := predictFrom(ctx, refX.Model, rows[i].s, e.mix, o.requests, 1)
		if err != nil {
			return nil, err
		}
		rows[i].pred = p
		// Each configuration's model beside its runs, for perfcast predict.
		if err := writeModel(filepath.Join(e.work, rows[i].s.Name, "model.yaml"), p.model); err != nil {
			return nil, err
		}
		// A diagnostic: the runs on the reference's code path predicted
		// again with the CPU speed each run had (its CPU time per request
		// against the reference's), which takes the machine's drift out
		// of the response-time errors.
		s, m := rows[i].s, rows[i].m
		if s.Name != ref.Name && sameCodePath(s, ref) && m.Load.All.Throughput > 0 && m.CPUSeconds > 0 {
			speed := perRequest / (m.CPUSeconds / m.Load.All.Throughput)
			a, err := predictFrom(ctx, refX.Model, s, e.mix, o.requests, speed)
			if err != nil {
				return nil, err
			}
			rows[i].adjusted, rows[i].speed = a, speed
		}
	}
	// The model extracted from the run without span CPU time (own time
	// taken as CPU demand), predicting the heaviest load level.
	var extra []row
	ncIdx := slices.IndexFunc(rows, func(r row) bool { return r.s.Name == "span-cpu-off" })
	heavy := slices.IndexFunc(rows, func(r row) bool { return r.s.Name == "load-80" })
	if ncIdx >= 0 && heavy >= 0 {
		ncX, err := extractModel(ctx, rows[ncIdx].m.Dirs, rows[ncIdx].s, o.extraction(), true)
		if err != nil {
			return nil, err
		}
		// And from its traces alone, as a user without metrics has it.
		ncT, err := extractModel(ctx, rows[ncIdx].m.Dirs, rows[ncIdx].s, o.extraction(), false)
		if err != nil {
			return nil, err
		}
		if o.clientGap {
			g, err := clientGaps(ctx, rows[ncIdx].m.Dirs, rows[ncIdx].m.Parts, rows[ncIdx].m.Load)
			if err != nil {
				return nil, err
			}
			gx, err := lessModeled(ctx, ncX.Model, rows[ncIdx].s, e.mix, o.requests, g)
			if err != nil {
				return nil, err
			}
			gt, err := lessModeled(ctx, ncT.Model, rows[ncIdx].s, e.mix, o.requests, g)
			if err != nil {
				return nil, err
			}
			addClientDelays(ncX.Model, gx)
			addClientDelays(ncT.Model, gt)
		}
		// Kept beside the reference's, to compare the two extractions.
		if err := saveModel(filepath.Join(e.work, "span-cpu-off-model.yaml"), ncX.Model, rows[ncIdx].s); err != nil {
			return nil, err
		}
		if err := saveJSON(filepath.Join(e.work, "span-cpu-off-extraction.json"), ncX.Report); err != nil {
			return nil, err
		}
		p, err := predictFrom(ctx, ncX.Model, rows[heavy].s, e.mix, o.requests, 1)
		if err != nil {
			return nil, err
		}
		r := rows[heavy]
		r.s.Name = "load-80 from span-cpu-off model"
		r.s.What = "load-80 predicted by the model extracted from the run without span CPU time"
		r.pred, r.adjusted = p, nil
		extra = append(extra, r)
		if err := saveModel(filepath.Join(e.work, "span-cpu-off-traces-model.yaml"), ncT.Model, rows[ncIdx].s); err != nil {
			return nil, err
		}
		if p, err = predictFrom(ctx, ncT.Model, rows[heavy].s, e.mix, o.requests, 1); err != nil {
			return nil, err
		}
		r = rows[heavy]
		r.s.Name = "load-80 from span-cpu-off traces alone"
		r.s.What = "load-80 predicted by the model extracted from the run without span CPU time, its traces alone (no metrics)"
		r.pred, r.adjusted = p, nil
		extra = append(extra, r)
	}
	rep := &report{
		quick: o.quick, reused: e.reuse, started: started, elapsed: time.Since(started),
		loadBefore: loadBefore, loadAfter: loadAfter, busyBefore: busyBefore, pinned: e.pin,
		phases: e.phases, mix: e.mix, saturation: saturation, firstSaturation: firstSaturation, warmSaturation: warmSaturation, perRequest: perRequest, spanShare: spanShare,
		warnings: refX.Report.Warnings, order: order, steps: stepM, curves: refX.Report.SpeedCurves, ref: refX.Model,
		gaps: gaps, fixedGaps: fixedGaps, outside: o.outside, steadyOnly: o.steadyOnly, slice: o.slice, sliceFrom: o.sliceFrom, refMean: refM.Load.All.Mean, rounds: e.rounds,
	}
	for _, r := range append(rows, extra...) {
		rep.rows = append(rep.rows, reportRow{setup: r.s, measured: r.m, predicted: r.pred, adjusted: r.adjusted, speed: r.speed})
	}
	return rep, nil
}

// The markers around the report in a document that holds more than the
// report.
const (
	beginReport = "<!-- begin: generated by go run ./examples/testbed/experiment -->"
	endReport   = "<!-- end: generated -->"
)

// writeReport puts report between the markers begin and end of the file
// at path, leaving the rest of it alone; a file without them gets the
// section at its end, and a missing file is made of the section alone.
func writeReport(path string, report []byte, begin, end string) error {
	doc, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	i, j := bytes.Index(doc, []byte(begin)), bytes.Index(doc, []byte(end))
	var b bytes.Buffer
	switch {
	case i >= 0 && j > i:
		b.Write(doc[:i])
	case i >= 0 || j >= 0:
		return fmt.Errorf("%s: the markers of the generated section (%q, %q) are out of order or one is missing", path, begin, end)
	case len(doc) > 0:
		b.Write(doc)
		if !bytes.HasSuffix(doc, []byte("\n")) {
			b.WriteString("\n")
		}
		b.WriteString("\n")
	}
	b.WriteString(begin + "\n\n")
	b.Write(report)
	b.WriteString(end)
	if i >= 0 {
		b.Write(doc[j+len(end):])
	} else {
		b.WriteString("\n")
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// madeRounds tells in how many rounds the configuration in dir ran: 1 when
// its result is in dir itself, else the number of round-K directories with
// one, 0 when it has not run.
func madeRounds(dir string) int {
	if _, err := os.Stat(filepath.Join(dir, "load.json")); err == nil {
		return 1
	}
	n := 0
	for {
		if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("round-%d", n+1), "load.json")); err != nil {
			return n
		}
		n++
	}
}

// roundOrder is the order of n configurations (0 the reference) in each
// of the rounds: shuffled by seed, the reference first in the first round,
// whose first segment sets the others' rates.
func roundOrder(n, rounds int, seed uint64) [][]int {
	out := make([][]int, rounds)
	for r := range out {
		order := make([]int, n)
		for i := range order {
			order[i] = i
		}
		shuffled := order
		if r == 0 && n > 0 {
			shuffled = order[1:]
		}
		rng := rand.New(rand.NewPCG(seed, 3+uint64(r)))
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		out[r] = order
	}
	return out
}

// sameCodePath tells whether s runs the code of the reference r on the
// same CPUs with the same GOMAXPROCS and instrumentation, so that its CPU
// time per request differs from r's only by the machine's drift.
func sameCodePath(s, r setup) bool {
	return s.GOMAXPROCS == r.GOMAXPROCS && s.Cores == r.Cores && s.ModelCores == r.ModelCores && s.SpanCPU == r.SpanCPU
}

// datasetConfig is the extraction configuration of the example data set:
// what the traces do not say about the run.
const datasetConfig = `# What the testbed's traces do not say: the services ran on one CPU,
# each with GOMAXPROCS 1.
hosts:
  testbed: {cores: 1}
cpu_slots:
  "*": 1
`

func (e *env) makeDataset(ctx context.Context, dir string, o options) error {
	e.phases = loadgen.Phases{RampUp: 5 * time.Second, Steady: 90 * time.Second, RampDown: 2 * time.Second}
	e.rounds = 1
	s := reference(25, e.pin)
	s.Name = "dataset"
	m, err := e.run(ctx, s)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// One gzipped OTLP JSON lines file: the services' files one after
	// the other.
	tracesOut := filepath.Join(dir, "testbed-traces.otlp.jsonl.gz")
	f, err := os.Create(tracesOut)
	if err != nil {
		return err
	}
	zw, _ := gzip.NewWriterLevel(f, gzip.BestCompression)
	for _, svc := range services {
		in, err := os.Open(filepath.Join(m.Dirs[0], svc+".otlp.jsonl"))
		if err != nil {
			f.Close()
			return err
		}
		_, err = io.Copy(zw, in)
		in.Close()
		if err != nil {
			f.Close()
			return err
		}
	}
	if err := zw.Close(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := serviceMetrics(filepath.Join(dir, "testbed-metrics.csv"), nil, m.Dirs...); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "testbed-config.yaml"), []byte(datasetConfig), 0o644); err != nil {
		return err
	}
	slog.Info("dataset", "traces", tracesOut, "throughput", m.Load.All.Throughput, "cpu", m.CPU)
	return os.WriteFile(filepath.Join(dir, "testbed-load.json"), mustJSON(m.Load), 0o644)
}

// serviceMetrics writes the services' CPU time in the segments in dirs as
// one metrics CSV with a service column: each process's cumulative CPU
// seconds, once a second, as its sampler read them (a new process starts
// again from 0: a counter restart). With steady (the segments' load
// generator results, in the order of dirs), only the samples of each
// segment's steady phase (steadyPhase) are written.
func serviceMetrics(path string, steady []*loadgen.Result, dirs ...string) error {
	var b strings.Builder
	b.WriteString("timestamp,host,service,cpu_seconds\n")
	for _, svc := range services {
		for k, dir := range dirs {
			s, err := readCPU(filepath.Join(dir, svc+".csv"))
			if err != nil {
				return err
			}
			for i := range s.t {
				if steady != nil {
					if from, to := steadyPhase(steady[k]); s.t[i].Before(from) || s.t[i].After(to) {
						continue
					}
				}
				fmt.Fprintf(&b, "%s,%s,%s,%.6f\n", s.t[i].UTC().Format(time.RFC3339Nano), s.host, svc, s.cpu[i])
			}
		}
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
