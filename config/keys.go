package config

import (
	"strings"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/processor"
	"github.com/chokaq/chokaq-go/schedule"
)

// root is the section every key lives under.
const root = "ChokaQ"

// kind is how a key's value is read.
type kind uint8

const (
	kindString kind = iota
	kindInt
	kindFloat
	kindBool
	// kindDuration is a Go ("90s") or .NET ("00:01:30") duration. A plain
	// number is refused: "90" could mean seconds or milliseconds.
	kindDuration
	// kindSeconds is a kindDuration that also takes a plain integer as
	// seconds; the legacy *Seconds aliases were integers of seconds.
	kindSeconds
	// kindWholeSeconds is a kindSeconds that must be whole seconds; the
	// value is an int, as the store keeps it.
	kindWholeSeconds
	// kindQueues is a list of queue names, or one comma-separated string.
	kindQueues
	// kindRetention is a kindDuration, or 0 for jobs.KeepForever.
	kindRetention
	// kindQueueRetention is a kindRetention, or "default" for the global
	// retention (a stored override cleared).
	kindQueueRetention
	// kindSequencePolicy is continue or hold (jobs.ParseSequencePolicy).
	kindSequencePolicy
	// kindRateLimit is "N/window" or "none" (jobs.ParseRateLimit).
	kindRateLimit
	// kindJSON is JSON: a YAML mapping, list or scalar (encoded), or a
	// string holding JSON.
	kindJSON
)

// keyDef is one key of the ChokaQ section.
type keyDef struct {
	name string // relative to ChokaQ, in its documented spelling
	kind kind
	set  func(c *Config, v any) // nil for an alias
	// alias, for a legacy key, is the name of the key it stands for.
	alias string
}

