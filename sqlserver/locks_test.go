package sqlserver

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-sql/civil"
	mssql "github.com/microsoft/go-mssqldb"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/schema"
)

// The server-free checks of ADR 0016: each reads the statements as the
// store sends them (or the migrations as golang-migrate runs them) and
// pins what the lock order and footprint of a statement depend on. What
// only a server shows (the locks actually taken, a deadlock that does not
// happen) is in the SQL Server tests beside them.

// derived returns the derived table (the candidate) of a batch statement.
func derived(t *testing.T, name, stmt string) string {
	t.Helper()
	i := strings.Index(stmt, "INNER JOIN (")
	if i < 0 {
		t.Fatalf("%s: no candidate derived table", name)
	}
	j := strings.Index(stmt[i:], ") AS x ON")
	if j < 0 {
		t.Fatalf("%s: the candidate is not named x", name)
	}
	return stmt[i : i+j]
}

// Phases 2 and 3 seek their cutoff on an index keyed by it, so they read
// only rows past it; their candidates join no table that locks (the per-
// queue timeouts come from a table variable).
func TestRescueCandidatesSeekTheirCutoff(t *testing.T) {
	q := render("my_schema")
	zombies := derived(t, "rescueZombies", q.rescueZombies)
	for _, want := range []string{"c.Status = 2 AND c.HeartbeatUtc < @loosest", "ORDER BY c.HeartbeatUtc", "LEFT JOIN @timeouts AS ct"} {
		if !strings.Contains(zombies, want) {
			t.Errorf("rescueZombies candidate lacks %q:\n%s", want, zombies)
		}
	}
	expired := derived(t, "rescueExpired", q.rescueExpired)
	for _, want := range []string{"c.Status = 2 AND c.DeadlineUtc < @now", "ORDER BY c.DeadlineUtc"} {
		if !strings.Contains(expired, want) {
			t.Errorf("rescueExpired candidate lacks %q:\n%s", want, expired)
		}
	}
	for name, cand := range map[string]string{"rescueZombies": zombies, "rescueExpired": expired, "rescueFetched": derived(t, "rescueFetched", q.rescueFetched)} {
		if strings.Contains(cand, "ISNULL(c.") {
			t.Errorf("%s: a function of the column in the candidate cannot seek:\n%s", name, cand)
		}
		if strings.Contains(cand, "[my_schema].Queues") {
			t.Errorf("%s: the candidate joins Queues: every candidate row read before the join is tested stays update-locked", name)
		}
	}
	up := migrationText(t, "my_schema", "000002")
	for _, want := range []string{
		"IX_JobsHot_Heartbeat\n    ON [my_schema].JobsHot (HeartbeatUtc) INCLUDE (Queue)\n    WHERE Status = 2;",
		"IX_JobsHot_Deadline\n    ON [my_schema].JobsHot (DeadlineUtc)\n    WHERE Status = 2;",
		"IX_JobsHot_Active\n    ON [my_schema].JobsHot (Status, LastUpdatedUtc) INCLUDE (Queue, WorkerId, ClaimId)\n    WHERE Status IN (1, 2);",
		"DROP INDEX IX_JobsHot_Status",
	} {
		if !strings.Contains(up, want) {
			t.Errorf("migration 2 lacks %q", want)
		}
	}
}

