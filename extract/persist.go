package extract

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/perfcast/perfcast/ingest"
)

// StateFormat is the version of the layout Save writes; LoadState reads
// only this one. Format 2 profiles a replica per machine where the spans
// name one (format 1 per machine and instance); it adds the profiles of
// processes. Format 3 adds to the counts of the replicas' load as calls
// came what the lighter of two would have sent where (choiceStats), which
// a state of format 2 lacks for the calls it had counted.
const StateFormat = 3

// maxSketchIndex bounds the bin indices a saved sketch may hold: at 1 %
// accuracy index i stands for about e^(i/50) seconds, so ±2^16 covers
// every representable duration many times over.
const maxSketchIndex = 1 << 16

// Save writes the state as gzipped JSON: everything folding has gathered,
// the intervals still pending in the concurrency sweeps included, so that
// a state loaded back and folded on gives what folding on without the
// round trip would have given. The bytes depend only on the state, not on
// map order.
func (s *State) Save(w io.Writer) error {
	zw, _ := gzip.NewWriterLevel(w, gzip.BestSpeed) // a valid level: no error
	enc := json.NewEncoder(zw)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s.snapshot()); err != nil {
		return fmt.Errorf("save state: %w", err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("save state: %w", err)
	}
	return nil
}

// LoadState reads a state written by Save (gzipped or not). A state that
// does not hold together (a variant whose calls do not match its shape, a
// window of another operation count, a sweep pointing nowhere) is refused
// with an error that says where, rather than loaded to fail later.
func LoadState(r io.Reader) (*State, error) {
	br := bufio.NewReader(r)
	var in io.Reader = br
	if head, err := br.Peek(2); err == nil && head[0] == 0x1f && head[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("state: %w", err)
		}
		defer zr.Close()
		in = zr
	}
	dec := json.NewDecoder(in)
	var v savedState
	if err := dec.Decode(&v); err != nil {
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &syn):
			return nil, fmt.Errorf("state: byte %d: %v", syn.Offset, err)
		case errors.As(err, &typ):
			return nil, fmt.Errorf("state: %s: byte %d: %v", typ.Field, typ.Offset, err)
		}
		return nil, fmt.Errorf("state: %w", err)
	}
	if v.Format != StateFormat {
		return nil, fmt.Errorf("state: format %d, this perfcast reads %d", v.Format, StateFormat)
	}
	s, err := v.restore()
	if err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	return s, nil
}

// Clone returns an independent copy of the state, through Save and
// LoadState: generating a model finishes sweeps a live state still needs.
func (s *State) Clone() (*State, error) {
	var b bytes.Buffer
	if err := s.Save(&b); err != nil {
		return nil, err
	}
	return LoadState(&b)
}

// savedState is State as it is written. Maps become slices sorted by key
// where their order would otherwise reach the bytes.
type savedState struct {
	Format      int                          `json:"perfcast_state"`
	Traces      int64                        `json:"traces"`
	Spans       int64                        `json:"spans"`
	Modeled     int64                        `json:"modeled"`
	Partial     int64                        `json:"partial"`
	WithCPU     int64                        `json:"with_cpu"`
	Outside     int64                        `json:"outside_window,omitempty"`
	Sampled     int64                        `json:"sampled,omitempty"`
	RateLimited int64                        `json:"rate_limited,omitempty"`
	KeptMin     float64                      `json:"kept_min,omitempty"`
	KeptMax     float64                      `json:"kept_max,omitempty"`
	First       int64                        `json:"first"`
	Last        int64                        `json:"last"`
	Ops         map[string]*savedOp          `json:"operations,omitempty"`
	Entries     map[string]*savedEntry       `json:"entries,omitempty"`
	Placement   map[string]*savedPlacement   `json:"placement,omitempty"`
	Concurrency map[string]*savedConcurrency `json:"concurrency,omitempty"`
	Categories  map[string][]string          `json:"categories,omitempty"`
	Sessions    *savedSessions               `json:"sessions,omitempty"`
	SiteTimes   map[string]*savedSample      `json:"site_times,omitempty"`
	// SiteBare is State.siteBare; absent in states saved before it was
	// kept.
	SiteBare map[string]int64             `json:"site_bare,omitempty"`
	Windows  map[string]*savedHostWindows `json:"windows,omitempty"`
	Solo     map[string]*savedSolo        `json:"solo,omitempty"`
	// Peers holds, per system seen only by its clients, its calls'
	// latencies by the others in flight (peerSweep); absent in states
	// saved before they were kept.
	Peers map[string]*savedPeers `json:"peers,omitempty"`
	// DBPeers is State.dbPeers; absent in states saved before it was
	// kept.
	DBPeers map[string]string `json:"db_peers,omitempty"`
	// TxTimes and TxHeld are State.txTimes and State.txHeld; absent in
	// states saved before they were kept.
	TxTimes map[string]*savedSample `json:"tx_times,omitempty"`
	TxHeld  map[string]*savedSample `json:"tx_held,omitempty"`
	// ToEnd and ToEndOwn are State.toEnd and State.toEndOwn; absent in
	// states saved before they were kept.
	ToEnd    map[string]*savedSample `json:"to_end,omitempty"`
	ToEndOwn map[string]*savedSample `json:"to_end_own,omitempty"`
	// Calm holds per host the calm executions found (calmStats), one
	// sample per level of soloLevels; absent in states saved before it
	// was kept.
	Calm map[string][]*savedSample `json:"calm_found,omitempty"`
	// Occupied holds per host the seconds its own times competed for
	// its cores, by how many (occupancy); absent in states saved before
	// it was kept.
	Occupied map[string][]float64 `json:"occupied,omitempty"`
	// OccupiedParts holds per host and per key of its components'
	// CPU slots the seconds that key's own times were active, by how
	// many competed with them and without (occupancyPart); absent in
	// states saved before it was kept.
	OccupiedParts map[string]map[string]*savedOccupancyPart `json:"occupied_parts,omitempty"`
	// Starts are the server spans' start times sampled per component
	// replica; absent in states saved before they were kept.
	Starts map[string][]*savedArrivalBlock `json:"starts,omitempty"`
	// Choices holds per component the load on its replicas as calls to
	// them began (choiceSweep); absent in states saved before it was
	// kept.
	Choices map[string]*savedChoices `json:"choices,omitempty"`
	// Links counts, per consumer entry and producing operation, the
	// messages joined across traces.
	Links map[string]map[string]int64 `json:"links,omitempty"`
	// SoleReplica is State.soleReplica; absent in states saved before
	// it was kept, which profiled every replica from the start.
	SoleReplica map[string]string `json:"sole_replica,omitempty"`
	// SoleProcess is State.soleProcess.
	SoleProcess map[string]string `json:"sole_process,omitempty"`
	// Callers is State.callers: per component and process, joined by a
	// NUL, the executions of each caller's component and process, joined
	// alike ("\x00" where it had none); absent in states saved before
	// they were counted.
	Callers map[string]map[string]int64 `json:"callers,omitempty"`
	// Shapes is State.shapes, by replicaGroup key; absent in states
	// saved before the processes' queues were measured.
	Shapes map[string]*savedShape `json:"shapes,omitempty"`
}

type savedSample struct {
	N   int64   `json:"n"`
	Sum float64 `json:"sum"`
	Sq  float64 `json:"sq"`
	Min float64 `json:"min"`
	Max float64 `json:"max"`
	// Zero counts the sketch's values at zero; Index and Count are its
	// non-empty bins, in index order: each bin's index and its count.
	Zero  float64   `json:"zero,omitempty"`
	Index []int64   `json:"index,omitempty"`
	Count []float64 `json:"count,omitempty"`
}

