package extract

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/perfcast/perfcast/ingest"
	"github.com/perfcast/perfcast/ingest/ingesttest"
	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve"
	"github.com/perfcast/perfcast/solve/mva"
	"github.com/perfcast/perfcast/whatif"
)

// TestConsumerLinked folds messages consumed in traces of their own: the
// consumer is not a workload but a send from the operation that produced
// its messages, whichever traces are folded first, and so it follows a
// what-if on the producer's load. Without the producers' traces, it is an
// open workload, with a warning. The state keeps the joins.
func TestConsumerLinked(t *testing.T) {
	producers, consumers := ingesttest.Messages(300)
	for _, c := range []struct {
		name  string
		spans []*ingest.Span
	}{
		{"producers first", slices.Concat(producers, consumers)},
		{"consumers first", slices.Concat(consumers, producers)},
	} {
		m, rep := roundTrip(t, foldWith(t, c.spans, nil)).Model("queue", nil)
		if m.Workload("orders process") != nil {
			t.Errorf("%s: the consumer is a workload:\n%s", c.name, m.Marshal())
		}
		op := m.Operation("orders/POST /orders")
		if op == nil || !slices.ContainsFunc(op.Steps, func(s model.Step) bool { return s.Kind == model.StepSend && s.Target == "worker/orders process" }) {
			t.Errorf("%s: POST /orders does not send to the consumer:\n%s", c.name, m.Marshal())
		}
		if ev := strings.Join(rep.Evidence, "\n"); !strings.Contains(ev, "worker/orders process: 100 % of its requests are messages linked to producer spans in other traces, 300 requests linking to 300 producer spans found") {
			t.Errorf("%s: the report does not say the consumer's messages were joined:\n%s", c.name, ev)
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("%s: invalid model: %v", c.name, err)
		}
		// The worker's CPU follows the producer's load: 20 messages a
		// second of 2 ms, then twice as many.
		for _, load := range []float64{1, 2} {
			mm, err := m.Clone()
			if err != nil {
				t.Fatal(err)
			}
			if err := whatif.Set(mm, fmt.Sprintf("workload.*.load=%g", load)); err != nil {
				t.Fatal(err)
			}
			r, err := mva.New().Solve(context.Background(), mm, solve.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if u, want := r.Resources[model.CPUResource(mm.Component("worker").Host)].Utilization, load*20*0.002; math.Abs(u-want) > 0.01*want {
				t.Errorf("%s: at %g times the load the worker's CPU is %.4g busy, want %.4g", c.name, load, u, want)
			}
		}
	}

	m, rep := roundTrip(t, foldWith(t, consumers, nil)).Model("queue", nil)
	if w := m.Workload("orders process"); w == nil || w.Open == nil {
		t.Fatalf("no open workload for the consumer without its producers:\n%s", m.Marshal())
	}
	if w := strings.Join(rep.Warnings, "\n"); !strings.Contains(w, "workload orders process: 100 % of its requests link to spans of other traces") {
		t.Errorf("no warning that the consumer's requests are linked messages:\n%s", w)
	}
}

func TestSendSteps(t *testing.T) {
	for _, c := range []struct {
		mean float64
		want model.StepKind
	}{
		{1, model.StepSend},
		{0.25, model.StepBranch},
		{2.5, model.StepLoop},
		{3, model.StepLoop},
	} {
		steps := sendSteps("w/op", c.mean)
		if len(steps) != 1 || steps[0].Kind != c.want {
			t.Errorf("sendSteps(%g) = %+v, want one %v", c.mean, steps, c.want)
			continue
		}
		if got := stepsSends(steps); got < c.mean-1e-9 || got > c.mean+1e-9 {
			t.Errorf("sendSteps(%g) sends %g on average", c.mean, got)
		}
	}
}

// stepsSends is the mean number of sends steps make.
func stepsSends(steps []model.Step) float64 {
	n := 0.0
	for _, s := range steps {
		switch s.Kind {
		case model.StepSend:
			n++
		case model.StepBranch:
			for _, b := range s.Branches {
				n += b.P * stepsSends(b.Steps)
			}
		case model.StepLoop:
			n += s.Times.Mean() * stepsSends(s.Steps)
		}
	}
	return n
}