// Rescue phases 2 and 3 take one application lock, exclusively and owned
// by their transaction, before they read anything, so that no two of them
// run at once anywhere in the fleet; phase 1 takes none. The lock is not
// the leader's (SingleRescuer holds that one on its own session while its
// phases run on others).
func TestRescuePhasesTwoAndThreeTakeOneLockAcrossProcesses(t *testing.T) {
	q := render("my_schema")
	const take = "BEGIN TRANSACTION;\nEXEC @rc = sys.sp_getapplock @Resource = N'chokaq:MY_SCHEMA:rescue:phases-2-3', @LockMode = 'Exclusive', @LockOwner = 'Transaction', @LockTimeout = @lockTimeoutMs;\nIF @rc < 0\n    THROW 51001,"
	for name, stmt := range map[string]string{"rescueZombies": q.rescueZombies, "rescueExpired": q.rescueExpired} {
		lock := strings.Index(stmt, take)
		now := strings.Index(stmt, "DECLARE @now DATETIME2(7) = SYSUTCDATETIME();")
		del := strings.Index(stmt, "DELETE h")
		commit := strings.LastIndex(stmt, "COMMIT TRANSACTION;")
		if lock < 0 || now < lock || del < now || commit < del || strings.Count(stmt, "EXEC @rc = sys.sp_getapplock") != 1 {
			t.Errorf("%s: want BEGIN TRANSACTION, the rescue lock (checked), the store's now, the DELETE, COMMIT:\n%s", name, stmt)
		}
		if strings.Index(stmt, "FROM [my_schema].") < lock {
			t.Errorf("%s reads a table before it holds the rescue lock", name)
		}
	}
	if strings.Contains(q.rescueFetched, "sp_getapplock") {
		t.Error("rescueFetched takes a lock: phase 1 moves Fetched rows, whose keys phases 2 and 3 never lock")
	}
	for _, role := range []string{"rescue", "retention", "schedules:abc"} {
		if l := NewLeader(&Store{schema: "my_schema", q: q}, role); strings.Contains(q.rescueZombies, "N'"+l.resource+"'") {
			t.Errorf("the rescue lock is the leader lock of role %q", role)
		}
	}
}

// Every start records the worker's heartbeat maximum, every return to
// Pending clears it, and phase 2 tests its floor in the candidate (so rows
// of slow-beating live jobs cannot fill a batch) and again on the outer
// table: jobs.ZombieTimeout in T-SQL.
func TestStartsRecordTheHeartbeatMaximumAndPhase2HonoursIt(t *testing.T) {
	q := render("my_schema")
	for name, stmt := range map[string]string{"start": q.start, "transition": q.transition} {
		if !strings.Contains(stmt, "HeartbeatMaxMs = NULLIF(@heartbeatMaxMs, 0)") {
			t.Errorf("%s does not record @heartbeatMaxMs", name)
		}
	}
	for name, stmt := range map[string]string{"snooze": q.snooze, "transition": q.transition} {
		if !strings.Contains(stmt, "DeadlineUtc = NULL, HeartbeatMaxMs = NULL,") {
			t.Errorf("%s sends a job back to Pending with its old heartbeat maximum", name)
		}
	}
	floor := func(alias string) string {
		return "(" + alias + ".HeartbeatMaxMs IS NULL OR " + alias + ".HeartbeatUtc < DATEADD(MILLISECOND, -3 * CAST(" + alias +
			".HeartbeatMaxMs AS BIGINT) % 1000, DATEADD(SECOND, -3 * CAST(" + alias + ".HeartbeatMaxMs AS BIGINT) / 1000, @now)))"
	}
	cand := derived(t, "rescueZombies", q.rescueZombies)
	if !strings.Contains(cand, floor("c")) {
		t.Errorf("rescueZombies: the candidate lacks the heartbeat floor %s:\n%s", floor("c"), cand)
	}
	if outer := q.rescueZombies[strings.Index(q.rescueZombies, ") AS x ON x.Id = h.Id"):]; !strings.Contains(outer, floor("h")) {
		t.Errorf("rescueZombies: the outer table lacks the heartbeat floor %s", floor("h"))
	}
}

// A list of queues sends each queue once as the server compares names,
// ignoring case: QueueList's primary key refuses "orders" beside "Orders"
// (error 2627), and a claim of both would take the queue twice.
func TestQueueListsSendEachQueueOnceIgnoringCase(t *testing.T) {
	s, rec := recordingStore(t)
	if _, err := s.QueueDepths(t.Context(), []string{"orders", "Orders", "mail", "ORDERS"}, 10); err != nil {
		t.Fatal(err)
	}
	_, _ = s.Claim(t.Context(), jobs.ClaimParams{WorkerID: "w", Queues: []string{"Orders", "orders", "mail"}, Limit: 5})
	claims := 0
	for _, c := range rec.calls {
		for _, a := range c.args {
			if tvp, ok := a.Value.(mssql.TVP); ok && c.query == s.q.queueDepths {
				if rows := tvp.Value.([]queueRow); len(rows) != 2 || rows[0].Name != "orders" || rows[1].Name != "mail" {
					t.Errorf("QueueDepths sent %+v, want orders and mail once each", rows)
				}
			}
			if a.Name == "queue" && c.query == s.q.claim {
				claims++
			}
		}
	}
	if claims != 2 {
		t.Errorf("Claim of Orders, orders and mail sent %d claims, want 2", claims)
	}
}

