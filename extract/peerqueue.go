package extract

import (
	"bytes"
	"cmp"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/perfcast/perfcast/ingest"
)

// A system seen only by its clients' spans (a database, a cache, a service
// outside the traces) is by default a delay of the latency its clients
// measured, which no load changes. Where it has a bounded number of
// servers (worker threads, cores, a disk), its calls wait for one when
// enough others are in flight, and a call's latency grows with how many
// were in flight as it began. Arrivals see the system as it is on average,
// so the growth shows from the traces alone, without metrics of its
// machine.
//
// Each system's calls are swept in order of start (peerSweep): a call's
// others are the calls of other requests to the same system in flight as
// it began (its own request's parallel calls are left out, being alike in
// cost where the request is). Its latency is recorded by that count, per
// kind of call. An arrival at c servers serving in order that finds k
// others there waits for k − c + 1 of them to leave when k ≥ c, each
// departure 1/c of a mean service apart, and not at all otherwise; so
// kind j's mean latency is a_j + b·max(0, k − c + 1), a_j its latency
// without a wait (network and service) and b = S/c for mean service S.
// Cores shared among the calls grow otherwise, from the first other on.
// fitPeerQueue fits a_j, b and c by weighted least squares; placeQueues
// (peersystems.go) finds what answers the calls.

// peerLevelCount is the number of counts of others in flight that the
// sweep tells apart: 0 to peerLevelCount − 2 each, the last those of more.
const peerLevelCount = 65

// Thresholds of the fit (fitPeerQueue, observePeer).
const (
	// peerQueueT is the least slope, in its standard errors.
	peerQueueT = 4
	// peerQueueShare is the least mean wait at the observed load, as a
	// share of the latency without a wait.
	peerQueueShare = 0.02
	// peerQueueBeyond is the least number of calls that began with c or
	// more others in flight.
	peerQueueBeyond = 30
	// peerCellMin is the least number of calls at a count for its mean
	// to enter the fit.
	peerCellMin = 5
	// peerBusyMax is the largest busy share a fit may imply.
	peerBusyMax = 0.95
)

// peerCall is one call to a system in the sweep.
type peerCall struct {
	start, end int64
	trace      ingest.TraceID
	kind       int32
}

// peerActive is a call in flight: when it ends and whose request it is.
type peerActive struct {
	end   int64
	trace ingest.TraceID
}

func (a peerActive) before(o peerActive) bool { return a.end < o.end }

// peerLevels holds a kind of call's latencies, in seconds, by the number
// of other requests' calls to its system in flight as it began.
type peerLevels [peerLevelCount]moments

// peerSweep follows the calls to one system. It sweeps like concurrency:
// calls are sorted and swept once they are older than concurrencyLag, so
// memory holds the calls of that window.
type peerSweep struct {
	pending   []peerCall
	active    minHeap[peerActive]
	latest    int64
	nextSweep int
	// traces counts each request's calls in flight.
	traces map[ingest.TraceID]int32
	// warmUntil is when the calls recorded begin: those that start
	// earlier count as others but are not recorded (a simulation's
	// warm-up).
	warmUntil int64
	// kinds are the kinds of call (span names) in the order met, levels
	// theirs.
	kinds  []string
	index  map[string]int32
	levels []peerLevels
}

func newPeerSweep() *peerSweep {
	return &peerSweep{nextSweep: sweepBatch, traces: map[ingest.TraceID]int32{}, index: map[string]int32{}}
}

// kindOf returns the index of kind, adding it.
func (p *peerSweep) kindOf(kind string) int32 {
	if i, ok := p.index[kind]; ok {
		return i
	}
	p.kinds = append(p.kinds, kind)
	p.levels = append(p.levels, peerLevels{})
	p.index[kind] = int32(len(p.kinds) - 1)
	return int32(len(p.kinds) - 1)
}

