package sim

import (
	"context"
	"math"
	"math/rand/v2"

	"github.com/DataDog/sketches-go/ddsketch"
	"github.com/perfcast/perfcast/model"
)

// Task kinds: the main path of a request, one list of a parallel step, and
// an operation started by a send.
const (
	taskMain uint8 = iota
	taskFork
	taskSend
)

// Frame kinds.
const (
	frameLoop uint8 = iota
	frameHold
	frameOp
)

// frame is one entry of a task's stack.
type frame struct {
	start float64 // op: when the call arrived at the component
	begun float64 // op: when its span started (a thread given, an entry hold taken)
	kind  uint8
	n     int32  // loop: iterations left; hold: units held
	a     int32  // op: return pc; hold: passive instance
	op    int32  // op: the caller's operation
	rep   int32  // op: the caller's replica
	key   uint32 // op: the caller's key
}

// acquired records units taken by an unscoped acquire step.
type acquired struct {
	res, inst, units int32
}

// task is one thread of execution of a request: its main path, one list of a
// parallel step, or an operation started by a send. It runs the program from
// pc until it has to wait (for a resource, a delay, a thread, a lock or its
// forked children), and resumes from there. Tasks are pooled and reused.
type task struct {
	id     int32
	req    int32
	parent int32 // the forking task of a parallel list, else -1
	kind   uint8
	// childFailed records that a forked list was dropped, so the parent
	// fails at the join.
	childFailed bool
	pc          int32
	op          int32 // the operation being run, -1 at workload level
	rep         int32 // the replica of op's host
	// key is drawn when op begins (at workload level, when the task
	// does): it picks the unit of a partitioned passive resource the
	// execution waits for, the same for all its holds.
	key   uint32
	joins int32 // forked lists still running

	// Waiting state.
	pendOp, pendRep int32   // the operation waiting for a thread
	sender          int32   // a task blocked until this one is queued, or -1
	arrive          float64 // when the current wait or service began
	work            float64 // service requirement at the current station
	left            float64 // round robin: service still due
	slice           float64 // round robin: length of the current slice
	station         int32
	// due is when the current service (FCFS, random order) or slice (RR)
	// ends; ver is the version of its event on the calendar, which a
	// change of the station's speed makes stale; slot is the task's index
	// in the station's serving list. While the station is stalled (a CPU
	// limit's quota spent), due is +Inf and rem holds the work still due.
	due         float64
	rem         float64
	ver         int32
	slot        int32
	units, inst int32 // the units and passive instance waited for

	frames []frame
	acq    []acquired
}

// request is one workload request: the tasks it runs and when it began.
type request struct {
	wl       int32
	user     int32
	live     int32 // tasks still running
	start    float64
	failed   bool
	mainDone bool
	params   []int32 // index of the value drawn for each workload parameter
}

// acct accumulates the statistics of one resource instance: the time
// integral of its busy level and the waits of the requests it served.
type acct struct {
	level   int32
	area    float64
	last    float64
	waitSum float64
	waitN   int64
	in, out int64 // arrivals and departures
}

// add takes in the counts and integrals of another instance's acct, to
// report the instances of one replica together.
func (a *acct) add(o *acct) {
	a.level += o.level
	a.area += o.area
	a.last = max(a.last, o.last)
	a.waitSum += o.waitSum
	a.waitN += o.waitN
	a.in += o.in
	a.out += o.out
}

func (a *acct) set(now float64, level int32) {
	a.area += float64(a.level) * (now - a.last)
	a.last = now
	a.level = level
}

// wait records one wait. Waits computed as a difference of clock readings
// (time at a station minus service) are clamped at zero when rounding
// leaves a negative or negligible value. The service subtracted is the
// work at the compiled speed: on a CPU whose speed changes over time, the
// time a slow stretch adds to a service counts as wait, and a fast one's
// saving is taken off it.
func (a *acct) wait(w float64) {
	if w < 1e-12 {
		w = 0
	}
	a.waitSum += w
	a.waitN++
}

// Station kinds.
const (
	stFCFS uint8 = iota
	stRandom
	stPS
	stRR
)

// station is an active resource instance: one CPU or disk of one replica.
type station struct {
	acct
	kind    uint8
	servers int32
	busy    int32 // servers in use; at a PS station, jobs present
	queue   fifo  // FCFS and RR: jobs waiting for a server
	rq      []int32
	ps      psHeap
	psSeq   uint64
	v       float64 // PS virtual time
	vLast   float64
	version int32
	// The PS departure on the calendar: valid while the job with seq
	// schedSeq is first and the rate is schedRate.
	scheduled bool
	schedSeq  uint64
	schedRate float64
	quantum   float64
	// rate is the speed at which work is done, relative to the compiled
	// demands: 1, or the current draw of a CPU whose speed changes over
	// time (varies). Such a station keeps the tasks in service (FCFS,
	// random order, RR) in serving, to reschedule their ends when its
	// speed changes.
	rate    float64
	varies  bool
	serving []int32
	// cpuLimit holds the state of a CPU limit; nil without one.
	cpuLimit *cpuLimit
}

