package sqlserver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

// doctorFamily is one family of the store's statements the doctor runs,
// through the store's own methods, in its private queue inside its
// transaction. statements names the statements of render the family sends:
// TestDoctorNamesEveryStatement holds every statement to a family, to one
// of doctorCheckStatements or to doctorNotExercised, so a new statement
// has no place until it is given one here.
type doctorFamily struct {
	name       string
	statements func(q *queries) []string
	run        func(d *doctorRun, ctx context.Context) (string, error)
}

var doctorFamilies = []doctorFamily{
	{"enqueue", func(q *queries) []string { return []string{q.enqueueBatch} }, (*doctorRun).familyEnqueue},
	{"keyed enqueue", func(q *queries) []string { return []string{q.enqueueKeyed, q.enqueueKeyedTx} }, (*doctorRun).familyKeyed},
	{"unique enqueue", func(q *queries) []string { return []string{q.enqueueUnique, q.enqueueUniqueTx, q.lockEnqueueKeys} }, (*doctorRun).familyUnique},
	{"claim", func(q *queries) []string { return []string{q.dueProbe, q.claim, q.adoptClaim, q.doctorLocks} }, (*doctorRun).familyClaim},
	{"release", func(q *queries) []string { return []string{q.release} }, (*doctorRun).familyRelease},
	{"start", func(q *queries) []string { return []string{q.start} }, (*doctorRun).familyStart},
	{"heartbeat", func(q *queries) []string { return []string{q.heartbeat, q.heartbeatProgress} }, (*doctorRun).familyHeartbeat},
	{"complete", func(q *queries) []string { return []string{q.complete} }, (*doctorRun).familyComplete},
	{"retry", func(q *queries) []string { return []string{q.transition} }, (*doctorRun).familyRetry},
	{"dead letter", func(q *queries) []string { return []string{q.deadLetter} }, (*doctorRun).familyDeadLetter},
	{"snooze", func(q *queries) []string { return []string{q.snooze} }, (*doctorRun).familySnooze},
	{"cancel", func(q *queries) []string { return []string{q.cancel, q.heartbeat} }, (*doctorRun).familyCancel},
	{"batch transition", func(q *queries) []string { return []string{q.transition} }, (*doctorRun).familyTransition},
	{"resurrect", func(q *queries) []string { return []string{q.now, q.resurrect} }, (*doctorRun).familyResurrect},
	{"operator reads", func(q *queries) []string {
		return slices.Concat([]string{q.getJob, q.queueDepths, q.queueStats, q.finishedCounts, q.now},
			tableStatements(q.list), tableStatements(q.count), tableStatements(q.tableQueues))
	}, (*doctorRun).familyReads},
	{"purge", func(q *queries) []string { return append([]string{q.now}, tableStatements(q.purge)...) }, (*doctorRun).familyPurge},
	{"trim", func(q *queries) []string { return tableStatements(q.trim) }, (*doctorRun).familyTrim},
	{"queue settings", func(q *queries) []string { return []string{q.updateQueue, q.queues, q.claim} }, (*doctorRun).familyQueueSettings},
	{"schedules", func(q *queries) []string {
		return []string{q.syncSchedules, q.now, q.fireSchedule, q.enqueueKeyedTx, q.pauseSchedule, q.schedules, q.deleteSchedule}
	}, (*doctorRun).familySchedules},
	{"flow control", func(q *queries) []string {
		return []string{q.updateQueue, q.enqueueBatch, q.claim, q.queueStats, q.release}
	}, (*doctorRun).familyFlow},
	{"rate limit", func(q *queries) []string {
		return []string{q.updateQueue, q.enqueueBatch, q.claim, q.queueStats, q.dueProbe}
	}, (*doctorRun).familyRate},
	// Last: from its fan-out on, the doctor's transaction holds the
	// workflow lock, which every other process's fan-out and release step
	// waits for or skips until the rollback.
	{"workflows", func(q *queries) []string {
		return []string{q.insertWorkflowTasks, q.claim, q.start, q.addTasksBegin, q.complete, q.releaseTasks, q.workflows, q.getWorkflow, q.cancel}
	}, (*doctorRun).familyWorkflow},
}

// doctorCheckStatements are the statements the doctor's checks send
// outside its transaction (and the transaction's state, read after every
// step inside it).
func doctorCheckStatements(q *queries) []string {
	return slices.Concat([]string{q.serverLevel, q.caseSensitiveNames, q.doctorServer, q.doctorDatabase, q.doctorPrivileges, q.now,
		q.probeType, q.probeSequence, q.tryAppLock, q.appLockMode, q.releaseAppLock, q.doctorLocks, q.doctorTranState,
		q.queues, q.schedules, q.getWorkflow}, slices.Collect(maps.Values(q.probes)), tableStatements(q.count))
}

// doctorNotExercised are the statements the doctor does not run, and why;
// the report lists them.
var doctorNotExercised = []struct {
	statements func(q *queries) []string
	what, why  string
}{
	{func(q *queries) []string { return []string{q.rescueFetched, q.rescueZombies, q.rescueExpired} },
		"rescue phases 1, 2 and 3",
		"they are not queue-scoped: inside the doctor's transaction they would move production jobs, and hold them until its rollback"},
	{func(q *queries) []string { return []string{q.jobByKey} },
		"the read of a key's job after a keyed insert lost its key",
		"it runs only when a resurrect takes the key between the keyed enqueue's check and its insert, a race one transaction cannot stage"},
	{func(q *queries) []string { return []string{q.ageForTest, q.resetForTest} },
		"the contract tests' hooks",
		"they change every row of the schema"},
}

func notExercisedReport() []NotExercised {
	out := make([]NotExercised, len(doctorNotExercised))
	for i, n := range doctorNotExercised {
		out[i] = NotExercised{Statements: n.what, Reason: n.why}
	}
	return out
}

func tableStatements(m map[jobs.Table]string) []string {
	return slices.Collect(maps.Values(m))
}

// doctorJobs is where the doctor's jobs are, as the families move them.
type doctorJobs struct {
	due, later      []int64 // Pending: due now, due in an hour
	fetched         []jobs.LeaseRef
	running, marked []jobs.LeaseRef // Processing; marked: its cancel requested
	archived, dead  []int64
}

func (j doctorJobs) hot() int {
	return len(j.due) + len(j.later) + len(j.fetched) + len(j.running) + len(j.marked)
}

