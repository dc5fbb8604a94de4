package memstore

import (
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

// walkQueueStats is QueueStats read off a walk of every job of the three
// tables: the store's rule before it kept counts, kept as the reference the
// counts and the due index must agree with.
func (s *Store) walkQueueStats(now time.Time) []jobs.QueueStats {
	stats := map[string]*jobs.QueueStats{}
	named := map[string]bool{}
	get := func(name string) *jobs.QueueStats {
		st := stats[jobs.QueueKey(name)]
		if st == nil {
			st = &jobs.QueueStats{Queue: name}
			stats[jobs.QueueKey(name)] = st
		} else if !named[jobs.QueueKey(name)] && name < st.Queue {
			st.Queue = name
		}
		return st
	}
	for key, q := range s.queues {
		if q.hasRow {
			st := get(q.settings.Name)
			st.Queue, named[key] = q.settings.Name, true
			st.Paused, st.MaxWorkers = q.settings.Paused, q.settings.MaxWorkers
		}
	}
	for _, j := range s.hot {
		st := get(j.Queue)
		switch {
		case j.Status == jobs.StatusFetched:
			st.Fetched++
		case j.Status == jobs.StatusProcessing:
			st.Processing++
		case j.ScheduledAt.After(now):
			st.Scheduled++
		default:
			st.Pending++
			if st.OldestDueAt.IsZero() || j.ScheduledAt.Before(st.OldestDueAt) {
				st.OldestDueAt = j.ScheduledAt
			}
		}
	}
	for _, j := range s.archive {
		get(j.Queue).Archived++
	}
	for _, j := range s.dlq {
		get(j.Queue).DeadLettered++
	}
	out := make([]jobs.QueueStats, 0, len(stats))
	c := int64(s.statsCap)
	for _, st := range stats {
		if !st.OldestDueAt.IsZero() {
			st.Lag = now.Sub(st.OldestDueAt)
		}
		st.Pending, st.Scheduled, st.Fetched, st.Processing = min(st.Pending, c), min(st.Scheduled, c), min(st.Fetched, c), min(st.Processing, c)
		st.Archived, st.DeadLettered = min(st.Archived, c), min(st.DeadLettered, c)
		out = append(out, *st)
	}
	slices.SortFunc(out, func(a, b jobs.QueueStats) int { return strings.Compare(a.Queue, b.Queue) })
	return out[:min(len(out), jobs.MaxStatsQueues)]
}

// walkTableQueues is TableQueues read off a walk of table t.
func (s *Store) walkTableQueues(t jobs.Table, after string) []string {
	names := map[string]string{}
	for _, j := range s.table(t) {
		k := jobs.QueueKey(j.Queue)
		if k <= jobs.QueueKey(after) {
			continue
		}
		if n, ok := names[k]; !ok || j.Queue < n {
			names[k] = j.Queue
		}
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(names)) {
		out = append(out, names[k])
	}
	return out[:min(len(out), jobs.MaxStatsQueues)]
}

// checkStats fails unless QueueStats, TableQueues and the counts CountJobs
// reads agree with a walk of every job. It takes the lock itself.
func (s *Store) checkStats(t *testing.T, queues []string) {
	t.Helper()
	ctx := t.Context()
	got, err := s.QueueStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	want := s.walkQueueStats(s.now())
	s.mu.Unlock()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("QueueStats\n got %+v\nwalk %+v", got, want)
	}
	for _, tb := range []jobs.Table{jobs.TableHot, jobs.TableArchive, jobs.TableDLQ} {
		for _, after := range append([]string{""}, queues...) {
			got, err := s.TableQueues(ctx, tb, after)
			if err != nil {
				t.Fatal(err)
			}
			s.mu.Lock()
			want := s.walkTableQueues(tb, after)
			s.mu.Unlock()
			if !slices.Equal(got, want) && len(got)+len(want) > 0 {
				t.Fatalf("TableQueues(%v, %q) = %q, walk %q", tb, after, got, want)
			}
		}
		statuses := []*jobs.Status{nil}
		if tb == jobs.TableHot {
			for st := range jobs.Status(3) {
				statuses = append(statuses, &st)
			}
		}
		for _, q := range append([]string{""}, queues...) {
			for _, st := range statuses {
				f := jobs.Filter{Queue: q, Status: st}
				got, err := s.CountJobs(ctx, tb, f)
				if err != nil {
					t.Fatal(err)
				}
				var want int64
				s.mu.Lock()
				for _, j := range s.table(tb) {
					if matches(j, f, s.now()) {
						want++
					}
				}
				s.mu.Unlock()
				if got != want {
					t.Fatalf("CountJobs(%v, %+v) = %d, walk %d", tb, f, got, want)
				}
				s.checkList(t, tb, f)
				f.Type = "u"
				s.checkList(t, tb, f)
			}
		}
	}
}

// checkList fails unless ListJobs, paged three jobs at a time, lists what
// a walk of table t selects, newest first.
func (s *Store) checkList(t *testing.T, tb jobs.Table, f jobs.Filter) {
	t.Helper()
	var got []int64
	p := jobs.ListParams{Table: tb, Filter: f, Limit: 3}
	for {
		page, err := s.ListJobs(t.Context(), p)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range page.Jobs {
			got = append(got, j.ID)
		}
		if page.NextBeforeID == 0 {
			break
		}
		p.BeforeID = page.NextBeforeID
	}
	var want []int64
	s.mu.Lock()
	for _, j := range s.matching(tb, f, s.now()) {
		want = append(want, j.ID)
	}
	s.mu.Unlock()
	if !slices.Equal(got, want) {
		t.Fatalf("ListJobs(%v, %+v) lists %v, walk %v", tb, f, got, want)
	}
}
