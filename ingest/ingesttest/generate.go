// Package ingesttest generates synthetic traces and writes them in every
// format perfcast reads, for tests and benchmarks of the readers and of the
// assembly of call trees.
package ingesttest

import (
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/perfcast/perfcast/ingest"
)

// Base is the start time of generated traces, in Unix nanoseconds.
const Base int64 = 1_700_000_000_000_000_000

// Generator makes call trees of a small shop: a frontend calls a catalog
// service (two instances on their own host, whose clock runs ahead), which
// queries a database in a loop; some requests publish a message that a
// worker consumes asynchronously, with a link to the request that caused it.
// All times are whole microseconds, so every format carries them exactly.
type Generator struct {
	rng   *rand.Rand
	next  int64 // start of the next trace
	count uint64
	// Skew is how far the catalog host's clock runs ahead, in nanoseconds
	// (a multiple of 1000). The default is 0.
	Skew int64
	// Extras adds the attributes session.id and http.request.body.size to
	// the root spans.
	Extras bool
}

// NewGenerator returns a generator whose output depends only on seed.
func NewGenerator(seed uint64) *Generator {
	return &Generator{rng: rand.New(rand.NewPCG(seed, 0x5eed)), next: Base}
}

func (g *Generator) ids() (ingest.TraceID, func() ingest.SpanID) {
	g.count++
	var t ingest.TraceID
	hi, lo := g.rng.Uint64(), g.count
	for i := 0; i < 8; i++ {
		t[i] = byte(hi >> (56 - 8*i))
		t[8+i] = byte(lo >> (56 - 8*i))
	}
	n := uint64(0)
	return t, func() ingest.SpanID {
		n++
		var s ingest.SpanID
		v := lo<<16 | n
		for i := 0; i < 8; i++ {
			s[i] = byte(v >> (56 - 8*i))
		}
		return s
	}
}

// us returns a random duration of whole microseconds in [lo, hi) µs.
func (g *Generator) us(lo, hi int) int64 {
	return int64(lo+g.rng.IntN(hi-lo)) * 1000
}

// Trace returns the spans of the next trace, parents before children.
func (g *Generator) Trace() []*ingest.Span {
	tid, newID := g.ids()
	start := g.next
	g.next += g.us(100, 3000)
	var out []*ingest.Span
	span := func(parent *ingest.Span, name, service, host, inst string, kind ingest.Kind, s, e int64) *ingest.Span {
		sp := &ingest.Span{TraceID: tid, SpanID: newID(), Name: name, Service: service, Host: host,
			Instance: inst, Kind: kind, Start: s, End: e, CPUTime: math.NaN()}
		if parent != nil {
			sp.ParentID = parent.SpanID
		}
		out = append(out, sp)
		return sp
	}
	item := g.rng.IntN(1000)
	loops := 1 + g.rng.IntN(3)
	// Durations inside out: database calls, catalog, frontend.
	dbDur := make([]int64, loops)
	var catalogWork int64 = g.us(50, 400)
	for i := range dbDur {
		dbDur[i] = g.us(100, 900)
		catalogWork += dbDur[i] + 2*g.us(10, 40)
	}
	net := g.us(50, 200)
	clientDur := catalogWork + 2*net
	render := g.us(100, 600)
	rootDur := g.us(50, 200) + clientDur + render + g.us(20, 80)

	root := span(nil, "GET /item/{id}", "frontend", "web-1", "frontend-0", ingest.KindServer, start, start+rootDur)
	root.HTTPRoute, root.HTTPMethod, root.URLPath = "/item/{id}", "GET", "/item/"+itoa(item)
	root.CPUTime = float64(g.us(100, 300)) / 1e9
	if g.Extras {
		root.Extra = []ingest.Attr{{Key: "http.request.body.size", Value: itoa(g.rng.IntN(5000))},
			{Key: "session.id", Value: "s" + itoa(g.rng.IntN(50))}}
	}
	cs := start + g.us(20, 50)
	client := span(root, "GET", "frontend", "web-1", "frontend-0", ingest.KindClient, cs, cs+clientDur)
	client.HTTPMethod, client.ServerAddress, client.PeerService = "GET", "catalog", "catalog"
	inst := "catalog-" + itoa(g.rng.IntN(2))
	ss := cs + net + g.Skew
	server := span(client, "GET /item/{id}", "catalog", "app-2", inst, ingest.KindServer, ss, ss+catalogWork)
	server.HTTPRoute, server.HTTPMethod, server.URLPath = "/item/{id}", "GET", "/item/"+itoa(item)
	server.CPUTime = float64(catalogWork/3/1000*1000) / 1e9
	t := ss + g.us(10, 40)
	for i := range dbDur {
		q := span(server, "SELECT items", "catalog", "app-2", inst, ingest.KindClient, t, t+dbDur[i])
		q.DBSystem, q.ServerAddress = "postgresql", "db-1"
		if g.rng.IntN(20) == 0 {
			q.Status = ingest.StatusError
		}
		t += dbDur[i] + 2*g.us(10, 40)
	}
	rs := client.End + g.us(10, 40)
	span(root, "render", "frontend", "web-1", "frontend-0", ingest.KindInternal, rs, rs+render)
	if g.rng.IntN(3) == 0 {
		ps := rs + g.us(1, int(render/1000))
		prod := span(root, "orders publish", "frontend", "web-1", "frontend-0", ingest.KindProducer, ps, ps+g.us(5, 30))
		prod.ServerAddress = "queue-1"
		cs := prod.End + g.us(200, 5000)
		cons := span(prod, "orders process", "worker", "worker-1", "worker-0", ingest.KindConsumer, cs, cs+g.us(100, 2000))
		cons.CPUTime = 0.0001
		// A link to a span of an earlier trace, as batching consumers record.
		var other ingest.TraceID
		other[15] = byte(g.count)
		other[0] = 0xee
		cons.Links = []ingest.Link{{TraceID: other, SpanID: ingest.SpanID{0, 0, 0, 0, 0, 0, 0, 1}}}
	}
	if g.rng.IntN(10) == 0 {
		root.Status = ingest.StatusError
	} else {
		root.Status = ingest.StatusOK
	}
	return out
}

