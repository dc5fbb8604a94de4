package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/processor"
)

// The demo's rate-limited queue (ADR 0033): 12 jobs at 5 per second.
const (
	demoRateQueue = "demo-rate"
	demoRateJobs  = 12
)

var demoRateLimit = jobs.RateLimit{Count: 5, Window: time.Second}

// demoRate is what the rate-limit part of the demo saw.
type demoRate struct {
	Skipped string `json:"skipped,omitempty"` // why it did not run
	Limit   string `json:"limit"`
	Jobs    int    `json:"jobs"`
	// PerWindow is how many jobs were claimed in each window, the windows
	// rebuilt from the claims' times on the store's clock by the store's
	// rule: one opens at the first claim after the last closed.
	PerWindow []int         `json:"claimed_per_window"`
	Took      time.Duration `json:"took_ns"` // from the first claim to the last job's end
}

// claimTimes is an Observer that notes when each job was claimed, by the
// store's clock (a claimed job's LastUpdatedAt); it sees nothing else.
type claimTimes struct {
	mu sync.Mutex
	at []time.Time
}

func (c *claimTimes) JobsClaimed(claimed []*jobs.Job) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, j := range claimed {
		c.at = append(c.at, j.LastUpdatedAt)
	}
}
func (*claimTimes) JobStarted(*jobs.Job, jobs.Started)      {}
func (*claimTimes) JobFinished(*jobs.Job, processor.Result) {}
func (*claimTimes) HeartbeatDegraded(jobs.LeaseRef)         {}

// perWindow counts the claims at times in each window of w, a window
// opening at the first claim at or after the last one's end.
func perWindow(at []time.Time, w time.Duration) []int {
	at = slices.SortedFunc(slices.Values(at), time.Time.Compare)
	var out []int
	var end time.Time
	for _, t := range at {
		if len(out) == 0 || !t.Before(end) {
			out, end = append(out, 0), t.Add(w)
		}
		out[len(out)-1]++
	}
	return out
}

// runRateDemo runs demoRateJobs jobs on a queue limited to demoRateLimit,
// on a processor of its own with workers to spare, and reports how many
// were claimed in each window.
func runRateDemo(ctx context.Context, store jobs.Store, pcfg processor.Config) (demoRate, error) {
	sum := demoRate{Limit: demoRateLimit.String(), Jobs: demoRateJobs}
	_, err := store.UpdateQueue(ctx, demoRateQueue, jobs.QueueUpdate{RateLimit: &demoRateLimit})
	if errors.Is(err, jobs.ErrRateLimitUnsupported) {
		return demoRate{Skipped: "this store does not enforce rate limits (ADR 0033)"}, nil
	}
	if err != nil {
		return demoRate{}, err
	}
	var left sync.WaitGroup
	reg := processor.NewRegistry()
	reg.MustHandle("partner.call", func(ctx context.Context, j *processor.Job) error {
		defer left.Done()
		return sleepCtx(ctx, 20*time.Millisecond) // the partner's answer
	})
	ps := make([]jobs.EnqueueParams, demoRateJobs)
	for i := range ps {
		ps[i] = jobs.EnqueueParams{Queue: demoRateQueue, Type: "partner.call", CreatedBy: "chokaq demo", Payload: fmt.Appendf(nil, `{"call":%d}`, i+1)}
	}
	left.Add(len(ps))
	if _, err := store.EnqueueMany(ctx, ps); err != nil {
		return demoRate{}, err
	}
	claims := &claimTimes{}
	pcfg.Observer = claims
	stop, err := startPart(ctx, store, reg, pcfg, "worker-rate", demoRateQueue)
	if err != nil {
		return demoRate{}, err
	}
	defer stop()
	if err := waitAll(ctx, &left, "the rate-limited jobs"); err != nil {
		return demoRate{}, err
	}
	claims.mu.Lock()
	defer claims.mu.Unlock()
	sum.PerWindow = perWindow(claims.at, demoRateLimit.Window)
	if now, err := store.Now(ctx); err == nil && len(claims.at) > 0 {
		sum.Took = now.Sub(slices.MinFunc(claims.at, time.Time.Compare)).Round(10 * time.Millisecond)
	}
	return sum, nil
}

// line is the summary's line of the rate-limit part.
func (r demoRate) line() string {
	if r.Skipped != "" {
		return "skipped: " + r.Skipped
	}
	return fmt.Sprintf("%d jobs at %s: claimed per window %v, at most %d in any window, all done %s after the first claim",
		r.Jobs, r.Limit, r.PerWindow, slices.Max(append([]int{0}, r.PerWindow...)), r.Took)
}