// pool is the thread pool of one component replica.
type pool struct {
	acct
	threads int32 // 0: unlimited
	busy    int32
	qcap    int32 // -1: unlimited
	queue   fifo
	blocked fifo // senders waiting for space in the queue
}

// passiveRes is one instance of a passive resource.
type passiveRes struct {
	acct
	capacity, free int32
	waiting        fifo
}

// Outcomes of a request to start an operation.
const (
	admitted = iota // a thread was free: the task runs the operation now
	queued          // the task waits in the component's queue
	blocked         // the queue is full: the sender waits for space
	dropped         // the queue is full: the task failed
)

// stats are the per-replication observations of requests and operations.
type stats struct {
	wlN, wlDropped, wlCTN []int64
	wlRT, wlCT            []float64
	wlSk                  []*ddsketch.DDSketch
	opN                   []int64
	opRT                  []float64
	opSk                  []*ddsketch.DDSketch
	// opSpanRT and opSpanSk are the operations' span times, for those
	// whose span is shorter than their response time (opInfo.span; nil
	// sketches for the others).
	opSpanRT []float64
	opSpanSk []*ddsketch.DDSketch
}

// engine simulates one replication.
type engine struct {
	p   *program
	rng *rand.Rand
	// keys counts the keys drawn (nextKey).
	keys uint64
	now  float64
	cal  calendar

	tasks     []*task
	freeTasks []int32
	reqs      []*request
	freeReqs  []int32
	ready     fifo
	live      int // tasks in existence
	liveLimit int

	stations []station
	pools    []pool
	passives []passiveRes
	hostLoad []int32 // operations in progress or waiting per host replica
	rrNext   []int32 // round-robin balancer position per host
	// speedEvents is the number of events always on the calendar: one
	// per host whose CPU speed changes over time, one per host whose CPU
	// is limited (its periods).
	speedEvents int
	// stalled counts the CPUs whose limit's quota is spent, whose work
	// resumes at the next period.
	stalled int

	st     stats
	events int64

	mainEnds int64 // workload requests whose main path ended, since the start
	cut      int64 // main-path ends discarded as warm-up
	quota    int64 // main-path ends to observe after the cut
	tCut     float64
	done     bool
	trace    []float64 // response times in order of completion, when tracing

	// Set when the run was stopped because it cannot reach a steady state.
	overflow bool
	deadlock bool

	// rec records spans (Record); nil otherwise. The calls to it are marked
	// "span recording".
	rec *recorder
}

func newEngine(p *program, seed, stream uint64, cut, quota int64, liveLimit int) *engine {
	e := &engine{
		p:         p,
		rng:       rand.New(rand.NewPCG(seed, stream)),
		cut:       cut,
		quota:     quota,
		liveLimit: liveLimit,
		stations:  make([]station, p.nStations),
		pools:     make([]pool, p.nPools),
		passives:  make([]passiveRes, p.nPassive),
		hostLoad:  make([]int32, p.nHostLoad),
		rrNext:    make([]int32, len(p.hosts)),
	}
	kindOf := func(s model.Scheduling) uint8 {
		switch s {
		case model.PS:
			return stPS
		case model.RR:
			return stRR
		case model.RandomOrder:
			return stRandom
		}
		return stFCFS
	}
	for _, h := range p.hosts {
		per := int32(1 + len(h.disks))
		for r := int32(0); r < h.replicas; r++ {
			base := h.station + r*per
			e.stations[base] = station{kind: kindOf(h.sched), servers: h.cores, quantum: h.quantum, rate: 1, varies: h.window > 0 || h.limit > 0}
			if h.limit > 0 {
				e.stations[base].cpuLimit = &cpuLimit{quota: h.limit * h.period, speed: 1, periodEnd: h.period}
			}
			for i, d := range h.disks {
				e.stations[base+1+int32(i)] = station{kind: kindOf(d.sched), servers: d.servers, rate: 1}
			}
		}
	}
	for _, c := range p.comps {
		for r := int32(0); r < p.hosts[c.host].replicas; r++ {
			e.pools[c.pool+r] = pool{threads: c.threads, qcap: c.queue}
		}
	}
	for _, pi := range p.passives {
		n := int32(1)
		if pi.host >= 0 {
			n = p.hosts[pi.host].replicas
		}
		for i := range n * pi.parts {
			e.passives[pi.inst+i] = passiveRes{capacity: pi.capacity, free: pi.capacity}
		}
	}
	nw, no := len(p.workloads), len(p.ops)
	e.st = stats{
		wlN: make([]int64, nw), wlDropped: make([]int64, nw), wlCTN: make([]int64, nw),
		wlRT: make([]float64, nw), wlCT: make([]float64, nw), wlSk: make([]*ddsketch.DDSketch, nw),
		opN: make([]int64, no), opRT: make([]float64, no), opSk: make([]*ddsketch.DDSketch, no),
		opSpanRT: make([]float64, no), opSpanSk: make([]*ddsketch.DDSketch, no),
	}
	for i := range e.st.wlSk {
		e.st.wlSk[i] = newSketch()
	}
	for i := range e.st.opSk {
		e.st.opSk[i] = newSketch()
		if p.ops[i].span {
			e.st.opSpanSk[i] = newSketch()
		}
	}
	return e
}

