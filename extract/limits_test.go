package extract

import (
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/perfcast/perfcast/ingest"
	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/trace"
)

// fcfs serves requests arriving at the given times (in order of index) on k
// servers, first come first served, and returns when each starts and ends.
func fcfs(arrivals []int64, service []int64, k int) (start, end []int64) {
	order := make([]int, len(arrivals))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return arrivals[order[a]] < arrivals[order[b]] })
	free := make([]int64, k)
	start, end = make([]int64, len(arrivals)), make([]int64, len(arrivals))
	for _, i := range order {
		s := 0
		for j := range free {
			if free[j] < free[s] {
				s = j
			}
		}
		start[i] = max(arrivals[i], free[s])
		end[i] = start[i] + service[i]
		free[s] = end[i]
	}
	return start, end
}

// limitedTraces makes requests, half of which call a pool of 4 threads (100 ms each,
// 70 % busy) and then an operation behind a lock (40 ms, 56 % busy) in a
// component whose other operation, as busy, is not limited.
func limitedTraces(n int, seed uint64) []*ingest.Span {
	r := rand.New(rand.NewPCG(seed, 3))
	const lambda = 28.0
	const net = int64(100_000)
	exp := func(mean float64) int64 { return int64(r.ExpFloat64() * mean * 1e9) }
	arrive := make([]int64, n)
	t := int64(1_700_000_000_000_000_000)
	for i := range arrive {
		t += exp(1 / lambda)
		arrive[i] = t
	}
	poolS := make([]int64, n)
	poolArr := make([]int64, n)
	for i := range poolS {
		if i%2 == 0 {
			poolS[i] = exp(0.2)
		}
		poolArr[i] = arrive[i] + net
	}
	pStart, pEnd := fcfs(poolArr, poolS, 4)
	lockArr, lockS := make([]int64, n), make([]int64, n)
	readArr, readS := make([]int64, n), make([]int64, n)
	for i := range lockArr {
		lockArr[i] = pEnd[i] + 2*net
		if i%2 == 0 {
			lockS[i] = exp(0.04)
		}
		readArr[i] = arrive[i] + net
		readS[i] = exp(0.02)
	}
	lStart, lEnd := fcfs(lockArr, lockS, 1)
	var spans []*ingest.Span
	next := spanIDs()
	for i := 0; i < n; i++ {
		tid := testTraceID(2, i)
		mk := func(parent ingest.SpanID, kind ingest.Kind, svc, name string, s, e int64) *ingest.Span {
			sp := &ingest.Span{TraceID: tid, SpanID: next(), ParentID: parent, Kind: kind, Service: svc, Host: svc + "-host",
				Name: name, Start: s, End: e, CPUTime: math.NaN()}
			spans = append(spans, sp)
			return sp
		}
		// Every other request reads instead of calling the pool and the
		// lock, so that the locked component also runs unlimited work.
		if i%2 == 1 {
			root := mk(ingest.SpanID{}, ingest.KindServer, "front", "GET /read", arrive[i], readArr[i]+readS[i]+net)
			cl := mk(root.SpanID, ingest.KindClient, "front", "read", arrive[i], readArr[i]+readS[i]+net)
			mk(cl.SpanID, ingest.KindServer, "store", "Read", readArr[i], readArr[i]+readS[i])
			continue
		}
		root := mk(ingest.SpanID{}, ingest.KindServer, "front", "GET /work", arrive[i], lEnd[i]+net)
		c1 := mk(root.SpanID, ingest.KindClient, "front", "work", arrive[i], pEnd[i]+net)
		mk(c1.SpanID, ingest.KindServer, "pool", "Work", pStart[i], pEnd[i])
		c2 := mk(root.SpanID, ingest.KindClient, "front", "update", pEnd[i]+net, lEnd[i]+net)
		mk(c2.SpanID, ingest.KindServer, "store", "Update", lStart[i], lEnd[i])
	}
	return spans
}

