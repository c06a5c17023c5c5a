package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/perfcast/perfcast/examples/testbed/cpusampler"
	"github.com/perfcast/perfcast/examples/testbed/loadgen"
	"github.com/perfcast/perfcast/examples/testbed/shop"
)

// hostName is the host.name every service reports: one machine.
const hostName = "testbed"

// services in the order they start (dependencies first).
var services = []string{"payments", "catalog", "orders", "gateway"}

// setup is how one run deploys the shop and loads it.
type setup struct {
	Name string
	// What the configuration changes, for the report.
	What       string
	Rate       float64
	GOMAXPROCS int
	// Cores lists the CPUs the services run on (taskset -c), "" for no
	// pinning; ModelCores is what the model is told.
	Cores      string
	ModelCores int
	Pool       int
	CoarseLock bool
	SpanCPU    bool
	// GeneratorCPU is the load generator's CPU time per request when it
	// shares the services' CPUs (the model then carries it), else 0.
	GeneratorCPU float64
	// Steady is the measured time over all the setup's segments (0: the
	// experiment's steady phase).
	Steady time.Duration
	// Extraction tells whether extraction reads the setup's traces (the
	// reference and its load steps).
	Extraction bool
}

// measured is what the segments of one setup measured together.
type measured struct {
	// Load is the load generator's result over all segments, Parts each
	// segment's, in the order of Dirs.
	Load  *loadgen.Result
	Parts []*loadgen.Result
	// CPU is the services' CPU utilization over the steady phases, a
	// fraction of ModelCores.
	CPU float64
	// CPUSeconds is the services' CPU time per second of the steady
	// phases; PartPerRequest each segment's CPU time per request.
	CPUSeconds     float64
	PartPerRequest []float64
	// PartCPU is each segment's CPU utilization, a fraction of ModelCores.
	PartCPU []float64
	// Dirs hold the segments' files.
	Dirs []string
	// Other is the CPU time per second of the steady phases that other
	// processes took on the services' CPUs, over the segments with machine
	// samples (OtherSteady seconds of them, OtherSeconds in all);
	// PartOther each such segment's.
	Other, OtherSeconds, OtherSteady float64
	PartOther                        []float64
	// PartSteal is, per segment with steal samples, the time the
	// hypervisor took from the services' CPUs per second of its steady
	// phase (NaN for a segment without them).
	PartSteal []float64
	// ServiceCPU and ServiceWait are, per service, its CPU time and the
	// time its threads waited in the run queue for a CPU, per second of
	// the steady phases of the segments with wait samples.
	ServiceCPU, ServiceWait map[string]float64
	// ServiceProcs is, per service, the mean number of its Go runtime's
	// processors held over the steady phases of the segments with
	// processor samples.
	ServiceProcs map[string]float64
	// Calls is, per operation called over the network, what the traces
	// measured of its calls (callTimes).
	Calls map[string]*callTime
}

// env is what every run shares.
type env struct {
	bin, work   string
	baseCatalog string
	baseOrders  string
	pin         bool
	phases      loadgen.Phases
	mix         map[string]float64
	small       bool
	seed        uint64
	// reuse takes the measurements of runs already in work instead of
	// running them again.
	reuse bool
	// rounds is the number of segments each setup's measurement is cut
	// into, one per round of the experiment.
	rounds int
}

// segments are the directories of the setup's segments: work/NAME with a
// single round, work/NAME/round-K with several.
func (e *env) segments(name string) []string {
	dir := filepath.Join(e.work, name)
	if e.rounds <= 1 {
		return []string{dir}
	}
	out := make([]string, e.rounds)
	for r := range out {
		out[r] = filepath.Join(dir, fmt.Sprintf("round-%d", r+1))
	}
	return out
}

