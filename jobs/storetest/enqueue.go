package storetest

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

var enqueueCases = []testCase{
	{"StoresEveryField", func(t *testing.T, h *Harness) {
		p := jobs.EnqueueParams{
			Queue: "mail", Type: "mail.send", Payload: []byte(`{"to":"a@b.c"}`), Priority: 7,
			MaxAttempts: 5, Tags: []string{"red", "blue"}, IdempotencyKey: "k-1", CreatedBy: "billing-svc",
		}
		id := enqueue(t, h, p)
		j := wantHot(t, h, id, jobs.StatusPending)
		if j.Queue != "mail" || j.Type != "mail.send" || string(j.Payload) != `{"to":"a@b.c"}` || j.Priority != 7 ||
			j.MaxAttempts != 5 || strings.Join(j.Tags, ",") != "red,blue" || j.IdempotencyKey != "k-1" || j.CreatedBy != "billing-svc" {
			t.Fatalf("stored job differs from input: %+v", j)
		}
		if j.AttemptCount != 0 || j.WorkerID != "" || j.Lease != 0 {
			t.Fatalf("new job has attempt %d worker %q lease %d, want 0, empty, 0", j.AttemptCount, j.WorkerID, j.Lease)
		}
		if j.CreatedAt.IsZero() || !closeTo(j.ScheduledAt, j.CreatedAt, time.Millisecond) {
			t.Fatalf("immediate job: created %v scheduled %v, want scheduled == created", j.CreatedAt, j.ScheduledAt)
		}
	}},
	{"DefaultsQueueAndMaxAttempts", func(t *testing.T, h *Harness) {
		j := wantHot(t, h, enqueue(t, h, jobs.EnqueueParams{Type: "x"}), jobs.StatusPending)
		if j.Queue != jobs.DefaultQueue || j.MaxAttempts != jobs.DefaultMaxAttempts {
			t.Fatalf("queue %q max attempts %d, want %q and %d", j.Queue, j.MaxAttempts, jobs.DefaultQueue, jobs.DefaultMaxAttempts)
		}
	}},
	{"IDsIncrease", func(t *testing.T, h *Harness) {
		a := enqueue(t, h, jobs.EnqueueParams{})
		b := enqueue(t, h, jobs.EnqueueParams{})
		c := enqueueN(t, h, 3, jobs.EnqueueParams{})
		if !(a < b && b < c[0] && c[0] < c[1] && c[1] < c[2]) {
			t.Fatalf("ids not increasing: %d %d %v", a, b, c)
		}
	}},
	{"RejectsBadInputNamingTheField", func(t *testing.T, h *Harness) {
		long := func(n int) string { return strings.Repeat("q", n) }
		// rule is the part of the message that tells the caller what would
		// have been accepted: a bare "invalid type" sends them to the docs.
		cases := []struct {
			name, field, rule string
			p                 jobs.EnqueueParams
		}{
			{"EmptyType", "type", "must not be empty", jobs.EnqueueParams{}},
			{"LongType", "type", "at most 200 characters", jobs.EnqueueParams{Type: long(jobs.MaxTypeLen + 1)}},
			{"ControlCharType", "type", "control characters", jobs.EnqueueParams{Type: "a\nb"}},
			{"LongQueue", "queue", "at most 100 characters", jobs.EnqueueParams{Type: "t", Queue: long(jobs.MaxQueueLen + 1)}},
			{"ControlCharQueue", "queue", "only ASCII letters, digits", jobs.EnqueueParams{Type: "t", Queue: "a\x00b"}},
			{"SpaceInQueue", "queue", "only ASCII letters, digits", jobs.EnqueueParams{Type: "t", Queue: "a b"}},
			{"PayloadOverLimit", "payload", "at most 1048576 bytes", jobs.EnqueueParams{Type: "t", Payload: make([]byte, jobs.DefaultMaxPayloadBytes+1)}},
			{"NegativeDelay", "delay", "must not be negative", jobs.EnqueueParams{Type: "t", Delay: -time.Second}},
			{"PriorityTooHigh", "priority", "between -1000 and 1000", jobs.EnqueueParams{Type: "t", Priority: jobs.MaxPriority + 1}},
			{"PriorityTooLow", "priority", "between -1000 and 1000", jobs.EnqueueParams{Type: "t", Priority: jobs.MinPriority - 1}},
			{"MaxAttemptsTooHigh", "max_attempts", "between 1 and 1000", jobs.EnqueueParams{Type: "t", MaxAttempts: jobs.MaxMaxAttempts + 1}},
			{"DelayAndRunAt", "run_at", "either delay or run_at", jobs.EnqueueParams{Type: "t", Delay: time.Second, RunAt: time.Now()}},
			{"TooManyTags", "tags", "at most 16 tags", jobs.EnqueueParams{Type: "t", Tags: strings.Split(long(jobs.MaxTags+1), "")}},
			{"EmptyTag", "tag", "must not be empty", jobs.EnqueueParams{Type: "t", Tags: []string{"a", ""}}},
			{"CommaInTag", "tag", "must not contain ','", jobs.EnqueueParams{Type: "t", Tags: []string{"a,b"}}},
			{"LongTag", "tag", "at most 50 characters", jobs.EnqueueParams{Type: "t", Tags: []string{long(jobs.MaxTagLen + 1)}}},
			{"LongIdempotencyKey", "idempotency_key", "at most 200 characters", jobs.EnqueueParams{Type: "t", IdempotencyKey: long(jobs.MaxIdempotencyKeyLen + 1)}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				_, err := h.Store.Enqueue(ctxOf(t), c.p)
				var ve *jobs.ValidationError
				if !errors.Is(err, jobs.ErrInvalidArgument) || !errors.As(err, &ve) || ve.Field != c.field {
					t.Fatalf("err = %v, want a ValidationError for field %q", err, c.field)
				}
				if !strings.Contains(err.Error(), c.field) {
					t.Fatalf("error %q does not name the field %q", err, c.field)
				}
				if !strings.Contains(err.Error(), c.rule) {
					t.Fatalf("error %q does not state the rule %q", err, c.rule)
				}
			})
		}
		if n := count(t, h, jobs.TableHot, jobs.Filter{}); n != 0 {
			t.Fatalf("%d jobs stored after rejected enqueues, want 0", n)
		}
	}},
	{"PayloadAtLimitAccepted", func(t *testing.T, h *Harness) {
		p := make([]byte, jobs.DefaultMaxPayloadBytes)
		p[0], p[len(p)-1] = 'a', 'z'
		j := get(t, h, enqueue(t, h, jobs.EnqueueParams{Payload: p}))
		if len(j.Payload) != len(p) || j.Payload[len(p)-1] != 'z' {
			t.Fatalf("payload of %d bytes came back as %d bytes", len(p), len(j.Payload))
		}
	}},
	{"IdempotencyKeyReturnsExistingID", func(t *testing.T, h *Harness) {
		r1, err := h.Store.Enqueue(ctxOf(t), jobs.EnqueueParams{Type: "t", IdempotencyKey: "order-42"})
		if err != nil {
			t.Fatal(err)
		}
		r2, err := h.Store.Enqueue(ctxOf(t), jobs.EnqueueParams{Type: "t", IdempotencyKey: "order-42", Payload: []byte("other")})
		if err != nil {
			t.Fatal(err)
		}
		if r1.Duplicate || !r2.Duplicate || r1.ID != r2.ID {
			t.Fatalf("first %+v second %+v: want the same ID, second marked Duplicate", r1, r2)
		}
		if n := count(t, h, jobs.TableHot, jobs.Filter{}); n != 1 {
			t.Fatalf("%d rows for one key, want 1", n)
		}
	}},
	{"IdempotencyKeyConcurrent20", func(t *testing.T, h *Harness) {
		const n = 20
		var wg sync.WaitGroup
		results := make([]jobs.EnqueueResult, n)
		errs := make([]error, n)
		startLine := make(chan struct{})
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-startLine
				results[i], errs[i] = h.Store.Enqueue(ctxOf(t), jobs.EnqueueParams{Type: "t", IdempotencyKey: "race-key"})
			}()
		}
		close(startLine)
		wg.Wait()
		fresh := 0
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("goroutine %d: %v", i, errs[i])
			}
			if results[i].ID != results[0].ID {
				t.Fatalf("goroutine %d got ID %d, goroutine 0 got %d", i, results[i].ID, results[0].ID)
			}
			if !results[i].Duplicate {
				fresh++
			}
		}
		if fresh != 1 {
			t.Fatalf("%d enqueues reported a new job, want exactly 1", fresh)
		}
		if c := count(t, h, jobs.TableHot, jobs.Filter{}); c != 1 {
			t.Fatalf("%d rows for one key, want 1", c)
		}
	}},
	{"IdempotencyKeyFreedWhenJobLeavesHot", func(t *testing.T, h *Harness) {
		first := running(t, h, jobs.EnqueueParams{IdempotencyKey: "once"})
		if err := h.Store.Complete(ctxOf(t), first.Ref()); err != nil {
			t.Fatal(err)
		}
		r, err := h.Store.Enqueue(ctxOf(t), jobs.EnqueueParams{Type: "t", IdempotencyKey: "once"})
		if err != nil {
			t.Fatal(err)
		}
		if r.Duplicate || r.ID == first.ID {
			t.Fatalf("after the first job was archived, the key gave %+v, want a new job", r)
		}
	}},
	{"ManyIsAtomicAndNamesTheBadItem", func(t *testing.T, h *Harness) {
		_, err := h.Store.EnqueueMany(ctxOf(t), []jobs.EnqueueParams{{Type: "ok"}, {Type: "ok"}, {Type: ""}})
		var be *jobs.BatchItemError
		if !errors.As(err, &be) || be.Index != 2 || !errors.Is(err, jobs.ErrInvalidArgument) {
			t.Fatalf("err = %v, want a BatchItemError for item 2", err)
		}
		if n := count(t, h, jobs.TableHot, jobs.Filter{}); n != 0 {
			t.Fatalf("%d jobs stored from a refused batch, want 0", n)
		}
	}},
	{"ManyKeepsOrderAndResolvesKeys", func(t *testing.T, h *Harness) {
		existing := enqueue(t, h, jobs.EnqueueParams{IdempotencyKey: "old"})
		rs, err := h.Store.EnqueueMany(ctxOf(t), []jobs.EnqueueParams{
			{Type: "a"}, {Type: "b", IdempotencyKey: "old"}, {Type: "c", IdempotencyKey: "new"}, {Type: "d", IdempotencyKey: "new"}, {Type: "e"},
		})
		if err != nil {
			t.Fatal(err)
		}
		if rs[1].ID != existing || !rs[1].Duplicate {
			t.Fatalf("item 1 = %+v, want the existing job %d as duplicate", rs[1], existing)
		}
		if rs[3].ID != rs[2].ID || !rs[3].Duplicate || rs[2].Duplicate {
			t.Fatalf("items 2 and 3 share a key: got %+v and %+v", rs[2], rs[3])
		}
		for i, want := range map[int]string{0: "a", 2: "c", 4: "e"} {
			if j := get(t, h, rs[i].ID); j.Type != want {
				t.Fatalf("item %d stored type %q, want %q", i, j.Type, want)
			}
		}
		if n := count(t, h, jobs.TableHot, jobs.Filter{}); n != 4 {
			t.Fatalf("%d hot jobs, want 4", n)
		}
	}},
	{"DelayedJobNotClaimableBeforeItsTime", func(t *testing.T, h *Harness) {
		id := enqueue(t, h, jobs.EnqueueParams{Delay: time.Hour})
		if got := claim(t, h, worker1, 10); len(got) != 0 {
			t.Fatalf("claimed %v before the delay passed", ids(got))
		}
		h.Advance(t, 59*time.Minute)
		if got := claim(t, h, worker1, 10); len(got) != 0 {
			t.Fatalf("claimed %v one minute before due", ids(got))
		}
		h.Advance(t, 2*time.Minute)
		if got := claim(t, h, worker1, 10); len(got) != 1 || got[0].ID != id {
			t.Fatalf("after the delay claimed %v, want [%d]", ids(got), id)
		}
	}},
	{"RunAtSchedulesAbsolutely", func(t *testing.T, h *Harness) {
		now, err := h.Store.Now(ctxOf(t))
		if err != nil {
			t.Fatal(err)
		}
		past := enqueue(t, h, jobs.EnqueueParams{RunAt: now.Add(-time.Hour)})
		future := enqueue(t, h, jobs.EnqueueParams{RunAt: now.Add(time.Hour)})
		if j := get(t, h, future); !closeTo(j.ScheduledAt, now.Add(time.Hour), time.Millisecond) {
			t.Fatalf("RunAt %v stored as %v", now.Add(time.Hour), j.ScheduledAt)
		}
		if got := claim(t, h, worker1, 10); len(got) != 1 || got[0].ID != past {
			t.Fatalf("claimed %v, want only the past-due job %d", ids(got), past)
		}
	}},
}
