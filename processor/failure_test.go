package processor_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/processor"
)

// valueErr has a value-receiver Error: calling it through a nil *valueErr
// panics ("value method called using nil pointer").
type valueErr struct{ code int }

func (e valueErr) Error() string { return fmt.Sprintf("code %d", e.code) }

// panicky errors panic in the method the processor would call.
type errorPanics struct{}

func (errorPanics) Error() string { panic("Error exploded") }

type unwrapPanics struct{}

func (unwrapPanics) Error() string { return "unwrap panics" }
func (unwrapPanics) Unwrap() error { panic("Unwrap exploded") }

type asPanics struct{}

func (asPanics) Error() string      { return "as panics" }
func (asPanics) As(target any) bool { panic("As exploded") }

// loop unwraps to itself forever: errors.Is and errors.As never return.
type loop struct{}

func (l *loop) Error() string { return "loops" }
func (l *loop) Unwrap() error { return l }

// TestStrangeHandlerErrorsNeverKillTheWorker returns, from handlers, error
// values whose use panics or hangs. Before the processor read handler errors
// under recover, each of these panicked a worker goroutine and with it the
// whole process. Every job must now settle as an ordinary failure with a
// message that says what happened, and the processor keeps running jobs.
func TestStrangeHandlerErrorsNeverKillTheWorker(t *testing.T) {
	cases := []struct {
		name    string
		err     func() error
		details string
	}{
		{"TypedNilWithValueReceiver", func() error { var e *valueErr; return e }, "returned a nil *processor_test.valueErr"},
		{"TypedNilPathError", func() error { var e *os.PathError; return e }, "returned a nil *fs.PathError"},
		{"ErrorPanics", func() error { return errorPanics{} }, "panicked in its Error method: Error exploded"},
		{"UnwrapPanics", func() error { return unwrapPanics{} }, "panicked in Unwrap or As: Unwrap exploded"},
		{"AsPanics", func() error { return asPanics{} }, "panicked in Unwrap or As: As exploded"},
		{"UnwrapLoops", func() error { return &loop{} }, "loops"},
		{"WrapsATypedNil", func() error { var e *os.PathError; return fmt.Errorf("opening: %w", e) }, "opening"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newMem()
				reg := processor.NewRegistry()
				reg.MustHandle("strange", func(context.Context, *processor.Job) error { return c.err() })
				reg.MustHandle("fine", func(context.Context, *processor.Job) error { return nil })
				obs := &recordingObserver{outcomes: map[processor.Outcome]int{}, reasons: map[jobs.FailureReason]int{}}
				cfg := testConfig()
				cfg.Observer = obs
				strange := enqueue(t, s, jobs.EnqueueParams{Type: "strange", MaxAttempts: 2})
				p := startProcessor(t, s, reg, cfg)
				waitFor(t, 10*time.Minute, "the strange job dead-lettered", inTable(s, strange, jobs.TableDLQ))
				// The workers are still alive: a later job runs.
				fine := enqueue(t, s, jobs.EnqueueParams{Type: "fine"})
				p.Notify()
				waitFor(t, time.Minute, "a later job archived", inTable(s, fine, jobs.TableArchive))
				stop(t, p)

				d := get(t, s, strange)
				if d.FailureReason != jobs.ReasonMaxRetriesExceeded || d.AttemptCount != 2 || !strings.Contains(d.ErrorDetails, c.details) {
					t.Fatalf("dead letter %s after %d attempts with %q; want MaxRetriesExceeded after 2 with %q",
						d.FailureReason, d.AttemptCount, d.ErrorDetails, c.details)
				}
				obs.mu.Lock()
				defer obs.mu.Unlock()
				if len(obs.errs) != 2 {
					t.Fatalf("the observer saw %d handler errors, want 2", len(obs.errs))
				}
				for _, e := range obs.errs {
					_ = e.Error() // an observer may use it: it must neither panic nor hang
					_ = errors.Is(e, os.ErrNotExist)
				}
			})
		})
	}
}

// TestIsPermanentOnStrangeErrors: Permanent of a typed nil still
// dead-letters at once, and IsPermanent answers on strange values.
func TestIsPermanentOnStrangeErrors(t *testing.T) {
	var pe *os.PathError
	var nilPerm *processor.PermanentError
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"TypedNil", pe, false},
		{"NilPermanentPointer", nilPerm, false},
		{"Loop", &loop{}, false},
		{"UnwrapPanics", unwrapPanics{}, false},
		{"AsPanics", asPanics{}, false},
		{"PermanentOfTypedNil", processor.Permanent(pe), true},
		{"WrappedPermanent", fmt.Errorf("x: %w", processor.Permanent(errors.New("bad"))), true},
		{"JoinedPermanent", errors.Join(&loop{}, processor.Permanent(errors.New("bad"))), true},
	} {
		if got := processor.IsPermanent(c.err); got != c.want {
			t.Errorf("%s: IsPermanent = %v, want %v", c.name, got, c.want)
		}
	}
}
