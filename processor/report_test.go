package processor_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/processor"
)

type invoice struct {
	Number string `json:"number"`
	Cents  int    `json:"cents"`
}

// TestOutputIsWrittenWithTheOutcome: a handler's output is archived with
// its job on success and dead-lettered with it on failure, a later
// RecordOutput replacing an earlier one; one past the limit is refused
// and the earlier one kept.
func TestOutputIsWrittenWithTheOutcome(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newMem()
		reg := processor.NewRegistry()
		var refused error
		reg.MustHandle("bill", func(ctx context.Context, j *processor.Job) error {
			if err := processor.RecordOutput(ctx, invoice{Number: "draft"}); err != nil {
				return err
			}
			if err := processor.RecordOutput(ctx, invoice{Number: "INV-1", Cents: 4200}); err != nil {
				return err
			}
			refused = processor.RecordOutput(ctx, strings.Repeat("x", jobs.MaxOutputBytes))
			return nil
		})
		reg.MustHandle("fails", func(ctx context.Context, j *processor.Job) error {
			if err := processor.RecordOutput(ctx, map[string]int{"done": 3}); err != nil {
				return err
			}
			return processor.Permanent(errors.New("row 4 is bad"))
		})
		ok := enqueue(t, s, jobs.EnqueueParams{Type: "bill"})
		bad := enqueue(t, s, jobs.EnqueueParams{Type: "fails"})
		p := startProcessor(t, s, reg, testConfig())
		waitFor(t, time.Minute, "settled", func() bool { return inTable(s, ok, jobs.TableArchive)() && inTable(s, bad, jobs.TableDLQ)() })
		stop(t, p)
		if got := string(get(t, s, ok).Output); got != `{"number":"INV-1","cents":4200}` {
			t.Errorf("archived output %s", got)
		}
		if got := string(get(t, s, bad).Output); got != `{"done":3}` {
			t.Errorf("dead-lettered output %s", got)
		}
		var ve *jobs.ValidationError
		if !errors.As(refused, &ve) || ve.Field != "output" {
			t.Errorf("an output past 32 KiB: %v", refused)
		}
	})
}

// TestProgressRidesOnTheNextHeartbeat: progress is written by the job's
// next beat, with no store call of its own, and is gone when the job
// leaves the hot table.
func TestProgressRidesOnTheNextHeartbeat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newMem()
		reg := processor.NewRegistry()
		reported, release := make(chan struct{}), make(chan struct{})
		var bad error
		reg.MustHandle("long", func(ctx context.Context, j *processor.Job) error {
			if err := processor.Progress(ctx, 0.25, "page 1 of 4"); err != nil {
				return err
			}
			bad = processor.Progress(ctx, 1.5, "")
			close(reported)
			<-release
			return nil
		})
		id := enqueue(t, s, jobs.EnqueueParams{Type: "long"})
		p := startProcessor(t, s, reg, testConfig())
		<-reported
		synctest.Wait()
		if j := get(t, s, id); j.Progress != 0 {
			t.Errorf("progress %v written before any beat", j.Progress)
		}
		before := p.Stats().HeartbeatCalls
		time.Sleep(13 * time.Second) // past the longest beat interval
		synctest.Wait()
		j := get(t, s, id)
		if j.Progress != 0.25 || j.ProgressMessage != "page 1 of 4" {
			t.Errorf("after a beat: progress %v %q", j.Progress, j.ProgressMessage)
		}
		if calls := p.Stats().HeartbeatCalls - before; calls != 1 {
			t.Errorf("%d heartbeat calls in one interval, want 1 (progress rides on it)", calls)
		}
		close(release)
		waitFor(t, time.Minute, "archived", inTable(s, id, jobs.TableArchive))
		stop(t, p)
		if j := get(t, s, id); j.Progress != 0 || j.ProgressMessage != "" {
			t.Errorf("an archived job keeps progress %v %q", j.Progress, j.ProgressMessage)
		}
		var ve *jobs.ValidationError
		if !errors.As(bad, &ve) || ve.Field != "progress" {
			t.Errorf("progress 1.5: %v", bad)
		}
	})
}

// TestReportsNeedAReporter: on a store that keeps no output or progress,
// and outside a handler, both are refused with ErrNotReported.
func TestReportsNeedAReporter(t *testing.T) {
	if err := processor.RecordOutput(t.Context(), 1); !errors.Is(err, processor.ErrNotReported) {
		t.Errorf("outside a handler: %v", err)
	}
	synctest.Test(t, func(t *testing.T) {
		s := newCountingStore(newMem()) // a Worker without the batch forms
		reg := processor.NewRegistry()
		var outErr, progErr error
		reg.MustHandle("x", func(ctx context.Context, j *processor.Job) error {
			outErr, progErr = processor.RecordOutput(ctx, 1), processor.Progress(ctx, 0.5, "")
			return nil
		})
		id := enqueue(t, s, jobs.EnqueueParams{Type: "x"})
		p := startProcessor(t, s, reg, testConfig())
		waitFor(t, time.Minute, "archived", inTable(s, id, jobs.TableArchive))
		stop(t, p)
		if !errors.Is(outErr, processor.ErrNotReported) || !errors.Is(progErr, processor.ErrNotReported) {
			t.Errorf("RecordOutput %v, Progress %v", outErr, progErr)
		}
	})
}
