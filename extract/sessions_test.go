package extract

import (
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"testing"

	"github.com/perfcast/perfcast/ingest"
	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/trace"
)

// sessionTraces makes the requests of users who each think exp(2 s), then
// call web/GET /a (70 %, 10 ms) or web/GET /b (30 %, 30 ms), for the given
// time; each root span carries session.id.
func sessionTraces(users int, horizon float64, seed uint64) []*ingest.Span {
	r := rand.New(rand.NewPCG(seed, 9))
	type req struct {
		start, end int64
		user       int
		b          bool
	}
	var reqs []req
	base := int64(1_700_000_000_000_000_000)
	for u := 0; u < users; u++ {
		t := 0.0
		for {
			t += r.ExpFloat64() * 2
			if t > horizon {
				break
			}
			b := r.Float64() < 0.3
			d := 0.01
			if b {
				d = 0.03
			}
			reqs = append(reqs, req{base + int64(t*1e9), base + int64((t+d)*1e9), u, b})
			t += d
		}
	}
	sort.Slice(reqs, func(i, j int) bool { return reqs[i].start < reqs[j].start })
	spans := make([]*ingest.Span, len(reqs))
	for i, q := range reqs {
		var tid ingest.TraceID
		tid[0] = 4
		var sid ingest.SpanID
		for j := 0; j < 8; j++ {
			tid[8+j] = byte(uint64(i) >> (56 - 8*j))
			sid[j] = byte(uint64(i+1) >> (56 - 8*j))
		}
		name := "GET /a"
		if q.b {
			name = "GET /b"
		}
		spans[i] = &ingest.Span{TraceID: tid, SpanID: sid, Kind: ingest.KindServer, Service: "web", Host: "h",
			Name: name, Start: q.start, End: q.end, CPUTime: math.NaN(),
			Extra: []ingest.Attr{{Key: "session.id", Value: "u" + strconv.Itoa(q.user)}}}
	}
	return spans
}

func TestSessionsBecomeClosedWorkload(t *testing.T) {
	const users = 50
	cfg := &Config{Session: "session.id"}
	st := NewState()
	a := trace.New(trace.Options{}, func(tr *trace.Tree) error {
		st.Fold(tr, cfg)
		return nil
	})
	for _, s := range sessionTraces(users, 2000, 1) {
		if err := a.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	m, rep := st.Model("sessions", cfg)
	if err := m.Validate(); err != nil {
		t.Fatalf("%v\n%s", err, m.Marshal())
	}
	if len(m.Workloads) != 1 || m.Workloads[0].Closed == nil {
		t.Fatalf("want one closed workload:\n%s", m.Marshal())
	}
	w := m.Workloads[0]
	// About 50 000 think times: the mean within 4 standard errors of 2 s.
	n := float64(st.sessions.think.n)
	within(t, "think mean", w.Closed.Think.Mean(), 2, 4*2/math.Sqrt(n))
	if d := w.Closed.Users - users; d < -1 || d > 1 {
		t.Errorf("users %d, want %d\n%v", w.Closed.Users, users, rep.Evidence)
	}
	if w.Closed.Think.Kind != model.DistExp {
		t.Errorf("think time fitted as %v, want exponential", w.Closed.Think)
	}
	d := m.Demands(w)
	within(t, "share of GET /b", d.Visits["web/GET /b"], 0.3, math.Sqrt(0.21/n))
}