// take removes and returns the first n of *from.
func take[T any](from *[]T, n int) []T {
	got := slices.Clone((*from)[:n])
	*from = (*from)[n:]
	return got
}

// notRunError: a family found too few jobs where it needed them, because
// a family before it failed.
type notRunError struct{ why string }

func (e *notRunError) Error() string { return "not run: " + e.why }

func need(have, want int, what string) error {
	if have < want {
		return &notRunError{fmt.Sprintf("needs %d %s, and the families before it left %d", want, what, have)}
	}
	return nil
}

// runFamilies runs every family in one transaction and rolls it back.
func (d *doctorRun) runFamilies(ctx context.Context) {
	d.canReadLocks(ctx)
	tx, err := d.base.pool.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		d.failed("statements", fmt.Errorf("sqlserver: open the doctor's transaction: %w", err))
		return
	}
	d.tx, d.st = tx, d.base.on(tx)
	d.st.newClaimID = func() int64 { d.claimID = d.base.newClaimID(); return d.claimID }
	for _, f := range doctorFamilies {
		name := "statements: " + f.name
		d.opts.step(name)
		if d.ended {
			d.notRun(name, "the doctor's transaction ended (see above), and nothing may run outside it")
			continue
		}
		detail, err := f.run(d, ctx)
		var nr *notRunError
		switch {
		case errors.As(err, &nr):
			d.notRun(name, nr.why)
		case err != nil:
			if d.ended {
				err = fmt.Errorf("%w (the doctor's transaction ended here: the families after this did not run)", err)
			}
			d.failed(name, err)
		default:
			d.ok(name, detail)
		}
		for _, c := range d.extra {
			d.add(c)
		}
		d.extra = nil
	}
	d.opts.step("rollback")
	if err := tx.Rollback(); err != nil && !d.ended && !errors.Is(err, sql.ErrTxDone) {
		d.failed("rollback", fmt.Errorf("sqlserver: roll back the doctor's transaction: %w", err))
	}
	// The look for leftovers runs also when the doctor was stopped or ran
	// out of time: that is when it matters most.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	d.checkLeftovers(ctx)
}

// after reads the transaction's state once a store call returned: an error
// under XACT_ABORT, a THROW or a deadlock rolls back the doctor's
// transaction with the statement's own, and whatever ran next would
// commit. A step that left a transaction of its own open is as bad.
func (d *doctorRun) after(ctx context.Context, err error) error {
	var n, state int64
	qerr := d.tx.QueryRowContext(ctx, d.base.q.doctorTranState).Scan(&n, &state)
	if qerr == nil && n == 1 && state == 1 {
		return err
	}
	d.ended = true
	if err != nil {
		return err
	}
	if qerr != nil {
		return fmt.Errorf("sqlserver: read the doctor's transaction state: %w", qerr)
	}
	return fmt.Errorf("sqlserver: after a statement that reported no error, @@TRANCOUNT is %d and XACT_STATE() %d, not 1 and 1", n, state)
}

// job is a job of the doctor's queue, due after delay.
func (d *doctorRun) job(delay time.Duration) jobs.EnqueueParams {
	return jobs.EnqueueParams{Queue: d.queue, Type: "chokaq.doctor", Payload: []byte(`{"doctor":true}`), Delay: delay,
		CreatedBy: "chokaq doctor", MaxAttempts: 3}
}

func (d *doctorRun) familyEnqueue(ctx context.Context) (string, error) {
	one, err := d.st.Enqueue(ctx, d.job(0))
	if err := d.after(ctx, err); err != nil {
		return "", err
	}
	batch := make([]jobs.EnqueueParams, doctorClaim+8)
	for i := range batch {
		batch[i] = d.job(0)
	}
	many, err := d.st.EnqueueMany(ctx, batch)
	if err := d.after(ctx, err); err != nil {
		return "", err
	}
	ids := []int64{one.ID}
	for _, r := range many {
		ids = append(ids, r.ID)
	}
	if slices.Contains(ids, 0) || len(slices.Compact(slices.Sorted(slices.Values(ids)))) != len(ids) {
		return "", fmt.Errorf("sqlserver: the enqueues returned the IDs %v, not %d distinct ones", ids, len(ids))
	}
	d.jobs.due = append(d.jobs.due, ids...)
	return fmt.Sprintf("%d jobs: one alone and %d in one batch, their IDs from the sequence", len(ids), len(many)), nil
}

func (d *doctorRun) familyKeyed(ctx context.Context) (string, error) {
	keyed := d.job(time.Hour)
	keyed.IdempotencyKey = d.key + "1"
	first, err := d.st.Enqueue(ctx, keyed)
	if err := d.after(ctx, err); err != nil {
		return "", err
	}
	again, err := d.st.Enqueue(ctx, keyed)
	if err := d.after(ctx, err); err != nil {
		return "", err
	}
	if first.Duplicate || !again.Duplicate || again.ID != first.ID {
		return "", fmt.Errorf("sqlserver: a key enqueued twice gave %+v, then %+v: the second should find the first", first, again)
	}
	inTx := d.job(time.Hour)
	inTx.IdempotencyKey = d.key + "2"
	third, err := d.base.EnqueueTx(ctx, d.tx, inTx)
	if err := d.after(ctx, err); err != nil {
		return "", err
	}
	d.jobs.later = append(d.jobs.later, first.ID, third.ID)
	return "a job with a key; the same key again, which found that job; a keyed job inside the caller's transaction (EnqueueTx)", nil
}

// familyUnique enqueues a unique job, then its duplicate alone, inside
// the caller's transaction and in a batch (which locks its keys first):
// each finds the first. The key is the doctor's own (its queue), so no
// job of the application's can be its holder.
func (d *doctorRun) familyUnique(ctx context.Context) (string, error) {
	u := d.job(time.Hour)
	u.Unique = &jobs.UniqueOpts{ByArgs: true, ByQueue: true, Period: time.Hour}
	first, err := d.st.Enqueue(ctx, u)
	if err := d.after(ctx, err); err != nil {
		return "", err
	}
	again, err := d.st.Enqueue(ctx, u)
	if err := d.after(ctx, err); err != nil {
		return "", err
	}
	inTx, err := d.base.EnqueueTx(ctx, d.tx, u)
	if err := d.after(ctx, err); err != nil {
		return "", err
	}
	other := d.job(time.Hour)
	other.Unique = &jobs.UniqueOpts{ByQueue: true}
	many, err := d.st.EnqueueMany(ctx, []jobs.EnqueueParams{u, other, other})
	if err := d.after(ctx, err); err != nil {
		return "", err
	}
	dups := []jobs.EnqueueResult{again, inTx, many[0]}
	for _, r := range dups {
		if first.Duplicate || !r.Duplicate || r.ID != first.ID {
			return "", fmt.Errorf("sqlserver: a unique job enqueued again gave %+v after %+v: it should find the first", r, first)
		}
	}
	if many[1].Duplicate || !many[2].Duplicate || many[2].ID != many[1].ID {
		return "", fmt.Errorf("sqlserver: a batch with one unique key twice gave %+v and %+v: the second should find the first", many[1], many[2])
	}
	d.jobs.later = append(d.jobs.later, first.ID, many[1].ID)
	return "a unique job; its duplicate alone, in the caller's transaction (EnqueueTx) and in a batch that locked its keys first, each finding it", nil
}

