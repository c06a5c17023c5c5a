package extract

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"strings"
	"unicode"

	"github.com/perfcast/perfcast/internal/textout"
	"github.com/perfcast/perfcast/model"
)

// txKind is what a call to a database does to a transaction: begins one,
// ends one, or runs a statement.
type txKind int

const (
	txStatement txKind = iota
	txBegin
	txEnd
)

// txKindOf reads from a database client span's name whether the call
// begins a transaction (BEGIN, START TRANSACTION; database/sql
// instrumentations' begin_tx), ends one (COMMIT, ROLLBACK but not
// ROLLBACK TO a savepoint, END; their tx.commit and tx.rollback) or is a
// statement. Span names carry the operation first ("COMMIT", "COMMIT
// shop"), as OpenTelemetry's database conventions write them.
func txKindOf(name string) txKind {
	name = strings.TrimSpace(name)
	switch {
	case hasSuffixFold(name, "begin_tx"), hasSuffixFold(name, "begintx"), hasSuffixFold(name, "tx.begin"):
		return txBegin
	case hasSuffixFold(name, "tx.commit"), hasSuffixFold(name, "tx.rollback"):
		return txEnd
	}
	first, rest := cutWord(name)
	second, _ := cutWord(rest)
	switch {
	case strings.EqualFold(first, "begin"):
		return txBegin
	case strings.EqualFold(first, "start") && strings.EqualFold(second, "transaction"):
		return txBegin
	case strings.EqualFold(first, "commit"):
		return txEnd
	case strings.EqualFold(first, "rollback") && !strings.EqualFold(second, "to"):
		return txEnd
	case strings.EqualFold(first, "end") && (second == "" || strings.EqualFold(second, "transaction") || strings.EqualFold(second, "work")):
		return txEnd
	}
	return txStatement
}

// hasSuffixFold reports whether s ends with suffix, ignoring case.
func hasSuffixFold(s, suffix string) bool {
	return len(s) >= len(suffix) && strings.EqualFold(s[len(s)-len(suffix):], suffix)
}

// cutWord returns the first word of s, which begins with no space, and
// what follows it, spaces trimmed.
func cutWord(s string) (word, rest string) {
	i := strings.IndexFunc(s, unicode.IsSpace)
	if i < 0 {
		return s, ""
	}
	return s[:i], strings.TrimSpace(s[i:])
}

// txSpan is one transaction in a sequence of calls: the indices of its
// first and last calls to database peer.
type txSpan struct {
	peer        string
	first, last int
}

// transactions finds the transactions among n calls in the order they
// began, target(i) the i-th's external name (`peer: span name`), or ""
// for one that is not a call to a database. Per database, a transaction
// runs from a call that begins one, or else from the first statement
// since the last one ended, to the call that ends it; one begun and not
// ended runs to the database's last call. Statements with no transaction
// begun or ended around them (autocommit) are in none, nor is a lone
// COMMIT. Where a connection is held from the transaction's start before
// any statement (setAutoCommit(false) has no span), the transaction is
// read from its first statement; an autocommit statement before a
// transaction that no BEGIN opens is read as its first.
func transactions(n int, target func(i int) string) []txSpan {
	type open struct {
		first, last int
		begun       bool
	}
	var out []txSpan
	opened := map[string]*open{}
	for i := range n {
		t := target(i)
		peer, name, ok := strings.Cut(t, ": ")
		if t == "" || !ok {
			continue
		}
		o := opened[peer]
		switch txKindOf(name) {
		case txBegin:
			if o != nil && o.begun && o.last > o.first {
				out = append(out, txSpan{peer, o.first, o.last})
			}
			opened[peer] = &open{first: i, last: i, begun: true}
		case txEnd:
			if o != nil {
				out = append(out, txSpan{peer, o.first, i})
				delete(opened, peer)
			}
		default:
			if o == nil {
				opened[peer] = &open{first: i, last: i}
			} else {
				o.last = i
			}
		}
	}
	for _, peer := range slices.Sorted(maps.Keys(opened)) {
		if o := opened[peer]; o.begun && o.last > o.first {
			out = append(out, txSpan{peer, o.first, o.last})
		}
	}
	slices.SortFunc(out, func(a, b txSpan) int { return cmp.Compare(a.first, b.first) })
	return out
}