// Traces returns the spans of n traces, trace after trace.
func (g *Generator) Traces(n int) []*ingest.Span {
	var out []*ingest.Span
	for i := 0; i < n; i++ {
		out = append(out, g.Trace()...)
	}
	return out
}

func itoa(i int) string { return strconv.Itoa(i) }

// Stream yields generated spans as a collector would receive them: spans of
// up to Concurrent traces interleaved, each trace's spans in the order they
// end (children before parents).
type Stream struct {
	g          *Generator
	Concurrent int
	active     [][]*ingest.Span
	pos        int
	left       int64
}

// NewStream returns a stream of about total spans (it stops after the
// trace that crosses total).
func NewStream(seed uint64, total int64, concurrent int) *Stream {
	return &Stream{g: NewGenerator(seed), Concurrent: concurrent, left: total}
}

// Next returns the next span, or nil at the end.
func (s *Stream) Next() *ingest.Span {
	for len(s.active) < s.Concurrent && s.left > 0 {
		t := s.g.Trace()
		sortByEnd(t)
		s.left -= int64(len(t))
		s.active = append(s.active, t)
	}
	if len(s.active) == 0 {
		return nil
	}
	s.pos %= len(s.active)
	t := s.active[s.pos]
	sp := t[0]
	if len(t) == 1 {
		last := len(s.active) - 1
		s.active[s.pos] = s.active[last]
		s.active[last] = nil
		s.active = s.active[:last]
	} else {
		s.active[s.pos] = t[1:]
		s.pos++
	}
	return sp
}

func sortByEnd(t []*ingest.Span) {
	for i := 1; i < len(t); i++ {
		for j := i; j > 0 && t[j].End < t[j-1].End; j-- {
			t[j], t[j-1] = t[j-1], t[j]
		}
	}
}

// Messages returns the spans of n requests to orders (one every 50 ms,
// 4 ms of CPU) whose producer span sends a message that a worker consumes
// (2 ms of CPU) in a trace of its own, its consumer span linking to the
// producer span, as OpenTelemetry's messaging conventions allow.
func Messages(n int) (producers, consumers []*ingest.Span) {
	at := Base
	for i := range n {
		at += 50_000_000
		var pt, ct ingest.TraceID
		pt[0], pt[14], pt[15] = 1, byte(i>>8), byte(i)
		ct[0], ct[14], ct[15] = 2, byte(i>>8), byte(i)
		root := &ingest.Span{TraceID: pt, SpanID: ingest.SpanID{1}, Start: at, End: at + 5e6, Name: "POST /orders", Service: "orders", Kind: ingest.KindServer, CPUTime: 0.004}
		prod := &ingest.Span{TraceID: pt, SpanID: ingest.SpanID{2, byte(i >> 8), byte(i)}, ParentID: root.SpanID, Start: at + 1e6, End: at + 1e6 + 1000, Name: "orders publish", Service: "orders", Kind: ingest.KindProducer, CPUTime: math.NaN()}
		cons := &ingest.Span{TraceID: ct, SpanID: ingest.SpanID{3}, Start: at + 8e6, End: at + 11e6, Name: "orders process", Service: "worker", Kind: ingest.KindConsumer, CPUTime: 0.002,
			Links: []ingest.Link{{TraceID: pt, SpanID: prod.SpanID}}}
		producers = append(producers, root, prod)
		consumers = append(consumers, cons)
	}
	return producers, consumers
}
