package extract

import (
	"maps"
	"math"
	"slices"

	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/trace"
)

// Sessions: when the configuration names an attribute that identifies a
// user or session, the requests that carry it form one closed workload, as
// in the usage models of the seeds: a population of users who each think,
// send a request, wait for it, and think again. The think time is measured
// between the end of a session's request and the start of its next; the
// population follows from Little's law, N = X·(R + Z).

// sessionTimeout ends a session that has been idle this long: the next
// request starts a new one and no think time is measured across the gap.
const sessionTimeout = int64(30 * 60e9)

// sessionSweep is how many session requests pass between sweeps of every
// session: requests placed, sessions that have timed out evicted.
const sessionSweep = 10000

// sessionLag is how long a request of a session waits, in the time of the
// latest request folded, before its think time is taken: trees are folded
// in the order they complete (an exporter's batch holds one service's spans
// together, a long request completes after a short one that followed it),
// and a session's requests have to be taken in the order they started.
const sessionLag = int64(120e9)

// sessionWorkload is the name of the closed workload of sessions.
const sessionWorkload = "sessions"

// sessionShare is the share of an entry's requests that must carry a
// session id for the entry to belong to the session workload.
const sessionShare = 0.9

// sessionStats aggregates the requests that carry a session id.
type sessionStats struct {
	requests int64
	resp     *sample
	think    *sample
	// byEntry counts session requests per entry operation.
	byEntry map[string]int64
	// last holds, per open session, the end of its latest request placed.
	last map[string]int64
	// pending holds, per session, the requests folded but not yet placed,
	// in order of start.
	pending map[string][]sessionRequest
	// latest is the latest start of a request folded.
	latest int64
	// sessions counts the distinct sessions seen (a session that times out
	// and comes back counts again).
	sessions int64
	// outOfOrder counts requests that started before their session's
	// previous request ended: concurrent requests of one session, or trees
	// delivered more than sessionLag late; no think time is taken from them.
	outOfOrder int64
	// split counts the sessions found open in two merged states whose
	// requests interleave in time: receivers fed by trace id each see
	// some of a session's requests, and take the time between two of them
	// as one think time where other requests came between.
	split int64
}

// sessionRequest is when a request of a session started and ended.
type sessionRequest struct {
	Start int64 `json:"start"`
	End   int64 `json:"end"`
}

func newSessionStats() *sessionStats {
	return &sessionStats{resp: newSample(), think: newSample(), byEntry: map[string]int64{},
		last: map[string]int64{}, pending: map[string][]sessionRequest{}}
}

// foldSession records a request of a session entering at n.
func (s *State) foldSession(entry string, n *trace.Node, cfg *Config) {
	attr := cfg.sessionAttr()
	if attr == "" || s.weight > 1 {
		return // a sampled trace leaves out some of its session's requests
	}
	id, ok := findAttr(n, attr)
	if !ok || id == "" {
		return
	}
	ss := s.sessions
	if ss == nil {
		ss = newSessionStats()
		s.sessions = ss
	}
	ss.requests++
	ss.byEntry[entry]++
	ss.resp.add(seconds(n.Duration()))
	ss.latest = max(ss.latest, n.Span.Start)
	ss.pending[id] = insertRequest(ss.pending[id], sessionRequest{n.Span.Start, n.Span.End})
	ss.placeBefore(id, ss.latest-sessionLag)
	if ss.requests%sessionSweep == 0 {
		ss.sweep(ss.latest - sessionLag)
	}
}

// insertRequest adds q to requests kept in order of start (then of end).
func insertRequest(rs []sessionRequest, q sessionRequest) []sessionRequest {
	i := len(rs)
	for i > 0 && (rs[i-1].Start > q.Start || rs[i-1].Start == q.Start && rs[i-1].End > q.End) {
		i--
	}
	return slices.Insert(rs, i, q)
}

// placeBefore takes the think times of session id's pending requests that
// started before the given time, in order of start.
func (ss *sessionStats) placeBefore(id string, before int64) {
	rs := ss.pending[id]
	i := 0
	for ; i < len(rs) && rs[i].Start < before; i++ {
		ss.place(id, rs[i])
	}
	switch {
	case i == len(rs):
		delete(ss.pending, id)
	case i > 0:
		ss.pending[id] = slices.Clone(rs[i:])
	}
}

// place takes the think time before request q of session id: from the end
// of the session's previous request to q's start.
func (ss *sessionStats) place(id string, q sessionRequest) {
	if last, ok := ss.last[id]; ok && q.Start-last < sessionTimeout {
		if q.Start >= last {
			ss.think.add(seconds(q.Start - last))
		} else {
			ss.outOfOrder++
		}
		ss.last[id] = max(last, q.End)
		return
	}
	ss.sessions++
	ss.last[id] = q.End
}

// sweep places every session's requests that started before the given
// time, in order of session id so that the sums are the same in every run,
// and forgets the sessions that have timed out.
func (ss *sessionStats) sweep(before int64) {
	for _, id := range slices.Sorted(maps.Keys(ss.pending)) {
		ss.placeBefore(id, before)
	}
	for id, last := range ss.last {
		if ss.latest-last > sessionTimeout && ss.pending[id] == nil {
			delete(ss.last, id)
		}
	}
}

