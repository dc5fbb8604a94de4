package processor

import (
	"context"
	"fmt"
	"runtime/debug"

	"github.com/chokaq/chokaq-go/jobs"
)

// WorkMiddleware wraps the handler of every job a Registry runs: it sees
// the job, may give next a context of its own (a logger, a tenant, a
// span), may refuse the job by returning an error without calling next,
// and may replace the error next returns. The error it returns is the
// execution's, settled as a handler's would be (Permanent, Cancel and
// Snooze included). It runs on the worker's goroutine inside the
// execution deadline; a panic in it is contained like a handler's panic,
// as a *PanicError naming it.
//
// Middleware wraps the handler call and nothing else: what the store did
// with the outcome (archived, retried, the lease lost) is the Observer's,
// which sees every claim, start and written outcome and may change none of
// them. One mechanism changes a job's run, the other watches the
// processor; neither does the other's work.
type WorkMiddleware func(ctx context.Context, job *Job, next HandlerFunc) error

// namedWork is a registered work middleware and the name errors give it.
type namedWork struct {
	name string
	fn   WorkMiddleware
}

// Use adds a work middleware to every handler of r, those registered
// before and after. The first added is the outermost: it runs first and
// sees last what the others and the handler returned. name says which
// middleware a panic came from; it must be non-empty and not already used.
func (r *Registry) Use(name string, mw WorkMiddleware) error {
	if name == "" || len(name) > jobs.MaxTypeLen {
		return &jobs.ValidationError{Field: "middleware", Value: name, Rule: fmt.Sprintf("needs a name of 1 to %d bytes", jobs.MaxTypeLen)}
	}
	if mw == nil {
		return fmt.Errorf("processor: nil work middleware %q", name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range r.middleware {
		if m.name == name {
			return fmt.Errorf("%w: middleware %q", ErrDuplicateHandler, name)
		}
	}
	// A new slice each time: a running job keeps the chain it started with.
	r.middleware = append(r.middleware[:len(r.middleware):len(r.middleware)], namedWork{name, mw})
	return nil
}

// MustUse is Use that panics on error, for registration at start-up.
func (r *Registry) MustUse(name string, mw WorkMiddleware) {
	if err := r.Use(name, mw); err != nil {
		panic(err)
	}
}

// runChain runs mws around h. Each layer recovers its own panic: one from
// an inner layer or the handler was already turned into an error there, so
// a panic a layer recovers is its own.
func runChain(ctx context.Context, j *Job, mws []namedWork, h HandlerFunc) (err error) {
	if len(mws) == 0 {
		return callHandler(ctx, j, h)
	}
	m := mws[0]
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: string(debug.Stack()), Middleware: m.name}
		}
	}()
	return m.fn(ctx, j, func(ctx context.Context, j *Job) error { return runChain(ctx, j, mws[1:], h) })
}

// callHandler runs h, turning a panic into a *PanicError.
func callHandler(ctx context.Context, j *Job, h HandlerFunc) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: string(debug.Stack())}
		}
	}()
	return h(ctx, j)
}