// ctxCheckEvery is how many events pass between checks for cancellation and
// runaway growth (a power of two minus one, used as a mask).
const ctxCheckEvery = 1<<14 - 1

// run simulates until the quota of requests after warm-up is observed, the
// model turns out to have no steady state, or ctx is cancelled.
func (e *engine) run(ctx context.Context) error {
	p := e.p
	for i := range p.workloads {
		w := &p.workloads[i]
		if w.open {
			if w.rate > 0 {
				e.cal.push(w.arrive.sample(e.rng), evArrive, int32(i), 0)
			}
			continue
		}
		for u := int32(0); u < w.users; u++ {
			e.cal.push(w.think.sample(e.rng), evThink, int32(i), u)
		}
	}
	for i := range p.hosts {
		if h := &p.hosts[i]; h.window > 0 {
			e.changeSpeed(int32(i))
			e.speedEvents++
		}
		if h := &p.hosts[i]; h.limit > 0 {
			e.cal.push(e.now+h.period, evPeriod, int32(i), 0)
			e.speedEvents++
		}
	}
	if e.cut == 0 {
		e.resetStats()
	}
	for !e.done {
		for e.ready.len() > 0 {
			e.exec(e.tasks[e.ready.pop()])
		}
		if e.done {
			break
		}
		if e.cal.len() == e.speedEvents && e.stalled == 0 {
			// Nothing but speed changes and periods will ever happen
			// again while requests wait: they wait for each other.
			e.deadlock = true
			break
		}
		ev := e.cal.pop()
		e.now = ev.t
		e.events++
		switch ev.kind() {
		case evArrive:
			w := &p.workloads[ev.x]
			e.cal.push(e.now+w.arrive.sample(e.rng), evArrive, ev.x, 0)
			e.startRequest(ev.x, -1)
		case evThink:
			e.startRequest(ev.x, ev.y)
		case evWake:
			if e.rec != nil { // span recording
				e.rec.wake(e.tasks[ev.x])
			}
			e.exec(e.tasks[ev.x])
		case evDone:
			if t := e.tasks[ev.x]; t.ver == ev.y {
				e.serviceDone(t)
			}
		case evPSDone:
			e.psDone(ev.x, ev.y)
		case evSlice:
			if t := e.tasks[ev.x]; t.ver == ev.y {
				e.sliceEnd(t)
			}
		case evSpeed:
			e.changeSpeed(ev.x)
		case evPeriod:
			e.newPeriod(ev.x)
		case evQuota:
			e.quotaSpent(ev.x, ev.y)
		}
		if e.events&ctxCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
			if e.live > e.liveLimit {
				e.overflow = true
				break
			}
		}
	}
	e.finish()
	return nil
}

// resetStats discards everything observed so far: the end of the warm-up.
func (e *engine) resetStats() {
	e.tCut = e.now
	clear(e.st.wlN)
	clear(e.st.wlDropped)
	clear(e.st.wlCTN)
	clear(e.st.wlRT)
	clear(e.st.wlCT)
	clear(e.st.opN)
	clear(e.st.opRT)
	clear(e.st.opSpanRT)
	for _, s := range e.st.wlSk {
		s.Clear()
	}
	for i, s := range e.st.opSk {
		s.Clear()
		if sp := e.st.opSpanSk[i]; sp != nil {
			sp.Clear()
		}
	}
	reset := func(a *acct) {
		a.area, a.last, a.waitSum, a.waitN, a.in, a.out = 0, e.now, 0, 0, 0, 0
	}
	for i := range e.stations {
		reset(&e.stations[i].acct)
		if l := e.stations[i].cpuLimit; l != nil {
			l.periods, l.stalled = 0, 0
		}
	}
	for i := range e.pools {
		reset(&e.pools[i].acct)
	}
	for i := range e.passives {
		reset(&e.passives[i].acct)
	}
}

// finish brings the time integrals up to the end of the run.
func (e *engine) finish() {
	for i := range e.stations {
		a := &e.stations[i].acct
		a.set(e.now, a.level)
	}
	for i := range e.pools {
		a := &e.pools[i].acct
		a.set(e.now, a.level)
	}
	for i := range e.passives {
		a := &e.passives[i].acct
		a.set(e.now, a.level)
	}
}

// newTask takes a task from the pool for request req.
func (e *engine) newTask(req int32, kind uint8, parent int32) *task {
	var t *task
	if n := len(e.freeTasks); n > 0 {
		t = e.tasks[e.freeTasks[n-1]]
		e.freeTasks = e.freeTasks[:n-1]
	} else {
		t = &task{id: int32(len(e.tasks))}
		e.tasks = append(e.tasks, t)
	}
	t.req, t.kind, t.parent = req, kind, parent
	t.childFailed = false
	t.joins = 0
	t.sender = -1
	t.op, t.rep, t.key = -1, 0, e.nextKey()
	t.frames = t.frames[:0]
	t.acq = t.acq[:0]
	e.reqs[req].live++
	e.live++
	if e.rec != nil { // span recording
		e.rec.newTask(t)
	}
	return t
}

