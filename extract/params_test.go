package extract

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/perfcast/perfcast/ingest"
	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/trace"
)

// paramTraces makes requests to api/upload whose body size is small
// (100–1000 bytes, 70 %) or large (10–100 kB); large ones take 5 ms of CPU
// instead of 1 ms and call store/put, small ones do not.
func paramTraces(n int, seed uint64) []*ingest.Span {
	r := rand.New(rand.NewPCG(seed, 5))
	var spans []*ingest.Span
	t := int64(1_700_000_000_000_000_000)
	next := spanIDs()
	for i := 0; i < n; i++ {
		t += int64(r.ExpFloat64() * 1e9 / 20)
		tid := testTraceID(3, i)
		large := r.Float64() < 0.3
		size := 100 + r.Float64()*900
		cpu := r.ExpFloat64() * 1e-3
		if large {
			size = 10000 + r.Float64()*90000
			cpu = r.ExpFloat64() * 5e-3
		}
		root := &ingest.Span{TraceID: tid, SpanID: next(), Kind: ingest.KindServer, Service: "api", Host: "h1",
			Name: "POST /upload", Start: t, CPUTime: cpu,
			Extra: []ingest.Attr{{Key: "http.request.body.size", Value: strconv.Itoa(int(size))}}}
		end := t + int64(cpu*1e9)
		spans = append(spans, root)
		if large {
			cl := &ingest.Span{TraceID: tid, SpanID: next(), ParentID: root.SpanID, Kind: ingest.KindClient, Service: "api",
				Host: "h1", Name: "put", Start: end, End: end + 2e6, CPUTime: math.NaN()}
			sv := &ingest.Span{TraceID: tid, SpanID: next(), ParentID: cl.SpanID, Kind: ingest.KindServer, Service: "store",
				Host: "h2", Name: "put", Start: end + 1e5, End: end + 19e5, CPUTime: 1.8e-3}
			spans = append(spans, cl, sv)
			end += 2e6
		}
		root.End = end
	}
	return spans
}

func TestParamsSwitch(t *testing.T) {
	const n = 20000
	cfg := &Config{Params: []string{"http.request.body.size"}, ParamBins: 2}
	st := NewState()
	a := trace.New(trace.Options{}, func(tr *trace.Tree) error {
		st.Fold(tr, cfg)
		return nil
	})
	for _, s := range paramTraces(n, 1) {
		if err := a.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	m, rep := st.Model("params", cfg)
	if err := m.Validate(); err != nil {
		t.Fatalf("%v\n%s", err, m.Marshal())
	}
	w := m.Workloads[0]
	if len(w.Params) != 1 || len(w.Params[0].Values) != 2 {
		t.Fatalf("want one parameter of two bins:\n%s", m.Marshal())
	}
	p := w.Params[0]
	// The bins split at the gap between 1000 and 10000 bytes: probabilities
	// 0.7 and 0.3 within 4 standard errors.
	se := math.Sqrt(0.21 / n)
	small := p.Probs[0]
	if p.Values[0] > p.Values[1] {
		small = p.Probs[1]
	}
	if math.Abs(small-0.7) > 4*se {
		t.Errorf("small bin probability %g, want 0.7 ± %g; bins %v", small, 4*se, p.Values)
	}
	op := m.Operation("api/POST /upload")
	if len(op.Steps) == 0 || op.Steps[0].Kind != model.StepSwitch || op.Steps[0].On != "http.request.body.size" {
		t.Fatalf("no switch on the parameter:\n%s\nevidence %v", m.Marshal(), rep.Evidence)
	}
	// Expected demands per request agree with the truth: CPU 0.7×1 ms +
	// 0.3×5 ms on h1, and 0.3 calls of store/put.
	d := m.Demands(w)
	within(t, "api cpu", d.Service["h1.cpu"], 0.7e-3+0.3*5e-3, 5e-3*math.Sqrt(0.3/n)*2+1e-3/math.Sqrt(n)*2)
	within(t, "store visits", d.Visits["store/put"], 0.3, se)
}