// foldTransactions finds the transactions the calls fs found in an
// execution of operation op (id) ran in (transactions, the calls to
// databases, dbPeers, in the order they began, whatever blocks they ran
// in), records each at the site of its first call, on replica as
// externalCall does: its duration, from its first call's start to its
// last's end, and the part of it in none of the execution's synchronous
// calls, its own time while it held the connection. Each transaction
// goes into the profiles of the component's calls to its database in
// place of its calls. It returns which of fs ran in a transaction,
// nil where none did.
func (s *State) foldTransactions(op *opStats, id string, fs []found, replica string) []bool {
	// Most executions call no database twice, or run no statement that
	// begins or ends a transaction: nothing to sort.
	calls, marked := 0, false
	for _, f := range fs {
		if _, name, ok := s.dbCall(f); ok {
			calls++
			marked = marked || txKindOf(name) != txStatement
		}
	}
	if calls < 2 || !marked {
		return nil
	}
	idx := make([]int, 0, calls)
	for i, f := range fs {
		if _, _, ok := s.dbCall(f); ok {
			idx = append(idx, i)
		}
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(fs[a].start, fs[b].start) })
	spans := transactions(len(idx), func(k int) string { return fs[idx[k]].target })
	if len(spans) == 0 {
		return nil
	}
	in := make([]bool, len(fs))
	for _, sp := range spans {
		first := fs[idx[sp.first]]
		start, end := first.start, first.end
		for k := sp.first; k <= sp.last; k++ {
			f := fs[idx[k]]
			if peer, _, _ := strings.Cut(f.target, ": "); peer == sp.peer {
				in[idx[k]] = true
				end = max(end, f.end)
			}
		}
		e := s.extSiteOf(op, id, first.target, replica)
		if e.txTimes == nil {
			key := siteGroup(id, first.target)
			e.txTimes, e.txHeld = sampleAt(s.txTimes, key), sampleAt(s.txHeld, key)
		}
		var own []interval
		own, s.callBuf = ownIntervals(s.ownBuf[:0], s.callBuf, start, end, fs)
		s.ownBuf = own
		var held int64
		for _, iv := range own {
			held += iv.end - iv.start
		}
		e.txTimes.add(seconds(end - start))
		e.txHeld.add(seconds(held))
		e.addCall(start, end)
	}
	return in
}

// dbCall reports whether f is a call to a database seen only by its
// clients (dbPeers), and its peer and span name.
func (s *State) dbCall(f found) (peer, name string, ok bool) {
	peer, name, ok = strings.Cut(f.target, ": ")
	return peer, name, ok && f.kind == elemExternal && s.dbPeers[peer] != ""
}

// txMark is what a transaction does around one element of a list of
// steps: acquires a connection of a pool before it, releases it after
// it (the caller's CPU between the transaction's calls before the
// release), or holds it already (inside: the element's own call holds
// no other).
type txMark struct {
	acquire, release string
	inside           bool
	// held is the CPU the caller spends in the transaction outside its
	// calls, put before the release.
	held float64
}

// txOpen reports whether a transaction begun along marks is not yet
// ended at their end.
func txOpen(marks []txMark) bool {
	open := 0
	for _, m := range marks {
		if m.acquire != "" {
			open++
		}
		if m.release != "" {
			open--
		}
	}
	return open > 0
}

// released appends to steps the release m marks, after the CPU the
// transaction's caller spends between its calls (held, mean seconds).
func (m txMark) released(steps []model.Step) []model.Step {
	if m.release == "" {
		return steps
	}
	if m.held >= minLatency {
		steps = append(steps, model.Step{Kind: model.StepCPU, Demand: model.Exp(round(m.held, 6))})
	}
	return append(steps, model.Step{Kind: model.StepRelease, Resource: m.release, Units: 1})
}

