// Package report answers the usual capacity questions about a model and
// writes them as one self-contained HTML page: a summary in plain words, the
// architecture with its call rates, response time and utilization against
// load, measured against predicted figures, and the evidence the model rests
// on.
//
// Analyze computes everything the page shows (the Results, which is also the
// results.json of perfcast analyze); Write renders it.
package report

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"sync"

	"github.com/perfcast/perfcast/extract"
	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve"
	"github.com/perfcast/perfcast/whatif"
)

// ResultsVersion is the version of the Results JSON.
const ResultsVersion = 1

// LoadKey is the key the load sweep varies: a factor on every open rate and
// closed population.
const LoadKey = "workload.*.load"

// DefaultPoints is the number of load levels Analyze solves by default.
const DefaultPoints = 13

// Results is everything a report shows, as data.
type Results struct {
	Perfcast int    `json:"perfcast"`
	Model    string `json:"model"`
	// Extraction is the report of the extraction the model came from, if any.
	Extraction *extract.Report `json:"extraction,omitempty"`
	// Measured holds the traces' own figures at the observed load, if any.
	Measured *solve.Result `json:"measured,omitempty"`
	// Predicted is the model's answer at the observed load.
	Predicted *solve.Result `json:"predicted"`
	// Bottleneck is the resource that saturates first as load grows.
	Bottleneck string      `json:"bottleneck,omitempty"`
	Saturation *Saturation `json:"saturation,omitempty"`
	Sweep      *Sweep      `json:"sweep,omitempty"`
	// Calls are the architecture's call edges at the observed load.
	Calls []Call `json:"calls"`
	// Operations gives each operation's own CPU demand and delay per call.
	Operations map[string]OperationLoad `json:"operations"`
}

// Saturation is where the bottleneck runs out of capacity when every
// workload's load grows by the same factor.
type Saturation struct {
	Resource string `json:"resource"`
	// Utilization is the resource's utilization at the observed load (for
	// a CPU with a limit, the share of its limit used): the solver's where
	// Saturate was given a result that has it; otherwise the utilization
	// law's at the speed the resource has when fully busy (1/Factor).
	Utilization float64 `json:"utilization"`
	// Factor is the load, as a multiple of the observed load, at which the
	// resource reaches full utilization if throughput grows in proportion
	// to load; Factor − 1 is the headroom.
	Factor float64 `json:"factor"`
	// At is the load at Factor: workload.NAME.open.rate in requests per
	// second, workload.NAME.closed.users in users.
	At map[string]float64 `json:"at"`
	// ClosedOnly tells that every workload is closed: their response times
	// grow without bound past this population, but they never become
	// unstable.
	ClosedOnly bool `json:"closed_only,omitempty"`
	// Source is "bounds" when the utilization law found it, "sweep" when
	// solving the model at growing loads showed another resource (a
	// thread pool or lock, whose holding times grow with load) saturating
	// first.
	Source string `json:"source"`
	// Bound is the utilization law's answer when the sweep found another.
	Bound *Saturation `json:"bound,omitempty"`
}

// Sweep is the model solved at a range of loads.
type Sweep struct {
	// Key is the swept key, LoadKey.
	Key    string       `json:"key"`
	Points []SweepPoint `json:"points"`
	// Fallback says why the load levels were solved by Options'
	// SweepFallback (the simulator) instead of SolveSweep: the reasons
	// SweepSupported gave for the first level it rejected.
	Fallback []string `json:"fallback,omitempty"`
}

// SweepPoint is one load level of a sweep.
type SweepPoint struct {
	// Factor multiplies the observed load.
	Factor float64 `json:"factor"`
	// Load is each workload's load at this point: its open rate, or its
	// closed population.
	Load   map[string]float64 `json:"load"`
	Result *solve.Result      `json:"result"`
}

