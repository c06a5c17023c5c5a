package extract

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
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

// TestSessionsFoldedOutOfOrder folds the requests of sessions in an order
// other than their starts', as trees complete: blocks of 64 reversed. The
// think times are still taken between consecutive requests of a session
// and none counts as concurrent. Folded in two halves, one state saved and
// loaded, then merged, only the think times across the split are lost.
func TestSessionsFoldedOutOfOrder(t *testing.T) {
	const users = 50
	cfg := &Config{Session: "session.id"}
	spans := sessionTraces(users, 2000, 5)
	// The assembler delivers trees in order of start; fold them in
	// another.
	var trees []*trace.Tree
	a := trace.New(trace.Options{}, func(tr *trace.Tree) error { trees = append(trees, tr); return nil })
	for _, s := range spans {
		if err := a.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(trees); i += 64 {
		slices.Reverse(trees[i:min(i+64, len(trees))])
	}
	fold := func(trees []*trace.Tree) *State {
		st := NewState()
		for _, tr := range trees {
			st.Fold(tr, cfg)
		}
		return st
	}
	st := fold(trees)
	m, rep := st.Model("sessions", cfg)
	ss := st.sessions
	if ss.outOfOrder != 0 {
		t.Errorf("%d requests counted as concurrent; none is", ss.outOfOrder)
	}
	n := float64(ss.think.n)
	if want := float64(len(spans) - users); n != want {
		t.Errorf("%g think times, want %g (one per request but each session's first)", n, want)
	}
	w := m.Workloads[0]
	within(t, "think mean", w.Closed.Think.Mean(), 2, 2/math.Sqrt(n))
	if d := w.Closed.Users - users; d < -1 || d > 1 {
		t.Errorf("users %d, want %d\n%v", w.Closed.Users, users, rep.Evidence)
	}

	// Folded in two halves into two states, the second saved and loaded,
	// then merged.
	half := len(trees) / 2
	var buf bytes.Buffer
	if err := fold(trees[:half]).Save(&buf); err != nil {
		t.Fatal(err)
	}
	a2, err := LoadState(&buf)
	if err != nil {
		t.Fatal(err)
	}
	a2.Merge(fold(trees[half:]))
	m2, _ := a2.Model("sessions", cfg)
	// Each session loses the think time across the split, and no more.
	if got, want := float64(a2.sessions.think.n), n-users; got != want || a2.sessions.outOfOrder != 0 {
		t.Errorf("split and merged: %g think times (want %g), %d counted as concurrent", got, want, a2.sessions.outOfOrder)
	}
	within(t, "split and merged think mean", m2.Workloads[0].Closed.Think.Mean(), 2, 2/math.Sqrt(n))
}

// TestSessionsTooFew: when requests carry the session attribute at no
// entry operation often enough, the workloads stay open and a warning says
// why.
func TestSessionsTooFew(t *testing.T) {
	cfg := &Config{Session: "session.id"}
	spans := sessionTraces(20, 200, 8)
	for i, s := range spans {
		if i%2 == 0 {
			s.Extra = nil
		}
	}
	m, rep := foldWith(t, spans, cfg).Model("sessions", cfg)
	for _, w := range m.Workloads {
		if w.Closed != nil {
			t.Errorf("closed workload %s from half the requests", w.Name)
		}
	}
	found := false
	for _, w := range rep.Warnings {
		found = found || strings.Contains(w, "session: ") && strings.Contains(w, "at no entry operation do 90 %")
	}
	if !found {
		t.Errorf("no warning that too few requests carry the session: %q", rep.Warnings)
	}
}

// TestSessionsTooShort: traces shorter than the think time show most
// sessions once; the think time and users come out short, and a warning
// says so.
func TestSessionsTooShort(t *testing.T) {
	cfg := &Config{Session: "session.id"}
	st := foldWith(t, sessionTraces(3000, 1.0, 3), cfg)
	_, rep := st.Model("sessions", cfg)
	found := false
	for _, w := range rep.Warnings {
		found = found || strings.Contains(w, "most sessions show one request")
	}
	if !found {
		t.Errorf("no warning that the traces are too short for the sessions: %q", rep.Warnings)
	}
	// Two hours of the same users: no such warning.
	st = foldWith(t, sessionTraces(30, 7200, 3), cfg)
	_, rep = st.Model("sessions", cfg)
	for _, w := range rep.Warnings {
		if strings.Contains(w, "most sessions show one request") {
			t.Errorf("warning on long sessions: %s", w)
		}
	}
}

// TestSessionsSplitAcrossStates: two receivers fed by trace id each see
// every other request of a session; merged, their think times are
// overstated, and a warning says so. States split by time are not.
func TestSessionsSplitAcrossStates(t *testing.T) {
	cfg := &Config{Session: "session.id"}
	spans := sessionTraces(20, 600, 6)
	var even, odd []*ingest.Span
	for i, s := range spans {
		if i%2 == 0 {
			even = append(even, s)
		} else {
			odd = append(odd, s)
		}
	}
	split := func(st *State) bool {
		_, rep := st.Model("sessions", cfg)
		for _, w := range rep.Warnings {
			if strings.Contains(w, "several of the merged states") {
				return true
			}
		}
		return false
	}
	a := foldWith(t, even, cfg)
	a.Merge(foldWith(t, odd, cfg))
	if !split(a) || a.sessions.split != 20 {
		t.Errorf("interleaved states: %d sessions counted as split, want 20", a.sessions.split)
	}
	half := len(spans) / 2
	b := foldWith(t, spans[:half], cfg)
	b.Merge(foldWith(t, spans[half:], cfg))
	if split(b) {
		t.Errorf("states split by time: %d sessions counted as split", b.sessions.split)
	}
}

// TestOneShotSessions gives every request a session id of its own (a
// request id under the session's name): followed by default, they show
// no users coming back and stay open workloads, with evidence; named in
// the configuration, they become the closed workload still.
func TestOneShotSessions(t *testing.T) {
	spans := sessionTraces(40, 600, 31)
	for i, s := range spans {
		c := *s
		c.Extra = []ingest.Attr{{Key: "session.id", Value: "r" + strconv.Itoa(i)}}
		spans[i] = &c
	}
	for _, c := range []struct {
		name   string
		cfg    *Config
		closed bool
	}{
		{"followed by default", nil, false},
		{"named", &Config{Session: "session.id"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, rep := foldWith(t, spans, c.cfg).Model("x", c.cfg)
			closed := false
			for _, w := range m.Workloads {
				closed = closed || w.Closed != nil
			}
			if closed != c.closed {
				t.Fatalf("a closed workload: %v, want %v:\n%s", closed, c.closed, m.Marshal())
			}
			said := strings.Contains(strings.Join(rep.Evidence, "\n"), "most sessions hold one request")
			if said == c.closed {
				t.Errorf("the evidence says the one-request sessions stay open: %v, want %v", said, !c.closed)
			}
		})
	}
}