// keys is every key of the ChokaQ section outside QueueSettings, in
// appsettings.yaml order. It is read-only.
var keys = []keyDef{
	{name: "ConnectionString", kind: kindString, set: func(c *Config, v any) { c.ConnectionString = v.(string) }},
	{name: "Schema", kind: kindString, set: func(c *Config, v any) { c.Schema = v.(string) }},
	// Storage is matched case-insensitively, like keys.
	{name: "Storage", kind: kindString, set: func(c *Config, v any) { c.Storage = strings.ToLower(v.(string)) }},
	{name: "WorkerId", kind: kindString, set: func(c *Config, v any) { c.WorkerID = v.(string) }},
	{name: "Queues", kind: kindQueues, set: func(c *Config, v any) { c.Queues = v.([]string) }},

	{name: "Execution.Concurrency", kind: kindInt, set: func(c *Config, v any) { c.Execution.Concurrency = v.(int) }},
	{name: "Execution.PrefetchSize", kind: kindInt, set: func(c *Config, v any) { c.Execution.PrefetchSize = v.(int) }},
	{name: "Execution.BatchSize", kind: kindInt, set: func(c *Config, v any) { c.Execution.BatchSize = v.(int) }},
	{name: "Execution.PollInterval", kind: kindDuration, set: func(c *Config, v any) { c.Execution.PollInterval = v.(time.Duration) }},
	{name: "Execution.PollJitter", kind: kindFloat, set: func(c *Config, v any) { c.Execution.PollJitter = v.(float64) }},
	{name: "Execution.DefaultTimeout", kind: kindDuration, set: func(c *Config, v any) { c.Execution.DefaultTimeout = v.(time.Duration) }},
	{name: "Execution.HeartbeatIntervalMin", kind: kindDuration, set: func(c *Config, v any) { c.Execution.HeartbeatIntervalMin = v.(time.Duration) }},
	{name: "Execution.HeartbeatIntervalMax", kind: kindDuration, set: func(c *Config, v any) { c.Execution.HeartbeatIntervalMax = v.(time.Duration) }},
	{name: "Execution.HeartbeatFailureThreshold", kind: kindInt, set: func(c *Config, v any) { c.Execution.HeartbeatFailureThreshold = v.(int) }},
	{name: "Execution.CancelOnHeartbeatFailure", kind: kindBool, set: func(c *Config, v any) { c.Execution.CancelOnHeartbeatFailure = v.(bool) }},
	{name: "Execution.ShutdownTimeout", kind: kindDuration, set: func(c *Config, v any) { c.Execution.ShutdownTimeout = v.(time.Duration) }},
	{name: "Execution.BatchLinger", kind: kindDuration, set: func(c *Config, v any) { c.Execution.BatchLinger = v.(time.Duration) }},
	{name: "Execution.MaxSnoozes", kind: kindInt, set: func(c *Config, v any) { c.Execution.MaxSnoozes = v.(int) }},

	{name: "Retry.MaxAttempts", kind: kindInt, set: func(c *Config, v any) { c.Retry.MaxAttempts = v.(int) }},
	{name: "Retry.BaseDelay", kind: kindDuration, set: func(c *Config, v any) { c.Retry.BaseDelay = v.(time.Duration) }},
	{name: "Retry.MaxDelay", kind: kindDuration, set: func(c *Config, v any) { c.Retry.MaxDelay = v.(time.Duration) }},
	{name: "Retry.BackoffMultiplier", kind: kindFloat, set: func(c *Config, v any) { c.Retry.BackoffMultiplier = v.(float64) }},
	{name: "Retry.JitterMaxDelay", kind: kindDuration, set: func(c *Config, v any) { c.Retry.JitterMaxDelay = v.(time.Duration) }},

	{name: "Recovery.ScanInterval", kind: kindDuration, set: func(c *Config, v any) { c.Recovery.ScanInterval = v.(time.Duration) }},
	{name: "Recovery.FetchedJobTimeout", kind: kindDuration, set: func(c *Config, v any) { c.Recovery.FetchedJobTimeout = v.(time.Duration) }},
	{name: "Recovery.ProcessingZombieTimeout", kind: kindDuration, set: func(c *Config, v any) { c.Recovery.ProcessingZombieTimeout = v.(time.Duration) }},

	{name: "Retention.Archive", kind: kindRetention, set: func(c *Config, v any) { c.Retention.Archive = v.(time.Duration) }},
	{name: "Retention.DeadLetters", kind: kindRetention, set: func(c *Config, v any) { c.Retention.DeadLetters = v.(time.Duration) }},

	// Legacy keys of the .NET ChokaQ, at the section root.
	{name: "FetchedJobTimeoutSeconds", kind: kindSeconds, alias: "Recovery.FetchedJobTimeout"},
	{name: "ZombieTimeoutSeconds", kind: kindSeconds, alias: "Recovery.ProcessingZombieTimeout"},
	{name: "MaxRetries", kind: kindInt, alias: "Retry.MaxAttempts"},
	{name: "RetryDelaySeconds", kind: kindSeconds, alias: "Retry.BaseDelay"},
}

// queueSection holds the per-queue settings: QueueSettings.<queue>.<key>.
const queueSection = "QueueSettings"

// queueKeyDef is one key of a queue's settings.
type queueKeyDef struct {
	name string
	kind kind
	set  func(s *QueueSetting, v any)
	// section marks a key that holds keys of its own (KeyLimits), each
	// named by the user; set is nil.
	section bool
}

// queueKeys is every per-queue key. It is read-only.
var queueKeys = []queueKeyDef{
	{name: "Paused", kind: kindBool, set: func(s *QueueSetting, v any) { b := v.(bool); s.Paused = &b }},
	{name: "MaxWorkers", kind: kindInt, set: func(s *QueueSetting, v any) { n := v.(int); s.MaxWorkers = &n }},
	{name: "ZombieTimeoutSeconds", kind: kindWholeSeconds, set: func(s *QueueSetting, v any) { s.ZombieTimeout = seconds(v.(int)) }},
	{name: "ExecutionTimeoutSeconds", kind: kindWholeSeconds, set: func(s *QueueSetting, v any) { s.ExecutionTimeout = seconds(v.(int)) }},
	{name: "ArchiveRetention", kind: kindQueueRetention, set: func(s *QueueSetting, v any) { d := v.(time.Duration); s.ArchiveRetention = &d }},
	{name: "DeadLetterRetention", kind: kindQueueRetention, set: func(s *QueueSetting, v any) { d := v.(time.Duration); s.DeadLetterRetention = &d }},
	{name: "MaxWorkersPerKey", kind: kindInt, set: func(s *QueueSetting, v any) { n := v.(int); s.MaxWorkersPerKey = &n }},
	// KeyLimits is a section: each key under it is a concurrency key
	// (target.flowKey), its value that key's cap.
	{name: keyLimitsKey, kind: kindInt, section: true},
	{name: "SequenceOnDeadLetter", kind: kindSequencePolicy, set: func(s *QueueSetting, v any) { p := v.(jobs.SequencePolicy); s.SequenceOnDeadLetter = &p }},
	{name: "Weight", kind: kindInt, set: func(s *QueueSetting, v any) { n := v.(int); s.Weight = &n }},
	{name: "RateLimit", kind: kindRateLimit, set: func(s *QueueSetting, v any) { r := v.(jobs.RateLimit); s.RateLimit = &r }},
}

