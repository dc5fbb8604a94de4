package processor_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/processor"
)

func TestRunsJobsToTheArchive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newMem()
		reg := processor.NewRegistry()
		var runs atomic.Int64
		reg.MustHandle("test", func(ctx context.Context, j *processor.Job) error {
			runs.Add(1)
			if j.Attempt != 1 || j.Lease < 1 || string(j.Payload) != "p" {
				return processor.Permanent(errors.New("unexpected job view"))
			}
			return nil
		})
		for range 50 {
			enqueue(t, s, jobs.EnqueueParams{Payload: []byte("p")})
		}
		p := startProcessor(t, s, reg, testConfig())
		waitFor(t, time.Minute, "50 archived", func() bool { return countIn(t, s, jobs.TableArchive) == 50 })
		stop(t, p)
		if st := p.Stats(); st.Succeeded != 50 || st.Started != 50 || runs.Load() != 50 {
			t.Fatalf("stats %+v, runs %d", st, runs.Load())
		}
	})
}

// TestOutcomes runs one job for each of several rows of the outcome table in
// docs/design.md (Outcomes); the table names the tests of the other rows.
func TestOutcomes(t *testing.T) {
	type want struct {
		table    jobs.Table
		reason   jobs.FailureReason
		attempts int
		details  string
	}
	cases := []struct {
		name    string
		enqueue jobs.EnqueueParams
		queue   *jobs.QueueUpdate
		handler processor.HandlerFunc
		want    want
	}{
		{"ErrorThenSuccessIsRetried", jobs.EnqueueParams{Type: "h"}, nil,
			func(ctx context.Context, j *processor.Job) error {
				if j.Attempt == 1 {
					return errors.New("flaky")
				}
				return nil
			}, want{table: jobs.TableArchive, attempts: 2}},
		{"AttemptsExhaustedIsMaxRetries", jobs.EnqueueParams{Type: "h", MaxAttempts: 3}, nil,
			func(context.Context, *processor.Job) error { return errors.New("always") },
			want{jobs.TableDLQ, jobs.ReasonMaxRetriesExceeded, 3, "attempt 3 of 3 failed: always"}},
		{"PermanentIsFatalAtOnce", jobs.EnqueueParams{Type: "h"}, nil,
			func(context.Context, *processor.Job) error { return processor.Permanent(errors.New("bad request")) },
			want{jobs.TableDLQ, jobs.ReasonFatal, 1, "bad request"}},
		{"UnknownTypeIsFatal", jobs.EnqueueParams{Type: "nobody.handles.this"}, nil, nil,
			want{jobs.TableDLQ, jobs.ReasonFatal, 1, `unknown job type "nobody.handles.this"`}},
		{"PanicIsRecoveredWithStackAndRetried", jobs.EnqueueParams{Type: "h", MaxAttempts: 1}, nil,
			func(context.Context, *processor.Job) error { panic("kaboom") },
			want{jobs.TableDLQ, jobs.ReasonMaxRetriesExceeded, 1, "panic: kaboom"}},
		{"PanicThenSuccess", jobs.EnqueueParams{Type: "h"}, nil,
			func(ctx context.Context, j *processor.Job) error {
				if j.Attempt == 1 {
					panic("once")
				}
				return nil
			}, want{table: jobs.TableArchive, attempts: 2}},
		{"OurExecutionTimeoutIsTimeout", jobs.EnqueueParams{Type: "h", Queue: "slow"},
			&jobs.QueueUpdate{ExecutionTimeout: secs(30)},
			func(ctx context.Context, j *processor.Job) error { <-ctx.Done(); return ctx.Err() },
			want{jobs.TableDLQ, jobs.ReasonTimeout, 1, "execution timeout"}},
		{"ForeignContextErrorIsAnOrdinaryError", jobs.EnqueueParams{Type: "h", MaxAttempts: 2}, nil,
			func(ctx context.Context, j *processor.Job) error {
				client, cancel := context.WithTimeout(ctx, time.Millisecond) // a client's own timeout
				defer cancel()
				<-client.Done()
				return client.Err()
			}, want{jobs.TableDLQ, jobs.ReasonMaxRetriesExceeded, 2, "context deadline exceeded"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newMem()
				reg := processor.NewRegistry()
				if c.handler != nil {
					reg.MustHandle("h", c.handler)
				}
				if c.queue != nil {
					if _, err := s.UpdateQueue(t.Context(), c.enqueue.Queue, *c.queue); err != nil {
						t.Fatal(err)
					}
				}
				id := enqueue(t, s, c.enqueue)
				cfg := testConfig()
				cfg.Queues = []string{"default", "slow"}
				p := startProcessor(t, s, reg, cfg)
				waitFor(t, 10*time.Minute, "a terminal table", func() bool { return get(t, s, id).Table != jobs.TableHot })
				stop(t, p)
				j := get(t, s, id)
				if j.Table != c.want.table || j.AttemptCount != c.want.attempts {
					t.Fatalf("job in %s after %d attempts, want %s after %d (%+v)", j.Table, j.AttemptCount, c.want.table, c.want.attempts, j)
				}
				if c.want.table == jobs.TableDLQ {
					if j.FailureReason != c.want.reason || !strings.Contains(j.ErrorDetails, c.want.details) {
						t.Fatalf("dead letter reason %s details %q, want %s containing %q", j.FailureReason, j.ErrorDetails, c.want.reason, c.want.details)
					}
				}
			})
		})
	}
}

