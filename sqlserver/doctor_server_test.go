package sqlserver

import (
	"cmp"
	"context"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-sql/civil"
	mssql "github.com/microsoft/go-mssqldb"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/memstore"
	"github.com/chokaq/chokaq-go/schema"
)

// doctorServer answers the doctor's statements through the recording
// driver as a healthy SQL Server would: every statement of the store
// becomes the call of the in-memory store (the reference model) that does
// what the statement does, and its rows are shaped as the statement's.
// The doctor's rollback throws the in-memory store away, as the server
// throws away what the transaction did; so does an error under XACT_ABORT
// or a deadlock, which end the transaction on the server.
type doctorServer struct {
	t   *testing.T
	s   *Store
	rec *recorder

	mu     sync.Mutex
	mem    *memstore.Store
	claims map[int64][]int64 // claim id -> the jobs it took
	uniq   map[string]int64  // unique key (hash/bucket) -> the job that took it last
	// claimed counts the rows claimed in the transaction (the lock rows
	// grow with it); ended: the server rolled the transaction back.
	claimed int
	ended   bool
	// answer replaces the answer of a statement (a failing form), by text.
	answer map[string]func(c recordedCall) ([][]driver.Value, error)
	// failIn fails one statement only while a check or family runs.
	failIn struct {
		step, query string
		err         error
	}
	// keepOnRollback: the rollback leaves what the transaction did.
	keepOnRollback bool
	rollbackErr    error
	// adding is the lease of the task whose fan-out qAddTasksBegin opened:
	// qInsertWorkflowTasks adds the tasks in its name.
	adding   *jobs.LeaseRef
	handlers map[string]func(c recordedCall) ([][]driver.Value, error)
}

func newDoctorServer(t *testing.T) *doctorServer {
	t.Helper()
	s, rec := recordingStore(t)
	srv := &doctorServer{t: t, s: s, rec: rec, mem: memstore.New(), claims: map[int64][]int64{}, uniq: map[string]int64{},
		answer: map[string]func(recordedCall) ([][]driver.Value, error){}}
	srv.handlers = srv.statementHandlers()
	rec.serve = srv.serve
	rec.onTx = srv.onTx
	return srv
}

// run runs the doctor with the recorder labelling each check's calls.
func (srv *doctorServer) run() *DoctorReport {
	return srv.s.doctor(srv.t.Context(), doctorOptions{suffix: "0123456789ab", step: func(name string) { srv.rec.start(name) }})
}

// set answers stmt with one row.
func (srv *doctorServer) set(stmt string, row ...driver.Value) {
	srv.answer[stmt] = func(recordedCall) ([][]driver.Value, error) { return [][]driver.Value{row}, nil }
}

// fail makes every call of stmt fail with err.
func (srv *doctorServer) fail(stmt string, err error) {
	srv.answer[stmt] = func(recordedCall) ([][]driver.Value, error) { return nil, err }
}

func (srv *doctorServer) onTx(event string) error {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	switch event {
	case "begin":
		srv.ended = false
	case "rollback":
		if !srv.keepOnRollback {
			srv.reset()
		}
		return srv.rollbackErr
	}
	return nil
}

// reset is the server's rollback of the doctor's transaction.
func (srv *doctorServer) reset() {
	srv.mem, srv.claims, srv.claimed, srv.uniq, srv.adding = memstore.New(), map[int64][]int64{}, 0, map[string]int64{}, nil
}

func (srv *doctorServer) serve(c recordedCall) ([][]driver.Value, error) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if c.inTx && srv.ended && c.query != srv.s.q.doctorTranState {
		// The doctor must stop at once: anything it sends now commits.
		srv.t.Errorf("%s: sent after the server ended the transaction: %s", c.method, firstLine(c.query))
	}
	h := srv.handlers[c.query]
	if a, ok := srv.answer[c.query]; ok {
		h = a
	}
	if f := srv.failIn; f.query == c.query && f.step == c.method {
		h = func(recordedCall) ([][]driver.Value, error) { return nil, f.err }
	}
	if h == nil {
		srv.t.Errorf("%s: the fake server does not know the statement %s", c.method, firstLine(c.query))
		return nil, errors.New("unknown statement")
	}
	rows, err := h(c)
	if err != nil && c.inTx && (errNumber(err) == 1205 || strings.Contains(c.query, "SET XACT_ABORT ON")) {
		srv.ended = true // the server rolled the whole transaction back
		srv.reset()
	}
	return rows, err
}

// args reads a call's named arguments.
type args map[string]any

func argsOf(c recordedCall) args {
	a := args{}
	for _, nv := range c.args {
		a[nv.Name] = nv.Value
	}
	return a
}

func (a args) str(name string) string {
	switch v := a[name].(type) {
	case mssql.NVarCharMax:
		return string(v)
	case string:
		return v
	}
	return ""
}

func (a args) i64(name string) int64 {
	switch v := a[name].(type) {
	case int64:
		return v
	case bool:
		if v {
			return 1
		}
	}
	return 0
}

func (a args) at(name string) time.Time {
	if v, ok := a[name].(civil.DateTime); ok {
		return v.In(time.UTC)
	}
	return time.Time{}
}

