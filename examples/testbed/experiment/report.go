package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/gonum/stat"

	"github.com/perfcast/perfcast/examples/testbed/loadgen"
	"github.com/perfcast/perfcast/extract"
	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve"
	"github.com/perfcast/perfcast/solve/mva"
)

// predicted is a prediction and the model's names for the classes.
type predicted struct {
	// res is the simulator's prediction, analytical the analytical
	// solver's of the same model (nil where it failed: why); supported
	// says whether `--solver auto` would take the analytical one, and if
	// not, reasons why not.
	res        *solve.Result
	analytical *solve.Result
	why        string
	supported  bool
	reasons    []string
	names      map[string]string
	// model is the configured model both solved.
	model *model.Model
}

func predictFrom(ctx context.Context, base *model.Model, s setup, mix map[string]float64, requests int64, speed float64) (*predicted, error) {
	m, err := configure(base, s, mix, speed)
	if err != nil {
		return nil, fmt.Errorf("predict %s: %w", s.Name, err)
	}
	res, err := simulate(ctx, m, requests)
	if err != nil {
		return nil, fmt.Errorf("predict %s: %w", s.Name, err)
	}
	p := &predicted{res: res, names: workloadOf(base), model: m}
	if p.analytical, err = mva.New().Solve(ctx, m, solve.Options{}); err != nil {
		p.why = err.Error()
	}
	p.supported, p.reasons = mva.Supports(m)
	return p, nil
}

func mustJSON(v any) []byte {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic(err)
	}
	return append(data, '\n')
}

type reportRow struct {
	setup     setup
	measured  *measured
	predicted *predicted
	// adjusted is the prediction at the CPU speed the run had (speed,
	// the reference's CPU time per request over the run's), nil for runs
	// off the reference's code path.
	adjusted *predicted
	speed    float64
}

type report struct {
	quick                 bool
	reused                bool
	started               time.Time
	elapsed               time.Duration
	loadBefore, loadAfter string
	busyBefore            bool
	pinned                bool
	phases                loadgen.Phases
	mix                   map[string]float64
	// saturation is the rate the load levels are fractions of, the lower
	// of firstSaturation (the reference's first segment's) and
	// warmSaturation (the warm-up's, 0 without one).
	saturation      float64
	firstSaturation float64
	warmSaturation  float64
	perRequest      float64
	spanShare       float64
	// steps are the load steps extraction read besides the reference
	// (none without -steps), and curves what extraction made of them.
	steps  []*measured
	curves []*extract.SpeedCurve
	// ref is the model extracted from the reference.
	ref *model.Model
	// gaps are the classes' time outside the gateway's root spans in the
	// reference run (seconds), and fixedGaps what of it the model's
	// workloads start with as a fixed delay (lessModeled); nil when left
	// out.
	gaps, fixedGaps map[string]float64
	// outside is where extraction put the CPU outside spans
	// (extract.Config.OutsideSpans).
	outside string
	// steadyOnly is set when extraction read the segments' steady phases
	// alone (-steady-only).
	steadyOnly bool
	// slice is the models' round-robin quantum on the host's CPU (0:
	// processor sharing), sliceFrom where it came from.
	slice     time.Duration
	sliceFrom string
	// refMean is the mean response time of the reference's measured
	// phase, seconds.
	refMean  float64
	warnings []string
	// rounds is the number of segments of every configuration, and order
	// the configurations in the order they ran, per round.
	rounds int
	order  [][]string
	rows   []reportRow
}

// A machine counts as busy when other processes took more than otherBusy
// of the services' CPUs over all steady phases, or otherBusySegment in one
// segment.
const (
	otherBusy        = 0.02
	otherBusySegment = 0.10
)

// otherWork is the share of the services' CPUs that other processes took
// over the steady phases of all runs with machine samples, and in the
// busiest segment; ok is false when no run has them.
func (r *report) otherWork() (share, most float64, ok bool) {
	var secs, steady float64
	seen := map[*measured]bool{}
	for _, row := range r.rows {
		m := row.measured
		if m == nil || m.OtherSteady == 0 || seen[m] {
			continue // a run predicted twice counts once
		}
		seen[m] = true
		cpus := float64(max(row.setup.ModelCores, 1))
		secs += m.OtherSeconds / cpus
		steady += m.OtherSteady
		for _, p := range m.PartOther {
			most = max(most, p/cpus)
		}
	}
	if steady == 0 {
		return 0, 0, false
	}
	return secs / steady, most, true
}

// relErr is (predicted - measured) / measured, NaN when either is unknown.
func relErr(pred, meas float64) float64 {
	if meas == 0 || math.IsNaN(pred) || math.IsNaN(meas) {
		return math.NaN()
	}
	return (pred - meas) / meas
}

func pct(e float64) string {
	if math.IsNaN(e) {
		return "–"
	}
	return fmt.Sprintf("%+.0f %%", 100*e)
}

// absPct formats an absolute relative error.
func absPct(e float64) string {
	if math.IsNaN(e) {
		return "–"
	}
	return fmt.Sprintf("%.0f %%", 100*e)
}

// meanCI formats a measured mean with its 95 % half-width when the load
// generator gave one.
func meanCI(s *loadgen.Summary) string {
	if s.MeanCI95 > 0 {
		return fmt.Sprintf("%.1f ± %.1f", 1000*s.Mean, 1000*s.MeanCI95)
	}
	return ms(s.Mean)
}

func ms(s float64) string {
	if math.IsNaN(s) {
		return "–"
	}
	return fmt.Sprintf("%.1f", 1000*s)
}