func (d *doctorRun) familyClaim(ctx context.Context) (string, error) {
	if err := need(len(d.jobs.due), doctorClaim, "due jobs"); err != nil {
		return "", err
	}
	var before map[lockGroup]int64
	if d.lockErr == nil {
		var err error
		before, err = d.readLocks(ctx, d.tx)
		if err := d.after(ctx, err); err != nil {
			return "", err
		}
	}
	due, err := d.st.Probe(ctx, []string{d.queue})
	if err := d.after(ctx, err); err != nil {
		return "", err
	}
	if !due {
		return "", fmt.Errorf("sqlserver: the probe of an idle processor found none of the queue's %d due jobs", len(d.jobs.due))
	}
	got, err := d.st.Claim(ctx, jobs.ClaimParams{WorkerID: d.worker, Queues: []string{d.queue}, Limit: doctorClaim})
	if err := d.after(ctx, err); err != nil {
		return "", err
	}
	if len(got) != doctorClaim {
		return "", fmt.Errorf("sqlserver: a claim of %d found %d of the queue's %d due jobs", doctorClaim, len(got), len(d.jobs.due))
	}
	if err := d.checkClaimLocks(ctx, before, len(got)); err != nil {
		return "", err
	}
	adopted, err := d.st.adoptClaim(ctx, d.worker, d.claimID)
	if err := d.after(ctx, err); err != nil {
		return "", err
	}
	if !slices.Equal(jobIDs(adopted), jobIDs(got)) {
		return "", fmt.Errorf("sqlserver: the claim took %v, and a retry would adopt %v", jobIDs(got), jobIDs(adopted))
	}
	for _, j := range got {
		d.jobs.fetched = append(d.jobs.fetched, j.Ref())
		d.jobs.due = slices.DeleteFunc(d.jobs.due, func(id int64) bool { return id == j.ID })
	}
	return fmt.Sprintf("the probe saw due jobs; %d claimed in one statement, then read back by the claim's id as a retried claim adopts them", len(got)), nil
}

// intentModes are the table, partition and page locks that say only that
// rows below are locked.
var intentModes = []string{"IS", "IU", "IX", "Sch-S"}

// checkClaimLocks reads what the claim added to the doctor's locks: no lock
// on a table, a partition or a page (which READPAST cannot skip: every
// other claimer would wait), and key locks in proportion to the rows.
func (d *doctorRun) checkClaimLocks(ctx context.Context, before map[lockGroup]int64, claimed int) error {
	const name = "claim locks"
	if d.lockErr != nil {
		if n := errNumber(d.lockErr); n == 297 || n == 300 || n == 229 || n == 262 {
			d.extra = append(d.extra, DoctorCheck{Name: name, Status: CheckWarning, ErrorNumber: n,
				Detail: fmt.Sprintf("not checked: this login may not read sys.dm_tran_locks (%v)", d.lockErr),
				Remedy: fmt.Sprintf("to check the locks a claim holds, run the doctor as a login with %s (or as the owner)", d.lockPermission)})
			return nil
		}
		n, remedy := d.remedy(d.lockErr)
		d.extra = append(d.extra, DoctorCheck{Name: name, Status: CheckFailed, Detail: d.lockErr.Error(), ErrorNumber: n, Remedy: remedy})
		return nil
	}
	after, err := d.readLocks(ctx, d.tx)
	if err := d.after(ctx, err); err != nil {
		return err
	}
	var wrong, added []string
	keys := int64(0)
	for _, g := range slices.SortedFunc(maps.Keys(after), func(a, b lockGroup) int { return strings.Compare(a.typ+a.object+a.mode, b.typ+b.object+b.mode) }) {
		more := after[g] - before[g]
		switch {
		case (g.typ == "OBJECT" || g.typ == "HOBT" || g.typ == "PAGE") && !slices.Contains(intentModes, g.mode):
			wrong = append(wrong, fmt.Sprintf("%s %s on %s", g.mode, strings.ToLower(g.typ), g.object))
		case (g.typ == "KEY" || g.typ == "RID") && more > 0:
			keys += more
			added = append(added, fmt.Sprintf("%s %s +%d", g.object, g.mode, more))
		}
	}
	switch {
	case len(wrong) > 0:
		d.extra = append(d.extra, DoctorCheck{Name: name, Status: CheckFailed,
			Detail: fmt.Sprintf("after a claim of %d the doctor's transaction holds %s: READPAST cannot skip it, so every other claimer waits", claimed, strings.Join(wrong, ", ")),
			Remedy: "an escalation or a plan without row locks: look at the claim's plan (ADR 0016 gives the indexes it must seek)"})
	case keys > int64(10*claimed):
		d.extra = append(d.extra, DoctorCheck{Name: name, Status: CheckFailed,
			Detail: fmt.Sprintf("a claim of %d added %d key locks (%s): more than 10 a row", claimed, keys, strings.Join(added, ", ")),
			Remedy: "the claim read more rows than it took: look at its plan (ADR 0016 gives the indexes it must seek)"})
	default:
		d.extra = append(d.extra, DoctorCheck{Name: name, Status: CheckOK,
			Detail: fmt.Sprintf("a claim of %d added %d key locks (%s), and no lock on a table, a partition or a page", claimed, keys, strings.Join(added, ", "))})
	}
	return nil
}

func (d *doctorRun) familyRelease(ctx context.Context) (string, error) {
	if err := need(len(d.jobs.fetched), 2, "fetched jobs"); err != nil {
		return "", err
	}
	refs := take(&d.jobs.fetched, 2)
	n, err := d.st.Release(ctx, refs)
	if err := d.after(ctx, err); err != nil {
		return "", err
	}
	if n != len(refs) {
		return "", fmt.Errorf("sqlserver: released %d of %d fetched jobs", n, len(refs))
	}
	for _, r := range refs {
		d.jobs.due = append(d.jobs.due, r.ID)
	}
	return fmt.Sprintf("%d fetched jobs given back to Pending", n), nil
}