type savedOp struct {
	Component string                                 `json:"component"`
	Name      string                                 `json:"name"`
	Count     int64                                  `json:"count"`
	Resp      *savedSample                           `json:"resp"`
	Self      *savedSample                           `json:"self"`
	Solo      *savedSample                           `json:"solo"`
	CPU       *savedSample                           `json:"cpu"`
	OffCPU    *savedSample                           `json:"off_cpu"`
	PreSpan   *savedSample                           `json:"pre_span"`
	Variants  map[string][]*savedVariant             `json:"variants,omitempty"`
	Params    map[string]map[string]*savedParamStats `json:"params,omitempty"`
	CountSq   float64                                `json:"count_sq,omitempty"`
	CPUSq     float64                                `json:"cpu_sq,omitempty"`
	Errors    int64                                  `json:"errors,omitempty"`
	// Resumes and ResumedNs are op.resumes and op.resumedNs; absent in
	// states saved before they were kept.
	Resumes   int64 `json:"resumes,omitempty"`
	ResumedNs int64 `json:"resumed_ns,omitempty"`
	// ResumeGap and GapCalls are op.resumeGap and op.gapCalls; absent in
	// states saved before they were kept, and where no resume followed a
	// call to a traced server.
	ResumeGap *savedSample `json:"resume_gap,omitempty"`
	GapCalls  int64        `json:"gap_calls,omitempty"`
	// Within are the samples of op.within past the first (Solo); Begun
	// its counts begun. Absent in states saved before they were kept.
	Within []*savedSample `json:"within,omitempty"`
	Begun  []int64        `json:"begun,omitempty"`
	// OwnAtStart is op.ownAtStart, each level's count, sum and sum of
	// squares; absent in states saved before it was kept.
	OwnAtStart [][3]float64 `json:"own_at_start,omitempty"`
}

type savedVariant struct {
	Count int64        `json:"count"`
	Elems []*savedElem `json:"elems"`
}

type savedElem struct {
	Kind    elemKind         `json:"kind"`
	Target  string           `json:"target,omitempty"`
	Lists   [][]*savedElem   `json:"lists,omitempty"`
	Times   map[string]int64 `json:"times"`
	Latency *savedSample     `json:"latency"`
}

type savedParamStats struct {
	Count    int64           `json:"count"`
	Demand   *savedSample    `json:"demand"`
	Variants []*savedVariant `json:"variants,omitempty"`
}

type savedEntry struct {
	Op    string `json:"op"`
	Count int64  `json:"count"`
	// Weight is the requests Count stands for, when the traces were
	// sampled; absent, Count.
	Weight float64 `json:"weight,omitempty"`
	// Linked counts the requests whose entry span links to another trace.
	Linked    int64                       `json:"linked,omitempty"`
	Resp      *savedSample                `json:"resp"`
	PerSecond map[string]int64            `json:"per_second"`
	Arrivals  []*savedArrivalBlock        `json:"arrivals,omitempty"`
	Params    map[string]map[string]int64 `json:"params,omitempty"`
}

type savedArrivalBlock struct {
	Block int64   `json:"block"`
	Times []int64 `json:"times"`
	Last  int64   `json:"last,omitempty"`
	Cut   bool    `json:"cut,omitempty"`
}

type savedPlacement struct {
	Hosts     map[string]int64 `json:"hosts"`
	Instances map[string]int64 `json:"instances"`
	// HostLife and InstanceLife are the lifetimes (first start, last end)
	// of each machine and instance; absent in states saved before they
	// were kept.
	HostLife     map[string]lifetime `json:"host_life,omitempty"`
	InstanceLife map[string]lifetime `json:"instance_life,omitempty"`
	// Runtimes, Processes and ProcessLife are placement.runtimes, procs
	// and procLife; absent where no span named its runtime.
	Runtimes    map[string]int64    `json:"runtimes,omitempty"`
	Processes   map[string]int64    `json:"processes,omitempty"`
	ProcessLife map[string]lifetime `json:"process_life,omitempty"`
}

type savedConcurrency struct {
	// Pending holds start, end pairs; Active the end times, in heap order.
	Pending     []int64          `json:"pending,omitempty"`
	Active      []endTime        `json:"active,omitempty"`
	Cursor      int64            `json:"cursor"`
	Latest      int64            `json:"latest"`
	LevelTime   map[string]int64 `json:"level_time"`
	Max         int              `json:"max"`
	BusyPeriods int64            `json:"busy_periods"`
	First       int64            `json:"first"`
	Last        int64            `json:"last"`
	NextSweep   int              `json:"next_sweep"`
}

type savedSessions struct {
	Requests   int64                       `json:"requests"`
	Resp       *savedSample                `json:"resp"`
	Think      *savedSample                `json:"think"`
	ByEntry    map[string]int64            `json:"by_entry"`
	Last       map[string]int64            `json:"last"`
	Pending    map[string][]sessionRequest `json:"pending,omitempty"`
	Latest     int64                       `json:"latest"`
	Sessions   int64                       `json:"sessions"`
	OutOfOrder int64                       `json:"out_of_order"`
	Split      int64                       `json:"split,omitempty"`
}

type savedHostWindows struct {
	Width int64    `json:"width"`
	Ops   []string `json:"ops"`
	// Windows lists the window indices in order; Cells, for each, one
	// row of four numbers per operation (completions, own time, completions
	// with CPU time, CPU time).
	Windows []int64        `json:"windows"`
	Cells   [][][4]float64 `json:"cells"`
	// Members are the hosts of a machine (Config.Machines), each with its
	// components.
	Members map[string][]string `json:"members,omitempty"`
	// External lists the operations that are calls to a system without
	// spans of its own, sorted.
	External []string `json:"external,omitempty"`
}

type savedSolo struct {
	// Execs are the executions the sweep still waits on: the operation
	// whose samples get their own time, the time, the intervals left and
	// the most other executions met (see soloExec).
	Execs     []savedSoloExec  `json:"execs,omitempty"`
	Pending   []savedSoloIntvl `json:"pending,omitempty"`
	Active    []savedSoloIntvl `json:"active,omitempty"`
	Latest    int64            `json:"latest"`
	Seq       int64            `json:"seq"`
	NextSweep int              `json:"next_sweep"`
	Overflow  int64            `json:"overflow,omitempty"`
	// OccAt is when the sweep last recorded its occupancy.
	OccAt int64 `json:"occupancy_at,omitempty"`
	// Open lists per level the executions whose calm is still timed.
	Open [][]int `json:"open,omitempty"`
}

type savedSoloExec struct {
	Op string `json:"op"`
	// Slots is its component's CPU slots, 0 for none; Key, where it is
	// not the component, the key it shares them under (Config.foldSlots:
	// its process's).
	Slots int     `json:"slots,omitempty"`
	Key   string  `json:"key,omitempty"`
	Own   float64 `json:"own"`
	Left  int     `json:"left"`
	// Shared is set by states saved before Most was kept: another
	// execution overlapped it.
	Shared      bool `json:"shared,omitempty"`
	Most        int  `json:"most,omitempty"`
	MostAtStart int  `json:"most_at_start,omitempty"`
	// Start is when its first interval began, if Begun, and First how
	// many others were beside it then.
	Start int64 `json:"start,omitempty"`
	Begun bool  `json:"begun,omitempty"`
	First int   `json:"first,omitempty"`
	// Trace is its request's trace id, hex.
	Trace string `json:"trace,omitempty"`
}

type savedSoloIntvl struct {
	Start    int64 `json:"start"`
	End      int64 `json:"end"`
	Seq      int64 `json:"seq"`
	Exec     int   `json:"exec"`
	Overflow int64 `json:"overflow,omitempty"`
}

// saveSamples saves every sample of m; nil for none.
func saveSamples(m map[string]*sample) map[string]*savedSample {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]*savedSample, len(m))
	for k, sm := range m {
		out[k] = saveSample(sm)
	}
	return out
}