// migrationText is the rendered up migration of a version.
func migrationText(t *testing.T, schemaName, version string) string {
	t.Helper()
	for name, text := range upMigrations(t, schemaName) {
		if strings.HasPrefix(name, version+"_") {
			return text
		}
	}
	t.Fatalf("no up migration %s", version)
	return ""
}

// The keyed enqueue locks the key with an application lock owned by the
// transaction, checks its return code, and takes no key-range lock.
func TestKeyedEnqueueLocksTheKeyNotAGap(t *testing.T) {
	q := render("my_schema")
	for name, stmt := range map[string]string{"enqueueKeyed": q.enqueueKeyed, "enqueueKeyedTx": q.enqueueKeyedTx, "resurrect": q.resurrect} {
		if regexp.MustCompile(`HOLDLOCK|SERIALIZABLE`).MatchString(stmt) {
			t.Errorf("%s: a key-range lock (HOLDLOCK) locks the gap to the next key", name)
		}
	}
	for name, stmt := range map[string]string{"enqueueKeyed": q.enqueueKeyed, "enqueueKeyedTx": q.enqueueKeyedTx} {
		for _, want := range []string{"CHECKSUM(@k)", "@LockOwner = 'Transaction', @LockTimeout = @lockTimeoutMs", "IF @rc < 0", "IF ERROR_NUMBER() NOT IN (2601, 2627)"} {
			if !strings.Contains(stmt, want) {
				t.Errorf("%s lacks %q", name, want)
			}
		}
	}
	if !strings.Contains(q.enqueueKeyed, "SET XACT_ABORT ON;\nBEGIN TRANSACTION;") {
		t.Error("enqueueKeyed: its own transaction, under XACT_ABORT")
	}
	if strings.Contains(q.enqueueKeyedTx, "XACT_ABORT ON") || strings.Contains(q.enqueueKeyedTx, "BEGIN TRAN") {
		t.Error("enqueueKeyedTx: inside a caller's transaction, no XACT_ABORT (a duplicate key would roll the caller back) and no transaction of its own")
	}
}

// A keyed insert that loses the key to a resurrect (error 2601) returns the
// job that holds the key, as a duplicate.
func TestKeyedEnqueueReturnsTheJobThatWonTheKey(t *testing.T) {
	s, rec := recordingStore(t)
	rec.rows = map[string][]driver.Value{s.q.jobByKey: {int64(77)}}
	rec.failNext(s.q.enqueueKeyed, mssql.Error{Number: 2601, Message: "duplicate key"})
	r, err := s.Enqueue(t.Context(), jobs.EnqueueParams{Type: "t", IdempotencyKey: "order-1"})
	if err != nil || r.ID != 77 || !r.Duplicate {
		t.Fatalf("Enqueue = %+v, %v; want job 77 as a duplicate", r, err)
	}
}

// Inside a caller's transaction, a keyed insert that lost the key to a job
// that finished before the statement could read it rethrows 2601 (the
// statement found no job to return); the store runs it again in the same
// transaction, where the key is free, and returns the job it inserts.
func TestKeyedEnqueueInATransactionRunsAgainWhenTheKeysHolderFinished(t *testing.T) {
	s, rec := recordingStore(t)
	rec.rows = map[string][]driver.Value{s.q.enqueueKeyedTx: {int64(78), false}}
	rec.failNext(s.q.enqueueKeyedTx, mssql.Error{Number: 2601, Message: "duplicate key"})
	tx, err := s.DB().BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	r, err := s.EnqueueTx(t.Context(), tx, jobs.EnqueueParams{Type: "t", IdempotencyKey: "order-1"})
	if err != nil || r.ID != 78 || r.Duplicate {
		t.Fatalf("EnqueueTx = %+v, %v; want the new job 78", r, err)
	}
	runs := 0
	for _, c := range rec.calls {
		if c.query == s.q.enqueueKeyedTx {
			runs++
		}
	}
	if runs != 2 {
		t.Fatalf("the keyed statement ran %d times, want 2 (the rethrown conflict, then the insert)", runs)
	}
}

