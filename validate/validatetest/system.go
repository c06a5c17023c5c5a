// Package validatetest generates the traces of a small system whose every
// figure is known, and the model of that system, for testing validation and
// calibration.
//
// The system: requests arrive as a Poisson stream; a share of them is
// `front/GET /page`, which takes a connection from a pool (FIFO, when the
// pool is limited), runs on the CPU of host web, and calls
// `catalog/GetItem` on host app (CPU only); the others are `front/GET /home`
// (CPU only). CPUs never queue (many cores), so the only waiting is for the
// pool, which the generator computes exactly by the multi-server FIFO
// recursion. Every span carries its CPU time (perfcast.cpu.time). A
// constant extra delay before each request's work and a factor on every CPU
// time make systems that differ from the model in the ways calibration
// corrects.
package validatetest

import (
	"container/heap"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/perfcast/perfcast/ingest"
)

// System describes the system the traces come from. Times are in seconds.
type System struct {
	// Rate is the total arrival rate per second.
	Rate float64
	// PageShare is the share of requests that are GET /page.
	PageShare float64
	// PageCPU, HomeCPU and ItemCPU are the mean CPU times (exponential) of
	// GET /page, GET /home and GetItem, before CPUFactor.
	PageCPU, HomeCPU, ItemCPU float64
	// CPUFactor multiplies every CPU time (0 means 1).
	CPUFactor float64
	// Delay is a constant time at the start of every request, inside its
	// entry span, before any work.
	Delay float64
	// Pool is the number of connections GET /page holds one of for its
	// work; 0 means unlimited.
	Pool int
}

// Shop is the system the model of Model describes exactly.
func Shop() System {
	return System{Rate: 50, PageShare: 0.6, PageCPU: 2e-3, HomeCPU: 1e-3, ItemCPU: 1e-3}
}

// Model returns the model of the system s as YAML, with a pool of capacity
// pool (Pool of s when pool is 0, unlimited as 1000 when both are 0) and
// open workloads page and home at rates that are deliberately wrong (1/s),
// since validation sets them from the traces. CPUFactor and Delay are not in
// the model: they are what calibration should find.
func (s System) Model(pool int) string {
	if pool == 0 {
		pool = s.Pool
	}
	if pool == 0 {
		pool = 1000
	}
	return fmt.Sprintf(`perfcast: 1
name: vshop
hosts:
  web: {cpu: {cores: 64}}
  app: {cpu: {cores: 64}}
components:
  front:
    host: web
    operations:
      GET /page:
        steps:
          - hold:
              resource: conn
              steps:
                - cpu: exp(%gs)
                - call: catalog/GetItem
      GET /home:
        steps:
          - cpu: exp(%gs)
  catalog:
    host: app
    operations:
      GetItem:
        steps:
          - cpu: exp(%gs)
passive:
  conn: {capacity: %d}
workload:
  page:
    open: {rate: 1/s}
    steps: [{call: front/GET /page}]
  home:
    open: {rate: 1/s}
    steps: [{call: front/GET /home}]
`, s.PageCPU, s.HomeCPU, s.ItemCPU, pool)
}

// Traces are generated spans with the truth behind them.
type Traces struct {
	Spans []*ingest.Span
	// Page and Home are the response times of the GET /page and GET /home
	// requests in arrival order, in seconds.
	Page, Home []float64
}

// Generate makes the traces of n requests.
func (s System) Generate(seed uint64, n int) *Traces {
	g := &gen{s: s, r: rand.New(rand.NewPCG(seed, 11)), now: 1_700_000_000_000_000_000}
	if g.s.CPUFactor == 0 {
		g.s.CPUFactor = 1
	}
	if s.Pool > 0 {
		g.free = make(freeTimes, s.Pool)
		for i := range g.free {
			g.free[i] = g.now
		}
	}
	out := &Traces{}
	for i := 0; i < n; i++ {
		g.now += ns(g.r.ExpFloat64() / s.Rate)
		g.request(out)
	}
	return out
}

type gen struct {
	s    System
	r    *rand.Rand
	now  int64
	next uint64
	free freeTimes
}

func ns(sec float64) int64 { return int64(sec * 1e9) }

func (g *gen) spanID() ingest.SpanID {
	g.next++
	var id ingest.SpanID
	for i := 0; i < 8; i++ {
		id[i] = byte(g.next >> (56 - 8*i))
	}
	return id
}

func (g *gen) traceID() ingest.TraceID {
	g.next++
	var id ingest.TraceID
	id[0] = 7
	for i := 0; i < 8; i++ {
		id[8+i] = byte(g.next >> (56 - 8*i))
	}
	return id
}

// cpu draws a CPU time of the given model mean, times CPUFactor, rounded
// to nanoseconds so that span times and CPU times agree exactly.
func (g *gen) cpu(mean float64) int64 { return ns(g.r.ExpFloat64() * mean * g.s.CPUFactor) }

func (g *gen) request(out *Traces) {
	tid := g.traceID()
	arrival := g.now
	root := &ingest.Span{TraceID: tid, SpanID: g.spanID(), Kind: ingest.KindServer, Service: "front", Host: "web", Start: arrival}
	spans := []*ingest.Span{root}
	t := arrival + ns(g.s.Delay)
	if g.r.Float64() >= g.s.PageShare {
		root.Name = "GET /home"
		c := g.cpu(g.s.HomeCPU)
		root.CPUTime = float64(c) / 1e9
		root.End = t + c
		out.Home = append(out.Home, float64(root.End-root.Start)/1e9)
		out.Spans = append(out.Spans, spans...)
		return
	}
	root.Name = "GET /page"
	c, item := g.cpu(g.s.PageCPU), g.cpu(g.s.ItemCPU)
	start := t
	if g.free != nil {
		// FIFO pool: the request takes the connection that frees first.
		start = max(t, g.free[0])
		g.free[0] = start + c + item
		heap.Fix(&g.free, 0)
	}
	root.CPUTime = float64(c) / 1e9
	cl := &ingest.Span{TraceID: tid, SpanID: g.spanID(), ParentID: root.SpanID, Kind: ingest.KindClient, Service: "front", Host: "web",
		Name: "GET", Start: start + c, End: start + c + item, CPUTime: math.NaN()}
	sv := &ingest.Span{TraceID: tid, SpanID: g.spanID(), ParentID: cl.SpanID, Kind: ingest.KindServer, Service: "catalog", Host: "app",
		Name: "GetItem", Start: cl.Start, End: cl.End, CPUTime: float64(item) / 1e9}
	root.End = cl.End
	out.Page = append(out.Page, float64(root.End-root.Start)/1e9)
	out.Spans = append(out.Spans, root, cl, sv)
}

// freeTimes is a min-heap of the times the pool's connections free.
type freeTimes []int64

func (f freeTimes) Len() int           { return len(f) }
func (f freeTimes) Less(i, j int) bool { return f[i] < f[j] }
func (f freeTimes) Swap(i, j int)      { f[i], f[j] = f[j], f[i] }
func (f *freeTimes) Push(x any)        { *f = append(*f, x.(int64)) }
func (f *freeTimes) Pop() any {
	old := *f
	x := old[len(old)-1]
	*f = old[:len(old)-1]
	return x
}