// nextKey draws a task's key (task.key) from a counter, scrambled
// (SplitMix64's finalizer), so that drawing one takes nothing from the
// random streams: models without partitioned resources run as before.
func (e *engine) nextKey() uint32 {
	e.keys++
	z := e.keys * 0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return uint32((z ^ z>>31) >> 32)
}

func (e *engine) freeTask(t *task) {
	e.freeTasks = append(e.freeTasks, t.id)
	e.live--
}

// startRequest begins a request of workload wl (for user, or -1 when open).
func (e *engine) startRequest(wl, user int32) {
	var r *request
	var id int32
	if n := len(e.freeReqs); n > 0 {
		id = e.freeReqs[n-1]
		e.freeReqs = e.freeReqs[:n-1]
		r = e.reqs[id]
	} else {
		id = int32(len(e.reqs))
		r = &request{}
		e.reqs = append(e.reqs, r)
	}
	w := &e.p.workloads[wl]
	r.wl, r.user, r.start, r.live, r.failed, r.mainDone = wl, user, e.now, 0, false, false
	r.params = r.params[:0]
	for _, cum := range w.params {
		u := e.rng.Float64() * cum[len(cum)-1]
		v := int32(len(cum) - 1)
		for i, c := range cum {
			if u < c {
				v = int32(i)
				break
			}
		}
		r.params = append(r.params, v)
	}
	t := e.newTask(id, taskMain, -1)
	t.pc = w.entry
	e.exec(t)
}

// exec runs task t until it has to wait.
func (e *engine) exec(t *task) {
	p := e.p
	for {
		in := &p.code[t.pc]
		switch in.code {
		case opCPU:
			w := p.samplers[in.a].sample(e.rng)
			st := p.hosts[in.b].cpuStation(t.rep)
			if e.rec != nil { // span recording
				// The CPU time at the speed the burst starts at (a
				// stalled CPU's, its speed once the stall ends).
				rate := e.stations[st].rate
				if l := e.stations[st].cpuLimit; l != nil {
					rate = l.speed
				}
				e.rec.cpu(e, t, w/rate)
			}
			t.pc++
			e.arrive(st, t, w)
			return
		case opDisk:
			w := p.samplers[in.a].sample(e.rng)
			t.pc++
			h := &p.hosts[in.b]
			e.arrive(h.station+t.rep*int32(1+len(h.disks))+1+in.c, t, w)
			return
		case opDelay:
			d := p.samplers[in.a].sample(e.rng)
			if e.rec != nil { // span recording
				e.rec.delay(e, t, d)
			}
			t.pc++
			e.cal.push(e.now+d, evWake, t.id, 0)
			return
		case opCall:
			t.pc++
			if e.enter(t, in.a) != admitted {
				return
			}
		case opSend:
			t.pc++
			c := e.newTask(t.req, taskSend, -1)
			c.pc = 0
			if e.rec != nil { // span recording
				e.rec.send(e, t, c, in.a)
			}
			switch e.enter(c, in.a) {
			case admitted:
				e.ready.push(c.id)
			case blocked:
				c.sender = t.id
				return
			}
		case opLoop:
			c := &p.counts[in.a]
			n := 0
			if c.Kind == model.CountConst {
				n = int(c.Mean())
			} else {
				n = c.Sample(e.rng)
			}
			if n <= 0 {
				t.pc = in.b
				continue
			}
			t.frames = append(t.frames, frame{kind: frameLoop, n: int32(min(n, 1<<31-1))})
			t.pc++
		case opLoopEnd:
			f := &t.frames[len(t.frames)-1]
			f.n--
			if f.n > 0 {
				t.pc = in.a
			} else {
				t.frames = t.frames[:len(t.frames)-1]
				t.pc++
			}
		case opBranch:
			b := &p.branches[in.a]
			u := e.rng.Float64() * b.cum[len(b.cum)-1]
			i := 0
			for i < len(b.cum)-1 && u >= b.cum[i] {
				i++
			}
			t.pc = b.pcs[i]
		case opJump:
			t.pc = in.a
		case opParallel:
			pcs := p.forks[in.a]
			t.pc = in.b
			t.joins = int32(len(pcs))
			for _, pc := range pcs {
				c := e.newTask(t.req, taskFork, t.id)
				c.pc, c.op, c.rep, c.key = pc, t.op, t.rep, t.key
				if e.rec != nil { // span recording
					e.rec.fork(e, t, c)
				}
				e.ready.push(c.id)
			}
			return
		case opJoin, opTaskEnd:
			e.endTask(t, false)
			return
		case opHold, opAcquire:
			if !e.acquire(t, in.a, in.b) {
				return
			}
		case opHoldEnd:
			f := t.frames[len(t.frames)-1]
			t.frames = t.frames[:len(t.frames)-1]
			e.release(f.a, f.n)
			t.pc++
		case opRelease:
			e.releaseUnscoped(t, in.a, in.b)
			t.pc++
		case opSwitch:
			r := e.reqs[t.req]
			en := &p.switches[in.a].perWL[r.wl]
			if en.param < 0 {
				t.pc = en.fixed
			} else {
				t.pc = en.pcs[r.params[en.param]]
			}
		case opReturn:
			e.leaveOp(t)
		case opMainEnd:
			e.endTask(t, false)
			return
		}
	}
}