// Purge and resurrect walk the finish-time index from the old end and take
// no update locks. Resurrect picks its batch into @pick before its
// transaction (it takes its unique keys' locks before any job row), so its
// candidate is that INSERT's SELECT.
func TestPurgeAndResurrectStartAtTheOldEnd(t *testing.T) {
	q := render("my_schema")
	for name, stmt := range map[string]string{"purge.archive": q.purge[jobs.TableArchive], "purge.dlq": q.purge[jobs.TableDLQ], "resurrect": q.resurrect} {
		var cand string
		if name == "resurrect" {
			_, rest, ok := strings.Cut(stmt, "INSERT INTO @pick")
			cand, _, _ = strings.Cut(rest, "OPTION (RECOMPILE);")
			if !ok || !strings.Contains(cand, "SELECT TOP (@limit)") {
				t.Fatalf("resurrect: no bounded pick of its batch:\n%s", stmt)
			}
		} else {
			cand = derived(t, name, stmt)
		}
		if !strings.Contains(cand, "ORDER BY t.FinishedAtUtc, t.Id") {
			t.Errorf("%s: the candidate must be ordered by the indexed instant:\n%s", name, cand)
		}
		if strings.Contains(cand, "UPDLOCK") || strings.Contains(cand, "t.Id DESC") {
			t.Errorf("%s: no update locks, no backwards scan:\n%s", name, cand)
		}
	}
}

// A purge's batches each start after the last job the batch before
// deleted, on the finish-time order the candidate walks, so that no batch
// reads again the ghost records the ones before it left (as the retention
// loop's trim does); the first starts at the old end.
func TestPurgeContinuesAfterTheLastJobItDeleted(t *testing.T) {
	q := render("my_schema")
	for tb, stmt := range q.purge {
		cand := derived(t, "purge."+tb.String(), stmt)
		if !strings.Contains(cand, "AND (@hasAfter = 0 OR (t.FinishedAtUtc >= @afterUtc AND (t.FinishedAtUtc > @afterUtc OR t.Id > @afterId)))\n    ORDER BY t.FinishedAtUtc, t.Id") {
			t.Errorf("purge.%s: the candidate does not continue after the last deleted key:\n%s", tb, cand)
		}
	}
	s, rec := recordingStore(t)
	s.bulkBatch = 2
	first := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	answers := [][]driver.Value{{int64(2), first, int64(7)}, {int64(2), first.Add(time.Second), int64(9)}, {int64(1), first.Add(2 * time.Second), int64(12)}}
	step := 0
	rec.answer = func(query string) []driver.Value {
		switch query {
		case s.q.now:
			return []driver.Value{time.Now()}
		case s.q.purge[jobs.TableArchive]:
			step++
			return answers[step-1]
		}
		return nil
	}
	n, err := s.Purge(t.Context(), jobs.PurgeParams{Table: jobs.TableArchive, Filter: jobs.Filter{OlderThan: time.Hour}})
	if err != nil || n != 5 {
		t.Fatalf("Purge = %d, %v; want 5 over three batches", n, err)
	}
	var afters []string
	for _, c := range rec.calls {
		if c.query != s.q.purge[jobs.TableArchive] {
			continue
		}
		var has, id int64
		var at civil.DateTime
		for _, a := range c.args {
			switch a.Name {
			case "hasAfter":
				has = a.Value.(int64)
			case "afterId":
				id = a.Value.(int64)
			case "afterUtc":
				at = a.Value.(civil.DateTime)
			}
		}
		afters = append(afters, fmt.Sprintf("%d %s %d", has, at.Time.String(), id))
	}
	if want := []string{"0 00:00:00 0", "1 03:04:05 7", "1 03:04:06 9"}; !slices.Equal(afters, want) {
		t.Fatalf("batches started after %q, want %q", afters, want)
	}
}