func (a args) tvp(name string) any { return a[name].(mssql.TVP).Value }

func (a args) refs(name string) []jobs.LeaseRef {
	var out []jobs.LeaseRef
	for _, r := range a.tvp(name).([]leaseRow) {
		out = append(out, jobs.LeaseRef{ID: r.ID, Lease: r.Lease})
	}
	return out
}

func (a args) filter() jobs.Filter {
	f := jobs.Filter{Queue: a.str("queue")}
	if a.i64("hasIds") == 1 {
		for _, r := range a.tvp("ids").([]idRow) {
			f.IDs = append(f.IDs, r.ID)
		}
	}
	return f
}

func one(v ...driver.Value) [][]driver.Value { return [][]driver.Value{v} }

func orNil[T comparable](v T) driver.Value {
	var zero T
	if v == zero {
		return nil
	}
	return v
}

// unifiedRow is a job as the unified column list returns it (scanJobs).
func unifiedRow(j *jobs.Job) []driver.Value {
	var status, duration, reason driver.Value
	switch j.Table {
	case jobs.TableHot:
		status = int64(j.Status)
	case jobs.TableArchive:
		duration = j.Duration.Milliseconds()
	case jobs.TableDLQ:
		reason = int64(j.FailureReason)
	}
	var uniqueHash, uniqueBucket, uniqueStates driver.Value
	if k := j.UniqueKey; k != nil {
		uniqueHash, uniqueBucket, uniqueStates = k.Hash[:], k.Bucket, int64(j.UniqueStates)
	}
	return []driver.Value{j.ID, j.Queue, j.Type, j.Payload, int64(j.Priority), orNil(strings.Join(j.Tags, ",")), orNil(j.IdempotencyKey),
		orNil(j.CreatedBy), int64(j.MaxAttempts), int64(j.AttemptCount), int64(j.Table), status, j.CreatedAt, j.ScheduledAt,
		orNil(j.LastUpdatedAt), orNil(j.WorkerID), j.Lease, orNil(j.StartedAt), orNil(j.HeartbeatAt), orNil(j.DeadlineAt),
		orNil(j.LastError), orNil(j.FinishedAt), duration, reason, orNil(j.ErrorDetails), int64(j.SnoozeCount),
		orNil(j.CancelRequestedAt), orNil(j.CancelNote), orNil(j.HeartbeatMax.Milliseconds()),
		orNil(metadataText(j.Metadata)), orNil(string(j.Output)), orNil(j.Progress), orNil(j.ProgressMessage),
		orNil(int64(j.TimeoutFrom)), orNil(int64(j.ZombieRetryCap)), orNil(int64(j.ZombieRetries)),
		uniqueHash, uniqueBucket, uniqueStates, orNil(j.ConcurrencyKey), orNil(j.SequenceKey),
		orNil(j.WorkflowID), orNil(j.WorkflowTask)}
}

func metadataText(m map[string]string) string {
	s, err := jobs.EncodeMetadata(m)
	if err != nil {
		panic(err)
	}
	return s
}

// startParamsOf reads a start's parameters (startArgs).
func startParamsOf(a args) jobs.StartParams {
	ms := func(name string) time.Duration { return time.Duration(a.i64(name)) * time.Millisecond }
	return jobs.StartParams{DefaultTimeout: ms("defaultMs"), HeartbeatMax: ms("heartbeatMaxMs"), Timeout: ms("timeoutMs"),
		TimeoutFrom: jobs.PolicySource(a.i64("timeoutFrom")), ZombieRetryCap: int(a.i64("zombieRetryCap"))}
}

func jobRows(js []*jobs.Job) [][]driver.Value {
	out := [][]driver.Value{}
	for _, j := range js {
		out = append(out, unifiedRow(j))
	}
	return out
}

func queueRows(qs ...jobs.QueueSettings) [][]driver.Value {
	out := [][]driver.Value{}
	for _, q := range qs {
		out = append(out, []driver.Value{q.Name, q.Paused, int64(q.MaxWorkers), int64(q.ZombieTimeout / time.Second),
			int64(q.ExecutionTimeout / time.Second), nil, nil, int64(q.MaxWorkersPerKey), int64(q.SequenceOnDeadLetter),
			keyLimitsJSON(q.KeyLimits), int64(q.Weight),
			int64(q.RateLimit.Count), q.RateLimit.Window.Milliseconds()})
	}
	return out
}

func scheduleRows(ss ...jobs.ScheduleState) [][]driver.Value {
	out := [][]driver.Value{}
	for _, s := range ss {
		out = append(out, []driver.Value{s.Name, string(s.Definition), s.Hash, s.LastFiredTick, orNil(s.LastFiredAt),
			orNil(s.NextFire), s.Paused, s.UpdatedAt, s.SyncedAt})
	}
	return out
}

func count(n int, err error) ([][]driver.Value, error) {
	if err != nil {
		return nil, err
	}
	return one(int64(n)), nil
}

// moved is the @@ROWCOUNT of a lease-guarded statement.
func moved(err error) ([][]driver.Value, error) {
	switch {
	case errors.Is(err, jobs.ErrLeaseLost):
		return one(int64(0)), nil
	case errors.Is(err, jobs.ErrCancelled):
		return one(int64(2)), nil
	}
	return count(1, err)
}

