package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

// Seeder puts jobs into a store through the store's own transitions, for
// tests of what reads a store: a dashboard, a command, a report. Every job
// it starts is claimed by Worker ("worker-1" when empty) and starts with
// an execution timeout of Timeout (one minute when zero).
type Seeder struct {
	T       testing.TB
	Store   jobs.Store
	Worker  string
	Timeout time.Duration
}

func (s Seeder) worker() string {
	if s.Worker == "" {
		return worker1
	}
	return s.Worker
}

// Enqueue adds a job and returns its ID.
func (s Seeder) Enqueue(p jobs.EnqueueParams) int64 {
	s.T.Helper()
	if p.Type == "" {
		p.Type = "test.job"
	}
	r, err := s.Store.Enqueue(context.Background(), p)
	if err != nil {
		s.T.Fatalf("Enqueue(%+v): %v", p, err)
	}
	return r.ID
}

// Start claims the job id of queue and starts it; other jobs the claim
// takes are released at once, untouched.
func (s Seeder) Start(id int64, queue string) jobs.LeaseRef {
	s.T.Helper()
	ctx := context.Background()
	if queue == "" {
		queue = jobs.DefaultQueue
	}
	got, err := s.Store.Claim(ctx, jobs.ClaimParams{WorkerID: s.worker(), Queues: []string{queue}, Limit: jobs.MaxPageSize})
	if err != nil {
		s.T.Fatal(err)
	}
	var ref *jobs.LeaseRef
	var others []jobs.LeaseRef
	for _, j := range got {
		if j.ID == id {
			r := j.Ref()
			ref = &r
		} else {
			others = append(others, j.Ref())
		}
	}
	if _, err := s.Store.Release(ctx, others); err != nil {
		s.T.Fatal(err)
	}
	if ref == nil {
		s.T.Fatalf("a claim of queue %s did not give job %d", queue, id)
	}
	timeout := s.Timeout
	if timeout == 0 {
		timeout = time.Minute
	}
	if _, err := s.Store.Start(ctx, *ref, jobs.StartParams{DefaultTimeout: timeout}); err != nil {
		s.T.Fatal(err)
	}
	return *ref
}

// Running enqueues a job and starts it.
func (s Seeder) Running(p jobs.EnqueueParams) jobs.LeaseRef {
	s.T.Helper()
	return s.Start(s.Enqueue(p), p.Queue)
}

// Archived runs a job to the archive and returns its ID.
func (s Seeder) Archived(p jobs.EnqueueParams) int64 {
	s.T.Helper()
	ref := s.Running(p)
	if err := s.Store.Complete(context.Background(), ref); err != nil {
		s.T.Fatal(err)
	}
	return ref.ID
}

// DeadLettered runs a job to the dead-letter queue and returns its ID.
func (s Seeder) DeadLettered(p jobs.EnqueueParams, reason jobs.FailureReason, details string) int64 {
	s.T.Helper()
	ref := s.Running(p)
	if err := s.Store.DeadLetter(context.Background(), ref, jobs.DeadLetterParams{Reason: reason, Details: details}); err != nil {
		s.T.Fatal(err)
	}
	return ref.ID
}