func deref(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

func (r *report) write(w io.Writer, args []string) {
	cmd := "go run ./examples/testbed/experiment"
	if len(args) > 0 {
		cmd += " " + strings.Join(args, " ")
	}
	other, most, measured := r.otherWork()
	switch {
	case r.quick:
	case measured && (other > otherBusy || most > otherBusySegment):
		fmt.Fprintf(w, "> **Measured on a busy machine.** Other processes took %.1f %% of the services' CPUs over\n"+
			"> the steady phases (%.0f %% in the busiest segment): work that competed with the services and that\n"+
			"> the model does not know about. Treat the errors below with that in mind.\n\n", 100*other, 100*most)
	case !measured && r.busyBefore:
		fmt.Fprintf(w, "> **Measured on a busy machine.** The load average was %s before the runs (above 1.5\n"+
			"> on 2 CPUs): other work may have competed with the services for the CPU, which the model does not\n"+
			"> know about. Treat the errors below with that in mind.\n\n", r.loadBefore)
	}
	if r.quick {
		fmt.Fprintf(w, "> **Smoke run, not an accuracy claim.** This table comes from `-quick` (%s of steady load per\n"+
			"> configuration, the small data set) on a machine shared with other work (load average %s before,\n"+
			"> %s after). It shows that the experiment runs end to end; its errors mostly measure the noise of\n"+
			"> short runs on a busy machine. Run the full experiment on a quiet machine for figures to quote.\n\n",
			r.phases.Steady, r.loadBefore, r.loadAfter)
	}
	if r.reused {
		fmt.Fprintf(w, "> **Measurements reused.** `-reuse` took the runs of an earlier invocation from the work\n"+
			"> directory; the date, duration, load averages and run order below are this invocation's, not the runs'.\n\n")
	}
	fmt.Fprintf(w, "Generated by `%s` on %s (%s); it ran %s.\n\n", cmd, r.started.UTC().Format("2006-01-02 15:04 MST"), hostInfo(), r.elapsed.Round(time.Second))
	fmt.Fprintf(w, "How: the example shop of `examples/testbed` (gateway, catalog, orders, payments, each its own\n"+
		"process; see docs/testbed.md) runs a reference configuration; `perfcast`'s extraction builds a model\n"+
		"from its traces (the host's cores given, each service's GOMAXPROCS declared as its CPU slots\n"+
		"(`cpu_slots`), the fan-out pool, the stock mutex and the catalog's database connections declared\n"+
		"as passive resources since extraction does not infer them); the simulator predicts every\n"+
		"configuration at its "+
		"arrival rates; each configuration then runs for real. Measured response times are the load\n"+
		"generator's, per request class, over the steady phase; measured CPU utilization is the services'\n"+
		"processes' CPU time (getrusage, sampled once a second) over the steady phase, per core.\n\n")
	pin := "services pinned to CPU 1, the load generator to CPU 0 (taskset)"
	if !r.pinned {
		pin = "no pinning (taskset or a second CPU missing)"
	}
	fmt.Fprintf(w, "- Machine load average: %s before, %s after (the experiment's own processes included).\n", r.loadBefore, r.loadAfter)
	if measured {
		fmt.Fprintf(w, "- Other work: processes other than the services (and the load generator, where it shares their CPUs) took %.1f %% of the services' CPUs over the steady phases, %.1f %% in the busiest segment (/proc/stat, sampled once a second).\n", 100*other, 100*most)
	}
	fmt.Fprintf(w, "- Placement: %s.\n", pin)
	if r.slice > 0 {
		fmt.Fprintf(w, "- The host's CPU in the models: round-robin with a quantum of %s, Linux's scheduler slice (%s): a thread that wakes while another runs on its CPU waits for the rest of that one's slice, where processor sharing would serve both at once.\n", r.slice, r.sliceFrom)
	} else {
		fmt.Fprintf(w, "- The host's CPU in the models: processor sharing (`-cpu-slice 0`).\n")
	}
	refSteady := time.Duration(0)
	if len(r.rows) > 0 {
		refSteady = time.Duration(r.rows[0].measured.Load.SteadySeconds * float64(time.Second)).Round(time.Second)
	}
	fmt.Fprintf(w, "- Phases: ramp-up %s, steady %s (the reference: %s), ramp-down %s; open (Poisson) arrivals; mix %s.\n",
		r.phases.RampUp, r.phases.Steady, refSteady, r.phases.RampDown, formatMix(r.mix))
	switch {
	case r.rounds > 1:
		fmt.Fprintf(w, "- Rounds: every configuration ran in %d segments, each 1/%d of its steady phase with fresh processes and the same ramps, one per round; each round ran all configurations in a shuffled order, so that the machine's drift over the invocation falls alike on all of them and does not line up with the load. The measured figures are over all of a configuration's segments. Order: %s.\n",
			r.rounds, r.rounds, roundsText(r.order))
	case len(r.order) > 0:
		fmt.Fprintf(w, "- Run order (shuffled, so that the machine's drift does not line up with the load): %s.\n", strings.Join(r.order[0], ", "))
	}
	segs := ""
	if len(r.rows) > 0 && len(r.rows[0].measured.PartPerRequest) > 1 {
		segs = " (its segments: " + perRequestText(r.rows[0].measured.PartPerRequest, ", ") + " ms)"
	}
	fmt.Fprintf(w, "- Reference: %.2f ms of service CPU per request%s; load levels are fractions of the rate that saturates one core (%.0f requests/s) at %s.\n",
		1000*r.perRequest, segs, r.saturation, saturationText(r.firstSaturation, r.warmSaturation))
	fmt.Fprintf(w, "- Span CPU times (perfcast.cpu.time) account for %.0f %% of the CPU time the services' processes used in the reference run; the rest (garbage collection, span export, the HTTP transport's goroutines, the runtime) is in no span. Extraction, given each service's process CPU time as metrics, adds each service's share as %s.\n\n",
		100*r.spanShare, outsideText(r.outside))
	if len(r.steps) > 0 {
		var parts []string
		var overloaded []string
		segments := 0
		for _, st := range r.steps {
			per := make([]string, len(st.PartPerRequest))
			for i, c := range st.PartPerRequest {
				per[i] = fmt.Sprintf("%.2f", 1000*c)
			}
			parts = append(parts, fmt.Sprintf("at %.1f/s %s ms", st.Load.Rate, strings.Join(per, ", ")))
			for i, x := range st.Parts {
				if x.All != nil && r.refMean > 0 && x.All.Mean > 5*r.refMean {
					overloaded = append(overloaded, fmt.Sprintf("%.1f/s round %d", x.Rate, i+1))
				}
			}
			segments += len(st.Parts)
		}
		fmt.Fprintf(w, "- Load steps: extraction read, besides the reference's segments, %d segments of the reference's configuration at 25 and 75 %% of the saturation rate (fresh processes, one of each per round; in no measured row), their CPU time per request %s.",
			segments, strings.Join(parts, "; "))
		r.writeCurves(w)
		if len(overloaded) > 0 {
			fmt.Fprintf(w, " **Step segments queued far beyond the reference (more than 5 times its mean response time: %s):** the waits of a system out of steady state are in the traces extraction read, and the model's fixed delays hold them.", strings.Join(overloaded, ", "))
		}
		fmt.Fprint(w, "\n\n")
	} else {
		fmt.Fprint(w, "- The reference ran at one rate (no `-steps`): extraction sees one load, so no CPU cost that changes with it.")
		r.writeCurves(w)
		fmt.Fprint(w, "\n\n")
	}
	if r.steadyOnly {
		fmt.Fprint(w, "- Steady phases only (`-steady-only`, the default): extraction read each segment's steady phase, widened by a second on each side (a trace when its first span started there, the metrics' samples there), not its ramps, where fresh processes warm up.\n\n")
	} else {
		fmt.Fprint(w, "- Whole segments (`-steady-only=false`): extraction read each segment's ramps as well as its steady phase, the fresh processes' warm-up in the ramp-up included.\n\n")
	}
	if len(r.gaps) > 0 {
		var gs, fs []string
		for _, class := range slices.Sorted(maps.Keys(r.gaps)) {
			gs = append(gs, fmt.Sprintf("%s %.2f ms", class, 1000*r.gaps[class]))
			fs = append(fs, fmt.Sprintf("%s %.2f ms", class, 1000*r.fixedGaps[class]))
		}
		fmt.Fprintf(w, "- Time outside the traces: in the reference's steady phase the load generator measured each class longer than the gateway's root spans lasted (%s): the loopback network, the generator's own work, and the gateway waiting for its CPU slot and reading the request before its span starts and writing the response after it ends. No span shows it. The model makes the wait for the gateway's first slot itself; the rest (%s) starts its workloads as a fixed delay (`-client-gap=false` leaves it out).\n\n",
			strings.Join(gs, ", "), strings.Join(fs, ", "))
	}

	fmt.Fprintf(w, "### Configurations: throughput and CPU utilization\n\n")
	fmt.Fprintf(w, "| configuration | what | rate /s | measured X /s | predicted X /s | error | measured CPU | predicted CPU | error |\n")
	fmt.Fprintf(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
	var cpuErrs, meanErrs, p95Errs, xErrs []float64
	// The same over the held-out configurations below saturation.
	var hoCPU, hoMean, hoP95, hoX, hoCI []float64
	// What the measurements' confidence intervals settle of them.
	var cpuTally, meanTally tally
	heldOut := heldOutRow
	for _, row := range r.rows {
		m, p := row.measured, row.predicted.res
		predX := 0.0
		for _, name := range row.predicted.names { // the classes, not the load generator
			if wl := p.Workloads[name]; wl != nil {
				predX += wl.Throughput
			}
		}
		predCPU := servicesCPU(p, row.setup)
		ex, ec := relErr(predX, m.Load.All.Throughput), relErr(predCPU, m.CPU)
		if !strings.Contains(row.setup.Name, " from ") {
			cpuErrs = append(cpuErrs, math.Abs(ec))
		}
		if heldOut(row) {
			hoCPU = append(hoCPU, math.Abs(ec))
			cpuTally.add(row.setup.Name, ec, settle(predCPU, m.CPU, loadgen.HalfWidth95(m.PartCPU), cpuLimit), cpuLimit)
		}
		if !p.Stable {
			fmt.Fprintf(w, "| %s | %s | %.1f | %.1f | unstable: %s saturates | – | %.2f | – | – |\n", row.setup.Name, row.setup.What, row.setup.Rate,
				m.Load.All.Throughput, p.Bottleneck, m.CPU)
			continue
		}
		fmt.Fprintf(w, "| %s | %s | %.1f | %.1f | %.1f | %s | %.2f | %.2f | %s |\n", row.setup.Name, row.setup.What, row.setup.Rate,
			m.Load.All.Throughput, predX, pct(ex), m.CPU, predCPU, pct(ec))
	}
	batches := "ten parts of the steady phase"
	if r.rounds > 1 {
		batches = fmt.Sprintf("%d parts of each of the %d segments' steady phases", (10+r.rounds-1)/r.rounds, r.rounds)
	}
	fmt.Fprintf(w, "\n### Response times per request class (ms)\n\n"+
		"Measured means carry the half-width of their 95 %% confidence interval (batch means over %s).\n\n", batches)
	fmt.Fprintf(w, "| configuration | class | n | measured X /s | predicted X /s | error | measured mean | predicted mean | error | measured p95 | predicted p95 | error |\n")
	fmt.Fprintf(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, row := range r.rows {
		m, p := row.measured, row.predicted
		for _, class := range slices.Sorted(maps.Keys(m.Load.Classes)) {
			ms1 := m.Load.Classes[class]
			wl := p.res.Workloads[p.names[class]]
			if wl == nil || !p.res.Stable {
				fmt.Fprintf(w, "| %s | %s | %d | %.1f | – | – | %s | – | – | %s | – | – |\n", row.setup.Name, class, ms1.Count, ms1.Throughput, meanCI(ms1), ms(ms1.P95))
				continue
			}
			ex := relErr(wl.Throughput, ms1.Throughput)
			em := relErr(wl.ResponseTime.Mean, ms1.Mean)
			e95 := relErr(deref(wl.ResponseTime.P95), ms1.P95)
			if !strings.Contains(row.setup.Name, " from ") {
				xErrs, meanErrs, p95Errs = append(xErrs, math.Abs(ex)), append(meanErrs, math.Abs(em)), append(p95Errs, math.Abs(e95))
			}
			if heldOut(row) {
				hoX, hoMean, hoP95 = append(hoX, math.Abs(ex)), append(hoMean, math.Abs(em)), append(hoP95, math.Abs(e95))
				if ms1.MeanCI95 > 0 && ms1.Mean > 0 {
					hoCI = append(hoCI, ms1.MeanCI95/ms1.Mean)
				}
				meanTally.add(row.setup.Name+" "+class, em, settle(wl.ResponseTime.Mean, ms1.Mean, ms1.MeanCI95, meanLimit), meanLimit)
			}
			fmt.Fprintf(w, "| %s | %s | %d | %.1f | %.1f | %s | %s | %s | %s | %s | %s | %s |\n", row.setup.Name, class, ms1.Count,
				ms1.Throughput, wl.Throughput, pct(ex), meanCI(ms1), ms(wl.ResponseTime.Mean), pct(em),
				ms(ms1.P95), ms(deref(wl.ResponseTime.P95)), pct(e95))
		}
	}
	fmt.Fprintf(w, "\n### Summary\n\nMedian absolute relative error over the configurations (the model from the run without span CPU time left out): "+
		"throughput %s, mean response time %s, p95 %s, CPU utilization %s.\n\n", absPct(median(xErrs)), absPct(median(meanErrs)), absPct(median(p95Errs)), absPct(median(cpuErrs)))
	fmt.Fprintf(w, "Held-out configurations below saturation (not the reference, measured CPU under 80 %% of the cores; %d configurations, %d class rows): "+
		"median absolute error throughput %s, mean response time %s, p95 %s, CPU utilization %s; "+
		"%d of %d class rows have the mean response time within 15 %%, %d of %d configurations the utilization within 5 %%.\n\n",
		len(hoCPU), len(hoMean), absPct(median(hoX)), absPct(median(hoMean)), absPct(median(hoP95)), absPct(median(hoCPU)),
		within(hoMean, meanLimit), len(hoMean), within(hoCPU, cpuLimit), len(hoCPU))
	if len(hoCI) > 0 {
		fmt.Fprintf(w, "The measured means of those rows are known to within %s (median of the 95 %% half-widths, relative; largest %s).\n\n",
			absPct(median(hoCI)), absPct(slices.Max(hoCI)))
	}
	if len(hoMean) > 0 {
		fmt.Fprintf(w, "What the measurements settle. A measured figure estimates a true one, which may lie anywhere in its "+
			"95 %% confidence interval; the prediction meets the target for the true figure when it is within the limit of it.\n\n"+
			"- Mean response times: %s.\n- Utilizations (the interval over the segments' utilizations): %s.\n\n",
			meanTally.text(len(hoMean), meanLimit), cpuTally.text(len(hoCPU), cpuLimit))
	}
	r.writeNoise(w)
	r.writeSteal(w)
	r.writeWaits(w)
	r.writeCalls(w)
	r.writeAnalytical(w)
	r.writeAdjusted(w)
	fmt.Fprintf(w, "### Known sources of error\n\n"+
		"- Measurement noise: the CPU time per request moves from segment to segment (see above and the\n"+
		"  repeat row); the rounds average it over the invocation for every configuration alike, but what\n"+
		"  is left is carried from the reference to every prediction. Utilization errors of that size are\n"+
		"  the floor on this machine, and near saturation they make large response-time errors.\n"+
		"- Cheaper at higher load: the intercept of the line above is not idle work (the four services,\n"+
		"  started and left idle for 28 s on 2026-11-24, used 0.07 %% of a core between them); the same\n"+
		"  requests cost less CPU when they come more often (cache and scheduler wake-ups shared among more\n"+
		"  requests), in the spans and more so outside them. The load steps let extraction fit a speed\n"+
		"  curve for it, when its slope clears its standard error; without one (or with `-steps=false`)\n"+
		"  the model carries the reference's cost to every load, too high at the highest loads, and near\n"+
		"  saturation that is amplified. The curve scales all of the host's CPU time, where the spans'\n"+
		"  changes less than the rest.\n"+
		"- Two CPUs: in the cores-2 run the catalog's queries take far longer than their CPU time (compare\n"+
		"  their spans' durations with their perfcast.cpu.time), its four database connections fill, and\n"+
		"  the recommendations, whose six calls wait for the gateway's pool, fall behind. The catalog's\n"+
		"  listing serves 1.4 to 1.7 times as many requests on two cores as on one where hashing serves\n"+
		"  2.0 (BenchmarkCatalogList, BenchmarkHashControl, docs/testbed.md): its queries partly serialize\n"+
		"  on the database's locks, which a reference at GOMAXPROCS 1 cannot show and the model, with two\n"+
		"  CPU slots, does not have.\n"+
		"- GOMAXPROCS 2 on one CPU: the cost of two threads per process contending for one CPU (more CPU per\n"+
		"  request, the runtime's idle threads spinning for work, longer waits) is not in the model, which\n"+
		"  has two CPU slots per service.\n"+
		"%s"+
		"- Client-side delay: the reference's time between the load generator and the root spans, per\n"+
		"  class, added as a fixed delay; it grows with the load (about 0.5 ms at 20 %%, 0.85 ms at 80 %%\n"+
		"  of saturation), which the fixed delay does not.\n"+
		"- Interleaved requests: a service with GOMAXPROCS 1 hands its processor to another goroutine\n"+
		"  when the running one blocks, so a long request's span holds other requests' CPU time, more the\n"+
		"  higher the load (the catalog listing's time off the CPU inside its span was 0.95 ms at 20 %%,\n"+
		"  1.8 ms at 50 %% and 2.7 ms at 80 %% of saturation on 2026-11-24), while the lookups that arrive\n"+
		"  meanwhile wait before their spans as if the listing ran whole. Where the traces saw several\n"+
		"  loads, extraction fits each operation's fixed delay at no load and splits its CPU into the\n"+
		"  bursts the growth of its time off the CPU implies, each served by the slot in arrival order:\n"+
		"  a mean number of bursts, not the runtime's schedule.\n"+
		"%s"+
		"- Waiting taken for work: each operation's own time off the CPU, less the waits for the CPU,\n"+
		"  the CPU slot and the declared locks the model reproduces, is a fixed delay (where the traces\n"+
		"  saw several loads, what is left of it at no load). A wait the model lacks (a lock inside a\n"+
		"  span) stays fixed at one load, and with several is taken for waits for the CPU slot.\n"+
		"- Declared resources: the runner declares GOMAXPROCS, the fan-out pool, the stock mutex (the last\n"+
		"  two to extraction, which takes their waits out of the callers' delays) and the\n"+
		"  catalog's connections; traces do not show GOMAXPROCS, and at the reference load the others are\n"+
		"  too rarely full for extraction to infer them.\n"+
		"- Other work on the machine: pinning keeps the load generator off the services' CPU (except in\n"+
		"  cores-2), not other processes; the other work above tells how much of the services' CPU they took.\n\n",
		outsideSource(r.outside), schedulerSource(r.slice))
	if len(r.warnings) > 0 {
		fmt.Fprintf(w, "Extraction warnings on the reference run:\n\n")
		for _, wn := range r.warnings {
			fmt.Fprintf(w, "- %s\n", wn)
		}
		fmt.Fprintln(w)
	}
}

// writeCurves says what extraction found about the CPU cost against the
// load on each host.
func (r *report) writeCurves(w io.Writer) {
	for _, c := range r.curves {
		if len(c.Points) > 0 {
			lo, hi := c.Points[0], c.Points[len(c.Points)-1]
			over := fmt.Sprintf("over %d windows of %.0f s (%s)", c.Windows, c.Window, c.Source)
			if c.Method == extract.CurveSegments {
				over = fmt.Sprintf("over %d segments, one point each (%s CPU time, a trend in time taken out)", c.Segments, c.Source)
			}
			fmt.Fprintf(w, " Host %s: %s, the CPU time per unit of work changed by %+.0f %% per unit of utilization (± %.0f %%, standard error); the model's speed curve is ×%.3f at utilization %.2f and ×%.3f at %.2f, flat beyond.",
				c.Host, over, 100*c.Slope, 100*c.SlopeSE, lo.Factor, lo.Utilization, hi.Factor, hi.Utilization)
		} else {
			fmt.Fprintf(w, " Host %s: no speed curve (%s).", c.Host, c.Skipped)
		}
		switch v := c.Variation; {
		case v == nil:
		case v.CV > 0 && v.Method == extract.VariationWindows:
			fmt.Fprintf(w, " Beyond the load and the requests' own scatter, the spans' CPU time per unit of work varied between %d windows of %s with a coefficient of variation of %.3f (Q/df = %.2f, p = %.2g), the model's `speed_variation`", v.Windows, model.FormatDuration(v.Window), v.CV, v.F, v.P)
			window := 0.0
			if r.ref != nil {
				if h := r.ref.Host(c.Host); h != nil {
					window = h.CPU.SpeedWindow
				}
			}
			if window > 0 {
				fmt.Fprintf(w, ", simulated as a speed redrawn every %s (`speed_window`).", model.FormatDuration(window))
			} else {
				fmt.Fprint(w, ", solved as five speeds each held until the queues settle.")
			}
		case v.CV > 0:
			fmt.Fprintf(w, " Beyond the load, its CPU time per unit of work varied between %d blocks of up to 30 s with a coefficient of variation of %.3f (F = %.2f, p = %.2g), the model's `speed_variation`.", v.Blocks, v.CV, v.F, v.P)
		default:
			fmt.Fprintf(w, " No speed variation (%s).", v.Skipped)
		}
	}
}

// within counts the errors of at most limit.
func within(errs []float64, limit float64) int {
	n := 0
	for _, e := range errs {
		if e <= limit {
			n++
		}
	}
	return n
}

// writeNoise reports the CPU time per request of the runs that share the
// reference's code path (GOMAXPROCS 1, span CPU time on), and the line
// CPU = a + b·X fitted over them: a model extracted from one run carries
// that run's CPU per request to every prediction.
func (r *report) writeNoise(w io.Writer) {
	var per []string
	var xs, cs, perReq []float64
	for _, row := range r.rows {
		s, m := row.setup, row.measured
		if strings.Contains(s.Name, " from ") || s.GOMAXPROCS != 1 || !s.SpanCPU || m.Load.All.Throughput <= 0 {
			continue
		}
		xs = append(xs, m.Load.All.Throughput)
		cs = append(cs, m.CPUSeconds)
		perReq = append(perReq, m.CPUSeconds/m.Load.All.Throughput)
		text := fmt.Sprintf("%s %.2f", s.Name, 1000*perReq[len(perReq)-1])
		if len(m.PartPerRequest) > 1 {
			text += " (" + perRequestText(m.PartPerRequest, "/") + ")"
		}
		per = append(per, text)
	}
	n := float64(len(xs))
	if n < 3 {
		return
	}
	mp, sdp := stat.MeanStdDev(perReq, nil)
	segNote := ""
	if r.rounds > 1 {
		segNote = "; each segment's in brackets"
	}
	a, b := stat.LinearRegression(xs, cs, nil, false)
	// The intercept's standard error: the residuals' variance over n − 2
	// degrees of freedom, times 1/n + mean(x)²/Sxx.
	var rss float64
	for i := range xs {
		d := cs[i] - a - b*xs[i]
		rss += d * d
	}
	mx, vx := stat.MeanVariance(xs, nil)
	seA := math.Sqrt(rss / (n - 2) * (1/n + mx*mx/(vx*(n-1))))
	fmt.Fprintf(w, "Measurement noise: the services' CPU time per request in the runs with GOMAXPROCS 1 and span CPU time on "+
		"(ms%s: %s) has a mean of %.2f ms and a coefficient of variation of %.0f %%; these runs execute the same code, "+
		"so the spread is the machine's. A line fitted over them, CPU = %.3f ± %.3f cores (standard error) + %.2f ms × "+
		"throughput, would tell CPU that does not grow with the load (the intercept) from CPU that does. Without a speed "+
		"curve the model carries the reference's CPU per request to every prediction.\n\n",
		segNote, strings.Join(per, ", "), 1000*mp, 100*sdp/mp, a, seA, 1000*b)
}

// writeSteal reports the time the hypervisor took from the services' CPUs
// in the runs of writeNoise's set, and how a segment's steal went with its
// CPU time per request and its mean response time, each relative to its
// configuration's: steal is time the processes are not charged for but
// their requests wait through.
func (r *report) writeSteal(w io.Writer) {
	var st, cpu, rt []float64
	most := 0.0
	for _, row := range r.rows {
		s, m := row.setup, row.measured
		if strings.Contains(s.Name, " from ") || s.GOMAXPROCS != 1 || !s.SpanCPU || s.ModelCores != 1 || m.Load.All.Mean <= 0 {
			continue
		}
		meanPer := m.CPUSeconds / m.Load.All.Throughput
		for i, part := range m.Parts {
			if i >= len(m.PartSteal) || math.IsNaN(m.PartSteal[i]) || part.All.Mean <= 0 || math.IsNaN(m.PartPerRequest[i]) {
				continue
			}
			st = append(st, m.PartSteal[i])
			cpu = append(cpu, m.PartPerRequest[i]/meanPer)
			rt = append(rt, part.All.Mean/m.Load.All.Mean)
			most = max(most, m.PartSteal[i])
		}
	}
	if len(st) < 3 {
		return
	}
	fmt.Fprintf(w, "Time stolen by the hypervisor from the services' CPU (/proc/stat's steal, sampled once a second) over the %d segments of those runs: "+
		"%.2f %% of the steady phases on average, %.2f %% in the worst segment. ",
		len(st), 100*stat.Mean(st, nil), 100*most)
	if _, sd := stat.MeanStdDev(st, nil); !(sd > 0) {
		// A correlation needs steal that varies; without it, r is 0/0.
		fmt.Fprint(w, "It did not vary between the segments, so nothing correlates with it.\n\n")
		return
	}
	fmt.Fprintf(w, "A segment's steal correlates with its CPU time per request "+
		"(r = %.2f) and with its mean response time (r = %.2f), each relative to its configuration's: the processes are not charged for "+
		"stolen time, but their requests wait through it.\n\n",
		stat.Correlation(st, cpu, nil), stat.Correlation(st, rt, nil))
}

// writeWaits reports, per configuration and service, the CPU time, the
// time the service's threads waited in Linux's run queue for a CPU (both
// per second of the steady phases), the Go runtime's processors held (the
// mean number busy, from the runtime's own figures), and the model's CPU
// slots held (the mean busy units of the service's CPU slots in the
// prediction), which stand for those processors.
func (r *report) writeWaits(w io.Writer) {
	rows := r.rowsWhere(func(row reportRow) bool {
		return !strings.Contains(row.setup.Name, " from ") && row.measured.ServiceCPU != nil
	})
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "### Time the services waited for a CPU\n\n"+
		"Per service: its CPU time, the time its threads waited in Linux's run queue for a CPU (each thread's\n"+
		"`/proc/PID/task/TID/schedstat`, sampled once a second), both in seconds per second of the steady phases;\n"+
		"the Go runtime's processors held (the mean number not idle, by the runtime's `/cpu/classes` figures,\n"+
		"which it updates at each garbage collection); and the model's CPU slots held (their mean busy units in\n"+
		"the prediction), which stand for those processors. A processor is held while its thread runs and while\n"+
		"that thread waits for the CPU.\n\n")
	fmt.Fprintf(w, "| configuration |")
	for _, svc := range services {
		fmt.Fprintf(w, " %s: CPU, wait, processors, model's slots |", svc)
	}
	fmt.Fprintf(w, "\n|---|")
	for range services {
		fmt.Fprintf(w, "---:|")
	}
	fmt.Fprintln(w)
	for _, row := range rows {
		fmt.Fprintf(w, "| %s |", row.setup.Name)
		for _, svc := range services {
			cpu, ok := row.measured.ServiceCPU[svc]
			if !ok {
				fmt.Fprintf(w, " – |")
				continue
			}
			slot := "–"
			if p := row.predicted; p != nil && p.res != nil && p.res.Stable {
				if res := p.res.Resources[extract.CPUSlotsResource(svc)]; res != nil {
					slot = fmt.Sprintf("%.2f", res.Busy)
				}
			}
			procs := "–"
			if p, ok := row.measured.ServiceProcs[svc]; ok {
				procs = fmt.Sprintf("%.2f", p)
			}
			fmt.Fprintf(w, " %.2f, %.2f, %s, %s |", cpu, row.measured.ServiceWait[svc], procs, slot)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
}

// rowsWhere returns the report's rows for which keep holds, in order.
func (r *report) rowsWhere(keep func(reportRow) bool) []reportRow {
	var rows []reportRow
	for _, row := range r.rows {
		if keep(row) {
			rows = append(rows, row)
		}
	}
	return rows
}

// writeAdjusted reports the response times predicted at each run's own
// CPU speed, for the runs on the reference's code path: what is left of
// the error once the machine's drift in CPU time per request is taken
// out, that is the error of the model's structure (queues, slots, pool,
// lock, delays).
func (r *report) writeAdjusted(w io.Writer) {
	rows := r.rowsWhere(func(row reportRow) bool { return row.adjusted != nil && row.adjusted.res.Stable })
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "### Response times at each run's CPU speed (a diagnostic)\n\n"+
		"The runs that execute the reference's code on the same CPU predicted again with the host's CPU speed set to the\n"+
		"reference's CPU time per request over the run's (`hosts.%s.cpu.speed`). This uses the run's measured CPU, so it\n"+
		"is not a prediction; it shows how much of the errors above is the machine's drift and how much the model's\n"+
		"structure (queues, CPU slots, pool, lock, fixed delays).\n\n", hostName)
	fmt.Fprintf(w, "| configuration | class | speed | measured mean | predicted mean | error | measured p95 | predicted p95 | error |\n")
	fmt.Fprintf(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
	var meanErrs []float64
	for _, row := range rows {
		m, p := row.measured, row.adjusted
		for _, class := range slices.Sorted(maps.Keys(m.Load.Classes)) {
			mc := m.Load.Classes[class]
			wl := p.res.Workloads[p.names[class]]
			if wl == nil {
				continue
			}
			em := relErr(wl.ResponseTime.Mean, mc.Mean)
			if row.measured.CPU < 0.8 {
				meanErrs = append(meanErrs, math.Abs(em))
			}
			fmt.Fprintf(w, "| %s | %s | %.2f | %s | %s | %s | %s | %s | %s |\n", row.setup.Name, class, row.speed,
				meanCI(mc), ms(wl.ResponseTime.Mean), pct(em), ms(mc.P95), ms(deref(wl.ResponseTime.P95)), pct(relErr(deref(wl.ResponseTime.P95), mc.P95)))
		}
	}
	fmt.Fprintf(w, "\nBelow saturation (measured CPU under 80 %% of the cores), at the runs' speeds: median absolute error of the mean "+
		"response time %s; %d of %d class rows within 15 %%.\n\n", absPct(median(meanErrs)), within(meanErrs, 0.15), len(meanErrs))
}

// writeAnalytical compares the analytical solver's mean response times on
// the same models with the measurements and with the simulator's.
func (r *report) writeAnalytical(w io.Writer) {
	fmt.Fprintf(w, "### The analytical solver on the same models\n\n"+
		"Each configuration's model solved again with `--solver mva` (mean values; no percentiles). `auto` would\n"+
		"simulate the models the last column marks, for the reasons listed under the table.\n\n")
	fmt.Fprintf(w, "| configuration | class | measured mean | simulated | analytical | error | against simulated | auto |\n")
	fmt.Fprintf(w, "|---|---|---:|---:|---:|---:|---:|---|\n")
	var errs, gaps []float64
	var rows int
	var why []string
	for _, row := range r.rows {
		m, p := row.measured, row.predicted
		auto := "mva"
		if !p.supported {
			auto = "sim"
			why = append(why, fmt.Sprintf("- %s: %s", row.setup.Name, strings.Join(p.reasons, "; ")))
		}
		for _, class := range slices.Sorted(maps.Keys(m.Load.Classes)) {
			mc := m.Load.Classes[class]
			ws := p.res.Workloads[p.names[class]]
			var wa *solve.WorkloadResult
			if p.analytical != nil && p.analytical.Stable {
				wa = p.analytical.Workloads[p.names[class]]
			}
			simMean := math.NaN()
			if ws != nil && p.res.Stable {
				simMean = ws.ResponseTime.Mean
			}
			if wa == nil {
				what := "unstable"
				if p.analytical == nil {
					what = "failed: " + p.why
				} else if p.analytical.Stable {
					what = "–"
				}
				fmt.Fprintf(w, "| %s | %s | %s | %s | %s | – | – | %s |\n", row.setup.Name, class, meanCI(mc), ms(simMean), what, auto)
				if heldOutRow(row) {
					// No answer counts as a miss.
					errs = append(errs, math.Inf(1))
					rows++
				}
				continue
			}
			a := wa.ResponseTime.Mean
			em, es := relErr(a, mc.Mean), relErr(a, simMean)
			if heldOutRow(row) {
				errs = append(errs, math.Abs(em))
				gaps = append(gaps, math.Abs(es))
				rows++
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", row.setup.Name, class, meanCI(mc), ms(simMean), ms(a), pct(em), pct(es), auto)
		}
	}
	if len(why) > 0 {
		fmt.Fprintf(w, "\nWhy `auto` would simulate:\n\n%s\n", strings.Join(why, "\n"))
	}
	fmt.Fprintf(w, "\nHeld-out configurations below saturation, analytical: %d of %d class rows within 15 %% of the measured mean "+
		"(median absolute error %s; no answer counts as a miss); median distance from the simulator %s, largest %s.\n\n",
		within(errs, 0.15), rows, absPct(median(errs)), absPct(median(gaps)), absPct(maxOf(gaps)))
}

// heldOutRow reports whether a row is a held-out configuration below
// saturation: not the reference or its repeat, not a model extracted from
// another run, measured CPU under 80 % of the cores.
func heldOutRow(row reportRow) bool {
	return row.setup.Name != "reference" && row.setup.Name != "repeat" && !strings.Contains(row.setup.Name, " from ") && row.measured.CPU < 0.8
}

func maxOf(v []float64) float64 {
	out := math.NaN()
	for _, x := range v {
		if !math.IsNaN(x) && (math.IsNaN(out) || x > out) {
			out = x
		}
	}
	return out
}

func median(v []float64) float64 {
	var ok []float64
	for _, x := range v {
		if !math.IsNaN(x) {
			ok = append(ok, x)
		}
	}
	if len(ok) == 0 {
		return math.NaN()
	}
	slices.Sort(ok)
	n := len(ok)
	if n%2 == 1 {
		return ok[n/2]
	}
	return (ok[n/2-1] + ok[n/2]) / 2
}

// perRequestText lists CPU times per request (seconds) in ms, joined by sep.
func perRequestText(v []float64, sep string) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprintf("%.2f", 1000*x)
	}
	return strings.Join(parts, sep)
}

// roundsText describes the run order of each round.
func roundsText(order [][]string) string {
	parts := make([]string, len(order))
	for i, names := range order {
		parts[i] = fmt.Sprintf("round %d: %s", i+1, strings.Join(names, ", "))
	}
	return strings.Join(parts, "; ")
}

func formatMix(mix map[string]float64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(mix)) {
		parts = append(parts, fmt.Sprintf("%s %g", k, mix[k]))
	}
	return strings.Join(parts, ", ")
}

// outsideText says where extraction puts the CPU time outside spans.
func outsideText(how string) string {
	if how == extract.OutsideInline {
		return "CPU at the start of its operations, taken out of the callers' time outside the callee's span (`-outside-spans inline`)"
	}
	return "background work each execution sends to its service (the CPU and the service's CPU slot carry it; no response time includes it), of the callers' time outside a callee's span, the low end (its 10th percentile) kept as the network where the callee's CPU slots or declared limits make the rest (`-outside-spans background`)"
}

// outsideSource is the known source of error in where extraction put the
// CPU time outside spans (how, as outsideText takes it).
func outsideSource(how string) string {
	if how == extract.OutsideInline {
		return "- CPU outside spans: each service's share is spread over its executions (per execution or in\n" +
			"  proportion to their CPU time, as the metrics' windows follow best) and runs at\n" +
			"  the start of each, on the request's path, though part of it (the runtime's monitor thread,\n" +
			"  garbage collection, span export) is on no request's path.\n"
	}
	return "- CPU outside spans: each service's share is spread over its executions (per execution or in\n" +
		"  proportion to their CPU time, as the metrics' windows follow best) and runs as\n" +
		"  background work that delays requests only by queueing; the part a request waits for itself\n" +
		"  (its callee reading it before the span starts) stays in its callers' time outside the span,\n" +
		"  in the low end that extraction keeps as the network where the callee has CPU slots, or, at\n" +
		"  the gateway, in the client-side delay below.\n"
}

// schedulerSource is the known source of error in how the models share
// the host's CPU (slice as report.slice takes it).
func schedulerSource(slice time.Duration) string {
	if slice > 0 {
		return "- Round robin: the model's host runs the bursts on a core in turn, a slice at a time, where\n" +
			"  Linux runs a thread that wakes from sleep ahead of one that has been running: the gateway's\n" +
			"  short bursts wait a fraction of a millisecond longer in the model than for real.\n"
	}
	return "- Processor sharing: the model's host shares the core equally among the bursts on it, where\n" +
		"  Linux runs a process that wakes from sleep ahead of one that has been running: the gateway's\n" +
		"  short bursts barely wait behind the catalog's long ones, and the model's gateway waits longer.\n"
}

// saturationText says where the load levels' saturation rate comes from:
// the dearer CPU time per request of the warm-up and the reference's first
// segment, given as the rates that saturate one core.
func saturationText(first, warm float64) string {
	if warm <= 0 {
		return fmt.Sprintf("the CPU time per request of its first segment (%.2f ms)", 1000/first)
	}
	return fmt.Sprintf("the dearer CPU time per request of the warm-up (%.2f ms) and of its first segment (%.2f ms), so that a cheap stretch does not push the highest level into saturation", 1000/warm, 1000/first)
}