// heldCPUShare sets, for operation id whose CPU demand is cpu, the share
// of its transactions' held own time (State.txHeld; of its time from its
// first call to a database to its end, State.toEndOwn, where its
// component keeps the connection to the end, toEndHolds) that goes into
// them as CPU: cpu over its own time less its waits for the locks and
// pools around its calls (siteWait, before its transactions begin), the
// CPU its own time holds, where the resource held around a transaction
// is modeled (txMarks); it returns the CPU per execution that moves
// there out of its first burst. Its time off the CPU between a
// transaction's calls stays outside the transaction (but for a
// connection kept to the end: releasedAtEnd).
func (g *generator) heldCPUShare(id string, op *opStats, cpu float64) float64 {
	own := op.self.mean() - g.siteWait(id, op)
	if own <= 0 || cpu <= 0 || op.count == 0 {
		return 0
	}
	var held float64
	if _, ok := g.toEndHolds[op.component]; ok {
		// One hold from the first call to an SQL database (tracedHolds).
		for _, key := range g.siteKeysOf(g.s.toEndOwn, id) {
			if peer := strings.Split(key, "\x00")[2]; sqlSystem(g.s.dbPeers[peer]) {
				held = max(held, g.s.toEndOwn[key].sum)
			}
		}
	} else {
		for _, key := range g.siteKeysOf(g.s.txHeld, id) {
			if _, ok := g.holdOf(id, strings.Split(key, "\x00")[2]); ok {
				held += g.s.txHeld[key].sum
			}
		}
	}
	held /= float64(op.count)
	if held <= 0 {
		return 0
	}
	g.heldCPU = min(cpu/own, 1)
	return min(held*g.heldCPU, cpu)
}

// siteKeysOf lists, sorted, the keys of m at the call sites of
// operation id (siteGroup(id, …)).
func (g *generator) siteKeysOf(m map[string]*sample, id string) []string {
	var keys []string
	prefix := siteGroup(id, "")
	for key := range m {
		if strings.HasPrefix(key, prefix) {
			keys = append(keys, key)
		}
	}
	slices.Sort(keys)
	return keys
}

// txMarks marks, along a list of elements of the operation g.caller,
// the transactions its calls to databases run in (transactions) where
// a resource is held around the transaction's first call (holdOf): the
// resource is acquired before that call, released after the last (a
// pair that model.ScopeHolds makes one hold), and the calls to the
// database between hold it already. Calls outside transactions, and
// transactions around which nothing is held, keep their own holds.
// Calls in parallel blocks are not read. A component that keeps its
// connection to the request's end holds it so instead (toEndMarks).
func (g *generator) txMarks(elems []*elem) []txMark {
	marks := make([]txMark, len(elems))
	if name, ok := g.toEndHolds[componentOf(g.caller)]; ok {
		return g.toEndMarks(elems, marks, name)
	}
	spans := transactions(len(elems), func(i int) string {
		e := elems[i]
		if e.kind != elemExternal {
			return ""
		}
		if peer, _, ok := strings.Cut(e.target, ": "); ok && g.s.dbPeers[peer] != "" {
			return e.target
		}
		return ""
	})
	for _, sp := range spans {
		name, ok := g.holdOf(g.caller, elems[sp.first].target)
		if !ok {
			continue
		}
		marks[sp.first].acquire = name
		marks[sp.last].release = name
		if h := g.s.txHeld[siteGroup(g.caller, elems[sp.first].target)]; h != nil {
			marks[sp.last].held = h.mean() * g.heldCPU
		}
		for k := sp.first; k <= sp.last; k++ {
			e := elems[k]
			if peer, _, _ := strings.Cut(e.target, ": "); e.kind == elemExternal && peer == sp.peer {
				if held, _ := g.holdOf(g.caller, e.target); held == name {
					marks[k].inside = true
				}
			}
		}
	}
	return marks
}

// transactionEvidence says, per operation and database, the
// transactions its calls ran in and the resource held over each; not
// for a component that keeps its connections to the request's end
// (checkPoolTimes says so).
func (g *generator) transactionEvidence() {
	for _, key := range slices.Sorted(maps.Keys(g.s.txTimes)) {
		parts := strings.Split(key, "\x00")
		tx, op := g.s.txTimes[key], g.s.ops[parts[1]]
		if len(parts) != 3 || op == nil || op.count == 0 || tx.n == 0 || g.toEndHolds[op.component] != "" {
			continue
		}
		name, held := g.holdOf(parts[1], parts[2])
		if !held {
			continue
		}
		peer, _, _ := strings.Cut(parts[2], ": ")
		g.rep.evidencef("%s: its calls to database %s ran in transactions, %.3g per execution (from %s to COMMIT or ROLLBACK, or the last call), %s each, %s of it in none of its calls: %s is held over each transaction, not per call, and the CPU of that time runs in it",
			parts[1], peer, float64(tx.n)/float64(op.count), externalTargetID(parts[2]), textout.Duration(tx.mean()), textout.Duration(g.s.txHeld[key].mean()), name)
	}
}

