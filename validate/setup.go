package validate

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/perfcast/perfcast/extract"
	"github.com/perfcast/perfcast/internal/textout"
	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve"
)

// DurationKey is the key in the measured result's Extra that holds the
// measured duration in seconds (from the first to the last arrival, widened
// by one mean interarrival time), over which rates were measured.
const DurationKey = "duration"

// RateNoiseKey is the key in the measured result's Extra that holds, per
// operation, the 95 % half-width of its measured throughput: compound
// Poisson, from the squares of its executions per request.
const RateNoiseKey = "operation_throughput_half_widths"

// z95 is the standard normal quantile of 0.975.
const z95 = 1.959963984540054

// impliedUsersTolerance is the relative difference between a closed
// workload's users and the population its measured throughput and response
// time imply beyond which a warning is given.
const impliedUsersTolerance = 0.2

// Prepared is a model set to the workload traces measured, with the
// measurement.
type Prepared struct {
	// Model is a copy of the model with only the workloads that matched
	// traces, open ones at their measured rate.
	Model *model.Model
	// Measured is what the traces measured, as a result.
	Measured *solve.Result
	// Warnings say what did not match.
	Warnings []string
}

// EntryOf returns the entry operation of a workload: the target of its
// first step that is a call, after any leading delay steps (which
// calibration adds), or the first of a mix's (extract.WorkloadEntries);
// "" when the workload starts otherwise.
func EntryOf(w *model.Workload) string {
	if e := extract.WorkloadEntries(w); len(e) > 0 {
		return e[0]
	}
	return ""
}

// Setup matches the workloads of m with the requests folded into st by
// entry operation and returns a copy of m set to the measured workload: a
// workload whose entry operation is X stands for the traces whose requests
// entered at X; open workloads get the measured rate; closed workloads keep
// their users (traces do not identify users); workloads that match no
// traces are left out. Warnings name the workloads and trace entry
// operations that did not match, and closed workloads whose users disagree
// with the population Little's law gives from the measurement.
func Setup(m *model.Model, st *extract.State) (*Prepared, error) {
	return SetupWith(m, st, Options{})
}

