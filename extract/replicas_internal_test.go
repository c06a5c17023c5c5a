package extract

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"maps"
	"math"
	"strings"
	"testing"

	"github.com/perfcast/perfcast/ingest"
)

func TestActiveReplicas(t *testing.T) {
	names := []string{"a", "b", "c", "d", "e", "f"}
	cases := []struct {
		name    string
		n       int
		counts  []int64
		lives   []lifetime
		avg     float64
		peak    int
		missing bool
	}{
		// Two replicas serving ten requests each over the whole time:
		// their first and last requests fall inside it, and the widening
		// makes up for that.
		{"sparse", 2, []int64{10, 10}, []lifetime{{0, 90}, {5, 95}}, 2, 2, false},
		// A rolling update: three replicas, then three others.
		{"rolling", 6, []int64{100, 100, 100, 100, 100, 100},
			[]lifetime{{0, 50}, {0, 50}, {0, 50}, {50, 100}, {50, 100}, {50, 100}}, 3 * 50 * 101.0 / 99 * 2 / 100, 3, false},
		// One request says nothing of how long the replica lived.
		{"single", 2, []int64{1, 40}, []lifetime{{10, 11}, {0, 100}}, 2, 2, false},
		{"no lifetimes", 2, []int64{5, 5}, []lifetime{{0, 10}}, 0, 0, true},
	}
	for _, c := range cases {
		counts, lives := map[string]int64{}, map[string]lifetime{}
		for i := range c.n {
			counts[names[i]] = c.counts[i]
			if i < len(c.lives) {
				lives[names[i]] = c.lives[i]
			}
		}
		avg, peak, ok := activeReplicas(names[:c.n], counts, lives)
		if ok == c.missing || ok && (math.Abs(avg-c.avg) > 1e-9 || peak != c.peak) {
			t.Errorf("%s: %g on average, at most %d, ok %v; want %g, %d, %v", c.name, avg, peak, ok, c.avg, c.peak, !c.missing)
		}
	}
}

// profileOf is the finished profile of the intervals of spans that keep
// selects.
func profileOf(spans []*ingest.Span, keep func(*ingest.Span) bool) map[int]int64 {
	c := newConcurrency()
	for _, s := range spans {
		if keep(s) {
			c.add(s.Start, s.End)
		}
	}
	c.finish()
	return c.levelTime
}

// TestReplicaProfilesSplitLate folds shopGen's traces with the catalog on
// one machine for the first half of the time and on two after, and the
// front end on one machine, then on two (by trace): the operations' and
// the call sites' profiles on each replica, begun only once a second
// replica is seen (splitReplicas), are those of the replica's spans from
// the start; the worker, on one machine throughout, has none. So are
// those of a resource declared per replica around both the front end's
// operations: their spans together on each replica.
func TestReplicaProfilesSplitLate(t *testing.T) {
	spans := generate(31, 3000, true)
	mid := spans[len(spans)/2].Start
	for _, s := range spans {
		switch {
		case s.Start < mid && s.Host == "cat-2":
			s.Host = "cat-1"
		case s.Start >= mid && s.Service == "front" && s.TraceID[15]%2 == 1:
			s.Host = "web-2"
		}
	}
	st := foldWith(t, spans, &Config{Passive: map[string]PassiveConfig{
		"session": {Capacity: 1, Operations: []string{"front/GET /home", "front/GET /page"}, PerReplica: new(true)}}})
	want := map[string]map[int]int64{}
	for _, h := range []string{"cat-1", "cat-2"} {
		want[opReplicaGroup("catalog/GetItem", h+"\x00")] = profileOf(spans, func(s *ingest.Span) bool {
			return s.Service == "catalog" && s.Host == h
		})
	}
	byID := map[ingest.SpanID]*ingest.Span{}
	for _, s := range spans {
		byID[s.SpanID] = s
	}
	for _, h := range []string{"web", "web-2"} {
		want[resourceReplicaGroup("session", "front", h+"\x00")] = profileOf(spans, func(s *ingest.Span) bool {
			return s.Service == "front" && s.Kind == ingest.KindServer && s.Host == h
		})
		for _, name := range []string{"GET /page", "GET /home"} {
			want[opReplicaGroup("front/"+name, h+"\x00")] = profileOf(spans, func(s *ingest.Span) bool {
				return s.Service == "front" && s.Kind == ingest.KindServer && s.Host == h && s.Name == name
			})
			want[siteReplicaGroup("front/"+name, "catalog/GetItem", h+"\x00")] = profileOf(spans, func(s *ingest.Span) bool {
				p := byID[s.ParentID]
				return s.Kind == ingest.KindClient && s.Name == "GET" && s.Host == h && p != nil && p.Name == name
			})
		}
	}
	var got []string
	for k := range st.conc {
		if strings.HasPrefix(k, "opr\x00") || strings.HasPrefix(k, "sitr\x00") || strings.HasPrefix(k, "resr\x00") {
			got = append(got, k)
		}
	}
	if len(got) != len(want) {
		t.Errorf("per-replica profiles %q, want %d", got, len(want))
	}
	for k, levels := range want {
		c := st.conc[k]
		if c == nil {
			t.Errorf("no profile %q", k)
			continue
		}
		if have := c.finished().levelTime; !maps.Equal(have, levels) {
			t.Errorf("%q: time at each level %v, want %v", k, have, levels)
		}
	}
}

