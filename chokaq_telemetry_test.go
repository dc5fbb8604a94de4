package chokaq_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	chokaq "github.com/chokaq/chokaq-go"
	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/memstore"
	"github.com/chokaq/chokaq-go/processor"
	"github.com/chokaq/chokaq-go/telemetry"
	"github.com/chokaq/chokaq-go/zombie"
)

// finishObserver is a caller's own processor.Observer.
type finishObserver struct{ finished atomic.Int64 }

func (*finishObserver) JobsClaimed([]*jobs.Job)                   {}
func (*finishObserver) JobStarted(*jobs.Job, jobs.Started)        {}
func (o *finishObserver) JobFinished(*jobs.Job, processor.Result) { o.finished.Add(1) }
func (*finishObserver) HeartbeatDegraded(jobs.LeaseRef)           {}

// TestClientRecordsTelemetry: with Config.Telemetry the Client counts
// enqueues (not duplicates), observes its processor and rescue loop next to
// the caller's own hooks, samples the depth of served and configured
// queues, and reports readiness.
func TestClientRecordsTelemetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		reader := sdkmetric.NewManualReader()
		m, err := telemetry.New(telemetry.Options{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
		if err != nil {
			t.Fatal(err)
		}
		obs := &finishObserver{}
		var userRescues, userSweeps atomic.Int64
		reg := processor.NewRegistry()
		reg.MustHandle("ok", func(context.Context, *processor.Job) error { return nil })
		store := memstore.New()
		c, err := chokaq.New(ctx, chokaq.Config{
			Store:     store,
			Telemetry: m,
			Processor: processor.Config{Queues: []string{"default", "mail"}, Observer: obs, PollInterval: 100 * time.Millisecond},
			Rescue: zombie.Config{ScanInterval: 10 * time.Second, FetchedJobTimeout: time.Minute,
				OnRescue: func(zombie.Phase, jobs.Rescued) { userRescues.Add(1) },
				OnSweep:  func(zombie.Result, error) { userSweeps.Add(1) }},
			Queues: map[string]jobs.QueueUpdate{"billing": {}},
		}, reg)
		if err != nil {
			t.Fatal(err)
		}
		// A billing job claimed by a worker that vanished: phase 1's work.
		if _, err := c.EnqueueRaw(ctx, jobs.EnqueueParams{Queue: "billing", Type: "invoice"}); err != nil {
			t.Fatal(err)
		}
		if _, err := store.Claim(ctx, jobs.ClaimParams{WorkerID: "vanished", Queues: []string{"billing"}, Limit: 1}); err != nil {
			t.Fatal(err)
		}
		// Enqueued before Start, so the first job of a key is still active
		// (not yet archived) when its duplicate arrives.
		for _, key := range []string{"", "k", "k"} {
			if _, err := c.EnqueueRaw(ctx, jobs.EnqueueParams{Type: "ok", IdempotencyKey: key}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.EnqueueRawMany(ctx, []jobs.EnqueueParams{{Queue: "mail", Type: "ok"}, {Queue: "mail", Type: "ok", IdempotencyKey: "m"}, {Queue: "mail", Type: "ok", IdempotencyKey: "m"}}); err != nil {
			t.Fatal(err)
		}
		if err := c.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer c.Stop(ctx) // also when a check fails, so the bubble can end
		deadline := time.Now().Add(5 * time.Minute)
		for obs.finished.Load() < 4 || userRescues.Load() < 1 {
			if time.Now().After(deadline) {
				t.Fatalf("finished %d, rescued %d", obs.finished.Load(), userRescues.Load())
			}
			time.Sleep(100 * time.Millisecond)
		}
		time.Sleep(10 * time.Second) // one more sweep, one more depth sample
		synctest.Wait()

		var rm metricdata.ResourceMetrics
		if err := reader.Collect(ctx, &rm); err != nil {
			t.Fatal(err)
		}
		values := func(name string) map[string]int64 {
			out := map[string]int64{}
			for _, sm := range rm.ScopeMetrics {
				for _, mt := range sm.Metrics {
					if mt.Name != name {
						continue
					}
					switch d := mt.Data.(type) {
					case metricdata.Sum[int64]:
						for _, dp := range d.DataPoints {
							out[dp.Attributes.Encoded(attribute.DefaultEncoder())] = dp.Value
						}
					case metricdata.Gauge[int64]:
						for _, dp := range d.DataPoints {
							out[dp.Attributes.Encoded(attribute.DefaultEncoder())] = dp.Value
						}
					}
				}
			}
			return out
		}
		check := func(name string, want map[string]int64) {
			t.Helper()
			got := values(name)
			for k, v := range want {
				if got[k] != v {
					t.Errorf("%s %s = %d, want %d (all: %v)", name, k, got[k], v, got)
				}
			}
			if len(got) != len(want) {
				t.Errorf("%s: %v, want %v", name, got, want)
			}
		}
		check("chokaq.jobs.enqueued", map[string]int64{
			"queue=billing,type=invoice": 1, "queue=default,type=ok": 2, "queue=mail,type=ok": 2,
		})
		check("chokaq.jobs.duplicates", map[string]int64{"queue=default,type=ok": 1, "queue=mail,type=ok": 1})
		check("chokaq.jobs.succeeded", map[string]int64{"queue=default,type=ok": 2, "queue=mail,type=ok": 2})
		check("chokaq.rescue.recovered", map[string]int64{"queue=billing,type=invoice": 1})
		check("chokaq.processor.running", map[string]int64{"": 0})
		check("chokaq.queue.depth", map[string]int64{
			"queue=default,status=pending": 0, "queue=default,status=fetched": 0, "queue=default,status=processing": 0,
			"queue=mail,status=pending": 0, "queue=mail,status=fetched": 0, "queue=mail,status=processing": 0,
			"queue=billing,status=pending": 1, "queue=billing,status=fetched": 0, "queue=billing,status=processing": 0,
		})
		if obs.finished.Load() != 4 || userRescues.Load() != 1 || userSweeps.Load() < 2 {
			t.Fatalf("caller's hooks: finished %d, rescued %d, swept %d", obs.finished.Load(), userRescues.Load(), userSweeps.Load())
		}

		rec := httptest.NewRecorder()
		c.Health().Readyz().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("readyz %d: %s", rec.Code, rec.Body)
		}
	})
}
