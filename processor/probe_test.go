package processor_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/faultstore"
	"github.com/chokaq/chokaq-go/jobs/latencystore"
	"github.com/chokaq/chokaq-go/processor"
)

// An idle processor probes rather than claims (ADR 0027): over 10 s of
// idle polls every 100 ms it claims only at its start and while its waits
// ramp up, and probes at each poll, without reading the paused view; a job
// enqueued by another process (no Notify) is then found by a probe and
// claimed at the next poll.
func TestAnIdleProcessorProbesAndClaimsWhenTheProbeSeesWork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := newMem()
		s := latencystore.New(mem, latencystore.Config{}) // counts the calls, costs nothing
		reg := processor.NewRegistry()
		reg.MustHandle("t", func(context.Context, *processor.Job) error { return nil })
		cfg := testConfig()
		cfg.PollJitter = processor.NoPollJitter
		startProcessor(t, s, reg, cfg)
		time.Sleep(10 * time.Second)
		synctest.Wait()
		claims, probes, queues := s.Count(latencystore.OpClaim), s.Count(latencystore.OpProbe), s.Count(latencystore.OpQueues)
		if claims != 1 || probes < 90 || probes > 101 || queues > 1 {
			t.Fatalf("idle for 10 s: %d claims, %d probes, %d reads of the paused view; want 1 claim, a probe every 100 ms, no paused view", claims, probes, queues)
		}
		id := enqueue(t, s, jobs.EnqueueParams{Type: "t"})
		time.Sleep(cfg.PollInterval + time.Millisecond)
		synctest.Wait()
		if !inTable(mem, id, jobs.TableArchive)() {
			t.Fatalf("a poll after the enqueue the job is %v, want archived", get(t, mem, id).Status)
		}
		// The claim the probe called for; then, after work, the room freed
		// and the short wait claim at once, before the polls probe again.
		if n := s.Count(latencystore.OpClaim); n < 2 || n > 4 {
			t.Fatalf("%d claims, want the one the probe called for and at most two after the work", n)
		}
	})
}

// A store that cannot probe is polled by claims, as before the probe.
func TestAStoreWithoutTheProbeIsPolledByClaims(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := latencystore.New(newMem(), latencystore.Config{})
		reg := processor.NewRegistry()
		cfg := testConfig()
		cfg.PollJitter = processor.NoPollJitter
		startProcessor(t, s.Single(), reg, cfg)
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if claims, probes := s.Count(latencystore.OpClaim), s.Count(latencystore.OpProbe); claims < 90 || probes != 0 {
			t.Fatalf("idle for 10 s without a probe: %d claims, %d probes; want a claim every 100 ms", claims, probes)
		}
	})
}

// A probe that fails backs off as a failed claim does, and the processor
// goes on once the store is back.
func TestAFailingProbeBacksOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := newMem()
		fs := faultstore.New(mem)
		s := latencystore.New(fs, latencystore.Config{})
		reg := processor.NewRegistry()
		reg.MustHandle("t", func(context.Context, *processor.Job) error { return nil })
		cfg := testConfig()
		cfg.PollJitter = processor.NoPollJitter
		p := startProcessor(t, s, reg, cfg)
		time.Sleep(time.Second)
		synctest.Wait()
		fs.Cut()
		before := s.Count(latencystore.OpProbe)
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if n := s.Count(latencystore.OpProbe) - before; n < 3 || n > 14 {
			t.Fatalf("%d probes in 10 s of a cut store, want a backoff doubling from 100 ms to 1 s", n)
		}
		if p.Stats().StoreErrors == 0 {
			t.Fatal("no store error counted for the failed probes")
		}
		fs.Restore()
		id := enqueue(t, mem, jobs.EnqueueParams{Type: "t"})
		waitFor(t, time.Minute, "the job archived after the store came back", inTable(mem, id, jobs.TableArchive))
	})
}

// The fault store cuts the probe too.
func TestTheFaultStoreCutsTheProbe(t *testing.T) {
	fs := faultstore.New(newMem())
	fs.Cut()
	if _, err := fs.Probe(t.Context(), []string{"default"}); !errors.Is(err, faultstore.ErrCut) {
		t.Fatalf("probe of a cut store: %v, want ErrCut", err)
	}
}
