package memstore_test

import (
	"fmt"
	"testing"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/memstore"
)

// BusiestKeys names at most jobs.MaxBusiestKeys keys, the most running
// first and ties by key, whatever the number of keys running.
func TestBusiestKeysAreCappedMostRunningFirst(t *testing.T) {
	ctx := t.Context()
	s := memstore.New()
	for i := range 8 { // key k<i> gets i+1 jobs
		for range i + 1 {
			if _, err := s.Enqueue(ctx, jobs.EnqueueParams{Type: "t", ConcurrencyKey: fmt.Sprintf("k%d", i)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := s.Enqueue(ctx, jobs.EnqueueParams{Type: "t", ConcurrencyKey: "a"}); err != nil { // ties with k0
		t.Fatal(err)
	}
	if got, err := s.Claim(ctx, jobs.ClaimParams{WorkerID: "w", Queues: []string{jobs.DefaultQueue}, Limit: 100}); err != nil || len(got) != 37 {
		t.Fatalf("Claim = %d jobs, %v; want 37", len(got), err)
	}
	ss, err := s.QueueStats(ctx)
	if err != nil || len(ss) != 1 {
		t.Fatalf("QueueStats = %+v, %v", ss, err)
	}
	got := ss[0].BusiestKeys
	want := []string{"k7", "k6", "k5", "k4", "k3"}
	if len(got) != jobs.MaxBusiestKeys {
		t.Fatalf("busiest keys %+v, want %d", got, jobs.MaxBusiestKeys)
	}
	for i, k := range want {
		if got[i].Key != k || got[i].Running != int64(8-i) {
			t.Fatalf("busiest keys %+v, want %v with 8, 7, 6, 5, 4 running", got, want)
		}
	}
}