// waitAddr waits for a service to write the address it listens on to
// path, and returns it; it gives up after two minutes, as waitHealthy does.
func waitAddr(ctx context.Context, path string) (string, error) {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if b, err := os.ReadFile(path); err == nil {
			if a := strings.TrimSpace(string(b)); a != "" {
				return a, nil
			}
		}
		if time.Now().After(deadline) {
			return "", errors.New("no address after 2 minutes")
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// The files of a segment's copies of the catalog's and the orders'
// databases.
const (
	catalogDBFile = "catalog.db"
	ordersDBFile  = "orders.db"
)

// removeDatabases deletes a finished segment's copies of the databases,
// and any journal SQLite left beside them. They were the run's scratch,
// not its measurements (traces, metrics, load.json), and held most of a
// work dir's bytes: about 20 of a segment's 24 MB, 1.9 GB of a full
// invocation's work dir.
func removeDatabases(dir string) error {
	var errs []error
	for _, db := range []string{catalogDBFile, ordersDBFile} {
		for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
			if err := os.Remove(filepath.Join(dir, db+suffix)); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

func copyFile(dst, src string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// command returns the command running bin with args, pinned to cpus when
// cpus is set.
func (e *env) command(cpus string, args ...string) *exec.Cmd {
	if cpus != "" && e.pin {
		return exec.Command("taskset", append([]string{"-c", cpus, e.bin}, args...)...)
	}
	return exec.Command(e.bin, args...)
}

// load returns the load generator's command: the mix at rate against the
// gateway at url, in phases, its result written to out (with every
// steady-phase request when keep is set, for merging); pinned to CPU 0,
// GOMAXPROCS 1.
func (e *env) load(url string, rate float64, phases loadgen.Phases, seed uint64, out string, keep bool) *exec.Cmd {
	cmd := e.command("0", "load", "-url", url, "-rate", strconv.FormatFloat(rate, 'f', 3, 64),
		"-ramp-up", phases.RampUp.String(), "-steady", phases.Steady.String(), "-ramp-down", phases.RampDown.String(),
		"-mix", shop.FormatMix(e.mix), "-seed", strconv.FormatUint(seed, 10), "-o", out)
	if e.small {
		cmd.Args = append(cmd.Args, "-small")
	}
	if keep {
		cmd.Args = append(cmd.Args, "-keep-requests")
	}
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
	return cmd
}

// runSegment deploys the shop as s says, runs segment seg of n of its load
// (its share of the steady phase), stops the shop, and leaves the
// segment's files in dir. With reuse, a segment whose
// result is already there is not run again; one that is missing (an
// interrupted invocation, or one made before the configuration existed)
// runs now, with a warning, since its measurements then come from another
// time than the others'.
func (e *env) runSegment(ctx context.Context, s setup, dir string, seg, n int) error {
	if e.reuse {
		if _, err := os.Stat(filepath.Join(dir, "load.json")); err == nil {
			slog.Info("reuse", "run", s.Name, "dir", dir)
			return nil
		}
		slog.Warn("reuse: no measurement here, running it now", "run", s.Name, "dir", dir)
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// Fresh copies of the seeded databases: every run starts alike.
	for _, f := range [][2]string{{catalogDBFile, e.baseCatalog}, {ordersDBFile, e.baseOrders}} {
		if err := copyFile(filepath.Join(dir, f[0]), f[1]); err != nil {
			return fmt.Errorf("%s: copy database: %w", s.Name, err)
		}
	}
	// Each service listens on a port of its own choosing and says which
	// in a file: ports picked here and handed over could be taken in
	// between (by an outgoing connection's local port, say).
	addr := map[string]string{}
	url := func(svc string) string { return "http://" + addr[svc] }
	// The busy time of the services' CPUs, sampled like theirs: less
	// their CPU time (and the load generator's, where it shares them), it
	// is what else ran there.
	stopMachine, err := sampleMachine(filepath.Join(dir, machineFile), filepath.Join(dir, stealFile), s.Cores)
	if err != nil {
		return fmt.Errorf("%s: %w", s.Name, err)
	}
	defer func() {
		if err := stopMachine(); err != nil {
			slog.Warn("machine CPU samples", "run", s.Name, "err", err)
		}
	}()
	var procs []*exec.Cmd
	stopAll := func() error {
		var errs []error
		// Stop the front first, so that nothing calls a stopped service.
		for i := len(procs) - 1; i >= 0; i-- {
			p := procs[i]
			p.Process.Signal(syscall.SIGTERM)
			done := make(chan error, 1)
			go func() { done <- p.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					errs = append(errs, fmt.Errorf("%s: %s: %w", s.Name, p.Args, err))
				}
			case <-time.After(30 * time.Second):
				p.Process.Kill()
				<-done
				errs = append(errs, fmt.Errorf("%s: %s did not stop in 30 s", s.Name, p.Args))
			}
		}
		return errors.Join(errs...)
	}
	for _, svc := range services {
		addrFile := filepath.Join(dir, svc+".addr")
		args := []string{svc, "-listen", "127.0.0.1:0", "-addr-file", addrFile, "-host", hostName, "-instance", svc,
			"-traces", filepath.Join(dir, svc+".otlp.jsonl"), "-metrics", filepath.Join(dir, svc+".csv"),
			"-span-cpu=" + strconv.FormatBool(s.SpanCPU),
			"-procs-busy", filepath.Join(dir, procsFile(svc)), "-procs-total", filepath.Join(dir, procsTotalFile(svc))}
		switch svc {
		case "catalog":
			args = append(args, "-db", filepath.Join(dir, catalogDBFile))
		case "orders":
			args = append(args, "-db", filepath.Join(dir, ordersDBFile), "-payments", url("payments"),
				"-coarse-lock="+strconv.FormatBool(s.CoarseLock))
		case "gateway":
			args = append(args, "-catalog", url("catalog"), "-orders", url("orders"), "-pool", strconv.Itoa(s.Pool))
		}
		if e.small {
			args = append(args, "-small")
		}
		cmd := e.command(s.Cores, args...)
		cmd.Env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(s.GOMAXPROCS))
		logf, err := os.Create(filepath.Join(dir, svc+".log"))
		if err != nil {
			return err
		}
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			logf.Close()
			stopAll()
			return fmt.Errorf("%s: start %s: %w", s.Name, svc, err)
		}
		logf.Close()
		procs = append(procs, cmd)
		a, err := waitAddr(ctx, addrFile)
		if err != nil {
			stopAll()
			return fmt.Errorf("%s: %s: %w (see %s)", s.Name, svc, err, logf.Name())
		}
		addr[svc] = a
		if err := waitHealthy(ctx, url(svc)+"/healthz"); err != nil {
			stopAll()
			return fmt.Errorf("%s: %s: %w (see %s)", s.Name, svc, err, logf.Name())
		}
	}
	pids := map[string]*os.Process{}
	for i, svc := range services {
		pids[svc] = procs[i].Process
	}
	stopWaits, err := sampleWaits(dir, pids)
	if err != nil {
		stopAll()
		return fmt.Errorf("%s: %w", s.Name, err)
	}
	phases := e.phases
	phases.Steady = s.Steady
	if phases.Steady == 0 {
		phases.Steady = e.phases.Steady
	}
	phases.Steady /= time.Duration(n)
	// The same seeds in the same round for every setup: their arrivals
	// differ only by the rate.
	seed := e.seed + 1000*uint64(seg)
	slog.Info("load", "run", s.Name, "segment", fmt.Sprintf("%d/%d", seg+1, n), "rate", fmt.Sprintf("%.1f/s", s.Rate), "steady", phases.Steady)
	out, loadErr := e.load(url("gateway"), s.Rate, phases, seed, filepath.Join(dir, "load.json"), n > 1).CombinedOutput()
	if err := stopWaits(); err != nil {
		slog.Warn("run-queue wait samples", "run", s.Name, "err", err)
	}
	stopErr := stopAll()
	if err := removeDatabases(dir); err != nil {
		slog.Warn("remove the run's databases", "run", s.Name, "err", err)
	}
	if loadErr != nil {
		return fmt.Errorf("%s: load generator: %w: %s", s.Name, loadErr, strings.TrimSpace(string(out)))
	}
	return stopErr
}

// machineFile holds a segment's samples of the busy time of the CPUs the
// services ran on, stealFile of the time the hypervisor took from them.
const (
	machineFile = "machine-cpu.csv"
	stealFile   = "machine-steal.csv"
)

// sampleMachine samples, once a second into the files busy and steal,
// the busy time of the CPUs in the taskset list cpus (all of them when
// empty) and the time stolen from them, until the returned function is
// called.
func sampleMachine(busy, steal, cpus string) (stop func() error, err error) {
	var list []int
	for _, f := range strings.FieldsFunc(cpus, func(r rune) bool { return r == ',' }) {
		c, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("CPU list %q: %w", cpus, err)
		}
		list = append(list, c)
	}
	return sampleClocks([]clockProbe{
		{busy, func() (time.Duration, error) { return cpusampler.CPUsBusy(list...) }},
		{steal, func() (time.Duration, error) { return cpusampler.CPUsStolen(list...) }},
	})
}

// procsFile and procsTotalFile name the files that hold a service's
// samples of the time its Go runtime's processors were busy and there
// (cpusampler.ProcessorsBusy and ProcessorsTotal).
func procsFile(svc string) string      { return svc + "-procs.csv" }
func procsTotalFile(svc string) string { return svc + "-procs-total.csv" }

// waitFile names the file that holds a service's samples of the time its
// threads waited for a CPU (cpusampler.RunDelay).
func waitFile(svc string) string { return svc + "-wait.csv" }

// sampleWaits samples, once a second into each service's waitFile in dir,
// the time the threads of the processes procs (by service) have waited
// for a CPU, until the returned function is called. Where the kernel
// keeps no such count it samples nothing and says so.
func sampleWaits(dir string, procs map[string]*os.Process) (stop func() error, err error) {
	var probes []clockProbe
	for _, svc := range slices.Sorted(maps.Keys(procs)) {
		pid := procs[svc].Pid
		if _, err := cpusampler.RunDelay(pid); err != nil {
			slog.Warn("no run-queue waits", "service", svc, "err", err)
			continue
		}
		probes = append(probes, clockProbe{filepath.Join(dir, waitFile(svc)), func() (time.Duration, error) { return cpusampler.RunDelay(pid) }})
	}
	return sampleClocks(probes)
}

// clockProbe is a cumulative clock and the file its samples go to.
type clockProbe struct {
	path  string
	clock func() (time.Duration, error)
}

// sampleClocks samples each probe's clock once a second into its file,
// in cpusampler's CSV, until the returned function is called; it fails if
// a clock cannot be read at the start.
func sampleClocks(probes []clockProbe) (stop func() error, err error) {
	ctx, cancel := context.WithCancel(context.Background())
	var files []*os.File
	done := make(chan error, len(probes))
	stop = func() error {
		cancel()
		var errs []error
		for range files {
			errs = append(errs, <-done)
		}
		for _, f := range files {
			errs = append(errs, f.Close())
		}
		return errors.Join(errs...)
	}
	for _, p := range probes {
		if _, err := p.clock(); err != nil {
			return nil, errors.Join(err, stop())
		}
		f, err := os.Create(p.path)
		if err != nil {
			return nil, errors.Join(err, stop())
		}
		files = append(files, f)
		go func() {
			done <- cpusampler.RunClock(ctx, f, hostName, time.Second, p.clock)
		}()
	}
	return stop, nil
}

// run runs all of s's segments one after the other and measures them.
func (e *env) run(ctx context.Context, s setup) (*measured, error) {
	dirs := e.segments(s.Name)
	for i, dir := range dirs {
		if err := e.runSegment(ctx, s, dir, i, len(dirs)); err != nil {
			return nil, err
		}
	}
	return e.measure(s, dirs)
}

// readLoad reads a load generator's result.
func readLoad(path string) (*loadgen.Result, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var res loadgen.Result
	if err := json.Unmarshal(data, &res); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &res, nil
}

// measure reads what the segments of s in dirs measured: the load
// generator's results, merged, and the services' CPU time over the steady
// phases.
func (e *env) measure(s setup, dirs []string) (*measured, error) {
	m := &measured{Dirs: dirs}
	cpuSec, steady := 0.0, 0.0
	svcCPU, svcWait, svcSteady := map[string]float64{}, map[string]float64{}, map[string]float64{}
	procsBusy, procsTotal := map[string]float64{}, map[string]float64{}
	for _, dir := range dirs {
		res, err := readLoad(filepath.Join(dir, "load.json"))
		if err != nil {
			return nil, err
		}
		used := 0.0
		for _, svc := range services {
			series, err := readCPU(filepath.Join(dir, svc+".csv"))
			if err != nil {
				return nil, err
			}
			u, err := series.between(res.SteadyStart, res.SteadyEnd)
			if err != nil {
				return nil, fmt.Errorf("%s: %s metrics: %w", s.Name, svc, err)
			}
			used += u
			if wait, ok := waited(dir, svc, res); ok {
				svcCPU[svc] += u
				svcWait[svc] += wait
				svcSteady[svc] += res.SteadySeconds
			}
			if busy, total, ok := held(dir, svc, res); ok {
				procsBusy[svc] += busy
				procsTotal[svc] += total
			}
		}
		per := math.NaN()
		if n := res.All.Count; n > 0 {
			per = used / float64(n)
		}
		run := (e.phases.RampUp + e.phases.RampDown).Seconds() + res.SteadySeconds
		// Unpinned, or in the two-CPU run, the load generator shares the
		// services' CPUs.
		shared := s.GeneratorCPU > 0 || !e.pin
		if other, ok := otherWork(dir, res, used, shared, run); ok {
			m.OtherSeconds += other
			m.OtherSteady += res.SteadySeconds
			m.PartOther = append(m.PartOther, other/res.SteadySeconds)
		}
		m.PartSteal = append(m.PartSteal, stolen(dir, res))
		m.Parts, m.PartPerRequest = append(m.Parts, res), append(m.PartPerRequest, per)
		if res.SteadySeconds > 0 {
			m.PartCPU = append(m.PartCPU, used/res.SteadySeconds/float64(s.ModelCores))
		}
		cpuSec, steady = cpuSec+used, steady+res.SteadySeconds
	}
	m.Load = m.Parts[0]
	if len(m.Parts) > 1 {
		merged, err := loadgen.Merge(m.Parts...)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.Name, err)
		}
		m.Load = merged
	}
	m.CPUSeconds = cpuSec / steady
	if m.OtherSteady > 0 {
		m.Other = m.OtherSeconds / m.OtherSteady
	}
	m.CPU = m.CPUSeconds / float64(s.ModelCores)
	for svc, t := range svcSteady {
		if t > 0 {
			if m.ServiceCPU == nil {
				m.ServiceCPU, m.ServiceWait = map[string]float64{}, map[string]float64{}
			}
			m.ServiceCPU[svc], m.ServiceWait[svc] = svcCPU[svc]/t, svcWait[svc]/t
		}
	}
	for svc, total := range procsTotal {
		if total > 0 {
			if m.ServiceProcs == nil {
				m.ServiceProcs = map[string]float64{}
			}
			m.ServiceProcs[svc] = float64(s.GOMAXPROCS) * procsBusy[svc] / total
		}
	}
	return m, nil
}

