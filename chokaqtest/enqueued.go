package chokaqtest

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	chokaq "github.com/chokaq/chokaq-go"
	"github.com/chokaq/chokaq-go/jobs"
)

// Enqueued is a job found by EnqueuedJobs, its payload decoded.
type Enqueued[T chokaq.Args] struct {
	Job  *jobs.Job
	Args T
}

// Match narrows the jobs of a kind. The zero value matches every job of
// the kind.
type Match[T chokaq.Args] struct {
	// Queue, when set, is the queue the job must be on.
	Queue string
	// Args, when set, must accept the job's decoded arguments.
	Args func(T) bool
	// Job, when set, must accept the job as the store holds it (priority,
	// tags, idempotency key, schedule).
	Job func(*jobs.Job) bool
}

func (m *Match[T]) accepts(e Enqueued[T]) bool {
	if m == nil {
		return true
	}
	return (m.Queue == "" || e.Job.Queue == m.Queue) &&
		(m.Args == nil || m.Args(e.Args)) &&
		(m.Job == nil || m.Job(e.Job))
}

// EnqueuedJobs returns the jobs of T's kind that store holds and m
// accepts, oldest first, whatever became of them (still active, archived
// or dead-lettered). m may be nil.
func EnqueuedJobs[T chokaq.Args](ctx context.Context, store jobs.Admin, m *Match[T]) ([]Enqueued[T], error) {
	var zero T
	kind := zero.Kind()
	var found []Enqueued[T]
	seen := map[int64]bool{} // a job that moves tables during the walk
	for _, t := range []jobs.Table{jobs.TableHot, jobs.TableArchive, jobs.TableDLQ} {
		err := walk(ctx, store, t, jobs.Filter{Type: kind}, func(j *jobs.Job) error {
			if seen[j.ID] {
				return nil
			}
			seen[j.ID] = true
			var args T
			if err := json.Unmarshal(j.Payload, &args); err != nil {
				return fmt.Errorf("chokaqtest: job %d (%s): payload does not decode into %T: %w", j.ID, kind, args, err)
			}
			if e := (Enqueued[T]{Job: j, Args: args}); m.accepts(e) {
				found = append(found, e)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	slices.SortFunc(found, func(a, b Enqueued[T]) int { return cmp.Compare(a.Job.ID, b.Job.ID) })
	return found, nil
}

// RequireEnqueued fails tb unless exactly one job of T's kind that m
// accepts is in store, and returns it. m may be nil. Use
// RequireEnqueuedN when a count other than one is expected.
func RequireEnqueued[T chokaq.Args](tb testing.TB, store jobs.Admin, m *Match[T]) Enqueued[T] {
	tb.Helper()
	found := requireN(tb, store, m, 1)
	return found[0]
}

// RequireEnqueuedN fails tb unless exactly n jobs of T's kind that m
// accepts are in store, and returns them oldest first.
func RequireEnqueuedN[T chokaq.Args](tb testing.TB, store jobs.Admin, n int, m *Match[T]) []Enqueued[T] {
	tb.Helper()
	return requireN(tb, store, m, n)
}

// RequireNotEnqueued fails tb if any job of T's kind that m accepts is in
// store.
func RequireNotEnqueued[T chokaq.Args](tb testing.TB, store jobs.Admin, m *Match[T]) {
	tb.Helper()
	requireN(tb, store, m, 0)
}

func requireN[T chokaq.Args](tb testing.TB, store jobs.Admin, m *Match[T], n int) []Enqueued[T] {
	tb.Helper()
	ctx := context.Background()
	found, err := EnqueuedJobs(ctx, store, m)
	if err != nil {
		tb.Fatal(err)
	}
	if len(found) == n {
		return found
	}
	var zero T
	what := zero.Kind()
	if m != nil && m.Queue != "" {
		what += fmt.Sprintf(" on queue %q", m.Queue)
	}
	if m != nil && (m.Args != nil || m.Job != nil) {
		what += " matching the test's conditions"
	}
	var ids []string
	for _, e := range found {
		ids = append(ids, fmt.Sprintf("%d on %s: %s", e.Job.ID, e.Job.Queue, e.Job.Payload))
	}
	msg := fmt.Sprintf("chokaqtest: want %d enqueued %s job(s), found %d", n, what, len(found))
	if len(ids) > 0 {
		msg += ":\n  " + strings.Join(ids, "\n  ")
	}
	if len(found) == 0 {
		msg += "\n" + inventory(ctx, store)
	}
	tb.Fatal(msg)
	return nil
}

// inventory says what is in store, by kind and queue, so a failed
// assertion shows what was enqueued instead.
func inventory(ctx context.Context, store jobs.Admin) string {
	counts := map[string]int{}
	for _, t := range []jobs.Table{jobs.TableHot, jobs.TableArchive, jobs.TableDLQ} {
		_ = walk(ctx, store, t, jobs.Filter{}, func(j *jobs.Job) error {
			counts[fmt.Sprintf("%s on %s", j.Type, j.Queue)]++
			return nil
		})
	}
	if len(counts) == 0 {
		return "the store holds no jobs at all"
	}
	var lines []string
	for k, c := range counts {
		lines = append(lines, fmt.Sprintf("  %d x %s", c, k))
	}
	slices.Sort(lines)
	return "the store holds:\n" + strings.Join(lines, "\n")
}

// walk pages through one table.
func walk(ctx context.Context, store jobs.Admin, t jobs.Table, f jobs.Filter, fn func(*jobs.Job) error) error {
	for before := int64(0); ; {
		page, err := store.ListJobs(ctx, jobs.ListParams{Table: t, Filter: f, Limit: jobs.MaxPageSize, BeforeID: before})
		if err != nil {
			return fmt.Errorf("chokaqtest: list %s jobs: %w", t, err)
		}
		for _, j := range page.Jobs {
			if err := fn(j); err != nil {
				return err
			}
		}
		if before = page.NextBeforeID; before == 0 {
			return nil
		}
	}
}
