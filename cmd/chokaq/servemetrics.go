package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/chokaq/chokaq-go/config"
	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/telemetry"
	"github.com/chokaq/chokaq-go/telemetry/promexporter"
	"github.com/chokaq/chokaq-go/zombie"
)

// defaultMetricsAddr is the port the OpenTelemetry Prometheus exporter
// conventionally uses.
const defaultMetricsAddr = "127.0.0.1:9464"

func (a *app) serveMetricsCommand() *cobra.Command {
	var addr string
	c := &cobra.Command{
		Use:   "serve-metrics",
		Short: "Run the rescue loop and serve /metrics, /healthz and /readyz until interrupted",
		Long: `serve-metrics runs the rescue loop (Recovery.ScanInterval) with metrics and,
after each sweep, samples the depth of the configured Queues and
QueueSettings queues with a bounded query. It serves:

  /metrics  Prometheus text format (rescue counters, queue depth, jobs waiting on flow control or a rate limit, Go runtime)
  /healthz  200 while the process serves
  /readyz   200 when the store is reachable, its schema current and the
            rescue loop sweeping; 503 with the failing checks otherwise

Workers embedded in services record their own job metrics; see
docs/operations.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.serveMetrics(cmd.Context(), addr)
		},
	}
	c.Flags().StringVar(&addr, "addr", defaultMetricsAddr, "listen address, host:port")
	return c
}

func (a *app) serveMetrics(ctx context.Context, addr string) error {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return usage("--addr %q: want host:port, e.g. %s", addr, defaultMetricsAddr)
	}
	cfg, err := a.loadConfig()
	if err != nil {
		return err
	}
	store, err := a.openStore(ctx, false)
	if err != nil {
		return err
	}
	if cfg.StorageKind() == config.StorageMemory {
		a.log.Warn("serving metrics of an in-memory store that lives only as long as this command; set a connection string to watch SQL Server")
	}
	prom, err := promexporter.New()
	if err != nil {
		return err
	}
	defer prom.Shutdown(context.Background())
	m, err := telemetry.New(telemetry.Options{MeterProvider: prom.MeterProvider(), Logger: a.log})
	if err != nil {
		return err
	}
	defer m.Close()
	rc := cfg.RescueConfig()
	rc.Logger = a.log.Named("rescue")
	rc = m.InstrumentRescue(rc, store, configuredQueues(cfg))
	r, err := zombie.New(store, rc)
	if err != nil {
		return err
	}
	health := telemetry.NewHealth(telemetry.HealthConfig{Store: store, Rescuer: r})
	srv, err := startTelemetryServer(addr, prom.MetricsHandler(), health, a.log)
	if err != nil {
		return err
	}
	if err := r.Start(ctx); err != nil {
		_ = srv.stop(context.Background())
		return err
	}
	a.say("serving http://%s/metrics, /healthz and /readyz; Ctrl-C stops", srv.addr)

	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-srv.failed:
	}
	stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	errs := []error{serveErr, srv.stop(stopCtx)}
	if err := r.Stop(stopCtx); err != nil && !errors.Is(err, jobs.ErrNotRunning) {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	c := r.Counters()
	a.say("stopped after %d sweeps: recovered %d, zombies %d, past deadline %d", c.Sweeps, c.Recovered, c.Zombies, c.Expired)
	return nil
}

// configuredQueues are the queues whose depth is sampled: the served ones
// and the ones with settings.
func configuredQueues(cfg *config.Config) []string {
	qs := slices.Clone(cfg.Queues)
	for _, q := range slices.Sorted(maps.Keys(cfg.QueueSettings)) {
		if !slices.Contains(qs, q) {
			qs = append(qs, q)
		}
	}
	return qs
}

// telemetryServer serves /metrics, /healthz and /readyz.
type telemetryServer struct {
	srv    *http.Server
	addr   net.Addr
	failed chan error // receives Serve's error if it stops by itself
}

// startTelemetryServer listens on addr at once, so a taken port fails the
// command before anything else starts, then serves in the background.
func startTelemetryServer(addr string, metrics http.Handler, health *telemetry.Health, log *zap.Logger) (*telemetryServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("serve metrics: %w", err)
	}
	mux := http.NewServeMux()
	telemetry.Mount(mux, metrics, health)
	s := &telemetryServer{
		srv:    &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second},
		addr:   ln.Addr(),
		failed: make(chan error, 1),
	}
	go func() {
		if err := s.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server stopped", zap.Error(err))
			s.failed <- fmt.Errorf("serve metrics: %w", err)
		}
	}()
	log.Info("serving metrics", zap.String("addr", s.addr.String()))
	return s, nil
}

// stop lets in-flight scrapes finish, within ctx.
func (s *telemetryServer) stop(ctx context.Context) error {
	if err := s.srv.Shutdown(ctx); err != nil {
		return fmt.Errorf("stop metrics server: %w", err)
	}
	return nil
}
