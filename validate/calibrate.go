package validate

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/perfcast/perfcast/extract"
	"github.com/perfcast/perfcast/internal/textout"
	"github.com/perfcast/perfcast/model"
)

// Bounds of the CPU overhead factor calibration applies: a factor outside
// them points to a model that is wrong in other ways than overhead, and is
// clamped, with a note.
const (
	MinCPUFactor = 0.5
	MaxCPUFactor = 2.0
)

// Calibration is what Calibrate changed.
type Calibration struct {
	// CPU holds, per host, the factor its CPU demands were multiplied by.
	CPU map[string]*CPUFactor `json:"cpu"`
	// Delay holds, per workload, the delay added at its entry.
	Delay map[string]*EntryDelay `json:"delay"`
	// Notes say what was left unchanged and why.
	Notes []string `json:"notes"`
}

// CPUFactor is the calibration of one host's CPU demands.
type CPUFactor struct {
	// Factor multiplies every CPU demand of the host's operations.
	Factor float64 `json:"factor"`
	// Measured and Predicted are the utilizations it was fitted on.
	Measured  float64 `json:"measured"`
	Predicted float64 `json:"predicted"`
	// Clamped tells that measured / predicted lay outside the bounds.
	Clamped bool `json:"clamped,omitempty"`
}

// EntryDelay is the calibration of one workload's entry.
type EntryDelay struct {
	// Seconds is the fixed delay added before the workload's first call.
	Seconds float64 `json:"seconds"`
	// Measured and Predicted are the mean response times it was fitted on
	// (the prediction after the CPU calibration).
	Measured  float64 `json:"measured"`
	Predicted float64 `json:"predicted"`
}

// Calibrate fits the model m on the measured run st, given the report of
// its validation: first, for every host whose CPU utilization was measured
// and differs from the prediction by more than the noise, a factor
// measured / predicted utilization (bounded to [MinCPUFactor, MaxCPUFactor])
// on its CPU demands; then, predicting again with those factors, for every
// workload whose measured mean response time exceeds the prediction by more
// than the noise, a fixed delay of the difference before its first call. It
// returns a calibrated copy of m, whose description says what was changed
// and by how much, and the calibration. m is not changed.
func Calibrate(ctx context.Context, m *model.Model, rep *Report, st *extract.State, solveFn SolveFunc) (*model.Model, *Calibration, error) {
	cal := &Calibration{CPU: map[string]*CPUFactor{}, Delay: map[string]*EntryDelay{}, Notes: []string{}}
	notef := func(format string, args ...any) { cal.Notes = append(cal.Notes, fmt.Sprintf(format, args...)) }

	for _, h := range rep.Model.Hosts {
		res := model.CPUResource(h.Name)
		mr, pr := rep.Measured.Resources[res], rep.Predicted.Resources[res]
		if mr == nil || pr == nil || !(pr.Utilization > 0) || !(mr.Utilization > 0) {
			continue
		}
		f := round3(mr.Utilization / pr.Utilization)
		if e, n := rep.Errors.Resources[res], rep.Noise.Resources[res]; e != nil && e.Utilization != nil && n != nil && n.Utilization != nil &&
			math.Abs(*e.Utilization) <= *n.Utilization {
			notef("host %s: CPU utilization measured %.4g, predicted %.4g: within the noise (±%.2g %%), demands unchanged",
				h.Name, mr.Utilization, pr.Utilization, 100**n.Utilization)
			continue
		}
		cf := &CPUFactor{Factor: f, Measured: mr.Utilization, Predicted: pr.Utilization}
		if f < MinCPUFactor || f > MaxCPUFactor {
			cf.Factor = math.Min(math.Max(f, MinCPUFactor), MaxCPUFactor)
			cf.Clamped = true
			notef("host %s: measured / predicted CPU utilization is %.3g, outside [%g, %g]: the factor is clamped to %g; the model differs from the system in more than instrumentation overhead",
				h.Name, f, MinCPUFactor, MaxCPUFactor, cf.Factor)
		}
		cal.CPU[h.Name] = cf
	}

	// Predict again with the CPU factors before fitting delays, which must
	// cover what the corrected demands do not.
	work, err := rep.Model.Clone()
	if err != nil {
		return nil, nil, errorf(m, "copy model: %v", err)
	}
	cal.apply(work)
	after := rep.Predicted
	if len(cal.CPU) > 0 {
		if after, err = solveFn(ctx, work); err != nil {
			return nil, nil, err
		}
	}
	for _, w := range work.Workloads {
		mw, pw := rep.Measured.Workloads[w.Name], after.Workloads[w.Name]
		if mw == nil || pw == nil {
			continue
		}
		d := mw.ResponseTime.Mean - pw.ResponseTime.Mean
		hm := halfWidth(mw.ResponseTime.CI95)
		hp := predictedHalfWidth(after, pw.ResponseTime.CI95)
		if math.IsNaN(hm) {
			hm = 0
		}
		if math.IsNaN(hp) {
			hp = 0
		}
		noise := math.Hypot(hm, hp)
		switch {
		case d <= 0:
			continue
		case d <= noise:
			notef("workload %s: measured mean response time %.4g s exceeds the prediction %.4g s by less than the noise (±%.2g s): no delay added",
				w.Name, mw.ResponseTime.Mean, pw.ResponseTime.Mean, noise)
			continue
		}
		cal.Delay[w.Name] = &EntryDelay{Seconds: round3(d), Measured: mw.ResponseTime.Mean, Predicted: pw.ResponseTime.Mean}
	}

	out, err := m.Clone()
	if err != nil {
		return nil, nil, errorf(m, "copy model: %v", err)
	}
	cal.apply(out)
	if line := cal.describe(rep.Traces); line != "" {
		if out.Description != "" {
			out.Description += "\n"
		}
		out.Description += line
	}
	if err := out.Validate(); err != nil {
		return nil, nil, errorf(m, "calibrated model is invalid: %v", err)
	}
	return out, cal, nil
}

