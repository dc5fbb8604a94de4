package memstore

import (
	"cmp"
	"slices"
	"strings"

	"github.com/chokaq/chokaq-go/jobs"
)

// Flow control (ADR 0031), enforced at claim. A due job the claim pops
// that may not run now is parked, out of the queue's ready heap, rather
// than put back: a hot key's backlog is read past once, not at every
// claim. Whatever gives a parked job room unparks it into the ready heap
// again, where the next claim judges it afresh: a job of the key leaving
// Fetched or Processing, a limit raised, a sequence's head finishing. A
// parked job is still Pending in every count and list.

// flowState is a queue's flow-control state.
type flowState struct {
	keyActive map[string]int      // concurrency key -> its Fetched and Processing jobs
	keyParked map[string]*jobHeap // concurrency key -> its parked due jobs, best first
	seqs      map[string]*sequence
	// parked names each parked job's reason: the key it waits on, or ""
	// for its sequence; a job gone from it is a stale heap entry.
	parked map[int64]parking
}

type parking struct {
	onKey bool
	key   string
}

// sequence is one sequence key's jobs: members are the IDs of its hot jobs
// and of the dead letters that hold it, in enqueue order; only the first
// may run, and only while no member runs.
type sequence struct {
	members []int64
	active  int
	parked  map[int64]*jobs.Job // members a claim held back, by ID
}

func (f *flowState) init() {
	if f.keyActive == nil {
		f.keyActive, f.keyParked, f.seqs, f.parked = map[string]int{}, map[string]*jobHeap{}, map[string]*sequence{}, map[int64]parking{}
	}
}

func (f *flowState) seq(k string) *sequence {
	sq := f.seqs[k]
	if sq == nil {
		sq = &sequence{parked: map[int64]*jobs.Job{}}
		f.seqs[k] = sq
	}
	return sq
}

func (sq *sequence) add(id int64) {
	if i, found := slices.BinarySearch(sq.members, id); !found {
		sq.members = slices.Insert(sq.members, i, id)
	}
}

func (sq *sequence) remove(id int64) {
	if i, found := slices.BinarySearch(sq.members, id); found {
		sq.members = slices.Delete(sq.members, i, i+1)
	}
}

// mayRun reports whether the claim may take due job j now; if not, it
// parks j and reports false.
func (q *queueState) mayRun(j *jobs.Job) bool {
	if j.ConcurrencyKey == "" && j.SequenceKey == "" {
		return true
	}
	f := &q.flow
	f.init()
	if k := j.SequenceKey; k != "" {
		sq := f.seq(k)
		if sq.active > 0 || len(sq.members) == 0 || sq.members[0] != j.ID {
			sq.parked[j.ID] = j
			f.parked[j.ID] = parking{key: k}
			return false
		}
	}
	if k := j.ConcurrencyKey; k != "" {
		if limit := q.settings.KeyLimit(k); limit > 0 && f.keyActive[k] >= limit {
			h := f.keyParked[k]
			if h == nil {
				h = &jobHeap{less: readyOrder}
				f.keyParked[k] = h
			}
			h.push(j)
			f.parked[j.ID] = parking{onKey: true, key: k}
			return false
		}
	}
	return true
}

// claimed counts a job the claim took against its key and sequence.
func (q *queueState) claimed(j *jobs.Job) {
	if j.ConcurrencyKey == "" && j.SequenceKey == "" {
		return
	}
	q.flow.init()
	if k := j.ConcurrencyKey; k != "" {
		q.flow.keyActive[k]++
	}
	if k := j.SequenceKey; k != "" {
		q.flow.seq(k).active++
	}
}

// released counts job j out of its key and sequence as it leaves Fetched
// or Processing, and unparks what that makes room for.
func (q *queueState) released(j *jobs.Job) {
	if j.ConcurrencyKey == "" && j.SequenceKey == "" {
		return
	}
	f := &q.flow
	f.init()
	if k := j.ConcurrencyKey; k != "" {
		if f.keyActive[k]--; f.keyActive[k] <= 0 {
			delete(f.keyActive, k)
		}
		q.unparkKey(k)
	}
	if k := j.SequenceKey; k != "" {
		f.seq(k).active--
		q.unparkSequence(k)
	}
}