// restoreTransactions restores into s the transactions' durations and
// held own times (State.txTimes, State.txHeld), each at a call site of s
// to a system seen only by its clients, and the times from executions'
// first calls to databases to their ends (State.toEnd, toEndOwn), each
// at an operation of s and a database.
func restoreTransactions(s *State, v *savedState) error {
	if err := restoreHeld("tx_times", "tx_held", v.TxTimes, v.TxHeld, s.txTimes, s.txHeld, func(parts []string, k string) bool {
		return strings.Contains(parts[2], ": ") && s.siteTimes[k] != nil
	}); err != nil {
		return err
	}
	return restoreHeld("to_end", "to_end_own", v.ToEnd, v.ToEndOwn, s.toEnd, s.toEndOwn, func(parts []string, _ string) bool {
		return parts[2] != "" && s.ops[parts[1]] != nil
	})
}

// restoreHeld restores into times and held the samples saved under the
// names timesName and heldName: each at a site key (siteGroup) that ok
// takes, both for every one, and no held time beyond the time.
func restoreHeld(timesName, heldName string, savedTimes, savedHeld map[string]*savedSample, times, held map[string]*sample, ok func(parts []string, key string) bool) error {
	for _, k := range slices.Sorted(maps.Keys(savedTimes)) {
		where := strings.ReplaceAll(k, "\x00", " ")
		parts := strings.Split(k, "\x00")
		if len(parts) != 3 || parts[0] != "site" || !ok(parts, k) {
			return fmt.Errorf("%s: %q is no call site to a database", timesName, where)
		}
		t, err := savedTimes[k].restore()
		if err != nil {
			return fmt.Errorf("%s %q: %w", timesName, where, err)
		}
		hv := savedHeld[k]
		if hv == nil {
			return fmt.Errorf("%s: no %q", heldName, where)
		}
		h, err := hv.restore()
		if err != nil {
			return fmt.Errorf("%s %q: %w", heldName, where, err)
		}
		if h.n != t.n || h.sum > t.sum*(1+1e-9) {
			return fmt.Errorf("%s %q: %d holding %g s, of %d lasting %g s", heldName, where, h.n, h.sum, t.n, t.sum)
		}
		times[k], held[k] = t, h
	}
	if len(savedHeld) != len(times) {
		return fmt.Errorf("%s: %d call sites, %s %d", heldName, len(savedHeld), timesName, len(times))
	}
	return nil
}

// snapshot copies the state into its saved form.
func (s *State) snapshot() *savedState {
	v := &savedState{
		Format: StateFormat, Traces: s.Traces, Spans: s.Spans, Modeled: s.Modeled,
		Partial: s.Partial, WithCPU: s.WithCPU, First: s.First, Last: s.Last,
		Outside: s.OutsideWindow, Sampled: s.Sampled, RateLimited: s.RateLimited, KeptMin: s.keptMin, KeptMax: s.keptMax,
	}
	if s.Traces == 0 {
		v.First, v.Last = 0, 0
	}
	if len(s.ops) > 0 {
		v.Ops = map[string]*savedOp{}
		for id, op := range s.ops {
			v.Ops[id] = saveOp(op)
		}
	}
	if len(s.entries) > 0 {
		v.Entries = map[string]*savedEntry{}
		for id, e := range s.entries {
			v.Entries[id] = saveEntry(e)
		}
	}
	if len(s.placement) > 0 {
		v.Placement = map[string]*savedPlacement{}
		for c, p := range s.placement {
			v.Placement[c] = &savedPlacement{Hosts: p.hosts, Instances: p.instances, HostLife: p.hostLife, InstanceLife: p.instLife,
				Runtimes: p.runtimes, Processes: p.procs, ProcessLife: p.procLife}
		}
	}
	if len(s.conc) > 0 {
		v.Concurrency = map[string]*savedConcurrency{}
		for k, c := range s.conc {
			v.Concurrency[k] = saveConcurrency(c)
		}
	}
	if len(s.categories) > 0 {
		v.Categories = map[string][]string{}
		for p, vals := range s.categories {
			v.Categories[p] = slices.Sorted(maps.Keys(vals))
		}
	}
	if ss := s.sessions; ss != nil {
		v.Sessions = &savedSessions{
			Requests: ss.requests, Resp: saveSample(ss.resp), Think: saveSample(ss.think),
			ByEntry: ss.byEntry, Last: ss.last, Pending: ss.pending, Latest: ss.latest, Sessions: ss.sessions, OutOfOrder: ss.outOfOrder, Split: ss.split,
		}
	}
	if len(s.siteTimes) > 0 {
		v.SiteTimes = map[string]*savedSample{}
		for k, sm := range s.siteTimes {
			v.SiteTimes[k] = saveSample(sm)
		}
	}
	if len(s.siteBare) > 0 {
		v.SiteBare = maps.Clone(s.siteBare)
	}
	if s.Windows != nil && len(s.Windows.hosts) > 0 {
		v.Windows = map[string]*savedHostWindows{}
		for h, hw := range s.Windows.hosts {
			v.Windows[h] = saveHostWindows(hw)
		}
	}
	if len(s.solo) > 0 {
		v.Solo = map[string]*savedSolo{}
		for h, w := range s.solo {
			v.Solo[h] = saveSolo(w, s.opID)
		}
	}
	if len(s.peers) > 0 {
		v.Peers = map[string]*savedPeers{}
		for sys, p := range s.peers {
			v.Peers[sys] = savePeers(p)
		}
	}
	if len(s.dbPeers) > 0 {
		v.DBPeers = maps.Clone(s.dbPeers)
	}
	v.TxTimes, v.TxHeld = saveSamples(s.txTimes), saveSamples(s.txHeld)
	v.ToEnd, v.ToEndOwn = saveSamples(s.toEnd), saveSamples(s.toEndOwn)
	if len(s.calm) > 0 {
		v.Calm = map[string][]*savedSample{}
		for h, c := range s.calm {
			for _, sm := range c {
				v.Calm[h] = append(v.Calm[h], saveSample(sm))
			}
		}
	}
	if len(s.occupied) > 0 {
		v.Occupied = map[string][]float64{}
		for h, o := range s.occupied {
			v.Occupied[h] = slices.Clone(o.seconds)
			if len(o.parts) == 0 {
				continue
			}
			if v.OccupiedParts == nil {
				v.OccupiedParts = map[string]map[string]*savedOccupancyPart{}
			}
			v.OccupiedParts[h] = map[string]*savedOccupancyPart{}
			for key, p := range o.parts {
				v.OccupiedParts[h][key] = &savedOccupancyPart{With: slices.Clone(p.with), Without: slices.Clone(p.without)}
			}
		}
	}
	if len(s.soleReplica) > 0 {
		v.SoleReplica = maps.Clone(s.soleReplica)
	}
	if len(s.soleProcess) > 0 {
		v.SoleProcess = maps.Clone(s.soleProcess)
	}
	if len(s.callers) > 0 {
		v.Callers = map[string]map[string]int64{}
		for k, n := range s.callers {
			callee := k.comp + "\x00" + k.proc
			if v.Callers[callee] == nil {
				v.Callers[callee] = map[string]int64{}
			}
			v.Callers[callee][k.callerComp+"\x00"+k.callerProc] = n
		}
	}
	if len(s.shapes) > 0 {
		v.Shapes = map[string]*savedShape{}
		for rg, w := range s.shapes {
			v.Shapes[rg] = saveShape(w)
		}
	}
	if len(s.starts) > 0 {
		v.Starts = map[string][]*savedArrivalBlock{}
		for k, st := range s.starts {
			v.Starts[k] = saveArrivals(st)
		}
	}
	if len(s.choices) > 0 {
		v.Choices = map[string]*savedChoices{}
		for c, w := range s.choices {
			v.Choices[c] = saveChoices(w)
		}
	}
	if len(s.links.from) > 0 {
		v.Links = s.links.from
	}
	return v
}