// pickReplica chooses a replica of host h with its balancer.
func (e *engine) pickReplica(h int32) int32 {
	hi := &e.p.hosts[h]
	n := hi.replicas
	if n == 1 {
		return 0
	}
	switch hi.balancer {
	case model.Random:
		return int32(e.rng.IntN(int(n)))
	case model.LeastBusy:
		// The fewest operations in progress; among replicas tied for it,
		// one at random (each kept with probability 1/ties as they come),
		// so that no replica is favoured: the lowest index taken every
		// time loaded the first replica 0.85 where the others had 0.75.
		base := e.p.hostLoadBase[h]
		best, ties := int32(0), 1
		for r := int32(1); r < n; r++ {
			switch load := e.hostLoad[base+r]; {
			case load < e.hostLoad[base+best]:
				best, ties = r, 1
			case load == e.hostLoad[base+best]:
				ties++
				if e.rng.IntN(ties) == 0 {
					best = r
				}
			}
		}
		return best
	case model.LeastOfTwo:
		// Two distinct replicas at random; the one with fewer in
		// progress, a tie at random.
		base := e.p.hostLoadBase[h]
		a := int32(e.rng.IntN(int(n)))
		b := int32(e.rng.IntN(int(n) - 1))
		if b >= a {
			b++
		}
		switch la, lb := e.hostLoad[base+a], e.hostLoad[base+b]; {
		case lb < la, lb == la && e.rng.IntN(2) == 0:
			return b
		}
		return a
	}
	r := e.rrNext[h]
	e.rrNext[h] = (r + 1) % n
	return r
}

// replicaOn is the replica of host h a task uses: the one it runs on when its
// operation is placed on h, otherwise one chosen by h's balancer.
func (e *engine) replicaOn(t *task, h int32) int32 {
	if t.op >= 0 && e.p.comps[e.p.ops[t.op].comp].host == h {
		return t.rep
	}
	return e.pickReplica(h)
}

// enter asks for a thread of operation op's component for task t, whose pc
// is the return point.
func (e *engine) enter(t *task, op int32) int {
	if e.rec != nil { // span recording
		e.rec.enter(e, t, op)
	}
	p := e.p
	c := &p.comps[p.ops[op].comp]
	rep := e.pickReplica(c.host)
	e.hostLoad[p.hostLoadBase[c.host]+rep]++
	t.pendOp, t.pendRep, t.arrive = op, rep, e.now
	pl := &e.pools[c.pool+rep]
	pl.in++
	if pl.threads == 0 || pl.busy < pl.threads {
		pl.busy++
		pl.set(e.now, pl.busy)
		e.beginOp(t, pl)
		return admitted
	}
	if pl.qcap < 0 || int32(pl.queue.len()) < pl.qcap {
		pl.queue.push(t.id)
		return queued
	}
	if c.drop {
		e.hostLoad[p.hostLoadBase[c.host]+rep]--
		e.fail(t)
		return dropped
	}
	pl.blocked.push(t.id)
	return blocked
}

// beginOp starts the pending operation of t on a thread it was given.
func (e *engine) beginOp(t *task, pl *pool) {
	pl.wait(e.now - t.arrive)
	t.frames = append(t.frames, frame{kind: frameOp, start: t.arrive, begun: e.now, a: t.pc, op: t.op, rep: t.rep, key: t.key})
	t.op, t.rep, t.key = t.pendOp, t.pendRep, e.nextKey()
	t.pc = e.p.ops[t.op].entry
	if e.rec != nil { // span recording
		e.rec.begin(e, t)
	}
}

// leaveOp ends the operation t is running and returns to the caller.
func (e *engine) leaveOp(t *task) {
	if e.rec != nil { // span recording
		e.rec.leave(e, t, false)
	}
	f := t.frames[len(t.frames)-1]
	t.frames = t.frames[:len(t.frames)-1]
	rt := e.now - f.start
	e.st.opN[t.op]++
	e.st.opRT[t.op] += rt
	_ = e.st.opSk[t.op].Add(rt)
	if sp := e.st.opSpanSk[t.op]; sp != nil {
		e.st.opSpanRT[t.op] += e.now - f.begun
		_ = sp.Add(e.now - f.begun)
	}
	e.releaseThread(t.op, t.rep)
	t.op, t.rep, t.key, t.pc = f.op, f.rep, f.key, f.a
}

