package memstore

import (
	"context"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

// finishLog is one queue's finished jobs of one table (archive or DLQ) in
// the order they finished, so that a trim by age (the retention loop's
// Purge) takes the oldest without scanning the table: as SQL Server seeks
// its (Queue, FinishedAtUtc) index. Entries are never removed from the
// middle: a job that left the table since (purged by ID, resurrected)
// leaves a stale entry, told by its finish instant, which the walk skips
// and compaction drops.
type finishLog struct {
	// name is the queue as the first job that entered the log spelt it:
	// logs are kept by jobs.QueueKey, as SQL Server's index compares names.
	name    string
	entries []finishEntry
	head    int // entries before head are gone
}

type finishEntry struct {
	job *jobs.Job
	at  time.Time // the FinishedAt the job had when it entered the table
}

// live reports whether e still stands for a job of table t.
func (s *Store) live(t jobs.Table, e finishEntry) bool {
	j := s.table(t)[e.job.ID]
	return j == e.job && j.Table == t && j.FinishedAt.Equal(e.at)
}

// logFinished records that j just entered its table (j.Table).
func (s *Store) logFinished(j *jobs.Job) {
	logs := s.finished[j.Table]
	if logs == nil {
		logs = map[string]*finishLog{}
		s.finished[j.Table] = logs
	}
	l := logs[jobs.QueueKey(j.Queue)]
	if l == nil {
		l = &finishLog{name: j.Queue}
		logs[jobs.QueueKey(j.Queue)] = l
	}
	l.entries = append(l.entries, finishEntry{job: j, at: j.FinishedAt})
	// Entries that outlived their jobs (purged by ID, resurrected) must
	// not pin them: compact when half the log is gone.
	if len(l.entries) >= 1024 && len(l.entries)&(len(l.entries)-1) == 0 {
		s.compact(j.Table, jobs.QueueKey(j.Queue), l)
	}
}

// compact drops gone and stale entries of the log kept under key.
func (s *Store) compact(t jobs.Table, key string, l *finishLog) {
	kept := l.entries[:0]
	for _, e := range l.entries[l.head:] {
		if s.live(t, e) {
			kept = append(kept, e)
		}
	}
	clear(l.entries[len(kept):])
	l.entries, l.head = kept, 0
	if len(kept) == 0 {
		delete(s.finished[t], key)
	}
}

// trimOldest deletes up to limit jobs of queue from table t that finished
// before cutoff, oldest first, and returns how many and the last one.
func (s *Store) trimOldest(t jobs.Table, queue string, cutoff time.Time, limit int) (int, jobs.TrimKey) {
	l := s.finished[t][jobs.QueueKey(queue)]
	if l == nil {
		return 0, jobs.TrimKey{}
	}
	n := 0
	var last jobs.TrimKey
	for l.head < len(l.entries) && n < limit {
		e := l.entries[l.head]
		if s.live(t, e) {
			if !e.at.Before(cutoff) {
				break
			}
			s.exit(e.job)
			s.dropKey(e.job)
			s.taskGone(e.job, s.now())
			n++
			last = jobs.TrimKey{FinishedAt: e.at, ID: e.job.ID}
		}
		l.entries[l.head] = finishEntry{}
		l.head++
	}
	if l.head > len(l.entries)/2 {
		s.compact(t, jobs.QueueKey(queue), l)
	}
	return n, last
}

// Trim implements jobs.Store. The finish log drops what a step deleted, so
// the next step starts after it without reading p.After.
func (s *Store) Trim(ctx context.Context, p jobs.TrimParams) (jobs.TrimResult, error) {
	if err := ctx.Err(); err != nil {
		return jobs.TrimResult{}, err
	}
	if err := p.Validate(); err != nil {
		return jobs.TrimResult{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n, last := s.trimOldest(p.Table, p.Queue, s.now().Add(-p.OlderThan), p.Limit)
	return jobs.TrimResult{Deleted: n, Last: last}, nil
}

// isTrim reports whether a purge has the retention loop's shape: a limit,
// an age, a queue and nothing else.
func isTrim(p jobs.PurgeParams) bool {
	f := p.Filter
	return p.Limit > 0 && f.OlderThan > 0 && len(f.IDs) == 0 && f.Type == "" && f.Status == nil && f.Reason == nil &&
		f.From.IsZero() && f.To.IsZero() && f.Text == "" && f.Queue != ""
}

// FinishedCounts implements jobs.FinishedCounter. It walks each queue's
// finish log from its newest end back to From, so a chart's poll costs
// what its window holds; the log is in finish order as long as the
// store's clock moves forward.
func (s *Store) FinishedCounts(ctx context.Context, p jobs.FinishedCountsParams) ([]jobs.FinishedCount, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	type bucket struct {
		start  time.Time
		queue  string
		table  jobs.Table
		reason jobs.FailureReason
	}
	counts := map[bucket]int64{}
	s.mu.Lock()
	for _, t := range []jobs.Table{jobs.TableArchive, jobs.TableDLQ} {
		for key, l := range s.finished[t] {
			if p.Queue != "" && key != jobs.QueueKey(p.Queue) {
				continue
			}
			for i := len(l.entries) - 1; i >= l.head; i-- {
				e := l.entries[i]
				if e.at.Before(p.From) {
					break
				}
				if !e.at.Before(p.To) || !s.live(t, e) {
					continue
				}
				k := bucket{start: p.BucketOf(e.at), queue: l.name, table: t}
				if t == jobs.TableDLQ {
					k.reason = e.job.FailureReason
				}
				counts[k]++
			}
		}
	}
	s.mu.Unlock()
	out := make([]jobs.FinishedCount, 0, len(counts))
	for k, n := range counts {
		out = append(out, jobs.FinishedCount{Start: k.start, Queue: k.queue, Table: k.table, Reason: k.reason, Count: n})
	}
	return out, nil
}
