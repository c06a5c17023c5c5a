package extract

// ordered is a value a minHeap orders: before reports whether it comes
// out before o.
type ordered[T any] interface {
	before(o T) bool
}

// minHeap is a binary min-heap kept by hand. It arranges its values as
// container/heap does (the same order in the slice after the same pushes
// and pops, which saved states keep), without boxing each value pushed
// and popped in an interface, which allocated once per span in progress.
type minHeap[T ordered[T]] []T

// push adds v.
func (h *minHeap[T]) push(v T) {
	*h = append(*h, v)
	a := *h
	for i := len(a) - 1; i > 0; {
		p := (i - 1) / 2
		if !a[i].before(a[p]) {
			break
		}
		a[p], a[i] = a[i], a[p]
		i = p
	}
}

// pop removes and returns the first value.
func (h *minHeap[T]) pop() T {
	a := *h
	top := a[0]
	n := len(a) - 1
	a[0] = a[n]
	a = a[:n]
	a.down(0)
	*h = a
	return top
}

// init arranges the values of a slice as a heap.
func (h minHeap[T]) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

// down moves the value at i down to its place.
func (h minHeap[T]) down(i int) {
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && h[r].before(h[l]) {
			m = r
		}
		if !h[m].before(h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// endTime is when a span in progress ends.
type endTime int64

func (e endTime) before(o endTime) bool { return e < o }