// Options say how Analyze solves the model and what else the report shows.
type Options struct {
	// Solve solves the model at the observed load.
	Solve whatif.SolveFunc
	// SolveSweep solves each load level of the sweep (default: Solve).
	SolveSweep whatif.SolveFunc
	// SweepSupported, when set, is asked about the model of every load
	// level before any is solved; if it rejects one, with the reasons
	// why, SweepFallback solves them all instead, so that one method
	// draws each curve, and the sweep keeps the reasons (Sweep.Fallback).
	SweepSupported func(*model.Model) (ok bool, reasons []string)
	SweepFallback  whatif.SolveFunc
	// Workers is the number of load levels solved at once (default 1).
	Workers int
	// Points is the number of load levels (default DefaultPoints); a
	// negative number skips the sweep.
	Points int
	// Extraction and Measured, when set, are shown with the predictions.
	Extraction *extract.Report
	Measured   *solve.Result
	// Progress, when set, is told how many load levels are solved, of how
	// many. It may be called from several goroutines, one call at a time.
	Progress func(done, total int)
}

// Analyze solves m at the observed load and at loads up to where its
// bottleneck saturates, and gathers what the report shows.
func Analyze(ctx context.Context, m *model.Model, opts Options) (*Results, error) {
	if opts.Solve == nil {
		return nil, fmt.Errorf("report: no solver given")
	}
	pred, err := opts.Solve(ctx, m)
	if err != nil {
		return nil, fmt.Errorf("solve at the observed load: %w", err)
	}
	r := &Results{
		Perfcast:   ResultsVersion,
		Model:      m.DisplayName(),
		Extraction: opts.Extraction,
		Measured:   opts.Measured,
		Predicted:  pred,
	}
	r.Saturation = Saturate(m, pred)
	if r.Saturation != nil {
		r.Bottleneck = r.Saturation.Resource
	} else {
		r.Bottleneck = pred.Bottleneck
	}
	if opts.Points >= 0 {
		n := opts.Points
		if n == 0 {
			n = DefaultPoints
		}
		if r.Sweep, err = sweepLoad(ctx, m, r.Saturation, n, opts); err != nil {
			return nil, err
		}
		if s := refineSaturation(m, r.Saturation, r.Sweep); s != r.Saturation {
			if rr := pred.Resources[s.Resource]; rr != nil {
				s.Utilization = rr.Load()
			}
			r.Saturation, r.Bottleneck = s, s.Resource
		}
	}
	r.Calls, r.Operations = traffic(m, pred)
	// Wall-clock times differ from run to run; the results do not.
	for _, res := range r.results() {
		if res.Sim != nil {
			res.Sim.WallSeconds = 0
		}
	}
	return r, nil
}

// results lists the solved results: the prediction and the sweep's.
func (r *Results) results() []*solve.Result {
	out := []*solve.Result{r.Predicted}
	if r.Sweep != nil {
		for _, p := range r.Sweep.Points {
			out = append(out, p.Result)
		}
	}
	return out
}

// sweepLoad solves m at n load factors from the observed load to just below
// saturation.
func sweepLoad(ctx context.Context, m *model.Model, sat *Saturation, n int, opts Options) (*Sweep, error) {
	factors := LoadFactors(sat, n)
	solveFn := opts.SolveSweep
	if solveFn == nil {
		solveFn = opts.Solve
	}
	var fallback []string
	if opts.SweepSupported != nil && opts.SweepFallback != nil {
		for _, f := range factors {
			pm, err := whatif.Apply(m, map[string]float64{LoadKey: f}, []string{LoadKey})
			if err != nil {
				return nil, fmt.Errorf("load sweep: %w", err)
			}
			if ok, reasons := opts.SweepSupported(pm); !ok {
				solveFn, fallback = opts.SweepFallback, reasons
				break
			}
		}
	}
	if opts.Progress != nil {
		var mu sync.Mutex
		done, total := 0, len(factors)
		inner := solveFn
		opts.Progress(0, total)
		solveFn = func(ctx context.Context, pm *model.Model) (*solve.Result, error) {
			res, err := inner(ctx, pm)
			mu.Lock()
			done++
			opts.Progress(done, total)
			mu.Unlock()
			return res, err
		}
	}
	workers := opts.Workers
	if workers < 1 {
		workers = 1
	}
	points, err := whatif.Sweep(ctx, m, []whatif.Vary{{Key: LoadKey, Values: factors}}, workers, solveFn)
	if err != nil {
		return nil, fmt.Errorf("load sweep: %w", err)
	}
	s := &Sweep{Key: LoadKey, Points: make([]SweepPoint, len(points)), Fallback: fallback}
	for i, p := range points {
		f := p.Set[LoadKey]
		load := map[string]float64{}
		for _, w := range m.Workloads {
			load[w.Name] = scaledLoad(w, f)
		}
		s.Points[i] = SweepPoint{Factor: f, Load: load, Result: p.Result}
	}
	return s, nil
}

