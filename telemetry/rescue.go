package telemetry

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/zombie"
)

// depthSampleTimeout bounds one depth query; the sample runs on the rescue
// loop's goroutine, which must get on with the next sweep.
const depthSampleTimeout = 10 * time.Second

// OnRescue counts a job a rescue phase moved; it fits zombie.Config.OnRescue.
// Phase 2 returns a job of a kind with a zombie policy to Pending
// (chokaq.rescue.zombies_recovered, by queue and type: the alert rule
// ChokaQKindKeepsBeingRecovered watches it). Otherwise phases 2 and 3 move
// the job to the DLQ, so they also count
// chokaq.jobs.dead_lettered with the job's reason, and record how long the
// job went unnoticed: from its last sign of life to the rescue, both on the
// store's clock.
func (m *Metrics) OnRescue(phase zombie.Phase, r jobs.Rescued) {
	ctx := context.Background()
	attrs := m.jobAttrs(r.Queue, r.Type)
	with := metric.WithAttributeSet(attrs)
	switch phase {
	case zombie.PhaseFetched:
		m.rescueRecovered.Add(ctx, 1, with)
		return
	case zombie.PhaseZombie:
		if r.Recovered { // back to Pending under its kind's zombie policy
			m.zombiesRecovered.Add(ctx, 1, with)
			return
		}
		m.rescueArchived.Add(ctx, 1, with)
	case zombie.PhaseDeadline:
		m.rescueDeadline.Add(ctx, 1, with)
	default:
		return
	}
	withR := metric.WithAttributeSet(withReason(attrs, r.Reason))
	m.deadLettered.Add(ctx, 1, withR)
	if r.Reason == jobs.ReasonCancelled { // phase 3 of a job whose cancel was requested
		m.cancelled.Add(ctx, 1, with)
	}
	if !r.At.IsZero() && !r.LastSeen.IsZero() {
		m.detectionLatency.Record(ctx, seconds(r.At.Sub(r.LastSeen)), withR)
	}
}

// OnSweep counts a finished sweep by its result; it fits
// zombie.Config.OnSweep. A loop that stopped sweeping shows as this counter
// standing still.
func (m *Metrics) OnSweep(res zombie.Result, err error) {
	result := "ok"
	switch {
	case err != nil:
		result = "failed"
	case res.Skipped:
		result = "skipped"
	}
	m.sweeps.Add(context.Background(), 1, metric.WithAttributes(attribute.String(KeyResult, result)))
}

// SampleDepthsAfterSweep returns a zombie.Config.OnSweep hook that samples
// the depth of queues after every sweep this process ran, with
// store.QueueDepths capped at Options.DepthCap: a bounded query once per
// scan interval, whatever the backlog. A skipped sweep (another process
// leads the rescue) clears the sample, so only the leader reports depth and
// a fleet-wide max() is the queue's depth; a failed query clears it too,
// since an old number would look current. The same hook samples
// chokaq.jobs.waiting (sampleWaiting), under the same rules.
func (m *Metrics) SampleDepthsAfterSweep(store jobs.Admin, queues []string) func(zombie.Result, error) {
	queues = uniqueQueues(queues)
	return func(res zombie.Result, _ error) {
		if res.Skipped || len(queues) == 0 {
			m.depths.Store(nil)
			m.waiting.Store(nil)
			return
		}
		m.sampleWaiting(store, queues)
		ctx, cancel := context.WithTimeout(context.Background(), depthSampleTimeout)
		defer cancel()
		ds, err := store.QueueDepths(ctx, queues, m.depthCap)
		if err != nil {
			m.depths.Store(nil)
			m.log.Warn("queue depth sample failed; chokaq.queue.depth is not reported until the next sweep", zap.Error(err))
			return
		}
		m.depths.Store(m.newDepthSample(queues, ds))
	}
}

