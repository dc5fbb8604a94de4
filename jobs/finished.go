package jobs

import (
	"context"
	"time"
)

// FinishedCounter is an optional capability of an Admin: how many jobs
// finished in each interval of a window, by queue, succeeded (archived) or
// dead-lettered by reason, counted from the archive's and the DLQ's
// finish instants (FinishedAt), so the whole fleet's work shows, whichever
// process did it. The dashboard's charts detect it with a type assertion
// and say so when a store lacks it.
//
// A job counts where it is now: one resurrected or purged since it
// finished is no longer counted; a retry is never counted (no table records
// one).
type FinishedCounter interface {
	// FinishedCounts counts the jobs with FinishedAt in [From, To), in
	// Bucket-long intervals aligned to the Unix epoch (a day bucket is a
	// UTC day). Only non-zero counts are returned, in no given order.
	FinishedCounts(ctx context.Context, p FinishedCountsParams) ([]FinishedCount, error)
}

// FinishedCountsParams selects a window of FinishedCounts.
type FinishedCountsParams struct {
	From, To time.Time
	// Bucket is the interval counted: whole seconds, 1 second to 1 day.
	Bucket time.Duration
	// Queue, when set, counts that queue alone.
	Queue string
}

// Bounds of FinishedCountsParams: a window of at most MaxFinishedBuckets
// intervals, each at most a day.
const (
	MaxFinishedBuckets = 10_000
	MaxFinishedBucket  = 24 * time.Hour
)

// Validate checks a window.
func (p FinishedCountsParams) Validate() error {
	switch {
	case p.Bucket < time.Second || p.Bucket > MaxFinishedBucket || p.Bucket%time.Second != 0:
		return &ValidationError{Field: "bucket", Value: p.Bucket, Rule: "must be whole seconds from 1s to 24h"}
	case p.From.IsZero() || p.To.IsZero() || !p.From.Before(p.To):
		return &ValidationError{Field: "from", Value: p.From, Rule: "must be set and before to (" + p.To.String() + ")"}
	case p.To.Sub(p.From)/p.Bucket > MaxFinishedBuckets:
		return &ValidationError{Field: "to", Value: p.To, Rule: "the window must hold at most " + itoa(MaxFinishedBuckets) + " buckets"}
	case p.From.Year() < 1970 || p.To.Year() > 9000:
		return &ValidationError{Field: "from", Value: p.From, Rule: "must be between years 1970 and 9000"}
	}
	if p.Queue != "" {
		return ValidateQueueName(p.Queue)
	}
	return nil
}

// BucketOf is the start of the Bucket-long interval, aligned to the Unix
// epoch, that holds t.
func (p FinishedCountsParams) BucketOf(t time.Time) time.Time {
	b := int64(p.Bucket)
	n := t.UnixNano()
	start := n - n%b
	if n%b < 0 {
		start -= b
	}
	return time.Unix(0, start).UTC()
}

// FinishedCount is the jobs of one queue that finished one way in one
// interval.
type FinishedCount struct {
	// Start is the interval's start.
	Start time.Time
	Queue string
	// Table is TableArchive (succeeded) or TableDLQ (dead-lettered, by
	// Reason).
	Table  Table
	Reason FailureReason
	Count  int64
}
