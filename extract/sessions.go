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

// sessionSweep is how many session requests pass between evictions of
// sessions that have timed out.
const sessionSweep = 10000

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
	// last holds, per open session, the end of its latest request.
	last   map[string]int64
	latest int64
	// sessions counts the distinct sessions seen (a session that times out
	// and comes back counts again).
	sessions int64
	// outOfOrder counts requests that started before their session's
	// previous request ended: concurrent requests of one session, or trees
	// delivered out of order; no think time is taken from them.
	outOfOrder int64
}

func newSessionStats() *sessionStats {
	return &sessionStats{resp: newSample(), think: newSample(), byEntry: map[string]int64{}, last: map[string]int64{}}
}

// foldSession records a request of a session entering at n.
func (s *State) foldSession(entry string, n *trace.Node, cfg *Config) {
	if cfg == nil || cfg.Session == "" {
		return
	}
	id, ok := findAttr(n, cfg.Session, 0)
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
	start, end := n.Span.Start, n.Span.End
	ss.latest = max(ss.latest, start)
	if last, ok := ss.last[id]; ok && start-last < sessionTimeout {
		if start >= last {
			ss.think.add(seconds(start - last))
		} else {
			ss.outOfOrder++
		}
		ss.last[id] = max(last, end)
	} else {
		ss.sessions++
		ss.last[id] = end
	}
	if ss.requests%sessionSweep == 0 {
		for sid, last := range ss.last {
			if ss.latest-last > sessionTimeout {
				delete(ss.last, sid)
			}
		}
	}
}

// merge adds the sessions of o. A session split between the two states
// loses the think time across the split.
func (ss *sessionStats) merge(o *sessionStats) {
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
	if ss == nil {
		return out
	}
	for id, n := range ss.byEntry {
		if e := g.s.entries[id]; e != nil && float64(n) >= sessionShare*float64(e.count) {
			out[id] = true
		}
	}
	return out
}

// sessionWorkloadModel makes the closed workload of the sessions, or nil.
func (g *generator) sessionWorkloadModel(entries map[string]bool) *model.Workload {
	ss := g.s.sessions
	span := g.s.span()
	if ss == nil || len(entries) == 0 || span <= 0 {
		return nil
	}
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
	g.rep.evidencef("workload %s: %d requests of %d sessions (attribute %s); think time %.3gs on average between a request's end and the next's start; %.4g requests/s and %.3gs per request give %d users by Little's law",
		sessionWorkload, n, ss.sessions, g.cfg.Session, think, x, ss.resp.mean(), users)
	if ss.outOfOrder > 0 {
		g.rep.warnf("%d session requests started before their session's previous request ended (concurrent requests of a session); no think time was taken from them", ss.outOfOrder)
	}
	if ss.think.n < 30 {
		g.rep.warnf("only %d think times measured: the session workload's think time is uncertain", ss.think.n)
	}
	return w
}