// releaseThread frees the thread an operation held and hands it on.
func (e *engine) releaseThread(op, rep int32) {
	p := e.p
	c := &p.comps[p.ops[op].comp]
	e.hostLoad[p.hostLoadBase[c.host]+rep]--
	pl := &e.pools[c.pool+rep]
	pl.out++
	switch {
	case pl.queue.len() > 0:
		n := e.tasks[pl.queue.pop()]
		e.beginOp(n, pl)
		e.ready.push(n.id)
	case pl.blocked.len() > 0:
		n := e.tasks[pl.blocked.pop()]
		e.wakeSender(n)
		e.beginOp(n, pl)
		e.ready.push(n.id)
	default:
		pl.busy--
		pl.set(e.now, pl.busy)
	}
	for pl.blocked.len() > 0 && (pl.qcap < 0 || int32(pl.queue.len()) < pl.qcap) {
		n := e.tasks[pl.blocked.pop()]
		e.wakeSender(n)
		pl.queue.push(n.id)
	}
}

func (e *engine) wakeSender(t *task) {
	if t.sender >= 0 {
		e.ready.push(t.sender)
		t.sender = -1
	}
}

// acquire asks for units of passive resource res for t, which is at a hold
// or acquire instruction. It reports whether t got them and may go on.
func (e *engine) acquire(t *task, res, units int32) bool {
	pi := &e.p.passives[res]
	inst := pi.inst
	if pi.host >= 0 {
		inst += e.replicaOn(t, pi.host) * pi.parts
	}
	if pi.parts > 1 {
		inst += int32(t.key % uint32(pi.parts))
	}
	ps := &e.passives[inst]
	ps.in++
	t.arrive = e.now
	if ps.waiting.len() == 0 && ps.free >= units {
		e.grant(t, inst, units)
		return true
	}
	t.inst, t.units = inst, units
	ps.waiting.push(t.id)
	return false
}

// grant gives units of a passive instance to t and moves it past its hold
// or acquire instruction.
func (e *engine) grant(t *task, inst, units int32) {
	ps := &e.passives[inst]
	ps.free -= units
	ps.set(e.now, ps.capacity-ps.free)
	ps.wait(e.now - t.arrive)
	in := &e.p.code[t.pc]
	if t.op >= 0 && t.pc == e.p.ops[t.op].entry && e.p.ops[t.op].entryHold {
		// The operation's span starts now (model.Passive.BeforeSpan).
		t.frames[len(t.frames)-1].begun = e.now
		if e.rec != nil { // span recording
			e.rec.started(e, t)
		}
	}
	if in.code == opHold {
		t.frames = append(t.frames, frame{kind: frameHold, n: units, a: inst})
	} else {
		t.acq = append(t.acq, acquired{res: in.a, inst: inst, units: units})
	}
	t.pc++
}

// release returns units to a passive instance and serves its waiters in
// FIFO order.
func (e *engine) release(inst, units int32) {
	ps := &e.passives[inst]
	ps.out++
	ps.free += units
	for ps.waiting.len() > 0 {
		n := e.tasks[ps.waiting.peek()]
		if n.units > ps.free {
			break
		}
		ps.waiting.pop()
		e.grant(n, inst, n.units)
		e.ready.push(n.id)
	}
	ps.set(e.now, ps.capacity-ps.free)
}

// releaseUnscoped serves a release step: it gives back units that this task,
// or a task that forked it, took with an acquire step.
func (e *engine) releaseUnscoped(t *task, res, units int32) {
	for owner := t; owner != nil; {
		for i := len(owner.acq) - 1; i >= 0; i-- {
			a := &owner.acq[i]
			if a.res != res {
				continue
			}
			n := min(units, a.units)
			a.units -= n
			inst := a.inst
			if a.units == 0 {
				owner.acq = append(owner.acq[:i], owner.acq[i+1:]...)
			}
			e.release(inst, n)
			return
		}
		if owner.parent < 0 {
			return
		}
		owner = e.tasks[owner.parent]
	}
}

// fail ends task t because a queue it had to enter was full: it gives back
// what it holds, and its request is counted as dropped.
func (e *engine) fail(t *task) {
	if e.rec != nil { // span recording
		e.rec.fail(e, t)
	}
	e.reqs[t.req].failed = true
	for len(t.frames) > 0 {
		f := t.frames[len(t.frames)-1]
		t.frames = t.frames[:len(t.frames)-1]
		switch f.kind {
		case frameHold:
			e.release(f.a, f.n)
		case frameOp:
			if e.rec != nil { // span recording
				e.rec.leave(e, t, true)
			}
			e.releaseThread(t.op, t.rep)
			t.op, t.rep, t.key = f.op, f.rep, f.key
		}
	}
	e.endTask(t, true)
}

