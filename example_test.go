package chokaq_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	chokaq "github.com/chokaq/chokaq-go"
	"github.com/chokaq/chokaq-go/chokaqtest"
	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/memstore"
)

// WelcomeArgs are the arguments of a welcome mail job; Kind names the job
// type at both ends, enqueue and handler.
type WelcomeArgs struct {
	Email string `json:"email"`
}

func (WelcomeArgs) Kind() string { return "mail.welcome" }

// Embedding chokaq-go: register a typed handler, start the client,
// enqueue. The README's quick start is this example. On SQL Server, pass
// ConnectionString (and Migrate: true) instead of Store.
func Example() {
	ctx := context.Background()
	sent := make(chan string, 1)

	reg := chokaq.NewRegistry()
	chokaq.MustHandle(reg, func(ctx context.Context, job *chokaq.Job, args WelcomeArgs) error {
		sent <- fmt.Sprintf("welcome mail to %s (attempt %d)", args.Email, job.Attempt)
		return nil
	})

	client, err := chokaq.New(ctx, chokaq.Config{Store: memstore.New()}, reg)
	if err != nil {
		panic(err)
	}
	if err := client.Start(ctx); err != nil {
		panic(err)
	}
	defer client.Stop(context.Background())

	if _, err := client.Enqueue(ctx, WelcomeArgs{Email: "ada@example.com"}, nil); err != nil {
		panic(err)
	}
	fmt.Println(<-sent)
	// Output: welcome mail to ada@example.com (attempt 1)
}

// ReportArgs bring their own defaults: every report job goes to the
// "reports" queue with three attempts at most, unless the enqueue says
// otherwise.
type ReportArgs struct {
	Month string `json:"month"`
}

func (ReportArgs) Kind() string { return "reports.monthly" }

func (ReportArgs) EnqueueOpts() chokaq.EnqueueOpts {
	return chokaq.EnqueueOpts{Queue: "reports", MaxAttempts: 3}
}

// Options given to Enqueue override the Args' own defaults field by field.
func ExampleArgsWithOpts() {
	ctx := context.Background()
	client, err := chokaq.New(ctx, chokaq.Config{Store: memstore.New(), DisableProcessor: true, DisableRescue: true}, nil)
	if err != nil {
		panic(err)
	}
	a, _ := client.Enqueue(ctx, ReportArgs{Month: "2026-11"}, nil)
	b, _ := client.Enqueue(ctx, ReportArgs{Month: "2026-12"}, &chokaq.EnqueueOpts{Priority: 10, Delay: time.Hour})
	for _, id := range []int64{a.ID, b.ID} {
		j, _ := client.GetJob(ctx, id)
		fmt.Printf("%s on %s: priority %d, %d attempts, payload %s\n", j.Type, j.Queue, j.Priority, j.MaxAttempts, j.Payload)
	}
	// Output:
	// reports.monthly on reports: priority 0, 3 attempts, payload {"month":"2026-11"}
	// reports.monthly on reports: priority 10, 3 attempts, payload {"month":"2026-12"}
}

// An idempotency key is unique among active jobs: enqueueing it again
// returns the first job, marked Duplicate, and adds nothing. EnqueueMany
// adds all its jobs or none.
func ExampleClient_EnqueueMany() {
	ctx := context.Background()
	client, err := chokaq.New(ctx, chokaq.Config{Store: memstore.New(), DisableProcessor: true, DisableRescue: true}, nil)
	if err != nil {
		panic(err)
	}
	key := &chokaq.EnqueueOpts{IdempotencyKey: "welcome:ada"}
	rs, err := client.EnqueueMany(ctx,
		chokaq.EnqueueItem{Args: WelcomeArgs{Email: "ada@example.com"}, Opts: key},
		chokaq.EnqueueItem{Args: WelcomeArgs{Email: "bob@example.com"}},
		chokaq.EnqueueItem{Args: WelcomeArgs{Email: "ada@example.com"}, Opts: key},
	)
	if err != nil {
		panic(err)
	}
	for _, r := range rs {
		fmt.Printf("job %d duplicate=%v\n", r.ID, r.Duplicate)
	}
	n, _ := client.CountJobs(ctx, jobs.TableHot, jobs.Filter{})
	fmt.Println("jobs:", n)
	// Output:
	// job 1 duplicate=false
	// job 2 duplicate=false
	// job 1 duplicate=true
	// jobs: 2
}