// QueueStats aggregates once: no common table expression (each reference
// of one is evaluated again), and every count stops at @cap.
func TestQueueStatsCountsAreCappedAndReadOnce(t *testing.T) {
	stmt := render("my_schema").queueStats
	if regexp.MustCompile(`(?i)\bWITH\s+\w+\s+AS\s*\(`).MatchString(stmt) {
		t.Error("queueStats: a CTE is evaluated at each reference")
	}
	if strings.Contains(stmt, "GROUP BY") {
		t.Error("queueStats: a GROUP BY over a table reads all of it")
	}
	counts := strings.Count(stmt, "COUNT_BIG(*)")
	capped := strings.Count(stmt, "COUNT_BIG(*) FROM (SELECT TOP (@cap) 1 AS x")
	if counts == 0 || counts != capped {
		t.Errorf("queueStats: %d of %d counts are capped by TOP (@cap)", capped, counts)
	}
	for _, tb := range []string{"JobsHot", "JobsArchive", "JobsDLQ"} {
		if !strings.Contains(stmt, "SELECT TOP (1) @next = Queue FROM [my_schema]."+tb+" WHERE Queue > @q ORDER BY Queue;") {
			t.Errorf("queueStats: the queues of %s are not found one seek per queue", tb)
		}
	}
}

// The claim sends its rows after COMMIT, from a table variable: the client
// reads payloads with no lock held.
func TestClaimSendsItsRowsAfterCommit(t *testing.T) {
	stmt := render("my_schema").claim
	commit := strings.Index(stmt, "COMMIT TRANSACTION;")
	into := strings.Index(stmt, "INTO @claimed")
	final := strings.LastIndex(stmt, "FROM @claimed AS c ORDER BY c.Priority DESC, c.ScheduledAtUtc, c.Id;")
	if into < 0 || commit < into || final < commit {
		t.Errorf("claim: want OUTPUT ... INTO @claimed, COMMIT, then SELECT from @claimed in claim order:\n%s", stmt)
	}
	if resultColumns(lexTSQL(stmt)) != len(unifiedNames) {
		t.Errorf("claim returns %d columns, want the %d unified ones", resultColumns(lexTSQL(stmt)), len(unifiedNames))
	}
}

// Every claim holds the queue's application lock shared while it reads the
// queue's cap; UpdateQueue holds it exclusively while it changes the cap.
func TestCapChangesWaitForClaimsInFlight(t *testing.T) {
	q := render("my_schema")
	lock := "@lock NVARCHAR(255) = N'chokaq:MY_SCHEMA:queue:' + UPPER(@q)"
	for name, c := range map[string]struct{ stmt, mode, then string }{
		"claim":       {q.claim, "'Shared'", "FROM [my_schema].Queues WHERE Name = @q"},
		"updateQueue": {q.updateQueue, "'Exclusive'", "UPDATE [my_schema].Queues"},
	} {
		getLock := strings.Index(c.stmt, "sp_getapplock @Resource = @lock, @LockMode = "+c.mode+", @LockOwner = 'Transaction'")
		begin := strings.Index(c.stmt, "BEGIN TRANSACTION;")
		then := strings.Index(c.stmt, c.then)
		if !strings.Contains(c.stmt, lock) || begin < 0 || getLock < begin || then < getLock {
			t.Errorf("%s: want BEGIN TRANSACTION, the queue lock %s, then %q", name, c.mode, c.then)
		}
	}
}

