package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/chokaq/chokaq-go/internal/periodic"
	"github.com/chokaq/chokaq-go/internal/redact"
	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/faultstore"
	"github.com/chokaq/chokaq-go/processor"
	"github.com/chokaq/chokaq-go/schedule"
	"github.com/chokaq/chokaq-go/telemetry"
	"github.com/chokaq/chokaq-go/telemetry/promexporter"
	"github.com/chokaq/chokaq-go/zombie"
)

// The demo's two queues differ in their zombie timeouts; the fast one also
// has a short execution timeout for the hanging handler.
const (
	demoFast = "demo-fast"
	demoSlow = "demo-slow"
)

// demoSummary is what the demo proves, printed at the end.
type demoSummary struct {
	Store              string        `json:"store"`
	Enqueued           int           `json:"enqueued"`
	Processed          int64         `json:"processed"`
	Retried            int64         `json:"retried"`
	RecoveredFetched   int64         `json:"recovered_from_fetched"`
	DeadZombie         int64         `json:"dead_lettered_zombie"`
	DeadTimeout        int64         `json:"dead_lettered_timeout"`
	CancelledPending   int64         `json:"cancelled_pending"`
	CancelledRunning   int64         `json:"cancelled_running"`
	CancelLatency      time.Duration `json:"cancel_latency_ns"` // from the cancel to the running handler's stop
	ResurrectedJob     int64         `json:"resurrected_job"`
	ResurrectedOutcome string        `json:"resurrected_outcome"`
	Schedule           demoSchedule  `json:"schedule"`
	Flow               demoFlow      `json:"flow_control"`
	Rate               demoRate      `json:"rate_limit"`
	Workflow           demoWorkflow  `json:"workflow"`
	Took               time.Duration `json:"took_ns"`
}

// demoSchedule is what the demo's recurring job did: it fired every 2s,
// was paused, missed ticks, and was resumed.
type demoSchedule struct {
	Name string `json:"name"`
	// Fired counts the ticks fired; FiredBeforePause of them before the
	// pause, and Missed ticks passed while it was paused, fired on resume
	// as one (coalesce).
	Fired            int64         `json:"fired"`
	FiredBeforePause int64         `json:"fired_before_pause"`
	Missed           int           `json:"missed_while_paused"`
	Paused           time.Duration `json:"paused_ns"`
	Handled          int64         `json:"handled"`
}

