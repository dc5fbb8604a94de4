package jobs

import "context"

// Prober is an optional capability of a Worker: a read far cheaper than a
// Claim that tells an idle processor whether a claim would find work, so it
// can poll often without claiming often (ADR 0027). Callers detect it with
// a type assertion and fall back to claiming.
//
// The answer is a hint, never a promise. A true may be followed by a claim
// that gets nothing (another processor took the jobs, or the queue is at
// its MaxWorkers); a false may miss a job committed as it read. Either
// costs one poll interval at most: the next poll asks again, so a missed
// answer delays a job and never loses it. A store that cannot tell (a
// wrapper over a store without the capability) answers true.
type Prober interface {
	// Probe reports whether any of queues may hold a due Pending job, its
	// queue not paused. Names compare ignoring case, as everywhere.
	Probe(ctx context.Context, queues []string) (bool, error)
}

// ValidateProbe checks the queue names of a Probe, as Claim checks its own.
func ValidateProbe(queues []string) error {
	for _, q := range queues {
		if err := ValidateQueueName(q); err != nil {
			return err
		}
	}
	return nil
}
