package processor_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/processor"
)

type tenantKey struct{}

// TestWorkMiddlewareRunsInOrderAroundEveryHandler: the first middleware
// added is the outermost, each sees the job, the context one gives next
// reaches the handler, and a middleware added after Handle applies too.
func TestWorkMiddlewareRunsInOrderAroundEveryHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newMem()
		var mu sync.Mutex
		var trail []string
		note := func(s string) { mu.Lock(); trail = append(trail, s); mu.Unlock() }
		reg := processor.NewRegistry()
		reg.MustUse("outer", func(ctx context.Context, j *processor.Job, next processor.HandlerFunc) error {
			note("outer>" + j.Type)
			err := next(context.WithValue(ctx, tenantKey{}, "acme"), j)
			note("outer<")
			return err
		})
		reg.MustHandle("work", func(ctx context.Context, j *processor.Job) error {
			note("handler:" + ctx.Value(tenantKey{}).(string))
			return nil
		})
		reg.MustUse("inner", func(ctx context.Context, j *processor.Job, next processor.HandlerFunc) error {
			note("inner>")
			defer note("inner<")
			return next(ctx, j)
		})
		id := enqueue(t, s, jobs.EnqueueParams{Type: "work"})
		p := startProcessor(t, s, reg, testConfig())
		waitFor(t, time.Minute, "archived", inTable(s, id, jobs.TableArchive))
		stop(t, p)
		want := "outer>work inner> handler:acme inner< outer<"
		if got := strings.Join(trail, " "); got != want {
			t.Errorf("trail %q, want %q", got, want)
		}
	})
}

// TestWorkMiddlewareMayRefuseOrReplaceTheError: a middleware that returns
// Permanent without calling next dead-letters the job as Fatal, the
// handler never running; one that swallows the handler's error archives
// the job.
func TestWorkMiddlewareMayRefuseOrReplaceTheError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newMem()
		ran := map[string]int{}
		var mu sync.Mutex
		reg := processor.NewRegistry()
		reg.MustUse("gate", func(ctx context.Context, j *processor.Job, next processor.HandlerFunc) error {
			switch j.Type {
			case "refused":
				return processor.Permanent(errors.New("tenant suspended"))
			case "forgiven":
				if err := next(ctx, j); err != nil {
					return nil
				}
			}
			return next(ctx, j)
		})
		for _, typ := range []string{"refused", "forgiven"} {
			reg.MustHandle(typ, func(context.Context, *processor.Job) error {
				mu.Lock()
				ran[typ]++
				mu.Unlock()
				return errors.New("handler failed")
			})
		}
		refused := enqueue(t, s, jobs.EnqueueParams{Type: "refused"})
		forgiven := enqueue(t, s, jobs.EnqueueParams{Type: "forgiven"})
		p := startProcessor(t, s, reg, testConfig())
		waitFor(t, time.Minute, "settled", func() bool {
			return inTable(s, refused, jobs.TableDLQ)() && inTable(s, forgiven, jobs.TableArchive)()
		})
		stop(t, p)
		if j := get(t, s, refused); j.FailureReason != jobs.ReasonFatal || !strings.Contains(j.ErrorDetails, "tenant suspended") {
			t.Errorf("refused job: reason %v, details %q", j.FailureReason, j.ErrorDetails)
		}
		if ran["refused"] != 0 || ran["forgiven"] != 1 {
			t.Errorf("handler runs %v, want refused 0 and forgiven 1", ran)
		}
	})
}

// TestWorkMiddlewarePanicIsContainedAndNamed: a middleware's panic is a
// *PanicError naming it, settled like a handler's panic; a handler's panic
// under a middleware names no middleware.
func TestWorkMiddlewarePanicIsContainedAndNamed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newMem()
		obs := &recordingObserver{outcomes: map[processor.Outcome]int{}, reasons: map[jobs.FailureReason]int{}}
		reg := processor.NewRegistry()
		reg.MustUse("passes", func(ctx context.Context, j *processor.Job, next processor.HandlerFunc) error { return next(ctx, j) })
		reg.MustUse("audit", func(ctx context.Context, j *processor.Job, next processor.HandlerFunc) error {
			if j.Type == "mw" {
				panic("audit sink gone")
			}
			return next(ctx, j)
		})
		reg.MustHandle("mw", func(context.Context, *processor.Job) error { return nil })
		reg.MustHandle("handler", func(context.Context, *processor.Job) error { panic("handler boom") })
		mw := enqueue(t, s, jobs.EnqueueParams{Type: "mw", MaxAttempts: 1})
		h := enqueue(t, s, jobs.EnqueueParams{Type: "handler", MaxAttempts: 1})
		cfg := testConfig()
		cfg.Observer = obs
		p := startProcessor(t, s, reg, cfg)
		waitFor(t, time.Minute, "dead-lettered", func() bool { return inTable(s, mw, jobs.TableDLQ)() && inTable(s, h, jobs.TableDLQ)() })
		stop(t, p)
		if d := get(t, s, mw).ErrorDetails; !strings.Contains(d, `panic in middleware "audit": audit sink gone`) {
			t.Errorf("middleware panic's details %q do not name the middleware", d)
		}
		if d := get(t, s, h).ErrorDetails; !strings.Contains(d, "panic: handler boom") || strings.Contains(d, "panic in middleware") {
			t.Errorf("handler panic's details %q", d)
		}
		var names []string
		for _, err := range obs.errs {
			var pe *processor.PanicError
			if !errors.As(err, &pe) {
				t.Fatalf("observer saw %v, not a *PanicError", err)
			}
			names = append(names, pe.Middleware)
		}
		if len(names) != 2 || !(names[0] == "audit" && names[1] == "" || names[0] == "" && names[1] == "audit") {
			t.Errorf("panics named %q, want one audit and one handler", names)
		}
	})
}

func TestUseRefusesBadRegistrations(t *testing.T) {
	reg := processor.NewRegistry()
	pass := func(ctx context.Context, j *processor.Job, next processor.HandlerFunc) error { return next(ctx, j) }
	if err := reg.Use("", pass); !errors.Is(err, jobs.ErrInvalidArgument) {
		t.Errorf("empty name: %v", err)
	}
	if err := reg.Use("x", nil); err == nil || !strings.Contains(err.Error(), `"x"`) {
		t.Errorf("nil middleware: %v", err)
	}
	reg.MustUse("x", pass)
	if err := reg.Use("x", pass); !errors.Is(err, processor.ErrDuplicateHandler) {
		t.Errorf("duplicate: %v", err)
	}
}