func saveSample(sm *sample) *savedSample {
	v := &savedSample{N: sm.n, Sum: sm.sum, Sq: sm.sq}
	if sm.n > 0 {
		v.Min, v.Max = sm.min, sm.max
	}
	v.Zero = sm.sketch.GetZeroCount()
	sm.sketch.GetPositiveValueStore().ForEach(func(index int, count float64) bool {
		if count != 0 {
			v.Index = append(v.Index, int64(index))
			v.Count = append(v.Count, count)
		}
		return false
	})
	return v
}

func saveOp(op *opStats) *savedOp {
	v := &savedOp{
		Component: op.component, Name: op.name, Count: op.count, CountSq: op.countSq, CPUSq: op.cpuSq, Errors: op.errors,
		Resumes: op.resumes, ResumedNs: op.resumedNs,
		Begun: slices.Clone(op.begun[:]),
		OwnAtStart: func() [][3]float64 {
			var out [][3]float64
			for _, m := range op.ownAtStart {
				out = append(out, [3]float64{m.n, m.sum, m.sq})
			}
			return out
		}(),
		Within: func() []*savedSample {
			var out []*savedSample
			for _, sm := range op.within[1:] {
				out = append(out, saveSample(sm))
			}
			return out
		}(),
		Resp: saveSample(op.resp), Self: saveSample(op.self), Solo: saveSample(op.solo),
		CPU: saveSample(op.cpu), OffCPU: saveSample(op.offCPU), PreSpan: saveSample(op.preSpan),
	}
	if op.resumeGap.n > 0 {
		v.ResumeGap, v.GapCalls = saveSample(op.resumeGap), op.gapCalls
	}
	if len(op.variants) > 0 {
		v.Variants = map[string][]*savedVariant{}
		for class, vs := range op.variants {
			v.Variants[class] = saveVariants(vs)
		}
	}
	if len(op.params) > 0 {
		v.Params = map[string]map[string]*savedParamStats{}
		for p, byBucket := range op.params {
			m := map[string]*savedParamStats{}
			for b, ps := range byBucket {
				m[b] = &savedParamStats{Count: ps.count, Demand: saveSample(ps.demand), Variants: saveVariants(ps.variants)}
			}
			v.Params[p] = m
		}
	}
	return v
}

// saveVariants lists variants in the order of their signatures; the
// signatures themselves are not written, since they follow from the
// elements.
func saveVariants(vs map[string]*variant) []*savedVariant {
	out := make([]*savedVariant, 0, len(vs))
	for _, sig := range slices.Sorted(maps.Keys(vs)) {
		out = append(out, &savedVariant{Count: vs[sig].count, Elems: saveElems(vs[sig].elems)})
	}
	return out
}

func saveElems(es []*elem) []*savedElem {
	out := make([]*savedElem, len(es))
	for i, e := range es {
		se := &savedElem{Kind: e.kind, Target: e.target, Times: map[string]int64{}, Latency: saveSample(e.latency)}
		for k, n := range e.times {
			se.Times[strconv.Itoa(k)] = n
		}
		for _, l := range e.lists {
			se.Lists = append(se.Lists, saveElems(l))
		}
		out[i] = se
	}
	return out
}

func saveEntry(e *entryStats) *savedEntry {
	v := &savedEntry{Op: e.op, Count: e.count, Linked: e.linked, Resp: saveSample(e.resp), PerSecond: map[string]int64{}, Params: e.params}
	if e.weight != float64(e.count) {
		v.Weight = e.weight
	}
	for sec, n := range e.perSecond {
		v.PerSecond[strconv.FormatInt(sec, 10)] = n
	}
	v.Arrivals = saveArrivals(e.arrivals)
	return v
}

// saveArrivals is an arrival sample's blocks, in order.
func saveArrivals(a *arrivalSample) []*savedArrivalBlock {
	var out []*savedArrivalBlock
	for _, b := range slices.Sorted(maps.Keys(a.blocks)) {
		blk := a.blocks[b]
		out = append(out, &savedArrivalBlock{Block: b, Times: blk.times, Last: blk.last, Cut: blk.cut})
	}
	return out
}

// restoreArrivals fills the empty sample a with saved blocks, which must
// fit its bounds.
func restoreArrivals(a *arrivalSample, saved []*savedArrivalBlock) error {
	if len(saved) > a.maxBlocks {
		return fmt.Errorf("%d blocks of arrivals, at most %d are kept", len(saved), a.maxBlocks)
	}
	for i, sb := range saved {
		if sb == nil || len(sb.Times) >= 2*a.blockCap || a.blocks[sb.Block] != nil {
			return fmt.Errorf("arrivals: block %d does not hold together", i)
		}
		blk := &arrivalTimes{hash: blockHash(sb.Block), times: sb.Times, last: sb.Last, cut: sb.Cut}
		a.blocks[sb.Block] = blk
		if i == 0 || hashBefore(a.worst, a.worstHash, sb.Block, blk.hash) {
			a.worst, a.worstHash = sb.Block, blk.hash
		}
	}
	return nil
}

func saveConcurrency(c *concurrency) *savedConcurrency {
	v := &savedConcurrency{
		Active: c.active, Cursor: c.cursor, Latest: c.latest, LevelTime: map[string]int64{},
		Max: c.max, BusyPeriods: c.busyPeriods, First: c.first, Last: c.last, NextSweep: c.nextSweep,
	}
	if c.first > c.last {
		v.First, v.Last = 0, 0 // nothing added: the sentinels do not fit JSON's numbers
	}
	for _, iv := range c.pending {
		v.Pending = append(v.Pending, iv.start, iv.end)
	}
	for l, t := range c.levelTime {
		v.LevelTime[strconv.Itoa(l)] = t
	}
	return v
}

func saveHostWindows(h *hostWindows) *savedHostWindows {
	v := &savedHostWindows{Width: h.width, Ops: h.ops, Members: h.members, External: slices.Sorted(maps.Keys(h.external))}
	for _, idx := range slices.Sorted(maps.Keys(h.cells)) {
		row := make([][4]float64, len(h.cells[idx]))
		for i, c := range h.cells[idx] {
			row[i] = [4]float64{c.n, c.own, c.cpuN, c.cpu}
		}
		v.Windows = append(v.Windows, idx)
		v.Cells = append(v.Cells, row)
	}
	return v
}

// saveSolo numbers the executions the sweep's intervals point to, in the
// order the intervals are listed.
func saveSolo(w *soloSweep, opID func(*opStats) string) *savedSolo {
	v := &savedSolo{Latest: w.latest, Seq: w.seq, NextSweep: w.nextSweep, Overflow: w.overflow, OccAt: w.occAt}
	index := map[*soloExec]int{}
	exec := func(x *soloExec) int {
		if i, ok := index[x]; ok {
			return i
		}
		index[x] = len(v.Execs)
		key := w.keys[x.comp]
		if key == x.op.component {
			key = ""
		}
		v.Execs = append(v.Execs, savedSoloExec{Op: opID(x.op), Slots: w.comps[x.comp].slots, Key: key, Own: x.own, Left: x.left,
			Most: x.most, MostAtStart: x.mostAtStart, Start: x.start, Begun: x.begun, First: x.first, Trace: traceHex(x.trace)})
		return index[x]
	}
	for _, iv := range w.pending {
		v.Pending = append(v.Pending, savedSoloIntvl{Start: iv.start, End: iv.end, Seq: iv.seq, Exec: exec(iv.x)})
	}
	for _, iv := range w.active {
		v.Active = append(v.Active, savedSoloIntvl{Start: iv.start, End: iv.end, Seq: iv.seq, Exec: exec(iv.x), Overflow: iv.overflow})
	}
	for _, lists := range w.open {
		var list []int
		for _, xs := range lists {
			for _, x := range xs {
				list = append(list, exec(x))
			}
		}
		v.Open = append(v.Open, list)
	}
	return v
}

