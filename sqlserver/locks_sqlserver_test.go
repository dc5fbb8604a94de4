package sqlserver

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mssql "github.com/microsoft/go-mssqldb"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/storetest"
	"github.com/chokaq/chokaq-go/schema"
	"github.com/chokaq/chokaq-go/sqlserver/sqlservertest"
)

// The SQL Server side of ADR 0016. Each test runs only with a server; the
// server-free checks of the same rules are in locks_test.go.

// openOn opens a store on a schema the caller migrated.
func openOn(t *testing.T, dsn, name string, opts ...Option) *Store {
	t.Helper()
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

// runningJobs enqueues n jobs on queue and starts them all.
func runningJobs(t *testing.T, s *Store, queue string, n int) []*jobs.Job {
	t.Helper()
	ctx := t.Context()
	for done := 0; done < n; {
		batch := make([]jobs.EnqueueParams, min(1000, n-done))
		for i := range batch {
			batch[i] = jobs.EnqueueParams{Queue: queue, Type: "lock.test"}
		}
		if _, err := s.EnqueueMany(ctx, batch); err != nil {
			t.Fatal(err)
		}
		done += len(batch)
	}
	var out []*jobs.Job
	for len(out) < n {
		got, err := s.Claim(ctx, jobs.ClaimParams{WorkerID: "w", Queues: []string{queue}, Limit: min(1000, n-len(out))})
		if err != nil || len(got) == 0 {
			t.Fatalf("claim: %d jobs, %v", len(got), err)
		}
		for _, j := range got {
			if _, err := s.Start(ctx, j.Ref(), jobs.StartParams{DefaultTimeout: time.Hour}); err != nil {
				t.Fatal(err)
			}
		}
		out = append(out, got...)
	}
	return out
}

// optimizedLockingSetup turns optimized locking on in a new database; it
// needs accelerated database recovery first. Azure SQL Database has both on
// and lets neither be set.
var optimizedLockingSetup = []string{
	"ALTER DATABASE %s SET ACCELERATED_DATABASE_RECOVERY = ON",
	"ALTER DATABASE %s SET OPTIMIZED_LOCKING = ON",
}

// optimizedLockingDatabase returns the setup statements of a database with
// optimized locking on (with more, when given), or skips t with one line
// where the server has no optimized locking: SQL Server 2025 (major
// version 17) has it as an option, Azure SQL Database always. There row
// and page locks are released as each row is written and only a
// transaction-ID (XACT) lock lasts to COMMIT, and no page says whether
// READPAST skips a row only such a lock protects: the lock tests say.
func optimizedLockingDatabase(t *testing.T, more ...string) []string {
	t.Helper()
	db, err := sql.Open("sqlserver", sqlservertest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var major, edition int
	if err := db.QueryRowContext(t.Context(), "SELECT CAST(SERVERPROPERTY('ProductMajorVersion') AS INT), CAST(SERVERPROPERTY('EngineEdition') AS INT);").
		Scan(&major, &edition); err != nil {
		t.Fatal(err)
	}
	switch {
	case edition == 5:
		return more
	case major >= 17 && edition != 8:
		return append(slices.Clone(optimizedLockingSetup), more...)
	}
	t.Skipf("OPTIMIZED_LOCKING = ON skipped: it needs SQL Server 2025 or Azure SQL Database; this server is major version %d, engine edition %d", major, edition)
	return nil
}

// optimizedLockingOn reports whether s's database has optimized locking on.
func optimizedLockingOn(t *testing.T, s *Store) bool {
	t.Helper()
	var on sql.NullInt64
	if err := s.db.QueryRowContext(t.Context(), "SELECT CAST(DATABASEPROPERTYEX(DB_NAME(), 'IsOptimizedLockingOn') AS INT);").Scan(&on); err != nil {
		t.Fatal(err)
	}
	return on.Int64 == 1
}

// inLockingModes runs a lock test on a fresh schema in the server's own
// database, and again in a database of its own with optimized locking on
// (skipped with one line where the server has none).
func inLockingModes(t *testing.T, test func(t *testing.T, dsn, name string)) {
	t.Run("default", func(t *testing.T) {
		dsn, name := sqlservertest.NewSchema(t)
		test(t, dsn, name)
	})
	t.Run("OPTIMIZED_LOCKING_ON", func(t *testing.T) {
		dsn, name := sqlservertest.NewDatabase(t, optimizedLockingDatabase(t)...)
		test(t, dsn, name)
	})
}

// TestSQLServerHintSets runs first (the file sorts first among the SQL
// Server tests of the package): every statement must compile and run with
// its hints as written, with READ_COMMITTED_SNAPSHOT off and on, and
// READPAST must skip a locked row under both, not wait for it and not take
// it. The Table Hints page lists ROWLOCK and READCOMMITTEDLOCK in one group
// of which one may be given, yet asks for READCOMMITTEDLOCK next to
// READPAST under READ_COMMITTED_SNAPSHOT; the statements give both, as
// queues in production do, and what the server does is what decides
// (ADR 0016).
func TestSQLServerHintSets(t *testing.T) {
	for _, mode := range []string{"READ_COMMITTED_SNAPSHOT_OFF", "READ_COMMITTED_SNAPSHOT_ON",
		"READ_COMMITTED_SNAPSHOT_OFF_OPTIMIZED_LOCKING_ON", "READ_COMMITTED_SNAPSHOT_ON_OPTIMIZED_LOCKING_ON"} {
		t.Run(mode, func(t *testing.T) {
			rcsi := "OFF"
			if strings.HasPrefix(mode, "READ_COMMITTED_SNAPSHOT_ON") {
				rcsi = "ON"
			}
			setup := []string{"ALTER DATABASE %s SET READ_COMMITTED_SNAPSHOT " + rcsi + " WITH ROLLBACK IMMEDIATE"}
			if strings.HasSuffix(mode, "OPTIMIZED_LOCKING_ON") {
				setup = optimizedLockingDatabase(t, setup...)
			}
			dsn, name := sqlservertest.NewDatabase(t, setup...)
			s := openOn(t, dsn, name)
			if want := strings.HasSuffix(mode, "OPTIMIZED_LOCKING_ON"); optimizedLockingOn(t, s) != want {
				t.Fatalf("optimized locking on: %v, want %v", !want, want)
			}
			storetest.RunTransitions(t, harnessOn(s))

			// A row locked by another transaction is skipped by the claim,
			// at once.
			ctx := t.Context()
			ids := make([]int64, 3)
			for i := range ids {
				r, err := s.Enqueue(ctx, jobs.EnqueueParams{Queue: "readpast", Type: "t"})
				if err != nil {
					t.Fatal(err)
				}
				ids[i] = r.ID
			}
			tx, err := s.pool.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			lock := fmt.Sprintf("UPDATE %s.JobsHot WITH (ROWLOCK) SET Priority = Priority WHERE Id = @id;", schema.Quote(s.Schema()))
			if _, err := tx.ExecContext(ctx, lock, named("id", ids[0])); err != nil {
				t.Fatal(err)
			}
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			began := time.Now()
			got, err := s.Claim(cctx, jobs.ClaimParams{WorkerID: "w", Queues: []string{"readpast"}, Limit: 3})
			if err != nil {
				t.Fatalf("claim beside a locked row: %v (did it wait?)", err)
			}
			// Under optimized locking the other transaction's row lock is
			// gone and only its transaction-ID lock protects the row: this is
			// where that is settled. Log what it held and how long the claim took.
			t.Logf("%s: the claim beside a row another transaction updated took %v; that transaction holds:", mode, time.Since(began))
			heldLocks(t, tx)
			for _, j := range got {
				if j.ID == ids[0] {
					t.Fatalf("the claim took job %d, which another transaction holds", ids[0])
				}
			}
			if len(got) != 2 {
				t.Fatalf("claimed %d jobs, want the 2 unlocked ones", len(got))
			}
			// The due probe reads past the one Pending row left, which the
			// other transaction holds, at once: false, not a wait (ADR 0027).
			due, err := s.Probe(cctx, []string{"readpast"})
			if err != nil {
				t.Fatalf("probe beside a locked row: %v (did it wait?)", err)
			}
			if due {
				t.Fatalf("the probe saw job %d, which another transaction holds", ids[0])
			}
			if err := tx.Rollback(); err != nil {
				t.Fatal(err)
			}
			if due, err := s.Probe(cctx, []string{"READPAST", "other"}); err != nil || !due {
				t.Fatalf("probe after the rollback: %v, %v; want the job released by the rollback seen", due, err)
			}
		})
	}
}

// errorCounter counts the errors of a race: deadlock victims (1205) into
// deadlocks, any other into other (logged).
func errorCounter(t *testing.T, deadlocks, other *atomic.Int64) func(error) {
	return func(err error) {
		var me mssql.Error
		switch {
		case err == nil:
		case errors.As(err, &me) && me.Number == 1205:
			deadlocks.Add(1)
		default:
			other.Add(1)
			t.Logf("error: %v", err)
		}
	}
}

// TestSQLServerRescueDoesNotDeadlockWithHeartbeats: 200 Processing jobs
// heartbeat in a tight loop while the three rescue phases sweep over and
// over for 10 s. Half the jobs are past their deadline (hung handlers that
// still beat: what phase 3 is for). With retries off, a deadlock victim
// (1205) on either side surfaces as an error; there must be none, and the
// jobs that should move do.
func TestSQLServerRescueDoesNotDeadlockWithHeartbeats(t *testing.T) {
	inLockingModes(t, func(t *testing.T, dsn, name string) {
		s := openOn(t, dsn, name, WithRetryPolicy(RetryPolicy{MaxAttempts: 1}))
		ctx := t.Context()
		running := runningJobs(t, s, "race", 200)
		expired := map[int64]bool{}
		for _, j := range running[:100] {
			expired[j.ID] = true
			q := fmt.Sprintf("UPDATE %s.JobsHot SET DeadlineUtc = DATEADD(SECOND, -1, SYSUTCDATETIME()) WHERE Id = @id;", schema.Quote(s.Schema()))
			if _, err := s.db.ExecContext(ctx, q, named("id", j.ID)); err != nil {
				t.Fatal(err)
			}
		}
		refs := make([]jobs.LeaseRef, len(running))
		for i, j := range running {
			refs[i] = j.Ref()
		}
		var deadlocks, other atomic.Int64
		count := errorCounter(t, &deadlocks, &other)
		stop := time.Now().Add(10 * time.Second)
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(stop) {
					// Each beater sends a different quarter first, so the
					// statements meet rows in every order.
					_, err := s.Heartbeat(ctx, append(refs[w*50:], refs[:w*50]...))
					count(err)
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				for _, phase := range []func() ([]jobs.Rescued, error){
					func() ([]jobs.Rescued, error) { return s.RescueFetched(ctx, jobs.RescueParams{Timeout: time.Hour}) },
					func() ([]jobs.Rescued, error) { return s.RescueZombies(ctx, jobs.RescueParams{Timeout: time.Hour}) },
					func() ([]jobs.Rescued, error) { return s.RescueExpired(ctx, jobs.RescueParams{}) },
				} {
					_, err := phase()
					count(err)
				}
			}
		}()
		wg.Wait()
		if deadlocks.Load() != 0 || other.Load() != 0 {
			t.Fatalf("%d deadlock victims and %d other errors while rescue raced heartbeats", deadlocks.Load(), other.Load())
		}
		for _, j := range running {
			got, err := s.GetJob(ctx, j.ID)
			if err != nil {
				t.Fatal(err)
			}
			if expired[j.ID] != (got.Table == jobs.TableDLQ && got.FailureReason == jobs.ReasonTimeout) {
				t.Fatalf("job %d (past its deadline: %v) is in %s with reason %s", j.ID, expired[j.ID], got.Table, got.FailureReason)
			}
		}
	})
}

// TestSQLServerRescueLockFootprintWithManyRunning: with 6,000 jobs
// running and heartbeating (none due for rescue), one sweep of each phase
// holds no table or HoBT lock and a few dozen key locks at most: the phases
// seek their cutoffs and read no live row.
func TestSQLServerRescueLockFootprintWithManyRunning(t *testing.T) {
	inLockingModes(t, func(t *testing.T, dsn, name string) {
		s := openOn(t, dsn, name)
		ctx := t.Context()
		runningJobs(t, s, "many", 6000)
		for name, stmt := range map[string]string{"fetched": s.q.rescueFetched, "zombies": s.q.rescueZombies, "expired": s.q.rescueExpired} {
			t.Run(name, func(t *testing.T) {
				tx, err := s.pool.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
				if err != nil {
					t.Fatal(err)
				}
				defer tx.Rollback()
				if moved := rescueInTx(t, s, tx, stmt, 500, time.Hour); moved != 0 {
					t.Fatalf("moved %d live jobs", moved)
				}
				keys := 0
				for _, l := range heldLocks(t, tx) {
					switch {
					case l.typ == "OBJECT" && l.mode != "IX" && l.mode != "IS" && l.mode != "Sch-S":
						t.Errorf("a %s table lock", l.mode)
					case l.typ == "HOBT":
						t.Errorf("a %s HoBT lock", l.mode)
					case l.typ == "KEY":
						keys += l.n
					}
				}
				if keys > 40 {
					t.Fatalf("the sweep holds %d key locks with 6,000 jobs running, want a few dozen at most", keys)
				}
			})
		}
	})
}

// TestSQLServerKeyedEnqueuesOfDistinctKeysDoNotWait: 50 transactions,
// each open, enqueue one of 50 monotonic keys at once. A key-range lock
// would make each wait for the one before it to commit; the key's own
// application lock does not, so every enqueue returns while every
// transaction is still open.
func TestSQLServerKeyedEnqueuesOfDistinctKeysDoNotWait(t *testing.T) {
	inLockingModes(t, func(t *testing.T, dsn, name string) {
		const n = 50
		s := openOn(t, dsn, name, WithRetryPolicy(RetryPolicy{MaxAttempts: 1}))
		ctx := t.Context()
		s.DB().SetMaxOpenConns(n + 5)
		single := time.Now()
		if _, err := s.Enqueue(ctx, jobs.EnqueueParams{Type: "t", IdempotencyKey: "order-0000"}); err != nil {
			t.Fatal(err)
		}
		one := time.Since(single)
		txs := make([]*sql.Tx, n)
		for i := range txs {
			tx, err := s.pool.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			txs[i] = tx
			defer tx.Rollback()
		}
		startLine := make(chan struct{})
		errs := make([]error, n)
		var wg sync.WaitGroup
		began := time.Now()
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-startLine
				cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				_, errs[i] = s.EnqueueTx(cctx, txs[i], jobs.EnqueueParams{Type: "t", IdempotencyKey: fmt.Sprintf("order-%04d", 1001+i)})
			}()
		}
		close(startLine)
		wg.Wait()
		all := time.Since(began)
		for i, err := range errs {
			if err != nil {
				t.Fatalf("enqueue %d, with the other transactions open: %v (did it wait on another key?)", i, err)
			}
		}
		for _, tx := range txs {
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("one keyed enqueue %v; 50 at once, each in an open transaction, %v", one, all)
		if n, err := s.CountJobs(ctx, jobs.TableHot, jobs.Filter{}); err != nil || n != 51 {
			t.Fatalf("%d jobs, %v; want 51", n, err)
		}
	})
}

