package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/perfcast/perfcast/ingest"
	"github.com/perfcast/perfcast/tracegen"
)

// TestStatsByService: stats lists per service its hosts, instances,
// processes (by instance, else host and pid), runtimes and the server
// spans that carry a CPU time, as the spans' resources say.
func TestStatsByService(t *testing.T) {
	const base = int64(1_700_000_000e9)
	var spans []*ingest.Span
	for i := range 40 {
		root := &ingest.Span{TraceID: tracegen.TraceID(1, uint64(i+1)), SpanID: tracegen.SpanID(uint64(2*i + 1)), Kind: ingest.KindServer,
			Name: "GET /", Service: "web", Host: "box", Instance: "web-1", Start: base + int64(i)*1e7, End: base + int64(i)*1e7 + 5e6, CPUTime: 1e-3}
		pid := "41"
		if i%2 == 1 {
			pid = "42"
		}
		child := &ingest.Span{TraceID: root.TraceID, SpanID: tracegen.SpanID(uint64(2*i + 2)), ParentID: root.SpanID, Kind: ingest.KindServer,
			Name: "GET /item", Service: "api", Host: "box", Start: root.Start + 1e6, End: root.Start + 4e6, CPUTime: math.NaN(),
			Process: &ingest.Process{Language: "nodejs", Runtime: "nodejs", PID: pid}}
		spans = append(spans, root, child)
	}
	b, err := (&ptrace.JSONMarshaler{}).MarshalTraces(tracegen.Traces(spans))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "t.otlp.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := perfcast(t, "stats", path)
	if code != 0 {
		t.Fatalf("stats: exit %d: %s", code, errs)
	}
	for _, want := range []string{"SERVICE  SPANS  HOSTS  INSTANCES  PROCESSES  RUNTIME", "api      40     1      0          2          nodejs   0 of 40", "web      40     1      1          1          -        40 of 40"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = perfcast(t, "stats", path, "--json")
	var rep statsReport
	if err := json.Unmarshal([]byte(out), &rep); code != 0 || err != nil {
		t.Fatalf("stats --json: exit %d, %v", code, err)
	}
	if len(rep.ByService) != 2 || rep.ByService[0].Service != "api" || rep.ByService[0].Processes != 2 || rep.ByService[1].CPUTimes != 40 {
		t.Errorf("by_service %+v", rep.ByService)
	}
}
