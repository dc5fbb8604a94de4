package memstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

// walkRescue is what a rescue phase must pick, read off a walk of every hot
// job in ID order: the store's rule before it kept indexes, kept as the
// reference the indexes must agree with.
func (s *Store) walkRescue(phase int, p jobs.RescueParams, now time.Time) []int64 {
	var all []*jobs.Job
	for _, j := range s.hot {
		all = append(all, j)
	}
	slices.SortFunc(all, func(a, b *jobs.Job) int { return compareInt64(a.ID, b.ID) })
	var out []int64
	for _, j := range all {
		if len(out) == p.RescueLimit() {
			break
		}
		switch phase {
		case 1:
			if j.Status == jobs.StatusFetched && j.LastUpdatedAt.Before(now.Add(-p.Timeout)) {
				out = append(out, j.ID)
			}
		case 2:
			if j.Status != jobs.StatusProcessing {
				continue
			}
			timeout := p.Timeout
			if q := s.queueOf(j.Queue); q != nil && q.settings.ZombieTimeout > 0 {
				timeout = q.settings.ZombieTimeout
			}
			if lastSeen(j).Before(now.Add(-jobs.ZombieTimeout(timeout, j.HeartbeatMax))) {
				out = append(out, j.ID)
			}
		case 3:
			if j.Status == jobs.StatusProcessing && !j.DeadlineAt.IsZero() && j.DeadlineAt.Before(now) {
				out = append(out, j.ID)
			}
		}
	}
	return out
}

// checkIndexes fails unless every in-flight job has a live entry in each
// index that stands for its state, under an instant no later than its own.
func (s *Store) checkIndexes(t *testing.T) {
	t.Helper()
	lowest := func(x *flightIndex, live func(flightEntry) bool) map[*jobs.Job]int64 {
		m := map[*jobs.Job]int64{}
		for _, e := range x.items {
			if live(e) {
				if at, ok := m[e.job]; !ok || e.at < at {
					m[e.job] = e.at
				}
			}
		}
		return m
	}
	fetched := lowest(&s.fetched, s.isFetched)
	deadlines := lowest(&s.deadlines, s.isProcessing)
	beats := map[*jobs.Job]int64{}
	for key, q := range s.queues {
		for j, at := range lowest(&q.beats, s.isProcessing) {
			if jobs.QueueKey(j.Queue) != key {
				t.Fatalf("job %d of queue %q is in the beats of queue %q", j.ID, j.Queue, key)
			}
			beats[j] = at
		}
	}
	nf, np := 0, 0
	counts := map[string][3]int{}
	for _, j := range s.hot {
		c := counts[jobs.QueueKey(j.Queue)]
		c[j.Status]++
		counts[jobs.QueueKey(j.Queue)] = c
		switch j.Status {
		case jobs.StatusFetched:
			nf++
			if at, ok := fetched[j]; !ok || at > nanos(j.LastUpdatedAt) {
				t.Fatalf("Fetched job %d: index entry %v (present %v), claimed at %v", j.ID, at, ok, nanos(j.LastUpdatedAt))
			}
		case jobs.StatusProcessing:
			np++
			if at, ok := beats[j]; !ok || at > nanos(lastSeen(j)) {
				t.Fatalf("Processing job %d: beats entry %v (present %v), last seen %v", j.ID, at, ok, nanos(lastSeen(j)))
			}
			if at, ok := deadlines[j]; !ok || at != nanos(j.DeadlineAt) {
				t.Fatalf("Processing job %d: deadline entry %v (present %v), deadline %v", j.ID, at, ok, nanos(j.DeadlineAt))
			}
		}
	}
	for key, q := range s.queues {
		if q.counts != counts[key] || q.active != q.counts[jobs.StatusFetched]+q.counts[jobs.StatusProcessing] {
			t.Fatalf("queue %q counts %v, active %d; walk: %v", key, q.counts, q.active, counts[key])
		}
	}
	if len(fetched) != nf || len(beats) != np || len(deadlines) != np {
		t.Fatalf("live entries: %d fetched, %d beats, %d deadlines; walk: %d Fetched, %d Processing", len(fetched), len(beats), len(deadlines), nf, np)
	}
}

