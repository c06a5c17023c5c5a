package extract

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/perfcast/perfcast/ingest"
	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/trace"
)

// Messages consumed in traces of their own. OpenTelemetry's messaging
// conventions let a consumer start a new trace whose CONSUMER span links
// to the PRODUCER span that sent the message (always so for batches).
// Extraction joins the two: a producer span that no traced consumer
// follows in its own trace is remembered with the operation that sent it,
// and a consumer's request that links to it counts as a message of that
// operation, whichever of the two traces is folded first. A consumer whose
// requests are mostly such messages becomes, in the model, a send from the
// operations that produced them instead of an open workload of its own.

// linkMemory is how many unmatched producer spans, and unmatched links of
// consumers, the state remembers at most: the oldest are forgotten first.
const linkMemory = 1 << 17

// recentIDs maps span ids to names, remembering at most linkMemory of
// them, the oldest forgotten first.
type recentIDs struct {
	names map[ingest.SpanID]string
	order []ingest.SpanID // a ring, next the oldest once full
	next  int
}

func (r *recentIDs) put(id ingest.SpanID, name string) {
	if r.names == nil {
		r.names = map[ingest.SpanID]string{}
	}
	if _, ok := r.names[id]; ok {
		r.names[id] = name
		return
	}
	if len(r.order) < linkMemory {
		r.order = append(r.order, id)
	} else {
		delete(r.names, r.order[r.next])
		r.order[r.next] = id
		r.next = (r.next + 1) % linkMemory
	}
	r.names[id] = name
}

// take returns the name of id and forgets it.
func (r *recentIDs) take(id ingest.SpanID) (string, bool) {
	name, ok := r.names[id]
	if ok {
		delete(r.names, id)
	}
	return name, ok
}

// links joins producers and consumers across traces.
type links struct {
	// produced holds producer spans no consumer in their trace followed,
	// by span id: the operation that sent them.
	produced recentIDs
	// waiting holds the links of consumers' requests to producer spans
	// not folded yet, by the producer span's id: the consumer's entry.
	waiting recentIDs
	// from counts, per consumer entry and producing operation, the
	// messages joined.
	from map[string]map[string]int64
}

// join counts n messages of producer to consumer.
func (l *links) join(consumer, producer string, n int64) {
	if l.from == nil {
		l.from = map[string]map[string]int64{}
	}
	if l.from[consumer] == nil {
		l.from[consumer] = map[string]int64{}
	}
	l.from[consumer][producer] += n
}

// produce records a producer span of operation op that no consumer in its
// trace followed.
func (l *links) produce(id ingest.SpanID, op string) {
	if consumer, ok := l.waiting.take(id); ok {
		l.join(consumer, op, 1)
		return
	}
	l.produced.put(id, op)
}

// consume records the links of a request that entered at consumer to
// spans of other traces than tr.
func (l *links) consume(n *trace.Node, tr ingest.TraceID, consumer string) {
	for _, ln := range n.Span.Links {
		if ln.TraceID == tr {
			continue
		}
		// A message may reach several consumer groups: the producer
		// span stays remembered.
		if op, ok := l.produced.names[ln.SpanID]; ok {
			l.join(consumer, op, 1)
		} else {
			l.waiting.put(ln.SpanID, consumer)
		}
	}
}

// merge adds the joins of o; what either still waits for is not matched
// across them.
func (l *links) merge(o *links) {
	for c, byOp := range o.from {
		for op, n := range byOp {
			l.join(c, op, n)
		}
	}
}

// consumerSends decides which consumer entries become sends: those whose
// requests mostly link to other traces, whose links found producer spans
// at least half as often as requests link (a batch links many), and whose
// operation runs for no other entry (its calls are its own class). It returns, per producing operation, the sends it
// makes per execution of each consumer.
func (g *generator) consumerSends() map[string]map[string]float64 {
	out := map[string]map[string]float64{}
	g.sentConsumers = map[string]bool{}
	for _, id := range slices.Sorted(maps.Keys(g.s.entries)) {
		e := g.s.entries[id]
		from := g.s.links.from[id]
		var joined int64
		for _, n := range from {
			joined += n
		}
		op := g.s.ops[id]
		if e.linked*2 < e.count || joined*2 < e.linked || op == nil || len(op.variants) != 1 || op.variants[id] == nil {
			continue
		}
		var parts []string
		for _, p := range slices.Sorted(maps.Keys(from)) {
			po := g.s.ops[p]
			if po == nil || po.count == 0 {
				continue
			}
			// The consumer's executions apportioned to the producers by
			// their messages, per execution of the producer.
			per := float64(e.count) * float64(from[p]) / float64(joined) / float64(po.count)
			if out[p] == nil {
				out[p] = map[string]float64{}
			}
			out[p][id] = per
			parts = append(parts, fmt.Sprintf("%s %.3g per execution", p, per))
		}
		if len(parts) == 0 {
			continue
		}
		g.sentConsumers[id] = true
		g.rep.evidencef("%s: %.0f %% of its requests are messages linked to producer spans in other traces, %d requests linking to %d producer spans found: sent by %s, not a workload of its own",
			id, 100*float64(e.linked)/float64(e.count), e.linked, joined, strings.Join(parts, ", "))
	}
	return out
}

// sendSteps are the steps that send, per execution, mean messages to
// target: a branch when at most one, else a loop of one or two counts.
func sendSteps(target string, mean float64) []model.Step {
	send := []model.Step{{Kind: model.StepSend, Target: target}}
	switch {
	case mean >= 0.9995 && mean <= 1.0005:
		return send
	case mean < 1:
		p := round(mean, 4)
		return []model.Step{{Kind: model.StepBranch, Branches: []model.Branch{{P: p, Steps: send}, {P: 1 - p, Steps: nil}}}}
	}
	lo := int(math.Floor(mean))
	frac := round(mean-float64(lo), 4)
	times := model.ConstCount(lo)
	if frac > 0 {
		if c, err := model.NewPMF([]int{lo, lo + 1}, []float64{1 - frac, frac}); err == nil {
			times = c
		}
	}
	return []model.Step{{Kind: model.StepLoop, Times: times, Steps: send}}
}
