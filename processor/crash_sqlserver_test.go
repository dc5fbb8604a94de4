package processor_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/processor"
	"github.com/chokaq/chokaq-go/sqlserver"
	"github.com/chokaq/chokaq-go/sqlserver/sqlservertest"
	"github.com/chokaq/chokaq-go/zombie"
)

func TestMain(m *testing.M) { os.Exit(sqlservertest.Main(m)) }

const (
	envCrashChild  = "CHOKAQ_CRASH_CHILD"
	envCrashDSN    = "CHOKAQ_CRASH_DSN"
	envCrashSchema = "CHOKAQ_CRASH_SCHEMA"
)

// TestSQLServerCrashChild is the worker process that TestSQLServerCrash
// kills. It runs only when started by that test.
func TestSQLServerCrashChild(t *testing.T) {
	if os.Getenv(envCrashChild) != "1" {
		t.Skip("helper process for TestSQLServerCrash; runs only as its child")
	}
	s, err := sqlserver.Open(context.Background(), os.Getenv(envCrashDSN), sqlserver.WithSchema(os.Getenv(envCrashSchema)))
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(3)
	}
	reg := processor.NewRegistry()
	reg.MustHandle("crash", func(ctx context.Context, j *processor.Job) error {
		fmt.Printf("STARTED %d\n", j.ID)
		select {} // mid-job until SIGKILL
	})
	cfg := processor.Config{WorkerID: "doomed", Queues: []string{"crash"}, Concurrency: 1, PrefetchSize: 5, BatchSize: 5,
		PollInterval: 50 * time.Millisecond, ReleaseAfter: time.Second}
	p, err := processor.New(s, reg, cfg)
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(3)
	}
	if err := p.Start(context.Background()); err != nil {
		fmt.Println("ERROR", err)
		os.Exit(3)
	}
	select {}
}

// TestSQLServerCrash kills a worker process with SIGKILL in the middle of a
// job. Rescue returns its buffered jobs to Pending and dead-letters the one
// it was running as a zombie; a second worker runs the rest. Nothing is lost
// and nothing runs twice.
func TestSQLServerCrash(t *testing.T) {
	dsn, name := sqlservertest.NewSchema(t)
	ctx := t.Context()
	s, err := sqlserver.Open(ctx, dsn, sqlserver.WithSchema(name))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.UpdateQueue(ctx, "crash", jobs.QueueUpdate{ZombieTimeout: secs(2)}); err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for range 6 {
		r, err := s.Enqueue(ctx, jobs.EnqueueParams{Queue: "crash", Type: "crash"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}

	child := exec.Command(os.Args[0], "-test.run=^TestSQLServerCrashChild$", "-test.count=1")
	child.Env = append(os.Environ(), envCrashChild+"=1", envCrashDSN+"="+dsn, envCrashSchema+"="+name)
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	var running int64
	deadline := time.AfterFunc(time.Minute, func() { _ = child.Process.Kill() })
	for lines.Scan() {
		if id, ok := strings.CutPrefix(lines.Text(), "STARTED "); ok {
			running, _ = strconv.ParseInt(id, 10, 64)
			break
		}
	}
	deadline.Stop()
	if running == 0 {
		_ = child.Process.Kill()
		t.Fatal("the child never started a job")
	}
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()

	time.Sleep(3 * time.Second) // past the queue's 2s zombie timeout and the 2s fetched timeout
	r, err := zombie.New(s, zombie.Config{FetchedJobTimeout: 2 * time.Second, ProcessingZombieTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Zombies != 1 {
		t.Fatalf("sweep %+v, want the killed job as the one zombie", res)
	}
	if d, err := s.GetJob(ctx, running); err != nil || d.Table != jobs.TableDLQ || d.FailureReason != jobs.ReasonZombie {
		t.Fatalf("killed job %+v %v, want a zombie dead letter", d, err)
	}

	ran := map[int64]int{}
	reg := processor.NewRegistry()
	done := make(chan int64, len(ids))
	reg.MustHandle("crash", func(ctx context.Context, j *processor.Job) error {
		done <- j.ID
		return nil
	})
	p, err := processor.New(s, reg, processor.Config{WorkerID: "survivor", Queues: []string{"crash"}, PollInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(time.Minute)
	for len(ran) < len(ids)-1 {
		select {
		case id := <-done:
			ran[id]++
		case <-timeout:
			t.Fatalf("only %d of %d recovered jobs ran", len(ran), len(ids)-1)
		}
	}
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		j, err := s.GetJob(ctx, id)
		if err != nil {
			t.Fatalf("job %d lost: %v", id, err)
		}
		switch {
		case id == running && ran[id] != 0:
			t.Fatalf("the killed job ran again: uncertain work must not be re-run")
		case id != running && (j.Table != jobs.TableArchive || ran[id] != 1 || j.AttemptCount != 1):
			t.Fatalf("job %d: %s, ran %d times, %d attempts; want archived after one run", id, j.Table, ran[id], j.AttemptCount)
		}
	}
}
