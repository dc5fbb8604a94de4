package sqlserver

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

// scanJobs reads rows of the unified job column list (see unifiedHot).
func scanJobs(rows *sql.Rows) ([]*jobs.Job, error) {
	defer rows.Close()
	return scanJobRows(rows)
}

// scanJobRows reads the current result set's jobs and leaves rows open
// for the next set.
func scanJobRows(rows *sql.Rows) ([]*jobs.Job, error) {
	var out []*jobs.Job
	for rows.Next() {
		var (
			j                                               jobs.Job
			priority, maxAttempts, attempts, table          int64
			tags, key, createdBy, worker, lastErr, details  sql.NullString
			status, durationMs, reason                      sql.NullInt64
			lastUpdated, started, heartbeat, deadline, done sql.NullTime
			snoozes                                         int64
			cancelAt                                        sql.NullTime
			cancelNote                                      sql.NullString
			heartbeatMaxMs                                  sql.NullInt64
			metadata, output, progressMessage               sql.NullString
			progress                                        sql.NullFloat64
			timeoutFrom, zombieCap, zombieRetries           sql.NullInt64
			uniqueHash                                      []byte
			uniqueBucket, uniqueStates                      sql.NullInt64
			concurrencyKey, sequenceKey                     sql.NullString
			workflowID                                      sql.NullInt64
			workflowTask                                    sql.NullString
		)
		err := rows.Scan(&j.ID, &j.Queue, &j.Type, &j.Payload, &priority, &tags, &key, &createdBy, &maxAttempts, &attempts,
			&table, &status, &j.CreatedAt, &j.ScheduledAt, &lastUpdated, &worker, &j.Lease,
			&started, &heartbeat, &deadline, &lastErr,
			&done, &durationMs, &reason, &details,
			&snoozes, &cancelAt, &cancelNote, &heartbeatMaxMs,
			&metadata, &output, &progress, &progressMessage,
			&timeoutFrom, &zombieCap, &zombieRetries,
			&uniqueHash, &uniqueBucket, &uniqueStates,
			&concurrencyKey, &sequenceKey,
			&workflowID, &workflowTask)
		if err != nil {
			return nil, err
		}
		j.Priority, j.MaxAttempts, j.AttemptCount, j.SnoozeCount = int(priority), int(maxAttempts), int(attempts), int(snoozes)
		j.CancelRequestedAt, j.CancelNote = utc(cancelAt), cancelNote.String
		j.Table, j.Status = jobs.Table(table), readerStatus(status.Int64)
		j.WorkflowID, j.WorkflowTask = workflowID.Int64, workflowTask.String
		j.ConcurrencyKey, j.SequenceKey = concurrencyKey.String, sequenceKey.String
		if tags.String != "" {
			j.Tags = strings.Split(tags.String, ",")
		}
		j.IdempotencyKey, j.CreatedBy, j.WorkerID = key.String, createdBy.String, worker.String
		j.LastError, j.ErrorDetails = lastErr.String, details.String
		j.CreatedAt, j.ScheduledAt = j.CreatedAt.UTC(), j.ScheduledAt.UTC()
		j.LastUpdatedAt, j.StartedAt, j.HeartbeatAt = utc(lastUpdated), utc(started), utc(heartbeat)
		j.DeadlineAt, j.FinishedAt = utc(deadline), utc(done)
		j.Duration = time.Duration(durationMs.Int64) * time.Millisecond
		j.HeartbeatMax = time.Duration(heartbeatMaxMs.Int64) * time.Millisecond
		j.FailureReason = jobs.FailureReason(reason.Int64)
		if j.Metadata, err = jobs.DecodeMetadata(metadata.String); err != nil {
			return nil, fmt.Errorf("job %d: %w", j.ID, err)
		}
		if output.Valid {
			j.Output = json.RawMessage(output.String)
		}
		j.Progress, j.ProgressMessage = progress.Float64, progressMessage.String
		j.TimeoutFrom = jobs.PolicySource(timeoutFrom.Int64)
		j.ZombieRetryCap, j.ZombieRetries = int(zombieCap.Int64), int(zombieRetries.Int64)
		if len(uniqueHash) == jobs.UniqueHashLen {
			k := jobs.UniqueKey{Bucket: uniqueBucket.Int64}
			copy(k.Hash[:], uniqueHash)
			j.UniqueKey, j.UniqueStates = &k, jobs.UniqueStates(uniqueStates.Int64)
		}
		out = append(out, &j)
	}
	return out, rows.Err()
}