// held is the time service svc's Go processors were busy and there over a
// segment's steady phase, as far as the runtime's figures, which move at
// garbage collections, tell; false for a segment without processor samples
// or without a collection inside its steady phase.
func held(dir, svc string, res *loadgen.Result) (busy, total float64, ok bool) {
	b, err := readCPU(filepath.Join(dir, procsFile(svc)))
	if err != nil {
		return 0, 0, false
	}
	a, err := readCPU(filepath.Join(dir, procsTotalFile(svc)))
	if err != nil {
		return 0, 0, false
	}
	busy, err = b.between(res.SteadyStart, res.SteadyEnd)
	if err != nil {
		return 0, 0, false
	}
	total, err = a.between(res.SteadyStart, res.SteadyEnd)
	if err != nil || !(total > 0) {
		return 0, 0, false
	}
	return busy, total, true
}

// waited is the time service svc's threads waited for a CPU over a
// segment's steady phase; false for a segment without wait samples.
func waited(dir, svc string, res *loadgen.Result) (float64, bool) {
	series, err := readCPU(filepath.Join(dir, waitFile(svc)))
	if err != nil {
		return 0, false
	}
	w, err := series.between(res.SteadyStart, res.SteadyEnd)
	if err != nil {
		return 0, false
	}
	return w, true
}

