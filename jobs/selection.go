package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrSelectionChanged means the jobs a bulk action was confirmed for are no
// longer the ones that match: some left the table, or the count shown was
// not the store's. Nothing was changed; show the new count and ask again.
var ErrSelectionChanged = errors.New("jobs: the selection changed since it was confirmed")

// Selection is what a two-step bulk action acts on: the jobs of Table that
// match Filter and reached the table at or before AsOf (the store's clock
// when they were counted), Count of them. An operator confirms the count;
// the action then touches exactly those jobs, never one that arrived while
// the operator was reading (see IDs). The dashboard and the command share
// it, so both keep the same promise.
type Selection struct {
	Table  Table
	Filter Filter
	AsOf   time.Time
	Count  int64
}

// Preview counts the jobs of t that f selects now, by the store's clock.
func Preview(ctx context.Context, s Admin, t Table, f Filter) (Selection, error) {
	asOf, err := s.Now(ctx)
	if err != nil {
		return Selection{}, err
	}
	sel := Selection{Table: t, Filter: f, AsOf: asOf}
	if sel.Count, err = s.CountJobs(ctx, t, sel.Bounded()); err != nil {
		return Selection{}, err
	}
	return sel, nil
}

// Bounded is Filter narrowed to the jobs that reached the table by AsOf:
// To becomes the instant just after AsOf (To is exclusive), unless the
// filter's own To is earlier. A zero AsOf leaves the filter as it is.
func (sel Selection) Bounded() Filter {
	f := sel.Filter
	if sel.AsOf.IsZero() {
		return f
	}
	if to := sel.AsOf.Add(time.Microsecond); f.To.IsZero() || to.Before(f.To) {
		f.To = to
	}
	return f
}

// IDs re-counts the selection and, when it still holds Count jobs, lists
// exactly their IDs, newest first. Otherwise it returns an error wrapping
// ErrSelectionChanged that says how many match now.
func (sel Selection) IDs(ctx context.Context, s Admin) ([]int64, error) {
	f := sel.Bounded()
	// Counting first spares listing a table for a count that no longer
	// holds.
	n, err := s.CountJobs(ctx, sel.Table, f)
	if err != nil {
		return nil, err
	}
	if n != sel.Count {
		return nil, &SelectionChangedError{Confirmed: sel.Count, Counted: n}
	}
	ids, err := listIDs(ctx, s, sel.Table, f, sel.Count)
	if err != nil {
		return nil, err
	}
	if int64(len(ids)) != sel.Count {
		// The count held but the rows did not: as many left as arrived
		// between the count and the listing.
		return nil, &SelectionChangedError{Confirmed: sel.Count, Counted: n, Listed: true}
	}
	return ids, nil
}

// SelectionChangedError reports how the selection changed; it wraps
// ErrSelectionChanged.
type SelectionChangedError struct {
	// Confirmed is the count confirmed, Counted the count taken again.
	Confirmed, Counted int64
	// Listed: the counts agreed but the jobs listed right after did not.
	Listed bool
}

// Error says how the selection changed and that nothing was done.
func (e *SelectionChangedError) Error() string {
	if e.Listed {
		return fmt.Sprintf("jobs: the %d jobs confirmed changed while they were listed; nothing was changed", e.Confirmed)
	}
	return fmt.Sprintf("jobs: %d jobs were confirmed but %d match now; nothing was changed", e.Confirmed, e.Counted)
}

// Unwrap returns ErrSelectionChanged.
func (e *SelectionChangedError) Unwrap() error { return ErrSelectionChanged }

// listIDs lists the IDs of the jobs of t that match f, a page of at most
// MaxPageSize at a time, stopping once it has more than limit: that is
// enough to tell the selection changed.
func listIDs(ctx context.Context, s Admin, t Table, f Filter, limit int64) ([]int64, error) {
	var ids []int64
	p := ListParams{Table: t, Filter: f, Limit: int(min(limit+1, MaxPageSize))}
	for int64(len(ids)) <= limit {
		page, err := s.ListJobs(ctx, p)
		if err != nil {
			return nil, err
		}
		for _, j := range page.Jobs {
			ids = append(ids, j.ID)
		}
		if page.NextBeforeID == 0 {
			break
		}
		p.BeforeID = page.NextBeforeID
	}
	return ids, nil
}