// TestSQLServerSameKeyFromTwentySessionsOneInSnapshot: one key, 19
// sessions enqueueing it on their own and one inside a SNAPSHOT
// transaction that began before any of them: one job, no error. The
// snapshot session's plain read would miss the job committed after its
// snapshot began, and its insert would then fail on the unique index; the
// statement reads the latest committed row under the key's lock instead.
func TestSQLServerSameKeyFromTwentySessionsOneInSnapshot(t *testing.T) {
	for _, mode := range []string{"default", "OPTIMIZED_LOCKING_ON"} {
		t.Run(mode, func(t *testing.T) {
			setup := []string{"ALTER DATABASE %s SET ALLOW_SNAPSHOT_ISOLATION ON"}
			if mode != "default" {
				setup = optimizedLockingDatabase(t, setup...)
			}
			dsn, name := sqlservertest.NewDatabase(t, setup...)
			sameKeyFromTwentySessions(t, dsn, name)
		})
	}
}

func sameKeyFromTwentySessions(t *testing.T, dsn, name string) {
	s := openOn(t, dsn, name, WithRetryPolicy(RetryPolicy{MaxAttempts: 1}))
	ctx := t.Context()
	snap, err := s.pool.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelSnapshot})
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Rollback()
	var n int
	if err := snap.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+schema.Quote(s.Schema())+".JobsHot").Scan(&n); err != nil {
		t.Fatal(err) // the snapshot begins at its first read
	}
	results := make([]jobs.EnqueueResult, 20)
	errs := make([]error, 20)
	var wg sync.WaitGroup
	for i := range 19 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = s.Enqueue(ctx, jobs.EnqueueParams{Type: "t", IdempotencyKey: "the-key"})
		}()
	}
	wg.Wait()
	results[19], errs[19] = s.EnqueueTx(ctx, snap, jobs.EnqueueParams{Type: "t", IdempotencyKey: "the-key"})
	if err := snap.Commit(); err != nil && errs[19] == nil {
		errs[19] = err
	}
	fresh := 0
	for i, err := range errs {
		if err != nil {
			t.Fatalf("session %d: %v", i, err)
		}
		if results[i].ID != results[0].ID {
			t.Fatalf("session %d got job %d, session 0 job %d", i, results[i].ID, results[0].ID)
		}
		if !results[i].Duplicate {
			fresh++
		}
	}
	if fresh != 1 {
		t.Fatalf("%d sessions inserted a job, want 1", fresh)
	}
}

