package sqlserver

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/schema"
)

// keyedJobIn reports whether q sees a hot job id holding key.
func keyedJobIn(t *testing.T, q querier, s *Store, id int64, key string) bool {
	t.Helper()
	var n int
	stmt := fmt.Sprintf("SELECT COUNT(*) FROM %s.JobsHot WHERE Id = @id AND IdempotencyKey = @key;", schema.Quote(s.Schema()))
	if err := q.QueryRowContext(t.Context(), stmt, named("id", id), named("key", text(key))).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}

// TestSQLServerKeyedEnqueueNeverReportsAnIDNoJobHas forces the keyed
// enqueue's CATCH to find no job with the key: the sequence is set back so
// that the insert's new ID is one a job without the key already has, and
// the insert fails with 2627. The re-read by key then matches nothing; the
// statement must rethrow rather than report that other job's ID (the
// sequence value left in @id) as the key's duplicate, and the store runs it
// again inside the caller's transaction, where it inserts the job.
func TestSQLServerKeyedEnqueueNeverReportsAnIDNoJobHas(t *testing.T) {
	s := openTestStore(t, WithRetryPolicy(RetryPolicy{MaxAttempts: 1}))
	ctx := t.Context()
	for _, form := range []string{"EnqueueTx", "EnqueueMany", "FireSchedule"} {
		t.Run(form, func(t *testing.T) {
			// The newest job, without a key: the next ID the sequence gives
			// is its ID again.
			other, err := s.Enqueue(ctx, jobs.EnqueueParams{Type: "t"})
			if err != nil {
				t.Fatal(err)
			}
			restart := fmt.Sprintf("ALTER SEQUENCE %s.JobIds RESTART WITH %d;", schema.Quote(s.Schema()), other.ID)
			if _, err := s.db.ExecContext(ctx, restart); err != nil {
				t.Fatal(err)
			}
			key := "collide-" + form
			var r jobs.EnqueueResult
			switch form {
			case "EnqueueTx":
				tx, err := s.pool.BeginTx(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer tx.Rollback()
				if r, err = s.EnqueueTx(ctx, tx, jobs.EnqueueParams{Type: "t", IdempotencyKey: key}); err != nil {
					t.Fatal(err)
				}
				if err := tx.Commit(); err != nil {
					t.Fatal(err)
				}
			case "EnqueueMany":
				rs, err := s.EnqueueMany(ctx, []jobs.EnqueueParams{{Type: "t", IdempotencyKey: key}})
				if err != nil {
					t.Fatal(err)
				}
				r = rs[0]
			case "FireSchedule":
				if err := s.SyncSchedules(ctx, []jobs.ScheduleDef{{Name: "collide", Definition: []byte(`{}`), Hash: "h"}}); err != nil {
					t.Fatal(err)
				}
				now, err := s.Now(ctx)
				if err != nil {
					t.Fatal(err)
				}
				fr, err := s.FireSchedule(ctx, jobs.FireParams{Name: "collide", Hash: "h", Tick: now.Add(time.Second),
					Job: jobs.EnqueueParams{Type: "t", IdempotencyKey: key}})
				if err != nil || !fr.Fired {
					t.Fatalf("fire: %+v, %v", fr, err)
				}
				r = fr.Job
			}
			if r.Duplicate || r.ID == other.ID || !keyedJobIn(t, s.db, s, r.ID, key) {
				t.Fatalf("%s = %+v: want a new job holding %s (job %d has no key; reporting it is reporting an ID the key has no job for)", form, r, key, other.ID)
			}
		})
	}
}

// TestSQLServerKeyedEnqueueWhileTheKeysHolderComesAndGoes: a holder
// inserts a job with the key and deletes it again, over and over, taking no
// key lock (as resurrect takes none), while keyed enqueues of that key run
// in transactions. Some meet the holder's row at the insert and find it
// gone at the re-read. Every answer must name a job that had the key: the
// holder's (a duplicate) or the enqueue's own (visible in its transaction).
// The number of answers of each kind is logged; how often the re-read
// misses depends on the server's scheduling.
func TestSQLServerKeyedEnqueueWhileTheKeysHolderComesAndGoes(t *testing.T) {
	s := openTestStore(t, WithRetryPolicy(RetryPolicy{MaxAttempts: 1}))
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	const key = "comes-and-goes"
	insert := fmt.Sprintf(`SET NOCOUNT ON;
DECLARE @id BIGINT = NEXT VALUE FOR %[1]s.JobIds;
INSERT INTO %[1]s.JobsHot (Id, Queue, Type, Priority, IdempotencyKey, MaxAttempts, AttemptCount, Status, CreatedAtUtc, ScheduledAtUtc, LastUpdatedUtc, RunLease)
VALUES (@id, N'default', N'holder', 0, @key, 1, 0, 0, SYSUTCDATETIME(), DATEADD(DAY, 1, SYSUTCDATETIME()), SYSUTCDATETIME(), 0);
SELECT @id;`, schema.Quote(s.Schema()))
	remove := fmt.Sprintf("DELETE FROM %s.JobsHot WHERE Id = @id;", schema.Quote(s.Schema()))
	var mu sync.Mutex
	held := map[int64]bool{}
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			var id int64
			if err := s.db.QueryRowContext(ctx, insert, named("key", text(key))).Scan(&id); err != nil {
				continue // the enqueue's own job holds the key now
			}
			mu.Lock()
			held[id] = true
			mu.Unlock()
			_, _ = s.db.ExecContext(ctx, remove, named("id", id))
		}
	})
	fresh, dups, retried := 0, 0, 0
	for ctx.Err() == nil {
		tx, err := s.pool.BeginTx(ctx, nil)
		if err != nil {
			break
		}
		r, err := s.EnqueueTx(ctx, tx, jobs.EnqueueParams{Type: "t", IdempotencyKey: key})
		switch {
		case ctx.Err() != nil:
		case err != nil && isDuplicateKey(err):
			retried++ // taken and released three times in a row: an error, never a wrong ID
		case err != nil:
			t.Errorf("EnqueueTx: %v", err)
		case r.Duplicate:
			mu.Lock()
			ok := held[r.ID]
			mu.Unlock()
			if !ok {
				t.Errorf("EnqueueTx reported job %d as the key's duplicate; the holder never had that job", r.ID)
			}
			dups++
		default:
			if !keyedJobIn(t, tx, s, r.ID, key) {
				t.Errorf("EnqueueTx reported a new job %d, which its transaction does not see with the key", r.ID)
			}
			fresh++
		}
		_ = tx.Rollback()
	}
	cancel()
	wg.Wait()
	t.Logf("keyed enqueues beside a holder that comes and goes: %d new jobs, %d duplicates of the holder's job, %d refused after three tries", fresh, dups, retried)
	if fresh+dups == 0 {
		t.Fatal("no enqueue completed")
	}
}