// merge adds the sessions of o. Each state's pending requests are placed
// first, in that state's own order; a session split between the two
// states loses the think time across the split. When the states' requests
// interleave in time, a session open in both is counted as split.
func (ss *sessionStats) merge(o *sessionStats, interleaved bool) {
	ss.sweep(math.MaxInt64)
	o.sweep(math.MaxInt64)
	if interleaved {
		for sid := range o.last {
			if _, ok := ss.last[sid]; ok {
				ss.split++
			}
		}
	}
	ss.split += o.split
	ss.requests += o.requests
	ss.resp.merge(o.resp)
	ss.think.merge(o.think)
	ss.sessions += o.sessions
	ss.outOfOrder += o.outOfOrder
	for e, n := range o.byEntry {
		ss.byEntry[e] += n
	}
	for sid, last := range o.last {
		ss.last[sid] = max(ss.last[sid], last)
	}
	ss.latest = max(ss.latest, o.latest)
}

// sessionEntries returns the entry operations whose requests belong to the
// session workload.
func (g *generator) sessionEntries() map[string]bool {
	out := map[string]bool{}
	ss := g.s.sessions
	if ss == nil || !g.cfg.sessionNamed() && !ss.returning() {
		return out
	}
	for id, n := range ss.byEntry {
		if e := g.s.entries[id]; e != nil && float64(n) >= sessionShare*float64(e.count) {
			out[id] = true
		}
	}
	return out
}

// returning reports whether the sessions show users that come back: at
// least one think time per session on average, so that most sessions
// held more than one request. An id each request has alone (a request id
// under the session's name, or a session of one page) says nothing of
// users, and a closed workload of them would scale a rate by users.
func (ss *sessionStats) returning() bool {
	ss.sweep(math.MaxInt64)
	return ss.think.n >= ss.sessions
}

// oneShotSessions says, where the sessions were followed by default but
// did not show users coming back (returning), that their requests stay
// open workloads.
func (g *generator) oneShotSessions() {
	ss := g.s.sessions
	if ss == nil || ss.requests == 0 || g.cfg.sessionNamed() || ss.returning() {
		return
	}
	g.rep.evidencef("%d requests carry %s, in %d sessions with %d think times between their requests: most sessions hold one request, which shows no users coming back, so their entries stay open workloads (session: %s in --config takes them as users)",
		ss.requests, g.cfg.sessionAttr(), ss.sessions, ss.think.n, g.cfg.sessionAttr())
}

// sessionWorkloadModel makes the closed workload of the sessions, or nil.
func (g *generator) sessionWorkloadModel(entries map[string]bool) *model.Workload {
	ss := g.s.sessions
	span := g.s.span()
	if ss == nil || len(entries) == 0 || span <= 0 {
		return nil
	}
	ss.sweep(math.MaxInt64)
	var n int64
	for id := range entries {
		n += ss.byEntry[id]
	}
	x := float64(n) / span
	think := ss.think.mean()
	users := int(math.Round(x * (ss.resp.mean() + think)))
	if users < 1 {
		users = 1
	}
	ids := slices.Sorted(maps.Keys(entries))
	stats := make([]*entryStats, len(ids))
	for i, id := range ids {
		stats[i] = g.s.entries[id]
	}
	w := &model.Workload{Name: sessionWorkload, Closed: &model.Closed{Users: users, Think: g.fit("think time", ss.think)},
		Params: g.workloadParams(stats, g.bins)}
	if len(ids) == 1 {
		w.Steps = []model.Step{{Kind: model.StepCall, Target: ids[0]}}
	} else {
		counts := make([]int64, len(ids))
		for i, id := range ids {
			counts[i] = ss.byEntry[id]
		}
		probs := roundedProbs(counts)
		br := model.Step{Kind: model.StepBranch}
		for i, id := range ids {
			br.Branches = append(br.Branches, model.Branch{P: probs[i], Steps: []model.Step{{Kind: model.StepCall, Target: id}}})
		}
		w.Steps = []model.Step{br}
	}
	how := "attribute " + g.cfg.sessionAttr()
	if !g.cfg.sessionNamed() {
		how += ", followed where no configuration names one; session: " + NoSession + " in --config leaves them open workloads"
	}
	g.rep.evidencef("workload %s: %d requests of %d sessions (%s); think time %.3gs on average between a request's end and the next's start; %.4g requests/s and %.3gs per request give %d users by Little's law",
		sessionWorkload, n, ss.sessions, how, think, x, ss.resp.mean(), users)
	if ss.split > 0 {
		g.rep.warnf("%d sessions had requests in several of the merged states at once: each state took the time between the requests it saw as think time, though the others' came between, so the think time is overstated and the users with it; a session's traces must reach one receiver (a single receiver, or routing by an attribute every span of the session carries, such as %s set on every span)", ss.split, g.cfg.sessionAttr())
	}
	if ss.outOfOrder > 0 {
		g.rep.warnf("%d session requests started before their session's previous request ended (concurrent requests of a session); no think time was taken from them", ss.outOfOrder)
	}
	switch {
	case ss.think.n < 30:
		g.rep.warnf("only %d think times measured: the session workload's think time is uncertain", ss.think.n)
	case ss.think.n < ss.sessions:
		g.rep.warnf("%d think times from %d sessions: most sessions show one request, so the traces (%.3gs) are likely too short for the think time, and the think time and the users are underestimated; or %s identifies something other than a user",
			ss.think.n, ss.sessions, span, g.cfg.sessionAttr())
	}
	return w
}