// keyLimitsKey is the per-queue section of concurrency keys' own caps:
// QueueSettings.<queue>.KeyLimits.<key>.
const keyLimitsKey = "KeyLimits"

// setKeyLimit sets one concurrency key's cap.
func setKeyLimit(s *QueueSetting, key string, n int) {
	if s.KeyLimits == nil {
		s.KeyLimits = map[string]int{}
	}
	s.KeyLimits[key] = n
}

// scheduleSection holds the schedules: Schedules.<name>.<key>.
const scheduleSection = "Schedules"

// scheduleKeyDef is one key of a schedule's definition. Its name is the
// schedule.Schedule field it sets (schedule.DefinitionError names it).
type scheduleKeyDef struct {
	name string
	kind kind
	set  func(s *schedule.Schedule, v any)
}

// scheduleKeys is every key of a schedule. It is read-only.
var scheduleKeys = []scheduleKeyDef{
	{name: "Cron", kind: kindString, set: func(s *schedule.Schedule, v any) { s.Cron = v.(string) }},
	{name: "TimeZone", kind: kindString, set: func(s *schedule.Schedule, v any) { s.TimeZone = v.(string) }},
	{name: "Type", kind: kindString, set: func(s *schedule.Schedule, v any) { s.Job.Type = v.(string) }},
	{name: "Queue", kind: kindString, set: func(s *schedule.Schedule, v any) { s.Job.Queue = v.(string) }},
	{name: "Payload", kind: kindJSON, set: func(s *schedule.Schedule, v any) { s.Job.Payload = v.([]byte) }},
	{name: "Priority", kind: kindInt, set: func(s *schedule.Schedule, v any) { s.Job.Priority = v.(int) }},
	{name: "MaxAttempts", kind: kindInt, set: func(s *schedule.Schedule, v any) { s.Job.MaxAttempts = v.(int) }},
	{name: "MissedFire", kind: kindString, set: func(s *schedule.Schedule, v any) { s.MissedFire = schedule.MissedFire(strings.ToLower(v.(string))) }},
	{name: "CatchUpLimit", kind: kindInt, set: func(s *schedule.Schedule, v any) { s.CatchUpLimit = v.(int) }},
	{name: "Paused", kind: kindBool, set: func(s *schedule.Schedule, v any) { s.Paused = v.(bool) }},
}

func findScheduleKey(name string) *scheduleKeyDef {
	for i := range scheduleKeys {
		if strings.EqualFold(scheduleKeys[i].name, name) {
			return &scheduleKeys[i]
		}
	}
	return nil
}

func seconds(n int) *time.Duration { d := time.Duration(n) * time.Second; return &d }

// kindSection holds the policies per job kind: Kinds.<kind>.<key>
// (processor.KindPolicy, docs/design.md "Policy per kind"). Kind names are
// kept as written (they compare exactly), keys ignore case.
const kindSection = "Kinds"

// kindKeyDef is one key of a kind's policy.
type kindKeyDef struct {
	name string
	kind kind
	set  func(p *processor.KindPolicy, v any)
}

// backoff is p's Backoff, made on first use.
func backoff(p *processor.KindPolicy) *processor.RetryPolicy {
	if p.Backoff == nil {
		p.Backoff = &processor.RetryPolicy{}
	}
	return p.Backoff
}

