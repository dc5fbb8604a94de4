package sqlserver

import (
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/sqlserver/sqlservertest"
)

// Workflows on a real server (ADR 0034): what the release costs and that
// it survives a restart. The contract cases Workflow/* run in every
// locking mode through TestSQLServerHintSets.

// fanOut enqueues a root and n children of it, in queue.
func fanOut(t *testing.T, s *Store, queue string, n int) jobs.WorkflowResult {
	t.Helper()
	p := jobs.WorkflowParams{Name: "fan-out", Tasks: []jobs.WorkflowTask{{Name: "root", Job: jobs.EnqueueParams{Queue: queue, Type: "root"}}}}
	for i := range n {
		p.Tasks = append(p.Tasks, jobs.WorkflowTask{Name: fmt.Sprint("child-", i), Job: jobs.EnqueueParams{Queue: queue, Type: "child"}, After: []string{"root"}})
	}
	r, err := s.EnqueueWorkflow(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// finishRoot claims, starts and completes the workflow's root on s.
func finishRoot(t *testing.T, s *Store, queue string) {
	t.Helper()
	ctx := t.Context()
	got, err := s.Claim(ctx, jobs.ClaimParams{WorkerID: "w", Queues: []string{queue}, Limit: 10})
	if err != nil || len(got) != 1 || got[0].WorkflowTask != "root" {
		t.Fatalf("claim of the root: %v, %v", got, err)
	}
	if _, err := s.Start(ctx, got[0].Ref(), jobs.StartParams{DefaultTimeout: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if err := s.Complete(ctx, got[0].Ref()); err != nil {
		t.Fatal(err)
	}
}

// A process that restarts between a parent's move and its children's
// release knows nothing of it: the release owed is in the parent's row,
// and the first claim of a fresh store, in any queue, reports it, pays it
// and claims the children.
func TestSQLServerReleaseOwedSurvivesARestart(t *testing.T) {
	dsn, name := sqlservertest.NewSchema(t)
	before := openOn(t, dsn, name)
	fanOut(t, before, "restart", 3)
	finishRoot(t, before, "restart")
	before.Close() // the crash: nothing this process knew survives

	after := openOn(t, dsn, name)
	if after.owed.Load() {
		t.Fatal("a fresh store believes a release is owed before asking")
	}
	got, err := after.Claim(t.Context(), jobs.ClaimParams{WorkerID: "w2", Queues: []string{"restart"}, Limit: 10})
	if err != nil || len(got) != 3 {
		t.Fatalf("the fresh store's first claim: %d jobs, %v; want the 3 children", len(got), err)
	}
}

// A parent of 10,000 children is released in bounded steps: each step,
// run inside a transaction that keeps its locks, holds no table lock and
// fewer key locks than lock escalation's 5,000; eleven steps release all
// (ten of 1,000 edges, one that finds the walk done).
func TestSQLServerReleaseOfTenThousandChildrenIsBounded(t *testing.T) {
	dsn, name := sqlservertest.NewSchema(t)
	s := openOn(t, dsn, name)
	ctx := t.Context()
	fanOut(t, s, "wide", 10_000)
	finishRoot(t, s, "wide")
	steps := 0
	for more := true; more; steps++ {
		if steps > 20 {
			t.Fatal("still owed after 20 steps")
		}
		tx, err := s.pool.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
		if err != nil {
			t.Fatal(err)
		}
		var busy bool
		if err := tx.QueryRowContext(ctx, s.q.releaseTasks, named("maxParents", int64(releaseMaxParents)),
			named("maxEdges", int64(releaseMaxEdges))).Scan(&more, &busy); err != nil || busy {
			t.Fatalf("step %d: %v, busy %v", steps, err, busy)
		}
		keys := 0
		for _, l := range heldLocks(t, tx) {
			switch {
			case l.typ == "OBJECT" && l.mode != "IX" && l.mode != "IS" && l.mode != "Sch-S":
				t.Errorf("step %d: a %s table lock", steps, l.mode)
			case l.typ == "KEY":
				keys += l.n
			}
		}
		if keys >= 5000 {
			t.Errorf("step %d holds %d key locks", steps, keys)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	if steps != 11 {
		t.Errorf("%d steps, want 11", steps)
	}
	st, err := s.QueueStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range st {
		if q.Queue == "wide" && (q.Pending != 10_000 || q.WaitingOnParents != 0) {
			t.Errorf("after the release: %d pending, %d waiting, want 10,000 and 0", q.Pending, q.WaitingOnParents)
		}
	}
}
