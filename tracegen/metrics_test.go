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
	if err := m.Write(&b, map[string]model.CPU{"app": {Cores: 4}, "db-2": {Cores: 1}}); err != nil {
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

func TestMachines(t *testing.T) {
	md, err := model.Parse([]byte(testModel), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got := Machines(md)
	if len(got) != 3 || got["web-1"].Cores != 2 || got["web-2"].Cores != 2 || got["app"].Cores != 2 {
		t.Errorf("machines %v", got)
	}
}

// TestMetricsLimits: a machine whose limit binds has it in the columns
// cpu_limit and cpu_period, the others leave them empty.
func TestMetricsLimits(t *testing.T) {
	m := NewMetrics(5, Options{})
	m.Add(&sim.Span{Host: "app", Start: 0, End: 4, CPU: 1})
	m.Add(&sim.Span{Host: "db", Start: 0, End: 4, CPU: 1})
	var b strings.Builder
	if err := m.Write(&b, map[string]model.CPU{"app": {Cores: 4, Limit: 1.5}, "db": {Cores: 2, Limit: 2}}); err != nil {
		t.Fatal(err)
	}
	want := `timestamp,host,cpu_seconds,cores,cpu_limit,cpu_period
1700000000,app,0,4,1.5,100ms
1700000000,db,0,2,,
1700000005,app,1,4,1.5,100ms
1700000005,db,1,2,,
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