// endTask ends a task: a forked list joins its parent, a main path ends its
// request's response time.
func (e *engine) endTask(t *task, failed bool) {
	if e.rec != nil { // span recording
		e.rec.taskEnd(e, t)
	}
	rid := t.req
	r := e.reqs[rid]
	var parent *task
	if t.kind == taskFork {
		parent = e.tasks[t.parent]
		if failed {
			parent.childFailed = true
		} else {
			parent.acq = append(parent.acq, t.acq...)
			t.acq = t.acq[:0]
		}
	}
	for _, a := range t.acq {
		e.release(a.inst, a.units)
	}
	t.acq = t.acq[:0]
	if t.kind == taskMain {
		e.mainEnd(r)
	}
	e.freeTask(t)
	r.live--
	if parent != nil {
		parent.joins--
		if parent.joins == 0 {
			if parent.childFailed {
				parent.childFailed = false
				e.fail(parent)
			} else {
				e.ready.push(parent.id)
			}
		}
	}
	if r.live == 0 {
		e.requestDone(rid, r)
	}
}

// mainEnd records the response time of a request whose main path ended.
func (e *engine) mainEnd(r *request) {
	r.mainDone = true
	w := &e.p.workloads[r.wl]
	if !w.open {
		e.cal.push(e.now+w.think.sample(e.rng), evThink, r.wl, r.user)
	}
	if !r.failed {
		rt := e.now - r.start
		e.st.wlN[r.wl]++
		e.st.wlRT[r.wl] += rt
		_ = e.st.wlSk[r.wl].Add(rt)
		if e.trace != nil {
			e.trace = append(e.trace, rt)
		}
	}
	e.mainEnds++
	switch e.mainEnds {
	case e.cut:
		e.resetStats()
	case e.cut + e.quota:
		e.done = true
	}
}

// requestDone records the completion time of a request all of whose tasks
// ended, and returns it to the pool.
func (e *engine) requestDone(id int32, r *request) {
	if e.rec != nil { // span recording
		e.rec.done(e, id)
	}
	if r.failed {
		e.st.wlDropped[r.wl]++
	} else {
		e.st.wlCTN[r.wl]++
		e.st.wlCT[r.wl] += e.now - r.start
	}
	e.freeReqs = append(e.freeReqs, id)
}

// arrive puts t at station st with the given service requirement.
func (e *engine) arrive(st int32, t *task, work float64) {
	s := &e.stations[st]
	s.in++
	t.work, t.arrive, t.station = work, e.now, st
	switch s.kind {
	case stPS:
		e.psAdvance(s)
		s.busy++
		s.set(e.now, min(s.busy, s.servers))
		s.psSeq++
		s.ps.push(psJob{finish: s.v + work, seq: s.psSeq, task: t.id})
		e.psSchedule(st, s)
	case stRR:
		t.left = work
		if s.busy < s.servers {
			s.busy++
			s.set(e.now, s.busy)
			e.startSlice(s, t)
		} else {
			s.queue.push(t.id)
		}
	default:
		if s.busy < s.servers {
			s.busy++
			s.set(e.now, s.busy)
			e.serve(s, t, work, evDone)
		} else if s.kind == stFCFS {
			s.queue.push(t.id)
		} else {
			s.rq = append(s.rq, t.id)
		}
	}
	if s.cpuLimit != nil {
		e.meter(st, s)
	}
}

// serviceDone ends t's service at a FCFS or random-order station.
func (e *engine) serviceDone(t *task) {
	s := &e.stations[t.station]
	e.unserve(s, t)
	s.out++
	s.wait(e.now - t.arrive - t.work)
	var next int32 = -1
	if s.kind == stFCFS {
		if s.queue.len() > 0 {
			next = s.queue.pop()
		}
	} else if n := len(s.rq); n > 0 {
		i := 0
		if n > 1 {
			i = e.rng.IntN(n)
		}
		next = s.rq[i]
		s.rq[i] = s.rq[n-1]
		s.rq = s.rq[:n-1]
	}
	if next >= 0 {
		n := e.tasks[next]
		e.serve(s, n, n.work, evDone)
	} else {
		s.busy--
		s.set(e.now, s.busy)
		if s.cpuLimit != nil {
			e.meter(t.station, s)
		}
	}
	e.exec(t)
}

// psAdvance moves a PS station's virtual time to now: each of n jobs on c
// servers progresses at rate min(1, c/n) times the station's speed.
func (e *engine) psAdvance(s *station) {
	if s.busy > 0 {
		s.v += (e.now - s.vLast) * s.psRate()
	}
	s.vLast = e.now
}

// psRate is the rate at which each job of a PS station progresses.
func (s *station) psRate() float64 {
	if s.busy > s.servers {
		return s.rate * float64(s.servers) / float64(s.busy)
	}
	return s.rate
}

// psSchedule (re)schedules a PS station's next departure. A departure on the
// calendar stays valid while the same job is first and the rate is the same
// (below the number of cores an arrival changes neither); otherwise the old
// one becomes stale: it carries an older version and is ignored.
func (e *engine) psSchedule(st int32, s *station) {
	if s.busy == 0 || s.rate == 0 {
		s.scheduled = false
		return
	}
	rate := s.psRate()
	top := &s.ps[0]
	if s.scheduled && top.seq == s.schedSeq && rate == s.schedRate {
		return
	}
	s.version++
	s.scheduled, s.schedSeq, s.schedRate = true, top.seq, rate
	dt := (top.finish - s.v) / rate
	if dt < 0 {
		dt = 0
	}
	e.cal.push(e.now+dt, evPSDone, st, s.version)
}

