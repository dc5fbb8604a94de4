package memstore

import (
	"bytes"
	"container/heap"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

// Store is an in-memory jobs.Store. The zero value is not usable; call New.
type Store struct {
	forms // StartMany ... DeadLetterMany (batch.go)

	clock    func() time.Time
	limits   jobs.Limits
	statsCap int

	mu      sync.Mutex
	nextID  int64
	hot     map[int64]*jobs.Job
	archive map[int64]*jobs.Job
	dlq     map[int64]*jobs.Job
	idem    map[string]int64 // idempotency key -> hot job ID
	// uniq maps each unique key to the job holding it: hot, or finished
	// in a table its states count (unique.go).
	uniq map[jobs.UniqueKey]int64
	// queues holds each queue's control row and claim indexes, by
	// jobs.QueueKey: queue names compare ignoring case, as on SQL Server.
	queues map[string]*queueState
	// schedules holds the schedules' state (schedule.go), by lower-case
	// name: names compare ignoring case, as on SQL Server.
	schedules map[string]*jobs.ScheduleState
	// finished orders each queue's archived and dead-lettered jobs by
	// finish (finished.go).
	finished map[jobs.Table]map[string]*finishLog
	// fetched orders Fetched jobs by claim and deadlines Processing jobs
	// by deadline, for rescue phases 1 and 3 (inflight.go); phase 2's
	// index is each queue's beats.
	fetched, deadlines flightIndex
	// workflows and tasks hold the workflows (workflow.go), by ID, and
	// each task by its job's ID.
	workflows    map[int64]*workflow
	tasks        map[int64]*task
	nextWorkflow int64
	// workflowEnded is WithWorkflowEnded's hook, nil for none.
	workflowEnded func(jobs.Workflow)
}

var (
	_ jobs.Store           = (*Store)(nil)
	_ jobs.FinishedCounter = (*Store)(nil)
)

// Option configures a Store.
type Option func(*Store)

// WithClock replaces the store's clock (time.Now by default). The clock plays
// the role of SYSUTCDATETIME(): every timestamp and expiry check uses it.
func WithClock(now func() time.Time) Option { return func(s *Store) { s.clock = now } }

// WithLimits sets enqueue limits such as the maximum payload size.
func WithLimits(l jobs.Limits) Option { return func(s *Store) { s.limits = l } }

// WithStatsCap caps each count QueueStats reports (jobs.DefaultStatsCap), as
// the SQL Server store caps them.
func WithStatsCap(n int) Option { return func(s *Store) { s.statsCap = max(n, 1) } }

// New returns an empty store.
func New(opts ...Option) *Store {
	s := &Store{
		clock:    time.Now,
		statsCap: jobs.DefaultStatsCap,
		hot:      make(map[int64]*jobs.Job),
		archive:  make(map[int64]*jobs.Job),
		dlq:      make(map[int64]*jobs.Job),
		idem:     make(map[string]int64),
		uniq:     make(map[jobs.UniqueKey]int64),
		queues:   make(map[string]*queueState),

		schedules: make(map[string]*jobs.ScheduleState),
		finished:  make(map[jobs.Table]map[string]*finishLog),
		workflows: make(map[int64]*workflow),
		tasks:     make(map[int64]*task),
	}
	s.forms = jobs.FormsOf(s)
	for _, o := range opts {
		o(s)
	}
	return s
}

func (s *Store) now() time.Time { return s.clock().UTC() }

// queueState is the control row of a queue plus the indexes a claim needs.
type queueState struct {
	settings  jobs.QueueSettings
	hasRow    bool    // an operator or config created the control row
	ready     jobHeap // due Pending jobs, best first
	scheduled jobHeap // Pending jobs not yet due, soonest first
	active    int     // Fetched + Processing
	flow      flowState
	rate      rateWindow
	// waitingOnParents counts the queue's tasks waiting for a parent
	// (workflow.go): hot and Pending, in no Pending count or claim index.
	waitingOnParents int
	// counts holds the queue's hot jobs by status (Pending, Fetched,
	// Processing), kept as they move, so that depths need no walk.
	counts [3]int
	// tables counts the queue's jobs of each table (hot, archive, DLQ), due
	// orders its Pending jobs by due time: QueueStats and TableQueues read
	// them (stats.go).
	tables [3]tableCount
	due    dueIndex
	ids    [3]idSet    // the queue's jobs of each table, for lists
	beats  flightIndex // Processing jobs by last sign of life (phase 2)
}

func (s *Store) queue(name string) *queueState {
	q := s.queues[jobs.QueueKey(name)]
	if q == nil {
		q = &queueState{
			settings:  jobs.QueueSettings{Name: name},
			ready:     jobHeap{less: readyOrder},
			scheduled: jobHeap{less: dueOrder},
			due:       dueIndex{mark: math.MinInt64},
		}
		s.queues[jobs.QueueKey(name)] = q
	}
	return q
}

// leave records that job j of the queue left its status (Fetched or
// Processing) for Pending or another table.
func (q *queueState) leave(j *jobs.Job) {
	q.active--
	q.counts[j.Status]--
	q.released(j)
}

// queueOf returns the state of an existing queue, or nil.
func (s *Store) queueOf(name string) *queueState { return s.queues[jobs.QueueKey(name)] }

// pushPending indexes a job that just became Pending.
func (s *Store) pushPending(j *jobs.Job, now time.Time) {
	q := s.queue(j.Queue)
	q.counts[jobs.StatusPending]++
	q.indexDue(j, now)
	if j.ScheduledAt.After(now) {
		q.scheduled.push(j)
	} else {
		q.ready.push(j)
	}
}

// Enqueue implements jobs.Store.
func (s *Store) Enqueue(ctx context.Context, p jobs.EnqueueParams) (jobs.EnqueueResult, error) {
	if err := ctx.Err(); err != nil {
		return jobs.EnqueueResult{}, err
	}
	p, err := p.Normalize(s.limits)
	if err != nil {
		return jobs.EnqueueResult{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.enqueueLocked(p, s.now()), nil
}

// EnqueueMany implements jobs.Store.
func (s *Store) EnqueueMany(ctx context.Context, ps []jobs.EnqueueParams) ([]jobs.EnqueueResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ps, err := jobs.NormalizeBatch(ps, s.limits)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	out := make([]jobs.EnqueueResult, len(ps))
	for i, p := range ps {
		out[i] = s.enqueueLocked(p, now)
	}
	return out, nil
}

func (s *Store) enqueueLocked(p jobs.EnqueueParams, now time.Time) jobs.EnqueueResult {
	if p.IdempotencyKey != "" {
		if id, ok := s.idem[p.IdempotencyKey]; ok {
			return jobs.EnqueueResult{ID: id, Duplicate: true}
		}
	}
	key, unique, _ := p.UniqueKeyAt(now) // Normalize has checked it
	if unique {
		if id, ok := s.uniq[key]; ok {
			return jobs.EnqueueResult{ID: id, Duplicate: true}
		}
	}
	j := s.newJob(p, now)
	s.enter(j)
	if j.IdempotencyKey != "" {
		s.idem[j.IdempotencyKey] = j.ID
	}
	if unique {
		j.UniqueKey, j.UniqueStates = &key, p.Unique.States.Effective()
		s.uniq[key] = j.ID
	}
	s.pushPending(j, now)
	return jobs.EnqueueResult{ID: j.ID}
}

// Claim implements jobs.Store.
func (s *Store) Claim(ctx context.Context, p jobs.ClaimParams) ([]*jobs.Job, error) {
	r, err := s.ClaimHeld(ctx, p)
	return r.Jobs, err
}

// ClaimHeld implements jobs.RateClaimer: Claim, and the queues whose rate
// limit has no claim left in its open window.
func (s *Store) ClaimHeld(ctx context.Context, p jobs.ClaimParams) (jobs.ClaimResult, error) {
	if err := ctx.Err(); err != nil {
		return jobs.ClaimResult{}, err
	}
	if err := p.Validate(); err != nil {
		return jobs.ClaimResult{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	var out []*jobs.Job
	var held []jobs.QueueHold
	var block []jobs.Job // the copies handed out, allocated a block at a time
	for _, name := range jobs.UniqueQueues(p.Queues) {
		q := s.queueOf(name)
		if q == nil || q.settings.Paused {
			continue
		}
		for q.scheduled.Len() > 0 && !q.scheduled.peek().ScheduledAt.After(now) {
			q.ready.push(q.scheduled.pop())
		}
		room, took := q.room(now), 0
		for len(out) < p.Limit && q.ready.Len() > 0 && took != room {
			if q.settings.MaxWorkers > 0 && q.active >= q.settings.MaxWorkers {
				break
			}
			j := q.ready.pop()
			if s.hot[j.ID] != j || j.Status != jobs.StatusPending {
				continue // stale index entry
			}
			if !q.mayRun(j) {
				continue // parked until its key or sequence has room
			}
			q.claimed(j)
			j.Status = jobs.StatusFetched
			j.WorkerID = p.WorkerID
			j.Lease++
			j.LastUpdatedAt = now
			q.active++
			q.leavePending(j)
			q.counts[jobs.StatusFetched]++
			s.indexFetched(j)
			if len(block) == cap(block) {
				block = make([]jobs.Job, 0, min(p.Limit-len(out), 64))
				if out == nil {
					out = make([]*jobs.Job, 0, min(p.Limit, 64))
				}
			}
			block = append(block, *j)
			c := &block[len(block)-1]
			c.Payload, c.Tags, c.Metadata = bytes.Clone(j.Payload), slices.Clone(j.Tags), maps.Clone(j.Metadata)
			out = append(out, c)
			took++
		}
		q.took(took, now)
		if d, ok := q.hold(now); ok {
			held = append(held, jobs.QueueHold{Queue: q.settings.Name, For: d})
		}
	}
	return jobs.ClaimResult{Jobs: out, Held: held}, nil
}

// owned returns the hot job that ref still owns in status want, or nil.
func (s *Store) owned(ref jobs.LeaseRef, want jobs.Status) *jobs.Job {
	j := s.hot[ref.ID]
	if j == nil || j.Lease != ref.Lease || j.Status != want {
		return nil
	}
	return j
}

// Start implements jobs.Store.
func (s *Store) Start(ctx context.Context, ref jobs.LeaseRef, p jobs.StartParams) (jobs.Started, error) {
	if err := ctx.Err(); err != nil {
		return jobs.Started{}, err
	}
	if err := p.Validate(); err != nil {
		return jobs.Started{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.start(ref, p, s.now())
}

// start is Start under s.mu.
func (s *Store) start(ref jobs.LeaseRef, p jobs.StartParams, now time.Time) (jobs.Started, error) {
	if j := s.owned(ref, jobs.StatusProcessing); j != nil {
		// This claim's own start, repeated: report it again (see jobs.Store).
		return jobs.Started{AttemptCount: j.AttemptCount, StartedAt: j.StartedAt, DeadlineAt: j.DeadlineAt, Timeout: j.DeadlineAt.Sub(j.StartedAt), TimeoutFrom: j.TimeoutFrom}, nil
	}
	j := s.owned(ref, jobs.StatusFetched)
	if j == nil {
		return jobs.Started{}, fmt.Errorf("memstore: start job %d lease %d: %w", ref.ID, ref.Lease, jobs.ErrLeaseLost)
	}
	var queueTimeout time.Duration
	if q := s.queueOf(j.Queue); q != nil {
		queueTimeout = q.settings.ExecutionTimeout
	}
	timeout, from := p.EffectiveTimeout(queueTimeout)
	timeout = timeout.Truncate(time.Millisecond) // what SQL Server keeps
	j.Status = jobs.StatusProcessing
	j.AttemptCount++
	j.StartedAt, j.HeartbeatAt, j.LastUpdatedAt = now, now, now
	j.DeadlineAt = now.Add(timeout)
	j.HeartbeatMax = p.HeartbeatMax.Truncate(time.Millisecond) // what SQL Server keeps
	j.TimeoutFrom, j.ZombieRetryCap = from, p.ZombieRetryCap
	q := s.queue(j.Queue)
	q.counts[jobs.StatusFetched]--
	q.counts[jobs.StatusProcessing]++
	s.indexStarted(j)
	return jobs.Started{AttemptCount: j.AttemptCount, StartedAt: now, DeadlineAt: j.DeadlineAt, Timeout: timeout, TimeoutFrom: from}, nil
}

// Heartbeat implements jobs.Store.
func (s *Store) Heartbeat(ctx context.Context, refs []jobs.LeaseRef) (jobs.HeartbeatResult, error) {
	return s.HeartbeatProgress(ctx, refs, nil)
}

// HeartbeatProgress implements jobs.Reporter: Heartbeat, each item of
// progress written to its job under the same fence.
func (s *Store) HeartbeatProgress(ctx context.Context, refs []jobs.LeaseRef, progress []jobs.ProgressItem) (jobs.HeartbeatResult, error) {
	var r jobs.HeartbeatResult
	if err := ctx.Err(); err != nil {
		return r, err
	}
	for _, p := range progress {
		if err := p.Validate(); err != nil {
			return r, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for _, ref := range refs {
		j := s.owned(ref, jobs.StatusProcessing)
		if j != nil && now.Before(j.HeartbeatAt) {
			// The clock went back: the index's instant for this job is no
			// longer a lower bound of its last sign of life.
			s.queue(j.Queue).beats.push(flightEntry{job: j, lease: j.Lease, at: nanos(now)}, s.isProcessing)
		}
		if j != nil {
			for _, p := range progress {
				if p.Ref == ref {
					j.Progress, j.ProgressMessage = p.Fraction, p.Message
				}
			}
		}
		switch {
		case j == nil:
			r.Lost = append(r.Lost, ref)
		case !j.CancelRequestedAt.IsZero():
			j.HeartbeatAt = now
			r.CancelRequested = append(r.CancelRequested, ref)
		default:
			j.HeartbeatAt = now
		}
	}
	return r, nil
}

// Complete implements jobs.Store.
func (s *Store) Complete(ctx context.Context, ref jobs.LeaseRef) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.complete(ref, s.now(), nil)
}

// complete is Complete under s.mu, output the handler's (nil for none).
func (s *Store) complete(ref jobs.LeaseRef, now time.Time, output json.RawMessage) error {
	j := s.owned(ref, jobs.StatusProcessing)
	if j == nil {
		return fmt.Errorf("memstore: complete job %d lease %d: %w", ref.ID, ref.Lease, jobs.ErrLeaseLost)
	}
	s.removeHot(j)
	j.Output = bytes.Clone(output)
	j.Table = jobs.TableArchive
	j.CancelRequestedAt, j.CancelNote = time.Time{}, ""
	j.FinishedAt = now
	j.Duration = now.Sub(j.StartedAt)
	s.enter(j)
	s.settleKey(j)
	s.logFinished(j)
	s.taskSucceeded(j, now)
	return nil
}

// Retry implements jobs.Store.
func (s *Store) Retry(ctx context.Context, ref jobs.LeaseRef, p jobs.RetryParams) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := p.Validate(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.retry(ref, p, s.now())
}

// retry is Retry under s.mu.
func (s *Store) retry(ref jobs.LeaseRef, p jobs.RetryParams, now time.Time) error {
	j := s.owned(ref, jobs.StatusProcessing)
	if j == nil {
		return fmt.Errorf("memstore: retry job %d lease %d: %w", ref.ID, ref.Lease, jobs.ErrLeaseLost)
	}
	if err := s.cancelInstead(j, "retry", p.Error, now); err != nil {
		return err
	}
	s.queue(j.Queue).leave(j)
	toPending(j, now)
	j.ScheduledAt = now.Add(p.Delay)
	j.LastError = p.Error
	s.pushPending(j, now)
	return nil
}

// cancelInstead dead-letters a job whose cancel was requested, with what
// its worker had to say, instead of the transition op: a handler that
// fails, or snoozes, after a cancel must not run again. It returns the
// error saying so, or nil for a job nobody cancelled.
func (s *Store) cancelInstead(j *jobs.Job, op, said string, now time.Time) error {
	if j.CancelRequestedAt.IsZero() {
		return nil
	}
	s.toDLQ(j, jobs.ReasonCancelled, said, now)
	return fmt.Errorf("memstore: %s job %d lease %d: %w", op, j.ID, j.Lease, jobs.ErrCancelled)
}

// Snooze implements jobs.Store.
func (s *Store) Snooze(ctx context.Context, ref jobs.LeaseRef, p jobs.SnoozeParams) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := p.Validate(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	j := s.owned(ref, jobs.StatusProcessing)
	if j == nil {
		return fmt.Errorf("memstore: snooze job %d lease %d: %w", ref.ID, ref.Lease, jobs.ErrLeaseLost)
	}
	if err := s.cancelInstead(j, "snooze", "snoozed after its cancel was requested", now); err != nil {
		return err
	}
	s.queue(j.Queue).leave(j)
	toPending(j, now)
	j.AttemptCount--
	j.SnoozeCount++
	j.ScheduledAt = now.Add(p.Delay)
	s.pushPending(j, now)
	return nil
}

// Cancel implements jobs.Store.
func (s *Store) Cancel(ctx context.Context, p jobs.CancelParams) ([]jobs.CancelResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	note := p.Note()
	out := make([]jobs.CancelResult, len(p.IDs))
	for i, id := range p.IDs {
		out[i].ID = id
		j := s.hot[id]
		for _, f := range []*jobs.Job{j, s.archive[id], s.dlq[id]} {
			if f != nil {
				out[i].Queue, out[i].Type = f.Queue, f.Type
			}
		}
		switch {
		case j == nil && (s.archive[id] != nil || s.dlq[id] != nil):
			out[i].Outcome = jobs.CancelAlreadyFinished
		case j == nil:
			out[i].Outcome = jobs.CancelNotFound
		case j.Status == jobs.StatusProcessing:
			if j.CancelRequestedAt.IsZero() { // the first request is the one kept
				j.CancelRequestedAt, j.CancelNote = now, note
			}
			out[i].Outcome = jobs.CancelRequested
		default: // Pending or Fetched: no user code ran
			j.CancelNote = note
			s.toDLQ(j, jobs.ReasonCancelled, "", now)
			out[i].Outcome = jobs.CancelDone
		}
	}
	return out, nil
}

// DeadLetter implements jobs.Store.
func (s *Store) DeadLetter(ctx context.Context, ref jobs.LeaseRef, p jobs.DeadLetterParams) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := p.Validate(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.deadLetter(ref, p, s.now(), nil)
}

// deadLetter is DeadLetter under s.mu, output the handler's (nil for none).
func (s *Store) deadLetter(ref jobs.LeaseRef, p jobs.DeadLetterParams, now time.Time, output json.RawMessage) error {
	j := s.owned(ref, jobs.StatusProcessing)
	if j == nil {
		return fmt.Errorf("memstore: dead-letter job %d lease %d: %w", ref.ID, ref.Lease, jobs.ErrLeaseLost)
	}
	s.toDLQ(j, p.Reason, p.Details, now)
	j.Output = bytes.Clone(output)
	return nil
}

// Release implements jobs.Store.
func (s *Store) Release(ctx context.Context, refs []jobs.LeaseRef) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	n := 0
	for _, ref := range refs {
		if j := s.owned(ref, jobs.StatusFetched); j != nil {
			s.queue(j.Queue).leave(j)
			toPending(j, now)
			s.pushPending(j, now)
			n++
		}
	}
	return n, nil
}

// toPending resets the worker-side fields of a hot job that goes back to
// Pending. ScheduledAt is left to the caller.
func toPending(j *jobs.Job, now time.Time) {
	j.Status = jobs.StatusPending
	j.WorkerID = ""
	j.StartedAt, j.HeartbeatAt, j.DeadlineAt, j.HeartbeatMax = time.Time{}, time.Time{}, time.Time{}, 0
	j.Progress, j.ProgressMessage = 0, ""
	j.LastUpdatedAt = now
}

// removeHot takes a job out of the hot set. A Pending job's entry in its
// queue's heaps goes stale and is skipped when popped.
func (s *Store) removeHot(j *jobs.Job) {
	// Hot jobs only, as on SQL Server.
	j.HeartbeatMax, j.TimeoutFrom, j.ZombieRetryCap, j.ZombieRetries = 0, jobs.SourceUnknown, 0, 0
	j.Progress, j.ProgressMessage = 0, ""
	s.exit(j)
	if j.IdempotencyKey != "" && s.idem[j.IdempotencyKey] == j.ID {
		delete(s.idem, j.IdempotencyKey)
	}
	if q := s.queue(j.Queue); j.Status == jobs.StatusPending {
		if t := s.tasks[j.ID]; t != nil && t.blocked {
			// waiting for a parent: in no Pending count (workflow.go); a
			// cancel took it, so it waits no more
			t.blocked = false
			q.waitingOnParents--
		} else {
			q.leavePending(j)
		}
	} else {
		q.leave(j)
	}
}

func (s *Store) toDLQ(j *jobs.Job, reason jobs.FailureReason, details string, now time.Time) {
	s.removeHot(j)
	j.Table = jobs.TableDLQ
	j.FinishedAt = now
	j.FailureReason = reason
	if reason == jobs.ReasonCancelled && j.CancelNote != "" {
		details = jobs.CancelledDetails(j.CancelNote, details)
	}
	j.ErrorDetails = details
	j.CancelRequestedAt, j.CancelNote = time.Time{}, ""
	s.enter(j)
	s.settleKey(j)
	s.logFinished(j)
	s.taskFailed(j, now)
}

// RescueFetched implements jobs.Store (phase 1).
func (s *Store) RescueFetched(ctx context.Context, p jobs.RescueParams) ([]jobs.Rescued, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	cutoff := now.Add(-p.Timeout)
	var cands []flightEntry
	for _, e := range s.fetched.popBefore(nanos(cutoff), s.isFetched) {
		if e.job.LastUpdatedAt.Before(cutoff) {
			cands = append(cands, e)
		} else {
			s.indexFetched(e.job)
		}
	}
	var out []jobs.Rescued
	for _, e := range s.takeLowestIDs(&s.fetched, s.isFetched, cands, p.RescueLimit()) {
		j := e.job
		out = append(out, jobs.Rescued{ID: j.ID, Queue: j.Queue, Type: j.Type, WorkerID: j.WorkerID, Lease: j.Lease, LastSeen: j.LastUpdatedAt, At: now})
		s.queue(j.Queue).leave(j)
		toPending(j, now)
		s.pushPending(j, now)
	}
	return out, nil
}

// takeLowestIDs returns the limit candidates of lowest ID, in ID order,
// and gives the others back to the index they came from (x, or each
// one's queue's beats when x is nil), whose live entries live tells:
// they stay candidates for the next call.
func (s *Store) takeLowestIDs(x *flightIndex, live func(flightEntry) bool, cands []flightEntry, limit int) []flightEntry {
	slices.SortFunc(cands, byID)
	if len(cands) <= limit {
		return cands
	}
	for _, e := range cands[limit:] {
		from := x
		if from == nil {
			from = &s.queue(e.job.Queue).beats
		}
		from.push(e, live)
	}
	return cands[:limit]
}

// RescueZombies implements jobs.Store (phase 2). Each queue's index gives
// the jobs silent for longer than the queue's timeout; a job's own floor
// (jobs.ZombieTimeout of its HeartbeatMax) can keep one of them in, and it
// is read again at the next call.
func (s *Store) RescueZombies(ctx context.Context, p jobs.RescueParams) ([]jobs.Rescued, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	type zombie struct {
		seen    time.Time
		timeout time.Duration
	}
	var cands []flightEntry
	found := map[*jobs.Job]zombie{}
	for _, q := range s.queues {
		queueTimeout := p.Timeout
		if q.settings.ZombieTimeout > 0 {
			queueTimeout = q.settings.ZombieTimeout
		}
		var back []flightEntry
		for _, e := range q.beats.popBefore(nanos(now.Add(-queueTimeout)), s.isProcessing) {
			j := e.job
			if _, twin := found[j]; twin {
				continue // a heartbeat that saw the clock go back indexed the job twice
			}
			timeout := jobs.ZombieTimeout(queueTimeout, j.HeartbeatMax)
			seen := lastSeen(j)
			if !seen.Before(now.Add(-timeout)) {
				back = append(back, flightEntry{job: j, lease: e.lease, at: nanos(seen)})
				continue
			}
			cands = append(cands, e)
			found[j] = zombie{seen: seen, timeout: timeout}
		}
		for _, e := range back {
			q.beats.push(e, s.isProcessing)
		}
	}
	var out []jobs.Rescued
	for _, e := range s.takeLowestIDs(nil, s.isProcessing, cands, p.RescueLimit()) {
		z := found[e.job]
		out = append(out, s.settleZombie(e.job, z.seen, z.timeout, now))
	}
	return out, nil
}

// settleZombie is phase 2's one decision for a silent Processing job: back
// to Pending under its kind's zombie policy (jobs.RecoversZombie) unless
// an operator asked to cancel it, its attempt spent and the recovery its
// last error, or to the DLQ as Zombie.
// The old lease dies either way: the job is no longer Processing, and its
// next claim hands out lease+1.
func (s *Store) settleZombie(j *jobs.Job, seen time.Time, timeout time.Duration, now time.Time) jobs.Rescued {
	r := jobs.Rescued{ID: j.ID, Queue: j.Queue, Type: j.Type, WorkerID: j.WorkerID, Lease: j.Lease, LastSeen: seen, Reason: jobs.ReasonZombie, At: now}
	if !jobs.RecoversZombie(j.ZombieRetryCap, j.ZombieRetries) || !j.CancelRequestedAt.IsZero() {
		s.toDLQ(j, jobs.ReasonZombie, jobs.ZombieDetails(seen, timeout, j.WorkerID), now)
		return r
	}
	j.ZombieRetries++
	j.LastError = jobs.RecoveredError(seen, timeout, j.WorkerID, j.ZombieRetries, j.ZombieRetryCap)
	s.queue(j.Queue).leave(j)
	toPending(j, now)
	j.ScheduledAt = now
	s.pushPending(j, now)
	r.Recovered = true
	return r
}

// RescueExpired implements jobs.Store (phase 3).
func (s *Store) RescueExpired(ctx context.Context, p jobs.RescueParams) ([]jobs.Rescued, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	var cands []flightEntry
	for _, e := range s.deadlines.popBefore(nanos(now), s.isProcessing) {
		if !e.job.DeadlineAt.IsZero() && e.job.DeadlineAt.Before(now) {
			cands = append(cands, e)
		}
	}
	var out []jobs.Rescued
	for _, e := range s.takeLowestIDs(&s.deadlines, s.isProcessing, cands, p.RescueLimit()) {
		j := e.job
		// A job whose cancel was requested and that ran on to its deadline
		// was cancelled: its handler ignored the request.
		reason := jobs.ReasonTimeout
		if !j.CancelRequestedAt.IsZero() {
			reason = jobs.ReasonCancelled
		}
		out = append(out, jobs.Rescued{ID: j.ID, Queue: j.Queue, Type: j.Type, WorkerID: j.WorkerID, Lease: j.Lease, LastSeen: j.DeadlineAt, Reason: reason, At: now})
		s.toDLQ(j, reason, jobs.DeadlineDetails(j.DeadlineAt, j.WorkerID), now)
	}
	return out, nil
}

// Resurrect implements jobs.Store.
func (s *Store) Resurrect(ctx context.Context, p jobs.ResurrectParams) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if err := jobs.CheckBulk(jobs.TableDLQ, p.Filter, p.All); err != nil {
		return 0, err
	}
	if p.Payload != nil && len(p.Payload) > s.limits.MaxPayload() {
		return 0, &jobs.ValidationError{Field: "payload", Value: p.Payload, Rule: fmt.Sprintf("must be at most %d bytes", s.limits.MaxPayload())}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	n := 0
	// Oldest first, as the SQL Server store walks: a key shared by several
	// dead letters goes to the one that died first.
	moving := s.matching(jobs.TableDLQ, p.Filter, now)
	slices.SortFunc(moving, func(a, b *jobs.Job) int {
		if c := a.FinishedAt.Compare(b.FinishedAt); c != 0 {
			return c
		}
		return compareInt64(a.ID, b.ID)
	})
	for _, j := range moving {
		s.exit(j)
		j.Table = jobs.TableHot
		toPending(j, now)
		j.AttemptCount, j.SnoozeCount = 0, 0
		j.ScheduledAt = now
		j.LastError = j.ErrorDetails
		j.ErrorDetails, j.FailureReason, j.FinishedAt = "", 0, time.Time{}
		j.Output = nil // archive and DLQ only, as on SQL Server
		if p.Payload != nil {
			j.Payload = bytes.Clone(p.Payload)
		}
		if j.IdempotencyKey != "" {
			if _, taken := s.idem[j.IdempotencyKey]; taken {
				j.IdempotencyKey = "" // an active job holds the key now; keys are unique among active jobs
			} else {
				s.idem[j.IdempotencyKey] = j.ID
			}
		}
		s.retakeKey(j)
		s.enter(j)
		if _, isTask := s.tasks[j.ID]; isTask {
			s.taskResurrected(j, now) // claimable, or waiting for a parent still hot
		} else {
			s.pushPending(j, now)
		}
		n++
	}
	return n, nil
}

// Purge implements jobs.Store.
func (s *Store) Purge(ctx context.Context, p jobs.PurgeParams) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if p.Table != jobs.TableArchive && p.Table != jobs.TableDLQ {
		return 0, &jobs.ValidationError{Field: "table", Value: p.Table, Rule: "purge applies to archive or dlq"}
	}
	if err := jobs.CheckBulk(p.Table, p.Filter, p.All); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if isTrim(p) {
		n, _ := s.trimOldest(p.Table, p.Filter.Queue, s.now().Add(-p.Filter.OlderThan), p.Limit)
		return n, nil
	}
	matched := s.matching(p.Table, p.Filter, s.now())
	if p.Limit > 0 && len(matched) > p.Limit { // the oldest first, as SQL Server walks
		slices.SortFunc(matched, func(a, b *jobs.Job) int {
			if c := a.FinishedAt.Compare(b.FinishedAt); c != 0 {
				return c
			}
			return compareInt64(a.ID, b.ID)
		})
		matched = matched[:p.Limit]
	}
	now := s.now()
	for _, j := range matched {
		s.exit(j)
		s.dropKey(j)
		s.taskGone(j, now)
	}
	return len(matched), nil
}

func (s *Store) table(t jobs.Table) map[int64]*jobs.Job {
	switch t {
	case jobs.TableArchive:
		return s.archive
	case jobs.TableDLQ:
		return s.dlq
	}
	return s.hot
}

// matching returns the jobs of table t that f selects, newest first.
func (s *Store) matching(t jobs.Table, f jobs.Filter, now time.Time) []*jobs.Job {
	var out []*jobs.Job
	s.each(t, f, now, func(j *jobs.Job) { out = append(out, j) })
	slices.SortFunc(out, func(a, b *jobs.Job) int { return compareInt64(b.ID, a.ID) })
	return out
}

// each calls fn for every job of table t that f selects, in no order. A
// filter by IDs looks its jobs up; any other walks the table.
func (s *Store) each(t jobs.Table, f jobs.Filter, now time.Time, fn func(*jobs.Job)) {
	m := s.table(t)
	if len(f.IDs) > 0 {
		seen := make(map[int64]bool, len(f.IDs))
		for _, id := range f.IDs {
			if j := m[id]; j != nil && !seen[id] && matches(j, f, now) {
				seen[id] = true
				fn(j)
			}
		}
		return
	}
	for _, j := range m {
		if matches(j, f, now) {
			fn(j)
		}
	}
}

func matches(j *jobs.Job, f jobs.Filter, now time.Time) bool {
	if f.Queue != "" && jobs.QueueKey(j.Queue) != jobs.QueueKey(f.Queue) {
		return false
	}
	if f.Type != "" && j.Type != f.Type {
		return false
	}
	if f.Status != nil && j.Status != *f.Status {
		return false
	}
	if f.Reason != nil && j.FailureReason != *f.Reason {
		return false
	}
	at := j.CreatedAt
	if j.Table != jobs.TableHot {
		at = j.FinishedAt
	}
	if !f.From.IsZero() && at.Before(f.From) {
		return false
	}
	if !f.To.IsZero() && !at.Before(f.To) {
		return false
	}
	if f.OlderThan > 0 && !at.Before(now.Add(-f.OlderThan)) {
		return false
	}
	if f.Text != "" {
		t := strings.ToLower(f.Text)
		if !strings.Contains(strings.ToLower(j.Type), t) &&
			!strings.Contains(strings.ToLower(j.LastError), t) &&
			!strings.Contains(strings.ToLower(j.ErrorDetails), t) &&
			!bytes.Contains(j.Payload, []byte(f.Text)) {
			return false
		}
	}
	return true
}

// GetJob implements jobs.Store.
func (s *Store) GetJob(ctx context.Context, id int64) (*jobs.Job, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range []map[int64]*jobs.Job{s.hot, s.archive, s.dlq} {
		if j, ok := m[id]; ok {
			return j.Clone(), nil
		}
	}
	return nil, fmt.Errorf("memstore: job %d: %w", id, jobs.ErrJobNotFound)
}

// ListJobs implements jobs.Store. It reads the newest matches (eachNewest),
// keeping the page's in a bounded heap, instead of sorting every match.
func (s *Store) ListJobs(ctx context.Context, p jobs.ListParams) (jobs.JobPage, error) {
	if err := ctx.Err(); err != nil {
		return jobs.JobPage{}, err
	}
	if err := p.Filter.Validate(p.Table); err != nil {
		return jobs.JobPage{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	limit := p.PageLimit()
	// newest holds up to limit+1 matches, the oldest of them on top: one
	// more than the page tells whether a next page exists.
	newest := &jobHeap{less: func(a, b *jobs.Job) bool { return a.ID < b.ID }}
	s.eachNewest(p.Table, p.Filter, p.BeforeID, limit+1, s.now(), func(j *jobs.Job) {
		if newest.Len() <= limit {
			newest.push(j)
		} else if j.ID > newest.peek().ID {
			newest.items[0] = j
			heap.Fix(newest, 0)
		}
	})
	found := newest.items
	slices.SortFunc(found, func(a, b *jobs.Job) int { return compareInt64(b.ID, a.ID) })
	var page jobs.JobPage
	for _, j := range found[:min(len(found), limit)] {
		page.Jobs = append(page.Jobs, j.Clone())
	}
	if len(found) > limit {
		page.NextBeforeID = page.Jobs[limit-1].ID
	}
	return page, nil
}

// CountJobs implements jobs.Store.
func (s *Store) CountJobs(ctx context.Context, t jobs.Table, f jobs.Filter) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if err := f.Validate(t); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if n, ok := s.countKept(t, f); ok {
		return n, nil
	}
	var n int64
	s.each(t, f, s.now(), func(*jobs.Job) { n++ })
	return n, nil
}

// Queues implements jobs.Store.
func (s *Store) Queues(ctx context.Context) ([]jobs.QueueSettings, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []jobs.QueueSettings
	for _, q := range s.queues {
		if q.hasRow {
			out = append(out, q.settings)
		}
	}
	slices.SortFunc(out, func(a, b jobs.QueueSettings) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// UpdateQueue implements jobs.Store.
func (s *Store) UpdateQueue(ctx context.Context, name string, u jobs.QueueUpdate) (jobs.QueueSettings, error) {
	if err := ctx.Err(); err != nil {
		return jobs.QueueSettings{}, err
	}
	if err := jobs.ValidateQueueName(name); err != nil {
		return jobs.QueueSettings{}, err
	}
	if err := u.Validate(); err != nil {
		return jobs.QueueSettings{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queue(name)
	if !q.hasRow { // the row is created with the name it is given, as a row is inserted
		q.settings.Name = name
	}
	q.settings = u.Apply(q.settings)
	q.hasRow = true
	q.unparkAll()
	return q.settings, nil
}

// QueueDepths implements jobs.Store.
func (s *Store) QueueDepths(ctx context.Context, queues []string, limit int) ([]jobs.QueueDepth, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := jobs.ValidateDepthParams(queues, limit); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// Each queue's counts are kept as its jobs move: no walk.
	out := make([]jobs.QueueDepth, 0, len(queues))
	c := func(n int) int64 { return int64(min(n, limit)) }
	for _, name := range jobs.UniqueQueues(queues) {
		d := jobs.QueueDepth{Queue: name}
		if q := s.queueOf(name); q != nil {
			d.Pending, d.Fetched, d.Processing = c(q.counts[jobs.StatusPending]), c(q.counts[jobs.StatusFetched]), c(q.counts[jobs.StatusProcessing])
		}
		out = append(out, d)
	}
	return out, nil
}

// Now implements jobs.Store.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, err
	}
	return s.now(), nil
}

func compareInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
