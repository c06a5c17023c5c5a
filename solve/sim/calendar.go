package sim

// Event kinds.
const (
	evArrive uint8 = iota // x: workload; an open arrival
	evThink               // x: workload; the end of a closed user's think time
	evWake                // x: task; the end of a delay
	evDone                // x: task, y: its version; the end of service at a FCFS or random-order station
	evPSDone              // x: station, y: version; the next departure of a PS station
	evSlice               // x: task, y: its version; the end of a round-robin time slice
	evSpeed               // x: host; its replicas' CPUs change speed
	evPeriod              // x: host; its replicas' CPU limits start a new period
	evQuota               // x: station, y: its quota version; the station's CPU time runs out for the period
)

// event is one entry of the calendar. Events at the same time are handled in
// the order they were scheduled, which makes a run deterministic: key holds
// the scheduling sequence number in its high 56 bits and the kind in its low
// 8, so comparing keys compares sequence numbers. (2^56 events would take
// years to simulate.)
type event struct {
	t    float64
	key  uint64
	x, y int32
}

func (e *event) kind() uint8 { return uint8(e.key) }

// calendar is the future event list: a 4-ary min-heap of events by (t, key),
// stored by value. A 4-ary heap is shallower than a binary one and its
// children share cache lines, which makes pops cheaper.
type calendar struct {
	h   []event
	seq uint64
}

func (e *event) before(o *event) bool {
	return e.t < o.t || e.t == o.t && e.key < o.key
}

// push schedules an event.
func (c *calendar) push(t float64, kind uint8, x, y int32) {
	c.seq++
	e := event{t: t, key: c.seq<<8 | uint64(kind), x: x, y: y}
	h := append(c.h, e)
	i := len(h) - 1
	for i > 0 {
		parent := (i - 1) >> 2
		if !e.before(&h[parent]) {
			break
		}
		h[i] = h[parent]
		i = parent
	}
	h[i] = e
	c.h = h
}

// pop removes and returns the earliest event; the calendar must not be empty.
func (c *calendar) pop() event {
	h := c.h
	top := h[0]
	n := len(h) - 1
	last := h[n]
	h = h[:n]
	c.h = h
	if n == 0 {
		return top
	}
	i := 0
	for {
		first := i<<2 + 1
		if first >= n {
			break
		}
		best := first
		end := min(first+4, n)
		for j := first + 1; j < end; j++ {
			if h[j].before(&h[best]) {
				best = j
			}
		}
		if !h[best].before(&last) {
			break
		}
		h[i] = h[best]
		i = best
	}
	h[i] = last
	return top
}

func (c *calendar) len() int { return len(c.h) }

// fifo is a queue of task ids in a ring buffer that grows as needed and is
// kept between uses, so that a steady state does not allocate.
type fifo struct {
	buf        []int32
	head, size int
}

func (q *fifo) push(v int32) {
	if q.size == len(q.buf) {
		n := max(2*len(q.buf), 8)
		nb := make([]int32, n)
		for i := 0; i < q.size; i++ {
			nb[i] = q.buf[(q.head+i)%len(q.buf)]
		}
		q.buf, q.head = nb, 0
	}
	i := q.head + q.size
	if i >= len(q.buf) {
		i -= len(q.buf)
	}
	q.buf[i] = v
	q.size++
}

func (q *fifo) pop() int32 {
	v := q.buf[q.head]
	q.head++
	if q.head == len(q.buf) {
		q.head = 0
	}
	q.size--
	return v
}

func (q *fifo) len() int { return q.size }

// peek returns the first element without removing it; the queue must not be
// empty.
func (q *fifo) peek() int32 { return q.buf[q.head] }

// psJob is a job at a processor-sharing station: it leaves when the
// station's virtual time reaches finish.
type psJob struct {
	finish float64
	seq    uint64
	task   int32
}

func (j *psJob) before(o *psJob) bool {
	return j.finish < o.finish || j.finish == o.finish && j.seq < o.seq
}

// psHeap is a binary min-heap of PS jobs by finish virtual time.
type psHeap []psJob

func (h *psHeap) push(j psJob) {
	s := append(*h, j)
	i := len(s) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if !j.before(&s[parent]) {
			break
		}
		s[i] = s[parent]
		i = parent
	}
	s[i] = j
	*h = s
}

func (h *psHeap) pop() psJob {
	s := *h
	top := s[0]
	n := len(s) - 1
	last := s[n]
	s = s[:n]
	*h = s
	if n == 0 {
		return top
	}
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		best := l
		if r := l + 1; r < n && s[r].before(&s[l]) {
			best = r
		}
		if !s[best].before(&last) {
			break
		}
		s[i] = s[best]
		i = best
	}
	s[i] = last
	return top
}
