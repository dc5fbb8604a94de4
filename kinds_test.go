package chokaq_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/chokaq/chokaq-go"
	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/memstore"
	"github.com/chokaq/chokaq-go/processor"
)

// reportArgs is a kind whose policy sends it to "reports" at priority 5
// with 7 attempts and a 42s timeout, retried after 7 minutes.
type reportArgs struct{ N int }

func (reportArgs) Kind() string { return "report.build" }
func (reportArgs) KindPolicy() chokaq.KindPolicy {
	return chokaq.KindPolicy{Queue: "reports", Priority: 5, MaxAttempts: 7, Timeout: 42 * time.Second,
		NextRetry: func(attempt int, err error) time.Duration { return time.Duration(attempt) * 7 * time.Minute }}
}

type plainKindArgs struct{}

func (plainKindArgs) Kind() string { return "plain.kind" }

func kindClient(t *testing.T, cfg chokaq.Config) (*chokaq.Client, *memstore.Store) {
	t.Helper()
	store := memstore.New()
	cfg.Store, cfg.DisableProcessor = store, true
	c, err := chokaq.New(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c, store
}

// Every level of docs/design.md (Policy per kind) for the settings applied
// at enqueue: the job's option, else the operator's Kinds.<kind>, else the
// kind's own (ArgsWithPolicy), else the Client's default.
func TestKindPolicyPrecedence(t *testing.T) {
	ctx := context.Background()
	c, store := kindClient(t, chokaq.Config{DefaultMaxAttempts: 4,
		Kinds: map[string]chokaq.KindPolicy{"report.build": {MaxAttempts: 9}}})
	for _, tc := range []struct {
		what               string
		args               chokaq.Args
		opts               *chokaq.EnqueueOpts
		queue              string
		priority, attempts int
	}{
		{"the kind's, the operator's attempts over the code's", reportArgs{}, nil, "reports", 5, 9},
		{"the job's options over the kind's", reportArgs{}, &chokaq.EnqueueOpts{Queue: "urgent", Priority: 9, MaxAttempts: 2}, "urgent", 9, 2},
		{"no policy: the defaults", plainKindArgs{}, nil, jobs.DefaultQueue, 0, 4},
	} {
		r, err := c.Enqueue(ctx, tc.args, tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		j, err := store.GetJob(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if j.Queue != tc.queue || j.Priority != tc.priority || j.MaxAttempts != tc.attempts {
			t.Errorf("%s: queue %s priority %d attempts %d, want %s %d %d", tc.what, j.Queue, j.Priority, j.MaxAttempts, tc.queue, tc.priority, tc.attempts)
		}
	}
	// EnqueueRaw of the kind follows the operator's policy too.
	r, err := c.EnqueueRaw(ctx, jobs.EnqueueParams{Type: "report.build"})
	if err != nil {
		t.Fatal(err)
	}
	if j, _ := store.GetJob(ctx, r.ID); j.MaxAttempts != 9 {
		t.Errorf("EnqueueRaw: attempts %d, want the configured kind's 9", j.MaxAttempts)
	}
}

// Kinds compare exactly, configuration keys ignore case: two configured
// kinds that differ only by case are refused, naming both.
func TestKindsDifferingOnlyByCaseAreRefused(t *testing.T) {
	_, err := chokaq.New(context.Background(), chokaq.Config{Store: memstore.New(), DisableProcessor: true,
		Kinds: map[string]chokaq.KindPolicy{"Mail.Welcome": {MaxAttempts: 2}, "mail.welcome": {MaxAttempts: 3}}}, nil)
	if !errors.Is(err, chokaq.ErrKindsDifferOnlyByCase) || !strings.Contains(err.Error(), `"Mail.Welcome" and "mail.welcome"`) {
		t.Fatalf("New = %v, want ErrKindsDifferOnlyByCase naming both", err)
	}
}

func TestKindPolicyIsValidated(t *testing.T) {
	for _, tc := range []struct {
		p    chokaq.KindPolicy
		want string
	}{
		{chokaq.KindPolicy{Timeout: time.Nanosecond}, "timeout"},
		{chokaq.KindPolicy{ZombieRetryCap: -1}, "zombie_retry_cap"},
		{chokaq.KindPolicy{Priority: 5000}, "priority"},
		{chokaq.KindPolicy{Queue: "bad queue!"}, "queue"},
		{chokaq.KindPolicy{Backoff: &processor.RetryPolicy{BackoffMultiplier: 0.5}}, "BackoffMultiplier"},
	} {
		_, err := chokaq.New(context.Background(), chokaq.Config{Store: memstore.New(), DisableProcessor: true,
			Kinds: map[string]chokaq.KindPolicy{"k": tc.p}}, nil)
		if !errors.Is(err, jobs.ErrInvalidArgument) || !strings.Contains(err.Error(), `kind "k"`) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New with %+v = %v, want an error naming kind k and %s", tc.p, err, tc.want)
		}
	}
	reg := chokaq.NewRegistry()
	if err := chokaq.Handle(reg, func(context.Context, *chokaq.Job, badPolicyArgs) error { return nil }); err == nil || len(reg.Types()) != 0 {
		t.Fatalf("Handle of a kind with a bad policy = %v, registered %v; want an error and nothing registered", err, reg.Types())
	}
}

type badPolicyArgs struct{}

func (badPolicyArgs) Kind() string                  { return "bad.policy" }
func (badPolicyArgs) KindPolicy() chokaq.KindPolicy { return chokaq.KindPolicy{MaxAttempts: -3} }

// The handler's Job shows the timeout applied and where it came from, for
// a kind that sets one, a queue that sets one, and the default; and the
// kind's NextRetry sets the delay of a failed attempt.
func TestHandlerSeesTheEffectiveTimeoutAndTheKindsBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		store := memstore.New()
		var mu sync.Mutex
		seen := map[string]chokaq.Job{}
		reg := chokaq.NewRegistry()
		chokaq.MustHandle(reg, func(_ context.Context, j *chokaq.Job, _ reportArgs) error {
			mu.Lock()
			seen[j.Type] = *j
			mu.Unlock()
			return errors.New("not yet")
		})
		chokaq.MustHandle(reg, func(_ context.Context, j *chokaq.Job, _ plainKindArgs) error {
			mu.Lock()
			seen[j.Type+"@"+j.Queue] = *j
			mu.Unlock()
			return nil
		})
		two := 2 * time.Minute
		c, err := chokaq.New(ctx, chokaq.Config{Store: store, DisableRescue: true,
			Processor: processor.Config{Queues: []string{"reports", "slow", jobs.DefaultQueue}, DefaultTimeout: 5 * time.Minute},
			Queues:    map[string]jobs.QueueUpdate{"reports": {ExecutionTimeout: &two}, "slow": {ExecutionTimeout: &two}}}, reg)
		if err != nil {
			t.Fatal(err)
		}
		report, _ := c.Enqueue(ctx, reportArgs{}, nil)
		c.Enqueue(ctx, plainKindArgs{}, &chokaq.EnqueueOpts{Queue: "slow"})
		c.Enqueue(ctx, plainKindArgs{}, nil)
		if err := c.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer c.Stop(ctx)
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
			mu.Lock()
			n := len(seen)
			mu.Unlock()
			if n == 3 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("handlers saw %v", seen)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		for key, want := range map[string]struct {
			d    time.Duration
			from jobs.PolicySource
		}{
			"report.build":                    {42 * time.Second, jobs.SourceKind},
			"plain.kind@slow":                 {2 * time.Minute, jobs.SourceQueue},
			"plain.kind@" + jobs.DefaultQueue: {5 * time.Minute, jobs.SourceDefault},
		} {
			if j := seen[key]; j.Timeout != want.d || j.TimeoutFrom != want.from {
				t.Errorf("%s: the handler saw timeout %v from %s, want %v from %s", key, j.Timeout, j.TimeoutFrom, want.d, want.from)
			}
		}
		// The failed report waits the 7 minutes its kind's NextRetry gave.
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
			j, err := store.GetJob(ctx, report.ID)
			if err == nil && j.Status == jobs.StatusPending && j.AttemptCount == 1 {
				if got := j.ScheduledAt.Sub(j.LastUpdatedAt); got != 7*time.Minute {
					t.Fatalf("retried after %v, want the kind's 7m", got)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("report job %+v, %v: never retried", j, err)
			}
		}
	})
}