// restore rebuilds the state, checking that its parts fit together.
func (v *savedState) restore() (*State, error) {
	s := NewState()
	s.Traces, s.Spans, s.Modeled, s.Partial, s.WithCPU = v.Traces, v.Spans, v.Modeled, v.Partial, v.WithCPU
	s.OutsideWindow, s.Sampled, s.RateLimited, s.keptMin, s.keptMax = v.Outside, v.Sampled, v.RateLimited, v.KeptMin, v.KeptMax
	if unset := s.keptMin == 0 && s.keptMax == 0; !unset && !(s.keptMin > 0 && s.keptMin <= s.keptMax && s.keptMax < 1) {
		return nil, fmt.Errorf("kept_min %g and kept_max %g: not probabilities in order", v.KeptMin, v.KeptMax)
	}
	if s.Traces > 0 {
		s.First, s.Last = v.First, v.Last
	}
	for _, id := range slices.Sorted(maps.Keys(v.Ops)) {
		op, err := v.Ops[id].restore(id)
		if err != nil {
			return nil, fmt.Errorf("operation %q: %w", id, err)
		}
		s.ops[id] = op
	}
	for _, id := range slices.Sorted(maps.Keys(v.Entries)) {
		e, err := v.Entries[id].restore(id)
		if err != nil {
			return nil, fmt.Errorf("entry %q: %w", id, err)
		}
		s.entries[id] = e
		s.requests += e.count
		s.weights += e.weight
	}
	for c, p := range v.Placement {
		if p == nil {
			return nil, fmt.Errorf("placement %q: missing", c)
		}
		pl := &placement{hosts: orEmpty(p.Hosts), instances: orEmpty(p.Instances), hostLife: orEmpty(p.HostLife), instLife: orEmpty(p.InstanceLife),
			runtimes: p.Runtimes, procs: p.Processes, procLife: p.ProcessLife}
		if (pl.procs == nil) != (pl.procLife == nil) {
			return nil, fmt.Errorf("placement %q: processes and their lifetimes must come together", c)
		}
		for _, lives := range []map[string]lifetime{pl.hostLife, pl.instLife, pl.procLife} {
			for name, l := range lives {
				if l.Last < l.First {
					return nil, fmt.Errorf("placement %q: %s ends before it starts", c, name)
				}
			}
		}
		s.placement[c] = pl
	}
	for _, k := range slices.Sorted(maps.Keys(v.Concurrency)) {
		c, err := v.Concurrency[k].restore()
		if err != nil {
			return nil, fmt.Errorf("concurrency %q: %w", strings.ReplaceAll(k, "\x00", " "), err)
		}
		s.conc[k] = c
	}
	for _, rg := range slices.Sorted(maps.Keys(v.SoleProcess)) {
		parts := strings.Split(rg, "\x00")
		if len(parts) < 3 || parts[0] != "replica" || s.conc[rg] == nil {
			return nil, fmt.Errorf("sole process of %q: no replica's profile of that name", strings.ReplaceAll(rg, "\x00", " "))
		}
	}
	maps.Copy(s.soleProcess, v.SoleProcess)
	for _, callee := range slices.Sorted(maps.Keys(v.Callers)) {
		comp, proc, ok := strings.Cut(callee, "\x00")
		if !ok || comp == "" || proc == "" {
			return nil, fmt.Errorf("callers of %q: not a component and a process", strings.ReplaceAll(callee, "\x00", " "))
		}
		byCaller := v.Callers[callee]
		for _, caller := range slices.Sorted(maps.Keys(byCaller)) {
			n := byCaller[caller]
			cc, cp, ok := strings.Cut(caller, "\x00")
			if !ok || n <= 0 {
				return nil, fmt.Errorf("callers of %q: %q sent %d", strings.ReplaceAll(callee, "\x00", " "), strings.ReplaceAll(caller, "\x00", " "), n)
			}
			s.callers[processPair{comp, proc, cc, cp}] = n
		}
	}
	for _, rg := range slices.Sorted(maps.Keys(v.Shapes)) {
		w, err := v.Shapes[rg].restore()
		if parts := strings.Split(rg, "\x00"); err == nil && (len(parts) < 3 || parts[0] != "replica" || parts[1] != w.comp) {
			err = fmt.Errorf("not a replica of component %q", w.comp)
		}
		if err != nil {
			return nil, fmt.Errorf("queues of %q: %w", strings.ReplaceAll(rg, "\x00", " "), err)
		}
		s.shapes[rg] = w
	}
	// A state saved before components were profiled per replica only once
	// a second was seen has every replica's profiles.
	maps.Copy(s.soleReplica, v.SoleReplica)
	if v.SoleReplica == nil {
		for c := range s.placement {
			s.soleReplica[c] = ""
		}
	}
	for p, vals := range v.Categories {
		m := map[string]bool{}
		for _, val := range vals {
			m[val] = true
		}
		s.categories[p] = m
	}
	if ss := v.Sessions; ss != nil {
		resp, err1 := ss.Resp.restore()
		think, err2 := ss.Think.restore()
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("sessions: %w", err)
		}
		s.sessions = &sessionStats{
			requests: ss.Requests, resp: resp, think: think, byEntry: orEmpty(ss.ByEntry), last: orEmpty(ss.Last),
			pending: orEmpty(ss.Pending), latest: ss.Latest, sessions: ss.Sessions, outOfOrder: ss.OutOfOrder, split: ss.Split,
		}
		for id, rs := range s.sessions.pending {
			if !slices.IsSortedFunc(rs, func(a, b sessionRequest) int { return cmp.Compare(a.Start, b.Start) }) {
				return nil, fmt.Errorf("sessions: session %q: pending requests out of order", id)
			}
		}
	}
	for k, sv := range v.SiteTimes {
		sm, err := sv.restore()
		if err != nil {
			return nil, fmt.Errorf("call site %q: %w", strings.ReplaceAll(k, "\x00", " "), err)
		}
		s.siteTimes[k] = sm
	}
	for k, n := range v.SiteBare {
		if d := s.siteTimes[k]; d == nil || n < 0 || n > d.n {
			return nil, fmt.Errorf("call site %q: %d calls with no client span", strings.ReplaceAll(k, "\x00", " "), n)
		}
		s.siteBare[k] = n
	}
	for _, h := range slices.Sorted(maps.Keys(v.Windows)) {
		hw, err := v.Windows[h].restore()
		if err != nil {
			return nil, fmt.Errorf("windows of host %q: %w", h, err)
		}
		s.Windows.hosts[h] = hw
	}
	for _, h := range slices.Sorted(maps.Keys(v.Calm)) {
		if host, _ := splitCalmKey(h); host == "" {
			return nil, fmt.Errorf("calm stretches of %q: no host", h)
		}
		if len(v.Calm[h]) != soloLevelCount {
			return nil, fmt.Errorf("calm stretches of host %q: %d levels, want %d", h, len(v.Calm[h]), soloLevelCount)
		}
		c := new(calmStats)
		for i, sv := range v.Calm[h] {
			sm, err := sv.restore()
			if err != nil {
				return nil, fmt.Errorf("calm stretches of host %q: %w", h, err)
			}
			c[i] = sm
		}
		s.calm[h] = c
	}
	for _, h := range slices.Sorted(maps.Keys(v.Occupied)) {
		if err := checkSeconds(v.Occupied[h]); err != nil {
			return nil, fmt.Errorf("occupancy of host %q: %w", h, err)
		}
		s.occupiedOn(h).seconds = slices.Clone(v.Occupied[h])
	}
	for _, h := range slices.Sorted(maps.Keys(v.OccupiedParts)) {
		for _, key := range slices.Sorted(maps.Keys(v.OccupiedParts[h])) {
			sp := v.OccupiedParts[h][key]
			if sp == nil {
				return nil, fmt.Errorf("occupancy of host %q, key %q: empty", h, key)
			}
			for _, secs := range [][]float64{sp.With, sp.Without} {
				if err := checkSeconds(secs); err != nil {
					return nil, fmt.Errorf("occupancy of host %q, key %q: %w", h, key, err)
				}
			}
			p := s.occupiedOn(h).part(key)
			p.with, p.without = slices.Clone(sp.With), slices.Clone(sp.Without)
		}
	}
	for _, h := range slices.Sorted(maps.Keys(v.Solo)) {
		w, err := v.Solo[h].restore(s.ops, h, s.calm)
		if err != nil {
			return nil, fmt.Errorf("executions alone on host %q: %w", h, err)
		}
		w.occ = s.occupiedOn(h)
		s.solo[h] = w
	}
	for _, sys := range slices.Sorted(maps.Keys(v.Peers)) {
		p, err := v.Peers[sys].restore()
		if err != nil {
			return nil, fmt.Errorf("calls to %q: %w", sys, err)
		}
		s.peers[sys] = p
	}
	for p, sys := range v.DBPeers {
		if p == "" || sys == "" {
			return nil, fmt.Errorf("db_peers: database %q of system %q", p, sys)
		}
		s.dbPeers[p] = sys
	}
	if err := restoreTransactions(s, v); err != nil {
		return nil, err
	}
	for _, k := range slices.Sorted(maps.Keys(v.Starts)) {
		st := newStartSample()
		if err := restoreArrivals(st, v.Starts[k]); err != nil {
			return nil, fmt.Errorf("span starts of %q: %w", strings.ReplaceAll(k, "\x00", " "), err)
		}
		s.starts[k] = st
	}
	for _, c := range slices.Sorted(maps.Keys(v.Choices)) {
		w, err := v.Choices[c].restore()
		if err != nil {
			return nil, fmt.Errorf("choices among the replicas of %q: %w", c, err)
		}
		s.choices[c] = w
	}
	for c, byOp := range v.Links {
		for op, n := range byOp {
			if n <= 0 {
				return nil, fmt.Errorf("links: %q from %q: %d messages", c, op, n)
			}
			s.links.join(c, op, n)
		}
	}
	if err := s.consistent(); err != nil {
		return nil, err
	}
	return s, nil
}

