package estimate

import (
	"encoding/json"
	"math"
)

// finite returns v, or nil when v is NaN or infinite, so that JSON encodes
// an unknown figure as null.
func finite(v float64) any {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return v
}

func finites(v []float64) []any {
	if v == nil {
		return nil
	}
	out := make([]any, len(v))
	for i, x := range v {
		out[i] = finite(x)
	}
	return out
}

// MarshalJSON encodes the fit, unknown standard errors as null.
func (f *Fit) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Method     string `json:"method"`
		Demands    []any  `json:"demands"`
		StdErr     []any  `json:"std_err,omitempty"`
		Background any    `json:"background"`
		Identified bool   `json:"identified"`
		Note       string `json:"note,omitempty"`
	}{f.Method, finites(f.Demands), finites(f.StdErr), finite(f.Background), f.Identified, f.Note})
}

// MarshalJSON encodes the score, errors that could not be computed as
// null.
func (s Score) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Method   string `json:"method"`
		Fit      *Fit   `json:"fit,omitempty"`
		CVError  any    `json:"cv_error"`
		FitError any    `json:"fit_error"`
		Bias     any    `json:"bias"`
		Skipped  string `json:"skipped,omitempty"`
	}{s.Method, s.Fit, finite(s.CVError), finite(s.FitError), finite(s.Bias), s.Skipped})
}

// MarshalJSON encodes the diagnosis, unknown figures as null.
func (d Diagnosis) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Windows     int    `json:"windows"`
		Ops         int    `json:"operations"`
		Busy        any    `json:"busy"`
		Utilization []any  `json:"utilization"`
		Condition   any    `json:"condition"`
		Flags       []Flag `json:"flags"`
	}{d.Windows, d.Ops, finite(d.Busy), finites(d.Utilization[:]), finite(d.Condition), d.Flags})
}

// MarshalJSON encodes the result, an unknown standard error as null.
func (r Result) MarshalJSON() ([]byte, error) {
	type plain Result
	return json.Marshal(struct {
		plain
		StdErr any `json:"std_err"`
	}{plain(r), finite(r.StdErr)})
}
