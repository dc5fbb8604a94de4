package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/retention"
	"github.com/chokaq/chokaq-go/schedule"
)

// OnRetentionDelete counts jobs the retention loop deleted; it fits
// retention.Config.OnDelete.
func (m *Metrics) OnRetentionDelete(table jobs.Table, queue string, n int) {
	if n <= 0 {
		return
	}
	m.retentionDeleted.Add(context.Background(), int64(n), metric.WithAttributes(
		attribute.String(KeyTable, table.String()), attribute.String(KeyQueue, m.queues.value(queue))))
}

// OnScheduleFire counts a tick fired; it fits schedule.Config.OnFire.
func (m *Metrics) OnScheduleFire(f schedule.Fire) {
	m.scheduleFired.Add(context.Background(), 1, metric.WithAttributes(attribute.String(KeySchedule, m.schedules.value(f.Schedule))))
}

// InstrumentRetention returns cfg with OnDelete hooked in, after any hook
// the caller set.
func (m *Metrics) InstrumentRetention(cfg retention.Config) retention.Config {
	user := cfg.OnDelete
	cfg.OnDelete = func(table jobs.Table, queue string, n int) {
		if user != nil {
			user(table, queue, n)
		}
		m.OnRetentionDelete(table, queue, n)
	}
	return cfg
}

// InstrumentSchedules returns cfg with OnFire hooked in, after any hook the
// caller set.
func (m *Metrics) InstrumentSchedules(cfg schedule.Config) schedule.Config {
	user := cfg.OnFire
	cfg.OnFire = func(f schedule.Fire) {
		if user != nil {
			user(f)
		}
		m.OnScheduleFire(f)
	}
	return cfg
}