// TestSQLServerPurgeByAgeLeavesCompletesAlone purges 20,000 archived rows
// by age in batches of 1,000 while jobs complete into the same archive:
// no lock is escalated to the table, and no complete waits longer than a
// purge batch takes.
func TestSQLServerPurgeByAgeLeavesCompletesAlone(t *testing.T) {
	inLockingModes(t, func(t *testing.T, dsn, name string) {
		s := openOn(t, dsn, name)
		ctx := t.Context()
		fill := fmt.Sprintf(`WITH n AS (SELECT TOP (20000) ROW_NUMBER() OVER (ORDER BY (SELECT NULL)) AS i FROM sys.all_columns a CROSS JOIN sys.all_columns b)
	INSERT INTO %[1]s.JobsArchive (Id, Queue, Type, Payload, Priority, MaxAttempts, AttemptCount, CreatedAtUtc, ScheduledAtUtc, RunLease, FinishedAtUtc)
	SELECT NEXT VALUE FOR %[1]s.JobIds, N'old', N't', 0x7B7D, 0, 1, 1, DATEADD(DAY, -30, SYSUTCDATETIME()), DATEADD(DAY, -30, SYSUTCDATETIME()), 1,
	    DATEADD(SECOND, -i, DATEADD(DAY, -30, SYSUTCDATETIME())) FROM n;`, schema.Quote(s.Schema()))
		if _, err := s.db.ExecContext(ctx, fill); err != nil {
			t.Fatal(err)
		}
		promotions := func() int64 {
			var n int64
			q := "SELECT ISNULL(SUM(index_lock_promotion_count), 0) FROM sys.dm_db_index_operational_stats(DB_ID(), OBJECT_ID(@t), NULL, NULL);"
			if err := s.db.QueryRowContext(ctx, q, named("t", text(s.Schema()+".JobsArchive"))).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		before := promotions()
		done := make(chan struct{})
		var slowest atomic.Int64
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				j := runningJobs(t, s, "live", 1)[0]
				began := time.Now()
				if err := s.Complete(ctx, j.Ref()); err != nil {
					t.Error(err)
					return
				}
				if d := int64(time.Since(began)); d > slowest.Load() {
					slowest.Store(d)
				}
			}
		}()
		s.bulkBatch = 1000
		began := time.Now()
		n, err := s.Purge(ctx, jobs.PurgeParams{Table: jobs.TableArchive, Filter: jobs.Filter{OlderThan: 7 * 24 * time.Hour}})
		took := time.Since(began)
		close(done)
		wg.Wait()
		if err != nil || n != 20000 {
			t.Fatalf("purged %d, %v; want 20000", n, err)
		}
		if p := promotions() - before; p != 0 {
			t.Fatalf("%d lock escalations on the archive during the purge", p)
		}
		perBatch := took / 20
		t.Logf("purge of 20,000 in %v (%v a batch); slowest complete meanwhile %v", took, perBatch, time.Duration(slowest.Load()))
		if time.Duration(slowest.Load()) > perBatch+time.Second {
			t.Fatalf("a complete waited %v, longer than a purge batch (%v)", time.Duration(slowest.Load()), perBatch)
		}
	})
}

