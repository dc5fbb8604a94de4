package telemetry_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/faultstore"
	"github.com/chokaq/chokaq-go/jobs/memstore"
	"github.com/chokaq/chokaq-go/processor"
	"github.com/chokaq/chokaq-go/telemetry"
	"github.com/chokaq/chokaq-go/zombie"
)

// get fetches path from srv and returns the status and body.
func get(t *testing.T, srv *httptest.Server, path string) (int, string) {
	t.Helper()
	resp, err := srv.Client().Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// serve answers one request to h in-process (usable in a synctest bubble,
// where a real listener is not).
func serve(t *testing.T, h http.Handler, path string) (int, telemetry.Report) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	var rep telemetry.Report
	if err := json.Unmarshal(rec.Body.Bytes(), &rep); err != nil {
		t.Fatalf("readyz body is not a report: %v\n%s", err, rec.Body.String())
	}
	return rec.Code, rep
}

func failing(rep telemetry.Report) map[string]string {
	out := map[string]string{}
	for _, c := range rep.Checks {
		if !c.OK {
			out[c.Name] = c.Error
		}
	}
	return out
}

// TestReadyzFollowsTheStore: /readyz answers 503 naming the store while it
// is unreachable and 200 again once it is back; /healthz stays 200.
func TestReadyzFollowsTheStore(t *testing.T) {
	store := faultstore.New(memstore.New())
	mux := http.NewServeMux()
	telemetry.Mount(mux, nil, telemetry.NewHealth(telemetry.HealthConfig{Store: store}))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	code, body := get(t, srv, "/readyz")
	if code != http.StatusOK || !strings.Contains(body, `"status": "ready"`) || !strings.Contains(body, `"name": "store"`) {
		t.Fatalf("readyz with the store up: %d\n%s", code, body)
	}
	store.Cut()
	code, body = get(t, srv, "/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, `"status": "unready"`) || !strings.Contains(body, faultstore.ErrCut.Error()) {
		t.Fatalf("readyz with the store cut: %d\n%s", code, body)
	}
	if code, body := get(t, srv, "/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Fatalf("healthz during the outage: %d %q", code, body)
	}
	store.Restore()
	if code, body = get(t, srv, "/readyz"); code != http.StatusOK {
		t.Fatalf("readyz after the store came back: %d\n%s", code, body)
	}
	if code, _ := get(t, srv, "/metrics"); code != http.StatusNotFound {
		t.Fatalf("/metrics mounted without a handler: %d", code)
	}
}

// schemaStore is a store whose schema can be behind.
type schemaStore struct {
	jobs.Store
	err error
}

func (s schemaStore) CheckSchema(context.Context) error { return s.err }

func TestReadyzChecksTheSchema(t *testing.T) {
	behind := errors.New(`schema "chokaq" is at version 3, this build expects 4: run chokaq migrate up`)
	for _, c := range []struct {
		err  error
		code int
	}{{nil, http.StatusOK}, {behind, http.StatusServiceUnavailable}} {
		h := telemetry.NewHealth(telemetry.HealthConfig{Store: schemaStore{memstore.New(), c.err}})
		code, rep := serve(t, h.Readyz(), "/readyz")
		if code != c.code {
			t.Fatalf("schema error %v: readyz %d, want %d (%+v)", c.err, code, c.code, rep)
		}
		if c.err != nil && failing(rep)["schema"] != behind.Error() {
			t.Fatalf("failing checks %v", failing(rep))
		}
	}
	// A store without CheckSchema (in-memory) has no schema check.
	_, rep := serve(t, telemetry.NewHealth(telemetry.HealthConfig{Store: memstore.New()}).Readyz(), "/readyz")
	for _, c := range rep.Checks {
		if c.Name == "schema" {
			t.Fatalf("schema checked on the in-memory store: %+v", rep)
		}
	}
}

// TestReadyzNoticesARescueLoopThatStopped: ready while the loop sweeps;
// unready once its last sweep is more than two intervals old; and a loop
// that never swept gets two intervals of grace from start.
func TestReadyzNoticesARescueLoopThatStopped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		store := memstore.New()
		r, err := zombie.New(store, zombie.Config{ScanInterval: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		h := telemetry.NewHealth(telemetry.HealthConfig{Store: store, Rescuer: r})
		if code, rep := serve(t, h.Readyz(), "/readyz"); code != http.StatusOK {
			t.Fatalf("within the grace period: %d %+v", code, rep)
		}
		if err := r.Start(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(35 * time.Second) // sweeps at 0, 10, 20, 30 s
		if code, rep := serve(t, h.Readyz(), "/readyz"); code != http.StatusOK {
			t.Fatalf("while sweeping: %d %+v", code, rep)
		}
		if err := r.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(15 * time.Second) // last sweep 20 s ago: two intervals, still fine
		if code, rep := serve(t, h.Readyz(), "/readyz"); code != http.StatusOK {
			t.Fatalf("at two intervals: %d %+v", code, rep)
		}
		time.Sleep(time.Second)
		code, rep := serve(t, h.Readyz(), "/readyz")
		if code != http.StatusServiceUnavailable || !strings.Contains(failing(rep)["rescue"], "last rescue sweep 21s ago") {
			t.Fatalf("after the loop stopped: %d %+v", code, rep)
		}

		never, err := zombie.New(store, zombie.Config{ScanInterval: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		h = telemetry.NewHealth(telemetry.HealthConfig{Store: store, Rescuer: never})
		time.Sleep(21 * time.Second)
		code, rep = serve(t, h.Readyz(), "/readyz")
		if code != http.StatusServiceUnavailable || !strings.Contains(failing(rep)["rescue"], "no rescue sweep") {
			t.Fatalf("a loop that never swept: %d %+v", code, rep)
		}
	})
}

// TestReadyzNoticesFailingHeartbeats: a processor whose heartbeats fail
// (its store connection is gone) makes the process unready until they
// succeed again.
func TestReadyzNoticesFailingHeartbeats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		mem := memstore.New()
		cut := faultstore.New(mem)
		release := make(chan struct{})
		reg := processor.NewRegistry()
		reg.MustHandle("t", func(context.Context, *processor.Job) error { <-release; return nil })
		p, err := processor.New(cut, reg, processorConfig("w", "q"))
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := mem.Enqueue(ctx, jobs.EnqueueParams{Queue: "q", Type: "t"}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, time.Minute, "the job running", func() bool { return p.Stats().Running == 1 })
		// The health check reads the shared store, which stays up: only the
		// heartbeat check can fail.
		h := telemetry.NewHealth(telemetry.HealthConfig{Store: mem, Processors: []*processor.Processor{p}})
		if code, rep := serve(t, h.Readyz(), "/readyz"); code != http.StatusOK {
			t.Fatalf("before the cut: %d %+v", code, rep)
		}
		cut.Cut()
		waitFor(t, time.Minute, "a failed beat", p.HeartbeatsFailing)
		code, rep := serve(t, h.Readyz(), "/readyz")
		if code != http.StatusServiceUnavailable || !strings.Contains(failing(rep)["heartbeats"], "[w]") || len(failing(rep)) != 1 {
			t.Fatalf("with heartbeats failing: %d %+v", code, rep)
		}
		cut.Restore()
		waitFor(t, time.Minute, "a good beat", func() bool { return !p.HeartbeatsFailing() })
		if code, rep := serve(t, h.Readyz(), "/readyz"); code != http.StatusOK {
			t.Fatalf("after the store came back: %d %+v", code, rep)
		}
		close(release)
		if err := p.Stop(ctx); err != nil {
			t.Fatal(err)
		}
	})
}
