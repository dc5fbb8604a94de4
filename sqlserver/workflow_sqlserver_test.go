package sqlserver

import (
	"database/sql"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/schema"
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

// Release steps race the statements that touch the same rows: workers
// claiming, starting and completing tasks (each claim runs steps too),
// a canceller cancelling waiting children, and a loop of steps of its
// own. With retries off, a deadlock victim (1205) anywhere surfaces as an
// error; there must be none, and at the end no child waits on a parent
// that finished (IW2).
func TestSQLServerReleaseStepsDoNotDeadlockWithMovesAndCancels(t *testing.T) {
	inLockingModes(t, func(t *testing.T, dsn, name string) {
		s := openOn(t, dsn, name, WithRetryPolicy(RetryPolicy{MaxAttempts: 1}))
		ctx := t.Context()
		var children []int64
		rootOf := map[int64]int64{}
		for range 20 {
			r := fanOut(t, s, "race", 30)
			for n, id := range r.Jobs {
				if n != "root" {
					children = append(children, id)
					rootOf[id] = r.Jobs["root"]
				}
			}
		}
		var deadlocks, other atomic.Int64
		count := errorCounter(t, &deadlocks, &other)
		stop := time.Now().Add(10 * time.Second)
		var wg sync.WaitGroup
		for w := range 3 {
			wg.Go(func() {
				for time.Now().Before(stop) {
					got, err := s.Claim(ctx, jobs.ClaimParams{WorkerID: fmt.Sprint("w", w), Queues: []string{"race"}, Limit: 20})
					count(err)
					for _, j := range got {
						if _, err := s.Start(ctx, j.Ref(), jobs.StartParams{DefaultTimeout: time.Minute}); err != nil {
							count(err)
							continue
						}
						count(s.Complete(ctx, j.Ref()))
					}
				}
			})
		}
		wg.Go(func() {
			for i := 0; time.Now().Before(stop); i += 7 {
				ids := []int64{children[i%len(children)], children[(i+3)%len(children)]}
				_, err := s.Cancel(ctx, jobs.CancelParams{IDs: ids, By: "race", Reason: "racing the release"})
				count(err)
			}
		})
		wg.Go(func() {
			for time.Now().Before(stop) {
				s.owed.Store(true)
				count(s.releaseTasks(ctx))
			}
		})
		wg.Wait()
		if deadlocks.Load() != 0 || other.Load() != 0 {
			t.Fatalf("%d deadlock victims and %d other errors while release steps raced moves and cancels", deadlocks.Load(), other.Load())
		}
		for range 10 {
			s.owed.Store(true)
			if err := s.releaseTasks(ctx); err != nil {
				t.Fatal(err)
			}
		}
		for _, id := range children {
			root, err := s.GetJob(ctx, rootOf[id])
			if err != nil {
				t.Fatal(err)
			}
			if root.Table == jobs.TableHot {
				continue // its parent has not finished: it may wait
			}
			j, err := s.GetJob(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			var status int64
			q := fmt.Sprintf("SELECT Status FROM %s.JobsHot WHERE Id = @id;", schema.Quote(s.Schema()))
			if err := s.db.QueryRowContext(ctx, q, named("id", id)).Scan(&status); err == nil && status == statusWaitingOnParents {
				t.Errorf("child %d waits (Status 5) though its parent finished: %+v", id, j)
			}
		}
	})
}

// A workflow's end is reported once, by the step that pays its last task:
// a fan-out of 5 run to the end by claims, then a workflow whose root
// fails (its children dead-lettered down the graph), failed.
func TestSQLServerWorkflowEndsAreReportedOnce(t *testing.T) {
	dsn, name := sqlservertest.NewSchema(t)
	var mu sync.Mutex
	var ended []jobs.Workflow
	s := openOn(t, dsn, name, WithWorkflowEnded(func(w jobs.Workflow) { mu.Lock(); ended = append(ended, w); mu.Unlock() }))
	ctx := t.Context()
	ok := fanOut(t, s, "ends", 5)
	for range 20 {
		got, err := s.Claim(ctx, jobs.ClaimParams{WorkerID: "w", Queues: []string{"ends"}, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range got {
			if _, err := s.Start(ctx, j.Ref(), jobs.StartParams{DefaultTimeout: time.Minute}); err != nil {
				t.Fatal(err)
			}
			if err := s.Complete(ctx, j.Ref()); err != nil {
				t.Fatal(err)
			}
		}
	}
	bad := fanOut(t, s, "ends", 3)
	got, err := s.Claim(ctx, jobs.ClaimParams{WorkerID: "w", Queues: []string{"ends"}, Limit: 10})
	if err != nil || len(got) != 1 {
		t.Fatalf("claim of the second root: %v, %v", got, err)
	}
	if _, err := s.Start(ctx, got[0].Ref(), jobs.StartParams{DefaultTimeout: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeadLetter(ctx, got[0].Ref(), jobs.DeadLetterParams{Reason: jobs.ReasonFatal}); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if _, err := s.Claim(ctx, jobs.ClaimParams{WorkerID: "w", Queues: []string{"ends"}, Limit: 10}); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	want := []jobs.Workflow{{ID: ok.ID, State: jobs.WorkflowSucceeded}, {ID: bad.ID, State: jobs.WorkflowFailed}}
	if !slices.Equal(ended, want) {
		t.Fatalf("ends reported %v, want %v", ended, want)
	}
}