// A claim holds its own lock, taken before anything else, for its whole
// transaction; the adoption of a lost reply takes it shared before it
// reads, so it waits for an attempt still in flight, wherever that is.
// Lock names carry the schema in upper case: they compare byte for byte.
func TestAdoptionWaitsForTheClaimInFlight(t *testing.T) {
	q := render("my_schema")
	mine := "@mine NVARCHAR(255) = N'chokaq:MY_SCHEMA:claim:' + CONVERT(NVARCHAR(20), @claimId)"
	claimMine := strings.Index(q.claim, "sp_getapplock @Resource = @mine, @LockMode = 'Exclusive', @LockOwner = 'Transaction'")
	claimQueue := strings.Index(q.claim, "sp_getapplock @Resource = @lock")
	if !strings.Contains(q.claim, mine) || claimMine < strings.Index(q.claim, "BEGIN TRANSACTION;") || claimQueue < claimMine {
		t.Errorf("claim: want BEGIN TRANSACTION, its own lock exclusive, then the queue lock")
	}
	adoptMine := strings.Index(q.adoptClaim, "sp_getapplock @Resource = @mine, @LockMode = 'Shared', @LockOwner = 'Transaction'")
	read := strings.Index(q.adoptClaim, "WHERE h.Status = 1 AND h.ClaimId = @claimId")
	if !strings.Contains(q.adoptClaim, mine) || adoptMine < strings.Index(q.adoptClaim, "BEGIN TRANSACTION;") || read < adoptMine ||
		!strings.Contains(q.adoptClaim, "ORDER BY h.Priority DESC, h.ScheduledAtUtc, h.Id") {
		t.Errorf("adoptClaim: want BEGIN TRANSACTION, the claim's lock shared, then the read in claim order")
	}
	for name, stmt := range renderedStatements() {
		if strings.Contains(stmt, "chokaq:my_schema:") {
			t.Errorf("%s: a lock name with the schema as written; want it in upper case", name)
		}
	}
	if l := NewLeader(&Store{schema: "my_schema", q: q}, "rescue"); l.resource != "chokaq:MY_SCHEMA:rescue" {
		t.Errorf("leader lock %q", l.resource)
	}
}