func TestPanicDetailsCarryTheStack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newMem()
		reg := processor.NewRegistry()
		reg.MustHandle("h", func(context.Context, *processor.Job) error { panic("deep trouble") })
		id := enqueue(t, s, jobs.EnqueueParams{Type: "h", MaxAttempts: 1})
		p := startProcessor(t, s, reg, testConfig())
		waitFor(t, time.Minute, "dead letter", inTable(s, id, jobs.TableDLQ))
		stop(t, p)
		d := get(t, s, id).ErrorDetails
		if !strings.Contains(d, "deep trouble") || !strings.Contains(d, "goroutine") || !strings.Contains(d, "outcome_test.go") {
			t.Fatalf("details lack the stack:\n%s", d)
		}
	})
}

func TestHandleJSON(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		type mail struct {
			To   string `json:"to"`
			Body string `json:"body"`
		}
		s := newMem()
		reg := processor.NewRegistry()
		var mu sync.Mutex
		var got []mail
		if err := processor.HandleJSON(reg, "mail", func(ctx context.Context, j *processor.Job, m mail) error {
			mu.Lock()
			got = append(got, m)
			mu.Unlock()
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		good := enqueue(t, s, jobs.EnqueueParams{Type: "mail", Payload: []byte(`{"to":"a@b.c","body":"hi"}`)})
		bad := enqueue(t, s, jobs.EnqueueParams{Type: "mail", Payload: []byte(`{"to":`)})
		p := startProcessor(t, s, reg, testConfig())
		waitFor(t, time.Minute, "both settled", func() bool {
			return get(t, s, good).Table == jobs.TableArchive && get(t, s, bad).Table == jobs.TableDLQ
		})
		stop(t, p)
		if len(got) != 1 || got[0].To != "a@b.c" {
			t.Fatalf("decoded %+v", got)
		}
		d := get(t, s, bad)
		if d.FailureReason != jobs.ReasonFatal || d.AttemptCount != 1 || !strings.Contains(d.ErrorDetails, "undecodable payload") {
			t.Fatalf("undecodable payload: %+v", d)
		}
	})
}

func TestRegistryRejectsDuplicatesAndBadTypes(t *testing.T) {
	reg := processor.NewRegistry()
	h := func(context.Context, *processor.Job) error { return nil }
	if err := reg.Handle("a", h); err != nil {
		t.Fatal(err)
	}
	if err := reg.Handle("a", h); !errors.Is(err, processor.ErrDuplicateHandler) {
		t.Fatalf("duplicate: %v", err)
	}
	if err := reg.Handle("", h); !errors.Is(err, jobs.ErrInvalidArgument) {
		t.Fatalf("empty type: %v", err)
	}
	if err := reg.Handle("b", nil); err == nil {
		t.Fatal("nil handler accepted")
	}
}

