// Package textout writes figures for people: numbers with three significant
// digits, times in the unit that keeps them readable, and aligned tables
// that remember the first write error, so that a report can be written
// without checking every line.
package textout

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Sig3 writes a number with three significant digits, in plain notation for
// magnitudes from 0.001 to a million.
func Sig3(v float64) string {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	a := math.Abs(v)
	if a >= 1e6 || a < 1e-3 {
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	digits := max(2-int(math.Floor(math.Log10(a))), 0)
	return strconv.FormatFloat(v, 'f', digits, 64)
}

// DurationParts chooses a unit for a time in seconds (ns, µs, ms, s, min, h) and
// returns the number in that unit, the unit, and the factor from seconds to
// it. A time under half a nanosecond, the resolution of traces, is "0 ns".
func DurationParts(sec float64) (num, unit string, scale float64) {
	a := math.Abs(sec)
	switch {
	case sec == 0 || math.IsNaN(sec) || math.IsInf(sec, 0):
		return Sig3(sec), "s", 1
	case a < 0.5e-9:
		// Below the nanosecond that traces resolve: rounding noise.
		return "0", "ns", 1e9
	case a < 1e-6:
		return Sig3(sec * 1e9), "ns", 1e9
	case a < 1e-3:
		return Sig3(sec * 1e6), "µs", 1e6
	case a < 1:
		return Sig3(sec * 1e3), "ms", 1e3
	case a < 600:
		return Sig3(sec), "s", 1
	case a < 36000:
		return Sig3(sec / 60), "min", 1.0 / 60
	}
	return Sig3(sec / 3600), "h", 1.0 / 3600
}

// Duration writes a time in seconds with its unit, as "1.25 ms".
func Duration(sec float64) string {
	n, unit, _ := DurationParts(sec)
	return n + " " + unit
}

// Plural writes n and the noun, with an s when n is not one: "1 model",
// "3 models".
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// Abbreviate joins the first n names with commas and counts the rest:
// "a, b and 3 more".
func Abbreviate(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}

// Rate writes a rate per second, as "12.5/s".
func Rate(v float64) string { return Sig3(v) + "/s" }

// Writer writes text and keeps the first error.
type Writer struct {
	w   io.Writer
	err error
}

// NewWriter returns a Writer on w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Printf writes formatted text unless an earlier write failed.
func (w *Writer) Printf(format string, args ...any) {
	if w.err == nil {
		_, w.err = fmt.Fprintf(w.w, format, args...)
	}
}

// Err returns the first write error.
func (w *Writer) Err() error { return w.err }

// Table is one aligned table, columns two spaces apart.
type Table struct {
	w   *Writer
	tab *tabwriter.Writer
}

// Table starts a table.
func (w *Writer) Table() *Table {
	return &Table{w: w, tab: tabwriter.NewWriter(w.w, 0, 0, 2, ' ', 0)}
}

// Row adds a row.
func (t *Table) Row(cells ...string) {
	if t.w.err == nil {
		_, t.w.err = io.WriteString(t.tab, strings.Join(cells, "\t")+"\n")
	}
}

// Flush writes the table out.
func (t *Table) Flush() {
	if t.w.err == nil {
		t.w.err = t.tab.Flush()
	}
}