// scaledLoad is a workload's load at a factor, as whatif.Scale sets it.
func scaledLoad(w *model.Workload, f float64) float64 {
	switch {
	case w.Open != nil:
		return w.Open.Rate * f
	case w.Closed != nil:
		return float64(int(float64(w.Closed.Users)*f + 0.5))
	}
	return 0
}

// observedLoad is a workload's load in the model: its open rate or its
// closed population.
func observedLoad(w *model.Workload) float64 { return scaledLoad(w, 1) }

// Saturate finds the resource that saturates first when every workload's
// load grows by one factor, and that factor, by the utilization law (see
// solve.Bounds). Closed workloads count with the throughput res found for
// them; a host with a speed curve counts at the curve's factor for full
// utilization, and one with a speed variation at its slowest speed (the
// solvers report a load that speed cannot serve as unstable), but at the
// mean of its speeds (solve.MeanSpeed) when it has a speed window and res
// comes from the simulator, which follows the speed over time. It returns
// nil when no resource carries any load.
func Saturate(m *model.Model, res *solve.Result) *Saturation {
	open, err := m.Clone()
	if err != nil {
		return nil
	}
	// A saturated CPU runs at its speed curve's factor for full use, and
	// at the slowest of the speeds it varies over, or their mean.
	timed := res != nil && res.Solver == "sim"
	for _, h := range open.Hosts {
		if len(h.CPU.SpeedCurve) > 0 {
			h.CPU.Speed *= model.SpeedAt(h.CPU.SpeedCurve, 1)
			h.CPU.SpeedCurve = nil
		}
		switch v := h.CPU.SpeedVariation; {
		case timed && h.CPU.VariesOverTime():
			h.CPU.Speed = solve.MeanSpeed(h.CPU)
		case v > 0:
			mult := solve.SpeedMultipliers(v)
			h.CPU.Speed /= mult[len(mult)-1]
		}
		h.CPU.SpeedVariation = 0
	}
	closedOnly := true
	for _, w := range open.Workloads {
		if w.Closed != nil {
			rate := 0.0
			if res != nil && res.Workloads[w.Name] != nil {
				rate = res.Workloads[w.Name].Throughput
			}
			w.Closed, w.Open = nil, &model.Open{Rate: rate}
		} else if w.Open != nil && w.Open.Rate > 0 {
			closedOnly = false
		}
	}
	b := solve.Bounds(open)
	top := b.Utilization[b.Bottleneck]
	if b.Bottleneck == "" || !(top > 0) || math.IsInf(top, 0) {
		return nil
	}
	s := &Saturation{Resource: b.Bottleneck, Utilization: top, Factor: 1 / top, ClosedOnly: closedOnly, Source: "bounds"}
	// The speed when fully busy sets the factor; the utilization at the
	// observed load is the solver's, where res has it.
	if res != nil {
		if rr := res.Resources[b.Bottleneck]; rr != nil {
			s.Utilization = rr.Load()
		}
	}
	s.At = loadsAt(m, s.Factor)
	return s
}

// loadsAt gives every workload's load at a factor: open rates, closed
// populations.
func loadsAt(m *model.Model, f float64) map[string]float64 {
	at := map[string]float64{}
	for _, w := range m.Workloads {
		switch {
		case w.Open != nil:
			at["workload."+w.Name+".open.rate"] = w.Open.Rate * f
		case w.Closed != nil:
			at["workload."+w.Name+".closed.users"] = float64(w.Closed.Users) * f
		}
	}
	return at
}

// saturatedUtilization is the utilization from which a resource counts as
// saturated in a solved sweep point.
const saturatedUtilization = 0.98

