package chokaq

import (
	"context"

	"github.com/chokaq/chokaq-go/jobs"
)

// The operator's view of the store: what a service offers its own admin
// pages or scripts. The worker and rescue roles of the store stay with the
// processor and the rescue loop.

// GetJob finds a job in whichever table holds it, or an error wrapping
// jobs.ErrJobNotFound.
func (c *Client) GetJob(ctx context.Context, id int64) (*jobs.Job, error) {
	return c.store.GetJob(ctx, id)
}

// ListJobs pages through one table (hot, archive or dead letters), newest
// first.
func (c *Client) ListJobs(ctx context.Context, p jobs.ListParams) (jobs.JobPage, error) {
	return c.store.ListJobs(ctx, p)
}

// CountJobs counts one table's jobs that match a filter.
func (c *Client) CountJobs(ctx context.Context, t jobs.Table, f jobs.Filter) (int64, error) {
	return c.store.CountJobs(ctx, t, f)
}

// Resurrect moves dead letters back to Pending (attempts reset, ID kept)
// and returns how many moved. An empty filter needs p.All.
func (c *Client) Resurrect(ctx context.Context, p jobs.ResurrectParams) (int, error) {
	n, err := c.store.Resurrect(ctx, p)
	if n > 0 {
		c.notify()
	}
	return n, err
}

// Purge deletes archived or dead-lettered jobs for good and returns how
// many. An empty filter needs p.All.
func (c *Client) Purge(ctx context.Context, p jobs.PurgeParams) (int, error) {
	return c.store.Purge(ctx, p)
}

// Cancel stops jobs nobody wants any more and reports, for each ID in
// order, what became of it: cancelled (it had not started: it is now a
// Cancelled dead letter), cancel requested (it is running: its handler's
// context is cancelled at its worker's next heartbeat, within
// HeartbeatIntervalMax; an error from the handler then dead-letters it as
// Cancelled, nil archives it), already finished, or not found.
func (c *Client) Cancel(ctx context.Context, ids ...int64) ([]jobs.CancelResult, error) {
	return c.CancelWith(ctx, jobs.CancelParams{IDs: ids})
}

// CancelWith is Cancel that says who cancels and why (both go into the
// dead letters' details).
func (c *Client) CancelWith(ctx context.Context, p jobs.CancelParams) ([]jobs.CancelResult, error) {
	rs, err := c.store.Cancel(ctx, p)
	if err != nil {
		return rs, err
	}
	if m := c.cfg.Telemetry; m != nil {
		for _, r := range rs {
			if r.Outcome == jobs.CancelDone {
				m.RecordCancelled(r.Queue, r.Type, 1)
			}
		}
	}
	return rs, nil
}

// Queues lists the queues' control rows.
func (c *Client) Queues(ctx context.Context) ([]jobs.QueueSettings, error) {
	return c.store.Queues(ctx)
}

// UpdateQueue changes a queue's settings, creating its row if needed. It
// applies at once to every process: a zombie timeout must be 0 or more
// than 36s (jobs.QueueUpdate.ValidateAtRunTime), since rescue waits at
// least 3 x each job's own heartbeat maximum anyway.
func (c *Client) UpdateQueue(ctx context.Context, name string, u jobs.QueueUpdate) (jobs.QueueSettings, error) {
	if err := u.ValidateAtRunTime(); err != nil {
		return jobs.QueueSettings{}, err
	}
	return c.store.UpdateQueue(ctx, name, u)
}

// PauseQueue stops every process from claiming jobs of the queue; running
// jobs finish and buffered ones are given back.
func (c *Client) PauseQueue(ctx context.Context, name string) error {
	paused := true
	_, err := c.store.UpdateQueue(ctx, name, jobs.QueueUpdate{Paused: &paused})
	return err
}

// ResumeQueue lets processes claim jobs of the queue again.
func (c *Client) ResumeQueue(ctx context.Context, name string) error {
	paused := false
	_, err := c.store.UpdateQueue(ctx, name, jobs.QueueUpdate{Paused: &paused})
	if err == nil {
		c.notify()
	}
	return err
}

// Admin is the store's operator role, to mount the dashboard
// (dashboard.New(client.Admin(), ...)) or drive it from a tool of the
// service's own. It offers no worker or rescue transition.
func (c *Client) Admin() jobs.Admin { return c.store }