func (e *engine) psDone(st, version int32) {
	s := &e.stations[st]
	if version != s.version || !s.scheduled {
		return
	}
	s.scheduled = false
	e.psAdvance(s)
	j := s.ps.pop()
	s.busy--
	s.set(e.now, min(s.busy, s.servers))
	if s.busy == 0 {
		s.v = 0 // keeps the virtual clock small, hence precise
	} else {
		s.v = j.finish
	}
	s.out++
	t := e.tasks[j.task]
	s.wait(e.now - t.arrive - t.work)
	e.psSchedule(st, s)
	if s.cpuLimit != nil {
		e.meter(st, s)
	}
	e.exec(t)
}

// startSlice gives t one round-robin quantum (or what it still needs).
func (e *engine) startSlice(s *station, t *task) {
	t.slice = min(s.quantum, t.left)
	e.serve(s, t, t.slice, evSlice)
}

func (e *engine) sliceEnd(t *task) {
	s := &e.stations[t.station]
	e.unserve(s, t)
	if t.slice < t.left {
		t.left -= t.slice
		s.queue.push(t.id)
		e.startSlice(s, e.tasks[s.queue.pop()])
		return
	}
	s.out++
	s.wait(e.now - t.arrive - t.work)
	if s.queue.len() > 0 {
		e.startSlice(s, e.tasks[s.queue.pop()])
	} else {
		s.busy--
		s.set(e.now, s.busy)
		if s.cpuLimit != nil {
			e.meter(t.station, s)
		}
	}
	e.exec(t)
}

// serve schedules the end (kind evDone or evSlice) of work, in compiled
// demand units, that t starts at station s now.
func (e *engine) serve(s *station, t *task, work float64, kind uint8) {
	t.ver++
	if s.varies {
		t.slot = int32(len(s.serving))
		s.serving = append(s.serving, t.id)
	}
	if s.rate == 0 { // stalled until its CPU limit's next period
		t.due, t.rem = math.Inf(1), work
		return
	}
	t.due = e.now + work/s.rate
	e.cal.push(t.due, kind, t.id, t.ver)
}

// unserve takes t, whose service or slice at s has ended, off s's serving
// list.
func (e *engine) unserve(s *station, t *task) {
	if !s.varies {
		return
	}
	n := len(s.serving) - 1
	last := s.serving[n]
	s.serving[t.slot] = last
	e.tasks[last].slot = t.slot
	s.serving = s.serving[:n]
}

// changeSpeed draws a new speed for each replica of host h's CPU, which
// holds until the next change, one window later. Work in progress goes
// on at the new speed: a PS station's virtual time, the services and the
// round-robin slices under way are rescheduled.
func (e *engine) changeSpeed(h int32) {
	hi := &e.p.hosts[h]
	for r := range hi.replicas {
		st := hi.cpuStation(r)
		s := &e.stations[st]
		// The CPU time per unit of work, lognormal of mean 1.
		cost := math.Exp(hi.sigma*e.rng.NormFloat64() - hi.sigma*hi.sigma/2)
		rate := 1 / cost
		if l := s.cpuLimit; l != nil {
			l.speed = rate
			if l.throttled {
				continue
			}
		}
		e.setRate(st, s, rate)
	}
	e.cal.push(e.now+hi.window, evSpeed, h, 0)
}

// setRate changes the speed of station st to rate (0: stalled). Work in
// progress goes on at the new speed: a PS station's virtual time, the
// services and the round-robin slices under way are rescheduled.
func (e *engine) setRate(st int32, s *station, rate float64) {
	if s.kind == stPS {
		e.psAdvance(s)
		s.rate = rate
		e.psSchedule(st, s)
		return
	}
	old := s.rate
	s.rate = rate
	kind := evDone
	if s.kind == stRR {
		kind = evSlice
	}
	for _, id := range s.serving {
		t := e.tasks[id]
		left := t.rem // work still due, in compiled units
		if old > 0 {
			left = max((t.due-e.now)*old, 0)
		}
		if s.kind == stRR {
			t.left -= t.slice - left
			t.slice = left
		}
		t.ver++
		if rate == 0 {
			t.due, t.rem = math.Inf(1), left
			continue
		}
		t.due = e.now + left/rate
		e.cal.push(t.due, kind, id, t.ver)
	}
}

// waiting is the number of requests waiting at resource instance kind/i:
// what grows without bound when the instance cannot keep up.
func (e *engine) waitingAt(kind uint8, i int) int {
	switch kind {
	case resStation:
		s := &e.stations[i]
		if s.kind == stPS {
			return max(int(s.busy-s.servers), 0)
		}
		return s.queue.len() + len(s.rq)
	case resPool:
		return e.pools[i].queue.len() + e.pools[i].blocked.len()
	}
	return e.passives[i].waiting.len()
}
