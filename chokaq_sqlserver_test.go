package chokaq_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"sync/atomic"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	chokaq "github.com/chokaq/chokaq-go"
	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/latencystore"
	"github.com/chokaq/chokaq-go/processor"
	"github.com/chokaq/chokaq-go/sqlserver"
	"github.com/chokaq/chokaq-go/sqlserver/sqlservertest"
	"github.com/chokaq/chokaq-go/telemetry"
	"github.com/chokaq/chokaq-go/zombie"
)

func TestMain(m *testing.M) { os.Exit(sqlservertest.Main(m)) }

// sqlClient starts a Client on a fresh schema of the test server.
func sqlClient(t *testing.T, dsn, name string, reg *processor.Registry, tune func(*chokaq.Config)) *chokaq.Client {
	t.Helper()
	cfg := chokaq.Config{ConnectionString: dsn, Schema: name}
	cfg.Processor.PollInterval = 50 * time.Millisecond
	cfg.Rescue.ScanInterval = 100 * time.Millisecond
	if tune != nil {
		tune(&cfg)
	}
	c, err := chokaq.New(t.Context(), cfg, reg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = c.Stop(ctx)
	})
	return c
}

type txArgs struct{ N int }

func (txArgs) Kind() string { return "tx" }

// TestSQLServerClientEnqueueTx: through the facade, a job enqueued in the
// caller's transaction never runs if the caller rolls back, and runs once
// the caller commits.
func TestSQLServerClientEnqueueTx(t *testing.T) {
	dsn, name := sqlservertest.NewSchema(t)
	ran := make(chan int64, 4)
	reg := processor.NewRegistry()
	chokaq.MustHandle(reg, func(_ context.Context, j *chokaq.Job, _ txArgs) error { ran <- j.ID; return nil })
	reader := sdkmetric.NewManualReader()
	m, err := telemetry.New(telemetry.Options{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	if err != nil {
		t.Fatal(err)
	}
	c := sqlClient(t, dsn, name, reg, func(cfg *chokaq.Config) { cfg.Telemetry = m })

	db, err := sql.Open("sqlserver", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := t.Context()
	for _, commit := range []bool{false, true} {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		r, err := c.EnqueueTx(ctx, tx, txArgs{N: 1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if commit {
			err = tx.Commit()
		} else {
			err = tx.Rollback()
		}
		if err != nil {
			t.Fatal(err)
		}
		if !commit {
			if _, err := c.GetJob(ctx, r.ID); !errors.Is(err, jobs.ErrJobNotFound) {
				t.Fatalf("rolled-back job %d: GetJob = %v, want ErrNotFound", r.ID, err)
			}
			continue
		}
		select {
		case id := <-ran:
			if id != r.ID {
				t.Fatalf("ran job %d, want the committed job %d", id, r.ID)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("the committed job %d never ran", r.ID)
		}
	}
	select {
	case id := <-ran:
		t.Fatalf("job %d ran too: only the committed job may", id)
	default:
	}
	// Counted at insert: the Client never sees the caller's commit or
	// rollback (see Client.EnqueueTx).
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	var enqueued int64
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			if sum, ok := mt.Data.(metricdata.Sum[int64]); ok && mt.Name == "chokaq.jobs.enqueued" {
				for _, dp := range sum.DataPoints {
					enqueued += dp.Value
				}
			}
		}
	}
	if enqueued != 2 {
		t.Fatalf("chokaq.jobs.enqueued = %d after two EnqueueTx calls, want 2", enqueued)
	}
}

// TestSQLServerSingleRescuer: two Clients on one schema with SingleRescuer
// sweep one at a time; when the leader stops, the other takes over.
func TestSQLServerSingleRescuer(t *testing.T) {
	dsn, name := sqlservertest.NewSchema(t)
	var swept [2]atomic.Int64
	rescuer := func(i int) *chokaq.Client {
		return sqlClient(t, dsn, name, processor.NewRegistry(), func(c *chokaq.Config) {
			c.DisableProcessor, c.SingleRescuer = true, true
			c.Rescue.OnSweep = func(res zombie.Result, err error) {
				if err == nil && !res.Skipped {
					swept[i].Add(1)
				}
			}
		})
	}
	a, b := rescuer(0), rescuer(1)
	waitUntil(t, "one rescuer sweeping", func() bool { return swept[0].Load()+swept[1].Load() >= 5 })
	leader, other := a, b
	if swept[1].Load() > 0 {
		leader, other = b, a
	}
	if swept[0].Load() > 0 && swept[1].Load() > 0 {
		t.Fatalf("both rescuers swept (%d and %d) while both ran", swept[0].Load(), swept[1].Load())
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := leader.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the follower takes over", func() bool { return other.Rescuer().Counters().Sweeps > 0 })
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// BenchmarkSQLServerPickupAcrossProcesses is BenchmarkPickupAcrossProcesses
// on the test server: two stores on their own pools, as two processes
// have; the consumer's behind a latency store of no cost, which only
// counts its calls. Run with -benchtime=50x.
func BenchmarkSQLServerPickupAcrossProcesses(b *testing.B) {
	for _, set := range pickupSettings {
		b.Run(set.name, func(b *testing.B) {
			dsn, name := sqlservertest.NewSchema(b)
			open := func() *sqlserver.Store {
				s, err := sqlserver.Open(b.Context(), dsn, sqlserver.WithSchema(name))
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = s.Close() })
				return s
			}
			consumer := latencystore.New(open(), latencystore.Config{})
			defer consumer.Close()
			measurePickup(b, consumer, open(), set.poll)
		})
	}
}

type wfStep struct{ Name string }

func (wfStep) Kind() string { return "wf.step" }

// TestSQLServerClientWorkflow: through the facade and a real processor, a
// workflow enqueued in a caller's transaction that rolls back never runs;
// one committed runs its tasks in dependency order, a fan-out before its
// fan-in, each once (ADR 0034: the release steps run before claims).
func TestSQLServerClientWorkflow(t *testing.T) {
	dsn, name := sqlservertest.NewSchema(t)
	ran := make(chan string, 16)
	reg := processor.NewRegistry()
	chokaq.MustHandle(reg, func(_ context.Context, _ *chokaq.Job, a wfStep) error { ran <- a.Name; return nil })
	c := sqlClient(t, dsn, name, reg, nil)
	db, err := sql.Open("sqlserver", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := t.Context()
	tasks := []chokaq.WorkflowTask{{Name: "import", Args: wfStep{"import"}}}
	for _, n := range []string{"t1", "t2", "t3"} {
		tasks = append(tasks, chokaq.WorkflowTask{Name: n, Args: wfStep{n}, After: []string{"import"}})
	}
	tasks = append(tasks, chokaq.WorkflowTask{Name: "report", Args: wfStep{"report"}, After: []string{"t1", "t2", "t3"}})
	for _, commit := range []bool{false, true} {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		r, err := c.EnqueueWorkflowTx(ctx, tx, "nightly", tasks...)
		if err != nil {
			t.Fatal(err)
		}
		if !commit {
			if err := tx.Rollback(); err != nil {
				t.Fatal(err)
			}
			if _, err := c.GetWorkflow(ctx, r.ID); !errors.Is(err, jobs.ErrWorkflowNotFound) {
				t.Fatalf("the rolled-back workflow: %v, want ErrWorkflowNotFound", err)
			}
			continue
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	var order []string
	for len(order) < 5 {
		select {
		case n := <-ran:
			order = append(order, n)
		case <-time.After(30 * time.Second):
			t.Fatalf("ran %v, then nothing for 30 s", order)
		}
	}
	if order[0] != "import" || order[4] != "report" {
		t.Fatalf("ran %v: import first, report last", order)
	}
	select {
	case n := <-ran:
		t.Fatalf("%s ran again, or a rolled-back task ran", n)
	case <-time.After(500 * time.Millisecond):
	}
}

// TestSQLServerBatchRunsItsCallbackOnce: the batch callback cases (both
// policies, the counts by outcome, a member resurrected after the
// callback ran) on SQL Server, each on a fresh schema.
func TestSQLServerBatchRunsItsCallbackOnce(t *testing.T) {
	batchCallbackCases(t, func(t *testing.T) chokaq.Config {
		dsn, name := sqlservertest.NewSchema(t)
		cfg := chokaq.Config{ConnectionString: dsn, Schema: name, DisableRescue: true}
		cfg.Processor.PollInterval = 50 * time.Millisecond
		return cfg
	})
}