func TestInferHiddenPoolAndLock(t *testing.T) {
	// Requests alternate between the two paths, 14/s each.
	spans := limitedTraces(40000, 1)
	st := fold(t, spans)
	m, rep := st.Model("limits", nil)
	if err := m.Validate(); err != nil {
		t.Fatalf("%v\n%s", err, m.Marshal())
	}
	if got := m.Component("pool").Threads; got != 4 {
		t.Errorf("pool threads = %d, want 4\nevidence: %v", got, rep.Evidence)
	}
	if got := m.Component("store").Threads; got != model.Unlimited {
		t.Errorf("store threads = %d, want unlimited", got)
	}
	if got := m.Component("front").Threads; got != model.Unlimited {
		t.Errorf("front threads = %d, want unlimited", got)
	}
	up := m.Operation("store/Update")
	if len(up.Steps) != 1 || up.Steps[0].Kind != model.StepHold {
		t.Fatalf("store/Update is not held by a lock:\n%s", m.Marshal())
	}
	if p := m.PassiveResource(up.Steps[0].Resource); p == nil || p.Capacity != 1 {
		t.Errorf("lock %+v, want capacity 1", p)
	}
	if len(m.Passive) != 1 {
		t.Errorf("want exactly one passive resource, got %d:\n%s", len(m.Passive), m.Marshal())
	}
}

func TestNoLimitWithoutEvidence(t *testing.T) {
	// The known-model traces have no limits: nothing may be inferred.
	st := fold(t, generate(11, 20000, true))
	m, _ := st.Model("x", nil)
	for _, c := range m.Components {
		if c.Threads != model.Unlimited {
			t.Errorf("component %s got %d threads without a limit in the traces", c.Name, c.Threads)
		}
	}
	if len(m.Passive) > 0 {
		t.Errorf("passive resources inferred without a limit: %v", m.Passive)
	}
}

func TestConcurrencyProfile(t *testing.T) {
	c := newConcurrency()
	// [0,10) [5,15) [20,30): level 1 for 5, 2 for 5, 1 for 5, 0, 1 for 10.
	c.add(5, 15)
	c.add(0, 10)
	c.add(20, 30)
	c.finish()
	if c.levelTime[1] != 20 || c.levelTime[2] != 5 || c.max != 2 || c.busyPeriods != 2 {
		t.Errorf("levels %v max %d busy periods %d", c.levelTime, c.max, c.busyPeriods)
	}
}

func TestConcurrencyMaxIsHeld(t *testing.T) {
	// Spans one after the other, each starting as the last ends, run one
	// at a time; and a span that comes after the sweep passed its time
	// (more than the lag late) is not placed in time. Neither raises the
	// highest level, which a limit is inferred at.
	c := newConcurrency()
	for i := range int64(10) {
		c.add(i*10, (i+1)*10)
	}
	c.sweep(1000)
	c.add(5, 8)
	c.finish()
	if c.max != 1 || c.levelTime[1] != 100 {
		t.Errorf("levels %v max %d, want 100 at level 1 and max 1", c.levelTime, c.max)
	}
}

// lockedCallTraces: requests to orders/POST take 1 ms of CPU, then wait for
// a mutex the handler holds around a call to payments/charge (exp(30 ms)),
// FCFS: the wait lies inside the orders span, before the client span.
func lockedCallTraces(n int, seed uint64) []*ingest.Span {
	r := rand.New(rand.NewPCG(seed, 8))
	exp := func(mean float64) int64 { return int64(r.ExpFloat64() * mean * 1e9) }
	arrive := make([]int64, n)
	want := make([]int64, n)
	svc := make([]int64, n)
	t := int64(1_700_000_000_000_000_000)
	for i := range arrive {
		t += exp(1.0 / 20)
		arrive[i] = t
		want[i] = t + 1_000_000
		svc[i] = exp(0.03)
	}
	start, end := fcfs(want, svc, 1)
	var spans []*ingest.Span
	next := spanIDs()
	for i := 0; i < n; i++ {
		tid := testTraceID(5, i)
		root := &ingest.Span{TraceID: tid, SpanID: next(), Kind: ingest.KindServer, Service: "orders", Host: "o",
			Name: "POST /orders", Start: arrive[i], End: end[i] + 100_000, CPUTime: 1e-3}
		cl := &ingest.Span{TraceID: tid, SpanID: next(), ParentID: root.SpanID, Kind: ingest.KindClient, Service: "orders",
			Host: "o", Name: "charge", Start: start[i], End: end[i], CPUTime: math.NaN()}
		sv := &ingest.Span{TraceID: tid, SpanID: next(), ParentID: cl.SpanID, Kind: ingest.KindServer, Service: "payments",
			Host: "p", Name: "charge", Start: start[i] + 50_000, End: end[i] - 50_000, CPUTime: 0}
		spans = append(spans, root, cl, sv)
	}
	return spans
}

