package processor_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/memstore"
	"github.com/chokaq/chokaq-go/processor"
	"github.com/chokaq/chokaq-go/zombie"
)

// Settings that would melt the store are refused with the setting, its
// value and the rule: a heartbeat every nanosecond made 917 store calls for
// one job running a second, and a Concurrency of MaxInt32 would start that
// many goroutines.
func TestConfigBounds(t *testing.T) {
	cases := []struct {
		name string
		cfg  processor.Config
		want string
	}{
		{"HeartbeatOfANanosecond", processor.Config{HeartbeatIntervalMin: time.Nanosecond, HeartbeatIntervalMax: time.Nanosecond},
			"processor: HeartbeatIntervalMin = 1ns: must be between 100ms and 1h0m0s"},
		{"MaxInt32Workers", processor.Config{Concurrency: math.MaxInt32}, "processor: Concurrency = 2147483647: must be between 1 and 10000"},
		{"HugeBuffer", processor.Config{PrefetchSize: 1 << 20}, "processor: PrefetchSize = 1048576: must be between 1 and 10000"},
		{"PollOfAMicrosecond", processor.Config{PollInterval: time.Microsecond}, "processor: PollInterval = 1µs: must be between 10ms and 1h0m0s"},
		{"PollJitterOverOne", processor.Config{PollJitter: 1.5}, "processor: PollJitter = 1.5: must be at most 1 (a fraction of the wait; negative for none)"},
		{"PollJitterNaN", processor.Config{PollJitter: math.NaN()}, "processor: PollJitter = NaN: must be at most 1"},
		{"NegativeShutdown", processor.Config{ShutdownTimeout: -time.Second}, "processor: ShutdownTimeout = -1s: must be between 0s and 1h0m0s"},
		{"HeartbeatMinOverMax", processor.Config{HeartbeatIntervalMin: 20 * time.Second},
			"processor: HeartbeatIntervalMin = 20s: must be <= processor.HeartbeatIntervalMax (12s)"},
		{"ReleaseAfterWithinAPoll", processor.Config{ReleaseAfter: time.Second, PollInterval: 2 * time.Second},
			"processor: ReleaseAfter = 1s: must be more than processor.PollInterval (2s)"},
		{"ThousandsOfQueues", processor.Config{Queues: strings.Split(strings.Repeat("q,", 1001)+"q", ",")},
			"processor: Queues = 1002: at most 1000 queues per processor"},
		{"BadWorkerID", processor.Config{WorkerID: "a\tb"}, "processor: WorkerID"},
		// Stores compare queue names ignoring case: two such names are one queue.
		{"OneQueueInTwoSpellings", processor.Config{Queues: []string{"orders", "mail", "Orders"}},
			"processor: Queues = Orders: is the same queue as orders (queue names ignore case)"},
		{"OneQueueTwice", processor.Config{Queues: []string{"mail", "mail"}}, "processor: Queues = mail: is listed twice"},
	}
	for _, c := range cases {
		err := c.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Validate() = %v, want %q", c.name, err, c.want)
			continue
		}
		if se, ok := errors.AsType[*jobs.SettingError](err); !ok || se.Component != "processor" || !errors.Is(err, jobs.ErrInvalidArgument) {
			t.Errorf("%s: %#v is not a processor *jobs.SettingError", c.name, err)
		}
		if _, nerr := processor.New(memstore.New(), processor.NewRegistry(), c.cfg); nerr == nil || nerr.Error() != err.Error() {
			t.Errorf("%s: New = %v, want the same error as Validate", c.name, nerr)
		}
	}
	if err := (processor.Config{}).Validate(); err != nil {
		t.Errorf("the zero Config (every default) is refused: %v", err)
	}
	if err := processor.DefaultConfig().Validate(); err != nil {
		t.Errorf("DefaultConfig is refused: %v", err)
	}
}

// Start and Stop say what is wrong with the call with the sentinels every
// component of chokaq-go shares.
func TestLifecycleErrors(t *testing.T) {
	ctx := t.Context()
	p, err := processor.New(memstore.New(), processor.NewRegistry(), processor.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(ctx); !errors.Is(err, jobs.ErrNotRunning) {
		t.Fatalf("Stop before Start: %v", err)
	}
	r, err := zombie.New(memstore.New(), zombie.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Stop(ctx); !errors.Is(err, jobs.ErrNotRunning) {
		t.Fatalf("rescue Stop before Start: %v", err)
	}
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctx); !errors.Is(err, jobs.ErrAlreadyStarted) {
		t.Fatalf("second Start: %v", err)
	}
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.Start(ctx); !errors.Is(err, jobs.ErrAlreadyStarted) {
		t.Fatalf("second rescue Start: %v", err)
	}
	if err := r.Stop(ctx); err != nil {
		t.Fatal(err)
	}
}