// toEndMarks marks elems, a list of the operation g.caller's elements
// whose component holds name from its first call to a database to the
// request's end (toEndHolds): name is acquired before the first call
// holding it and released after the list's last element, its own time
// after that call (State.toEndOwn) put before the release as CPU, and
// the calls between hold it already.
func (g *generator) toEndMarks(elems []*elem, marks []txMark, name string) []txMark {
	first := -1
	for i, e := range elems {
		if e.kind != elemExternal || !g.heldToEnd(g.caller, e.target) {
			continue
		}
		if first < 0 {
			first = i
		}
		marks[i].inside = true
	}
	if first < 0 {
		return marks
	}
	marks[first].acquire = name
	last := len(elems) - 1
	marks[last].release = name
	peer, _, _ := strings.Cut(elems[first].target, ": ")
	if h := g.s.toEndOwn[siteGroup(g.caller, peer)]; h != nil {
		marks[last].held = h.mean() * g.heldCPU
	}
	return marks
}

// heldToEnd reports whether a call by operation caller to target holds
// the resource its component holds to the request's end (toEndHolds).
func (g *generator) heldToEnd(caller, target string) bool {
	name, ok := g.toEndHolds[componentOf(caller)]
	if !ok {
		return false
	}
	held, _ := g.holdOf(caller, target)
	return held == name
}

// releasedAtEnd moves the last release of name in steps to their end:
// a connection kept to the request's end (toEndHolds) is held over the
// operation's time off the CPU and CPU after its calls too, which follow
// its calls. Where the calls' variants release it in a branch, what
// follows the branch goes into each of its arms (the same steps, run
// after whichever arm ran), and the release to each arm's end. The time
// off the CPU it then holds was part of the own time moved in as CPU
// (heldCPUShare, its share of the CPU over the whole own time): the CPU
// there keeps what is left of that own time, the rest going back to the
// operation's first burst.
func (g *generator) releasedAtEnd(steps []model.Step, name string) []model.Step {
	out, back := g.moveRelease(steps, name)
	if first := slices.IndexFunc(out, func(s model.Step) bool { return s.Kind == model.StepCPU }); back > 0 && first >= 0 {
		out[first].Demand = withMean(out[first].Demand, out[first].Demand.Mean()+back)
	}
	return out
}

// moveRelease is releasedAtEnd's move, in steps and, where they release
// name in a branch, in its arms; back is the CPU per execution the moved
// in own time gives back.
func (g *generator) moveRelease(steps []model.Step, name string) (out []model.Step, back float64) {
	releases := func(list []model.Step) bool {
		return slices.ContainsFunc(list, func(s model.Step) bool { return s.Kind == model.StepRelease && s.Resource == name })
	}
	for i := len(steps) - 1; i >= 0; i-- {
		switch s := steps[i]; {
		case s.Kind == model.StepRelease && s.Resource == name:
			out = append(slices.Delete(slices.Clone(steps), i, i+1), s)
			var off float64
			for _, t := range out[i : len(out)-1] {
				if t.Kind == model.StepDelay {
					off += t.Demand.Mean()
				}
			}
			if held := i - 1; off > 0 && g.heldCPU > 0 && held >= 0 && out[held].Kind == model.StepCPU {
				c := out[held].Demand.Mean()
				if keep := math.Max(c/g.heldCPU-off, 0); keep < c {
					back = c - keep
					out[held].Demand = model.Exp(round(keep, 6))
					if keep < minLatency {
						out = slices.Delete(out, held, held+1)
					}
				}
			}
			return out, back
		case s.Kind == model.StepBranch && slices.ContainsFunc(s.Branches, func(b model.Branch) bool { return releases(b.Steps) }):
			tail := steps[i+1:]
			s.Branches = slices.Clone(s.Branches)
			for j, b := range s.Branches {
				arm, armBack := g.moveRelease(slices.Concat(b.Steps, tail), name)
				s.Branches[j].Steps = arm
				back += b.P * armBack
			}
			return append(slices.Clone(steps[:i]), s), back
		}
	}
	return steps, 0
}