// sampleWaiting samples chokaq.jobs.waiting from store.QueueStats, which
// counts the jobs flow control holds back (ADR 0031). QueueStats is not
// capped as QueueDepths is; read once per scan interval, by the leader
// only, it costs less than the dashboard, which reads it on every view.
// The reason is key, sequence or rate_limit (a full rate-limit window,
// ADR 0033), never the key itself: keys are as many as tenants or orders,
// and would be unbounded labels.
func (m *Metrics) sampleWaiting(store jobs.Admin, queues []string) {
	// Its own timeout: a slow QueueStats must not cut the depth query short.
	ctx, cancel := context.WithTimeout(context.Background(), depthSampleTimeout)
	defer cancel()
	st, err := store.QueueStats(ctx)
	if err != nil {
		m.waiting.Store(nil)
		m.log.Warn("queue stats sample failed; chokaq.jobs.waiting is not reported until the next sweep", zap.Error(err))
		return
	}
	byQueue := make(map[string]jobs.QueueStats, len(st))
	for _, q := range st {
		byQueue[q.Queue] = q
	}
	var b sampleBuilder
	for _, q := range queues {
		label := m.queues.value(q)
		b.add(attribute.NewSet(attribute.String(KeyQueue, label), attribute.String(KeyReason, "key")), byQueue[q].WaitingOnKey)
		b.add(attribute.NewSet(attribute.String(KeyQueue, label), attribute.String(KeyReason, "sequence")), byQueue[q].WaitingOnSequence)
		b.add(attribute.NewSet(attribute.String(KeyQueue, label), attribute.String(KeyReason, "rate_limit")), byQueue[q].WaitingOnRate)
		b.add(attribute.NewSet(attribute.String(KeyQueue, label), attribute.String(KeyReason, "parents")), byQueue[q].WaitingOnParents)
	}
	m.waiting.Store(&b.s)
}

// InstrumentRescue returns cfg with OnRescue, OnSweep and depth sampling of
// queues hooked in, after any hooks the caller set.
func (m *Metrics) InstrumentRescue(cfg zombie.Config, store jobs.Admin, queues []string) zombie.Config {
	if user := cfg.OnRescue; user != nil {
		cfg.OnRescue = func(phase zombie.Phase, r jobs.Rescued) {
			user(phase, r)
			m.OnRescue(phase, r)
		}
	} else {
		cfg.OnRescue = m.OnRescue
	}
	sample := m.SampleDepthsAfterSweep(store, queues)
	user := cfg.OnSweep
	cfg.OnSweep = func(res zombie.Result, err error) {
		if user != nil {
			user(res, err)
		}
		m.OnSweep(res, err)
		sample(res, err)
	}
	return cfg
}

// depthSample is one reading of QueueDepths (chokaq.queue.depth) or of
// QueueStats (chokaq.jobs.waiting), as gauge points.
type depthSample struct {
	points []depthPoint
}

type depthPoint struct {
	attrs attribute.Set
	n     int64
}

// newDepthSample reports every sampled queue, zeros included, so a queue
// that drains shows 0 rather than vanishing.
func (m *Metrics) newDepthSample(queues []string, ds []jobs.QueueDepth) *depthSample {
	byQueue := make(map[string]jobs.QueueDepth, len(ds))
	for _, d := range ds {
		byQueue[d.Queue] = d
	}
	var b sampleBuilder
	for _, q := range queues {
		d := byQueue[q]
		label := m.queues.value(q)
		for _, st := range []struct {
			status string
			n      int64
		}{{"pending", d.Pending}, {"fetched", d.Fetched}, {"processing", d.Processing}} {
			b.add(attribute.NewSet(attribute.String(KeyQueue, label), attribute.String(KeyStatus, st.status)), st.n)
		}
	}
	return &b.s
}

// sampleBuilder collects a sample's points. Queues beyond the label cap
// all become Other: their counts are added up rather than one series
// reported twice.
type sampleBuilder struct {
	s     depthSample
	index map[attribute.Distinct]int
}

func (b *sampleBuilder) add(attrs attribute.Set, n int64) {
	if b.index == nil {
		b.index = map[attribute.Distinct]int{}
	}
	if i, ok := b.index[attrs.Equivalent()]; ok {
		b.s.points[i].n += n
		return
	}
	b.index[attrs.Equivalent()] = len(b.s.points)
	b.s.points = append(b.s.points, depthPoint{attrs: attrs, n: n})
}

func uniqueQueues(queues []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, q := range queues {
		if q != "" && !seen[q] {
			seen[q] = true
			out = append(out, q)
		}
	}
	return out
}