// doctorStarts is how many jobs the start family starts one by one.
const doctorStarts = 7

func (d *doctorRun) familyStart(ctx context.Context) (string, error) {
	if err := need(len(d.jobs.fetched), doctorStarts, "fetched jobs"); err != nil {
		return "", err
	}
	for i, ref := range take(&d.jobs.fetched, doctorStarts) {
		// The last one as a kind with its own policy would (ADR 0029):
		// its timeout wins over the default, and its zombie policy is
		// recorded.
		p, want, from := jobs.StartParams{DefaultTimeout: time.Hour}, time.Hour, jobs.SourceDefault
		if i == doctorStarts-1 {
			p.Timeout, p.TimeoutFrom, p.ZombieRetryCap, want, from = 30*time.Minute, jobs.SourceKind, 1, 30*time.Minute, jobs.SourceKind
		}
		st, err := d.st.Start(ctx, ref, p)
		if err := d.after(ctx, err); err != nil {
			return "", err
		}
		if st.AttemptCount != 1 || st.Timeout != want || st.TimeoutFrom != from {
			return "", fmt.Errorf("sqlserver: job %d started as attempt %d with a timeout of %v from %s, not attempt 1 of %v from %s",
				ref.ID, st.AttemptCount, st.Timeout, st.TimeoutFrom, want, from)
		}
		d.jobs.running = append(d.jobs.running, ref)
	}
	return fmt.Sprintf("%d fetched jobs started, one statement each: attempt 1, deadline in an hour (the default), the last in 30 minutes (a kind's timeout)", doctorStarts), nil
}

func (d *doctorRun) familyHeartbeat(ctx context.Context) (string, error) {
	if err := need(len(d.jobs.running), 1, "running jobs"); err != nil {
		return "", err
	}
	r, err := d.st.Heartbeat(ctx, d.jobs.running)
	if err := d.after(ctx, err); err != nil {
		return "", err
	}
	if len(r.Lost) > 0 || len(r.CancelRequested) > 0 {
		return "", fmt.Errorf("sqlserver: a heartbeat of %d running jobs lost %v and found cancels requested for %v", len(d.jobs.running), r.Lost, r.CancelRequested)
	}
	first := d.jobs.running[0]
	r, err = d.st.HeartbeatProgress(ctx, d.jobs.running, []jobs.ProgressItem{{Ref: first, Fraction: 0.5, Message: "chokaq doctor"}})
	if err := d.after(ctx, err); err != nil {
		return "", err
	}
	if len(r.Lost) > 0 {
		return "", fmt.Errorf("sqlserver: a heartbeat with progress of %d running jobs lost %v", len(d.jobs.running), r.Lost)
	}
	return fmt.Sprintf("%d running jobs beat in one statement, then again with job %d's progress", len(d.jobs.running), first.ID), nil
}

// settle moves the first running job with op, and files it under to.
func (d *doctorRun) settle(ctx context.Context, op func(jobs.LeaseRef) error, to *[]int64) (jobs.LeaseRef, error) {
	if err := need(len(d.jobs.running), 1, "running jobs"); err != nil {
		return jobs.LeaseRef{}, err
	}
	ref := take(&d.jobs.running, 1)[0]
	if err := d.after(ctx, op(ref)); err != nil {
		return ref, err
	}
	*to = append(*to, ref.ID)
	return ref, nil
}

func (d *doctorRun) familyComplete(ctx context.Context) (string, error) {
	ref, err := d.settle(ctx, func(r jobs.LeaseRef) error { return d.st.Complete(ctx, r) }, &d.jobs.archived)
	return fmt.Sprintf("job %d moved to the archive", ref.ID), err
}

func (d *doctorRun) familyRetry(ctx context.Context) (string, error) {
	ref, err := d.settle(ctx, func(r jobs.LeaseRef) error {
		return d.st.Retry(ctx, r, jobs.RetryParams{Delay: time.Hour, Error: "chokaq doctor: retry"})
	}, &d.jobs.later)
	return fmt.Sprintf("job %d back to Pending, due in an hour", ref.ID), err
}

func (d *doctorRun) familyDeadLetter(ctx context.Context) (string, error) {
	ref, err := d.settle(ctx, func(r jobs.LeaseRef) error {
		return d.st.DeadLetter(ctx, r, jobs.DeadLetterParams{Reason: jobs.ReasonFatal, Details: "chokaq doctor: dead letter"})
	}, &d.jobs.dead)
	return fmt.Sprintf("job %d moved to the dead-letter table as Fatal", ref.ID), err
}

func (d *doctorRun) familySnooze(ctx context.Context) (string, error) {
	ref, err := d.settle(ctx, func(r jobs.LeaseRef) error { return d.st.Snooze(ctx, r, jobs.SnoozeParams{Delay: time.Hour}) }, &d.jobs.later)
	return fmt.Sprintf("job %d snoozed for an hour, its attempt given back", ref.ID), err
}

func (d *doctorRun) familyCancel(ctx context.Context) (string, error) {
	if err := cmpOr(need(len(d.jobs.later), 1, "pending jobs"), need(len(d.jobs.running), 1, "running jobs")); err != nil {
		return "", err
	}
	pending, running := d.jobs.later[0], d.jobs.running[0]
	got, err := d.st.Cancel(ctx, jobs.CancelParams{IDs: []int64{pending, running.ID}, By: "chokaq doctor", Reason: "a check"})
	if err := d.after(ctx, err); err != nil {
		return "", err
	}
	if len(got) != 2 || got[0].Outcome != jobs.CancelDone || got[1].Outcome != jobs.CancelRequested {
		return "", fmt.Errorf("sqlserver: a cancel of a pending and a running job gave %+v, not cancelled and cancel requested", got)
	}
	beat, err := d.st.Heartbeat(ctx, []jobs.LeaseRef{running})
	if err := d.after(ctx, err); err != nil {
		return "", err
	}
	if !slices.Equal(beat.CancelRequested, []jobs.LeaseRef{running}) {
		return "", fmt.Errorf("sqlserver: the heartbeat of job %d after its cancel was requested said %+v", running.ID, beat)
	}
	d.jobs.later, d.jobs.running = d.jobs.later[1:], d.jobs.running[1:]
	d.jobs.dead, d.jobs.marked = append(d.jobs.dead, pending), append(d.jobs.marked, running)
	return fmt.Sprintf("pending job %d cancelled; running job %d asked to stop, which its next heartbeat reported", pending, running.ID), nil
}

