package sqlserver

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/storetest"
	"github.com/chokaq/chokaq-go/schema"
	"github.com/chokaq/chokaq-go/sqlserver/sqlservertest"
)

func TestMain(m *testing.M) { os.Exit(sqlservertest.Main(m)) }

// openTestStore connects to a fresh migrated schema, or skips.
func openTestStore(t *testing.T, opts ...Option) *Store {
	t.Helper()
	dsn, name := sqlservertest.NewSchema(t)
	s, err := Open(t.Context(), dsn, append([]Option{WithSchema(name)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.CheckSchema(t.Context()); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestContract runs the contract's transitions against SQL Server, on one
// schema emptied before each case; the invariants follow, one test each.
func TestContract(t *testing.T) { storetest.RunTransitions(t, harnessOn(openTestStore(t))) }

func TestInvariant_I1_SingleOwner(t *testing.T) { runInvariant(t, "I1") }
func TestInvariant_I2_NoJobLost(t *testing.T)   { runInvariant(t, "I2") }
func TestInvariant_I3_SafeReclaim(t *testing.T) { runInvariant(t, "I3") }
func TestInvariant_I4_UncertainWorkNotRerun(t *testing.T) {
	runInvariant(t, "I4")
}
func TestInvariant_I5_PerQueueTimeouts(t *testing.T) { runInvariant(t, "I5") }
func TestInvariant_I6_Bulkhead(t *testing.T)         { runInvariant(t, "I6") }
func TestInvariant_I7_ServerTime(t *testing.T)       { runInvariant(t, "I7") }

func runInvariant(t *testing.T, id string) {
	storetest.RunInvariant(t, id, harnessOn(openTestStore(t)))
}

// harnessOn empties s for each case and moves time by ageing every stored
// instant.
func harnessOn(s *Store) storetest.Factory {
	return func(t *testing.T) *storetest.Harness {
		if _, err := s.db.ExecContext(t.Context(), s.q.resetForTest); err != nil {
			t.Fatalf("reset: %v", err)
		}
		return &storetest.Harness{Store: s, Advance: func(tb testing.TB, d time.Duration) {
			// Moving every stored instant back is moving the clock forward.
			err := s.do(context.Background(), "age", idempotent, func(ctx context.Context) error {
				_, err := s.db.ExecContext(ctx, s.q.ageForTest, named("byMs", d.Milliseconds()))
				return err
			})
			if err != nil {
				tb.Errorf("advance %v: %v", d, err)
			}
		}, Settle: func(tb testing.TB) {
			for range 100 {
				s.owed.Store(true)
				if err := s.releaseTasks(context.Background()); err != nil {
					tb.Errorf("release steps: %v", err)
					return
				}
				if !s.owed.Load() {
					return
				}
			}
			tb.Errorf("release steps: still owed after 100 rounds")
		}}
	}
}

// TestClaimLockFootprint claims 20 of 10,000 due rows inside an open
// transaction and reads the locks it holds: one exclusive key lock per
// claimed row on the clustered index, and no table or partition lock that
// READPAST could not skip.
func TestClaimLockFootprint(t *testing.T) {
	inLockingModes(t, func(t *testing.T, dsn, name string) {
		s := openOn(t, dsn, name)
		ctx := t.Context()
		for range 10 {
			ps := make([]jobs.EnqueueParams, 1000)
			for i := range ps {
				ps[i] = jobs.EnqueueParams{Type: "lock.test"}
			}
			if _, err := s.EnqueueMany(ctx, ps); err != nil {
				t.Fatal(err)
			}
		}
		tx, err := s.pool.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		got, err := s.claimQueue(ctx, tx, "lock-test", jobs.DefaultQueue, 20, 1)
		if err != nil || len(got) != 20 {
			t.Fatalf("claim: %d jobs, %v", len(got), err)
		}
		pkKeys := 0
		for _, l := range heldLocks(t, tx) {
			switch {
			case l.typ == "OBJECT" && l.mode != "IX" && l.mode != "IS" && l.mode != "Sch-S":
				t.Errorf("claim holds a %s lock on a table: READPAST cannot skip it", l.mode)
			case l.typ == "HOBT":
				t.Errorf("claim holds a %s partition (HoBT) lock: escalation", l.mode)
			case l.typ == "KEY" && l.index == "PK_JobsHot":
				pkKeys += l.n
			}
		}
		switch optimized := optimizedLockingOn(t, s); {
		case !optimized && pkKeys != 20:
			t.Fatalf("claim holds %d key locks on PK_JobsHot, want 20 (one per claimed row)", pkKeys)
		case optimized && pkKeys > 20:
			// Row locks are released row by row; the transaction-ID lock
			// stands for them.
			t.Fatalf("claim holds %d key locks on PK_JobsHot under optimized locking, want at most 20", pkKeys)
		}
	})
}

// lockCount is one group of the locks a session holds.
type lockCount struct {
	typ, mode, index string
	n                int
}

// heldLocks reads the locks tx's session holds in this database, grouped by
// resource type, mode and index.
func heldLocks(t *testing.T, tx *sql.Tx) []lockCount {
	t.Helper()
	rows, err := tx.QueryContext(t.Context(), `
SELECT l.resource_type, l.request_mode, ISNULL(i.name, N''), COUNT(*)
FROM sys.dm_tran_locks AS l
LEFT JOIN sys.partitions AS p ON l.resource_type IN ('KEY', 'PAGE', 'HOBT') AND p.hobt_id = l.resource_associated_entity_id
LEFT JOIN sys.indexes AS i ON i.object_id = p.object_id AND i.index_id = p.index_id
WHERE l.request_session_id = @@SPID AND l.resource_database_id = DB_ID()
GROUP BY l.resource_type, l.request_mode, i.name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []lockCount
	for rows.Next() {
		var l lockCount
		if err := rows.Scan(&l.typ, &l.mode, &l.index, &l.n); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s %s %s: %d", l.typ, l.mode, l.index, l.n)
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRescueLockFootprint: one phase-2 batch of the default size (500 rows)
// moves its rows with key locks only, well below the ~5,000 locks at which
// SQL Server escalates to a table lock that READPAST could not skip.
func TestRescueLockFootprint(t *testing.T) {
	inLockingModes(t, func(t *testing.T, dsn, name string) {
		const batch = 500
		s := openOn(t, dsn, name)
		ctx := t.Context()
		ps := make([]jobs.EnqueueParams, batch+100)
		for i := range ps {
			ps[i] = jobs.EnqueueParams{Type: "lock.test"}
		}
		if _, err := s.EnqueueMany(ctx, ps); err != nil {
			t.Fatal(err)
		}
		got, err := s.Claim(ctx, jobs.ClaimParams{WorkerID: "w", Queues: []string{jobs.DefaultQueue}, Limit: len(ps)})
		if err != nil || len(got) != len(ps) {
			t.Fatalf("claim: %d jobs, %v", len(got), err)
		}
		for _, j := range got {
			if _, err := s.Start(ctx, j.Ref(), jobs.StartParams{DefaultTimeout: time.Hour}); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(50 * time.Millisecond) // every heartbeat is now older than the 1 ms timeout
		tx, err := s.pool.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if moved := rescueInTx(t, s, tx, s.q.rescueZombies, batch, time.Millisecond); moved != batch {
			t.Fatalf("rescued %d rows, want one batch of %d", moved, batch)
		}
		total := 0
		for _, l := range heldLocks(t, tx) {
			total += l.n
			switch {
			case l.typ == "OBJECT" && l.mode != "IX" && l.mode != "IS" && l.mode != "Sch-S":
				t.Errorf("rescue holds a %s lock on a table: escalation", l.mode)
			case l.typ == "HOBT":
				t.Errorf("rescue holds a %s partition (HoBT) lock: escalation", l.mode)
			}
		}
		if total >= 5000 {
			t.Fatalf("one rescue batch holds %d locks, want well under the 5,000 escalation threshold", total)
		}
	})
}

// rescueInTx runs one batch of a rescue phase's statement inside tx, whose
// locks the caller then reads, and returns how many jobs it moved.
func rescueInTx(t *testing.T, s *Store, tx *sql.Tx, stmt string, limit int, timeout time.Duration) int {
	t.Helper()
	rows, err := tx.QueryContext(t.Context(), stmt, named("limit", int64(limit)), named("timeoutMs", timeout.Milliseconds()),
		named("lockTimeoutMs", s.lockTimeoutMs()))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	moved := 0
	for rows.Next() {
		moved++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return moved
}

// TestEnqueueTx shows that a job enqueued in a caller's transaction exists
// exactly when the caller commits.
func TestEnqueueTx(t *testing.T) {
	s := openTestStore(t)
	ctx := t.Context()
	for _, commit := range []bool{false, true} {
		tx, err := s.pool.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		r, err := s.EnqueueTx(ctx, tx, jobs.EnqueueParams{Type: "tx", IdempotencyKey: "tx-key"})
		if err != nil {
			t.Fatal(err)
		}
		if commit {
			err = tx.Commit()
		} else {
			err = tx.Rollback()
		}
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.GetJob(ctx, r.ID)
		if found := err == nil; found != commit {
			t.Fatalf("commit=%v: job found=%v (%v)", commit, found, err)
		}
	}
}

// TestIdempotentEnqueueDoesNotDeadlock races 20 enqueues of one key with
// retries off. The contract's IdempotencyKeyConcurrent20 passes even if
// the keyed enqueue deadlocks, because the store retries 1205 silently;
// here a deadlock victim surfaces as an error.
func TestIdempotentEnqueueDoesNotDeadlock(t *testing.T) {
	inLockingModes(t, func(t *testing.T, dsn, name string) {
		const n, rounds = 20, 5
		s := openOn(t, dsn, name, WithRetryPolicy(RetryPolicy{MaxAttempts: 1}))
		ctx := t.Context()
		// Open the connections first, so the enqueues start together instead of
		// one login apart.
		s.DB().SetMaxIdleConns(n)
		conns := make([]*sql.Conn, n)
		for i := range conns {
			c, err := s.DB().Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			conns[i] = c
		}
		for _, c := range conns {
			c.Close()
		}
		for round := range rounds {
			key := fmt.Sprintf("race-%d", round)
			results := make([]jobs.EnqueueResult, n)
			errs := make([]error, n)
			startLine := make(chan struct{})
			var wg sync.WaitGroup
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-startLine
					results[i], errs[i] = s.Enqueue(ctx, jobs.EnqueueParams{Type: "race", IdempotencyKey: key})
				}()
			}
			close(startLine)
			wg.Wait()
			fresh := 0
			for i, err := range errs {
				if err != nil {
					t.Fatalf("round %d, goroutine %d: %v", round, i, err)
				}
				if results[i].ID != results[0].ID {
					t.Fatalf("round %d: goroutine %d got job %d, goroutine 0 got %d", round, i, results[i].ID, results[0].ID)
				}
				if !results[i].Duplicate {
					fresh++
				}
			}
			if fresh != 1 {
				t.Fatalf("round %d: %d enqueues inserted a job, want 1", round, fresh)
			}
			if c, err := s.CountJobs(ctx, jobs.TableHot, jobs.Filter{}); err != nil || c != int64(round+1) {
				t.Fatalf("round %d: %d hot rows (%v), want one per key: %d", round, c, err, round+1)
			}
		}
	})
}

// renderedStatements names every statement that takes the schema.
func renderedStatements() map[string]string {
	q := render("my_schema")
	all := map[string]string{
		"enqueueKeyed": q.enqueueKeyed, "enqueueKeyedTx": q.enqueueKeyedTx, "jobByKey": q.jobByKey, "enqueueBatch": q.enqueueBatch,
		"claim": q.claim, "adoptClaim": q.adoptClaim, "dueProbe": q.dueProbe,
		"start": q.start, "heartbeat": q.heartbeat, "heartbeatProgress": q.heartbeatProgress, "complete": q.complete, "snooze": q.snooze, "deadLetter": q.deadLetter, "cancel": q.cancel,
		"transition": q.transition,
		"release":    q.release, "rescueFetched": q.rescueFetched, "rescueZombies": q.rescueZombies,
		"rescueExpired": q.rescueExpired, "resurrect": q.resurrect, "getJob": q.getJob, "queues": q.queues,
		"updateQueue": q.updateQueue, "queueStats": q.queueStats, "ageForTest": q.ageForTest, "queueDepths": q.queueDepths,
		"insertWorkflowTasks": q.insertWorkflowTasks, "addTasksBegin": q.addTasksBegin, "releaseTasks": q.releaseTasks,
		"workflows": q.workflows, "getWorkflow": q.getWorkflow,
	}
	for tb, m := range map[string]map[jobs.Table]string{"list": q.list, "count": q.count, "purge": q.purge, "trim": q.trim} {
		for table, stmt := range m {
			all[tb+"."+table.String()] = stmt
		}
	}
	return all
}

func TestRenderedStatements(t *testing.T) {
	q := render("my_schema")
	all := renderedStatements()
	for name, stmt := range all {
		if strings.Contains(stmt, "{{") || strings.Contains(stmt, "$.") {
			t.Errorf("%s: unreplaced placeholder in\n%s", name, stmt)
		}
		if !strings.Contains(stmt, "[my_schema].") {
			t.Errorf("%s: does not name the schema", name)
		}
		if strings.Contains(stmt, "GETDATE()") || strings.Contains(stmt, "GETUTCDATE()") {
			t.Errorf("%s: use SYSUTCDATETIME()", name)
		}
	}
	// Every statement that picks a batch skips locked rows and locks only
	// rows, in its candidate and on its outer table, so it never waits on a
	// row another transaction holds (ADR 0016). Purge and resurrect take no
	// update locks: nothing updates the rows they read.
	const pick, skip = "UPDLOCK, READPAST, ROWLOCK, READCOMMITTEDLOCK", "READPAST, ROWLOCK, READCOMMITTEDLOCK"
	for name, candidate := range map[string]string{
		"claim": pick, "rescueFetched": pick, "rescueZombies": pick, "rescueExpired": pick,
		"resurrect": skip, "purge.dlq": skip, "purge.archive": skip,
	} {
		if !strings.Contains(all[name], "AS c WITH ("+candidate+")") && !strings.Contains(all[name], "AS t WITH ("+candidate+")") {
			t.Errorf("%s: the candidate must be read WITH (%s)", name, candidate)
		}
		if !strings.Contains(all[name], "SELECT TOP (@") {
			t.Errorf("%s: batch selection must be bounded by TOP", name)
		}
	}
	// Its outer table is the candidate's rows, one seek of the clustered
	// key each: INDEX and FORCESEEK, so that no estimate turns the join
	// into a scan or a range of another index.
	// (resurrect's candidates are picked first, into @pick, and the
	// claim's into @cand, which its flow control judges first.)
	outer := regexp.MustCompile(`AS [hd] WITH \(INDEX \(PK_(Jobs\w+)\), FORCESEEK, ` + skip + `\)\s+INNER JOIN (\(|@pick AS x ON x.Id = d.Id;|@cand AS x ON x.Id = h.Id)`)
	for _, name := range []string{"claim", "rescueFetched", "rescueZombies", "rescueExpired", "resurrect", "purge.dlq", "purge.archive", "trim.archive", "trim.dlq"} {
		m := outer.FindStringSubmatch(all[name])
		if m == nil || !strings.Contains(all[name], "[my_schema]."+m[1]+" AS ") {
			t.Errorf("%s: the outer table must be read WITH (INDEX (PK_<its table>), FORCESEEK, %s)", name, skip)
		}
	}
	// READPAST without READCOMMITTEDLOCK reads row versions under
	// READ_COMMITTED_SNAPSHOT; READPAST in a caller's SNAPSHOT transaction
	// fails with error 650 (ADR 0016).
	readpast := regexp.MustCompile(`WITH \(((?:[^()]|\([^()]*\))*READPAST(?:[^()]|\([^()]*\))*)\)`)
	for name, stmt := range all {
		for _, m := range readpast.FindAllStringSubmatch(stmt, -1) {
			if !strings.Contains(m[1], "READCOMMITTEDLOCK") {
				t.Errorf("%s: WITH (%s): READPAST without READCOMMITTEDLOCK", name, m[1])
			}
		}
		if strings.Contains(stmt, "READPAST") && !strings.Contains(stmt, "SET TRANSACTION ISOLATION LEVEL READ COMMITTED;") {
			t.Errorf("%s: READPAST in a statement that does not state READ COMMITTED", name)
		}
	}
	for _, name := range []string{"enqueueKeyedTx", "enqueueBatch"} {
		if stmt, ok := all[name]; !ok {
			t.Errorf("no statement %s", name)
		} else if strings.Contains(stmt, "READPAST") {
			t.Errorf("%s runs in the caller's transaction, maybe SNAPSHOT: no READPAST", name)
		}
	}
	// The claim's one window function ranks its own candidates (@cand, at
	// most @n rows) by key, never the backlog.
	if n, ranked := strings.Count(q.claim, "OVER ("), regexp.MustCompile(`OVER \([^()]*\) AS \w+\s+FROM @cand `).FindAllString(q.claim, -1); n != len(ranked) {
		t.Errorf("claim: %d window functions, %d of them over @cand: no window function over the backlog", n, len(ranked))
	}
	// Every batch transition is guarded per row by ID, lease and status,
	// and seeks the clustered key for each parameter row.
	for _, name := range []string{"heartbeat", "heartbeatProgress", "release"} {
		if !strings.Contains(all[name], "AS h WITH (FORCESEEK") || !strings.Contains(all[name], "ON h.Id = r.Id AND h.RunLease = r.Lease") ||
			!strings.Contains(all[name], "WHERE h.Status = ") {
			t.Errorf("%s: must seek each row by Id and RunLease and test its Status", name)
		}
	}
	for _, list := range []struct{ tvp, alias, status string }{{"@starts", "sr", "1"}, {"@completes", "cr", "2"}, {"@retries", "rr", "2"}, {"@deadLetters", "dr", "2"}} {
		stmt := "FROM " + list.tvp + " AS " + list.alias + "\nINNER JOIN [my_schema].JobsHot AS h WITH (FORCESEEK"
		at := strings.Index(all["transition"], stmt)
		rest := all["transition"][max(at, 0):]
		if at < 0 || !strings.Contains(rest[:min(len(rest), 400)], "ON h.Id = "+list.alias+".Id AND h.RunLease = "+list.alias+".Lease") ||
			!strings.Contains(rest[:min(len(rest), 400)], "WHERE h.Status = "+list.status) {
			t.Errorf("transition: the %s statement must seek each row by Id and RunLease and test Status = %s", list.tvp, list.status)
		}
	}
	// Every worker transition is guarded by ID, lease and status.
	for _, name := range []string{"start", "complete", "snooze", "deadLetter"} {
		if !strings.Contains(all[name], "Id = @id AND ") || !strings.Contains(all[name], "RunLease = @lease AND ") || !strings.Contains(all[name], "Status = ") {
			t.Errorf("%s: must match Id, RunLease and Status", name)
		}
	}
	for _, name := range []string{"heartbeat", "heartbeatProgress", "release"} {
		if !strings.Contains(all[name], "h.RunLease = r.Lease") {
			t.Errorf("%s: must match the lease of every listed job", name)
		}
	}
	// Moves between tables are single DELETE ... OUTPUT ... INTO statements.
	for _, name := range []string{"complete", "deadLetter", "rescueZombies", "rescueExpired"} {
		if !strings.Contains(all[name], "DELETE h\nOUTPUT") || !strings.Contains(all[name], "INTO [my_schema].Jobs") {
			t.Errorf("%s: must move the row with DELETE ... OUTPUT ... INTO", name)
		}
	}
}

var (
	// A variable the statement uses: @name, but not @@ROWCOUNT.
	sqlVariable = regexp.MustCompile(`(?:^|[^@\w])@(\w+)`)
	// A variable the statement declares itself, alone or in a DECLARE list.
	sqlDeclared = regexp.MustCompile(`(?:DECLARE|,)[ \t]+@(\w+)[ \t]+(?:TABLE|DATETIME2|BIT|TINYINT|INT|BIGINT|SQL_VARIANT|NVARCHAR|VARBINARY)\b`)
	// A declared instant and the expression that sets it.
	sqlInstant = regexp.MustCompile(`DECLARE[ \t]+@(\w+)[ \t]+DATETIME2\(7\)[ \t]*=[ \t]*([^;]+);`)
)

// statementParams returns the variables stmt uses but does not declare:
// the parameters the caller must supply.
func statementParams(stmt string) []string {
	declared := map[string]bool{}
	for _, m := range sqlDeclared.FindAllStringSubmatch(stmt, -1) {
		declared[m[1]] = true
	}
	var params []string
	for _, m := range sqlVariable.FindAllStringSubmatch(stmt, -1) {
		if !declared[m[1]] && !slices.Contains(params, m[1]) {
			params = append(params, m[1])
		}
	}
	return params
}

// TestWorkerAndRescueStatementsReadTheServerClock is I7 for SQL Server. The
// contract's I7 case cannot catch a Go timestamp there, because the test
// host and the server share a clock; so every parameter of a worker or
// rescue statement must be one of these, none a time. Durations come as
// milliseconds and every instant is derived from SYSUTCDATETIME().
func TestWorkerAndRescueStatementsReadTheServerClock(t *testing.T) {
	notTimes := []string{"queue", "worker", "limit", "id", "lease", "refs", "error", "reason", "details", "defaultMs", "delayMs", "timeoutMs",
		"heartbeatMaxMs", "timeoutFrom", "zombieRetryCap",
		"claimId", "lockTimeoutMs", "starts", "completes", "retries", "deadLetters", "ids", "noteText",
		"outputs", "progress",
		"Resource", "LockMode", "LockOwner", "LockTimeout"} // the last four name sp_getapplock's parameters
	all := renderedStatements()
	for _, name := range []string{"claim", "start", "heartbeat", "heartbeatProgress", "complete", "snooze", "deadLetter", "transition", "cancel", "release",
		"rescueFetched", "rescueZombies", "rescueExpired"} {
		stmt := all[name]
		params := statementParams(stmt)
		if len(params) == 0 {
			t.Errorf("%s: found no parameters; the parser no longer fits queries.go", name)
		}
		for _, p := range params {
			if !slices.Contains(notTimes, p) {
				t.Errorf("%s takes @%s from the caller: worker and rescue statements take no instant from Go (I7). If it is not a time, add it to notTimes", name, p)
			}
		}
		if !strings.Contains(stmt, "SYSUTCDATETIME()") {
			t.Errorf("%s: does not read the server clock", name)
		}
		for _, m := range sqlInstant.FindAllStringSubmatch(stmt, -1) {
			if !strings.Contains(m[2], "SYSUTCDATETIME()") && !strings.Contains(m[2], "@now") {
				t.Errorf("%s: @%s is set from %q, not from the server clock", name, m[1], m[2])
			}
		}
	}
	// The parser itself: a supplied @now must be reported, a declared one not.
	if got := statementParams("DECLARE @a INT, @now DATETIME2(7) = SYSUTCDATETIME(); SELECT @@ROWCOUNT, @a, @now, @id;"); !slices.Equal(got, []string{"id"}) {
		t.Errorf("statementParams = %v, want [id]", got)
	}
	if got := statementParams("UPDATE x SET HeartbeatUtc = @now WHERE Id = @id;"); !slices.Equal(got, []string{"now", "id"}) {
		t.Errorf("statementParams = %v, want [now id]", got)
	}
}

// TestMovesRunInOneTransaction: resurrect moves rows with two statements
// and the keyed enqueue checks then inserts; each must be one transaction
// that XACT_ABORT rolls back whole on any error or a cancelled request,
// so no job is lost half-moved and no key lock outlives the call.
func TestMovesRunInOneTransaction(t *testing.T) {
	all := renderedStatements()
	for name, inside := range map[string][]string{
		"resurrect":    {"DELETE d\nOUTPUT", "INTO @moved", "INSERT INTO [my_schema].JobsHot"},
		"enqueueKeyed": {"sp_getapplock", "NEXT VALUE FOR", "INSERT INTO [my_schema].JobsHot"},
	} {
		stmt := all[name]
		begin, commit := strings.Index(stmt, "BEGIN TRANSACTION;"), strings.LastIndex(stmt, "COMMIT TRANSACTION;")
		if begin < 0 || commit < begin || strings.Count(stmt, "BEGIN TRAN") != 1 {
			t.Errorf("%s: want one BEGIN TRANSACTION ... COMMIT TRANSACTION", name)
			continue
		}
		for _, part := range inside {
			if i := strings.Index(stmt, part); i < begin || i > commit {
				t.Errorf("%s: %q is not inside the transaction", name, part)
			}
		}
	}
	// Any statement that opens a transaction aborts it whole on error.
	for name, stmt := range all {
		if begin := strings.Index(stmt, "BEGIN TRAN"); begin >= 0 {
			if x := strings.Index(stmt, "SET XACT_ABORT ON;"); x < 0 || x > begin {
				t.Errorf("%s: opens a transaction without SET XACT_ABORT ON before it", name)
			}
		}
	}
}

func TestNewRejectsBadSchemaName(t *testing.T) {
	db, err := sql.Open("sqlserver", "sqlserver://localhost")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, bad := range []string{"", "a b", "x];DROP TABLE y;--", "1abc", "sys"} {
		if _, err := New(db, WithSchema(bad)); err == nil {
			t.Errorf("schema %q accepted", bad)
		}
	}
	if _, err := New(db, WithSchema("tenant_7")); err != nil {
		t.Errorf("schema tenant_7: %v", err)
	}
}

func BenchmarkStore(b *testing.B) {
	dsn, name := sqlservertest.NewSchema(b)
	s, err := Open(b.Context(), dsn, WithSchema(name))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	storetest.Benchmarks(b, func(b *testing.B) jobs.Store {
		if _, err := s.db.ExecContext(b.Context(), s.q.resetForTest); err != nil {
			b.Fatal(err)
		}
		return s
	})
}

// TestLeaderElection: two electors on one schema; one leads until it
// resigns, then the other takes over.
func TestLeaderElection(t *testing.T) {
	s := openTestStore(t)
	ctx := t.Context()
	a, b := NewLeader(s, "rescue"), NewLeader(s, "rescue")
	if lead, err := a.TryLead(ctx); err != nil || !lead {
		t.Fatalf("first elector: %v %v", lead, err)
	}
	if lead, err := a.TryLead(ctx); err != nil || !lead {
		t.Fatalf("the leader lost its lock on a second check: %v %v", lead, err)
	}
	if lead, err := b.TryLead(ctx); err != nil || lead {
		t.Fatalf("second elector led too: %v %v", lead, err)
	}
	if err := a.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if lead, err := b.TryLead(ctx); err != nil || !lead {
		t.Fatalf("second elector after resign: %v %v", lead, err)
	}
	_ = b.Resign(ctx)
}

// TestResurrectIsAllOrNothing: when putting a dead letter back into JobsHot
// fails, the delete from JobsDLQ is rolled back with it, so the job is
// still a dead letter and not lost between the tables (I2). A CHECK
// constraint that refuses the job's type stands in for any failing insert.
func TestResurrectIsAllOrNothing(t *testing.T) {
	s := openTestStore(t)
	ctx := t.Context()
	r, err := s.Enqueue(ctx, jobs.EnqueueParams{Type: "poison"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Claim(ctx, jobs.ClaimParams{WorkerID: "w", Queues: []string{jobs.DefaultQueue}, Limit: 1})
	if err != nil || len(got) != 1 {
		t.Fatalf("claim: %v %v", got, err)
	}
	if _, err := s.Start(ctx, got[0].Ref(), jobs.StartParams{DefaultTimeout: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeadLetter(ctx, got[0].Ref(), jobs.DeadLetterParams{Reason: jobs.ReasonFatal, Details: "fatal"}); err != nil {
		t.Fatal(err)
	}
	check := fmt.Sprintf("ALTER TABLE %s.JobsHot ADD CONSTRAINT CK_TestNoPoison CHECK (Type <> N'poison')", schema.Quote(s.Schema()))
	if _, err := s.db.ExecContext(ctx, check); err != nil {
		t.Fatal(err)
	}
	n, err := s.Resurrect(ctx, jobs.ResurrectParams{Filter: jobs.Filter{IDs: []int64{r.ID}}})
	if err == nil {
		t.Fatalf("resurrect moved %d jobs past a constraint that refuses them", n)
	}
	j, err := s.GetJob(ctx, r.ID)
	if err != nil || j.Table != jobs.TableDLQ || j.FailureReason != jobs.ReasonFatal {
		t.Fatalf("after the failed resurrect the job is %+v (%v), want still the same dead letter", j, err)
	}
}

// TestUniqueEnqueueSendsItsKey: a unique job goes to the unique statement
// with its key hashed in Go (hex), its period and its states; a batch
// first locks every key, unique ones by their items' Ord and idempotency
// keys past them in the order of their bytes, then runs its keyed items in
// the batch's order with the buckets the lock statement computed.
func TestUniqueEnqueueSendsItsKey(t *testing.T) {
	s, rec := recordingStore(t)
	var mu sync.Mutex
	var seen []recordedCall
	rec.serve = func(c recordedCall) ([][]driver.Value, error) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, c)
		switch c.query {
		case s.q.lockEnqueueKeys:
			return [][]driver.Value{{int64(1), int64(470000)}, {int64(2), int64(470001)}}, nil
		case s.q.enqueueUnique, s.q.enqueueUniqueTx, s.q.enqueueKeyedTx:
			return [][]driver.Value{{int64(len(seen)), false}}, nil
		case s.q.enqueueBatch:
			return [][]driver.Value{{int64(100)}}, nil
		}
		return nil, nil
	}
	by := &jobs.UniqueOpts{ByArgs: true, Period: time.Hour, States: jobs.UniqueActive | jobs.UniqueDeadLettered}
	p := jobs.EnqueueParams{Queue: "q", Type: "t", Payload: []byte(`{"a":1}`), Unique: by}
	want, _, _ := p.UniqueHash()
	if _, err := s.Enqueue(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	a := argsOf(seen[0])
	if seen[0].query != s.q.enqueueUnique || a.str("hashHex") != hex.EncodeToString(want[:]) || a.i64("periodMs") != 3600000 ||
		a.i64("states") != int64(by.States) || a.i64("hasBucket") != 0 {
		t.Fatalf("Enqueue sent %s with %v", firstLine(seen[0].query), a)
	}

	seen = nil
	q := p
	q.Unique, q.IdempotencyKey = &jobs.UniqueOpts{}, "b"
	k := jobs.EnqueueParams{Queue: "q", Type: "t", IdempotencyKey: "a"}
	if _, err := s.EnqueueMany(t.Context(), []jobs.EnqueueParams{{Type: "plain"}, p, q, k}); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 5 || seen[0].query != s.q.lockEnqueueKeys {
		t.Fatalf("EnqueueMany sent %d statements, the first %s", len(seen), firstLine(seen[0].query))
	}
	keys := argsOf(seen[0]).tvp("keys").([]enqueueKeyRow)
	if len(keys) != 4 || keys[0].Ord != 1 || keys[1].Ord != 2 || *keys[2].IdempotencyKey != "a" || keys[2].Ord != 4 ||
		*keys[3].IdempotencyKey != "b" || keys[3].Ord != 5 || keys[0].KeyHash == nil || *keys[0].PeriodMs != 3600000 {
		t.Fatalf("the batch's key list: %+v", keys)
	}
	for i, wantQ := range []string{s.q.enqueueUniqueTx, s.q.enqueueUniqueTx, s.q.enqueueKeyedTx, s.q.enqueueBatch} {
		if seen[i+1].query != wantQ {
			t.Fatalf("statement %d: %s", i+1, firstLine(seen[i+1].query))
		}
	}
	if b1, b2 := argsOf(seen[1]), argsOf(seen[2]); b1.i64("hasBucket") != 1 || b1.i64("bucket") != 470000 || b2.i64("bucket") != 470001 ||
		b2.str("key") != "b" {
		t.Fatalf("the items' buckets: %v, %v", b1, b2)
	}

	// A caller's transaction that is nil is refused, not a panic.
	if _, err := s.EnqueueTx(t.Context(), nil, p); err == nil {
		t.Fatal("EnqueueTx with a nil transaction: no error")
	}
}

// TestFlowKeysTravelWithEveryEnqueue: a job's concurrency and sequence
// keys reach the server in the @flowKeys side list (by the item's Ord) on
// every path that inserts a job, and a batch without keys sends it empty.
func TestFlowKeysTravelWithEveryEnqueue(t *testing.T) {
	srv := newDoctorServer(t)
	s, rec := srv.s, srv.rec
	ctx := t.Context()
	p := jobs.EnqueueParams{Type: "t", ConcurrencyKey: "tenant-7"}
	q := jobs.EnqueueParams{Type: "t", SequenceKey: "account-9"}
	if _, err := s.Enqueue(ctx, p); err != nil {
		t.Fatal(err)
	}
	if _, err := s.EnqueueMany(ctx, []jobs.EnqueueParams{{Type: "t"}, q, {Type: "t", IdempotencyKey: "k", ConcurrencyKey: "c", SequenceKey: "s"}}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range rec.calls {
		if !strings.Contains(c.query, "LEFT JOIN @flowKeys AS f ON f.Ord = i.Ord") {
			continue
		}
		for _, r := range argsOf(c).tvp("flowKeys").([]flowKeyRow) {
			got = append(got, fmt.Sprintf("%d %s/%s", r.Ord, ptrOr(r.ConcurrencyKey), ptrOr(r.SequenceKey)))
		}
		got = append(got, "|")
	}
	// The single job; the batch's keyed item alone, then its plain items
	// (Ord is the index within each statement's list).
	if want := []string{"0 tenant-7/", "|", "0 c/s", "|", "1 /account-9", "|"}; !slices.Equal(got, want) {
		t.Fatalf("flow keys sent %q, want %q", got, want)
	}
}