// Random operations, then each rescue phase picks what a walk of every
// job picks, the indexes hold every in-flight job and nothing else, and
// the operator reads' counts agree with a walk of every job (stats_test.go).
func TestIndexesAgreeWithAWalkOfEveryJob(t *testing.T) {
	seeds := uint64(20)
	if raceEnabled {
		seeds = 4
	}
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 34))
			clock := NewManualClock(time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC))
			s := New(WithClock(clock.Now))
			ctx := context.Background()
			queues := []string{"a", "A", "b", "c"}
			var refs []jobs.LeaseRef
			pick := func() jobs.LeaseRef {
				if len(refs) == 0 {
					return jobs.LeaseRef{ID: 1, Lease: 1}
				}
				return refs[r.IntN(len(refs))]
			}
			for step := range 3000 {
				switch op := r.IntN(21); op {
				case 0, 1:
					_, _ = s.Enqueue(ctx, jobs.EnqueueParams{Queue: queues[r.IntN(len(queues))], Type: "t", Delay: time.Duration(r.IntN(3)) * time.Second})
				case 16:
					_, _ = s.Enqueue(ctx, jobs.EnqueueParams{Queue: queues[r.IntN(len(queues))], Type: "u", RunAt: clock.Now().Add(time.Duration(r.IntN(7)-3) * time.Second)})
				case 17:
					tb := []jobs.Table{jobs.TableArchive, jobs.TableDLQ}[r.IntN(2)]
					_, _ = s.Purge(ctx, jobs.PurgeParams{Table: tb, Filter: jobs.Filter{Queue: queues[r.IntN(len(queues))], OlderThan: time.Duration(r.IntN(20)) * time.Second}, Limit: 1 + r.IntN(3)})
				case 18:
					tb := []jobs.Table{jobs.TableArchive, jobs.TableDLQ}[r.IntN(2)]
					_, _ = s.Purge(ctx, jobs.PurgeParams{Table: tb, Filter: jobs.Filter{IDs: []int64{pick().ID}}})
				case 19:
					_, _ = s.Trim(ctx, jobs.TrimParams{Table: jobs.TableArchive, Queue: queues[r.IntN(len(queues))], OlderThan: time.Duration(1+r.IntN(20)) * time.Second, Limit: 1 + r.IntN(3)})
				case 20:
					if r.IntN(4) == 0 {
						clock.Advance(-time.Duration(r.IntN(5)) * time.Second) // the clock goes back
					}
					s.checkStats(t, queues)
				case 2, 3:
					got, _ := s.Claim(ctx, jobs.ClaimParams{WorkerID: "w", Queues: queues, Limit: 1 + r.IntN(4)})
					for _, j := range got {
						refs = append(refs, jobs.LeaseRef{ID: j.ID, Lease: j.Lease})
					}
				case 4, 5:
					_, _ = s.Start(ctx, pick(), jobs.StartParams{DefaultTimeout: time.Duration(1+r.IntN(60)) * time.Second, HeartbeatMax: time.Duration(r.IntN(20)) * time.Second})
				case 6:
					_, _ = s.Heartbeat(ctx, []jobs.LeaseRef{pick(), pick()})
				case 7:
					_ = s.Complete(ctx, pick())
				case 8:
					_ = s.Retry(ctx, pick(), jobs.RetryParams{Delay: time.Second})
				case 9:
					_ = s.Snooze(ctx, pick(), jobs.SnoozeParams{})
				case 10:
					_, _ = s.Release(ctx, []jobs.LeaseRef{pick()})
				case 11:
					_, _ = s.Cancel(ctx, jobs.CancelParams{IDs: []int64{pick().ID}})
				case 12:
					_, _ = s.Resurrect(ctx, jobs.ResurrectParams{All: true})
				case 13:
					d := time.Duration(r.IntN(20)) * time.Second
					_, _ = s.UpdateQueue(ctx, queues[r.IntN(len(queues))], jobs.QueueUpdate{ZombieTimeout: &d, ExecutionTimeout: &d})
				case 14:
					clock.Advance(time.Duration(r.IntN(15)) * time.Second)
				case 15:
					phase := 1 + r.IntN(3)
					p := jobs.RescueParams{Timeout: time.Duration(1+r.IntN(30)) * time.Second, Limit: 1 + r.IntN(5)}
					s.mu.Lock()
					want := s.walkRescue(phase, p, s.now())
					s.mu.Unlock()
					got, err := []func(context.Context, jobs.RescueParams) ([]jobs.Rescued, error){s.RescueFetched, s.RescueZombies, s.RescueExpired}[phase-1](ctx, p)
					if err != nil {
						t.Fatal(err)
					}
					var ids []int64
					for _, g := range got {
						ids = append(ids, g.ID)
					}
					if !slices.Equal(ids, want) {
						t.Fatalf("step %d: phase %d with %+v moved %v, a walk of every job picks %v", step, phase, p, ids, want)
					}
				}
				s.mu.Lock()
				s.checkIndexes(t)
				s.mu.Unlock()
			}
		})
	}
}