// add records a call of the given kind by request trace.
func (p *peerSweep) add(kind string, start, end int64, trace ingest.TraceID) {
	if end < start {
		return
	}
	p.pending = append(p.pending, peerCall{start: start, end: end, trace: trace, kind: p.kindOf(kind)})
	p.latest = max(p.latest, start)
	if len(p.pending) >= p.nextSweep {
		p.sweep(p.latest - concurrencyLag)
		p.nextSweep = nextSweepAt(len(p.pending))
	}
}

// sweep places the pending calls that start at or before upTo, in order
// of start (then end, request and kind, so that every run places them
// alike). A call that arrives later than the lag allows is placed among
// those in flight when it is swept.
func (p *peerSweep) sweep(upTo int64) {
	slices.SortFunc(p.pending, func(a, b peerCall) int {
		return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(a.end, b.end),
			bytes.Compare(a.trace[:], b.trace[:]), cmp.Compare(a.kind, b.kind))
	})
	n := 0
	for _, c := range p.pending {
		if c.start > upTo {
			break
		}
		for len(p.active) > 0 && p.active[0].end <= c.start {
			done := p.active.pop()
			if p.traces[done.trace]--; p.traces[done.trace] <= 0 {
				delete(p.traces, done.trace)
			}
		}
		if c.start >= p.warmUntil {
			others := len(p.active) - int(p.traces[c.trace])
			p.levels[c.kind][min(others, peerLevelCount-1)].add(seconds(c.end - c.start))
		}
		p.active.push(peerActive{end: c.end, trace: c.trace})
		p.traces[c.trace]++
		n++
	}
	p.pending = append(p.pending[:0], p.pending[n:]...)
}

// finish places every pending call.
func (p *peerSweep) finish() { p.sweep(math.MaxInt64) }

// clone returns a copy that folds on independently of p.
func (p *peerSweep) clone() *peerSweep {
	cp := *p
	cp.pending = slices.Clone(p.pending)
	cp.active = slices.Clone(p.active)
	cp.traces = make(map[ingest.TraceID]int32, len(p.traces))
	for t, n := range p.traces {
		cp.traces[t] = n
	}
	cp.kinds = slices.Clone(p.kinds)
	cp.index = make(map[string]int32, len(p.index))
	for k, i := range p.index {
		cp.index[k] = i
	}
	cp.levels = slices.Clone(p.levels)
	return &cp
}

// finished returns a copy with every call placed, so that folding may go
// on in p.
func (p *peerSweep) finished() *peerSweep {
	cp := p.clone()
	cp.finish()
	return cp
}

// merge adds the calls of o, from traces disjoint from p's. Each is
// swept first: calls of the two in flight at once do not count as each
// other's others, which understates the growth where the two ran at the
// same time (states split by request rather than by time).
func (p *peerSweep) merge(o *peerSweep) {
	p.finish()
	o = o.finished()
	for i, kind := range o.kinds {
		j := p.kindOf(kind)
		for l := range o.levels[i] {
			p.levels[j][l].merge(o.levels[i][l])
		}
	}
}

// calls is the number of calls placed.
func (p *peerSweep) calls() float64 {
	var n float64
	for _, lv := range p.levels {
		for _, m := range lv {
			n += m.n
		}
	}
	return n
}

// peerCall records an external call, sp, in the sweep of its system; not
// for a sampled trace, whose requests' calls are only some of those in
// flight.
func (s *State) peerCall(sp *ingest.Span) {
	peer := peerOf(sp)
	if peer == "" || s.weight > 1 {
		return
	}
	sys := strings.ReplaceAll(peer, "/", "-") // as externalID names it
	p := s.peers[sys]
	if p == nil {
		p = newPeerSweep()
		s.peers[sys] = p
	}
	p.add(sp.Name, sp.Start, sp.End, sp.TraceID)
}

// savedPeers is a peerSweep in a saved state: each kind of call and its
// moments (count, sum, sum of squares) at each count of others, the calls
// not yet placed and those in flight.
type savedPeers struct {
	Kinds     []string                     `json:"kinds"`
	Levels    [][peerLevelCount][3]float64 `json:"levels"`
	Pending   []savedPeerCall              `json:"pending,omitempty"`
	Active    []savedPeerCall              `json:"active,omitempty"`
	Latest    int64                        `json:"latest"`
	NextSweep int                          `json:"next_sweep"`
}

