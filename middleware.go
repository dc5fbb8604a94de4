package chokaq

import (
	"context"
	"fmt"
	"runtime/debug"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/processor"
)

// WorkMiddleware wraps every handler of a Registry (Registry.Use): see
// processor.WorkMiddleware.
type WorkMiddleware = processor.WorkMiddleware

// EnqueueMiddleware sees each job a Client enqueues (Enqueue, EnqueueTx,
// EnqueueMany and their Raw forms) before it is checked and inserted: it
// may change the job's parameters (add metadata, a tag, a CreatedBy) or
// refuse the job by returning an error, which the enqueue returns
// wrapped, naming the middleware; nothing is inserted then (for
// EnqueueMany, none of the batch). The middleware of Config.Enqueue run
// in their order. A panic in one is returned as a *PanicError naming it.
//
// It runs before the insert, not around it: EnqueueMany inserts every job
// in one statement, so no job has an insert of its own to wrap, and what
// the store answered is the caller's.
type EnqueueMiddleware struct {
	// Name names the middleware in errors; it must be set.
	Name string
	// Before is called with the job about to be enqueued.
	Before func(ctx context.Context, p *jobs.EnqueueParams) error
}

// checkEnqueueMiddleware refuses a middleware without a name or a function,
// and two of one name.
func checkEnqueueMiddleware(mws []EnqueueMiddleware) error {
	seen := map[string]bool{}
	for i, m := range mws {
		switch {
		case m.Name == "":
			return &jobs.SettingError{Component: "chokaq", Key: fmt.Sprintf("EnqueueMiddleware[%d].Name", i), Value: "", Rule: "must be set"}
		case m.Before == nil:
			return &jobs.SettingError{Component: "chokaq", Key: fmt.Sprintf("EnqueueMiddleware[%d].Before", i), Value: m.Name, Rule: "must be set"}
		case seen[m.Name]:
			return &jobs.SettingError{Component: "chokaq", Key: fmt.Sprintf("EnqueueMiddleware[%d].Name", i), Value: m.Name, Rule: "is used twice"}
		}
		seen[m.Name] = true
	}
	return nil
}

// beforeEnqueue runs the Client's enqueue middleware on p, in order.
func (c *Client) beforeEnqueue(ctx context.Context, p *jobs.EnqueueParams) error {
	for _, m := range c.cfg.EnqueueMiddleware {
		if err := runEnqueueMiddleware(ctx, m, p); err != nil {
			return fmt.Errorf("chokaq: enqueue middleware %q refused the %s job: %w", m.Name, p.Type, err)
		}
	}
	return nil
}

func runEnqueueMiddleware(ctx context.Context, m EnqueueMiddleware, p *jobs.EnqueueParams) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: string(debug.Stack()), Middleware: m.Name}
		}
	}()
	return m.Before(ctx, p)
}