// itemsParams is the jobs of an enqueue's @items, with the keys its
// @flowKeys side list gives them by Ord.
func itemsParams(a args) []jobs.EnqueueParams {
	var ps []jobs.EnqueueParams
	for _, it := range a.tvp("items").([]insertRow) {
		ps = append(ps, enqueueParams(it))
	}
	for _, f := range a.tvp("flowKeys").([]flowKeyRow) {
		ps[f.Ord].ConcurrencyKey, ps[f.Ord].SequenceKey = ptrOr(f.ConcurrencyKey), ptrOr(f.SequenceKey)
	}
	return ps
}

func enqueueParams(r insertRow) jobs.EnqueueParams {
	p := jobs.EnqueueParams{Queue: r.Queue, Type: r.Type, Payload: r.Payload, Priority: int(r.Priority),
		Delay: time.Duration(r.DelayMs) * time.Millisecond, MaxAttempts: int(r.MaxAttempts)}
	if r.RunAtMs != nil {
		p.RunAt = time.UnixMilli(*r.RunAtMs)
	}
	if r.Tags != nil {
		p.Tags = strings.Split(*r.Tags, ",")
	}
	if r.CreatedBy != nil {
		p.CreatedBy = *r.CreatedBy
	}
	return p
}

// statementHandlers maps every statement the doctor sends to what the
// server does with it.
func (srv *doctorServer) statementHandlers() map[string]func(c recordedCall) ([][]driver.Value, error) {
	q, ctx := srv.s.q, context.Background()
	mem := func() *memstore.Store { return srv.mem }
	h := map[string]func(c recordedCall) ([][]driver.Value, error){
		q.serverLevel:        func(recordedCall) ([][]driver.Value, error) { return one(int64(160), int64(16), int64(3)), nil },
		q.caseSensitiveNames: func(recordedCall) ([][]driver.Value, error) { return one(int64(0), nil), nil },
		q.doctorServer: func(recordedCall) ([][]driver.Value, error) {
			return one("16.0.4135.4", "Developer Edition (64-bit)", "app", "svc_login", "svc"), nil
		},
		q.doctorDatabase:   func(recordedCall) ([][]driver.Value, error) { return one(false, int64(0), false, nil), nil },
		q.doctorPrivileges: func(recordedCall) ([][]driver.Value, error) { return one(int64(0), int64(0), int64(0), int64(1)), nil },
		"SELECT TOP (1) version, dirty FROM " + schema.Quote("chokaq_t") + "." + schema.Quote(schema.MigrationsTable): func(recordedCall) ([][]driver.Value, error) {
			return one(int64(schema.Latest()), false), nil
		},
		q.now:            func(recordedCall) ([][]driver.Value, error) { return one(time.Now().UTC()), nil },
		q.probeType:      func(recordedCall) ([][]driver.Value, error) { return one(int64(0)), nil },
		q.probeSequence:  func(recordedCall) ([][]driver.Value, error) { return one(int64(12345)), nil },
		q.tryAppLock:     func(recordedCall) ([][]driver.Value, error) { return one(int64(0)), nil },
		q.appLockMode:    func(recordedCall) ([][]driver.Value, error) { return one("Exclusive"), nil },
		q.releaseAppLock: func(recordedCall) ([][]driver.Value, error) { return nil, nil },
		q.doctorTranState: func(c recordedCall) ([][]driver.Value, error) {
			if !c.inTx || srv.ended {
				return one(int64(0), int64(0)), nil
			}
			return one(int64(1), int64(1)), nil
		},
		q.doctorLocks: func(c recordedCall) ([][]driver.Value, error) {
			rows := [][]driver.Value{{"DATABASE", "S", "", int64(1)}}
			if c.inTx {
				rows = append(rows, []driver.Value{"OBJECT", "IX", "JobsHot", int64(1)}, []driver.Value{"PAGE", "IX", "PK_JobsHot", int64(2)},
					[]driver.Value{"KEY", "X", "PK_JobsHot", int64(30)}, []driver.Value{"KEY", "X", "IX_JobsHot_Claim", int64(30 + srv.claimed)},
					[]driver.Value{"KEY", "X", "IX_JobsHot_Active", int64(srv.claimed)})
			}
			return rows, nil
		},
		q.enqueueBatch: func(c recordedCall) ([][]driver.Value, error) {
			a := argsOf(c)
			ps := itemsParams(a)
			rs, err := mem().EnqueueMany(ctx, ps)
			if err != nil {
				return nil, err
			}
			for i, r := range rs {
				if r.ID != rs[0].ID+int64(i) || int64(len(rs)) != a.i64("n") {
					return nil, fmt.Errorf("fake: a range of %d IDs is not %v", a.i64("n"), rs)
				}
			}
			return one(rs[0].ID), nil
		},
		q.claim: func(c recordedCall) ([][]driver.Value, error) {
			a := argsOf(c)
			r, err := mem().ClaimHeld(ctx, jobs.ClaimParams{WorkerID: a.str("worker"), Queues: []string{a.str("queue")}, Limit: int(a.i64("limit"))})
			if err != nil {
				return nil, err
			}
			got := r.Jobs
			srv.claims[a.i64("claimId")] = jobIDs(got)
			srv.claimed += len(got)
			var heldMs driver.Value // the claim's second result: the wait of a full window
			for _, h := range r.Held {
				heldMs = h.For.Milliseconds()
			}
			// The third column: no workflow release is owed (the memory
			// store releases in the parent's move).
			return append(jobRows(got), []driver.Value{nextResultSet{}}, []driver.Value{heldMs, false}), nil
		},
		q.dueProbe: func(c recordedCall) ([][]driver.Value, error) {
			var names []string
			for _, r := range argsOf(c).tvp("queues").([]queueRow) {
				names = append(names, r.Name)
			}
			due, err := mem().Probe(ctx, names)
			return [][]driver.Value{{due, false}}, err
		},
		q.adoptClaim: func(c recordedCall) ([][]driver.Value, error) {
			a := argsOf(c)
			var got []*jobs.Job
			for _, id := range srv.claims[a.i64("claimId")] {
				if j, err := mem().GetJob(ctx, id); err == nil && j.Status == jobs.StatusFetched && j.WorkerID == a.str("worker") {
					got = append(got, j)
				}
			}
			return jobRows(got), nil
		},
		q.start: func(c recordedCall) ([][]driver.Value, error) {
			a := argsOf(c)
			st, err := mem().Start(ctx, jobs.LeaseRef{ID: a.i64("id"), Lease: a.i64("lease")}, startParamsOf(a))
			if errors.Is(err, jobs.ErrLeaseLost) {
				return nil, nil
			}
			if err != nil {
				return nil, err
			}
			return one(int64(st.AttemptCount), st.StartedAt, st.DeadlineAt, int64(st.TimeoutFrom)), nil
		},
		q.heartbeat: func(c recordedCall) ([][]driver.Value, error) {
			refs := argsOf(c).refs("refs")
			r, err := mem().Heartbeat(ctx, refs)
			if err != nil {
				return nil, err
			}
			out := [][]driver.Value{}
			for _, ref := range refs {
				cancel := int64(0)
				if containsRef(r.CancelRequested, ref) {
					cancel = 1
				}
				if !containsRef(r.Lost, ref) {
					out = append(out, []driver.Value{ref.ID, ref.Lease, cancel})
				}
			}
			return out, nil
		},
		q.complete: func(c recordedCall) ([][]driver.Value, error) {
			a := argsOf(c)
			return moved(mem().Complete(ctx, jobs.LeaseRef{ID: a.i64("id"), Lease: a.i64("lease")}))
		},
		q.deadLetter: func(c recordedCall) ([][]driver.Value, error) {
			a := argsOf(c)
			return moved(mem().DeadLetter(ctx, jobs.LeaseRef{ID: a.i64("id"), Lease: a.i64("lease")},
				jobs.DeadLetterParams{Reason: jobs.FailureReason(a.i64("reason")), Details: a.str("details")}))
		},
		q.snooze: func(c recordedCall) ([][]driver.Value, error) {
			a := argsOf(c)
			return moved(mem().Snooze(ctx, jobs.LeaseRef{ID: a.i64("id"), Lease: a.i64("lease")},
				jobs.SnoozeParams{Delay: time.Duration(a.i64("delayMs")) * time.Millisecond}))
		},
		q.release: func(c recordedCall) ([][]driver.Value, error) {
			return count(mem().Release(ctx, argsOf(c).refs("refs")))
		},
		q.transition: func(c recordedCall) ([][]driver.Value, error) {
			return srv.transition(argsOf(c))
		},
		q.cancel: func(c recordedCall) ([][]driver.Value, error) {
			a := argsOf(c)
			var ids []int64
			for _, r := range a.tvp("ids").([]idRow) {
				ids = append(ids, r.ID)
			}
			rs, err := mem().Cancel(ctx, jobs.CancelParams{IDs: ids})
			if err != nil {
				return nil, err
			}
			out := [][]driver.Value{}
			for _, r := range rs {
				if r.Outcome != jobs.CancelNotFound {
					out = append(out, []driver.Value{r.ID, int64(r.Outcome), r.Queue, r.Type})
				}
			}
			return out, nil
		},
		q.resurrect: func(c recordedCall) ([][]driver.Value, error) {
			return count(mem().Resurrect(ctx, jobs.ResurrectParams{Filter: argsOf(c).filter()}))
		},
		q.getJob: func(c recordedCall) ([][]driver.Value, error) {
			j, err := mem().GetJob(ctx, argsOf(c).i64("id"))
			if errors.Is(err, jobs.ErrJobNotFound) {
				return nil, nil
			}
			if err != nil {
				return nil, err
			}
			return jobRows([]*jobs.Job{j}), nil
		},
		q.queueDepths: func(c recordedCall) ([][]driver.Value, error) {
			a := argsOf(c)
			var names []string
			for _, r := range a.tvp("queues").([]queueRow) {
				names = append(names, r.Name)
			}
			ds, err := mem().QueueDepths(ctx, names, int(a.i64("cap")))
			out := [][]driver.Value{}
			for _, d := range ds {
				out = append(out, []driver.Value{d.Queue, d.Pending, d.Fetched, d.Processing})
			}
			return out, err
		},
		q.queueStats: func(recordedCall) ([][]driver.Value, error) {
			st, err := mem().QueueStats(ctx)
			out := [][]driver.Value{}
			for _, s := range st {
				out = append(out, []driver.Value{s.Queue, s.Paused, int64(s.MaxWorkers), s.Pending, s.Scheduled, s.Fetched, s.Processing,
					s.Archived, s.DeadLettered, orNil(s.OldestDueAt), time.Now().UTC(), s.WaitingOnKey, s.WaitingOnSequence,
					s.WaitingOnParents, int64(0), int64(s.WindowUsed), orNil(s.WindowEndsAt), busiestKeysJSON(s.BusiestKeys)})
			}
			return out, err
		},
		q.finishedCounts: func(c recordedCall) ([][]driver.Value, error) {
			a := argsOf(c)
			bucket := time.Duration(a.i64("bucketSeconds")) * time.Second
			fc, err := mem().FinishedCounts(ctx, jobs.FinishedCountsParams{Queue: a.str("queue"), From: a.at("from"), To: a.at("to"), Bucket: bucket})
			out := [][]driver.Value{}
			for _, f := range fc {
				out = append(out, []driver.Value{int64(f.Table), f.Queue, f.Start.Unix() / int64(bucket/time.Second), int64(f.Reason), f.Count})
			}
			return out, err
		},
		q.updateQueue: func(c recordedCall) ([][]driver.Value, error) {
			a := argsOf(c)
			var u jobs.QueueUpdate
			if a.i64("setMax") == 1 {
				n := int(a.i64("max"))
				u.MaxWorkers = &n
			}
			if a.i64("setPaused") == 1 {
				p := a.i64("paused") == 1
				u.Paused = &p
			}
			if a.i64("setPerKey") == 1 {
				n := int(a.i64("perKey"))
				u.MaxWorkersPerKey = &n
			}
			if a.i64("setSequence") == 1 {
				p := jobs.SequencePolicy(a.i64("sequence"))
				u.SequenceOnDeadLetter = &p
			}
			if rows := a.tvp("keyLimits").([]keyLimitRow); len(rows) > 0 {
				u.KeyLimits = map[string]int{}
				for _, r := range rows {
					u.KeyLimits[r.KeyName] = int(r.MaxWorkers)
				}
			}
			if a.i64("setRate") == 1 {
				r := jobs.RateLimit{Count: int(a.i64("rateCount")), Window: time.Duration(a.i64("rateWindowMs")) * time.Millisecond}
				u.RateLimit = &r
			}
			if a.i64("setWeight") == 1 {
				n := int(a.i64("weight"))
				u.Weight = &n
			}
			qs, err := mem().UpdateQueue(ctx, a.str("name"), u)
			if err != nil {
				return nil, err
			}
			return queueRows(qs), nil
		},
		q.queues: func(recordedCall) ([][]driver.Value, error) {
			qs, err := mem().Queues(ctx)
			return queueRows(qs...), err
		},
		q.syncSchedules: func(c recordedCall) ([][]driver.Value, error) {
			var defs []jobs.ScheduleDef
			for _, r := range argsOf(c).tvp("defs").([]scheduleRow) {
				defs = append(defs, jobs.ScheduleDef{Name: r.Name, Definition: []byte(r.Definition), Hash: r.DefinitionHash, Paused: r.IsPaused})
			}
			return nil, mem().SyncSchedules(ctx, defs)
		},
		q.fireSchedule: func(c recordedCall) ([][]driver.Value, error) {
			a := argsOf(c)
			p := jobs.FireParams{Name: a.str("name"), Hash: a.str("hash"), Tick: a.at("tick"), Job: jobs.EnqueueParams{Queue: "fake-fires", Type: "fire"}}
			if a.i64("hasNext") == 1 {
				p.Next = a.at("next")
			}
			r, err := mem().FireSchedule(ctx, p)
			if err != nil || !r.Fired {
				return one(int64(0)), err
			}
			return one(int64(1)), nil
		},
		q.pauseSchedule: func(c recordedCall) ([][]driver.Value, error) {
			a := argsOf(c)
			st, err := mem().PauseSchedule(ctx, a.str("name"), a[`paused`] == true)
			if errors.Is(err, jobs.ErrScheduleNotFound) {
				return nil, nil
			}
			return scheduleRows(st), err
		},
		q.schedules: func(recordedCall) ([][]driver.Value, error) {
			ss, err := mem().Schedules(ctx)
			return scheduleRows(ss...), err
		},
		q.deleteSchedule: func(c recordedCall) ([][]driver.Value, error) {
			err := mem().DeleteSchedule(ctx, argsOf(c).str("name"))
			if errors.Is(err, jobs.ErrScheduleNotFound) {
				return one(int64(0)), nil
			}
			return count(1, err)
		},
	}
	h[q.heartbeatProgress] = h[q.heartbeat] // the fake keeps no progress; the contract suite checks it
	h[q.insertWorkflowTasks] = func(c recordedCall) ([][]driver.Value, error) { return srv.insertWorkflowTasks(argsOf(c)) }
	h[q.addTasksBegin] = func(c recordedCall) ([][]driver.Value, error) {
		a := argsOf(c)
		ref := jobs.LeaseRef{ID: a.i64("id"), Lease: a.i64("lease")}
		j, err := mem().GetJob(ctx, ref.ID)
		if errors.Is(err, jobs.ErrJobNotFound) || err == nil && (j.Table != jobs.TableHot || j.Status != jobs.StatusProcessing || j.Lease != ref.Lease) {
			return [][]driver.Value{{false, nil, nil, nil}, {nextResultSet{}}}, nil
		}
		if err != nil {
			return nil, err
		}
		if j.WorkflowID == 0 {
			return [][]driver.Value{{true, nil, nil, nil}, {nextResultSet{}}}, nil
		}
		d, err := mem().GetWorkflow(ctx, j.WorkflowID)
		if err != nil {
			return nil, err
		}
		srv.adding = &ref
		rows := [][]driver.Value{{true, j.WorkflowID, j.WorkflowTask, d.Name}, {nextResultSet{}}}
		for _, t := range byJobID(d.Tasks) {
			rows = append(rows, []driver.Value{t.Name, t.JobID})
		}
		return rows, nil
	}
	// The memory store releases a finished task's children in its move:
	// nothing is ever owed to a release step.
	h[q.releaseTasks] = func(recordedCall) ([][]driver.Value, error) { return one(false, false), nil }
	h[q.workflows] = func(c recordedCall) ([][]driver.Value, error) {
		a := argsOf(c)
		ws, err := mem().Workflows(ctx, a.i64("beforeId"), int(a.i64("limit")))
		out := [][]driver.Value{}
		for _, w := range ws {
			out = append(out, []driver.Value{w.ID, w.Name, w.CreatedAt, int64(w.Pending), int64(w.Waiting), int64(w.Running),
				int64(w.Succeeded), int64(w.Failed)})
		}
		return out, err
	}
	h[q.getWorkflow] = func(c recordedCall) ([][]driver.Value, error) {
		d, err := mem().GetWorkflow(ctx, argsOf(c).i64("id"))
		if errors.Is(err, jobs.ErrWorkflowNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		return workflowRows(d), nil
	}
	keyed := func(c recordedCall) ([][]driver.Value, error) {
		a := argsOf(c)
		p := itemsParams(a)[0]
		p.IdempotencyKey = a.str("key")
		r, err := mem().Enqueue(ctx, p)
		if err != nil {
			return nil, err
		}
		return one(r.ID, r.Duplicate), nil
	}
	h[q.enqueueKeyed], h[q.enqueueKeyedTx] = keyed, keyed
	// The fake keeps the keys table as the statements do: the job that took
	// a key last, which holds it while its table counts.
	bucketOf := func(periodMs int64) int64 {
		if periodMs == 0 {
			return 0
		}
		return time.Now().UnixMilli() / periodMs
	}
	unique := func(c recordedCall) ([][]driver.Value, error) {
		a := argsOf(c)
		b := bucketOf(a.i64("periodMs"))
		if a.i64("hasBucket") == 1 {
			b = a.i64("bucket")
		}
		key := fmt.Sprintf("%s/%d", a.str("hashHex"), b) // serve holds srv.mu
		if id, ok := srv.uniq[key]; ok {
			if j, err := mem().GetJob(ctx, id); err == nil && jobs.UniqueStates(a.i64("states")).Holds(j.Table) {
				return one(id, true), nil
			}
		}
		p := itemsParams(a)[0]
		p.IdempotencyKey = a.str("key")
		r, err := mem().Enqueue(ctx, p)
		if err != nil || r.Duplicate {
			return one(r.ID, r.Duplicate), err
		}
		srv.uniq[key] = r.ID
		return one(r.ID, false), nil
	}
	h[q.enqueueUnique], h[q.enqueueUniqueTx] = unique, unique
	h[q.lockEnqueueKeys] = func(c recordedCall) ([][]driver.Value, error) {
		out := [][]driver.Value{}
		for _, k := range argsOf(c).tvp("keys").([]enqueueKeyRow) {
			if k.KeyHash != nil {
				out = append(out, []driver.Value{int64(k.Ord), bucketOf(*k.PeriodMs)})
			}
		}
		return out, nil
	}
	for _, stmt := range q.probes {
		h[stmt] = func(recordedCall) ([][]driver.Value, error) { return nil, nil }
	}
	for t := range q.list {
		h[q.list[t]] = func(c recordedCall) ([][]driver.Value, error) {
			a := argsOf(c)
			page, err := mem().ListJobs(ctx, jobs.ListParams{Table: t, Filter: a.filter(), Limit: int(a.i64("limit"))})
			return jobRows(page.Jobs), err
		}
		h[q.count[t]] = func(c recordedCall) ([][]driver.Value, error) {
			n, err := mem().CountJobs(ctx, t, argsOf(c).filter())
			return one(n), err
		}
		h[q.tableQueues[t]] = func(c recordedCall) ([][]driver.Value, error) {
			names, err := mem().TableQueues(ctx, t, argsOf(c).str("after"))
			out := [][]driver.Value{}
			for _, n := range names {
				out = append(out, []driver.Value{n})
			}
			return out, err
		}
	}
	for t := range q.purge {
		h[q.purge[t]] = func(c recordedCall) ([][]driver.Value, error) {
			// The whole purge in one answer, with no last key: the store's
			// loop ends.
			n, err := mem().Purge(ctx, jobs.PurgeParams{Table: t, Filter: argsOf(c).filter()})
			return one(int64(n), nil, nil), err
		}
		h[q.trim[t]] = func(c recordedCall) ([][]driver.Value, error) {
			a := argsOf(c)
			p := jobs.TrimParams{Table: t, Queue: a.str("queue"), OlderThan: time.Duration(a.i64("olderThanMs")) * time.Millisecond, Limit: int(a.i64("limit"))}
			if a.i64("hasAfter") == 1 {
				p.After = jobs.TrimKey{FinishedAt: a.at("afterUtc"), ID: a.i64("afterId")}
			}
			r, err := mem().Trim(ctx, p)
			if err != nil {
				return nil, err
			}
			return one(int64(r.Deleted), orNil(r.Last.FinishedAt), orNil(r.Last.ID)), nil
		}
	}
	return h
}

func containsRef(refs []jobs.LeaseRef, r jobs.LeaseRef) bool {
	for _, x := range refs {
		if x == r {
			return true
		}
	}
	return false
}

// transition is qTransition: one result set of (Kind, Id, RunLease,
// AttemptCount, StartedAtUtc, DeadlineUtc, TimeoutSource).
func (srv *doctorServer) transition(a args) ([][]driver.Value, error) {
	t := jobs.Transitions{Starts: a.refs("starts"), Completes: a.refs("completes"), StartParams: startParamsOf(a)}
	for _, r := range a.tvp("retries").([]retryRow) {
		t.Retries = append(t.Retries, jobs.RetryItem{Ref: jobs.LeaseRef{ID: r.ID, Lease: r.Lease},
			Params: jobs.RetryParams{Delay: time.Duration(r.DelayMs) * time.Millisecond, Error: r.Error}})
	}
	for _, r := range a.tvp("deadLetters").([]deadLetterRow) {
		t.DeadLetters = append(t.DeadLetters, jobs.DeadLetterItem{Ref: jobs.LeaseRef{ID: r.ID, Lease: r.Lease},
			Params: jobs.DeadLetterParams{Reason: jobs.FailureReason(r.Reason), Details: r.Details}})
	}
	if len(t.Starts) > 0 && t.StartParams.DefaultTimeout == 0 {
		t.StartParams.DefaultTimeout = time.Minute
	}
	r, err := srv.mem.Transition(context.Background(), t)
	if err != nil {
		return nil, err
	}
	out := [][]driver.Value{}
	row := func(kind int64, ref jobs.LeaseRef) {
		out = append(out, []driver.Value{kind, ref.ID, ref.Lease, nil, nil, nil, nil})
	}
	for i, s := range r.Starts {
		if s.Err == nil {
			out = append(out, []driver.Value{int64(kindStart), t.Starts[i].ID, t.Starts[i].Lease, int64(s.Started.AttemptCount), s.Started.StartedAt, s.Started.DeadlineAt, int64(s.Started.TimeoutFrom)})
		}
	}
	for i, err := range r.Completes {
		if err == nil {
			row(kindComplete, t.Completes[i])
		}
	}
	for i, err := range r.Retries {
		switch {
		case err == nil:
			row(kindRetry, t.Retries[i].Ref)
		case errors.Is(err, jobs.ErrCancelled):
			row(kindRetryCancelled, t.Retries[i].Ref)
		}
	}
	for i, err := range r.DeadLetters {
		if err == nil {
			row(kindDeadLetter, t.DeadLetters[i].Ref)
		}
	}
	return out, nil
}

// schemaStatus is schema.Status's statement for the fake's schema.
func (srv *doctorServer) schemaStatus() string {
	return "SELECT TOP (1) version, dirty FROM " + schema.Quote("chokaq_t") + "." + schema.Quote(schema.MigrationsTable)
}

// keyLimitsJSON and busiestKeysJSON shape what FOR JSON PATH returns for
// qQueues' key limits and qQueueStats' busiest keys (NULL for none).
func keyLimitsJSON(ls map[string]int) driver.Value {
	if len(ls) == 0 {
		return nil
	}
	type limit struct {
		K string `json:"k"`
		N int    `json:"n"`
	}
	var out []limit
	for _, k := range slices.Sorted(maps.Keys(ls)) {
		out = append(out, limit{k, ls[k]})
	}
	return mustJSON(out)
}

func busiestKeysJSON(ks []jobs.KeyCount) driver.Value {
	if len(ks) == 0 {
		return nil
	}
	type count struct {
		K string `json:"k"`
		R int64  `json:"r"`
		W int64  `json:"w"`
	}
	out := make([]count, len(ks))
	for i, k := range ks {
		out[i] = count{k.Key, k.Running, k.Waiting}
	}
	return mustJSON(out)
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// insertWorkflowTasks is qInsertWorkflowTasks: a new workflow (@workflowId
// 0) or a fan-out into one, all its tasks in one call (the doctor's are
// few). The memory store gives its tasks IDs in their order, as the
// statement's range does; the fake says so if not.
func (srv *doctorServer) insertWorkflowTasks(a args) ([][]driver.Value, error) {
	ctx := context.Background()
	ps := itemsParams(a)
	for _, m := range a.tvp("metadata").([]metadataRow) {
		md, err := jobs.DecodeMetadata(m.Metadata)
		if err != nil {
			return nil, err
		}
		ps[m.Ord].Metadata = md
	}
	rows := a.tvp("tasks").([]workflowTaskRow)
	if a.i64("firstId") != 0 || a.i64("base") != 0 || int64(len(rows)) != a.i64("total") || len(rows) != len(ps) {
		return nil, fmt.Errorf("fake: a workflow's %d tasks in a part of %d from %d: the fake takes them in one", a.i64("total"), len(rows), a.i64("base"))
	}
	wf := a.i64("workflowId")
	existing := map[int64]string{}
	if wf != 0 {
		d, err := srv.mem.GetWorkflow(ctx, wf)
		if err != nil {
			return nil, err
		}
		for _, t := range d.Tasks {
			existing[t.JobID] = t.Name
		}
	}
	tasks := make([]jobs.WorkflowTask, len(rows))
	for _, r := range rows {
		tasks[r.Ord] = jobs.WorkflowTask{Name: r.WorkflowTask, Job: ps[r.Ord], OnParentFailure: jobs.DependencyPolicy(r.OnParentFailure)}
	}
	for _, e := range a.tvp("edges").([]workflowEdgeRow) {
		var parent string
		switch {
		case e.ParentOrd != nil:
			parent = tasks[*e.ParentOrd].Name
		case e.ParentID != nil && existing[*e.ParentID] != "":
			parent = existing[*e.ParentID]
		default:
			return nil, fmt.Errorf("fake: an edge to task %d names no task of the call and no job of workflow %d", e.ChildOrd, wf)
		}
		tasks[e.ChildOrd].After = append(tasks[e.ChildOrd].After, parent)
	}
	var ids map[string]int64
	switch {
	case wf == 0:
		r, err := srv.mem.EnqueueWorkflow(ctx, jobs.WorkflowParams{Name: a.str("name"), Tasks: tasks})
		if err != nil {
			return nil, err
		}
		wf, ids = r.ID, r.Jobs
	case srv.adding == nil:
		return nil, fmt.Errorf("fake: tasks added to workflow %d without a qAddTasksBegin before them", wf)
	default:
		var err error
		if ids, err = srv.mem.AddWorkflowTasks(ctx, jobs.AddTasksParams{Ref: *srv.adding, Tasks: tasks}); err != nil {
			return nil, err
		}
	}
	first := ids[tasks[0].Name]
	for i, t := range tasks {
		if ids[t.Name] != first+int64(i) {
			return nil, fmt.Errorf("fake: the memory store gave the tasks %v, not a range in their order", ids)
		}
	}
	return one(wf, first), nil
}

func byJobID(ts []jobs.WorkflowTaskState) []jobs.WorkflowTaskState {
	return slices.SortedFunc(slices.Values(ts), func(a, b jobs.WorkflowTaskState) int { return cmp.Compare(a.JobID, b.JobID) })
}

// workflowRows are qGetWorkflow's three results: the workflow, its tasks
// and its edges. The memory store keeps no edge states; an edge is done
// (1) when its parent is archived or failed under DependencyRunAnyway, as
// the release step leaves it, and open (0) otherwise.
func workflowRows(d jobs.WorkflowDetail) [][]driver.Value {
	out := [][]driver.Value{{d.ID, d.Name, d.CreatedAt}, {nextResultSet{}}}
	tasks := byJobID(d.Tasks)
	byName := map[string]jobs.WorkflowTaskState{}
	for _, t := range tasks {
		byName[t.Name] = t
		var status, waitingOn, reason driver.Value
		switch t.Table {
		case jobs.TableHot:
			status = int64(t.Status)
			if t.WaitingOn > 0 {
				status, waitingOn = int64(statusWaitingOnParents), int64(t.WaitingOn)
			}
		case jobs.TableDLQ:
			reason = int64(t.FailureReason)
		}
		out = append(out, []driver.Value{t.JobID, t.Name, int64(t.Table), status, int64(t.OnParentFailure), waitingOn, reason})
	}
	out = append(out, []driver.Value{nextResultSet{}})
	for _, t := range tasks {
		var edges [][]driver.Value
		for _, name := range t.Parents {
			p := byName[name]
			state := int64(0)
			if p.Table == jobs.TableArchive || p.Table == jobs.TableDLQ && t.OnParentFailure == jobs.DependencyRunAnyway {
				state = 1
			}
			edges = append(edges, []driver.Value{p.JobID, t.JobID, state})
		}
		slices.SortFunc(edges, func(a, b []driver.Value) int { return cmp.Compare(a[0].(int64), b[0].(int64)) })
		out = append(out, edges...)
	}
	return out
}
