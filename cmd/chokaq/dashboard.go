package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/chokaq/chokaq-go/config"
	"github.com/chokaq/chokaq-go/dashboard"
	"github.com/chokaq/chokaq-go/internal/redact"
	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/faultstore"
	"github.com/chokaq/chokaq-go/jobs/memstore"
	"github.com/chokaq/chokaq-go/processor"
	"github.com/chokaq/chokaq-go/retention"
	"github.com/chokaq/chokaq-go/schedule"
	"github.com/chokaq/chokaq-go/telemetry"
	"github.com/chokaq/chokaq-go/telemetry/promexporter"
	"github.com/chokaq/chokaq-go/zombie"
)

// dashboardTokenEnv and dashboardBasicEnv pass the credentials without
// putting them on the command line, where other users of the machine can
// read them (ps, /proc/*/cmdline).
const (
	dashboardTokenEnv = "CHOKAQ_DASHBOARD_TOKEN"
	dashboardBasicEnv = "CHOKAQ_DASHBOARD_BASIC_AUTH"
)

type dashboardFlags struct {
	addr, token, basic            string
	readOnly, demo, secureCookies bool
	proxyHeader                   string
	proxies                       []string
}

func (a *app) dashboardCommand() *cobra.Command {
	var fl dashboardFlags
	c := &cobra.Command{
		Use:   "dashboard",
		Short: "Serve the operations dashboard: queues, active jobs, dead letters, archive, live console",
		Long: `dashboard serves the web dashboard over the configured store until
interrupted. It listens on 127.0.0.1:8080 unless --addr says otherwise; any
address other than a loopback one needs --auth-token (or $` + dashboardTokenEnv + `)
of at least 16 characters, or --basic-auth (or $` + dashboardBasicEnv + `) with a
password of at least 8, because the dashboard can resurrect and purge jobs.
/metrics and /readyz, served beside it, need the same credentials;
/healthz is open. Behind a TLS-terminating proxy, pass --secure-cookies.

Failed logins make a client wait, longer after each failure beyond ten.
Behind a reverse proxy every client has the proxy's address: name the
header the proxy writes the client's address into (--trusted-proxy-header
X-Forwarded-For) and the proxy's addresses (--trusted-proxy 10.0.0.0/8), so
one client's failures do not delay the others.

On the in-memory store it also runs a small demo workload in-process (a
processor and the rescue loop with short timeouts, a steady trickle of jobs of
which some fail, some hang past their deadline and some lose their worker), so
every page has live data. --demo runs the same workload on SQL Server, on
queues named demo-*; there the rescue loop keeps the configured Recovery
timeouts, since they apply to every queue.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runDashboard(cmd.Context(), fl)
		},
	}
	f := c.Flags()
	f.StringVar(&fl.addr, "addr", "127.0.0.1:8080", "listen address (host:port); non-loopback needs authentication")
	f.BoolVar(&fl.readOnly, "read-only", false, "hide every action and refuse action requests")
	f.StringVar(&fl.token, "auth-token", "", "require this token (Authorization: Bearer, or the login form); default $"+dashboardTokenEnv)
	f.StringVar(&fl.basic, "basic-auth", "", "require HTTP basic credentials user:password; default $"+dashboardBasicEnv)
	f.BoolVar(&fl.secureCookies, "secure-cookies", false, "mark cookies Secure and expect https origins: the dashboard is reached over HTTPS through a TLS-terminating proxy")
	f.BoolVar(&fl.demo, "demo", false, "run the demo workload also on SQL Server (always on with the in-memory store)")
	f.StringVar(&fl.proxyHeader, "trusted-proxy-header", "", "read the client's address from this header (X-Forwarded-For or X-Real-IP), for requests from --trusted-proxy only")
	f.StringArrayVar(&fl.proxies, "trusted-proxy", nil, "address or CIDR of a reverse proxy whose --trusted-proxy-header is believed (repeatable)")
	return c
}

// dashboardAuth builds the credentials from the flags and the environment.
func (a *app) dashboardAuth(fl dashboardFlags) (dashboard.Auth, error) {
	auth := dashboard.Auth{Token: fl.token}
	if auth.Token == "" {
		auth.Token = a.getenv(dashboardTokenEnv)
	}
	basic, from := fl.basic, "--basic-auth"
	if basic == "" {
		basic, from = a.getenv(dashboardBasicEnv), "$"+dashboardBasicEnv
	}
	if basic != "" {
		user, pass, ok := strings.Cut(basic, ":")
		if !ok || user == "" || pass == "" {
			return auth, usage("%s: want user:password", from)
		}
		auth.BasicUser, auth.BasicPassword = user, pass
	}
	return auth, nil
}

// getenv reads the command's environment; the last setting wins, as in a
// shell.
func (a *app) getenv(key string) string {
	v := ""
	for _, kv := range a.env {
		if s, ok := strings.CutPrefix(kv, key+"="); ok {
			v = s
		}
	}
	return v
}

func (a *app) runDashboard(ctx context.Context, fl dashboardFlags) error {
	auth, err := a.dashboardAuth(fl)
	if err != nil {
		return err
	}
	// Refuse an open address before touching the store or the network.
	if err := dashboard.CheckListen(fl.addr, auth); err != nil {
		return &usageError{err}
	}
	cfg, err := a.loadConfig()
	if err != nil {
		return err
	}
	memory := cfg.StorageKind() == config.StorageMemory
	if fl.demo && !memory {
		if err := a.migrate(ctx, cfg); err != nil {
			return err
		}
	}
	store, err := a.openStore(ctx, false)
	if err != nil {
		return err
	}

	// The Queues page shows what a queue without its own retention keeps:
	// the file's, which the fleet's Clients read too.
	global := cfg.RetentionConfig()
	dash, err := dashboard.New(store, dashboard.Options{ReadOnly: fl.readOnly, Auth: auth, SecureCookies: fl.secureCookies,
		TrustedProxyHeader: fl.proxyHeader, TrustedProxies: fl.proxies, Logger: a.log.Named("dashboard"), Retention: &global})
	if err != nil {
		return &usageError{err}
	}
	// Metrics and health of whatever runs in this process (the demo
	// workload, if any) are served next to the pages.
	prom, err := promexporter.New()
	if err != nil {
		return err
	}
	defer prom.Shutdown(context.Background())
	metrics, err := telemetry.New(telemetry.Options{MeterProvider: prom.MeterProvider(), Logger: a.log})
	if err != nil {
		return err
	}
	defer metrics.Close()
	healthCfg := telemetry.HealthConfig{Store: store}
	if memory || fl.demo {
		// Short rescue timeouts make the demo lively, but rescue phases 1
		// and 2 apply to every queue without its own timeout: on a shared
		// database they keep the configured ones, so the demo never
		// dead-letters an application's slow-beating jobs. The demo queues
		// set their own zombie and execution timeouts.
		rescue := zombie.Config{ScanInterval: time.Second, FetchedJobTimeout: 3 * time.Second, ProcessingZombieTimeout: 10 * time.Second}
		if !memory {
			rescue = zombie.Config{ScanInterval: 2 * time.Second, FetchedJobTimeout: cfg.Recovery.FetchedJobTimeout,
				ProcessingZombieTimeout: cfg.Recovery.ProcessingZombieTimeout}
		}
		demo, err := a.startDashboardDemo(ctx, store, dash, rescue, metrics)
		if err != nil {
			return err
		}
		defer demo.stop()
		healthCfg.Rescuer, healthCfg.Processors = demo.rescuer, []*processor.Processor{demo.worker}
	}

	ln, err := net.Listen("tcp", fl.addr)
	if err != nil {
		return fmt.Errorf("cannot listen on %s: %w", fl.addr, err)
	}
	// CheckListen judged the name; this is what it became.
	if tcp, ok := ln.Addr().(*net.TCPAddr); !auth.Enabled() && (!ok || !tcp.IP.IsLoopback()) {
		ln.Close()
		return &usageError{fmt.Errorf("%w: %s listens on %s, which is not a loopback address", dashboard.ErrNeedsAuth, fl.addr, ln.Addr())}
	}
	// Event streams last as long as a page is open; serveCtx ends them at
	// shutdown so Shutdown does not wait for browsers.
	serveCtx, endStreams := context.WithCancel(context.WithoutCancel(ctx))
	defer endStreams()
	srv := dashboardServer(serveCtx, dashboardMux(dash, prom.MetricsHandler(), telemetry.NewHealth(healthCfg)), a.log)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	what := "the " + redact.DSN(cfg.ConnectionString) + " store"
	if memory {
		what = "the in-memory store with a demo workload (its data lives only as long as this command)"
	} else if fl.demo {
		what += ", with a demo workload on the demo-* queues"
	}
	mode := ""
	if fl.readOnly {
		mode = " (read-only)"
	}
	a.say("chokaq dashboard%s on %s", mode, what)
	if auth.Enabled() {
		a.say("authentication required for the pages, /metrics and /readyz (not /healthz)")
	}
	a.say("listening on http://%s/  (Ctrl-C to stop); /metrics, /healthz and /readyz beside it", ln.Addr())

	select {
	case <-ctx.Done():
	case err := <-served:
		return fmt.Errorf("dashboard server: %w", err)
	}
	endStreams()
	dash.Close()
	shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil {
		return fmt.Errorf("dashboard shutdown: %w", err)
	}
	a.say("dashboard stopped")
	return nil
}

// dashboardMux serves the dashboard and, beside it, the telemetry
// endpoints. /metrics and /readyz tell queue names, job types, failure
// rates and store errors, so they sit behind the dashboard's own guard;
// /healthz says only "ok", for liveness probes.
func dashboardMux(dash *dashboard.Dashboard, metrics http.Handler, health *telemetry.Health) *http.ServeMux {
	tele := http.NewServeMux()
	telemetry.Mount(tele, metrics, health)
	mux := http.NewServeMux()
	mux.Handle("GET "+telemetry.PathMetrics, dash.RequireAuth(tele))
	mux.Handle("GET "+telemetry.PathReadyz, dash.RequireAuth(tele))
	mux.Handle("GET "+telemetry.PathHealthz, tele)
	mux.Handle("/", dash)
	return mux
}

// dashboardServer is the command's HTTP server. ReadTimeout bounds reading
// a whole request, body included, so a slow client cannot hold a
// connection; Go lifts it once a body is read, so event streams and long
// actions are not cut off.
func dashboardServer(serveCtx context.Context, h http.Handler, log *zap.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		BaseContext:       func(net.Listener) context.Context { return serveCtx },
		ErrorLog:          zap.NewStdLog(log.Named("http")),
	}
}

// The demo workload's queues. They are prefixed so that --demo on a real
// database never touches an application's own queues.
const (
	dqMail    = "demo-mail"
	dqBilling = "demo-billing"
	dqMedia   = "demo-media"
	dqImports = "demo-imports"
	dqReports = "demo-reports"
)

// dashboardDemo is the running demo workload.
type dashboardDemo struct {
	worker  *processor.Processor
	rescuer *zombie.Rescuer
	stop    func()
}

// startDashboardDemo runs a processor, the rescue loop (feeding the
// dashboard's console) and a trickle of jobs, so that every page of the
// dashboard has something to show: successes, retries, fatal errors,
// exhausted retries, handlers that hang past their deadline, and workers
// that die mid-job (cut off with faultstore), leaving a zombie and buffered
// jobs for rescue. Both record into metrics.
func (a *app) startDashboardDemo(ctx context.Context, store jobs.Store, dash *dashboard.Dashboard, rescue zombie.Config, metrics *telemetry.Metrics) (*dashboardDemo, error) {
	// The demo's rows are kept ten minutes (dead letters an hour), so a
	// long-running demo stays small; the application's queues keep theirs.
	keep, keepDead := 10*time.Minute, time.Hour
	for q, u := range map[string]jobs.QueueUpdate{
		dqMail:    {MaxWorkers: intPtr(4)},
		dqBilling: {ZombieTimeout: secs(30)},
		dqMedia:   {ExecutionTimeout: secs(3), ZombieTimeout: secs(60)},
		dqImports: {ZombieTimeout: secs(4)},
		dqReports: {Paused: boolPtr(true)},
	} {
		u.ArchiveRetention, u.DeadLetterRetention = &keep, &keepDead
		if _, err := store.UpdateQueue(ctx, q, u); err != nil {
			return nil, err
		}
	}
	// A paused queue with a backlog, for the operator to resume.
	reports := make([]jobs.EnqueueParams, 6)
	for i := range reports {
		reports[i] = jobs.EnqueueParams{Queue: dqReports, Type: "report.build", Payload: fmt.Appendf(nil, `{"report":"monthly","region":%d}`, i+1), CreatedBy: "chokaq dashboard demo"}
	}
	if _, err := store.EnqueueMany(ctx, reports); err != nil {
		return nil, err
	}

	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	end := make(chan struct{}) // releases hanging handlers at shutdown
	var wg sync.WaitGroup
	// The console shows the demo's dead letters; the terminal needs only errors.
	pcfg := demoProcessorConfig([]string{dqMail, dqBilling, dqMedia, dqImports, dqReports},
		a.log.Named("demo").WithOptions(zap.IncreaseLevel(zapcore.ErrorLevel)))
	pcfg.WorkerID = "demo-worker-1"
	worker, err := processor.New(store, demoRegistry(end), metrics.InstrumentProcessor(pcfg))
	if err != nil {
		cancel()
		return nil, err
	}
	metrics.ObserveProcessor(worker)
	rescue.Logger, rescue.OnSweep = a.log.Named("rescue"), dash.OnSweep
	rescuer, err := zombie.New(store, metrics.InstrumentRescue(rescue, store, pcfg.Queues))
	if err != nil {
		cancel()
		return nil, err
	}
	if err := rescuer.Start(runCtx); err != nil {
		cancel()
		return nil, err
	}
	// Two schedules for the Schedules page: one that fires every ten
	// seconds, one nightly in Berlin's time.
	sched, err := schedule.New(store, metrics.InstrumentSchedules(schedule.Config{Logger: a.log.Named("schedule"),
		Schedules: []schedule.Schedule{
			{Name: "demo-digest", Cron: "@every 10s", Job: schedule.Job{Type: "mail.send", Queue: dqMail, Payload: json.RawMessage(`{"digest":true}`)}},
			{Name: "demo-nightly-report", Cron: "30 2 * * *", TimeZone: "Europe/Berlin",
				Job: schedule.Job{Type: "report.build", Queue: dqReports, Payload: json.RawMessage(`{"report":"nightly"}`)}},
		}}))
	if err != nil {
		cancel()
		return nil, err
	}
	stops := []func(context.Context) error{rescuer.Stop, sched.Stop}
	if err := sched.Start(runCtx); err != nil {
		cancel()
		_ = rescuer.Stop(context.Background())
		return nil, err
	}
	// On its own in-memory store the demo trims every queue with the
	// configured retention (the demo's queues with their own); on a shared
	// database, the application's processes do (their Clients run it).
	if _, memory := store.(*memstore.Store); memory {
		rc := a.cfg.RetentionConfig()
		rc.Logger = a.log.Named("retention")
		r, err := retention.New(store, metrics.InstrumentRetention(rc))
		if err != nil {
			cancel()
			return nil, err
		}
		if err := r.Start(runCtx); err != nil {
			cancel()
			return nil, err
		}
		stops = append(stops, r.Stop)
	}
	if err := worker.Start(runCtx); err != nil {
		cancel()
		for _, stop := range stops {
			_ = stop(context.Background())
		}
		return nil, err
	}
	dash.Publish(dashboard.Event{Kind: dashboard.KindInfo, Text: "demo workload started on the demo-* queues: some jobs fail, some hang, some lose their worker"})

	wg.Add(1)
	go func() {
		defer wg.Done()
		a.demoLoop(runCtx, store, worker, pcfg, &wg)
	}()

	var once sync.Once
	return &dashboardDemo{worker: worker, rescuer: rescuer, stop: func() {
		once.Do(func() {
			cancel()
			close(end)
			wg.Wait()
			stopCtx, stopCancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer stopCancel()
			_ = worker.Stop(stopCtx)
			for _, stop := range stops {
				_ = stop(stopCtx)
			}
		})
	}}, nil
}

// demoRegistry are the demo's handlers. A job's payload says how it fails.
func demoRegistry(end <-chan struct{}) *processor.Registry {
	reg := processor.NewRegistry()
	reg.MustHandle("email.send", func(ctx context.Context, j *processor.Job) error {
		if strings.Contains(string(j.Payload), "invalid") {
			return processor.Permanent(errors.New("mailbox does not exist (550 5.1.1 from mx.example.invalid)"))
		}
		return sleepCtx(ctx, time.Duration(50+rand.IntN(250))*time.Millisecond)
	})
	reg.MustHandle("payment.sync", func(ctx context.Context, j *processor.Job) error {
		if j.Attempt == 1 || strings.Contains(string(j.Payload), "declined") {
			return errors.New("payment gateway timeout (HTTP 504 from api.pay.example)")
		}
		return sleepCtx(ctx, 100*time.Millisecond)
	})
	reg.MustHandle("video.encode", func(ctx context.Context, j *processor.Job) error {
		if strings.Contains(string(j.Payload), "corrupt") {
			// Hangs past the queue's 3s execution timeout, ignoring its
			// context, while its process keeps heartbeating: rescue phase 3.
			select {
			case <-time.After(6 * time.Second):
			case <-end:
			}
			return nil
		}
		return sleepCtx(ctx, time.Duration(200+rand.IntN(400))*time.Millisecond)
	})
	for _, t := range []string{"report.build", "import.csv"} {
		reg.MustHandle(t, func(ctx context.Context, j *processor.Job) error {
			return sleepCtx(ctx, time.Duration(100+rand.IntN(500))*time.Millisecond)
		})
	}
	return reg
}

// demoLoop enqueues a trickle of jobs and kills a worker every so often.
// The demo queues' own retention keeps their rows few.
func (a *app) demoLoop(ctx context.Context, store jobs.Store, worker *processor.Processor, pcfg processor.Config, wg *sync.WaitGroup) {
	trickle := time.NewTicker(350 * time.Millisecond)
	defer trickle.Stop()
	doom := time.NewTimer(2 * time.Second)
	defer doom.Stop()
	n := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-trickle.C:
			n++
			if _, err := store.Enqueue(ctx, demoJob(n)); err != nil && ctx.Err() == nil {
				a.log.Warn("dashboard demo: enqueue failed", zap.Error(err))
			}
			worker.Notify()
		case <-doom.C:
			wg.Add(1)
			go func() {
				defer wg.Done()
				a.doomWorker(ctx, store, pcfg, n)
			}()
			doom.Reset(25 * time.Second)
		}
	}
}

// demoJob is the n-th job of the trickle.
func demoJob(n int) jobs.EnqueueParams {
	p := jobs.EnqueueParams{CreatedBy: "chokaq dashboard demo"}
	switch r := rand.IntN(100); {
	case r < 45:
		p.Queue, p.Type, p.Payload = dqMail, "email.send", fmt.Appendf(nil, `{"to":"user%d@example.com","template":"welcome"}`, n)
		if n%11 == 0 {
			p.Payload = fmt.Appendf(nil, `{"to":"nobody%d@example.invalid","template":"welcome"}`, n)
		}
	case r < 70:
		p.Queue, p.Type, p.Payload = dqBilling, "payment.sync", fmt.Appendf(nil, `{"invoice":%d,"amount":"%d.00"}`, 1000+n, 10+n%90)
		if n%5 == 0 {
			p.Payload = fmt.Appendf(nil, `{"invoice":%d,"amount":"%d.00","card":"declined"}`, 1000+n, 10+n%90)
		}
	case r < 85:
		p.Queue, p.Type, p.Payload = dqMedia, "video.encode", fmt.Appendf(nil, `{"file":"clip-%d.mov"}`, n)
		if n%7 == 0 {
			p.Payload = fmt.Appendf(nil, `{"file":"clip-%d.mov","note":"corrupt header"}`, n)
		}
	default:
		p.Queue, p.Type, p.Payload = dqImports, "import.csv", fmt.Appendf(nil, `{"file":"customers-%d.csv"}`, n)
	}
	if n%10 == 0 {
		p.Delay = time.Duration(5+rand.IntN(25)) * time.Second // something in the Scheduled column
	}
	return p
}

// doomWorker starts a worker on the imports queue, gives it three jobs, and
// cuts it off from the store as soon as it starts one: to the store it is a
// crashed process. The started job becomes a zombie, the two buffered ones
// are recovered by rescue phase 1 and run by the healthy worker.
func (a *app) doomWorker(ctx context.Context, store jobs.Store, pcfg processor.Config, n int) {
	cut := faultstore.New(store)
	died := make(chan struct{}, 1)
	reg := processor.NewRegistry()
	reg.MustHandle("import.csv", func(hctx context.Context, j *processor.Job) error {
		cut.Cut()
		died <- struct{}{}
		<-hctx.Done()
		return hctx.Err()
	})
	cfg := pcfg
	cfg.WorkerID = fmt.Sprintf("demo-doomed-%d", n)
	cfg.Queues, cfg.Concurrency, cfg.PrefetchSize, cfg.BatchSize = []string{dqImports}, 1, 3, 3
	cfg.PollInterval, cfg.ShutdownTimeout = 50*time.Millisecond, 100*time.Millisecond
	cfg.Logger = zap.NewNop() // a dead worker's failed writes are the point, not news
	doomed, err := processor.New(cut, reg, cfg)
	if err != nil {
		a.log.Warn("dashboard demo: doomed worker", zap.Error(err))
		return
	}
	if err := doomed.Start(ctx); err != nil {
		return
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = doomed.Stop(stopCtx)
	}()
	batch := make([]jobs.EnqueueParams, 3)
	for i := range batch {
		batch[i] = jobs.EnqueueParams{Queue: dqImports, Type: "import.csv", CreatedBy: "chokaq dashboard demo",
			Payload: fmt.Appendf(nil, `{"file":"orders-%d-%d.csv"}`, n, i)}
	}
	time.Sleep(100 * time.Millisecond) // let it poll before the jobs exist, so it gets them first
	if _, err := store.EnqueueMany(ctx, batch); err != nil {
		return
	}
	doomed.Notify()
	select {
	case <-died:
	case <-time.After(5 * time.Second): // the healthy worker took them all: fine
	case <-ctx.Done():
	}
}

func boolPtr(b bool) *bool { return &b }
