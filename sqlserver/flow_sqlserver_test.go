package sqlserver

import (
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/sqlserver/sqlservertest"
)

// The cost of a claim under flow control (ADR 0031, "Cost of one claim"),
// on a real server: the logical reads of one claim, from the session's
// own counter (sys.dm_exec_sessions shows a session its own row without
// VIEW SERVER STATE), in the two shapes the ADR argues. The latency store
// charges for rows returned, not rows read, so only a server shows rows
// skipped.

// claimReads claims up to n jobs of queue on one connection and returns
// how many it took and the logical reads the claim cost.
func claimReads(t *testing.T, s *Store, conn *sql.Conn, queue string, n int) (int, int64) {
	t.Helper()
	ctx := t.Context()
	read := func() int64 {
		var r int64
		if err := conn.QueryRowContext(ctx, "SELECT logical_reads FROM sys.dm_exec_sessions WHERE session_id = @@SPID;").Scan(&r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	before := read()
	got, err := s.claimQueue(ctx, conn, "reads", queue, n, s.newClaimID())
	if err != nil {
		t.Fatal(err)
	}
	return len(got), read() - before
}

// flowBacklog enqueues n jobs of queue, each made by mk(i).
func flowBacklog(t *testing.T, s *Store, queue string, n int, mk func(i int) jobs.EnqueueParams) {
	t.Helper()
	for done := 0; done < n; {
		batch := make([]jobs.EnqueueParams, min(1000, n-done))
		for i := range batch {
			batch[i] = mk(done + i)
			batch[i].Queue, batch[i].Type = queue, "flow.reads"
		}
		if _, err := s.EnqueueMany(t.Context(), batch); err != nil {
			t.Fatal(err)
		}
		done += len(batch)
	}
}

// Keys=10000: every job its own key, limit 1 each. A claim of 100 reads
// about what the same claim of jobs without keys reads, plus one seek of
// the key's running count per candidate: no scan of the running jobs.
func TestClaimReadsWith10000Keys(t *testing.T) {
	dsn, name := sqlservertest.NewSchema(t)
	s := openOn(t, dsn, name)
	ctx := t.Context()
	one := 1
	if _, err := s.UpdateQueue(ctx, "keyed", jobs.QueueUpdate{MaxWorkersPerKey: &one}); err != nil {
		t.Fatal(err)
	}
	flowBacklog(t, s, "plain", 10000, func(int) jobs.EnqueueParams { return jobs.EnqueueParams{} })
	flowBacklog(t, s, "keyed", 10000, func(i int) jobs.EnqueueParams {
		return jobs.EnqueueParams{ConcurrencyKey: fmt.Sprintf("tenant-%05d", i)}
	})
	conn, err := s.pool.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const n = 100
	var plain, keyed int64
	for round := range 3 { // the first claims warm the plan cache and the pages
		gotP, rp := claimReads(t, s, conn, "plain", n)
		gotK, rk := claimReads(t, s, conn, "keyed", n)
		if gotP != n || gotK != n {
			t.Fatalf("round %d: claimed %d plain and %d keyed jobs, want %d each (every key has room)", round, gotP, gotK, n)
		}
		plain, keyed = rp, rk
	}
	t.Logf("a claim of %d: %d logical reads without keys, %d with 10,000 distinct keys (%.1f and %.1f a job)",
		n, plain, keyed, float64(plain)/n, float64(keyed)/n)
	// The ADR's bound: @n + 3R rows beyond the plain claim's, each a seek
	// of a few pages; 10 pages a candidate is far above it and far below a
	// scan of the 300 running jobs per candidate.
	if keyed > plain+10*n {
		t.Errorf("the keyed claim read %d pages, the plain one %d: more than 10 a candidate beyond it", keyed, plain)
	}
}

// HotKey: one key at its limit with a backlog in front (a higher priority)
// of 100 other keys. Once the hot backlog is parked, a claim's reads do
// not grow with it: ten times the backlog costs the same claim about the
// same reads.
func TestClaimReadsWithAHotKey(t *testing.T) {
	dsn, name := sqlservertest.NewSchema(t)
	s := openOn(t, dsn, name)
	ctx := t.Context()
	steady := map[int]int64{}
	for _, hot := range []int{1000, 10000} {
		queue := fmt.Sprintf("hot%d", hot)
		if _, err := s.UpdateQueue(ctx, queue, jobs.QueueUpdate{KeyLimits: map[string]int{"hot": 1}}); err != nil {
			t.Fatal(err)
		}
		flowBacklog(t, s, queue, hot, func(int) jobs.EnqueueParams { return jobs.EnqueueParams{ConcurrencyKey: "hot", Priority: 10} })
		flowBacklog(t, s, queue, 5000, func(i int) jobs.EnqueueParams {
			return jobs.EnqueueParams{ConcurrencyKey: fmt.Sprintf("other-%03d", i%100)}
		})
		conn, err := s.pool.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// Park the hot backlog: each claim parks up to four rounds of
		// candidates, and takes the one hot job its limit allows first.
		deadline := time.Now().Add(time.Minute)
		for {
			if time.Now().After(deadline) {
				t.Fatalf("%d hot jobs: not parked within a minute of claims", hot)
			}
			st, err := s.QueueStats(ctx)
			if err != nil {
				t.Fatal(err)
			}
			parked := false
			for _, q := range st {
				parked = parked || (q.Queue == queue && q.WaitingOnKey >= int64(min(hot-1, s.statsCap)))
			}
			if parked {
				break
			}
			claimReads(t, s, conn, queue, 100)
		}
		var reads int64
		for range 3 {
			got, r := claimReads(t, s, conn, queue, 100)
			if got != 100 {
				t.Fatalf("%d hot jobs parked: a claim of 100 took %d of the other keys' jobs", hot, got)
			}
			reads = r
		}
		conn.Close()
		steady[hot] = reads
	}
	t.Logf("a claim of 100 behind a parked hot key: %d logical reads with 1,000 hot jobs, %d with 10,000", steady[1000], steady[10000])
	if steady[10000] > steady[1000]*3/2+50 {
		t.Errorf("ten times the hot backlog made a claim read %d pages instead of %d: the claim reads past parked jobs", steady[10000], steady[1000])
	}
}