// savedPeerCall is a call not yet placed, or in flight (its end and
// request only).
type savedPeerCall struct {
	Start int64  `json:"start,omitempty"`
	End   int64  `json:"end"`
	Trace string `json:"trace,omitempty"`
	Kind  int32  `json:"kind,omitempty"`
}

func savePeers(p *peerSweep) *savedPeers {
	v := &savedPeers{Kinds: p.kinds, Levels: make([][peerLevelCount][3]float64, len(p.levels)), Latest: p.latest, NextSweep: p.nextSweep}
	for i, lv := range p.levels {
		for l, m := range lv {
			v.Levels[i][l] = [3]float64{m.n, m.sum, m.sq}
		}
	}
	for _, c := range p.pending {
		v.Pending = append(v.Pending, savedPeerCall{Start: c.start, End: c.end, Trace: traceHex(c.trace), Kind: c.kind})
	}
	for _, a := range p.active {
		v.Active = append(v.Active, savedPeerCall{End: a.end, Trace: traceHex(a.trace)})
	}
	return v
}

func (v *savedPeers) restore() (*peerSweep, error) {
	if v == nil {
		return nil, errors.New("missing")
	}
	if len(v.Kinds) != len(v.Levels) {
		return nil, fmt.Errorf("%d kinds of call, %d rows of counts", len(v.Kinds), len(v.Levels))
	}
	p := newPeerSweep()
	p.latest, p.nextSweep = v.Latest, max(v.NextSweep, sweepBatch)
	for i, kind := range v.Kinds {
		if _, dup := p.index[kind]; dup {
			return nil, fmt.Errorf("kind of call %q twice", kind)
		}
		j := p.kindOf(kind)
		for l, m := range v.Levels[i] {
			if !(m[0] >= 0) || math.IsInf(m[0], 0) || math.IsNaN(m[1]) || math.IsInf(m[1], 0) || !(m[2] >= 0) || math.IsInf(m[2], 0) {
				return nil, fmt.Errorf("kind of call %q: count %d: moments %v", kind, l, m)
			}
			p.levels[j][l] = moments{n: m[0], sum: m[1], sq: m[2]}
		}
	}
	trace := func(i int, x savedPeerCall) (ingest.TraceID, error) {
		var id ingest.TraceID
		if x.Trace == "" {
			return id, nil
		}
		b, err := hex.DecodeString(x.Trace)
		if err != nil || len(b) != len(id) {
			return id, fmt.Errorf("call %d: trace id %q", i, x.Trace)
		}
		copy(id[:], b)
		return id, nil
	}
	for i, x := range v.Pending {
		id, err := trace(i, x)
		if err != nil {
			return nil, err
		}
		if x.End < x.Start || x.Kind < 0 || int(x.Kind) >= len(p.kinds) {
			return nil, fmt.Errorf("pending call %d: from %d to %d, kind %d", i, x.Start, x.End, x.Kind)
		}
		p.pending = append(p.pending, peerCall{start: x.Start, end: x.End, trace: id, kind: x.Kind})
	}
	for i, x := range v.Active {
		id, err := trace(i, x)
		if err != nil {
			return nil, err
		}
		p.active = append(p.active, peerActive{end: x.End, trace: id})
		p.traces[id]++
	}
	p.active.init()
	return p, nil
}

// peerFit is a fit of a system's latencies by calls in flight (see the top
// of this file).
type peerFit struct {
	// c is the number of servers; b the latency added by each call in
	// flight beyond c − 1, se its standard error.
	c     int
	b, se float64
	// a is each kind's latency without a wait (NaN for a kind with no
	// counts in the fit).
	a []float64
	// beyond is the number of calls that began with c or more others in
	// flight.
	beyond float64
	// top is the highest count of others in the fit.
	top int
}