// otherWork is the CPU time that neither the services (used) nor, where
// it shares their CPUs (shared), the load generator took on the services'
// CPUs over a segment's steady phase; false for segments run without
// machine samples. The load generator's CPU time is known over its whole
// run only (run seconds) and is taken in proportion to the steady phase's
// length.
func otherWork(dir string, res *loadgen.Result, used float64, shared bool, run float64) (float64, bool) {
	series, err := readCPU(filepath.Join(dir, machineFile))
	if err != nil {
		return 0, false
	}
	busy, err := series.between(res.SteadyStart, res.SteadyEnd)
	if err != nil {
		return 0, false
	}
	other := busy - used
	if shared && run > 0 {
		other -= res.CPUSeconds * res.SteadySeconds / run
	}
	return math.Max(other, 0), true
}

// stolen is the time the hypervisor took from the services' CPUs per
// second of a segment's steady phase, NaN for a segment run without steal
// samples.
func stolen(dir string, res *loadgen.Result) float64 {
	series, err := readCPU(filepath.Join(dir, stealFile))
	if err != nil {
		return math.NaN()
	}
	s, err := series.between(res.SteadyStart, res.SteadyEnd)
	if err != nil || !(res.SteadySeconds > 0) {
		return math.NaN()
	}
	return s / res.SteadySeconds
}

