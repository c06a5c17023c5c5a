package extract

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/perfcast/perfcast/ingest"
)

// TestTxKindOf reads span names as the database instrumentations write
// them.
func TestTxKindOf(t *testing.T) {
	for name, want := range map[string]txKind{
		"BEGIN": txBegin, "begin": txBegin, "BEGIN TRANSACTION": txBegin, "START TRANSACTION": txBegin,
		"sql.conn.begin_tx": txBegin, "BeginTx": txBegin,
		"COMMIT": txEnd, "COMMIT shop": txEnd, "commit": txEnd, "ROLLBACK": txEnd, "END": txEnd, "END TRANSACTION": txEnd,
		"sql.tx.commit": txEnd, "sql.tx.rollback": txEnd,
		"ROLLBACK TO SAVEPOINT a": txStatement, "SAVEPOINT a": txStatement, "START": txStatement, "END of day report": txStatement,
		"SELECT orders": txStatement, "": txStatement, "  ": txStatement, "sql.conn.query": txStatement,
	} {
		if got := txKindOf(name); got != want {
			t.Errorf("txKindOf(%q) = %d, want %d", name, got, want)
		}
	}
}

// TestTransactions finds the transactions of call sequences by hand.
func TestTransactions(t *testing.T) {
	for _, c := range []struct {
		calls []string
		want  string
	}{
		{[]string{"db: BEGIN", "db: SELECT", "x", "db: UPDATE", "db: COMMIT"}, "[{db 0 4}]"},
		// No markers: autocommit, no transaction.
		{[]string{"db: SELECT", "db: UPDATE"}, "[]"},
		// No BEGIN: from the first statement after the last end.
		{[]string{"db: SELECT", "db: COMMIT", "db: SELECT", "db: UPDATE", "db: COMMIT", "db: SELECT"}, "[{db 0 1} {db 2 4}]"},
		// A BEGIN drops the statements before it.
		{[]string{"db: SELECT", "db: BEGIN", "db: UPDATE", "db: ROLLBACK"}, "[{db 1 3}]"},
		// Begun and not ended: to the last call; a savepoint's rollback
		// ends nothing.
		{[]string{"db: BEGIN", "db: UPDATE", "db: ROLLBACK TO SAVEPOINT a", "db: UPDATE", "y"}, "[{db 0 3}]"},
		// A BEGIN alone is none; a BEGIN after a begun one ends it.
		{[]string{"db: BEGIN", "db: BEGIN", "db: SELECT", "db: BEGIN", "db: SELECT"}, "[{db 1 2} {db 3 4}]"},
		// A lone COMMIT is in none.
		{[]string{"db: COMMIT", "db: SELECT"}, "[]"},
		// Two databases, each its own.
		{[]string{"a: BEGIN", "b: SELECT", "a: SELECT", "b: COMMIT", "a: COMMIT"}, "[{a 0 4} {b 1 3}]"},
		// Not databases' calls.
		{[]string{"", "nopeer", "db: BEGIN", "", "db: COMMIT"}, "[{db 2 4}]"},
	} {
		got := fmt.Sprint(transactions(len(c.calls), func(i int) string { return c.calls[i] }))
		if got != c.want {
			t.Errorf("transactions(%q) = %s, want %s", c.calls, got, c.want)
		}
	}
}

// inTransactions runs each database call of spans in a transaction of
// its own: a BEGIN in its first tenth, the statement, and a COMMIT in its
// last tenth, as three client spans.
func inTransactions(spans []*ingest.Span) []*ingest.Span {
	var out []*ingest.Span
	next := uint64(1) << 62
	for _, s := range spans {
		if s.DBSystem == "" {
			out = append(out, s)
			continue
		}
		tenth := (s.End - s.Start) / 10
		begin, commit, stmt := *s, *s, *s
		for _, c := range []*ingest.Span{&begin, &commit} {
			next++
			binary.BigEndian.PutUint64(c.SpanID[:], next)
		}
		begin.Name, begin.End = "BEGIN", s.Start+tenth
		stmt.Start, stmt.End = begin.End, s.End-tenth
		commit.Name, commit.Start = "COMMIT", stmt.End
		out = append(out, &begin, &stmt, &commit)
	}
	return out
}

// TestFoldTransactions folds the shop's database calls each in a
// transaction: one per page that queried, recorded at its BEGIN's site,
// lasting as the query did, none of it the page's own time, and the
// calls in it not counted as calls of their own.
func TestFoldTransactions(t *testing.T) {
	plain := generate(41, 3000, true)
	st := fold(t, inTransactions(plain))
	var queries int64
	var query float64
	for _, s := range plain {
		if s.DBSystem != "" {
			queries++
			query += seconds(s.End - s.Start)
		}
	}
	key := siteGroup("front/GET /page", externalName(&ingest.Span{Name: "BEGIN", DBSystem: "postgresql", Kind: ingest.KindClient}))
	tx, held := st.txTimes[key], st.txHeld[key]
	if tx == nil || len(st.txTimes) != 1 {
		t.Fatalf("transactions at %v, want one site, %q", slices.Collect(maps.Keys(st.txTimes)), key)
	}
	if tx.n != queries || math.Abs(tx.sum-query) > 1e-6*query || held.sum > 1e-9 {
		t.Errorf("%d transactions lasting %g s, %g s of it the page's own; want %d, %g s and none", tx.n, tx.sum, held.sum, queries, query)
	}
	for k, d := range st.siteTimes {
		if strings.Contains(k, "postgresql") && d.n != 0 {
			t.Errorf("%q: %d calls outside transactions", k, d.n)
		}
	}
}
