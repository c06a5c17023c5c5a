package extract

import (
	"strings"
	"testing"

	"github.com/perfcast/perfcast/ingest"
)

// TestConsumerLinkedWarned folds messages consumed in traces of their own,
// each consumer span linking to its producer span: the consumer's workload
// is open at its own rate, and the report says a what-if on the producers
// leaves it as it is. The state keeps the count.
func TestConsumerLinkedWarned(t *testing.T) {
	var spans []*ingest.Span
	at := int64(1_700_000_000_000_000_000)
	for i := range 300 {
		at += 50_000_000
		var pt, ct ingest.TraceID
		pt[0], pt[15] = 1, byte(i)
		pt[14] = byte(i >> 8)
		ct[0], ct[15] = 2, byte(i)
		ct[14] = byte(i >> 8)
		root := &ingest.Span{TraceID: pt, SpanID: ingest.SpanID{1}, Start: at, End: at + 5e6, Name: "POST /orders", Service: "orders", Kind: ingest.KindServer, CPUTime: 0.004}
		prod := &ingest.Span{TraceID: pt, SpanID: ingest.SpanID{2}, ParentID: root.SpanID, Start: at + 1e6, End: at + 1e6 + 1000, Name: "orders publish", Service: "orders", Kind: ingest.KindProducer, CPUTime: 0}
		cons := &ingest.Span{TraceID: ct, SpanID: ingest.SpanID{3}, Start: at + 8e6, End: at + 11e6, Name: "orders process", Service: "worker", Kind: ingest.KindConsumer, CPUTime: 0.002,
			Links: []ingest.Link{{TraceID: pt, SpanID: prod.SpanID}}}
		spans = append(spans, root, prod, cons)
	}
	st := foldWith(t, spans, nil)
	loaded := roundTrip(t, st)
	m, rep := loaded.Model("queue", nil)
	if w := m.Workload("orders process"); w == nil || w.Open == nil {
		t.Fatalf("no open workload for the consumer:\n%s", m.Marshal())
	}
	warned := strings.Join(rep.Warnings, "\n")
	if !strings.Contains(warned, "workload orders process: 100 % of its requests link to spans of other traces") {
		t.Errorf("no warning that the consumer's requests are linked messages:\n%s", warned)
	}
	if strings.Contains(warned, "workload POST /orders:") {
		t.Errorf("the producer's workload is warned of:\n%s", warned)
	}
}