func (d *doctorRun) familyTransition(ctx context.Context) (string, error) {
	if err := cmpOr(cmpOr(need(len(d.jobs.fetched), 4, "fetched jobs"), need(len(d.jobs.running), 2, "running jobs")),
		need(len(d.jobs.marked), 1, "jobs whose cancel was requested")); err != nil {
		return "", err
	}
	starts, running, marked := take(&d.jobs.fetched, 4), take(&d.jobs.running, 2), take(&d.jobs.marked, 1)
	r, err := d.st.Transition(ctx, jobs.Transitions{Starts: starts, StartParams: jobs.StartParams{DefaultTimeout: time.Hour},
		Completes:   running[:1],
		Retries:     []jobs.RetryItem{{Ref: running[1], Params: jobs.RetryParams{Delay: time.Hour, Error: "chokaq doctor: retry"}}},
		DeadLetters: []jobs.DeadLetterItem{{Ref: marked[0], Params: jobs.DeadLetterParams{Reason: jobs.ReasonFatal, Details: "chokaq doctor"}}}})
	if err := d.after(ctx, err); err != nil {
		return "", err
	}
	var lost []error
	for _, s := range r.Starts {
		lost = append(lost, s.Err)
	}
	if err := errors.Join(slices.Concat(lost, r.Completes, r.Retries, r.DeadLetters)...); err != nil {
		return "", err
	}
	d.jobs.running = append(d.jobs.running, starts...)
	d.jobs.archived, d.jobs.later = append(d.jobs.archived, running[0].ID), append(d.jobs.later, running[1].ID)
	d.jobs.dead = append(d.jobs.dead, marked[0].ID)
	return "in one round trip: 4 starts, a complete, a retry and the dead letter of the job whose cancel was requested", nil
}

func (d *doctorRun) familyResurrect(ctx context.Context) (string, error) {
	if err := need(len(d.jobs.dead), 1, "dead letters"); err != nil {
		return "", err
	}
	id := d.jobs.dead[0]
	n, err := d.st.Resurrect(ctx, jobs.ResurrectParams{Filter: jobs.Filter{Queue: d.queue, IDs: []int64{id}}})
	if err := d.after(ctx, err); err != nil {
		return "", err
	}
	if n != 1 {
		return "", fmt.Errorf("sqlserver: a resurrect of dead letter %d moved %d jobs", id, n)
	}
	d.jobs.dead, d.jobs.due = d.jobs.dead[1:], append(d.jobs.due, id)
	return fmt.Sprintf("dead letter %d back to Pending", id), nil
}

func (d *doctorRun) familyReads(ctx context.Context) (string, error) {
	want := map[jobs.Table]int{jobs.TableHot: d.jobs.hot(), jobs.TableArchive: len(d.jobs.archived), jobs.TableDLQ: len(d.jobs.dead)}
	for _, t := range []jobs.Table{jobs.TableHot, jobs.TableArchive, jobs.TableDLQ} {
		f := jobs.Filter{Queue: d.queue}
		page, err := d.st.ListJobs(ctx, jobs.ListParams{Table: t, Filter: f, Limit: 100})
		if err := d.after(ctx, err); err != nil {
			return "", err
		}
		n, err := d.st.CountJobs(ctx, t, f)
		if err := d.after(ctx, err); err != nil {
			return "", err
		}
		if len(page.Jobs) != want[t] || n != int64(want[t]) {
			return "", fmt.Errorf("sqlserver: %s lists %d and counts %d of the doctor's jobs, which left %d there", t, len(page.Jobs), n, want[t])
		}
		_, err = d.st.TableQueues(ctx, t, "")
		if err := d.after(ctx, err); err != nil {
			return "", err
		}
	}
	if err := need(len(d.jobs.archived), 1, "archived jobs"); err != nil {
		return "", err
	}
	j, err := d.st.GetJob(ctx, d.jobs.archived[0])
	if err := d.after(ctx, err); err != nil {
		return "", err
	}
	if j.Table != jobs.TableArchive || j.Queue != d.queue {
		return "", fmt.Errorf("sqlserver: job %d read back from %s, queue %s", j.ID, j.Table, j.Queue)
	}
	depths, err := d.st.QueueDepths(ctx, []string{d.queue}, 1000)
	if err := d.after(ctx, err); err != nil {
		return "", err
	}
	if len(depths) != 1 || depths[0].Pending != int64(len(d.jobs.due)+len(d.jobs.later)) || depths[0].Fetched != int64(len(d.jobs.fetched)) ||
		depths[0].Processing != int64(len(d.jobs.running)+len(d.jobs.marked)) {
		return "", fmt.Errorf("sqlserver: the queue's depths read %+v", depths)
	}
	_, err = d.st.QueueStats(ctx)
	if err := d.after(ctx, err); err != nil {
		return "", err
	}
	return d.readFinished(ctx)
}

// readFinished counts the doctor's finished jobs as the dashboard's charts
// do.
func (d *doctorRun) readFinished(ctx context.Context) (string, error) {
	now, err := d.st.Now(ctx)
	if err := d.after(ctx, err); err != nil {
		return "", err
	}
	from := now.Truncate(time.Hour).Add(-time.Hour)
	counts, err := d.st.FinishedCounts(ctx, jobs.FinishedCountsParams{Queue: d.queue, From: from, To: from.Add(3 * time.Hour), Bucket: time.Hour})
	if err := d.after(ctx, err); err != nil {
		return "", err
	}
	got := map[jobs.Table]int64{}
	for _, c := range counts {
		got[c.Table] += c.Count
	}
	if got[jobs.TableArchive] != int64(len(d.jobs.archived)) || got[jobs.TableDLQ] != int64(len(d.jobs.dead)) {
		return "", fmt.Errorf("sqlserver: the finished counts read %d archived and %d dead-lettered, the doctor left %d and %d",
			got[jobs.TableArchive], got[jobs.TableDLQ], len(d.jobs.archived), len(d.jobs.dead))
	}
	return fmt.Sprintf("lists, counts, depths, a job by ID, the queue statistics and the finished counts agree: %d hot, %d archived, %d dead-lettered",
		d.jobs.hot(), len(d.jobs.archived), len(d.jobs.dead)), nil
}

