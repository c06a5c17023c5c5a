package report

import (
	"math"
	"strconv"
	"strings"

	"github.com/perfcast/perfcast/internal/textout"
	"github.com/perfcast/perfcast/model"
)

// fmtPercent writes a fraction as a percentage.
func fmtPercent(f float64) string {
	p := f * 100
	if p != 0 && math.Abs(p) < 0.1 {
		return strconv.FormatFloat(p, 'g', 2, 64) + " %"
	}
	return strconv.FormatFloat(p, 'f', 1, 64) + " %"
}

// fmtUtil writes a utilization; a solver's figure above one (a pool whose
// holders would need more than all of it) is written as saturated.
func fmtUtil(u float64) string {
	if u > 1.0005 {
		return "saturated"
	}
	return fmtPercent(u)
}

// fmtFactor writes a load factor: "3.5×".
func fmtFactor(f float64) string { return trimSig3(f) + "×" }

// trimSig3 is sig3 without trailing zeros after the decimal point.
func trimSig3(v float64) string {
	s := textout.Sig3(v)
	if strings.Contains(s, ".") && !strings.ContainsAny(s, "e") {
		s = strings.TrimRight(s, "0")
		s = strings.TrimSuffix(s, ".")
	}
	return s
}

// fmtCount writes a whole number with thousands separators.
func fmtCount(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// fmtLoad writes a workload's load: a rate for an open workload, users for
// a closed one.
func fmtLoad(w *model.Workload, v float64) string {
	if w != nil && w.Closed != nil {
		return fmtCount(int64(math.Round(v))) + " users"
	}
	return textout.Rate(v)
}

// truncate shortens s to at most n characters, ending with an ellipsis.
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
