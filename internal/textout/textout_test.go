package textout

import (
	"bytes"
	"errors"
	"testing"
)

func TestAbbreviate(t *testing.T) {
	if got := Abbreviate([]string{"a", "b", "c", "d"}, 2) + "; " + Abbreviate([]string{"a"}, 2); got != "a, b and 2 more; a" {
		t.Errorf("Abbreviate: %q", got)
	}
}

func TestPlural(t *testing.T) {
	if got := Plural(1, "model") + ", " + Plural(0, "host") + ", " + Plural(3, "workload"); got != "1 model, 0 hosts, 3 workloads" {
		t.Errorf("Plural: %q", got)
	}
}

func TestSig3(t *testing.T) {
	for v, want := range map[float64]string{
		0: "0", 1: "1.00", 12.345: "12.3", 999.7: "1000", 0.0012345: "0.00123",
		0.00012345: "0.000123", 1234567: "1.23e+06", -2.5: "-2.50",
	} {
		if got := Sig3(v); got != want {
			t.Errorf("Sig3(%g) = %q, want %q", v, got, want)
		}
	}
}

func TestDuration(t *testing.T) {
	for v, want := range map[float64]string{
		0: "0 s", 5.19e-18: "0 ns", -3e-12: "0 ns", 2.67e-8: "26.7 ns", 250e-6: "250 µs", 0.0125: "12.5 ms", 3: "3.00 s", 900: "15.0 min", 7200 * 6: "12.0 h",
	} {
		if got := Duration(v); got != want {
			t.Errorf("Duration(%g) = %q, want %q", v, got, want)
		}
	}
}

type failing struct{}

func (failing) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriterTable(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	w.Printf("title\n")
	tab := w.Table()
	tab.Row("a", "bbb")
	tab.Row("cccc", "d")
	tab.Flush()
	if got, want := buf.String(), "title\na     bbb\ncccc  d\n"; got != want || w.Err() != nil {
		t.Errorf("got %q (%v), want %q", got, w.Err(), want)
	}
	f := NewWriter(failing{})
	f.Printf("x")
	f.Table().Row("y")
	if f.Err() == nil || f.Err().Error() != "disk full" {
		t.Errorf("first error lost: %v", f.Err())
	}
}