// syncKindArgs are unique per customer by their kind's policy.
type syncKindArgs struct {
	Customer int `json:"customer"`
	Attempt  int `json:"attempt"`
}

func (syncKindArgs) Kind() string { return "crm.sync.kind" }
func (syncKindArgs) KindPolicy() chokaq.KindPolicy {
	return chokaq.KindPolicy{Unique: &jobs.UniqueOpts{Fields: []string{"customer"}}}
}

// A kind's Unique applies to its jobs unless the job's options set their
// own, and a bad one is refused naming the kind.
func TestKindPolicyUnique(t *testing.T) {
	ctx := context.Background()
	c, _ := kindClient(t, chokaq.Config{})
	first, err := c.Enqueue(ctx, syncKindArgs{Customer: 7, Attempt: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	second, err := c.Enqueue(ctx, syncKindArgs{Customer: 7, Attempt: 2}, nil)
	if err != nil || !second.Duplicate || second.ID != first.ID {
		t.Fatalf("the kind's unique key: %+v, %v; want a duplicate of %d", second, err, first.ID)
	}
	own, err := c.Enqueue(ctx, syncKindArgs{Customer: 7, Attempt: 3}, &chokaq.EnqueueOpts{Unique: &jobs.UniqueOpts{ByArgs: true}})
	if err != nil || own.Duplicate {
		t.Fatalf("the job's own Unique over the kind's: %+v, %v; want a new job", own, err)
	}
	bad := processor.KindPolicy{Unique: &jobs.UniqueOpts{Period: time.Millisecond}}
	if err := bad.Validate("k"); !errors.Is(err, jobs.ErrInvalidArgument) || !strings.Contains(err.Error(), `"k"`) || !strings.Contains(err.Error(), "unique.period") {
		t.Errorf("Validate of a bad Unique: %v", err)
	}
}
