package tracegen

import (
	"strings"
	"testing"

	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve/sim"
)

func TestMetrics(t *testing.T) {
	m := NewMetrics(5, Options{})
	// 2 s of CPU spread over 4 s across the first interval's end, 1 s in
	// the second interval on another machine, and a client span.
	m.Add(&sim.Span{Host: "app", Start: 3, End: 7, CPU: 2})
	m.Add(&sim.Span{Host: "db-2", Start: 6, End: 6.5, CPU: 1})
	m.Add(&sim.Span{Host: "app", Kind: sim.SpanClient, Start: 1, End: 12})
	var b strings.Builder
	if err := m.Write(&b, map[string]int{"app": 4, "db-2": 1}); err != nil {
		t.Fatal(err)
	}
	want := `timestamp,host,cpu_seconds,cores
1700000000,app,0,4
1700000000,db-2,0,1
1700000005,app,1,4
1700000005,db-2,0,1
1700000010,app,2,4
1700000010,db-2,1,1
1700000015,app,2,4
1700000015,db-2,1,1
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestMachineCores(t *testing.T) {
	md, err := model.Parse([]byte(testModel), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got := MachineCores(md)
	if len(got) != 3 || got["web-1"] != 2 || got["web-2"] != 2 || got["app"] != 2 {
		t.Errorf("cores %v", got)
	}
}