// fitPeerQueue fits the latencies of a system's kinds of call by the
// number of others in flight (fitPeerAt) for each c, and returns the fit
// of the smallest residual among those whose b is positive and whose mean
// service b·c is within the calls' mean latency without a wait (by
// peerQueueT standard errors of b: with no network it is that latency).
// ok is false where no c qualifies.
func fitPeerQueue(levels []peerLevels) (best peerFit, ok bool) {
	cells := peerCells(levels)
	bestChi := math.Inf(1)
	for c := 1; c <= cells.top; c++ {
		fit, chi, fine := cells.fitAt(c)
		if !fine || !(fit.b > 0) || chi >= bestChi {
			continue
		}
		var an, nn float64
		for _, e := range cells.cells {
			an += e.n * fit.a[e.kind]
			nn += e.n
		}
		if (fit.b-peerQueueT*fit.se)*float64(c) > an/nn {
			continue
		}
		best, bestChi, ok = fit, chi, true
	}
	return best, ok
}

// fitPeerAt is fitPeerQueue's fit at c servers, whatever its slope.
func fitPeerAt(levels []peerLevels, c int) (peerFit, bool) {
	fit, _, ok := peerCells(levels).fitAt(c)
	return fit, ok
}

// peerCell is the mean latency of a kind of call at a count of others in
// flight, with its calls and its weight in the fit.
type peerCell struct {
	kind, k         int
	n, mean, weight float64
}

// peerCellSet is the cells of a fit: every count of peerCellMin calls or
// more but the last (of more than the levels), each weighted by its calls
// over its kind's variance within counts.
type peerCellSet struct {
	cells []peerCell
	kinds int
	top   int
}

func peerCells(levels []peerLevels) peerCellSet {
	set := peerCellSet{kinds: len(levels)}
	for j, lv := range levels {
		var within, dof float64
		for _, m := range lv[:peerLevelCount-1] {
			if m.n >= peerCellMin {
				within += m.sq - m.sum*m.sum/m.n
				dof += m.n - 1
			}
		}
		if dof <= 0 || !(within > 0) {
			continue
		}
		variance := within / dof
		for k, m := range lv[:peerLevelCount-1] {
			if m.n >= peerCellMin {
				set.cells = append(set.cells, peerCell{kind: j, k: k, n: m.n, mean: m.mean(), weight: m.n / variance})
				set.top = max(set.top, k)
			}
		}
	}
	return set
}

// fitAt fits each kind j's mean latency at count k as a_j + b·max(0,
// k − c + 1) by weighted least squares, and returns the fit and its
// weighted residual. The standard error of b is scaled up by the
// residual's excess over its degrees of freedom. ok is false where the
// counts do not reach c.
func (set peerCellSet) fitAt(c int) (fit peerFit, chi float64, ok bool) {
	x := func(k int) float64 { return float64(max(0, k-c+1)) }
	// Each kind's weighted sums of x and of the latency.
	sw, sx, sm := make([]float64, set.kinds), make([]float64, set.kinds), make([]float64, set.kinds)
	for _, e := range set.cells {
		sw[e.kind] += e.weight
		sx[e.kind] += e.weight * x(e.k)
		sm[e.kind] += e.weight * e.mean
	}
	var sxx, sxm, beyond float64
	for _, e := range set.cells {
		dx := x(e.k) - sx[e.kind]/sw[e.kind]
		sxx += e.weight * dx * dx
		sxm += e.weight * dx * (e.mean - sm[e.kind]/sw[e.kind])
		if e.k >= c {
			beyond += e.n
		}
	}
	if !(sxx > 0) {
		return peerFit{}, 0, false
	}
	b := sxm / sxx
	a := make([]float64, set.kinds)
	for j := range a {
		a[j] = math.NaN()
		if sw[j] > 0 {
			a[j] = (sm[j] - b*sx[j]) / sw[j]
		}
	}
	for _, e := range set.cells {
		r := e.mean - a[e.kind] - b*x(e.k)
		chi += e.weight * r * r
	}
	dof := float64(len(set.cells) - set.kinds - 1)
	scale := 1.0
	if dof > 0 {
		scale = math.Max(1, chi/dof)
	}
	return peerFit{c: c, b: b, se: math.Sqrt(scale / sxx), a: a, beyond: beyond, top: set.top}, chi, true
}