// logicalReads is the pages conn's session has read so far.
func logicalReads(t *testing.T, conn *sql.Conn) int64 {
	t.Helper()
	var n int64
	if err := conn.QueryRowContext(t.Context(), "SELECT logical_reads FROM sys.dm_exec_sessions WHERE session_id = @@SPID;").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestSQLServerQueueStatsReadsPerPoll: QueueStats over an archive of
// 100,000 rows reads a bounded number of pages, however many rows the
// archive holds: the counts stop at the cap and the queues are found one
// seek each. The number is logged for the ADR.
func TestSQLServerQueueStatsReadsPerPoll(t *testing.T) {
	s := openTestStore(t)
	ctx := t.Context()
	fill := fmt.Sprintf(`WITH n AS (SELECT TOP (100000) ROW_NUMBER() OVER (ORDER BY (SELECT NULL)) AS i FROM sys.all_columns a CROSS JOIN sys.all_columns b)
INSERT INTO %[1]s.JobsArchive (Id, Queue, Type, Payload, Priority, MaxAttempts, AttemptCount, CreatedAtUtc, ScheduledAtUtc, RunLease, FinishedAtUtc)
SELECT NEXT VALUE FOR %[1]s.JobIds, CONCAT(N'q', i %% 5), N't', 0x7B7D, 0, 1, 1, SYSUTCDATETIME(), SYSUTCDATETIME(), 1, SYSUTCDATETIME() FROM n;`, schema.Quote(s.Schema()))
	if _, err := s.db.ExecContext(ctx, fill); err != nil {
		t.Fatal(err)
	}
	conn, err := s.pool.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	reads := func() int64 { return logicalReads(t, conn) }
	before := reads()
	rows, err := conn.QueryContext(ctx, s.q.queueStats, named("cap", int64(s.statsCap)), named("maxQueues", int64(jobs.MaxStatsQueues)))
	if err != nil {
		t.Fatal(err)
	}
	queues := 0
	for rows.Next() {
		queues++
	}
	rows.Close()
	used := reads() - before
	t.Logf("QueueStats over a 100,000-row archive of 5 queues: %d logical reads (cap %d)", used, s.statsCap)
	if queues != 5 {
		t.Fatalf("%d queues, want 5", queues)
	}
	if used > 2000 {
		t.Fatalf("QueueStats read %d pages: it scans the archive", used)
	}
}

// TestSQLServerFinishedCountsReadsPerPoll: the dashboard's chart queries
// against an archive of 1,000,000 jobs spread over 14 days read the range
// of one narrow index each, never the tables: the live window a few pages,
// the 14-day history the whole index once. The numbers are logged for
// ADR 0022.
func TestSQLServerFinishedCountsReadsPerPoll(t *testing.T) {
	s := openTestStore(t)
	ctx := t.Context()
	fill := fmt.Sprintf(`WITH n AS (SELECT TOP (1000000) ROW_NUMBER() OVER (ORDER BY (SELECT NULL)) AS i FROM sys.all_columns a CROSS JOIN sys.all_columns b CROSS JOIN sys.all_columns c)
INSERT INTO %[1]s.JobsArchive (Id, Queue, Type, Payload, Priority, MaxAttempts, AttemptCount, CreatedAtUtc, ScheduledAtUtc, RunLease, FinishedAtUtc)
SELECT NEXT VALUE FOR %[1]s.JobIds, CONCAT(N'q', i %% 5), N't', 0x7B7D, 0, 1, 1, SYSUTCDATETIME(), SYSUTCDATETIME(), 1,
    DATEADD(MILLISECOND, -CAST(i * 1209 %% 1000 AS INT), DATEADD(SECOND, -CAST(i * 1209 / 1000 AS INT), SYSUTCDATETIME())) FROM n;`, schema.Quote(s.Schema()))
	if _, err := s.db.ExecContext(ctx, fill); err != nil {
		t.Fatal(err)
	}
	now, err := s.Now(ctx)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := s.pool.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	reads := func() int64 { return logicalReads(t, conn) }
	for _, c := range []struct {
		name     string
		p        jobs.FinishedCountsParams
		maxReads int64
	}{
		{"live: the last 6 s in 2 s buckets", jobs.FinishedCountsParams{From: now.Add(-6 * time.Second), To: now.Add(time.Second), Bucket: 2 * time.Second}, 50},
		{"48 hours by the hour", jobs.FinishedCountsParams{From: now.Add(-48 * time.Hour), To: now, Bucket: time.Hour}, 2000},
		{"14 days by the day", jobs.FinishedCountsParams{From: now.Add(-14 * 24 * time.Hour), To: now, Bucket: 24 * time.Hour}, 10000},
		{"14 days of one queue", jobs.FinishedCountsParams{From: now.Add(-14 * 24 * time.Hour), To: now, Bucket: 24 * time.Hour, Queue: "q1"}, 3000},
	} {
		before := reads()
		started := time.Now()
		rows, err := conn.QueryContext(ctx, s.q.finishedCounts, named("queue", text(c.p.Queue)), named("bucketSeconds", int64(c.p.Bucket/time.Second)),
			named("from", instant(c.p.From)), named("to", instant(c.p.To)))
		if err != nil {
			t.Fatal(err)
		}
		var total int64
		for rows.Next() {
			var table, n, reason, count int64
			var queue string
			if err := rows.Scan(&table, &queue, &n, &reason, &count); err != nil {
				t.Fatal(err)
			}
			total += count
		}
		rows.Close()
		used := reads() - before
		t.Logf("%s over a 1,000,000-job archive: %d jobs counted, %d logical reads, %v", c.name, total, used, time.Since(started))
		if used > c.maxReads {
			t.Errorf("%s read %d pages, more than %d: it reads more than its index range", c.name, used, c.maxReads)
		}
	}
}

// TestSQLServerTrimStepsReadWhatTheyDelete: the retention loop's trim of
// one queue with 20,000 expired jobs, in steps of 1,000, each continuing
// after the last job the step before deleted: the last step reads about as
// many pages as the first, not the ghost records of the 19,000 rows the
// steps before it deleted (which a seek from the queue's oldest end would
// read again at every step). The reads are logged for ADR 0020.
func TestSQLServerTrimStepsReadWhatTheyDelete(t *testing.T) {
	s := openTestStore(t)
	ctx := t.Context()
	fill := fmt.Sprintf(`WITH n AS (SELECT TOP (20000) ROW_NUMBER() OVER (ORDER BY (SELECT NULL)) AS i FROM sys.all_columns a CROSS JOIN sys.all_columns b)
INSERT INTO %[1]s.JobsArchive (Id, Queue, Type, Payload, Priority, MaxAttempts, AttemptCount, CreatedAtUtc, ScheduledAtUtc, RunLease, FinishedAtUtc)
SELECT NEXT VALUE FOR %[1]s.JobIds, N'bulk', N't', 0x7B7D, 0, 1, 1, SYSUTCDATETIME(), SYSUTCDATETIME(), 1,
    DATEADD(SECOND, -CAST(i AS INT), DATEADD(DAY, -8, SYSUTCDATETIME())) FROM n;`, schema.Quote(s.Schema()))
	if _, err := s.db.ExecContext(ctx, fill); err != nil {
		t.Fatal(err)
	}
	conn, err := s.pool.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	p := jobs.TrimParams{Table: jobs.TableArchive, Queue: "bulk", OlderThan: 7 * 24 * time.Hour, Limit: 1000}
	var perStep []int64
	total := 0
	for {
		before := logicalReads(t, conn)
		var n int64
		var last sql.NullTime
		var lastID sql.NullInt64
		err := conn.QueryRowContext(ctx, s.q.trim[p.Table], named("queue", text(p.Queue)), named("olderThanMs", p.OlderThan.Milliseconds()),
			named("limit", int64(p.Limit)), named("hasAfter", flag(p.After.ID != 0)), named("afterUtc", instant(p.After.FinishedAt)),
			named("afterId", p.After.ID)).Scan(&n, &last, &lastID)
		if err != nil {
			t.Fatal(err)
		}
		perStep = append(perStep, logicalReads(t, conn)-before)
		total += int(n)
		if n < int64(p.Limit) {
			break
		}
		p.After = jobs.TrimKey{FinishedAt: last.Time, ID: lastID.Int64}
	}
	t.Logf("trim of 20,000 expired jobs in steps of 1,000: %d deleted, logical reads per step %v", total, perStep)
	if total != 20000 {
		t.Fatalf("trimmed %d jobs, want 20,000", total)
	}
	if first, last := perStep[0], perStep[len(perStep)-2]; last > 3*first+100 {
		t.Fatalf("the 20th step read %d pages, the first %d: the steps re-read what the earlier ones deleted", last, first)
	}
}

// TestSQLServerLeastPrivilegeLogin runs the contract with a login that has
// only the schema's application role: every table-valued parameter, the
// sequence and the application locks work with it.
func TestSQLServerLeastPrivilegeLogin(t *testing.T) {
	dsn, name := sqlservertest.NewDatabase(t)
	appDSN := sqlservertest.NewRoleLogin(t, dsn, name+"_app")
	s := openOn(t, appDSN, name)
	storetest.RunTransitions(t, harnessOn(s))

	// The role reads the migrations table (CheckSchema did, above) and
	// cannot write it: error 229, permission denied.
	ctx := t.Context()
	table := schema.Quote(name) + "." + schema.Quote(schema.MigrationsTable)
	for _, write := range []string{
		"UPDATE " + table + " SET dirty = 1;",
		"DELETE FROM " + table + ";",
		"INSERT INTO " + table + " (version, dirty) VALUES (999, 0);",
	} {
		_, err := s.db.ExecContext(ctx, write)
		if me, ok := errors.AsType[mssql.Error](err); !ok || me.Number != 229 {
			t.Errorf("the application role ran %q: %v, want error 229 (permission denied)", write, err)
		}
	}
}

// TestSQLServerCapSetWhileClaimersRun: eight claimers take jobs of a queue
// as fast as they can, holding every job they take, while an operator sets
// MaxWorkers. Whatever they held when the cap was committed, no claim after
// it may add to a number at or over the cap: a claim that read "no cap"
// before the operator's commit and claimed after it is what breaks I6.
func TestSQLServerCapSetWhileClaimersRun(t *testing.T) {
	inLockingModes(t, func(t *testing.T, dsn, name string) {
		const claimers, limit = 8, 12
		s := openOn(t, dsn, name)
		ctx := t.Context()
		ps := make([]jobs.EnqueueParams, 1000)
		for i := range ps {
			ps[i] = jobs.EnqueueParams{Queue: "capped", Type: "t"}
		}
		if _, err := s.EnqueueMany(ctx, ps); err != nil {
			t.Fatal(err)
		}
		fetched := jobs.StatusFetched
		held := func() int64 {
			n, err := s.CountJobs(ctx, jobs.TableHot, jobs.Filter{Queue: "capped", Status: &fetched})
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := range claimers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					if _, err := s.Claim(ctx, jobs.ClaimParams{WorkerID: fmt.Sprintf("w%d", w), Queues: []string{"capped"}, Limit: 1}); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		time.Sleep(20 * time.Millisecond)
		max := limit
		if _, err := s.UpdateQueue(ctx, "capped", jobs.QueueUpdate{MaxWorkers: &max}); err != nil {
			t.Fatal(err)
		}
		atCap := held()
		time.Sleep(2 * time.Second)
		close(stop)
		wg.Wait()
		after := held()
		t.Logf("held when the cap of %d was committed: %d; two seconds later: %d", limit, atCap, after)
		if after > max64(atCap, limit) {
			t.Fatalf("claims after the cap took the queue from %d to %d jobs, past MaxWorkers %d", atCap, after, limit)
		}
	})
}

func max64(a int64, b int) int64 { return max(a, int64(b)) }

// flakyConnector drops the reply of the first claim: the statement runs and
// commits on the server, then the client sees a reset connection, as after
// a network cut.
type flakyConnector struct {
	driver.Connector
	claim   string
	dropped atomic.Bool
}

func (c *flakyConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &flakyConn{Conn: conn, c: c}, nil
}

type flakyConn struct {
	driver.Conn
	c *flakyConnector
}

func (f *flakyConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	rows, err := f.Conn.(driver.QueryerContext).QueryContext(ctx, query, args)
	if err == nil && query == f.c.claim && f.c.dropped.CompareAndSwap(false, true) {
		dest := make([]driver.Value, len(rows.Columns()))
		for rows.Next(dest) == nil {
		}
		rows.Close()
		return nil, &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")}
	}
	return rows, err
}

func (f *flakyConn) CheckNamedValue(nv *driver.NamedValue) error {
	if c, ok := f.Conn.(driver.NamedValueChecker); ok {
		return c.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

// TestSQLServerClaimAfterALostReplyAdoptsItsRows: the first claim commits
// but its reply is lost; the store's retry adopts the rows it took, so the
// worker gets them and none is left Fetched for rescue phase 1.
func TestSQLServerClaimAfterALostReplyAdoptsItsRows(t *testing.T) {
	dsn, name := sqlservertest.NewSchema(t)
	base, err := mssql.NewConnector(dsn)
	if err != nil {
		t.Fatal(err)
	}
	fc := &flakyConnector{Connector: base}
	s, err := New(sql.OpenDB(fc), WithSchema(name))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fc.claim = s.q.claim
	ctx := t.Context()
	for range 5 {
		if _, err := s.Enqueue(ctx, jobs.EnqueueParams{Type: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Claim(ctx, jobs.ClaimParams{WorkerID: "w", Queues: []string{jobs.DefaultQueue}, Limit: 3})
	if err != nil || !fc.dropped.Load() {
		t.Fatalf("claim: %v (reply dropped: %v)", err, fc.dropped.Load())
	}
	fetched := jobs.StatusFetched
	n, err := s.CountJobs(ctx, jobs.TableHot, jobs.Filter{Status: &fetched})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || n != 3 {
		t.Fatalf("the retried claim returned %d jobs and %d are Fetched; want the 3 the lost attempt took, and no others", len(got), n)
	}
}

// TestSQLServerCompatibilityLevel: CheckSchema refuses a database below
// level 130 and says how to raise it. (schema.Up refuses to migrate one:
// the level is lowered after migrating, as an upgrade from an older server
// leaves a database whose schema a newer binary migrated.)
func TestSQLServerCompatibilityLevel(t *testing.T) {
	dsn, name := sqlservertest.NewDatabase(t)
	s, err := Open(t.Context(), dsn, WithSchema(name))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.db.ExecContext(t.Context(), "ALTER DATABASE CURRENT SET COMPATIBILITY_LEVEL = 120;"); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckSchema(t.Context()); !errors.Is(err, ErrCompatibilityLevel) || !strings.Contains(err.Error(), "level 120") {
		t.Fatalf("CheckSchema at level 120: %v", err)
	}
	if _, err := s.db.ExecContext(t.Context(), "ALTER DATABASE CURRENT SET COMPATIBILITY_LEVEL = 150;"); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckSchema(t.Context()); err != nil {
		t.Fatalf("CheckSchema at level 150: %v", err)
	}
}

// TestSQLServerClaimReleasesLocksBeforeTheClientReads: a claim of 20 jobs
// with half-megabyte payloads on a capped queue whose rows the client does
// not read yet must not hold the queue: another claim of the queue goes
// through at once, since the claimed rows are sent after COMMIT.
func TestSQLServerClaimReleasesLocksBeforeTheClientReads(t *testing.T) {
	inLockingModes(t, func(t *testing.T, dsn, name string) {
		s := openOn(t, dsn, name)
		ctx := t.Context()
		max := 100
		if _, err := s.UpdateQueue(ctx, "fat", jobs.QueueUpdate{MaxWorkers: &max}); err != nil {
			t.Fatal(err)
		}
		payload := []byte(`"` + strings.Repeat("x", 512<<10) + `"`)
		for range 40 {
			if _, err := s.Enqueue(ctx, jobs.EnqueueParams{Queue: "fat", Type: "t", Payload: payload}); err != nil {
				t.Fatal(err)
			}
		}
		rows, err := s.db.QueryContext(ctx, s.q.claim, named("queue", text("fat")), named("worker", text("slow-reader")),
			named("limit", int64(20)), named("claimId", int64(1)), named("lockTimeoutMs", s.lockTimeoutMs()))
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close() // not read: the server is left sending 10 MB
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if _, err := s.Claim(cctx, jobs.ClaimParams{WorkerID: "other", Queues: []string{"fat"}, Limit: 1}); err != nil {
			t.Fatalf("a second claim of the queue waited on the first one's unread rows: %v", err)
		}
	})
}

// TestSQLServerRescuePhasesFromTwoProcessesDoNotDeadlock: 2,000 running
// jobs are both silent and past their deadline, so phase 2 and phase 3
// both want every one of them. Two processes (two pools on one schema)
// sweep phases 2 and 3 against each other in batches of 50, with retries
// off: the rescue lock lets one batch run at a time, so no deadlock victim
// (1205) surfaces, and every job is dead-lettered once and reported once.
func TestSQLServerRescuePhasesFromTwoProcessesDoNotDeadlock(t *testing.T) {
	inLockingModes(t, func(t *testing.T, dsn, name string) {
		const n = 2000
		noRetry := WithRetryPolicy(RetryPolicy{MaxAttempts: 1})
		stores := [2]*Store{openOn(t, dsn, name, noRetry), openOn(t, dsn, name, noRetry)}
		ctx := t.Context()
		runningJobs(t, stores[0], "both", n)
		age := fmt.Sprintf("UPDATE %s.JobsHot SET HeartbeatUtc = DATEADD(MINUTE, -10, SYSUTCDATETIME()), DeadlineUtc = DATEADD(SECOND, -1, SYSUTCDATETIME());",
			schema.Quote(name))
		if _, err := stores[0].db.ExecContext(ctx, age); err != nil {
			t.Fatal(err)
		}
		var deadlocks, other atomic.Int64
		var mu sync.Mutex
		reported := map[int64]int{}
		var wg sync.WaitGroup
		for i, s := range stores {
			wg.Go(func() {
				p := jobs.RescueParams{Timeout: time.Minute, Limit: 50}
				for idle := 0; idle < 3; {
					phases := []func(context.Context, jobs.RescueParams) ([]jobs.Rescued, error){s.RescueZombies, s.RescueExpired}
					if i == 1 {
						phases[0], phases[1] = phases[1], phases[0] // the other order in the other process
					}
					moved := 0
					for _, phase := range phases {
						got, err := phase(ctx, p)
						var me mssql.Error
						switch {
						case errors.As(err, &me) && me.Number == 1205:
							deadlocks.Add(1)
						case err != nil:
							other.Add(1)
							t.Logf("process %d: %v", i, err)
						}
						mu.Lock()
						for _, r := range got {
							reported[r.ID]++
						}
						mu.Unlock()
						moved += len(got)
					}
					if moved == 0 {
						idle++
					}
				}
			})
		}
		wg.Wait()
		if deadlocks.Load() != 0 || other.Load() != 0 {
			t.Fatalf("%d deadlock victims and %d other errors while two processes ran phases 2 and 3", deadlocks.Load(), other.Load())
		}
		if len(reported) != n {
			t.Fatalf("%d jobs reported rescued, want %d", len(reported), n)
		}
		for id, k := range reported {
			if k != 1 {
				t.Fatalf("job %d reported rescued %d times", id, k)
			}
		}
		hot, err := stores[0].CountJobs(ctx, jobs.TableHot, jobs.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		dead, err := stores[0].CountJobs(ctx, jobs.TableDLQ, jobs.Filter{})
		if err != nil || hot != 0 || dead != n {
			t.Fatalf("after the sweeps %d jobs are hot and %d dead-lettered (%v), want 0 and %d", hot, dead, err, n)
		}
	})
}

// TestSQLServerCheckSchemaRefusesACaseSensitiveDatabase: in a database
// whose default collation is case-sensitive, the schema's name columns
// compare "orders" and "Orders" as two queues, which no other store does:
// CheckSchema refuses it and names the collation.
func TestSQLServerCheckSchemaRefusesACaseSensitiveDatabase(t *testing.T) {
	dsn, name := sqlservertest.NewDatabase(t, "ALTER DATABASE %s COLLATE Latin1_General_100_CS_AS")
	s, err := Open(t.Context(), dsn, WithSchema(name))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.CheckSchema(t.Context()); !errors.Is(err, ErrCaseSensitiveNames) || !strings.Contains(err.Error(), "Latin1_General_100_CS_AS") {
		t.Fatalf("CheckSchema in a case-sensitive database: %v, want ErrCaseSensitiveNames naming the collation", err)
	}
}

// TestSQLServerPurgeBatchesReadWhatTheyDelete: a purge by age of 20,000
// archived jobs in batches of 1,000, each starting after the last job the
// batch before deleted: the last batch reads about as many pages as the
// first, not the ghost records the 19,000 deletes before it left. The
// reads are logged for ADR 0016.
func TestSQLServerPurgeBatchesReadWhatTheyDelete(t *testing.T) {
	s := openTestStore(t)
	ctx := t.Context()
	fill := fmt.Sprintf(`WITH n AS (SELECT TOP (20000) ROW_NUMBER() OVER (ORDER BY (SELECT NULL)) AS i FROM sys.all_columns a CROSS JOIN sys.all_columns b)
INSERT INTO %[1]s.JobsArchive (Id, Queue, Type, Payload, Priority, MaxAttempts, AttemptCount, CreatedAtUtc, ScheduledAtUtc, RunLease, FinishedAtUtc)
SELECT NEXT VALUE FOR %[1]s.JobIds, CONCAT(N'q', i %% 3), N't', 0x7B7D, 0, 1, 1, SYSUTCDATETIME(), SYSUTCDATETIME(), 1,
    DATEADD(SECOND, -CAST(i AS INT), DATEADD(DAY, -8, SYSUTCDATETIME())) FROM n;`, schema.Quote(s.Schema()))
	if _, err := s.db.ExecContext(ctx, fill); err != nil {
		t.Fatal(err)
	}
	conn, err := s.pool.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	asOf, err := s.Now(ctx)
	if err != nil {
		t.Fatal(err)
	}
	args := s.filterArgs(jobs.Filter{OlderThan: 7 * 24 * time.Hour}, &asOf)
	var perBatch []int64
	var after jobs.TrimKey
	total := 0
	for {
		before := logicalReads(t, conn)
		var n int64
		var last sql.NullTime
		var lastID sql.NullInt64
		err := conn.QueryRowContext(ctx, s.q.purge[jobs.TableArchive], append(args, named("limit", int64(1000)),
			named("hasAfter", flag(after.ID != 0)), named("afterUtc", instant(after.FinishedAt)), named("afterId", after.ID))...).
			Scan(&n, &last, &lastID)
		if err != nil {
			t.Fatal(err)
		}
		perBatch = append(perBatch, logicalReads(t, conn)-before)
		total += int(n)
		if n < 1000 {
			break
		}
		after = jobs.TrimKey{FinishedAt: last.Time, ID: lastID.Int64}
	}
	t.Logf("purge by age of 20,000 archived jobs in batches of 1,000: %d deleted, logical reads per batch %v", total, perBatch)
	if total != 20000 {
		t.Fatalf("purged %d jobs, want 20,000", total)
	}
	if first, last := perBatch[0], perBatch[len(perBatch)-2]; last > 3*first+100 {
		t.Fatalf("the 20th batch read %d pages, the first %d: the batches re-read what the earlier ones deleted", last, first)
	}
}
