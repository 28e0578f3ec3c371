package health

import (
	"container/heap"
	"context"
	"time"
)

// task is the probing of one member by one monitor; Run keeps every task
// in one timer heap ordered by its next probe (see the package doc).
type task struct {
	member    *memberEntry
	monitorID string
	target    target
	delay     time.Duration
	timeout   time.Duration
	rise      int
	fall      int

	next  time.Time // when the next probe is due
	index int       // in the heap; -1 while in flight or removed
	gen   uint64    // bumped when target or timeout change: results of older probes are dropped

	inflight bool
	removed  bool
	cancel   context.CancelFunc // of the probe in flight
}

// taskHeap is a min-heap of tasks by next.
type taskHeap []*task

func (h taskHeap) Len() int           { return len(h) }
func (h taskHeap) Less(i, j int) bool { return h[i].next.Before(h[j].next) }
func (h taskHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}

func (h *taskHeap) Push(x any) {
	t := x.(*task)
	t.index = len(*h)
	*h = append(*h, t)
}

func (h *taskHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	t.index = -1
	return t
}

// schedule puts t in the heap at next, or moves it there.
func (h *taskHeap) schedule(t *task, next time.Time) {
	t.next = next
	if t.index >= 0 {
		heap.Fix(h, t.index)
		return
	}
	heap.Push(h, t)
}

// unschedule takes t out of the heap if it is there.
func (h *taskHeap) unschedule(t *task) {
	if t.index >= 0 {
		heap.Remove(h, t.index)
	}
}

// due pops the first task if it is due at now.
func (h *taskHeap) due(now time.Time) *task {
	if len(*h) == 0 || (*h)[0].next.After(now) {
		return nil
	}
	return heap.Pop(h).(*task)
}

// nextAt is when the first task is due; zero when there is none.
func (h taskHeap) nextAt() time.Time {
	if len(h) == 0 {
		return time.Time{}
	}
	return h[0].next
}
