package processor_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/latencystore"
	"github.com/chokaq/chokaq-go/processor"
)

// claimLog is an Observer that records each claim, in the order the fetch
// loop buffered them: the claims run in fake time, so the order, not the
// moment, is what a test can judge.
type claimLog struct {
	mu     sync.Mutex
	claims []claim
}

type claim struct {
	queue string // of the claim's first job
	jobs  map[string]int
}

func (l *claimLog) JobsClaimed(js []*jobs.Job) {
	c := claim{queue: js[0].Queue, jobs: map[string]int{}}
	for _, j := range js {
		c.jobs[j.Queue]++
	}
	l.mu.Lock()
	l.claims = append(l.claims, c)
	l.mu.Unlock()
}
func (*claimLog) JobStarted(*jobs.Job, jobs.Started)      {}
func (*claimLog) JobFinished(*jobs.Job, processor.Result) {}
func (*claimLog) HeartbeatDegraded(jobs.LeaseRef)         {}

func (l *claimLog) len() int { l.mu.Lock(); defer l.mu.Unlock(); return len(l.claims) }

// tally counts, over claims [from, to), the claims that asked each queue
// first and the jobs claimed of each.
func (l *claimLog) tally(from, to int) (first, claimed map[string]int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	first, claimed = map[string]int{}, map[string]int{}
	for _, c := range l.claims[from:min(to, len(l.claims))] {
		first[c.queue]++
		for q, n := range c.jobs {
			claimed[q] += n
		}
	}
	return first, claimed
}

// until returns how many claims it took to claim n jobs of queue q, or of
// any queue for q "" (0 if they never were).
func (l *claimLog) until(q string, n int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, c := range l.claims {
		for cq, k := range c.jobs {
			if q == "" || cq == q {
				n -= k
			}
		}
		if n <= 0 {
			return i + 1
		}
	}
	return 0
}

// backlog enqueues n no-op jobs on queue q.
func backlog(t testing.TB, s jobs.Store, q string, n int) {
	t.Helper()
	batch := make([]jobs.EnqueueParams, 0, 1000)
	for i := range n {
		batch = append(batch, jobs.EnqueueParams{Type: "noop", Queue: q})
		if len(batch) == cap(batch) || i == n-1 {
			if _, err := s.EnqueueMany(context.Background(), batch); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
}

func weigh(t testing.TB, s jobs.Store, q string, w int) {
	t.Helper()
	if _, err := s.UpdateQueue(context.Background(), q, jobs.QueueUpdate{Weight: &w}); err != nil {
		t.Fatal(err)
	}
}

// weightedConfig claims a batch of 10 at a time, one claim out at once (the
// buffer holds one batch), so the claims reach the Observer in the order
// the picker took its turns.
func weightedConfig(log *claimLog, queues ...string) processor.Config {
	cfg := testConfig()
	cfg.Queues, cfg.BatchSize, cfg.PrefetchSize, cfg.Observer = queues, 10, 10, log
	return cfg
}

func noopRegistry() *processor.Registry {
	reg := processor.NewRegistry()
	reg.MustHandle("noop", func(context.Context, *processor.Job) error { return nil })
	return reg
}

// Two queues of weight 1 and 9, each with a standing backlog: of the first
// 100 claims, exactly 10 are the light queue's (a claim is whole from the
// queue asked first while it has a batch), and so are 10% of the jobs.
func TestQueuesOfWeight1And9GetClaimsOneToNine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := newMem()
		weigh(t, mem, "light", 1)
		weigh(t, mem, "heavy", 9)
		backlog(t, mem, "light", 1000)
		backlog(t, mem, "heavy", 1000)
		log := &claimLog{}
		p := startProcessor(t, mem, noopRegistry(), weightedConfig(log, "light", "heavy"))
		waitFor(t, time.Minute, "100 claims", func() bool { return log.len() >= 100 })
		stop(t, p)
		first, claimed := log.tally(0, 100)
		if first["light"] != 10 || first["heavy"] != 90 {
			t.Fatalf("the first 100 claims asked first %v, want light 10, heavy 90 (weights 1:9)", first)
		}
		if claimed["light"] != 100 || claimed["heavy"] != 900 {
			t.Fatalf("the first 100 claims took %v, want light 100, heavy 900: a claim whole from its first queue", claimed)
		}
	})
}

// A backlog of 100,000 on one queue starves no queue of equal weight: the
// processor claims from both in turn, so the small queue's 100 jobs are all
// claimed before the big one's 111th.
func TestABacklogOf100000StarvesNoQueueOfEqualWeight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := newMem()
		backlog(t, mem, "big", 100000)
		backlog(t, mem, "small", 100)
		log := &claimLog{}
		// Once the small queue's jobs are all claimed, the handlers hold
		// their jobs until the test has looked: else the big backlog runs
		// to its end in no fake time before the test wakes.
		hold := make(chan struct{})
		reg := processor.NewRegistry()
		reg.MustHandle("noop", func(context.Context, *processor.Job) error {
			if log.until("small", 100) > 0 {
				<-hold
			}
			return nil
		})
		p := startProcessor(t, mem, reg, weightedConfig(log, "big", "small"))
		waitFor(t, time.Minute, "the small queue's 100 jobs claimed", func() bool { return log.until("small", 100) > 0 })
		close(hold)
		stop(t, p)
		n := log.until("small", 100)
		first, claimed := log.tally(0, n)
		if n > 20 || claimed["big"] > 110 {
			t.Fatalf("the small queue's 100 jobs took %d claims, beside %d of the big queue's: it waited", n, claimed["big"])
		}
		if first["small"] != 10 || first["big"] != n-10 {
			t.Fatalf("the claims up to the small queue's last asked first %v, want small and big in turn", first)
		}
	})
}

// The weights are a stored setting read at run time: a processor of two
// queues reads them while idle, at most once per five polls, so a weight an
// operator changes applies without a restart.
func TestAWeightChangedAtRunTimeAppliesToAnIdleProcessor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := newMem()
		s := latencystore.New(mem, latencystore.Config{}) // counts the calls, costs nothing
		log := &claimLog{}
		cfg := weightedConfig(log, "light", "heavy")
		cfg.PollJitter = processor.NoPollJitter
		p := startProcessor(t, s, noopRegistry(), cfg)
		time.Sleep(10 * time.Second)
		synctest.Wait()
		// One read per 5 polls of 100 ms is 20 in 10 s.
		if n := s.Count(latencystore.OpQueues); n < 10 || n > 21 {
			t.Fatalf("idle for 10 s, %d reads of the queue settings; want one per 5 polls (about 20)", n)
		}
		weigh(t, mem, "light", 1)
		weigh(t, mem, "heavy", 9)
		time.Sleep(6 * cfg.PollInterval)
		synctest.Wait()
		backlog(t, mem, "light", 1000)
		backlog(t, mem, "heavy", 1000)
		p.Notify()
		start := log.len()
		waitFor(t, time.Minute, "100 claims", func() bool { return log.len() >= start+100 })
		stop(t, p)
		// The turns taken before the change leave the picker's currents
		// off zero: one claim either way.
		if first, _ := log.tally(start, start+100); first["light"] < 9 || first["light"] > 11 {
			t.Fatalf("after the weights changed to 1:9, 100 claims asked first %v, want light 9-11", first)
		}
	})
}