func TestRetryDelay(t *testing.T) {
	p := processor.RetryPolicy{BaseDelay: 3 * time.Second, MaxDelay: time.Hour, BackoffMultiplier: 2, JitterMaxDelay: time.Second}
	// Without jitter the first three delays are 3s, 6s, 12s.
	for attempt, want := range map[int]time.Duration{1: 3 * time.Second, 2: 6 * time.Second, 3: 12 * time.Second} {
		if got := p.Delay(attempt, 0); got != want {
			t.Errorf("Delay(%d, 0) = %v, want %v", attempt, got, want)
		}
		// Jitter adds up to JitterMaxDelay.
		if got := p.Delay(attempt, 0.999999); got <= want || got > want+time.Second {
			t.Errorf("Delay(%d, ~1) = %v, want in (%v, %v]", attempt, got, want, want+time.Second)
		}
	}
	// At the cap, delays stay within [MaxDelay - JitterMaxDelay, MaxDelay]
	// and still spread with the jitter.
	if lo, hi := p.Delay(30, 0), p.Delay(30, 0.999999); lo != time.Hour-time.Second || hi <= lo || hi > time.Hour {
		t.Errorf("Delay(30) spans [%v, %v], want [59m59s, 1h]", lo, hi)
	}
	capped := processor.RetryPolicy{BaseDelay: 50 * time.Second, MaxDelay: time.Minute, BackoffMultiplier: 2, JitterMaxDelay: 30 * time.Second}
	if got := capped.Delay(1, 0.9); got > time.Minute || got < 30*time.Second {
		t.Errorf("base 50s + jitter = %v, want within [30s, 1m]", got)
	}
	if got := p.Delay(1<<30, 0.5); got > time.Hour || got < time.Hour-time.Second {
		t.Errorf("a huge attempt number gave %v", got)
	}
	exact := p
	exact.JitterMaxDelay = processor.NoJitter
	if got := exact.Delay(2, 0.999999); got != 6*time.Second {
		t.Errorf("NoJitter: Delay(2, ~1) = %v, want exactly 6s", got)
	}
	if got := exact.Delay(30, 0.999999); got != time.Hour {
		t.Errorf("NoJitter: Delay(30, ~1) = %v, want exactly MaxDelay", got)
	}
}

// TestRetryDelayIsApplied checks the delay reaches the store: the retried
// job is due BaseDelay later, not at once.
func TestRetryDelayIsApplied(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newMem()
		reg := processor.NewRegistry()
		var starts []time.Time
		var mu sync.Mutex
		reg.MustHandle("h", func(ctx context.Context, j *processor.Job) error {
			mu.Lock()
			starts = append(starts, time.Now())
			mu.Unlock()
			if j.Attempt < 3 {
				return errors.New("again")
			}
			return nil
		})
		id := enqueue(t, s, jobs.EnqueueParams{Type: "h"})
		cfg := testConfig()
		cfg.Retry = processor.RetryPolicy{BaseDelay: 10 * time.Second, MaxDelay: time.Hour, BackoffMultiplier: 3, JitterMaxDelay: processor.NoJitter}
		cfg.PollJitter = processor.NoPollJitter // a poll is then at most PollInterval
		p := startProcessor(t, s, reg, cfg)
		waitFor(t, 5*time.Minute, "archive", inTable(s, id, jobs.TableArchive))
		stop(t, p)
		if len(starts) != 3 {
			t.Fatalf("%d starts", len(starts))
		}
		gap1, gap2 := starts[1].Sub(starts[0]), starts[2].Sub(starts[1])
		// No jitter: only the claim poll (at most PollInterval) adds to the
		// backoff.
		late := func(gap, want time.Duration) bool { return gap < want || gap > want+cfg.PollInterval }
		if late(gap1, 10*time.Second) || late(gap2, 30*time.Second) {
			t.Fatalf("gaps %v and %v, want 10s and 30s plus at most one poll", gap1, gap2)
		}
	})
}
