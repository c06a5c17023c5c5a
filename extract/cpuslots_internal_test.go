package extract

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/perfcast/perfcast/ingest"
	"github.com/perfcast/perfcast/model"
)

// TestFanOutIntoSlots fans each request out to four calls of a service
// with one CPU slot, which starts their spans one after the other (it
// reads a request only once the previous one is done), 0.2 ms of network
// each way. With cpu_slots declared, every branch keeps the network alone
// as its delay, the same for all four, rather than its position's queueing.
func TestFanOutIntoSlots(t *testing.T) {
	const net, service = int64(200_000), int64(1_000_000)
	r := rand.New(rand.NewPCG(9, 9))
	next := spanIDs()
	var spans []*ingest.Span
	now := int64(1_700_000_000_000_000_000)
	for i := range 400 {
		now += int64(r.ExpFloat64() * 50e6)
		tid := testTraceID(4, i)
		mk := func(parent ingest.SpanID, kind ingest.Kind, svc, name string, s, e int64, cpu float64) *ingest.Span {
			sp := &ingest.Span{TraceID: tid, SpanID: next(), ParentID: parent, Kind: kind, Service: svc, Host: "box",
				Name: name, Start: s, End: e, CPUTime: cpu}
			spans = append(spans, sp)
			return sp
		}
		root := mk(ingest.SpanID{}, ingest.KindServer, "front", "GET /fan", now, 0, 1e-4)
		free := now + net
		end := now
		for range 4 {
			cl := mk(root.SpanID, ingest.KindClient, "front", "get", now, 0, math.NaN())
			start := free
			mk(cl.SpanID, ingest.KindServer, "store", "Get", start, start+service, float64(service)/1e9)
			free = start + service
			cl.End = free + net
			end = max(end, cl.End)
		}
		root.End = end + 100_000
	}
	cfg := &Config{Hosts: map[string]HostConfig{"box": {Cores: 1}}, CPUSlots: map[string]int{"store": 1}}
	m, _ := foldWith(t, spans, cfg).Model("fan", cfg)
	var delays []float64
	model.Walk(m.Operation("front/GET /fan").Steps, func(s *model.Step) {
		if s.Kind == model.StepParallel {
			for _, br := range s.Parallel {
				for _, b := range br {
					if b.Kind == model.StepDelay {
						delays = append(delays, b.Demand.Mean())
					}
				}
			}
		}
	})
	if len(delays) != 4 {
		t.Fatalf("delays %v in the fan-out, want 4:\n%s", delays, m.Marshal())
	}
	for _, d := range delays {
		// The latency's quantiles come from a sketch of 1 % relative accuracy.
		if want := 2 * float64(net) / 1e9; math.Abs(d-want) > 0.02*want {
			t.Errorf("branch delay %.4g, want the network's %.4g: %v", d, 2*float64(net)/1e9, delays)
		}
	}
}

// TestHoldCPU wraps runs of CPU steps, one hold per run, at any depth.
func TestHoldCPU(t *testing.T) {
	cpu := model.Step{Kind: model.StepCPU, Demand: model.Exp(1e-3)}
	delay := model.Step{Kind: model.StepDelay, Demand: model.Det(1e-3)}
	steps := []model.Step{cpu, cpu, delay, {Kind: model.StepBranch, Branches: []model.Branch{{P: 1, Steps: []model.Step{delay, cpu}}}}, cpu}
	got := holdCPU(steps, "slots")
	kinds := func(ss []model.Step) []model.StepKind {
		var k []model.StepKind
		for _, s := range ss {
			k = append(k, s.Kind)
		}
		return k
	}
	want := []model.StepKind{model.StepHold, model.StepDelay, model.StepBranch, model.StepHold}
	if !slices.Equal(kinds(got), want) || len(got[0].Steps) != 2 || len(got[3].Steps) != 1 {
		t.Fatalf("top level %v, want %v with 2 and 1 CPU steps held", kinds(got), want)
	}
	inner := got[2].Branches[0].Steps
	if !slices.Equal(kinds(inner), []model.StepKind{model.StepDelay, model.StepHold}) || inner[1].Resource != "slots" {
		t.Errorf("branch %v", kinds(inner))
	}
}
