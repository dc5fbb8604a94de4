package periodic

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/chokaq/chokaq-go/jobs"
)

// Round is the frame of one round of a maintenance loop (a rescue sweep, a
// retention sweep, a schedules round), called by hand or by the loop: only
// the process that leads does the work, a panic of the work is the round's
// error, and one hook sees every round. A new loop writes its work and
// puts a Round around it.
type Round[R any] struct {
	// Name names the loop in errors: "zombie: leader election: ...".
	Name string
	// Noun is what the loop calls a round, in a panic's error ("sweep":
	// "zombie: sweep panicked: ...").
	Noun string
	// Leader, when set, lets only the process that leads work; nil means
	// this process leads.
	Leader jobs.Leader
	// Skipped is the result of a round this process did not lead.
	Skipped R
	// Done, when set, sees every round, skipped and failed ones included,
	// a panic of the work as its error. A panic in Done goes on up, to the
	// loop's Step.
	Done func(R, error)
	// Tracer, when set, gives the round a span of its own, named
	// "chokaq.<Name> <Noun>", its error recorded; nil for none.
	Tracer trace.Tracer
}

// Run runs one round: it tries to lead, and if it leads, work fills the
// result. It returns what work filled in, also when work fails or panics.
func (rd Round[R]) Run(ctx context.Context, work func(ctx context.Context, res *R) error) (res R, err error) {
	if rd.Tracer != nil {
		var span trace.Span
		ctx, span = rd.Tracer.Start(ctx, "chokaq."+rd.Name+" "+rd.Noun, trace.WithSpanKind(trace.SpanKindInternal))
		defer func() {
			if err != nil {
				span.RecordError(err)
				span.SetStatus(codes.Error, err.Error())
			}
			span.End()
		}()
	}
	defer func() {
		// A panic in a store call or a hook is this round's failure:
		// report it as one, so readiness and feeds do not see a healthy
		// loop.
		if p := recover(); p != nil {
			err = fmt.Errorf("%s: %s panicked: %v", rd.Name, rd.Noun, p)
		}
		if rd.Done != nil {
			rd.Done(res, err)
		}
	}()
	if rd.Leader != nil {
		lead, lerr := rd.Leader.TryLead(ctx)
		if lerr != nil {
			return res, fmt.Errorf("%s: leader election: %w", rd.Name, lerr)
		}
		if !lead {
			return rd.Skipped, nil
		}
	}
	err = work(ctx, &res)
	return res, err
}

// MinRoundTimeout is the least time a loop gives a round before its
// context ends, however short the loop's interval: a slow store must not
// fail every round.
const MinRoundTimeout = 30 * time.Second

// RoundTimeout is the timeout of a round of a loop that runs every
// interval: the interval, at least MinRoundTimeout.
func RoundTimeout(interval time.Duration) time.Duration { return max(interval, MinRoundTimeout) }

// Step is how a loop runs each of its rounds: under a timeout, with a
// panic that escapes the round (a hook's; Round recovers its work's own)
// as the round's error, and a failure logged unless the loop is stopping.
type Step struct {
	// Name names the loop in a panic's error: "zombie: round panicked: ...".
	Name string
	// Timeout ends a round's context; 0 lets a round run until the loop
	// stops.
	Timeout time.Duration
	// Log, when set, gets a failed round.
	Log *zap.Logger
	// Failed is the message a failed round is logged with.
	Failed string
	// OnPanic, when set, is called after a panic escaped a round.
	OnPanic func()
}

// Run runs one round and returns its error.
func (s Step) Run(ctx context.Context, round func(ctx context.Context) error) error {
	panicked := true
	err := Recover(s.Name, func() error {
		rctx := ctx
		if s.Timeout > 0 {
			var cancel context.CancelFunc
			rctx, cancel = context.WithTimeout(ctx, s.Timeout)
			defer cancel()
		}
		err := round(rctx)
		panicked = false
		return err
	})
	if panicked && s.OnPanic != nil {
		s.OnPanic()
	}
	if err != nil && ctx.Err() == nil && s.Log != nil { // a loop that stops ends its round
		s.Log.Error(s.Failed, zap.Error(err))
	}
	return err
}

// Every is a round for Loop.Start that runs round every interval from the
// start of the last, as a ticker would: a round longer than interval is
// followed at once by the next.
func (s Step) Every(interval time.Duration, round func(ctx context.Context) error) func(ctx context.Context) time.Duration {
	return func(ctx context.Context) time.Duration {
		began := time.Now()
		_ = s.Run(ctx, round) // logged
		return max(interval-time.Since(began), 0)
	}
}

// WithDefaults is the rule of every loop's Config: c with each of its zero
// fields taken from d, and a Logger left nil one that logs nothing. C is a
// struct.
func WithDefaults[C any](c, d C) C {
	cv, dv := reflect.ValueOf(&c).Elem(), reflect.ValueOf(d)
	nop := reflect.ValueOf(zap.NewNop())
	for i := range cv.NumField() {
		f := cv.Field(i)
		if !f.IsZero() || !f.CanSet() {
			continue
		}
		f.Set(dv.Field(i))
		if f.Type() == nop.Type() && f.IsNil() {
			f.Set(nop)
		}
	}
	return c
}

// TracerName is the instrumentation scope of chokaq-go's spans.
const TracerName = "github.com/chokaq/chokaq-go"

// Tracer is tp's tracer for chokaq-go, nil when tp is nil (no spans).
func Tracer(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		return nil
	}
	return tp.Tracer(TracerName)
}
