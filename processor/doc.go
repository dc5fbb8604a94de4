// Package processor runs jobs: it claims them from a jobs.Worker into a
// bounded prefetch buffer, starts each on one of Concurrency workers, keeps
// it alive with jittered heartbeats coalesced into one store call per due
// batch, and records its outcome (archive, retry with backoff, or
// dead-letter) under the job's lease.
//
// Policy lives here: which outcome an error leads to, how long to back off,
// when to stop claiming. SQL lives in the store; rescue of jobs whose worker
// died lives in package zombie.
//
// A worker that loses its lease (rescue or another claim took the job) has
// its handler's context cancelled and writes nothing more for that job.
package processor