// consistent checks what folding keeps true across the parts of a state
// and making a model relies on: every operation placed, every entry, every
// operation in a window and every operation called or sent to one of the
// operations.
func (s *State) consistent() error {
	for _, id := range slices.Sorted(maps.Keys(s.ops)) {
		op := s.ops[id]
		if s.placement[op.component] == nil {
			return fmt.Errorf("operation %q: its component is placed on no host", id)
		}
		for _, class := range slices.Sorted(maps.Keys(op.variants)) {
			if err := s.knownTargets(op.variants[class]); err != nil {
				return fmt.Errorf("operation %q: %w", id, err)
			}
		}
		for _, p := range slices.Sorted(maps.Keys(op.params)) {
			for _, b := range slices.Sorted(maps.Keys(op.params[p])) {
				if err := s.knownTargets(op.params[p][b].variants); err != nil {
					return fmt.Errorf("operation %q, parameter %q: %w", id, p, err)
				}
			}
		}
	}
	for _, id := range slices.Sorted(maps.Keys(s.entries)) {
		if s.ops[id] == nil {
			return fmt.Errorf("entry %q: not an operation", id)
		}
	}
	for _, h := range slices.Sorted(maps.Keys(s.Windows.hosts)) {
		for _, id := range s.Windows.hosts[h].ops {
			if s.ops[id] == nil && !s.Windows.hosts[h].external[id] {
				return fmt.Errorf("windows of host %q: %q is not an operation", h, id)
			}
		}
	}
	return nil
}