// refineSaturation checks the utilization law's answer against the solved
// load levels. The law sees thread pools and locks only through the work
// done while holding them; as load grows, their holders also wait for what
// they call, so a pool can run out before the busiest active resource. When
// some other resource is saturated at a load level where the law's
// bottleneck is not, or the model turns unstable below the law's saturating
// load, that resource is the bottleneck, at the load where its utilization,
// interpolated between load levels, reaches saturatedUtilization (a pool
// that others wait on approaches full utilization only slowly); never
// beyond the law's saturating load.
func refineSaturation(m *model.Model, sat *Saturation, sw *Sweep) *Saturation {
	if sat == nil || sw == nil {
		return sat
	}
	best, bestRes := sat.Factor, ""
	prevF, prevU := 0.0, map[string]float64{}
	for _, pt := range sw.Points {
		res := pt.Result
		if res == nil {
			continue
		}
		if !res.Stable {
			// The solver found where the overload starts.
			f := pt.Factor
			if s := res.Saturation; s != nil {
				for key, v := range s.At {
					if load := observedAt(m, key); load > 0 && v/load < f {
						f = v / load
					}
				}
			}
			f = math.Max(f, prevF)
			if f < best && res.Bottleneck != "" {
				best, bestRes = f, res.Bottleneck
			}
			break
		}
		// Another resource saturated while the law's bottleneck is not: it
		// caps the throughput first.
		boundU := 0.0
		if rr := res.Resources[sat.Resource]; rr != nil {
			boundU = rr.Load()
		}
		for _, name := range slices.Sorted(maps.Keys(res.Resources)) {
			u := res.Resources[name].Load()
			if u >= saturatedUtilization && name != sat.Resource && boundU < saturatedUtilization {
				u0 := prevU[name]
				f := pt.Factor
				if u > u0 {
					f = prevF + (saturatedUtilization-u0)*(pt.Factor-prevF)/(u-u0)
				}
				f = math.Min(math.Max(f, prevF), math.Min(pt.Factor, sat.Factor))
				if bestRes == "" || f < best {
					best, bestRes = f, name
				}
			}
			prevU[name] = u
		}
		prevF = pt.Factor
		if bestRes != "" {
			break
		}
	}
	if bestRes == "" {
		return sat
	}
	bound := *sat
	return &Saturation{Resource: bestRes, Factor: best, At: loadsAt(m, best), ClosedOnly: sat.ClosedOnly, Source: "sweep", Bound: &bound}
}

// observedAt is the observed load a saturation key names.
func observedAt(m *model.Model, key string) float64 {
	for _, w := range m.Workloads {
		switch key {
		case "workload." + w.Name + ".open.rate":
			if w.Open != nil {
				return w.Open.Rate
			}
		case "workload." + w.Name + ".closed.users":
			if w.Closed != nil {
				return float64(w.Closed.Users)
			}
		}
	}
	return 0
}

// LoadFactors chooses n load factors for a sweep: from the observed load (1)
// to 98 % of the saturating factor, the last points close to it where
// response times climb; for closed workloads, which stay stable, on to 1.5
// times the saturating population; up to 4 times the load when nothing
// saturates. When the observed load is already near or past saturation, the
// sweep starts lower.
func LoadFactors(sat *Saturation, n int) []float64 {
	if n < 2 {
		n = 2
	}
	lo, hi := 1.0, 4.0
	var near []float64
	switch {
	case sat == nil:
	case sat.ClosedOnly:
		lo, hi = math.Min(1, sat.Factor/4), math.Max(1.5*sat.Factor, 1.5)
	default:
		f := sat.Factor
		hi = 0.98 * f
		if hi <= 1.02 {
			lo = hi / 4
		}
		if n >= 5 {
			near = []float64{0.95 * f, hi}
			hi = 0.9 * f
		}
	}
	m := n - len(near)
	var out []float64
	for i := 0; i < m; i++ {
		out = append(out, roundFactor(lo+(hi-lo)*float64(i)/float64(m-1)))
	}
	for _, x := range near {
		out = append(out, roundFactor(x))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// roundFactor keeps four significant digits, so that sweep keys read well.
func roundFactor(f float64) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(f, 'g', 4, 64), 64)
	return v
}