// TestReplicaProfilesMerge merges two states whose catalog ran on one
// machine each: the merged state profiles each machine's operations, and
// a resource declared per replica around them, as its state did over the
// system.
func TestReplicaProfilesMerge(t *testing.T) {
	spans := generate(32, 2000, true)
	mid := len(spans) / 2
	for i, s := range spans {
		if s.Service == "catalog" {
			s.Host = map[bool]string{true: "cat-1", false: "cat-2"}[i < mid]
		}
	}
	cfg := &Config{Passive: map[string]PassiveConfig{"conn": {Capacity: 2, Operations: []string{"catalog/GetItem"}, PerReplica: new(true)}}}
	a, b := foldWith(t, spans[:mid], cfg), foldWith(t, spans[mid:], cfg)
	want := map[string]map[int]int64{
		opReplicaGroup("catalog/GetItem", "cat-1\x00"):       a.conc[opGroup("catalog/GetItem")].finished().levelTime,
		opReplicaGroup("catalog/GetItem", "cat-2\x00"):       b.conc[opGroup("catalog/GetItem")].finished().levelTime,
		resourceReplicaGroup("conn", "catalog", "cat-1\x00"): a.conc[resourceCompGroup("conn", "catalog")].finished().levelTime,
		resourceReplicaGroup("conn", "catalog", "cat-2\x00"): b.conc[resourceCompGroup("conn", "catalog")].finished().levelTime,
	}
	if a.soleReplica["catalog"] != "cat-1\x00" || a.conc[opReplicaGroup("catalog/GetItem", "cat-1\x00")] != nil {
		t.Fatalf("a state with the catalog on one machine: %q, profiled per replica", a.soleReplica["catalog"])
	}
	a.Merge(b)
	if a.soleReplica["catalog"] != "" {
		t.Errorf("merged: the catalog's sole replica %q, want several", a.soleReplica["catalog"])
	}
	for k, levels := range want {
		if c := a.conc[k]; c == nil || !maps.Equal(c.finished().levelTime, levels) {
			t.Errorf("merged: profile %q %v, want %v", k, c, levels)
		}
	}
}

// TestReplicaProfilesLegacyState loads a state saved before sole_replica
// was kept: its components are taken as profiled on every replica from
// the start, so folding on never clones the system's profiles into a
// replica's; a state that keeps it comes back as it was.
func TestReplicaProfilesLegacyState(t *testing.T) {
	spans := generate(33, 600, true)
	for _, s := range spans {
		if s.Service == "catalog" {
			s.Host = "cat-1"
		}
	}
	st := foldWith(t, spans, nil)
	if got := roundTrip(t, st).soleReplica["catalog"]; got != "cat-1\x00" {
		t.Errorf("saved and loaded: the catalog's sole replica %q, want cat-1", got)
	}
	var v map[string]any
	if err := json.Unmarshal(saved(t, st), &v); err != nil {
		t.Fatal(err)
	}
	if _, ok := v["sole_replica"]; !ok {
		t.Fatal("no sole_replica in the saved state")
	}
	delete(v, "sole_replica")
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write(raw); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	old, err := LoadState(&b)
	if err != nil {
		t.Fatal(err)
	}
	for _, comp := range []string{"catalog", "front", "worker"} {
		if got, ok := old.soleReplica[comp]; !ok || got != "" {
			t.Errorf("legacy state: %s's sole replica %q (%v), want several", comp, got, ok)
		}
	}
}