func utc(t sql.NullTime) time.Time {
	if !t.Valid {
		return time.Time{}
	}
	return t.Time.UTC()
}

func scanQueues(rows *sql.Rows) ([]jobs.QueueSettings, error) {
	defer rows.Close()
	var out []jobs.QueueSettings
	for rows.Next() {
		var q jobs.QueueSettings
		var maxWorkers, zombie, exec, weight, rateCount, rateMs int64
		var archive, deadLetter sql.NullInt64
		var perKey, sequence int64
		var keyLimits sql.NullString
		if err := rows.Scan(&q.Name, &q.Paused, &maxWorkers, &zombie, &exec, &archive, &deadLetter,
			&perKey, &sequence, &keyLimits, &weight, &rateCount, &rateMs); err != nil {
			return nil, err
		}
		q.MaxWorkersPerKey, q.SequenceOnDeadLetter = int(perKey), jobs.SequencePolicy(sequence)
		if keyLimits.Valid {
			var ls []struct {
				K string `json:"k"`
				N int    `json:"n"`
			}
			if err := json.Unmarshal([]byte(keyLimits.String), &ls); err != nil {
				return nil, fmt.Errorf("queue %s: key limits: %w", q.Name, err)
			}
			q.KeyLimits = make(map[string]int, len(ls))
			for _, l := range ls {
				q.KeyLimits[l.K] = l.N
			}
		}
		q.MaxWorkers = int(maxWorkers)
		q.ZombieTimeout, q.ExecutionTimeout = time.Duration(zombie)*time.Second, time.Duration(exec)*time.Second
		q.ArchiveRetention, q.DeadLetterRetention = retentionOf(archive), retentionOf(deadLetter)
		q.Weight = int(weight)
		q.RateLimit = jobs.RateLimit{Count: int(rateCount), Window: time.Duration(rateMs) * time.Millisecond}
		out = append(out, q)
	}
	return out, rows.Err()
}

// retentionOf reads a retention column: NULL is not set (0), 0 is
// jobs.KeepForever, else seconds.
func retentionOf(n sql.NullInt64) time.Duration {
	switch {
	case !n.Valid:
		return 0
	case n.Int64 == 0:
		return jobs.KeepForever
	}
	return time.Duration(n.Int64) * time.Second
}

// retentionArg is the @archive or @deadLetter of qUpdateQueue: -1 clears the
// column (NULL), 0 keeps forever, else seconds.
func retentionArg(d *time.Duration) int64 {
	switch {
	case d == nil || *d == 0:
		return -1
	case *d == jobs.KeepForever:
		return 0
	}
	return int64(*d / time.Second)
}

// A Pending job a claim held back (ADR 0031), or a workflow task waiting
// for a parent (ADR 0034), has one of these statuses in JobsHot, outside
// the claim's Status = 0 range; it is Pending to every reader.
const (
	statusWaitingOnKey      = 3
	statusWaitingOnSequence = 4
	statusWaitingOnParents  = 5
)

// readerStatus is the status readers see of a JobsHot Status: a parked job
// (ADR 0031) or a task waiting for a parent (ADR 0034) is Pending.
func readerStatus(status int64) jobs.Status {
	switch status {
	case statusWaitingOnKey, statusWaitingOnSequence, statusWaitingOnParents:
		return jobs.StatusPending
	}
	return jobs.Status(status)
}

// busiestKeys reads qQueueStats's JSON array of the busiest keys.
func busiestKeys(s sql.NullString) ([]jobs.KeyCount, error) {
	if !s.Valid {
		return nil, nil
	}
	var ks []struct {
		K string `json:"k"`
		R int64  `json:"r"`
		W int64  `json:"w"`
	}
	if err := json.Unmarshal([]byte(s.String), &ks); err != nil {
		return nil, err
	}
	out := make([]jobs.KeyCount, len(ks))
	for i, k := range ks {
		out[i] = jobs.KeyCount{Key: k.K, Running: k.R, Waiting: k.W}
	}
	return out, nil
}