// kindKeys is every key of a kind's policy. It is read-only.
var kindKeys = []kindKeyDef{
	{name: "Queue", kind: kindString, set: func(p *processor.KindPolicy, v any) { p.Queue = v.(string) }},
	{name: "Priority", kind: kindInt, set: func(p *processor.KindPolicy, v any) { p.Priority = v.(int) }},
	{name: "MaxAttempts", kind: kindInt, set: func(p *processor.KindPolicy, v any) { p.MaxAttempts = v.(int) }},
	{name: "Timeout", kind: kindDuration, set: func(p *processor.KindPolicy, v any) { p.Timeout = v.(time.Duration) }},
	{name: "ZombieRetries", kind: kindInt, set: func(p *processor.KindPolicy, v any) { p.ZombieRetryCap = v.(int) }},
	{name: "BackoffBaseDelay", kind: kindDuration, set: func(p *processor.KindPolicy, v any) { backoff(p).BaseDelay = v.(time.Duration) }},
	{name: "BackoffMaxDelay", kind: kindDuration, set: func(p *processor.KindPolicy, v any) { backoff(p).MaxDelay = v.(time.Duration) }},
	{name: "BackoffMultiplier", kind: kindFloat, set: func(p *processor.KindPolicy, v any) { backoff(p).BackoffMultiplier = v.(float64) }},
	{name: "BackoffJitterMaxDelay", kind: kindDuration, set: func(p *processor.KindPolicy, v any) { backoff(p).JitterMaxDelay = v.(time.Duration) }},
}

func findKindKey(name string) *kindKeyDef {
	for i := range kindKeys {
		if strings.EqualFold(kindKeys[i].name, name) {
			return &kindKeys[i]
		}
	}
	return nil
}

// sections are the keys that hold other keys.
var sections = []string{"Execution", "Retry", "Recovery", "Retention", queueSection, scheduleSection, kindSection}

func findKey(name string) *keyDef {
	for i := range keys {
		if strings.EqualFold(keys[i].name, name) {
			return &keys[i]
		}
	}
	return nil
}

func findQueueKey(name string) *queueKeyDef {
	for i := range queueKeys {
		if strings.EqualFold(queueKeys[i].name, name) {
			return &queueKeys[i]
		}
	}
	return nil
}

// target is what a key path names: a key, one setting of one queue, or
// one key of one schedule.
type target struct {
	key      *keyDef
	qkey     *queueKeyDef
	queue    string // as written; queue settings only
	flowKey  string // as written; a KeyLimits entry only
	skey     *scheduleKeyDef
	schedule string // as written; schedule keys only
	kkey     *kindKeyDef
	jobKind  string // as written; kind keys only
}