// SetupWith is Setup with options: with metrics, the measured CPU
// utilization of the hosts they cover comes from them.
func SetupWith(m *model.Model, st *extract.State, opts Options) (*Prepared, error) {
	// Counts over the traces' time times the share of the requests they
	// kept (sampling) are the system's rates.
	dur := st.Duration() * st.Kept()
	if dur <= 0 {
		return nil, fmt.Errorf("traces hold fewer than two requests (%d traces): no rates can be measured", st.Traces)
	}
	c, err := m.Clone()
	if err != nil {
		return nil, errorf(m, "copy model: %v", err)
	}
	p := &Prepared{Model: c}
	warnf := func(format string, args ...any) { p.Warnings = append(p.Warnings, fmt.Sprintf(format, args...)) }

	claimed := map[string]string{}
	var kept []*model.Workload
workloads:
	for _, w := range c.Workloads {
		entries := extract.WorkloadEntries(w)
		if len(entries) == 0 {
			warnf("workload %s does not start with a call, or a branch of calls: it matches no traces and is left out", w.Name)
			continue
		}
		for _, entry := range entries {
			if claimed[entry] != "" {
				warnf("workload %s enters at %s like workload %s: traces cannot tell them apart; %s is left out", w.Name, entry, claimed[entry], w.Name)
				continue workloads
			}
		}
		entry := strings.Join(entries, ", ")
		t, ok := st.EntriesTimes(entries)
		if !ok || t.Count() == 0 {
			warnf("workload %s (entry %s) matches no traces and is left out", w.Name, entry)
			continue
		}
		for _, e := range entries {
			claimed[e] = w.Name
		}
		if more := stepsAfterEntry(w); more > 0 {
			warnf("workload %s has %s after its entry call to %s: the traces measure %s alone, so its response times are not comparable", w.Name, textout.Plural(more, "step"), entry, entry)
		}
		x := float64(t.Count()) / dur
		switch {
		case w.Open != nil:
			w.Open.Rate = x
		case w.Closed != nil:
			z := w.Closed.Think.Mean()
			implied := x * (t.Mean() + z)
			if u := float64(w.Closed.Users); math.Abs(implied-u) > impliedUsersTolerance*u {
				warnf("workload %s: the measured throughput %s and mean response time %s imply about %.0f users thinking %s (Little's law), the model has %d; its users are kept",
					w.Name, textout.Rate(x), textout.Duration(t.Mean()), implied, textout.Duration(z), w.Closed.Users)
			}
		}
		kept = append(kept, w)
	}
	// Requests that enter at an operation the model sends messages to
	// (a consumer in traces of its own) are that send's, not a workload's.
	sent := map[string]bool{}
	for _, comp := range c.Components {
		for _, op := range comp.Operations {
			model.Walk(op.Steps, func(s *model.Step) {
				if s.Kind == model.StepSend {
					sent[s.Target] = true
				}
			})
		}
	}
	var unmatched []string
	for _, e := range st.Entries() {
		if claimed[e] == "" && !sent[e] {
			t, _ := st.EntryTimes(e)
			unmatched = append(unmatched, fmt.Sprintf("%s (%d requests)", e, t.Count()))
		}
	}
	if len(unmatched) > 0 {
		warnf("trace entry operations that match no workload, not compared: %s", textout.Abbreviate(unmatched, 10))
	}
	if len(kept) == 0 {
		return nil, errorf(m, "no workload matches the traces' entry operations (%s); a workload matches the traces whose requests enter at the operation of its first call",
			textout.Abbreviate(st.Entries(), 10))
	}
	c.Workloads = kept
	if err := c.Validate(); err != nil {
		return nil, errorf(m, "model at the measured workload is invalid: %v", err)
	}
	p.Measured, err = measure(c, st, dur)
	if err != nil {
		return nil, err
	}
	p.Warnings = append(p.Warnings, useMetrics(c, st, p.Measured, opts.Metrics)...)
	p.Warnings = append(p.Warnings, cpuWarnings(c, st, p.Measured)...)
	return p, nil
}

// stepsAfterEntry counts the steps of a workload after its entry call.
func stepsAfterEntry(w *model.Workload) int {
	for i, s := range w.Steps {
		switch s.Kind {
		case model.StepCall:
			return len(w.Steps) - i - 1
		case model.StepBranch:
			// A mix: the steps after the branch, and those after the
			// call in its longest branch.
			more := 0
			for _, b := range s.Branches {
				more = max(more, len(b.Steps)-1)
			}
			return len(w.Steps) - i - 1 + more
		}
	}
	return 0
}

