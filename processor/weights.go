package processor

import (
	"cmp"
	"slices"

	"github.com/chokaq/chokaq-go/jobs"
)

// picker orders the queues of each claim by smooth weighted round robin
// (nginx's, ADR 0032). The store fills a claim from its first queue first,
// so the queue put first gets the claim while it has a batch of work: each
// turn every queue adds its weight to its current value, the largest
// (ties: the configured order) goes first, the others follow by current,
// largest first, and the first's current drops by the total. Over any run
// of turns each queue is first in proportion to its weight, its turns
// spread out rather than in a run, and two queues of equal weight take
// turns whatever either's backlog. The currents always sum to zero, so a
// weight changed between turns needs no reset.
type picker struct {
	queues  []string
	current []int
	order   []int // which queue goes where, reused each turn
}

func newPicker(queues []string) *picker {
	return &picker{queues: queues, current: make([]int, len(queues)), order: make([]int, len(queues))}
}

// next takes a turn and returns the queues of the claim, in the order to
// ask them; weight gives a queue's weight (at least 1).
func (pk *picker) next(weight func(queue string) int) []string {
	if len(pk.queues) < 2 {
		return pk.queues
	}
	total := 0
	for i, q := range pk.queues {
		w := weight(q)
		pk.current[i] += w
		total += w
		pk.order[i] = i
	}
	slices.SortStableFunc(pk.order, func(a, b int) int { return cmp.Compare(pk.current[b], pk.current[a]) })
	pk.current[pk.order[0]] -= total
	out := make([]string, len(pk.queues)) // the claim keeps it: a new one each turn
	for i, k := range pk.order {
		out[i] = pk.queues[k]
	}
	return out
}

// weightOf is queue q's weight in the processor's last read of the queue
// settings: DefaultQueueWeight when it set none, or before the first read.
func (v *pausedView) weightOf(q string) int {
	if w, ok := v.weights[jobs.QueueKey(q)]; ok {
		return w
	}
	return jobs.DefaultQueueWeight
}