func (d *doctorRun) familyPurge(ctx context.Context) (string, error) {
	if err := cmpOr(need(len(d.jobs.archived), 1, "archived jobs"), need(len(d.jobs.dead), 1, "dead letters")); err != nil {
		return "", err
	}
	for _, p := range []struct {
		table jobs.Table
		from  *[]int64
	}{{jobs.TableArchive, &d.jobs.archived}, {jobs.TableDLQ, &d.jobs.dead}} {
		id := (*p.from)[0]
		n, err := d.st.Purge(ctx, jobs.PurgeParams{Table: p.table, Filter: jobs.Filter{Queue: d.queue, IDs: []int64{id}}})
		if err := d.after(ctx, err); err != nil {
			return "", err
		}
		if n != 1 {
			return "", fmt.Errorf("sqlserver: a purge of job %d from %s deleted %d", id, p.table, n)
		}
		*p.from = (*p.from)[1:]
	}
	return "one archived job and one dead letter deleted by ID", nil
}

func (d *doctorRun) familyTrim(ctx context.Context) (string, error) {
	var done []string
	for _, p := range []struct {
		table jobs.Table
		from  *[]int64
	}{{jobs.TableArchive, &d.jobs.archived}, {jobs.TableDLQ, &d.jobs.dead}} {
		r, err := d.st.Trim(ctx, jobs.TrimParams{Table: p.table, Queue: d.queue, OlderThan: time.Millisecond, Limit: 100})
		if err := d.after(ctx, err); err != nil {
			return "", err
		}
		if r.Deleted > len(*p.from) {
			return "", fmt.Errorf("sqlserver: a trim of the doctor's queue deleted %d jobs from %s, which held %d of them", r.Deleted, p.table, len(*p.from))
		}
		*p.from = (*p.from)[r.Deleted:]
		done = append(done, fmt.Sprintf("%d from %s", r.Deleted, p.table))
	}
	return "the queue's jobs that finished more than a millisecond ago trimmed: " + strings.Join(done, ", "), nil
}

func (d *doctorRun) familyQueueSettings(ctx context.Context) (string, error) {
	const maxWorkers = 50
	workers := maxWorkers
	set, err := d.st.UpdateQueue(ctx, d.queue, jobs.QueueUpdate{MaxWorkers: &workers})
	if err := d.after(ctx, err); err != nil {
		return "", err
	}
	all, err := d.st.Queues(ctx)
	if err := d.after(ctx, err); err != nil {
		return "", err
	}
	i := slices.IndexFunc(all, func(q jobs.QueueSettings) bool { return q.Name == d.queue })
	if set.MaxWorkers != maxWorkers || i < 0 || all[i].MaxWorkers != maxWorkers {
		return "", fmt.Errorf("sqlserver: MaxWorkers %d set on the doctor's queue read back as %+v", maxWorkers, set)
	}
	if err := need(len(d.jobs.due), 1, "due jobs"); err != nil {
		return "", err
	}
	got, err := d.st.Claim(ctx, jobs.ClaimParams{WorkerID: d.worker, Queues: []string{d.queue}, Limit: 5})
	if err := d.after(ctx, err); err != nil {
		return "", err
	}
	if len(got) == 0 {
		return "", fmt.Errorf("sqlserver: a claim on a queue capped at %d with %d taken found none of its %d due jobs", maxWorkers,
			len(d.jobs.fetched)+len(d.jobs.running), len(d.jobs.due))
	}
	for _, j := range got {
		d.jobs.fetched = append(d.jobs.fetched, j.Ref())
		d.jobs.due = slices.DeleteFunc(d.jobs.due, func(id int64) bool { return id == j.ID })
	}
	return fmt.Sprintf("MaxWorkers %d set and read back; a claim under the cap took %d", maxWorkers, len(got)), nil
}

func (d *doctorRun) familySchedules(ctx context.Context) (string, error) {
	const hash = "chokaq-doctor"
	err := d.st.SyncSchedules(ctx, []jobs.ScheduleDef{{Name: d.schedule, Definition: []byte(`{"doctor":true}`), Hash: hash}})
	if err := d.after(ctx, err); err != nil {
		return "", err
	}
	now, err := d.st.Now(ctx)
	if err := d.after(ctx, err); err != nil {
		return "", err
	}
	job := d.job(time.Hour)
	job.IdempotencyKey = d.key + "schedule"
	fired, err := d.st.FireSchedule(ctx, jobs.FireParams{Name: d.schedule, Hash: hash, Tick: now.Add(time.Minute), Job: job})
	if err := d.after(ctx, err); err != nil {
		return "", err
	}
	if !fired.Fired {
		return "", fmt.Errorf("sqlserver: the first fire of tick %s of schedule %s found the tick taken", now.Add(time.Minute).Format(time.RFC3339), d.schedule)
	}
	d.jobs.later = append(d.jobs.later, fired.Job.ID)
	paused, err := d.st.PauseSchedule(ctx, d.schedule, true)
	if err := d.after(ctx, err); err != nil {
		return "", err
	}
	all, err := d.st.Schedules(ctx)
	if err := d.after(ctx, err); err != nil {
		return "", err
	}
	if !paused.Paused || !slices.ContainsFunc(all, func(s jobs.ScheduleState) bool { return s.Name == d.schedule && s.Paused }) {
		return "", fmt.Errorf("sqlserver: schedule %s paused read back as %+v", d.schedule, paused)
	}
	err = d.st.DeleteSchedule(ctx, d.schedule)
	if err := d.after(ctx, err); err != nil {
		return "", err
	}
	return "a schedule recorded, one tick fired (compare-and-set and its keyed job in one transaction), paused, listed and deleted", nil
}

