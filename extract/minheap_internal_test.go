package extract

import (
	"container/heap"
	"math/rand/v2"
	"slices"
	"testing"
)

// refHeap is container/heap's heap of end times, the reference minHeap
// must arrange its values as.
type refHeap []int64

func (h refHeap) Len() int           { return len(h) }
func (h refHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h refHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *refHeap) Push(x any)        { *h = append(*h, x.(int64)) }
func (h *refHeap) Pop() any {
	old := *h
	v := old[len(old)-1]
	*h = old[:len(old)-1]
	return v
}

// TestMinHeapAsContainerHeap pushes and pops random end times, many of
// them equal, into a minHeap and container/heap's heap, and builds both
// from random slices: the slices hold the same values in the same order
// after every step (saved states keep that order), and pops come out in
// order.
func TestMinHeapAsContainerHeap(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var mine minHeap[endTime]
	var ref refHeap
	same := func(step int) {
		t.Helper()
		if len(mine) != len(ref) {
			t.Fatalf("step %d: %d values, container/heap %d", step, len(mine), len(ref))
		}
		for i := range mine {
			if int64(mine[i]) != ref[i] {
				t.Fatalf("step %d: value %d is %d, container/heap's %d", step, i, mine[i], ref[i])
			}
		}
	}
	last := int64(-1)
	for step := range 20000 {
		if len(ref) == 0 || r.IntN(5) < 3 {
			v := r.Int64N(50)
			mine.push(endTime(v))
			heap.Push(&ref, v)
			last = -1
		} else {
			got, want := int64(mine.pop()), heap.Pop(&ref).(int64)
			if got != want || got < last {
				t.Fatalf("step %d: popped %d, container/heap %d, after %d", step, got, want, last)
			}
			last = got
		}
		same(step)
	}
	for n := range 40 {
		vals := make([]int64, n)
		for i := range vals {
			vals[i] = r.Int64N(10)
		}
		ref = slices.Clone(vals)
		heap.Init(&ref)
		mine = mine[:0]
		for _, v := range vals {
			mine = append(mine, endTime(v))
		}
		mine.init()
		same(-n)
	}
}