func TestInferLockAroundCall(t *testing.T) {
	st := fold(t, lockedCallTraces(30000, 1))
	m, rep := st.Model("locked", nil)
	if err := m.Validate(); err != nil {
		t.Fatalf("%v\n%s", err, m.Marshal())
	}
	var hold *model.Step
	model.Walk(m.Operation("orders/POST /orders").Steps, func(s *model.Step) {
		if s.Kind == model.StepHold {
			hold = s
		}
	})
	if hold == nil || len(m.Passive) != 1 || m.Passive[0].Capacity != 1 {
		t.Fatalf("no lock of capacity 1 around the call:\n%s\n%v", m.Marshal(), rep.Evidence)
	}
	// The payments operation is not limited by itself: its bound is the
	// caller's lock.
	if p := m.Operation("payments/charge"); p.Steps[0].Kind == model.StepHold {
		t.Errorf("payments/charge got a limit of its own:\n%s", m.Marshal())
	}
	// The wait for the lock (M/M/1: ρ/(μ−λ) = 0.6/13.3 s = 45 ms) was in the
	// orders span's own time; the model produces it again, so the off-CPU
	// delay left must be small against it.
	var off float64
	for _, s := range m.Operation("orders/POST /orders").Steps {
		if s.Kind == model.StepDelay {
			off += s.Demand.Mean()
		}
	}
	if off > 0.1*0.045 {
		t.Errorf("off-CPU delay %.4g left of a 45 ms lock wait:\n%s", off, m.Marshal())
	}
}

func TestDeclaredPassive(t *testing.T) {
	cfg := &Config{Passive: map[string]PassiveConfig{
		"dbpool": {Capacity: 10, Calls: []string{"catalog/GetItem"}},
		"ledger": {Capacity: 1, Operations: []string{"worker/process"}},
		"typo":   {Capacity: 2, Calls: []string{"nope/none"}},
	}}
	st := NewState()
	a := trace.New(trace.Options{}, func(tr *trace.Tree) error {
		st.Fold(tr, cfg)
		return nil
	})
	for _, s := range generate(31, 2000, true) {
		if err := a.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	m, rep := st.Model("x", cfg)
	if err := m.Validate(); err != nil {
		t.Fatalf("%v\n%s", err, m.Marshal())
	}
	if p := m.PassiveResource("dbpool"); p == nil || p.Capacity != 10 {
		t.Fatalf("no dbpool:\n%s", m.Marshal())
	}
	holds := 0
	for _, id := range []string{"front/GET /page", "front/GET /home"} {
		model.Walk(m.Operation(id).Steps, func(s *model.Step) {
			if s.Kind == model.StepHold && s.Resource == "dbpool" {
				if len(s.Steps) == 0 || s.Steps[len(s.Steps)-1].Target != "catalog/GetItem" {
					t.Errorf("dbpool holds %+v", s.Steps)
				}
				holds++
			}
		})
	}
	if holds == 0 {
		t.Errorf("calls to GetItem do not hold dbpool:\n%s", m.Marshal())
	}
	if s := m.Operation("worker/process").Steps; len(s) != 1 || s[0].Kind != model.StepHold || s[0].Resource != "ledger" {
		t.Errorf("worker/process does not hold ledger:\n%s", m.Marshal())
	}
	found := false
	for _, w := range rep.Warnings {
		found = found || strings.Contains(w, `no operation "nope/none"`)
	}
	if !found {
		t.Errorf("no warning for a declared call to nothing: %v", rep.Warnings)
	}
}

// spanIDs returns a source of distinct span ids for generated traces.
func spanIDs() func() ingest.SpanID {
	var id uint64
	return func() ingest.SpanID {
		id++
		var s ingest.SpanID
		for j := 0; j < 8; j++ {
			s[j] = byte(id >> (56 - 8*j))
		}
		return s
	}
}

// testTraceID is the id of the i-th trace of a generator tagged tag.
func testTraceID(tag byte, i int) ingest.TraceID {
	var t ingest.TraceID
	t[0] = tag
	for j := 0; j < 8; j++ {
		t[8+j] = byte(uint64(i) >> (56 - 8*j))
	}
	return t
}