func (a *app) demoCommand() *cobra.Command {
	var limit time.Duration
	var metrics demoMetrics
	c := &cobra.Command{
		Use:   "demo",
		Short: "Run a mixed workload with a dying worker and a hanging handler, then show rescue and resurrect",
		Long: `demo runs on the in-memory store, or on SQL Server (migrating first) when a
connection string is configured. It enqueues a mixed workload on two queues
with different zombie timeouts, runs a processor and the rescue loop with
short timeouts, kills one worker in the middle of a job and lets one handler
hang, prints live progress, then resurrects the zombie and shows it succeed.

With --metrics-addr it also records metrics and serves /metrics, /healthz
and /readyz on that address while it runs (see docs/operations.md);
--metrics-linger keeps serving that long after the demo's workers stopped,
so a scraper sees the final counts.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), limit)
			defer cancel()
			return a.runDemo(ctx, metrics)
		},
	}
	c.Flags().DurationVar(&limit, "timeout", 55*time.Second, "give up after this long")
	c.Flags().StringVar(&metrics.addr, "metrics-addr", "", "serve /metrics, /healthz and /readyz on this host:port while the demo runs (empty: off)")
	c.Flags().DurationVar(&metrics.linger, "metrics-linger", 0, "with --metrics-addr, keep serving this long after the demo finished")
	return c
}

// demoMetrics is the demo's optional telemetry.
type demoMetrics struct {
	addr   string
	linger time.Duration
	m      *telemetry.Metrics // nil when off
	prom   *promexporter.Exporter
}

// start sets up recording when --metrics-addr is set.
func (d *demoMetrics) start(a *app) error {
	if d.addr == "" {
		return nil
	}
	if _, _, err := net.SplitHostPort(d.addr); err != nil {
		return usage("--metrics-addr %q: want host:port, e.g. %s", d.addr, defaultMetricsAddr)
	}
	prom, err := promexporter.New()
	if err != nil {
		return err
	}
	m, err := telemetry.New(telemetry.Options{MeterProvider: prom.MeterProvider(), Logger: a.log})
	if err != nil {
		return err
	}
	d.prom, d.m = prom, m
	return nil
}

// serve starts the endpoints and returns what stops them: after lingering
// (unless ctx ended: the demo failed or was interrupted), it shuts the
// server down.
func (d *demoMetrics) serve(ctx context.Context, a *app, health *telemetry.Health) (func(), error) {
	if d.m == nil {
		return func() {}, nil
	}
	srv, err := startTelemetryServer(d.addr, d.prom.MetricsHandler(), health, a.log)
	if err != nil {
		return nil, err
	}
	a.say("metrics on http://%s/metrics (also /healthz and /readyz)", srv.addr)
	return func() {
		if d.linger > 0 && ctx.Err() == nil {
			a.say("still serving metrics for %s (--metrics-linger)", d.linger)
			t := time.NewTimer(d.linger)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
		}
		stopCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.stop(stopCtx)
		_ = d.m.Close()
		_ = d.prom.Shutdown(stopCtx)
	}, nil
}

func (a *app) runDemo(ctx context.Context, metrics demoMetrics) error {
	started := time.Now()
	if err := metrics.start(a); err != nil {
		return err
	}
	cfg, err := a.loadConfig()
	if err != nil {
		return err
	}
	var store jobs.Store
	sum := demoSummary{Store: "in-memory"}
	if cfg.StorageKind() == "sqlserver" {
		a.say("migrating schema %s ...", cfg.Schema)
		if err := a.migrate(ctx, cfg); err != nil {
			return err
		}
		s, err := a.openStore(ctx, true)
		if err != nil {
			return err
		}
		store, sum.Store = s, "SQL Server ("+redact.DSN(cfg.ConnectionString)+")"
	} else {
		store = a.newMemStore()
	}
	a.say("chokaq demo on the %s store", sum.Store)
	for q, u := range map[string]jobs.QueueUpdate{
		demoFast: {ZombieTimeout: secs(4), ExecutionTimeout: secs(5)},
		demoSlow: {ZombieTimeout: secs(6), ExecutionTimeout: secs(0)},
	} {
		if _, err := store.UpdateQueue(ctx, q, u); err != nil {
			return err
		}
	}

	// end releases every handler that is still blocked when the demo ends.
	end := make(chan struct{})
	var endOnce sync.Once
	finish := func() { endOnce.Do(func() { close(end) }) }
	defer finish()

	pcfg := demoProcessorConfig([]string{demoFast, demoSlow}, a.log)
	if metrics.m != nil {
		pcfg = metrics.m.InstrumentProcessor(pcfg)
	}
	var ids []int64
	enqueue := func(n int, p jobs.EnqueueParams) error {
		ps := make([]jobs.EnqueueParams, n)
		for i := range ps {
			ps[i] = p
			ps[i].CreatedBy = "chokaq demo"
		}
		rs, err := store.EnqueueMany(ctx, ps)
		added := 0
		for _, r := range rs {
			ids = append(ids, r.ID)
			if !r.Duplicate {
				added++
			}
		}
		if metrics.m != nil {
			metrics.m.RecordEnqueued(p.Queue, p.Type, added)
		}
		return err
	}

	// 1. A worker takes three reports, starts one and dies mid-job.
	if err := enqueue(3, jobs.EnqueueParams{Queue: demoSlow, Type: "report.build", Payload: []byte(`{"report":"monthly"}`)}); err != nil {
		return err
	}
	doomedStore := faultstore.New(store)
	died := make(chan int64, 1)
	doomedReg := processor.NewRegistry()
	doomedReg.MustHandle("report.build", func(ctx context.Context, j *processor.Job) error {
		doomedStore.Cut() // from here on the store never hears from this worker again
		died <- j.ID
		<-end
		return nil
	})
	dcfg := pcfg
	dcfg.WorkerID, dcfg.Queues, dcfg.Concurrency, dcfg.PrefetchSize, dcfg.BatchSize = "worker-doomed", []string{demoSlow}, 1, 3, 3
	// The dead worker's own complaints (failed beats and claims) would drown
	// the demo; only its errors are shown.
	dcfg.Logger = a.log.Named("doomed").WithOptions(zap.IncreaseLevel(zapcore.ErrorLevel))
	doomed, err := processor.New(doomedStore, doomedReg, dcfg)
	if err != nil {
		return err
	}
	if metrics.m != nil {
		metrics.m.ObserveProcessor(doomed)
	}
	if err := doomed.Start(ctx); err != nil {
		return err
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		_ = doomed.Stop(stopCtx)
	}()
	var killed int64
	select {
	case killed = <-died:
	case <-ctx.Done():
		return fmt.Errorf("demo: the doomed worker never started: %w", ctx.Err())
	}
	a.say("worker-doomed died while running job %d, holding %d more in its buffer", killed, doomed.Stats().Buffered)

	// 2. The healthy worker and the rescue loop.
	reg := processor.NewRegistry()
	reg.MustHandle("email.send", func(ctx context.Context, j *processor.Job) error {
		return sleepCtx(ctx, time.Duration(50+rand.IntN(250))*time.Millisecond)
	})
	reg.MustHandle("payment.sync", func(ctx context.Context, j *processor.Job) error {
		if j.Attempt == 1 {
			return errors.New("payment gateway timeout (demo: fails once)")
		}
		return sleepCtx(ctx, 100*time.Millisecond)
	})
	reg.MustHandle("report.build", func(ctx context.Context, j *processor.Job) error {
		return sleepCtx(ctx, 300*time.Millisecond)
	})
	reg.MustHandle("video.encode", func(ctx context.Context, j *processor.Job) error {
		<-end // hangs, ignoring its context, while its process keeps heartbeating
		return nil
	})
	exportStarted, exportStopped := make(chan int64, 1), make(chan time.Time, 1)
	reg.MustHandle("export.csv", func(ctx context.Context, j *processor.Job) error {
		exportStarted <- j.ID
		<-ctx.Done() // runs until an operator cancels it
		exportStopped <- time.Now()
		return context.Cause(ctx)
	})
	var pings atomic.Int64
	reg.MustHandle(demoPingType, func(ctx context.Context, j *processor.Job) error {
		pings.Add(1)
		return nil
	})
	hcfg := pcfg
	hcfg.WorkerID = "worker-healthy"
	healthy, err := processor.New(store, reg, hcfg)
	if err != nil {
		return err
	}
	rcfg := zombie.Config{ScanInterval: time.Second, FetchedJobTimeout: 3 * time.Second,
		ProcessingZombieTimeout: 10 * time.Second, Logger: a.log.Named("rescue")}
	if metrics.m != nil {
		metrics.m.ObserveProcessor(healthy)
		rcfg = metrics.m.InstrumentRescue(rcfg, store, []string{demoFast, demoSlow})
	}
	rescuer, err := zombie.New(store, rcfg)
	if err != nil {
		return err
	}
	// Readiness watches both workers: the doomed one's failing heartbeats
	// make the demo unready, which is the point.
	stopMetrics, err := metrics.serve(ctx, a, telemetry.NewHealth(telemetry.HealthConfig{
		Store: store, Rescuer: rescuer, Processors: []*processor.Processor{doomed, healthy}}))
	if err != nil {
		return err
	}
	defer stopMetrics() // last, after the workers stopped: their final counts are served
	if err := rescuer.Start(ctx); err != nil {
		return err
	}
	defer rescuer.Stop(context.Background())
	if err := healthy.Start(ctx); err != nil {
		return err
	}
	defer func() {
		finish()
		stopCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = healthy.Stop(stopCtx)
	}()
	scheduled, err := a.startDemoSchedule(ctx, store, healthy, metrics.m)
	if err != nil {
		return err
	}
	defer scheduled.stop()
	for _, w := range []struct {
		n int
		p jobs.EnqueueParams
	}{
		{20, jobs.EnqueueParams{Queue: demoFast, Type: "email.send", Payload: []byte(`{"to":"someone@example.com"}`)}},
		{20, jobs.EnqueueParams{Queue: demoSlow, Type: "email.send", Payload: []byte(`{"to":"someone@example.com"}`)}},
		{10, jobs.EnqueueParams{Queue: demoSlow, Type: "payment.sync", Payload: []byte(`{"invoice":42}`)}},
		{1, jobs.EnqueueParams{Queue: demoFast, Type: "video.encode", Payload: []byte(`{"file":"big.mov"}`)}},
		{1, jobs.EnqueueParams{Queue: demoSlow, Type: "export.csv", Payload: []byte(`{"table":"orders"}`)}},
		{1, jobs.EnqueueParams{Queue: demoSlow, Type: "newsletter.send", Payload: []byte(`{"issue":12}`), Delay: time.Hour}},
	} {
		if err := enqueue(w.n, w.p); err != nil {
			return err
		}
		healthy.Notify()
	}
	sum.Enqueued = len(ids)
	a.say("enqueued %d jobs on %s (zombie timeout 4s, execution timeout 5s) and %s (zombie timeout 6s)", len(ids), demoFast, demoSlow)

	// An operator cancels the newsletter, which has not started (it is due
	// in an hour), and the export, which runs until it is told to stop.
	newsletter := ids[len(ids)-1]
	if rs, err := store.Cancel(ctx, jobs.CancelParams{IDs: []int64{newsletter}, By: "chokaq demo", Reason: "the issue was pulled"}); err != nil {
		return err
	} else if rs[0].Outcome != jobs.CancelDone {
		return fmt.Errorf("demo: cancel of the pending job %d: %s", newsletter, rs[0].Outcome)
	}
	sum.CancelledPending = newsletter
	if metrics.m != nil { // as chokaq.Client.Cancel records it
		metrics.m.RecordCancelled(demoSlow, "newsletter.send", 1)
	}
	a.say("cancelled job %d before it ran (newsletter.send, due in an hour)", newsletter)
	var export int64
	select {
	case export = <-exportStarted:
	case <-ctx.Done():
		return fmt.Errorf("demo: the export never started: %w", ctx.Err())
	}
	asked := time.Now()
	if _, err := store.Cancel(ctx, jobs.CancelParams{IDs: []int64{export}, By: "chokaq demo", Reason: "export no longer needed"}); err != nil {
		return err
	}
	select {
	case stopped := <-exportStopped:
		sum.CancelledRunning, sum.CancelLatency = export, stopped.Sub(asked).Round(time.Millisecond)
	case <-ctx.Done():
		return fmt.Errorf("demo: the running export ignored its cancel: %w", ctx.Err())
	}
	a.say("cancelled job %d while it ran (export.csv): its handler stopped %s later, at its worker's next heartbeat", export, sum.CancelLatency)

	// 3. Live progress until every job settled: all archived but the four
	// that must be dead-lettered (a zombie, a timeout, two cancelled).
	count := func(t jobs.Table, f jobs.Filter) int64 {
		f.IDs = ids
		n, _ := store.CountJobs(ctx, t, f)
		return n
	}
	zombieR, timeoutR := jobs.ReasonZombie, jobs.ReasonTimeout
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		arc, dlq := count(jobs.TableArchive, jobs.Filter{}), count(jobs.TableDLQ, jobs.Filter{})
		rc := rescuer.Counters()
		a.say("%5.1fs  hot %3d  archived %3d  dead-lettered %d  |  rescue: recovered %d, zombies %d, past deadline %d",
			time.Since(started).Seconds(), int64(len(ids))-arc-dlq, arc, dlq, rc.Recovered, rc.Zombies, rc.Expired)
		if arc == int64(len(ids))-4 && dlq == 4 {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("demo did not settle in time: %w", ctx.Err())
		case <-tick.C:
		}
	}
	sum.DeadZombie = count(jobs.TableDLQ, jobs.Filter{Reason: &zombieR})
	sum.DeadTimeout = count(jobs.TableDLQ, jobs.Filter{Reason: &timeoutR})

	// 4. Resurrect the zombie and watch it succeed.
	if n, err := store.Resurrect(ctx, jobs.ResurrectParams{Filter: jobs.Filter{IDs: []int64{killed}}}); err != nil || n != 1 {
		return fmt.Errorf("resurrect job %d: moved %d: %w", killed, n, err)
	}
	healthy.Notify()
	a.say("resurrected job %d (the zombie left by worker-doomed)", killed)
	sum.ResurrectedJob = killed
	for {
		j, err := store.GetJob(ctx, killed)
		if err != nil {
			return err
		}
		if j.Table == jobs.TableArchive {
			sum.ResurrectedOutcome = fmt.Sprintf("succeeded on attempt %d", j.AttemptCount)
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("resurrected job did not finish: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	sum.Processed = count(jobs.TableArchive, jobs.Filter{})
	// The schedule stopped firing after its resume: every fire it counted
	// is handled below.
	if sum.Schedule, err = scheduled.wait(ctx); err != nil {
		return err
	}
	for sum.Schedule.Handled = pings.Load(); sum.Schedule.Handled < sum.Schedule.Fired; sum.Schedule.Handled = pings.Load() {
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			return fmt.Errorf("demo: %d of %d scheduled jobs handled: %w", sum.Schedule.Handled, sum.Schedule.Fired, err)
		}
	}
	a.say("flow control: a tenant held to one export at a time beside two running freely, and an ordered ledger")
	if sum.Flow, err = runFlowDemo(ctx, store, pcfg); err != nil {
		return err
	}
	a.say("rate limit: 12 jobs on a queue limited to 5 per second, with workers to spare")
	if sum.Rate, err = runRateDemo(ctx, store, pcfg); err != nil {
		return err
	}
	a.say("workflow: import, transform x 3 (one fails for good), then a report that waits for the failed transform's resurrect")
	if sum.Workflow, err = runWorkflowDemo(ctx, store, pcfg); err != nil {
		return err
	}
	sum.Retried = healthy.Stats().Retried
	sum.RecoveredFetched = rescuer.Counters().Recovered
	sum.Took = time.Since(started).Round(time.Millisecond)
	return a.print(sum, func(w *tabwriter.Writer) {
		fmt.Fprintln(w, "\nSummary")
		fmt.Fprintf(w, "  store\t%s\n", sum.Store)
		fmt.Fprintf(w, "  enqueued\t%d\n", sum.Enqueued)
		fmt.Fprintf(w, "  processed (archived)\t%d\n", sum.Processed)
		fmt.Fprintf(w, "  retried\t%d\n", sum.Retried)
		fmt.Fprintf(w, "  recovered from Fetched\t%d\n", sum.RecoveredFetched)
		fmt.Fprintf(w, "  dead-lettered as Zombie\t%d\n", sum.DeadZombie)
		fmt.Fprintf(w, "  dead-lettered as Timeout\t%d\n", sum.DeadTimeout)
		fmt.Fprintf(w, "  cancelled before it ran\tjob %d\n", sum.CancelledPending)
		fmt.Fprintf(w, "  cancelled while running\tjob %d (stopped %s after the cancel)\n", sum.CancelledRunning, sum.CancelLatency)
		fmt.Fprintf(w, "  resurrected job %d\t%s\n", sum.ResurrectedJob, sum.ResurrectedOutcome)
		sc := sum.Schedule
		fmt.Fprintf(w, "  schedule %s (@every 2s)\tfired %d ticks: %d before its pause, then paused %s (%d ticks missed, fired as one on resume), %d handled\n",
			sc.Name, sc.Fired, sc.FiredBeforePause, sc.Paused.Round(100*time.Millisecond), sc.Missed, sc.Handled)
		fmt.Fprintf(w, "  flow control\t%s\n", sum.Flow.line())
		fmt.Fprintf(w, "  rate limit\t%s\n", sum.Rate.line())
		fmt.Fprintf(w, "  workflow\t%s\n", sum.Workflow.line())
		fmt.Fprintf(w, "  took\t%s\n", sum.Took)
	})
}

// The demo's recurring job.
const (
	demoScheduleName = "demo-every-2s"
	demoPingType     = "demo.ping"
)

// demoScheduleRun is the demo's schedule while it runs: it fires every 2
// seconds, is paused after two fires for long enough to miss two ticks,
// and resumed.
type demoScheduleRun struct {
	sched    *schedule.Scheduler
	fired    *atomic.Int64
	done     chan struct{}
	sum      demoSchedule
	err      error
	stopOnce sync.Once
}

func (a *app) startDemoSchedule(ctx context.Context, store jobs.Store, worker *processor.Processor, m *telemetry.Metrics) (*demoScheduleRun, error) {
	var fired atomic.Int64
	cfg := schedule.Config{
		Schedules: []schedule.Schedule{{Name: demoScheduleName, Cron: "@every 2s",
			Job: schedule.Job{Type: demoPingType, Queue: demoFast, MaxAttempts: 1, Payload: json.RawMessage(`{"ping":true}`)}}},
		Logger: a.log.Named("schedule"),
		OnFire: func(schedule.Fire) { fired.Add(1); worker.Notify() },
	}
	if m != nil {
		cfg = m.InstrumentSchedules(cfg)
	}
	sched, err := schedule.New(store, cfg)
	if err != nil {
		return nil, err
	}
	if err := sched.Start(ctx); err != nil {
		return nil, err
	}
	// A demo interrupted while it was paused left it so in a database.
	if _, err := store.PauseSchedule(ctx, demoScheduleName, false); err != nil {
		_ = sched.Stop(context.WithoutCancel(ctx))
		return nil, err
	}
	r := &demoScheduleRun{sched: sched, fired: &fired, done: make(chan struct{}), sum: demoSchedule{Name: demoScheduleName}}
	go func() {
		defer close(r.done)
		r.err = r.pauseAndResume(ctx, store, &fired)
		r.stop() // the story is told: no more fires
	}()
	return r, nil
}

// pauseAndResume waits for two fires, pauses the schedule for 4.5s (two
// ticks pass), resumes it and waits for the fire the missed ticks coalesce
// into, and one more.
func (r *demoScheduleRun) pauseAndResume(ctx context.Context, store jobs.Store, fired *atomic.Int64) error {
	until := func(n int64) error {
		for fired.Load() < n {
			if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
				return fmt.Errorf("demo: the schedule fired %d ticks, waiting for %d: %w", fired.Load(), n, err)
			}
		}
		return nil
	}
	if err := until(2); err != nil {
		return err
	}
	st, err := store.PauseSchedule(ctx, demoScheduleName, true)
	if err != nil {
		return err
	}
	r.sum.FiredBeforePause = fired.Load()
	pausedAt := time.Now()
	if err := sleepCtx(ctx, 4500*time.Millisecond); err != nil {
		return err
	}
	now, err := store.Now(ctx)
	if err != nil {
		return err
	}
	every, _ := schedule.Parse("@every 2s", "")
	for t := every.Next(st.LastFiredTick); !t.After(now); t = every.Next(t) {
		r.sum.Missed++
	}
	if _, err := store.PauseSchedule(ctx, demoScheduleName, false); err != nil {
		return err
	}
	r.sum.Paused = time.Since(pausedAt)
	return until(r.sum.FiredBeforePause + 2)
}

// wait returns the schedule's summary once its pause and resume are done.
func (r *demoScheduleRun) wait(ctx context.Context) (demoSchedule, error) {
	select {
	case <-r.done:
		return r.sum, r.err
	case <-ctx.Done():
		return r.sum, fmt.Errorf("demo: the schedule's pause and resume did not finish: %w", ctx.Err())
	}
}

// stop ends the fires, once, and counts them.
func (r *demoScheduleRun) stop() {
	r.stopOnce.Do(func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = r.sched.Stop(stopCtx)
		r.sum.Fired = r.fired.Load()
	})
}

// demoProcessorConfig is the processor of both demos (chokaq demo and the
// dashboard's): timeouts in seconds, not minutes, so rescue shows within the
// demo's run.
func demoProcessorConfig(queues []string, log *zap.Logger) processor.Config {
	return processor.Config{
		Queues: queues, Concurrency: 8, PrefetchSize: 16, BatchSize: 8,
		PollInterval: 200 * time.Millisecond, DefaultTimeout: 30 * time.Second,
		HeartbeatIntervalMin: 500 * time.Millisecond, HeartbeatIntervalMax: time.Second,
		ShutdownTimeout: 2 * time.Second, ReleaseAfter: 1500 * time.Millisecond,
		Retry:  processor.RetryPolicy{BaseDelay: 500 * time.Millisecond, MaxDelay: 5 * time.Second, BackoffMultiplier: 2, JitterMaxDelay: 200 * time.Millisecond},
		Logger: log,
	}
}

// sleepCtx waits d, or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error { return periodic.Sleep(ctx, d) }

func intPtr(n int) *int { return &n }

// secs is a queue timeout of n seconds.
func secs(n int) *time.Duration { d := time.Duration(n) * time.Second; return &d }
