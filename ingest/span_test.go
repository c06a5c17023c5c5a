package ingest_test

import (
	"fmt"
	"testing"

	"github.com/perfcast/perfcast/ingest"
)

func TestParseIDs(t *testing.T) {
	cases := []struct {
		in, want string
		ok       bool
	}{
		{"5b8efff798038103d269b633813fc60c", "5b8efff798038103d269b633813fc60c", true},
		{"5B8EFFF798038103D269B633813FC60C", "5b8efff798038103d269b633813fc60c", true},
		{"48485a3953bb6124", "000000000000000048485a3953bb6124", true},
		{"abc", "00000000000000000000000000000abc", true},
		{"", "", false},
		{"5b8efff798038103d269b633813fc60c0", "", false},
		{"xyz", "", false},
		{"0x12", "", false},
	}
	for _, c := range cases {
		id, err := ingest.ParseTraceID(c.in)
		if (err == nil) != c.ok || (c.ok && id.String() != c.want) {
			t.Errorf("ParseTraceID(%q) = %s, %v; want %s ok=%v", c.in, id, err, c.want, c.ok)
		}
	}
	if id, err := ingest.ParseSpanID("b"); err != nil || id.String() != "000000000000000b" {
		t.Errorf("ParseSpanID(b) = %s, %v", id, err)
	}
	if _, err := ingest.ParseSpanID("00000000000000001"); err == nil {
		t.Error("17 hex digits accepted as a span id")
	}
	a, _ := ingest.ParseTraceID("01")
	b, _ := ingest.ParseTraceID("02")
	if a.Compare(b) != -1 || b.Compare(a) != 1 || a.Compare(a) != 0 {
		t.Error("TraceID.Compare")
	}
}

func TestDamage(t *testing.T) {
	var d ingest.Damage
	for i := 0; i < 8; i++ {
		d.Addf(ingest.DamageOrphan, "orphan %d", i)
	}
	d.Add(ingest.DamageCycle, "")
	var e ingest.Damage
	e.Add(ingest.DamageOrphan, "other")
	e.Merge(d)
	if e.Counts[ingest.DamageOrphan] != 9 || e.Total() != 10 || len(e.Samples[ingest.DamageOrphan]) != 5 ||
		e.Samples[ingest.DamageOrphan][0] != "other" || len(e.Samples[ingest.DamageCycle]) != 0 {
		t.Errorf("merged damage %+v", e)
	}
	if got := fmt.Sprint(e.Kinds()); got != "[cycle orphan]" {
		t.Errorf("kinds %s", got)
	}
}

func TestKindAndStatusNames(t *testing.T) {
	if ingest.KindConsumer.String() != "consumer" || ingest.Kind(9).String() != "kind(9)" ||
		ingest.StatusError.String() != "error" {
		t.Error("names")
	}
}
