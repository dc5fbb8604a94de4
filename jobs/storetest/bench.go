package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

// StoreFactory returns a fresh, empty store for one benchmark.
type StoreFactory func(b *testing.B) jobs.Store

// Benchmarks measures the store calls the processor makes most: enqueue
// (single and in batches of 100) and the claim, start and complete of each
// job with claims of 20. Report them with -benchmem and compare with
// benchstat.
func Benchmarks(b *testing.B, newStore StoreFactory) {
	payload := []byte(`{"to":"someone@example.com","template":"welcome","n":42}`)
	b.Run("Enqueue", func(b *testing.B) {
		s := newStore(b)
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.Enqueue(ctx, jobs.EnqueueParams{Type: "bench", Payload: payload}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("EnqueueMany100", func(b *testing.B) {
		s := newStore(b)
		ctx := context.Background()
		batch := make([]jobs.EnqueueParams, 100)
		for i := range batch {
			batch[i] = jobs.EnqueueParams{Type: "bench", Payload: payload}
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.EnqueueMany(ctx, batch); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(batch)), "ns/job")
	})
	b.Run("ClaimStartComplete", func(b *testing.B) {
		s := newStore(b)
		ctx := context.Background()
		const batch = 20
		fill := make([]jobs.EnqueueParams, 1000)
		for i := range fill {
			fill[i] = jobs.EnqueueParams{Type: "bench", Payload: payload}
		}
		params := jobs.ClaimParams{WorkerID: "bench", Queues: []string{jobs.DefaultQueue}, Limit: batch}
		start := jobs.StartParams{DefaultTimeout: time.Minute}
		var buffered []*jobs.Job
		b.ReportAllocs()
		for b.Loop() {
			if len(buffered) == 0 {
				got, err := s.Claim(ctx, params)
				if err != nil {
					b.Fatal(err)
				}
				if len(got) == 0 {
					b.StopTimer()
					if _, err := s.EnqueueMany(ctx, fill); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					if got, err = s.Claim(ctx, params); err != nil || len(got) == 0 {
						b.Fatalf("claim after refill: %d, %v", len(got), err)
					}
				}
				buffered = got
			}
			j := buffered[0]
			buffered = buffered[1:]
			if _, err := s.Start(ctx, j.Ref(), start); err != nil {
				b.Fatal(err)
			}
			if err := s.Complete(ctx, j.Ref()); err != nil {
				b.Fatal(err)
			}
		}
	})
}