// measure builds the measured result for the prepared model c: the state's
// own figures, with 95 % confidence intervals of the means, the quartiles
// and the measured duration in Extra. Counts over dur are rates: it is the
// traces' time times the share of the requests they kept.
func measure(c *model.Model, st *extract.State, dur float64) (*solve.Result, error) {
	// The state matches workloads by a first step that is a call: hand it
	// the workloads without their leading delays.
	bare, err := c.Clone()
	if err != nil {
		return nil, errorf(c, "copy model: %v", err)
	}
	for _, w := range bare.Workloads {
		for len(w.Steps) > 0 && w.Steps[0].Kind == model.StepDelay {
			w.Steps = w.Steps[1:]
		}
	}
	r := st.Measured(bare)
	r.Model = c.Name
	q := &Quartiles{Workloads: map[string][2]float64{}, Operations: map[string][2]float64{}}
	for _, w := range c.Workloads {
		wr := r.Workloads[w.Name]
		if wr == nil {
			continue
		}
		// What the workload stands for: the requests entering at its
		// entries (for the session workload, Measured counts the requests
		// carrying a session id alone).
		t, _ := st.EntriesTimes(extract.WorkloadEntries(w))
		wr.Throughput, wr.ResponseTime = float64(t.Count())/dur, t.Summary()
		wr.ResponseTime.CI95 = meanCI(t)
		if n := t.Count(); n > 0 {
			h := z95 * math.Sqrt(float64(n)) / dur
			wr.ThroughputCI95 = &[2]float64{wr.Throughput - h, wr.Throughput + h}
		}
		q.Workloads[w.Name] = [2]float64{t.Quantile(0.25), t.Quantile(0.75)}
	}
	// With open workloads only, the rates are set from the traces, and what
	// varies is what each request does; with closed ones the number of
	// requests varies too.
	open := true
	for _, w := range c.Workloads {
		open = open && w.Open != nil
	}
	rateHW := map[string]float64{}
	for id, or := range r.Operations {
		t, ok := st.OperationTimes(id)
		if !ok {
			continue
		}
		or.ResponseTime.CI95 = meanCI(t)
		q.Operations[id] = [2]float64{t.Quantile(0.25), t.Quantile(0.75)}
		// The count is a sum over a Poisson number of requests of each
		// one's executions, whose variance is the sum of their squares.
		v := float64(t.Count())
		if b, _ := st.OperationBunching(id); b.CountSq > 0 {
			v = bunchedVariance(b.CountSq, v, b.Requests, open)
		}
		if dur > 0 {
			rateHW[id] = z95 * math.Sqrt(v) / dur
		}
	}
	// CPU utilization: the busy time is a sum of per-request CPU times
	// over a Poisson number of requests, whose variance is the sum of the
	// squared CPU times. Summed per operation, the squares leave out what
	// two operations on one host add in one request: a lower bound then.
	sum, sumSq := map[string]float64{}, map[string]float64{}
	for _, id := range st.Operations() {
		comp := c.Component(componentOf(id))
		if comp == nil {
			continue
		}
		t, _ := st.OperationCPU(id)
		res := model.CPUResource(comp.Host)
		sum[res] += t.Sum()
		if b, _ := st.OperationBunching(id); b.CPUSq > 0 {
			sumSq[res] += bunchedVariance(b.CPUSq, t.Sum(), b.Requests, open)
		} else {
			sumSq[res] += t.SumSquares()
		}
	}
	for res, rr := range r.Resources {
		if sum[res] > 0 {
			h := z95 * rr.Utilization * math.Sqrt(sumSq[res]) / sum[res]
			rr.UtilizationCI95 = &[2]float64{rr.Utilization - h, rr.Utilization + h}
		}
	}
	if r.Extra == nil {
		r.Extra = map[string]any{}
	}
	r.Extra[DurationKey] = st.Duration()
	r.Extra[QuartilesKey] = q
	r.Extra[RateNoiseKey] = rateHW
	return r, nil
}

// bunchedVariance is the variance of a total over requests whose squares
// per request sum to sq: the compound Poisson sq, or, given the number of
// requests (given, with n of them), sq less sum²/n.
func bunchedVariance(sq, sum float64, n int64, given bool) float64 {
	if !given || n <= 0 {
		return sq
	}
	return max(sq-sum*sum/float64(n), 0)
}

// meanCI is the normal 95 % confidence interval of a sample's mean,
// treating the values as independent; nil with fewer than two.
func meanCI(t extract.Times) *[2]float64 {
	n := t.Count()
	if n < 2 {
		return nil
	}
	h := z95 * t.StdDev() / math.Sqrt(float64(n))
	return &[2]float64{t.Mean() - h, t.Mean() + h}
}

// cpuWarnings names the hosts whose operations ran in the traces but whose
// CPU utilization could not be measured.
func cpuWarnings(c *model.Model, st *extract.State, measured *solve.Result) []string {
	seen := map[string]bool{}
	for _, id := range st.Operations() {
		if comp := c.Component(componentOf(id)); comp != nil {
			seen[comp.Host] = true
		}
	}
	var missing []string
	for _, h := range c.Hosts {
		if seen[h.Name] && measured.Resources[model.CPUResource(h.Name)] == nil {
			missing = append(missing, h.Name)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	slices.Sort(missing)
	return []string{fmt.Sprintf("CPU utilization not compared on %s: not every span of its operations carries perfcast.cpu.time (give utilization metrics with --metrics)",
		strings.Join(missing, ", "))}
}