// checkLeftovers looks, after the rollback, for anything of the doctor's.
func (d *doctorRun) checkLeftovers(ctx context.Context) {
	d.opts.step("nothing left")
	var left []string
	for _, t := range []jobs.Table{jobs.TableHot, jobs.TableArchive, jobs.TableDLQ} {
		n, err := d.base.CountJobs(ctx, t, jobs.Filter{Queue: d.queue})
		if err != nil {
			d.failed("nothing left", err)
			return
		}
		if n > 0 {
			left = append(left, fmt.Sprintf("%d jobs in %s", n, t))
		}
	}
	qs, err := d.base.Queues(ctx)
	if err == nil && slices.ContainsFunc(qs, func(q jobs.QueueSettings) bool { return q.Name == d.queue }) {
		left = append(left, "the queue's settings")
	}
	ss, serr := d.base.Schedules(ctx)
	if err := errors.Join(err, serr); err != nil {
		d.failed("nothing left", err)
		return
	}
	if slices.ContainsFunc(ss, func(s jobs.ScheduleState) bool { return s.Name == d.schedule }) {
		left = append(left, "schedule "+d.schedule)
	}
	remedy := fmt.Sprintf("no service reads that queue: remove it with `chokaq jobs cancel`, `chokaq dlq purge --queue %s` and `chokaq schedules delete %s`", d.queue, d.schedule)
	if d.workflow != 0 {
		_, err := d.base.GetWorkflow(ctx, d.workflow)
		switch {
		case err == nil:
			left = append(left, fmt.Sprintf("workflow %d", d.workflow))
			remedy += fmt.Sprintf("; the workflow with `chokaq workflows cancel %d` and `chokaq dlq purge --queue %s-workflow`", d.workflow, d.queue)
		case !errors.Is(err, jobs.ErrWorkflowNotFound):
			d.failed("nothing left", err)
			return
		}
	}
	if len(left) > 0 {
		d.add(DoctorCheck{Name: "nothing left", Status: CheckFailed,
			Detail: "after the rollback, queue " + d.queue + " still has " + strings.Join(left, ", ") + ": the server committed work outside the doctor's transaction",
			Remedy: remedy})
		return
	}
	d.ok("nothing left", "the transaction was rolled back: no job, queue setting, schedule or workflow of the doctor's is left")
}

// familyFlow runs flow control's statements (ADR 0031) in a queue of its
// own, so that its claims take none of the other families' jobs: a key
// limited to one job at a time and a sequence under the hold policy; three
// jobs of the key and two of the sequence; a claim that takes one of each
// and parks the other three (the flow lock, the judgement, FlowWaits); the
// waiting counts; a release of both, and a claim that unparks under the
// flow lock and takes one of each again.
func (d *doctorRun) familyFlow(ctx context.Context) (string, error) {
	queue, key, seq := d.queue+"-flow", d.key+"key", d.key+"seq"
	one, hold := 1, jobs.SequenceHold
	_, err := d.st.UpdateQueue(ctx, queue, jobs.QueueUpdate{MaxWorkersPerKey: &one, KeyLimits: map[string]int{key: 1}, SequenceOnDeadLetter: &hold})
	if err := d.after(ctx, err); err != nil {
		return "", err
	}
	var ps []jobs.EnqueueParams
	for i := range 5 {
		p := d.job(0)
		p.Queue = queue
		if i < 3 {
			p.ConcurrencyKey = key
		} else {
			p.SequenceKey = seq
		}
		ps = append(ps, p)
	}
	_, err = d.st.EnqueueMany(ctx, ps)
	if err := d.after(ctx, err); err != nil {
		return "", err
	}
	claim := func(round string) ([]jobs.LeaseRef, error) {
		got, err := d.st.Claim(ctx, jobs.ClaimParams{WorkerID: d.worker, Queues: []string{queue}, Limit: len(ps)})
		if err := d.after(ctx, err); err != nil {
			return nil, err
		}
		var refs []jobs.LeaseRef
		keys := map[string]int{}
		for _, j := range got {
			refs = append(refs, j.Ref())
			keys[j.ConcurrencyKey+"/"+j.SequenceKey]++
		}
		if len(got) != 2 || keys[key+"/"] != 1 || keys["/"+seq] != 1 {
			return refs, fmt.Errorf("sqlserver: the %s claim of a key limited to 1 (3 jobs) and a sequence (2 jobs) took %d jobs (%v), want one of each", round, len(got), keys)
		}
		return refs, nil
	}
	refs, err := claim("first")
	if err != nil {
		return "", err
	}
	stats, err := d.st.QueueStats(ctx)
	if err := d.after(ctx, err); err != nil {
		return "", err
	}
	i := slices.IndexFunc(stats, func(s jobs.QueueStats) bool { return s.Queue == queue })
	if i < 0 {
		return "", fmt.Errorf("sqlserver: the queue stats name no queue %s after its first claim", queue)
	}
	if stats[i].WaitingOnKey != 2 || stats[i].WaitingOnSequence != 1 {
		return "", fmt.Errorf("sqlserver: after the first claim the flow queue's stats are %+v, want 2 waiting on the key and 1 on the sequence", stats[i])
	}
	n, err := d.st.Release(ctx, refs)
	if err := d.after(ctx, err); err != nil {
		return "", err
	}
	if n != len(refs) {
		return "", fmt.Errorf("sqlserver: released %d of the flow queue's %d claimed jobs", n, len(refs))
	}
	if _, err := claim("second"); err != nil {
		return "", err
	}
	return "a key limited to 1 and a sequence: a claim took one of each and parked 3 (2 on the key, 1 on the sequence); after a release, a claim unparked and took one of each again", nil
}

// familyRate runs a rate-limited claim (ADR 0033) in a queue of its own:
// a limit of 2 an hour and 3 due jobs; a claim takes 2 and says the
// window holds the queue for about an hour (the claim's second result);
// the stats show the window; the probe sees no work; a second claim takes
// nothing. The window's row write is rolled back with the transaction.
func (d *doctorRun) familyRate(ctx context.Context) (string, error) {
	queue := d.queue + "-rate"
	rate := jobs.RateLimit{Count: 2, Window: time.Hour}
	_, err := d.st.UpdateQueue(ctx, queue, jobs.QueueUpdate{RateLimit: &rate})
	if err := d.after(ctx, err); err != nil {
		return "", err
	}
	ps := []jobs.EnqueueParams{d.job(0), d.job(0), d.job(0)}
	for i := range ps {
		ps[i].Queue = queue
	}
	_, err = d.st.EnqueueMany(ctx, ps)
	if err := d.after(ctx, err); err != nil {
		return "", err
	}
	claim := func() (jobs.ClaimResult, error) {
		r, err := d.st.ClaimHeld(ctx, jobs.ClaimParams{WorkerID: d.worker, Queues: []string{queue}, Limit: len(ps)})
		return r, d.after(ctx, err)
	}
	first, err := claim()
	if err != nil {
		return "", err
	}
	if len(first.Jobs) != 2 || len(first.Held) != 1 || first.Held[0].For <= 59*time.Minute || first.Held[0].For > time.Hour {
		return "", fmt.Errorf("sqlserver: a claim of 3 due jobs under a limit of 2 an hour took %d and reported the holds %v, want 2 and about an hour",
			len(first.Jobs), first.Held)
	}
	stats, err := d.st.QueueStats(ctx)
	if err := d.after(ctx, err); err != nil {
		return "", err
	}
	i := slices.IndexFunc(stats, func(s jobs.QueueStats) bool { return s.Queue == queue })
	if i < 0 || stats[i].WindowUsed != 2 || stats[i].WaitingOnRate != 1 || stats[i].WindowEndsAt.IsZero() {
		return "", fmt.Errorf("sqlserver: the rate-limited queue's stats after its window filled: %v, want 2 used and 1 waiting", stats[max(i, 0):min(i+1, len(stats))])
	}
	due, err := d.st.Probe(ctx, []string{queue})
	if err := d.after(ctx, err); err != nil {
		return "", err
	}
	if due {
		return "", fmt.Errorf("sqlserver: the probe calls a queue whose window is full work")
	}
	second, err := claim()
	if err != nil {
		return "", err
	}
	if len(second.Jobs) != 0 || len(second.Held) != 1 {
		return "", fmt.Errorf("sqlserver: a claim in the full window took %d jobs, holds %v; want none, held", len(second.Jobs), second.Held)
	}
	return fmt.Sprintf("a limit of 2 an hour: a claim took 2 of 3 and said the window holds the queue for %s; the stats showed it, the probe saw no work, a second claim took none",
		first.Held[0].For.Round(time.Minute)), nil
}