// unparkKey moves key k's parked jobs back to the ready heap, as many as
// its limit has room for now.
func (q *queueState) unparkKey(k string) {
	f := &q.flow
	h := f.keyParked[k]
	if h == nil {
		return
	}
	room := -1 // unlimited
	if limit := q.settings.KeyLimit(k); limit > 0 {
		room = max(0, limit-f.keyActive[k])
	}
	// One job per free place: the next claim judges each again, and parks
	// again any that another release also let out.
	for h.Len() > 0 && room != 0 {
		j := h.pop()
		if p, ok := f.parked[j.ID]; !ok || !p.onKey || p.key != k {
			continue // stale: cancelled, or parked again since
		}
		delete(f.parked, j.ID)
		q.ready.push(j)
		if room > 0 {
			room--
		}
	}
	if h.Len() == 0 {
		delete(f.keyParked, k)
	}
}

// unparkSequence moves sequence k's head back to the ready heap when it
// was parked and nothing of the sequence runs.
func (q *queueState) unparkSequence(k string) {
	f := &q.flow
	sq := f.seqs[k]
	if sq == nil {
		return
	}
	if len(sq.members) == 0 && sq.active == 0 {
		delete(f.seqs, k)
		return
	}
	if sq.active > 0 || len(sq.members) == 0 {
		return
	}
	head := sq.members[0]
	if j, ok := sq.parked[head]; ok {
		delete(sq.parked, head)
		if p, ok := f.parked[head]; ok && !p.onKey {
			delete(f.parked, head)
			q.ready.push(j)
		}
	}
}

// unparkAll gives every parked key another look, after its queue's limits
// changed: a raised limit lets more in at the next claim.
func (q *queueState) unparkAll() {
	for k := range q.flow.keyParked {
		q.unparkKey(k)
	}
}

// joined records that j entered table t: a sequenced job joins its
// sequence when it becomes hot (enqueue, resurrect), and stays a member as
// a dead letter under SequenceHold unless it was cancelled.
func (q *queueState) joined(j *jobs.Job) {
	k := j.SequenceKey
	if k == "" {
		return
	}
	switch {
	case j.Table == jobs.TableHot,
		j.Table == jobs.TableDLQ && q.settings.SequenceOnDeadLetter == jobs.SequenceHold && j.FailureReason != jobs.ReasonCancelled:
		q.flow.init()
		q.flow.seq(k).add(j.ID)
	}
}

// left records that j left its table: out of its sequence (a move to the
// DLQ under SequenceHold joins it again), and out of the parked jobs if a
// claim held it back; the sequence's next job may now run.
func (q *queueState) left(j *jobs.Job) {
	if j.ConcurrencyKey == "" && j.SequenceKey == "" {
		return
	}
	f := &q.flow
	f.init()
	delete(f.parked, j.ID)
	if k := j.SequenceKey; k != "" {
		sq := f.seq(k)
		sq.remove(j.ID)
		delete(sq.parked, j.ID)
		q.unparkSequence(k)
	}
}

// waiting counts the jobs parked by reason.
func (q *queueState) waiting() (onKey, onSequence int64) {
	for _, p := range q.flow.parked {
		if p.onKey {
			onKey++
		} else {
			onSequence++
		}
	}
	return onKey, onSequence
}

// busiestKeys are the queue's concurrency keys with the most running jobs
// (jobs.QueueStats.BusiestKeys).
func (q *queueState) busiestKeys() []jobs.KeyCount {
	if len(q.flow.keyActive) == 0 {
		return nil
	}
	waiting := map[string]int64{}
	for _, p := range q.flow.parked {
		if p.onKey {
			waiting[p.key]++
		}
	}
	out := make([]jobs.KeyCount, 0, len(q.flow.keyActive))
	for k, n := range q.flow.keyActive {
		out = append(out, jobs.KeyCount{Key: k, Running: int64(n), Waiting: waiting[k]})
	}
	slices.SortFunc(out, func(a, b jobs.KeyCount) int {
		if a.Running != b.Running {
			return cmp.Compare(b.Running, a.Running)
		}
		return strings.Compare(a.Key, b.Key)
	})
	return out[:min(len(out), jobs.MaxBusiestKeys)]
}
