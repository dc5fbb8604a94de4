package memstore

import (
	"container/heap"

	"github.com/chokaq/chokaq-go/jobs"
)

// jobHeap is a priority queue of Pending jobs under an ordering.
type jobHeap struct {
	items []*jobs.Job
	less  func(a, b *jobs.Job) bool
}

func (h *jobHeap) Len() int           { return len(h.items) }
func (h *jobHeap) Less(i, j int) bool { return h.less(h.items[i], h.items[j]) }
func (h *jobHeap) Swap(i, j int)      { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *jobHeap) Push(x any)         { h.items = append(h.items, x.(*jobs.Job)) }
func (h *jobHeap) Pop() any {
	n := len(h.items)
	x := h.items[n-1]
	h.items[n-1] = nil
	h.items = h.items[:n-1]
	return x
}

func (h *jobHeap) push(j *jobs.Job) { heap.Push(h, j) }
func (h *jobHeap) pop() *jobs.Job   { return heap.Pop(h).(*jobs.Job) }
func (h *jobHeap) peek() *jobs.Job  { return h.items[0] }

// readyOrder is the SQL Server claim index order: priority descending, then
// due time, then ID.
func readyOrder(a, b *jobs.Job) bool { return jobs.ClaimsBefore(a, b) }

// dueOrder orders jobs that are not yet due by due time.
func dueOrder(a, b *jobs.Job) bool {
	if !a.ScheduledAt.Equal(b.ScheduledAt) {
		return a.ScheduledAt.Before(b.ScheduledAt)
	}
	return a.ID < b.ID
}
