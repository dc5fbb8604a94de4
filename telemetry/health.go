package telemetry

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/processor"
	"github.com/chokaq/chokaq-go/zombie"
)

// DefaultReadyTimeout bounds one readiness evaluation unless configured.
const DefaultReadyTimeout = 2 * time.Second

// HealthConfig says what readiness checks.
type HealthConfig struct {
	// Store must be reachable (Store.Now). When it also has a
	// CheckSchema(ctx) error method (the SQL Server store), the schema must
	// be at the version this build expects. Nil skips both checks.
	Store jobs.Admin
	// Rescuer, when set, must have swept within two scan intervals; before
	// its first sweep, within two intervals of NewHealth.
	Rescuer *zombie.Rescuer
	// Processors must not be failing their heartbeats.
	Processors []*processor.Processor
	// Timeout bounds one readiness evaluation (DefaultReadyTimeout).
	Timeout time.Duration
}

// schemaChecker is a store that can tell whether its schema is current.
type schemaChecker interface {
	CheckSchema(ctx context.Context) error
}

// Health answers liveness and readiness. Create it when the rescuer and
// processors start: the rescuer's grace period counts from then.
type Health struct {
	cfg   HealthConfig
	since time.Time
}

// NewHealth returns a Health over cfg.
func NewHealth(cfg HealthConfig) *Health {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultReadyTimeout
	}
	return &Health{cfg: cfg, since: time.Now()}
}

// Check is one readiness check's outcome.
type Check struct {
	Name  string `json:"name"`
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
}

// Report is a readiness evaluation.
type Report struct {
	Status string  `json:"status"` // "ready" or "unready"
	Checks []Check `json:"checks"`
}

// Ready reports whether every check passed.
func (r Report) Ready() bool { return r.Status == "ready" }

// Check runs the readiness checks: the store is reachable, its schema is at
// the expected version, the rescue loop swept within two intervals, and no
// processor's heartbeats are failing.
func (h *Health) Check(ctx context.Context) Report {
	ctx, cancel := context.WithTimeout(ctx, h.cfg.Timeout)
	defer cancel()
	var checks []Check
	add := func(name string, err error) {
		c := Check{Name: name, OK: err == nil}
		if err != nil {
			c.Error = err.Error()
		}
		checks = append(checks, c)
	}
	if s := h.cfg.Store; s != nil {
		_, err := s.Now(ctx)
		if err != nil {
			err = fmt.Errorf("store unreachable: %w", err)
		}
		add("store", err)
		if sc, ok := s.(schemaChecker); ok {
			if err != nil {
				add("schema", fmt.Errorf("not checked: the store is unreachable"))
			} else {
				add("schema", sc.CheckSchema(ctx))
			}
		}
	}
	if r := h.cfg.Rescuer; r != nil {
		add("rescue", h.checkRescue(r))
	}
	if len(h.cfg.Processors) > 0 {
		add("heartbeats", checkHeartbeats(h.cfg.Processors))
	}
	rep := Report{Status: "ready", Checks: checks}
	for _, c := range checks {
		if !c.OK {
			rep.Status = "unready"
		}
	}
	return rep
}

// checkRescue: a rescue loop that stopped sweeping leaves zombies in place,
// so readiness fails when its last sweep, failed or skipped ones included
// (the store check reports outages), is older than two intervals.
func (h *Health) checkRescue(r *zombie.Rescuer) error {
	limit := 2 * r.Interval()
	last := r.Counters().LastSweep
	if last.IsZero() {
		if waited := time.Since(h.since); waited > limit {
			return fmt.Errorf("no rescue sweep in the %s since start (scan interval %s)", waited.Round(time.Millisecond), r.Interval())
		}
		return nil
	}
	if age := time.Since(last); age > limit {
		return fmt.Errorf("last rescue sweep %s ago, more than two scan intervals (%s)", age.Round(time.Millisecond), r.Interval())
	}
	return nil
}

func checkHeartbeats(procs []*processor.Processor) error {
	var failing []string
	for _, p := range procs {
		if p.HeartbeatsFailing() {
			failing = append(failing, p.WorkerID())
		}
	}
	if len(failing) > 0 {
		return fmt.Errorf("heartbeats failing on %v: the store cannot hear from running jobs, and no new work is claimed", failing)
	}
	return nil
}

// Healthz answers 200 "ok" while the process serves HTTP: liveness only.
// It checks nothing else on purpose; a database outage must not get the
// process restarted, since restarting cannot fix it.
func (h *Health) Healthz() http.Handler { return Healthz() }

// Healthz is Health.Healthz for a server without a Health.
func Healthz() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write([]byte("ok\n"))
	})
}

// Readyz answers 200 with the checks as JSON when all pass, else 503 with
// the failing ones and why.
func (h *Health) Readyz() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rep := h.Check(r.Context())
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if !rep.Ready() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rep)
	})
}
