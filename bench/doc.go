// Package bench measures chokaq-go against a peer job library on the same
// workload, in a module of its own so that the library's go.mod gains no
// dependency (ADR 0018, README's Benchmarks).
//
// BenchmarkNoopJobs enqueues b.N no-op jobs, one call each, into a running
// engine with Concurrency workers, and stops the clock when the last
// handler has returned: enqueue and processing together, for both
// engines, the same way. chokaq-go runs on its in-memory store
// (jobs/memstore) through the public Client, with everything that makes
// it safe against a lost worker still on: leases, heartbeats, the rescue
// loop. neoq runs on its in-memory backend. Each engine reports jobs/s
// and, with -benchmem, allocations and bytes per job; a chokaq-go run
// also reports its jobs/s as a multiple of the neoq run of the same
// concurrency just before it (x-neoq).
//
//	cd bench && go test -run '^$' -bench . -benchmem -count 3
package bench