// TestSQLServerUniqueKeyGoesWithARolledBackTransaction: a unique job
// enqueued in a caller's transaction that rolls back leaves neither the job
// nor its key's row: the next enqueue of the key makes a new job. A second
// enqueue of the key from another connection waits for the first
// transaction (the key's lock is the transaction's) instead of finding
// nothing or failing.
func TestSQLServerUniqueKeyGoesWithARolledBackTransaction(t *testing.T) {
	s := openTestStore(t)
	ctx := t.Context()
	p := jobs.EnqueueParams{Type: "t", Payload: []byte(`{"report":"r"}`), Unique: &jobs.UniqueOpts{ByArgs: true}}
	tx, err := s.pool.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	inTx, err := s.EnqueueTx(ctx, tx, p)
	if err != nil || inTx.Duplicate {
		t.Fatalf("EnqueueTx = %+v, %v", inTx, err)
	}
	waited := make(chan jobs.EnqueueResult, 1)
	go func() {
		r, err := s.Enqueue(context.Background(), p)
		if err != nil {
			t.Error(err)
		}
		waited <- r
	}()
	select {
	case r := <-waited:
		t.Fatalf("an enqueue of the key did not wait for the open transaction: %+v", r)
	case <-time.After(200 * time.Millisecond):
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	r := <-waited
	if r.Duplicate || r.ID == inTx.ID {
		t.Fatalf("after the rollback: %+v, want a new job", r)
	}
	var rows int
	stmt := fmt.Sprintf("SELECT COUNT(*) FROM %s.JobUniqueKeys WHERE JobId = @id;", schema.Quote(s.Schema()))
	if err := s.db.QueryRowContext(ctx, stmt, named("id", inTx.ID)).Scan(&rows); err != nil || rows != 0 {
		t.Fatalf("the rolled-back job's key rows: %d, %v", rows, err)
	}
	if again, err := s.Enqueue(ctx, p); err != nil || !again.Duplicate || again.ID != r.ID {
		t.Fatalf("the key again: %+v, %v; want a duplicate of %d", again, err, r.ID)
	}
}