// knownTargets checks that the calls and sends of variants, at any depth,
// go to operations of the state.
func (s *State) knownTargets(variants map[string]*variant) error {
	var walk func(elems []*elem) error
	walk = func(elems []*elem) error {
		for _, e := range elems {
			if (e.kind == elemCall || e.kind == elemSend) && s.ops[e.target] == nil {
				return fmt.Errorf("a call to %q, which is not an operation", e.target)
			}
			for _, l := range e.lists {
				if err := walk(l); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for _, sig := range slices.Sorted(maps.Keys(variants)) {
		if err := walk(variants[sig].elems); err != nil {
			return err
		}
	}
	return nil
}

func orEmpty[K comparable, V any](m map[K]V) map[K]V {
	if m == nil {
		return map[K]V{}
	}
	return m
}

var errMissingSample = errors.New("a summary is missing")

func (v *savedSample) restore() (*sample, error) {
	if v == nil {
		return nil, errMissingSample
	}
	if v.N < 0 || len(v.Index) != len(v.Count) || !finite(v.Sum, v.Sq, v.Min, v.Max, v.Zero) || v.Zero < 0 {
		return nil, errors.New("a summary does not hold together")
	}
	sm := newSample()
	sm.n, sm.sum, sm.sq = v.N, v.Sum, v.Sq
	if v.N > 0 {
		sm.min, sm.max = v.Min, v.Max
	}
	if v.Zero > 0 {
		_ = sm.sketch.AddWithCount(0, v.Zero)
	}
	st := sm.sketch.GetPositiveValueStore()
	for i, idx := range v.Index {
		c := v.Count[i]
		if idx < -maxSketchIndex || idx > maxSketchIndex || !(c > 0) || math.IsInf(c, 0) {
			return nil, fmt.Errorf("a summary's bin %d: index %d, count %g", i, idx, c)
		}
		st.AddWithCount(int(idx), c)
	}
	return sm, nil
}

func finite(xs ...float64) bool {
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

func (v *savedOp) restore(id string) (*opStats, error) {
	if v == nil {
		return nil, errors.New("missing")
	}
	if v.Component+"/"+v.Name != id {
		return nil, fmt.Errorf("component %q and name %q do not make its id", v.Component, v.Name)
	}
	if !(v.CountSq >= 0) || !(v.CPUSq >= 0) || math.IsInf(v.CountSq, 0) || math.IsInf(v.CPUSq, 0) {
		return nil, fmt.Errorf("sums of squares %g and %g are not finite and non-negative", v.CountSq, v.CPUSq)
	}
	if v.Errors < 0 || v.Errors > v.Count {
		return nil, fmt.Errorf("%d errors of %d executions", v.Errors, v.Count)
	}
	if v.Resumes < 0 || v.ResumedNs < 0 || (v.Resumes == 0) != (v.ResumedNs == 0) || v.ResumedNs/minResume < v.Resumes {
		return nil, fmt.Errorf("%d resumes of %d ns in all", v.Resumes, v.ResumedNs)
	}
	op := &opStats{component: v.Component, name: v.Name, count: v.Count, countSq: v.CountSq, cpuSq: v.CPUSq, errors: v.Errors,
		resumes: v.Resumes, resumedNs: v.ResumedNs,
		variants: map[string]map[string]*variant{}, params: map[string]map[string]*paramStats{}}
	var errs [6]error
	op.resp, errs[0] = v.Resp.restore()
	op.self, errs[1] = v.Self.restore()
	op.solo, errs[2] = v.Solo.restore()
	op.cpu, errs[3] = v.CPU.restore()
	op.offCPU, errs[4] = v.OffCPU.restore()
	op.preSpan, errs[5] = v.PreSpan.restore()
	if err := errors.Join(errs[:]...); err != nil {
		return nil, err
	}
	op.resumeGap = newSample()
	if v.ResumeGap != nil {
		g, err := v.ResumeGap.restore()
		if err != nil {
			return nil, fmt.Errorf("resume gap: %w", err)
		}
		calls := v.GapCalls
		if calls == 0 {
			calls = g.n // saved before the calls were counted
		}
		if g.n > v.Resumes || g.n > calls || g.min < 0 {
			return nil, fmt.Errorf("%d gaps before resumes, the least %g s, for %d resumes and %d calls", g.n, g.min, v.Resumes, calls)
		}
		op.resumeGap, op.gapCalls = g, calls
	}
	if own := op.self.sum * 1e9; float64(op.resumedNs) > own*(1+1e-9)+1 {
		return nil, fmt.Errorf("resumes of %d ns in own times of %.0f ns", op.resumedNs, own)
	}
	if err := op.restoreWithin(v); err != nil {
		return nil, err
	}
	for _, class := range slices.Sorted(maps.Keys(v.Variants)) {
		vs, err := restoreVariants(v.Variants[class])
		if err != nil {
			return nil, fmt.Errorf("class %q: %w", class, err)
		}
		op.variants[class] = vs
	}
	for _, p := range slices.Sorted(maps.Keys(v.Params)) {
		byBucket := map[string]*paramStats{}
		for _, b := range slices.Sorted(maps.Keys(v.Params[p])) {
			sp := v.Params[p][b]
			if sp == nil {
				return nil, fmt.Errorf("parameter %q, bucket %q: missing", p, b)
			}
			demand, err := sp.Demand.restore()
			if err != nil {
				return nil, fmt.Errorf("parameter %q, bucket %q: %w", p, b, err)
			}
			vs, err := restoreVariants(sp.Variants)
			if err != nil {
				return nil, fmt.Errorf("parameter %q, bucket %q: %w", p, b, err)
			}
			byBucket[b] = &paramStats{count: sp.Count, demand: demand, variants: vs}
		}
		op.params[p] = byBucket
	}
	return op, nil
}

// restoreVariants keys the variants by the signature of their elements.
func restoreVariants(list []*savedVariant) (map[string]*variant, error) {
	out := map[string]*variant{}
	for i, sv := range list {
		if sv == nil {
			return nil, fmt.Errorf("variant %d: missing", i)
		}
		elems, err := restoreElems(sv.Elems, 0)
		if err != nil {
			return nil, fmt.Errorf("variant %d: %w", i, err)
		}
		sig := signature(occurrences(elems))
		if out[sig] != nil {
			return nil, fmt.Errorf("variant %d: the same calls as another", i)
		}
		out[sig] = &variant{count: sv.Count, elems: elems}
	}
	return out, nil
}

// maxElemDepth bounds the nesting of parallel elements in a saved state.
const maxElemDepth = 64

func restoreElems(list []*savedElem, depth int) ([]*elem, error) {
	if depth > maxElemDepth {
		return nil, errors.New("parallel elements nested too deep")
	}
	out := make([]*elem, len(list))
	for i, se := range list {
		if se == nil {
			return nil, fmt.Errorf("element %d: missing", i)
		}
		switch se.Kind {
		case elemCall, elemSend, elemExternal:
			if len(se.Lists) > 0 {
				return nil, fmt.Errorf("element %d: a call with parallel lists", i)
			}
		case elemParallel:
			if len(se.Lists) == 0 {
				return nil, fmt.Errorf("element %d: a parallel element without lists", i)
			}
		default:
			return nil, fmt.Errorf("element %d: unknown kind %d", i, se.Kind)
		}
		lat, err := se.Latency.restore()
		if err != nil {
			return nil, fmt.Errorf("element %d: %w", i, err)
		}
		e := &elem{kind: se.Kind, target: se.Target, times: map[int]int64{}, latency: lat}
		for k, n := range se.Times {
			t, err := strconv.Atoi(k)
			if err != nil || t < 0 || n < 0 {
				return nil, fmt.Errorf("element %d: repetitions %q: %d", i, k, n)
			}
			e.times[t] = n
		}
		for _, l := range se.Lists {
			if len(l) == 0 {
				return nil, fmt.Errorf("element %d: an empty parallel list", i)
			}
			sub, err := restoreElems(l, depth+1)
			if err != nil {
				return nil, fmt.Errorf("element %d: %w", i, err)
			}
			e.lists = append(e.lists, sub)
		}
		out[i] = e
	}
	return out, nil
}

func (v *savedEntry) restore(id string) (*entryStats, error) {
	if v == nil {
		return nil, errors.New("missing")
	}
	if v.Op != id {
		return nil, fmt.Errorf("names operation %q", v.Op)
	}
	resp, err := v.Resp.restore()
	if err != nil {
		return nil, err
	}
	if v.Linked < 0 || v.Linked > v.Count {
		return nil, fmt.Errorf("%d linked requests of %d", v.Linked, v.Count)
	}
	e := &entryStats{op: v.Op, count: v.Count, weight: float64(v.Count), linked: v.Linked, resp: resp, perSecond: map[int64]int64{}, arrivals: newArrivalSample(), params: v.Params}
	if v.Weight != 0 {
		if !(v.Weight >= float64(v.Count)) || math.IsInf(v.Weight, 0) {
			return nil, fmt.Errorf("weight %g: not at least its count %d", v.Weight, v.Count)
		}
		e.weight = v.Weight
	}
	for k, n := range v.PerSecond {
		sec, err := strconv.ParseInt(k, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("arrivals per second: %q is not a second", k)
		}
		e.perSecond[sec] = n
	}
	if err := restoreArrivals(e.arrivals, v.Arrivals); err != nil {
		return nil, err
	}
	return e, nil
}

func (v *savedConcurrency) restore() (*concurrency, error) {
	if v == nil {
		return nil, errors.New("missing")
	}
	if len(v.Pending)%2 != 0 || v.Max < 0 {
		return nil, errors.New("does not hold together")
	}
	c := newConcurrency()
	for i := 0; i < len(v.Pending); i += 2 {
		if v.Pending[i] > v.Pending[i+1] {
			return nil, fmt.Errorf("pending interval %d ends before it starts", i/2)
		}
		c.pending = append(c.pending, interval{v.Pending[i], v.Pending[i+1]})
	}
	c.active = minHeap[endTime](slices.Clone(v.Active))
	c.active.init()
	c.cursor, c.latest, c.max, c.busyPeriods = v.Cursor, v.Latest, v.Max, v.BusyPeriods
	if v.First != 0 || v.Last != 0 {
		c.first, c.last = v.First, v.Last
	}
	c.nextSweep = max(v.NextSweep, sweepBatch)
	for k, t := range v.LevelTime {
		l, err := strconv.Atoi(k)
		if err != nil || l < 0 {
			return nil, fmt.Errorf("level %q", k)
		}
		c.levelTime[l] = t
	}
	return c, nil
}

func (v *savedHostWindows) restore() (*hostWindows, error) {
	if v == nil {
		return nil, errors.New("missing")
	}
	w := v.Width
	if w < windowWidth || w%windowWidth != 0 || (w/windowWidth)&(w/windowWidth-1) != 0 {
		return nil, fmt.Errorf("width %d ns is not a power of two seconds", w)
	}
	if len(v.Cells) != len(v.Windows) {
		return nil, fmt.Errorf("%d windows with %d rows of cells", len(v.Windows), len(v.Cells))
	}
	h := &hostWindows{width: w, ops: v.Ops, index: map[string]int{}, cells: map[int64][]cell{}}
	for _, m := range slices.Sorted(maps.Keys(v.Members)) {
		comps := v.Members[m]
		if m == "" || len(comps) == 0 || !slices.IsSorted(comps) || slices.Contains(comps, "") || len(slices.Compact(slices.Clone(comps))) != len(comps) {
			return nil, fmt.Errorf("member host %q: components %q", m, comps)
		}
		if h.members == nil {
			h.members = map[string][]string{}
		}
		h.members[m] = comps
	}
	for i, op := range v.Ops {
		if _, dup := h.index[op]; dup {
			return nil, fmt.Errorf("operation %q listed twice", op)
		}
		h.index[op] = i
	}
	for _, op := range v.External {
		if _, ok := h.index[op]; !ok {
			return nil, fmt.Errorf("external call %q: not one of its operations", op)
		}
		if h.external == nil {
			h.external = map[string]bool{}
		}
		h.external[op] = true
	}
	// Window indices stay where widening cannot overflow them.
	limit := math.MaxInt64 / (2 * w)
	for i, idx := range v.Windows {
		if idx < -limit || idx > limit || h.cells[idx] != nil {
			return nil, fmt.Errorf("window %d: index %d", i, idx)
		}
		row := v.Cells[i]
		if len(row) > len(v.Ops) {
			return nil, fmt.Errorf("window %d: %d cells for %d operations", i, len(row), len(v.Ops))
		}
		cs := make([]cell, len(row))
		for j, r := range row {
			if !finite(r[:]...) {
				return nil, fmt.Errorf("window %d: operation %d: not a number", i, j)
			}
			cs[j] = cell{n: r[0], own: r[1], cpuN: r[2], cpu: r[3]}
		}
		h.cells[idx] = cs
	}
	h.bound()
	return h, nil
}

// traceHex is a trace id in hex, "" for none.
func traceHex(t ingest.TraceID) string {
	if t.IsZero() {
		return ""
	}
	return t.String()
}

func (v *savedSolo) restore(ops map[string]*opStats, host string, calms map[string]*calmStats) (*soloSweep, error) {
	if v == nil {
		return nil, errors.New("missing")
	}
	w := newSoloSweep(host, calms)
	w.latest, w.seq, w.overflow, w.occAt = v.Latest, v.Seq, v.Overflow, v.OccAt
	w.nextSweep = max(v.NextSweep, sweepBatch)
	if n := len(v.Open); n != 0 && n != soloLevelCount {
		return nil, fmt.Errorf("executions timing their calm at %d levels, want %d", n, soloLevelCount)
	}
	execs := make([]*soloExec, len(v.Execs))
	left := make([]int, len(v.Execs))
	for i, x := range v.Execs {
		op := ops[x.Op]
		if op == nil {
			return nil, fmt.Errorf("execution %d: unknown operation %q", i, x.Op)
		}
		if x.Most < 0 || x.Most > soloBeyond || x.MostAtStart < 0 || x.MostAtStart > x.Most {
			return nil, fmt.Errorf("execution %d: met %d others, %d at a start", i, x.Most, x.MostAtStart)
		}
		if x.Slots < 0 {
			return nil, fmt.Errorf("execution %d: %d CPU slots", i, x.Slots)
		}
		key := op.component
		if x.Key != "" {
			if !strings.HasPrefix(x.Key, op.component+"\x00") {
				return nil, fmt.Errorf("execution %d: CPU slots shared under %q, not its component's", i, x.Key)
			}
			key = x.Key
		}
		if j, ok := w.index[key]; ok && w.comps[j].slots != x.Slots {
			return nil, fmt.Errorf("execution %d: %d CPU slots, where the others it shares them with have %d", i, x.Slots, w.comps[j].slots)
		}
		if x.First < 0 || x.First > soloBeyond {
			return nil, fmt.Errorf("execution %d: %d others as it began", i, x.First)
		}
		var trace ingest.TraceID
		if x.Trace != "" {
			b, err := hex.DecodeString(x.Trace)
			if err != nil || len(b) != len(trace) {
				return nil, fmt.Errorf("execution %d: trace id %q", i, x.Trace)
			}
			copy(trace[:], b)
		}
		execs[i] = &soloExec{op: op, own: x.Own, left: x.Left, most: x.Most, mostAtStart: x.MostAtStart, start: x.Start, begun: x.Begun, first: x.First,
			trace: trace, comp: w.compOf(key, x.Slots), calm: w.calmOf(op.component, x.Slots)}
		if x.Shared {
			execs[i].most = max(execs[i].most, 1)
		}
	}
	intervals := func(list []savedSoloIntvl) ([]soloInterval, error) {
		out := make([]soloInterval, 0, len(list))
		for i, iv := range list {
			if iv.Exec < 0 || iv.Exec >= len(execs) || iv.Start > iv.End {
				return nil, fmt.Errorf("interval %d does not hold together", i)
			}
			left[iv.Exec]++
			out = append(out, soloInterval{start: iv.Start, end: iv.End, seq: iv.Seq, x: execs[iv.Exec], overflow: iv.Overflow})
		}
		return out, nil
	}
	var err error
	if w.pending, err = intervals(v.Pending); err != nil {
		return nil, fmt.Errorf("pending: %w", err)
	}
	active, err := intervals(v.Active)
	if err != nil {
		return nil, fmt.Errorf("active: %w", err)
	}
	w.active = minHeap[soloInterval](active)
	w.active.init()
	for _, iv := range active {
		if iv.x.active {
			return nil, fmt.Errorf("execution with two intervals active")
		}
		iv.x.active = true
		w.setActive(iv.x.comp, 1)
		w.traces[iv.x.trace]++
	}
	for i, list := range v.Open {
		for _, k := range list {
			if k < 0 || k >= len(execs) || !execs[k].begun || execs[k].open&(1<<i) != 0 {
				return nil, fmt.Errorf("level %d: execution %d does not time its calm", i, k)
			}
			execs[k].open |= 1 << i
			w.open[i][execs[k].comp] = append(w.open[i][execs[k].comp], execs[k])
		}
	}
	for i, x := range execs {
		if x.left != left[i] {
			return nil, fmt.Errorf("execution %d: %d intervals left, %d listed", i, x.left, left[i])
		}
	}
	return w, nil
}

// restoreWithin restores op's samples and counts by level from v; a state
// saved before they were kept leaves them empty.
func (op *opStats) restoreWithin(v *savedOp) error {
	switch len(v.Within) {
	case 0:
	case soloLevelCount - 1:
		for i, sv := range v.Within {
			sm, err := sv.restore()
			if err != nil {
				return fmt.Errorf("executions within level %d: %w", i+1, err)
			}
			op.within[i+1] = sm
		}
	default:
		return fmt.Errorf("%d levels of executions within, want %d", len(v.Within)+1, soloLevelCount)
	}
	op.initWithin()
	switch len(v.Begun) {
	case 0:
	case soloLevelCount:
		sum := int64(0)
		for i, n := range v.Begun {
			if sum += n; n < 0 || sum > v.Count {
				return fmt.Errorf("begun at level %d: %d of %d executions", i, n, v.Count)
			}
		}
		copy(op.begun[:], v.Begun)
	default:
		return fmt.Errorf("%d levels of executions begun, want %d", len(v.Begun), soloLevelCount)
	}
	switch len(v.OwnAtStart) {
	case 0:
	case soloLevelCount + 1:
		var n float64
		for i, m := range v.OwnAtStart {
			n += m[0]
			if !(m[0] >= 0 && m[1] >= 0 && m[2] >= 0) || math.IsInf(m[2], 0) || n > float64(v.Count) {
				return fmt.Errorf("own times at start, level %d: %v of %d executions", i, m, v.Count)
			}
			op.ownAtStart[i] = moments{n: m[0], sum: m[1], sq: m[2]}
		}
	default:
		return fmt.Errorf("%d levels of own times at start, want %d", len(v.OwnAtStart), soloLevelCount+1)
	}
	return nil
}

// savedOccupancyPart is an occupancyPart as saved.
type savedOccupancyPart struct {
	With    []float64 `json:"with"`
	Without []float64 `json:"without"`
}

// checkSeconds says what is wrong with a saved record of seconds by
// count (occupancy), if anything.
func checkSeconds(secs []float64) error {
	if len(secs) > occupancyMax+1 || slices.ContainsFunc(secs, func(x float64) bool { return !(x >= 0) || math.IsInf(x, 0) }) {
		return fmt.Errorf("want at most %d counts, each finite and not negative; have %d", occupancyMax+1, len(secs))
	}
	return nil
}
