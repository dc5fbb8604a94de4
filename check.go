package chokaq

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/processor"
	"github.com/chokaq/chokaq-go/zombie"
)

// CheckConfig validates a processor and a rescue loop that run against one
// store, each on its own (processor.Config.Validate, zombie.Config.Validate),
// every queue setting (its name and jobs.QueueUpdate.Validate), and all of
// them against each other, and returns the first broken rule as a
// *jobs.SettingError. New calls it; so does package config for
// appsettings.yaml, so a service that wires processor and zombie by hand
// gets the same errors. The rules between them:
//
//   - the zombie timeout is more than 3 x HeartbeatIntervalMax, for the
//     global one and for every queue's own (queues may be nil): a live job
//     misses a beat or two under load, and rescue must not dead-letter it
//     for that;
//   - no two queue names (the processor's, the queues') are equal ignoring
//     case, which is how stores compare them;
//   - the processor's ReleaseAfter is at most half of FetchedJobTimeout:
//     a job waiting in a live worker's buffer is released by the worker
//     before rescue phase 1 would take it back.
func CheckConfig(p processor.Config, r zombie.Config, queues map[string]jobs.QueueUpdate) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if err := r.Validate(); err != nil {
		return err
	}
	if err := checkQueues(queues); err != nil {
		return err
	}
	// The effective values: Validate accepted them with defaults applied.
	pd, rd := processor.DefaultConfig(), zombie.DefaultConfig()
	hbMax := or(p.HeartbeatIntervalMax, pd.HeartbeatIntervalMax)
	release := or(p.ReleaseAfter, pd.ReleaseAfter)
	zombieTimeout := or(r.ProcessingZombieTimeout, rd.ProcessingZombieTimeout)
	fetched := or(r.FetchedJobTimeout, rd.FetchedJobTimeout)

	if zombieTimeout <= 3*hbMax {
		return &jobs.SettingError{Component: "zombie", Key: "ProcessingZombieTimeout", Value: zombieTimeout,
			Rule: fmt.Sprintf("must be more than 3 x {processor.HeartbeatIntervalMax} (3 x %v = %v), or live jobs are rescued", hbMax, 3*hbMax),
			Other: &jobs.SettingError{Component: "processor", Key: "HeartbeatIntervalMax", Value: hbMax,
				Rule: fmt.Sprintf("must be less than a third of {zombie.ProcessingZombieTimeout} (%v), or live jobs are rescued", zombieTimeout)}}
	}
	// Stores compare queue names ignoring case: two keys that differ only
	// in case would be two settings of one queue, the last one winning.
	if err := jobs.DistinctQueueNames("queue", slices.Sorted(maps.Keys(queues))); err != nil {
		ve, _ := errors.AsType[*jobs.ValidationError](err)
		return &jobs.SettingError{Component: "chokaq", Key: "Queues", Value: ve.Value, Rule: ve.Rule}
	}
	for _, name := range slices.Sorted(maps.Keys(queues)) {
		q := queues[name].ZombieTimeout
		if q == nil || *q == 0 {
			continue
		}
		if *q <= 3*hbMax {
			return &jobs.SettingError{Component: "queue " + name, Key: "ZombieTimeout", Value: *q,
				Rule: fmt.Sprintf("must be more than 3 x {processor.HeartbeatIntervalMax} (3 x %v = %v), or 0 to use {zombie.ProcessingZombieTimeout}", hbMax, 3*hbMax)}
		}
	}
	if release > fetched/2 {
		return &jobs.SettingError{Component: "processor", Key: "ReleaseAfter", Value: release,
			Rule: fmt.Sprintf("must be at most half of {zombie.FetchedJobTimeout} (%v), or rescue phase 1 takes back jobs a live worker is about to start", fetched),
			Other: &jobs.SettingError{Component: "zombie", Key: "FetchedJobTimeout", Value: fetched,
				Rule: fmt.Sprintf("must be at least 2 x {processor.ReleaseAfter} (2 x %v = %v)", release, 2*release)}}
	}
	return nil
}

// checkQueues applies the store's own rules to every queue setting, in
// name order, so that a bad entry fails New instead of Start, after the
// entries before it were written.
func checkQueues(queues map[string]jobs.QueueUpdate) error {
	for _, name := range slices.Sorted(maps.Keys(queues)) {
		err := jobs.ValidateQueueName(name)
		key := "Name"
		if err == nil {
			err = queues[name].Validate()
			key = ""
		}
		if ve, ok := errors.AsType[*jobs.ValidationError](err); ok {
			if key == "" {
				key = queueKeys[ve.Field]
			}
			return &jobs.SettingError{Component: "queue " + name, Key: key, Value: ve.Value, Rule: ve.Rule}
		}
		if err != nil {
			return fmt.Errorf("queue %s: %w", name, err)
		}
	}
	return nil
}

// queueKeys names jobs.QueueUpdate's fields by their validation names.
var queueKeys = map[string]string{
	"max_workers": "MaxWorkers", "zombie_timeout": "ZombieTimeout", "execution_timeout": "ExecutionTimeout",
	"archive_retention": "ArchiveRetention", "dead_letter_retention": "DeadLetterRetention",
}

func or(v, d time.Duration) time.Duration {
	if v == 0 {
		return d
	}
	return v
}