// EnqueueTx adds a job in the caller's own SQL Server transaction: the job
// exists if and only if the order row does, so no order goes without its
// mail and no mail goes out for an order that rolled back. (Not run: it
// needs SQL Server.)
func ExampleClient_EnqueueTx() {
	placeOrder := func(ctx context.Context, db *sql.DB, client *chokaq.Client, email string) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback() // a no-op after Commit
		if _, err := tx.ExecContext(ctx, `INSERT INTO dbo.Orders (Email) VALUES (@p1)`, email); err != nil {
			return err
		}
		if _, err := client.EnqueueTx(ctx, tx, WelcomeArgs{Email: email}, nil); err != nil {
			return err
		}
		return tx.Commit()
	}
	_ = placeOrder
}

// A handler returns Permanent(err) for a failure no retry can fix: the job
// goes to the dead-letter queue at once, with reason Fatal, instead of
// using up its attempts.
func ExamplePermanent() {
	ctx := context.Background()
	reg := chokaq.NewRegistry()
	chokaq.MustHandle(reg, func(ctx context.Context, job *chokaq.Job, args WelcomeArgs) error {
		if args.Email == "" {
			return chokaq.Permanent(errors.New("no address to send to"))
		}
		return nil
	})
	w, err := chokaqtest.NewWorker(ctx, reg, nil)
	if err != nil {
		panic(err)
	}
	o, err := w.Work(ctx, WelcomeArgs{}, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(o.Outcome, o.Reason, "after", o.Attempt, "attempt:", o.Job.ErrorDetails)
	// Output: dead_lettered Fatal after 1 attempt: permanent: no address to send to
}

// Resurrect brings dead letters back to Pending, with their attempts reset
// and their IDs kept, once the cause is fixed.
func ExampleClient_Resurrect() {
	ctx := context.Background()
	mailServerUp := false
	reg := chokaq.NewRegistry()
	chokaq.MustHandle(reg, func(ctx context.Context, job *chokaq.Job, args WelcomeArgs) error {
		if !mailServerUp {
			return errors.New("mail server unreachable")
		}
		return nil
	})
	w, err := chokaqtest.NewWorker(ctx, reg, nil)
	if err != nil {
		panic(err)
	}
	o, _ := w.Work(ctx, WelcomeArgs{Email: "ada@example.com"}, &chokaq.EnqueueOpts{MaxAttempts: 1})
	fmt.Println("first run:", o.Outcome, o.Reason)

	mailServerUp = true
	client := w.Client()
	n, err := client.Resurrect(ctx, jobs.ResurrectParams{Filter: jobs.Filter{Type: WelcomeArgs{}.Kind()}})
	if err != nil {
		panic(err)
	}
	fmt.Println("resurrected:", n)
	o, _ = w.WorkJob(ctx, o.Job.ID)
	fmt.Println("second run:", o.Outcome, "attempt", o.Attempt)
	// Output:
	// first run: dead_lettered MaxRetriesExceeded
	// resurrected: 1
	// second run: succeeded attempt 1
}

// DigestArgs are the arguments of a recurring digest.
type DigestArgs struct {
	Audience string `json:"audience"`
}

func (DigestArgs) Kind() string { return "mail.digest" }

// A recurring job: at every tick of the cron expression, read in its time
// zone, one job of the Args' kind is enqueued, once across every process
// that defines the schedule. This one ticks every second, so the example
// sees a fire; a real one reads "0 7 * * 1-5" or "@hourly". Its job is due
// at its tick, which ScheduledAt tells the handler.
func Example_schedule() {
	ctx := context.Background()
	fired := make(chan string, 1)

	reg := chokaq.NewRegistry()
	chokaq.MustHandle(reg, func(ctx context.Context, job *chokaq.Job, args DigestArgs) error {
		select {
		case fired <- fmt.Sprintf("digest for %s, tick on a whole second: %v", args.Audience, !job.ScheduledAt.IsZero() && job.ScheduledAt.Nanosecond() == 0):
		default:
		}
		return nil
	})
	client, err := chokaq.New(ctx, chokaq.Config{
		Store: memstore.New(),
		Schedules: []chokaq.Schedule{{
			Name:     "morning-digest",
			Cron:     "@every 1s",
			TimeZone: "Europe/Berlin",
			Args:     DigestArgs{Audience: "subscribers"},
		}},
	}, reg)
	if err != nil {
		panic(err)
	}
	if err := client.Start(ctx); err != nil {
		panic(err)
	}
	defer client.Stop(context.Background())
	fmt.Println(<-fired)
	// Output: digest for subscribers, tick on a whole second: true
}

// Work middleware wraps every handler of a registry, the first added
// outermost: here one that logs each attempt and turns a panic-free
// refusal into a dead letter. Enqueue middleware (Config.EnqueueMiddleware)
// sees each job before it is inserted.
func Example_middleware() {
	ctx := context.Background()
	reg := chokaq.NewRegistry()
	reg.MustUse("log", func(ctx context.Context, job *chokaq.Job, next chokaq.HandlerFunc) error {
		err := next(ctx, job)
		fmt.Printf("%s attempt %d: err=%v\n", job.Type, job.Attempt, err)
		return err
	})
	reg.MustUse("blocklist", func(ctx context.Context, job *chokaq.Job, next chokaq.HandlerFunc) error {
		if bytes.Contains(job.Payload, []byte("@blocked.example")) {
			return chokaq.Permanent(errors.New("address blocked"))
		}
		return next(ctx, job)
	})
	chokaq.MustHandle(reg, func(ctx context.Context, job *chokaq.Job, args WelcomeArgs) error { return nil })
	w, err := chokaqtest.NewWorker(ctx, reg, nil)
	if err != nil {
		panic(err)
	}
	for _, email := range []string{"ada@example.com", "eve@blocked.example"} {
		o, _ := w.Work(ctx, WelcomeArgs{Email: email}, nil)
		fmt.Println(email, "->", o.Outcome)
	}
	// Output:
	// mail.welcome attempt 1: err=<nil>
	// ada@example.com -> succeeded
	// mail.welcome attempt 1: err=permanent: address blocked
	// eve@blocked.example -> dead_lettered
}

// A handler records its result with RecordOutput: it is written with the
// job's outcome, in the same statement, and read back with the job.
func ExampleRecordOutput() {
	ctx := context.Background()
	reg := chokaq.NewRegistry()
	chokaq.MustHandle(reg, func(ctx context.Context, job *chokaq.Job, args ReportArgs) error {
		if err := chokaq.Progress(ctx, 0.5, "totals computed"); err != nil {
			return err
		}
		return chokaq.RecordOutput(ctx, map[string]any{"month": args.Month, "rows": 1280})
	})
	w, err := chokaqtest.NewWorker(ctx, reg, nil)
	if err != nil {
		panic(err)
	}
	o, err := w.Work(ctx, ReportArgs{Month: "2026-11"}, nil)
	if err != nil {
		panic(err)
	}
	j, _ := w.Client().GetJob(ctx, o.Job.ID)
	fmt.Println(o.Outcome, string(j.Output))
	// Output: succeeded {"month":"2026-11","rows":1280}
}

// With a TracerProvider, an enqueue inside a span keeps its W3C trace
// context in the job's metadata, and every attempt runs in a consumer span
// linked to it (Processor.TraceParentFromEnqueue parents it instead). Here
// an in-memory recorder stands for an exporter, which the library never
// pulls in.
func Example_tracing() {
	ctx := context.Background()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	reg := chokaq.NewRegistry()
	done := make(chan struct{})
	chokaq.MustHandle(reg, func(ctx context.Context, job *chokaq.Job, args WelcomeArgs) error {
		defer close(done)
		fmt.Println("handler runs in a span:", trace.SpanContextFromContext(ctx).IsValid())
		return nil
	})
	client, err := chokaq.New(ctx, chokaq.Config{Store: memstore.New(), TracerProvider: tp, DisableRescue: true}, reg)
	if err != nil {
		panic(err)
	}
	if err := client.Start(ctx); err != nil {
		panic(err)
	}
	reqCtx, req := tp.Tracer("app").Start(ctx, "POST /signup")
	r, _ := client.Enqueue(reqCtx, WelcomeArgs{Email: "ada@example.com"}, nil)
	req.End()
	<-done
	_ = client.Stop(ctx)
	j, _ := client.GetJob(ctx, r.ID)
	fmt.Println("traceparent kept:", j.Metadata["traceparent"] != "")
	for _, s := range rec.Ended() {
		if s.SpanKind() == trace.SpanKindConsumer {
			fmt.Println(s.Name(), "linked to", s.Links()[0].SpanContext.SpanID() == req.SpanContext().SpanID())
		}
	}
	// Output:
	// handler runs in a span: true
	// traceparent kept: true
	// process default mail.welcome linked to true
}

// SyncArgs are the arguments of a customer sync; Since only narrows it.
type SyncArgs struct {
	Customer int    `json:"customer"`
	Since    string `json:"since"`
}

func (SyncArgs) Kind() string { return "crm.sync" }

// Unique jobs: at most one sync per customer per hour. The key is the
// kind, the customer field (compared as canonical JSON) and the hour on
// the store's clock; the archived state counts, so a sync that already ran
// this hour blocks another too. A duplicate returns the holder's ID.
func Example_unique() {
	ctx := context.Background()
	clock := memstore.NewManualClock(time.Date(2026, 12, 2, 10, 30, 0, 0, time.UTC))
	client, err := chokaq.New(ctx, chokaq.Config{Store: memstore.New(memstore.WithClock(clock.Now)),
		DisableProcessor: true, DisableRescue: true}, nil)
	if err != nil {
		panic(err)
	}
	hourly := &chokaq.EnqueueOpts{Unique: &jobs.UniqueOpts{
		Fields: []string{"customer"}, Period: time.Hour,
		States: jobs.UniqueActive | jobs.UniqueArchived,
	}}
	for _, args := range []SyncArgs{{7, "09:00"}, {7, "10:00"}, {8, "10:00"}} {
		r, err := client.Enqueue(ctx, args, hourly)
		if err != nil {
			panic(err)
		}
		fmt.Printf("customer %d: job %d duplicate=%v\n", args.Customer, r.ID, r.Duplicate)
	}
	clock.Advance(30 * time.Minute) // 11:00, the next hour
	r, _ := client.Enqueue(ctx, SyncArgs{7, "10:30"}, hourly)
	fmt.Printf("next hour, customer 7: job %d duplicate=%v\n", r.ID, r.Duplicate)
	// Output:
	// customer 7: job 1 duplicate=false
	// customer 7: job 1 duplicate=true
	// customer 8: job 2 duplicate=false
	// next hour, customer 7: job 3 duplicate=false
}

// ExportArgs are the arguments of one tenant's export; LedgerArgs post one
// entry to an account, and entries must post in order.
type (
	ExportArgs struct {
		Tenant string `json:"tenant"`
	}
	LedgerArgs struct {
		Account int `json:"account"`
		Entry   int `json:"entry"`
	}
)

func (ExportArgs) Kind() string { return "tenant.export" }
func (LedgerArgs) Kind() string { return "ledger.post" }

// The concurrency key comes from the job's own arguments: every export of
// one tenant shares it. The sequence key does the same for an account.
func (a ExportArgs) EnqueueOpts() chokaq.EnqueueOpts {
	return chokaq.EnqueueOpts{ConcurrencyKey: "tenant:" + a.Tenant}
}

func (a LedgerArgs) EnqueueOpts() chokaq.EnqueueOpts {
	return chokaq.EnqueueOpts{SequenceKey: fmt.Sprintf("account:%d", a.Account)}
}

// Flow control: at most two exports per tenant at once, and one for the
// tenant "big", however many workers are free, across every process; and
// an account's ledger entries one at a time, in enqueue order. A job held
// back stays Pending and spends no attempt; the claim fills its batch from
// the jobs behind it.
func Example_flowControl() {
	ctx := context.Background()
	var (
		mu      sync.Mutex
		running = map[string]int{}
		most    = map[string]int{}
		posted  []int
		wg      sync.WaitGroup
	)
	reg := chokaq.NewRegistry()
	chokaq.MustHandle(reg, func(ctx context.Context, job *chokaq.Job, args ExportArgs) error {
		defer wg.Done()
		mu.Lock()
		running[args.Tenant]++
		most[args.Tenant] = max(most[args.Tenant], running[args.Tenant])
		mu.Unlock()
		time.Sleep(20 * time.Millisecond) // the export's work
		mu.Lock()
		running[args.Tenant]--
		mu.Unlock()
		return nil
	})
	chokaq.MustHandle(reg, func(ctx context.Context, job *chokaq.Job, args LedgerArgs) error {
		defer wg.Done()
		mu.Lock()
		posted = append(posted, args.Entry)
		mu.Unlock()
		return nil
	})
	two, one := 2, 1
	cfg := chokaq.Config{Store: memstore.New(), Queues: map[string]jobs.QueueUpdate{
		jobs.DefaultQueue: {MaxWorkersPerKey: &two, KeyLimits: map[string]int{"tenant:big": one}},
	}}
	cfg.Processor.Concurrency = 8
	client, err := chokaq.New(ctx, cfg, reg)
	if err != nil {
		panic(err)
	}
	for _, tenant := range []string{"big", "big", "big", "big", "small", "small", "small", "small"} {
		wg.Add(1)
		if _, err := client.Enqueue(ctx, ExportArgs{Tenant: tenant}, nil); err != nil {
			panic(err)
		}
	}
	for entry := 1; entry <= 5; entry++ {
		wg.Add(1)
		if _, err := client.Enqueue(ctx, LedgerArgs{Account: 42, Entry: entry}, nil); err != nil {
			panic(err)
		}
	}
	if err := client.Start(ctx); err != nil {
		panic(err)
	}
	defer client.Stop(context.Background())
	wg.Wait()
	fmt.Printf("most exports at once: big %d, small %d\n", most["big"], most["small"])
	fmt.Println("ledger entries posted in order:", posted)
	// Output:
	// most exports at once: big 1, small 2
	// ledger entries posted in order: [1 2 3 4 5]
}

// PartnerCallArgs are one call to a partner API that allows 100 calls a
// minute.
type PartnerCallArgs struct {
	Call int `json:"call"`
}

func (PartnerCallArgs) Kind() string { return "partner.call" }

// Rate limits: at most 100 of the queue's jobs claimed per minute, across
// every process. The window opens at the first claim; the jobs it has no
// room for stay Pending, in no buffer, until it closes.
func Example_rateLimit() {
	ctx := context.Background()
	called := make(chan int, 105)
	reg := chokaq.NewRegistry()
	chokaq.MustHandle(reg, func(ctx context.Context, job *chokaq.Job, args PartnerCallArgs) error {
		called <- args.Call
		return nil
	})
	client, err := chokaq.New(ctx, chokaq.Config{Store: memstore.New()}, reg)
	if err != nil {
		panic(err)
	}
	limit := jobs.RateLimit{Count: 100, Window: time.Minute} // "100/1m" in appsettings
	if _, err := client.UpdateQueue(ctx, jobs.DefaultQueue, jobs.QueueUpdate{RateLimit: &limit}); err != nil {
		panic(err)
	}
	for i := 1; i <= 105; i++ {
		if _, err := client.Enqueue(ctx, PartnerCallArgs{Call: i}, nil); err != nil {
			panic(err)
		}
	}
	if err := client.Start(ctx); err != nil {
		panic(err)
	}
	defer client.Stop(context.Background())
	for range 100 {
		<-called
	}
	st, err := client.Admin().QueueStats(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Printf("this window: %d/%d claimed, %d waiting on the rate limit\n", st[0].WindowUsed, limit.Count, st[0].WaitingOnRate)
	// Output: this window: 100/100 claimed, 5 waiting on the rate limit
}
