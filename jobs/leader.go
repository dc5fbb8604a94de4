package jobs

import "context"

// Leader elects one process among many for a duty that only one should do
// at a time: the rescue sweeps with SingleRescuer, the schedules' fires, the
// retention sweeps. The SQL Server store's Leader holds an application lock
// per duty; in memory a single process always leads, and a nil Leader means
// that. Leadership is a saving, never a guard: every duty stays correct with
// two leaders at once (a fire is a compare-and-set, a move is fenced).
type Leader interface {
	// TryLead reports whether this process leads now, taking the lead if
	// nobody holds it. It is called before each round of the duty.
	TryLead(ctx context.Context) (bool, error)
	// Resign gives up leadership, if held.
	Resign(ctx context.Context) error
}