// familyWorkflow runs the workflow statements (ADR 0034) in a queue of its
// own: a workflow of a then b; a claim that takes a alone (b waits for
// it); a started, adding task c after itself (the fan-out under its
// lease), then completed; a release step of this workflow only, which
// frees b and c; the list and the read of the workflow; its cancel, which
// takes b and c. On a real server the release step's own transaction
// nests in the doctor's, so what it frees is rolled back with it; the
// doctor's claims run no release step of their own (on), which would pay
// an application's workflows inside the doctor's transaction.
func (d *doctorRun) familyWorkflow(ctx context.Context) (string, error) {
	queue := d.queue + "-workflow"
	task := func(name string, after ...string) jobs.WorkflowTask {
		j := d.job(0)
		j.Queue = queue
		return jobs.WorkflowTask{Name: name, Job: j, After: after}
	}
	wf, err := d.st.EnqueueWorkflow(ctx, jobs.WorkflowParams{Name: "chokaq doctor", Tasks: []jobs.WorkflowTask{task("a"), task("b", "a")}})
	if err := d.after(ctx, err); err != nil {
		return "", err
	}
	d.workflow = wf.ID
	got, err := d.st.Claim(ctx, jobs.ClaimParams{WorkerID: d.worker, Queues: []string{queue}, Limit: 2})
	if err := d.after(ctx, err); err != nil {
		return "", err
	}
	if len(got) != 1 || got[0].ID != wf.Jobs["a"] || got[0].WorkflowID != wf.ID || got[0].WorkflowTask != "a" {
		return "", fmt.Errorf("sqlserver: a claim of workflow %d (a, then b after a) took %v, want task a (job %d) alone", wf.ID, jobIDs(got), wf.Jobs["a"])
	}
	ref := got[0].Ref()
	_, err = d.st.Start(ctx, ref, jobs.StartParams{DefaultTimeout: time.Hour})
	if err := d.after(ctx, err); err != nil {
		return "", err
	}
	added, err := d.st.AddWorkflowTasks(ctx, jobs.AddTasksParams{Ref: ref, Tasks: []jobs.WorkflowTask{task("c", "a")}})
	if err := d.after(ctx, err); err != nil {
		return "", err
	}
	if len(added) != 1 || added["c"] == 0 {
		return "", fmt.Errorf("sqlserver: task a's fan-out of task c gave the jobs %v", added)
	}
	err = d.st.Complete(ctx, ref)
	if err := d.after(ctx, err); err != nil {
		return "", err
	}
	// A step of the doctor's workflow only: one of every workflow would
	// lock an application's tasks until the doctor's rollback.
	_, busy, err := d.st.releaseStep(ctx, wf.ID)
	if err := d.after(ctx, err); err != nil {
		return "", err
	}
	if busy {
		return "", fmt.Errorf("sqlserver: another process's release step held the workflow lock (chokaq:%s:workflows) for the doctor's whole step; run the doctor again", strings.ToUpper(d.st.schema))
	}
	list, err := d.st.Workflows(ctx, wf.ID+1, 1)
	if err := d.after(ctx, err); err != nil {
		return "", err
	}
	if len(list) != 1 || list[0].ID != wf.ID || list[0].Total != 3 || list[0].Succeeded != 1 || list[0].Pending != 2 {
		return "", fmt.Errorf("sqlserver: the list of workflows from %d read %+v, want workflow %d: 3 tasks, 1 succeeded and 2 pending", wf.ID, list, wf.ID)
	}
	detail, err := d.st.GetWorkflow(ctx, wf.ID)
	if err := d.after(ctx, err); err != nil {
		return "", err
	}
	var tasks []string
	for _, t := range detail.Tasks {
		where := t.Table.String()
		if t.Table == jobs.TableHot {
			where = t.Status.String()
		}
		tasks = append(tasks, t.Name+" "+where+" after ["+strings.Join(t.Parents, ",")+"]")
	}
	if want := []string{"a archive after []", "b Pending after [a]", "c Pending after [a]"}; !slices.Equal(tasks, want) {
		return "", fmt.Errorf("sqlserver: workflow %d read back as %q, want %q", wf.ID, tasks, want)
	}
	cancelled, err := d.st.CancelWorkflow(ctx, jobs.CancelWorkflowParams{ID: wf.ID, By: "chokaq doctor", Reason: "a check"})
	if err := d.after(ctx, err); err != nil {
		return "", err
	}
	if len(cancelled) != 2 || cancelled[0].ID != added["c"] || cancelled[1].ID != wf.Jobs["b"] ||
		cancelled[0].Outcome != jobs.CancelDone || cancelled[1].Outcome != jobs.CancelDone {
		return "", fmt.Errorf("sqlserver: the cancel of workflow %d gave %+v, want c, then b, cancelled", wf.ID, cancelled)
	}
	return fmt.Sprintf("workflow %d: a claimed alone (b waits for it), started, added c after itself and completed; a release step; listed, read back (a archived, b and c pending) and cancelled, children first", wf.ID), nil
}
