package extract

import (
	"bytes"
	"compress/gzip"
	"strings"
	"testing"

	"github.com/perfcast/perfcast/ingest"
	"github.com/perfcast/perfcast/trace"
)

// foldThroughSave folds the spans' traces as they complete (200 spans
// after their last), saving the state and going on with the loaded copy
// after every cut spans (never when cut is 0): mid-stream, with intervals
// pending in the sweeps and traces still open.
func foldThroughSave(t *testing.T, spans []*ingest.Span, cfg *Config, cut int) *State {
	t.Helper()
	st := NewState()
	a := trace.New(trace.Options{IdleSpans: 200}, func(tr *trace.Tree) error {
		st.Fold(tr, cfg)
		return nil
	})
	for i, s := range spans {
		if err := a.Add(s); err != nil {
			t.Fatal(err)
		}
		if cut > 0 && (i+1)%cut == 0 {
			st = roundTrip(t, st)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	return st
}

func roundTrip(t *testing.T, st *State) *State {
	t.Helper()
	var b bytes.Buffer
	if err := st.Save(&b); err != nil {
		t.Fatal(err)
	}
	got, err := LoadState(&b)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// saved is the state's saved bytes, uncompressed.
func saved(t testing.TB, st *State) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := st.Save(&b); err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(&b)
	if err != nil {
		t.Fatal(err)
	}
	var plain bytes.Buffer
	if _, err := plain.ReadFrom(zr); err != nil {
		t.Fatal(err)
	}
	return plain.Bytes()
}

func TestStateSaveLoadFoldOn(t *testing.T) {
	cases := []struct {
		name  string
		spans []*ingest.Span
		cfg   *Config
	}{
		{"shop", generate(21, 4000, true), nil},
		{"shop without CPU", generate(22, 3000, false), nil},
		{"parameters", paramTraces(3000, 23), &Config{Params: []string{"http.request.body.size"}, ParamBins: 2}},
		{"sessions", sessionTraces(40, 600, 24), &Config{Session: "session.id"}},
		{"hops with no client span", withoutClients(generate(25, 3000, true)), &Config{CPUSlots: map[string]int{"*": 2}}},
		{"one-thread runtime", onRuntime(generate(26, 3000, false), "catalog", "nodejs", 2), nil},
		{"workers", asWorkers(generate(27, 3000, true), "catalog"), nil},
		{"transactions", inTransactions(generate(29, 3000, true)), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ws := foldThroughSave(t, c.spans, c.cfg, 0)
			wantState := saved(t, ws)
			whole, _ := ws.Model("x", c.cfg)
			if c.name == "one-thread runtime" && whole.PassiveResource(CPUSlotsResource("catalog")) == nil {
				t.Fatalf("no CPU slots for the catalog on nodejs:\n%s", whole.Marshal())
			}
			for _, cut := range []int{len(c.spans) / 2, len(c.spans)/5 + 1} {
				gs := foldThroughSave(t, c.spans, c.cfg, cut)
				// Every part of the state, not only what this model shows.
				if !bytes.Equal(saved(t, gs), wantState) {
					t.Errorf("saved and loaded every %d spans: another state", cut)
				}
				got, _ := gs.Model("x", c.cfg)
				if y1, y2 := whole.Marshal(), got.Marshal(); !bytes.Equal(y1, y2) {
					t.Fatalf("saved and loaded every %d spans: another model:\n%s\n---\n%s", cut, y1, y2)
				}
			}
		})
	}
}

// withoutClients leaves out the client spans that have a server span
// below them, hanging their children on their parents, as traces of
// callers whose HTTP clients are not instrumented have it.
func withoutClients(spans []*ingest.Span) []*ingest.Span {
	parent := map[ingest.SpanID]ingest.SpanID{}
	served := map[ingest.SpanID]bool{}
	for _, s := range spans {
		if s.Kind == ingest.KindServer {
			served[s.ParentID] = true
		}
	}
	for _, s := range spans {
		if s.Kind == ingest.KindClient && served[s.SpanID] {
			parent[s.SpanID] = s.ParentID
		}
	}
	var out []*ingest.Span
	for _, s := range spans {
		if _, ok := parent[s.SpanID]; ok {
			continue
		}
		if p, ok := parent[s.ParentID]; ok {
			c := *s
			c.ParentID = p
			s = &c
		}
		out = append(out, s)
	}
	return out
}

func TestStateSaveDeterministic(t *testing.T) {
	spans := generate(25, 3000, true)
	save := func() []byte { return saved(t, foldWith(t, spans[:len(spans)*2/3], nil)) }
	if !bytes.Equal(save(), save()) {
		t.Error("the same state saved twice: other bytes")
	}
}

func TestStateCloneIsIndependent(t *testing.T) {
	spans := generate(26, 2000, true)
	st := foldWith(t, spans, nil)
	want, _ := st.Model("x", nil)
	c, err := st.Clone()
	if err != nil {
		t.Fatal(err)
	}
	// Folding more into the clone leaves the original as it was.
	more := foldWith(t, generate(27, 500, true), nil)
	c.Merge(more)
	got, _ := st.Model("x", nil)
	if !bytes.Equal(want.Marshal(), got.Marshal()) {
		t.Error("the original changed with its clone")
	}
	if c.Traces != st.Traces+500 {
		t.Errorf("clone: %d traces, want %d", c.Traces, st.Traces+500)
	}
}

func TestLoadStateRefuses(t *testing.T) {
	text := string(saved(t, foldWith(t, asWorkers(inTransactions(generate(28, 300, true)), "catalog"), nil)))
	if _, err := LoadState(strings.NewReader(text)); err != nil {
		t.Fatalf("uncompressed state: %v", err)
	}
	for _, c := range []struct {
		name string
		// edits are pairs of a text and what its first occurrence becomes.
		edits []string
		want  string
	}{
		{"format", []string{`"perfcast_state":3`, `"perfcast_state":2`}, "format 2"},
		{"sole process", []string{`"sole_process":{"replica`, `"sole_process":{"nowhere`}, "sole process of"},
		{"not JSON", []string{`{"perfcast_state"`, `{perfcast_state"`}, "byte"},
		{"kind", []string{`"kind":1`, `"kind":9`}, "unknown kind 9"},
		{"sketch index", []string{`"index":[`, `"index":[999999999,`, `"count":[`, `"count":[1,`}, "index 999999999"},
		{"sketch count", []string{`"index":[`, `"index":[0,`, `"count":[`, `"count":[-1,`}, "count -1"},
		{"sketch length", []string{`"index":[`, `"index":[0,`}, "does not hold together"},
		{"width", []string{`"width":1000000000`, `"width":1500000000`}, "power of two"},
		{"entry", []string{`"op":"front/GET /page"`, `"op":"front/GET /other"`}, `names operation "front/GET /other"`},
		{"placement", []string{`"placement":{"catalog"`, `"placement":{"catalogue"`}, "placed on no host"},
		{"window operation", []string{`"ops":["`, `"ops":["nowhere/x","`}, `"nowhere/x" is not an operation`},
		{"resumes", []string{`"resumes":`, `"resumes":-`}, "resumes of"},
		{"resumed time", []string{`"resumed_ns":`, `"resumed_ns":9999999`}, "in own times of"},
		{"resume gaps", []string{`"resume_gap":{"n":`, `"resume_gap":{"n":9999999`}, "gaps before resumes"},
		{"calls before gaps", []string{`"gap_calls":`, `"gap_calls":-`}, "gaps before resumes"},
		{"database", []string{`"db_peers":{"`, `"db_peers":{"":"x","`}, `db_peers: database "" of system "x"`},
		{"transaction site", []string{`"tx_times":{"site`, `"tx_times":{"nosite`}, `tx_times: "nosite front/GET /page postgresql: BEGIN" is no call site`},
		{"transaction held", []string{`"tx_held":{"site`, `"tx_held":{"nosite`}, `tx_held: no "site front/GET /page postgresql: BEGIN"`},
		{"to the end", []string{`"to_end":{"site`, `"to_end":{"nosite`}, `to_end: "nosite front/GET /page postgresql" is no call site`},
		{"own time to the end", []string{`"to_end_own":{"site`, `"to_end_own":{"nosite`}, `to_end_own: no "site front/GET /page postgresql"`},
		{"transactions held", []string{`"tx_held":{"site`, `"tx_held":{"a":{"n":0,"sum":0,"sq":0,"min":0,"max":0},"site`}, `tx_held: 2 call sites, tx_times 1`},
	} {
		t.Run(c.name, func(t *testing.T) {
			bad := text
			for i := 0; i < len(c.edits); i += 2 {
				if !strings.Contains(bad, c.edits[i]) {
					t.Fatalf("the saved state has no %s", c.edits[i])
				}
				bad = strings.Replace(bad, c.edits[i], c.edits[i+1], 1)
			}
			_, err := LoadState(strings.NewReader(bad))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one that says %q", err, c.want)
			}
		})
	}
}