// round3 rounds to three significant digits, which the noise of a
// measurement (rarely below 1 %) does not make worth more, and which keep the
// calibrated model readable.
func round3(x float64) float64 {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	p := math.Pow(10, 2-math.Floor(math.Log10(math.Abs(x))))
	return math.Round(x*p) / p
}

// apply changes m by the calibration: CPU demands of the operations of
// components on a calibrated host scaled, entry delays added (to a leading
// deterministic delay when the workload has one, so that calibrating a
// calibrated model accumulates).
func (cal *Calibration) apply(m *model.Model) {
	for _, c := range m.Components {
		cf := cal.CPU[c.Host]
		if cf == nil || cf.Factor == 1 {
			continue
		}
		for _, op := range c.Operations {
			model.Walk(op.Steps, func(s *model.Step) {
				if s.Kind == model.StepCPU {
					s.Demand = s.Demand.Scale(cf.Factor)
				}
			})
		}
	}
	for _, w := range m.Workloads {
		ed := cal.Delay[w.Name]
		if ed == nil {
			continue
		}
		if len(w.Steps) > 0 && w.Steps[0].Kind == model.StepDelay && w.Steps[0].Demand.Kind == model.DistDet {
			w.Steps[0].Demand = model.Det(w.Steps[0].Demand.Mean() + ed.Seconds)
			continue
		}
		w.Steps = append([]model.Step{{Kind: model.StepDelay, Demand: model.Det(ed.Seconds)}}, w.Steps...)
	}
}

// describe is the line calibration adds to the model's description.
func (cal *Calibration) describe(traces int64) string {
	var parts []string
	for _, h := range sortedKeys(cal.CPU) {
		cf := cal.CPU[h]
		parts = append(parts, fmt.Sprintf("CPU demands on host %s ×%.3g (utilization measured %.3g %%, predicted %.3g %%)",
			h, cf.Factor, 100*cf.Measured, 100*cf.Predicted))
	}
	for _, w := range sortedKeys(cal.Delay) {
		ed := cal.Delay[w]
		parts = append(parts, fmt.Sprintf("workload %s: delay %s before its first call (mean response time measured %s, predicted %s)",
			w, textout.Duration(ed.Seconds), textout.Duration(ed.Measured), textout.Duration(ed.Predicted)))
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("Calibrated on %d traces: %s.", traces, strings.Join(parts, "; "))
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