func waitHealthy(ctx context.Context, url string) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode < 300 {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not healthy after 2 minutes: %v", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// cpuSeries is one process's cumulative CPU seconds over time.
type cpuSeries struct {
	host string
	t    []time.Time
	cpu  []float64
}

// readCPU reads a CSV written by cpusampler.
func readCPU(path string) (*cpuSeries, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(recs) < 2 || strings.Join(recs[0], ",") != "timestamp,host,cpu_seconds" {
		return nil, fmt.Errorf("%s: not a timestamp,host,cpu_seconds CSV with samples", path)
	}
	s := &cpuSeries{host: recs[1][1]}
	for i, r := range recs[1:] {
		ts, err := time.Parse(time.RFC3339, r[0])
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, i+2, err)
		}
		v, err := strconv.ParseFloat(r[2], 64)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, i+2, err)
		}
		s.t, s.cpu = append(s.t, ts), append(s.cpu, v)
	}
	return s, nil
}

// at interpolates the cumulative CPU time linearly at t.
func (s *cpuSeries) at(t time.Time) (float64, error) {
	n := len(s.t)
	if t.Before(s.t[0]) || t.After(s.t[n-1]) {
		return 0, fmt.Errorf("time %s outside the samples (%s to %s)", t.Format(time.RFC3339), s.t[0].Format(time.RFC3339), s.t[n-1].Format(time.RFC3339))
	}
	i := sort.Search(n, func(i int) bool { return !s.t[i].Before(t) })
	if i == 0 {
		return s.cpu[0], nil
	}
	a, b := s.t[i-1], s.t[i]
	f := float64(t.Sub(a)) / float64(b.Sub(a))
	return s.cpu[i-1] + f*(s.cpu[i]-s.cpu[i-1]), nil
}

// between is the CPU time used from a to b.
func (s *cpuSeries) between(a, b time.Time) (float64, error) {
	x, err := s.at(a)
	if err != nil {
		return 0, err
	}
	y, err := s.at(b)
	if err != nil {
		return 0, err
	}
	return y - x, nil
}