// match finds the key that path (relative to the ChokaQ section, segments
// as written) names. joinQueue rebuilds a queue name that the source's
// separator split, since queue names may contain '.' and '_'. On failure it
// returns the rule to report.
func match(path []string, joinQueue string) (target, string) {
	if len(path) == 0 {
		return target{}, "must be a section of keys, not a value"
	}
	if strings.EqualFold(path[0], queueSection) {
		switch len(path) {
		case 1:
			return target{}, "must be a section of queues, each a section of settings (e.g. ChokaQ.QueueSettings.default.MaxWorkers)"
		case 2:
			return target{}, "must be a section of settings (Paused, MaxWorkers, ZombieTimeoutSeconds, ExecutionTimeoutSeconds, " +
				"ArchiveRetention, DeadLetterRetention, MaxWorkersPerKey, KeyLimits, SequenceOnDeadLetter, Weight, RateLimit)"
		}
		last := path[len(path)-1]
		// QueueSettings.<queue>.KeyLimits.<key>: the concurrency key is the
		// last segment, as written, and the queue what lies between.
		if len(path) >= 4 && strings.EqualFold(path[len(path)-2], keyLimitsKey) {
			return target{qkey: findQueueKey(keyLimitsKey), queue: strings.Join(path[1:len(path)-2], joinQueue), flowKey: last}, ""
		}
		if q := findQueueKey(last); q != nil {
			if q.section {
				return target{}, "must be a section of concurrency keys, each with its cap (e.g. ChokaQ.QueueSettings.mail.KeyLimits.tenant-a: 2)"
			}
			return target{qkey: q, queue: strings.Join(path[1:len(path)-1], joinQueue)}, ""
		}
		return target{}, unknownRule(path)
	}
	if strings.EqualFold(path[0], scheduleSection) {
		switch len(path) {
		case 1:
			return target{}, "must be a section of schedules, each a section of keys (e.g. ChokaQ.Schedules.nightly.Cron)"
		case 2:
			return target{}, "must be a section of keys (Cron, TimeZone, Type, Queue, Payload, Priority, MaxAttempts, MissedFire, CatchUpLimit, Paused)"
		}
		last := path[len(path)-1]
		if k := findScheduleKey(last); k != nil {
			return target{skey: k, schedule: strings.Join(path[1:len(path)-1], joinQueue)}, ""
		}
		return target{}, unknownRule(path)
	}
	if strings.EqualFold(path[0], kindSection) {
		switch len(path) {
		case 1:
			return target{}, "must be a section of job kinds, each a section of keys (e.g. ChokaQ.Kinds.report.build.Timeout)"
		case 2:
			return target{}, "must be a section of keys (Queue, Priority, MaxAttempts, Timeout, ZombieRetries, BackoffBaseDelay, BackoffMaxDelay, BackoffMultiplier, BackoffJitterMaxDelay)"
		}
		last := path[len(path)-1]
		if k := findKindKey(last); k != nil {
			return target{kkey: k, jobKind: strings.Join(path[1:len(path)-1], joinQueue)}, ""
		}
		return target{}, unknownRule(path)
	}
	name := strings.Join(path, ".")
	if k := findKey(name); k != nil {
		return target{key: k}, ""
	}
	for _, s := range sections {
		if strings.EqualFold(s, name) {
			return target{}, "must be a section of keys, not a value"
		}
	}
	// A value where a key was expected: Execution.Concurrency.x.
	for i := 1; i < len(path); i++ {
		if k := findKey(strings.Join(path[:i], ".")); k != nil {
			return target{}, root + "." + k.name + " is a value, not a section"
		}
	}
	return target{}, unknownRule(path)
}

// unknownRule is "unknown key", with a suggestion when one is close.
func unknownRule(path []string) string {
	if s := suggest(path); s != "" {
		return "unknown key (did you mean " + s + "?)"
	}
	return "unknown key"
}

// suggest returns the known key closest to path, "" if none is close. A
// key whose last segment matches exactly (the right key in the wrong
// section) wins over edit distance.
func suggest(path []string) string {
	typed := strings.ToLower(strings.Join(path, "."))
	candidates := make([]string, 0, len(keys)+len(queueKeys))
	for _, k := range keys {
		candidates = append(candidates, k.name)
	}
	if len(path) >= 3 {
		q := strings.Join(path[1:len(path)-1], ".")
		for _, k := range queueKeys {
			candidates = append(candidates, queueSection+"."+q+"."+k.name)
		}
		for _, k := range scheduleKeys {
			candidates = append(candidates, scheduleSection+"."+q+"."+k.name)
		}
		for _, k := range kindKeys {
			candidates = append(candidates, kindSection+"."+q+"."+k.name)
		}
	}
	best, bestDist := "", -1
	for _, c := range candidates {
		d := distance(typed, strings.ToLower(c))
		// Close means at most a third of the key's length, and at least
		// one edit, so a short key still gets its one-typo suggestion.
		if d <= max(1, len(c)/3) && (bestDist < 0 || d < bestDist) {
			best, bestDist = c, d
		}
	}
	if best != "" {
		return root + "." + best
	}
	last := strings.ToLower(path[len(path)-1])
	for _, c := range candidates {
		if i := strings.LastIndexByte(c, '.'); strings.ToLower(c[i+1:]) == last {
			return root + "." + c
		}
	}
	return ""
}

// distance is the Levenshtein distance between a and b, in bytes; keys
// are ASCII.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