// TestClaimRetryAdoptsTheRowsOfALostReply: the first claim's reply is lost
// (a connection reset after it may have committed). The store's retry first
// looks for rows carrying that claim's id and returns them; only when there
// are none does it claim again, with the same id.
func TestClaimRetryAdoptsTheRowsOfALostReply(t *testing.T) {
	for _, adopted := range []bool{true, false} {
		rec := &recorder{}
		s, err := New(sql.OpenDB(recordingConnector{rec}), WithSchema("chokaq_t"))
		if err != nil {
			t.Fatal(err)
		}
		s.sleep = func(context.Context, time.Duration) error { return nil }
		s.newClaimID = func() int64 { return 4242 }
		if adopted {
			row := make([]driver.Value, len(unifiedNames))
			row[0], row[1], row[2], row[16] = int64(9), "mail", "t", int64(5) // Id, Queue, Type, RunLease
			row[4], row[8], row[9] = int64(0), int64(3), int64(0)             // priority, max attempts, attempts
			row[10], row[12], row[13] = int64(1), time.Now(), time.Now()      // table, created, scheduled
			row[25] = int64(0)                                                // snoozes
			rec.rows = map[string][]driver.Value{s.q.adoptClaim: row}
		}
		rec.failNext(s.q.claim, &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")})
		got, err := s.Claim(t.Context(), jobs.ClaimParams{WorkerID: "w1", Queues: []string{"mail"}, Limit: 5})
		if err != nil {
			t.Fatalf("adopted=%v: %v", adopted, err)
		}
		var sent []string
		for _, c := range rec.calls {
			name := statementNames(s.q)[c.query]
			sent = append(sent, name)
			for _, a := range c.args {
				if a.Name == "claimId" && a.Value != int64(4242) {
					t.Errorf("%s sent claim id %v, want the first attempt's 4242", name, a.Value)
				}
			}
		}
		want := "claim adoptClaim claim"
		if adopted {
			want = "claim adoptClaim"
			if len(got) != 1 || got[0].ID != 9 || got[0].Lease != 5 {
				t.Errorf("adopted jobs %+v, want job 9 with lease 5", got)
			}
		}
		if strings.Join(sent, " ") != want {
			t.Errorf("adopted=%v: statements %v, want %s", adopted, sent, want)
		}
	}
}

// No statement needs compatibility level 130, and CheckSchema refuses a
// database below it, saying how to raise it.
func TestCheckSchemaRefusesALowCompatibilityLevel(t *testing.T) {
	for _, stmt := range renderedStatements() {
		if strings.Contains(stmt, "STRING_SPLIT") || strings.Contains(stmt, "OPENJSON") {
			t.Errorf("a statement needs compatibility level 130:\n%s", firstLine(stmt))
		}
	}
	rec := &recorder{}
	s, err := New(sql.OpenDB(recordingConnector{rec}), WithSchema("chokaq_t"))
	if err != nil {
		t.Fatal(err)
	}
	rec.rows = map[string][]driver.Value{s.q.serverLevel: {int64(120), int64(16), int64(3)}}
	err = s.CheckSchema(t.Context())
	if !errors.Is(err, ErrCompatibilityLevel) || !strings.Contains(err.Error(), "level 120") ||
		!strings.Contains(err.Error(), "ALTER DATABASE CURRENT SET COMPATIBILITY_LEVEL = 150") {
		t.Fatalf("CheckSchema at level 120: %v", err)
	}
	rec.rows = map[string][]driver.Value{s.q.serverLevel: {int64(150), int64(15), int64(3)}}
	if err := s.CheckSchema(t.Context()); errors.Is(err, ErrCompatibilityLevel) || errors.Is(err, ErrServerVersion) {
		t.Fatalf("CheckSchema at level 150 on SQL Server 2019: %v", err)
	}
	// SQL Server 2017 (14) cannot run the migrations; Azure SQL (5) reports
	// its own version numbers and always qualifies.
	rec.rows = map[string][]driver.Value{s.q.serverLevel: {int64(140), int64(14), int64(3)}}
	if err := s.CheckSchema(t.Context()); !errors.Is(err, ErrServerVersion) || !strings.Contains(err.Error(), "major version 14") {
		t.Fatalf("CheckSchema on SQL Server 2017: %v", err)
	}
	rec.rows = map[string][]driver.Value{s.q.serverLevel: {int64(160), int64(12), int64(5)}}
	if err := s.CheckSchema(t.Context()); errors.Is(err, ErrServerVersion) {
		t.Fatalf("CheckSchema on Azure SQL: %v", err)
	}
}

// CheckSchema refuses a schema whose queue or schedule name columns compare
// case by case, naming the collation: every store compares those names
// ignoring case.
func TestCheckSchemaRefusesCaseSensitiveNameColumns(t *testing.T) {
	for _, c := range []struct {
		row  []driver.Value
		want error
	}{
		{[]driver.Value{int64(5), "Latin1_General_100_CS_AS"}, ErrCaseSensitiveNames},
		{[]driver.Value{int64(0), nil}, nil},
	} {
		rec := &recorder{}
		s, err := New(sql.OpenDB(recordingConnector{rec}), WithSchema("chokaq_t"))
		if err != nil {
			t.Fatal(err)
		}
		rec.rows = map[string][]driver.Value{s.q.serverLevel: {int64(160), int64(16), int64(2)}, s.q.caseSensitiveNames: c.row}
		rec.answer = func(q string) []driver.Value {
			if strings.Contains(q, "[SchemaMigrations]") {
				return []driver.Value{int64(schema.Latest()), false}
			}
			return nil
		}
		err = s.CheckSchema(t.Context())
		if c.want == nil && err != nil || c.want != nil && (!errors.Is(err, c.want) || !strings.Contains(err.Error(), "Latin1_General_100_CS_AS")) {
			t.Errorf("CheckSchema with %v case-sensitive name columns: %v, want %v naming the collation", c.row[0], err, c.want)
		}
		s.Close()
	}
}

// TryLead tells "someone else leads" (-1) from a failed call (-2, -3,
// -999), which it reports.
func TestLeaderReadsEveryReturnCode(t *testing.T) {
	for rc, want := range map[int64]string{0: "lead", 1: "lead", -1: "follow", -2: "error", -3: "error", -999: "error"} {
		rec := &recorder{}
		s, err := New(sql.OpenDB(recordingConnector{rec}), WithSchema("chokaq_t"))
		if err != nil {
			t.Fatal(err)
		}
		rec.rows = map[string][]driver.Value{s.q.tryAppLock: {rc}}
		leads, err := NewLeader(s, "rescue").TryLead(t.Context())
		got := "follow"
		switch {
		case err != nil:
			got = "error"
		case leads:
			got = "lead"
		}
		if got != want {
			t.Errorf("sp_getapplock returned %d: %s (%v), want %s", rc, got, err, want)
		}
		s.Close()
	}
}

// A heartbeat or release of many refs goes out in statements of at most
// maxRefsPerStatement, so none of them approaches lock escalation.
func TestHeartbeatAndReleaseAreChunked(t *testing.T) {
	s, rec := recordingStore(t)
	refs := make([]jobs.LeaseRef, 2*maxRefsPerStatement+1)
	for i := range refs {
		refs[i] = jobs.LeaseRef{ID: int64(i + 1), Lease: 1}
	}
	rec.answer = func(q string) []driver.Value {
		if q == s.q.heartbeat {
			return []driver.Value{int64(1), int64(1), int64(0)} // one beaten ref, not cancelled
		}
		return []driver.Value{int64(0)} // released nothing
	}
	if _, err := s.Heartbeat(t.Context(), refs); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Release(t.Context(), refs); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, c := range rec.calls {
		for _, a := range c.args {
			if tvp, ok := a.Value.(mssql.TVP); ok {
				rows := tvp.Value.([]leaseRow)
				if len(rows) > maxRefsPerStatement {
					t.Errorf("a statement with %d refs", len(rows))
				}
				counts[c.query]++
			}
		}
	}
	if counts[s.q.heartbeat] != 3 || counts[s.q.release] != 3 {
		t.Fatalf("statements: heartbeat %d, release %d; want 3 each for %d refs", counts[s.q.heartbeat], counts[s.q.release], len(refs))
	}
}

// Phase 2's recovery of jobs whose kind opted into zombie retries (ADR
// 0029) runs inside the same transaction and under the same rescue lock as
// its move to the DLQ, before it, with the same hints; the move takes what
// the batch's limit leaves; both test the silence alike; and the recovery
// spends no lease: it leaves RunLease alone (the next claim bumps it).
func TestRescueZombiesRecoversUnderTheRescueLock(t *testing.T) {
	q := render("my_schema").rescueZombies
	lock := strings.Index(q, "sp_getapplock @Resource = N'chokaq:MY_SCHEMA:rescue:phases-2-3'")
	update := strings.Index(q, "UPDATE h\nSET Status = 0")
	del := strings.Index(q, "DELETE h")
	commit := strings.Index(q, "COMMIT TRANSACTION;")
	if lock < 0 || update < 0 || del < 0 || commit < 0 || !(lock < update && update < del && del < commit) {
		t.Fatalf("want the applock, then the recovery, then the move, then COMMIT (%d, %d, %d, %d):\n%s", lock, update, del, commit, q)
	}
	recovery, move := q[update:del], q[del:commit]
	for _, want := range []string{"TOP (@limit)", "UPDLOCK, READPAST, ROWLOCK, READCOMMITTEDLOCK", outerHotHints, zombieCandidate, zombieOuter,
		"c.ZombieRetryCap > 0 AND (c.ZombieRetries IS NULL OR c.ZombieRetries < c.ZombieRetryCap) AND c.CancelRequestedUtc IS NULL",
		"h.ZombieRetryCap > 0 AND (h.ZombieRetries IS NULL OR h.ZombieRetries < h.ZombieRetryCap) AND h.CancelRequestedUtc IS NULL",
		"ZombieRetries = ISNULL(h.ZombieRetries, 0) + 1", "LastError = N'recovered: heartbeat expired", "INTO @recovered"} {
		if !strings.Contains(recovery, want) {
			t.Errorf("the recovery lacks %q:\n%s", want, recovery)
		}
	}
	if strings.Contains(recovery, "RunLease =") {
		t.Errorf("the recovery writes RunLease; only a claim hands out a lease:\n%s", recovery)
	}
	for _, want := range []string{"SET @left = @limit - @@ROWCOUNT;", "TOP (@left)", zombieCandidate, zombieOuter} {
		if !strings.Contains(q[update:commit], want) {
			t.Errorf("phase 2 lacks %q", want)
		}
	}
	if strings.Contains(move, "ZombieRetryCap") {
		t.Errorf("the move tests the zombie policy: a job the recovery left Processing is one it must dead-letter:\n%s", move)
	}
}
