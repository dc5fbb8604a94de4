package processor

import (
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/chokaq/chokaq-go/jobs"
)

// jobLogger logs with a job's fields (job_id, queue, type, lease). It adds
// them only to lines that are written: most jobs log nothing at the
// default level, and building a zap child logger per job would cost
// allocations on every job.
type jobLogger struct {
	base *zap.Logger
	job  *jobs.Job
}

func (l jobLogger) log(level zapcore.Level, msg string, fields []zap.Field) {
	if ce := l.base.Check(level, msg); ce != nil {
		// A new slice, so that fields (the caller's variadic array) never
		// escapes: a line that is not written then allocates nothing.
		all := make([]zap.Field, 0, len(fields)+4)
		ce.Write(append(append(all, fields...),
			zap.Int64("job_id", l.job.ID), zap.String("queue", l.job.Queue),
			zap.String("type", l.job.Type), zap.Int64("lease", l.job.Lease))...)
	}
}

func (l jobLogger) Debug(msg string, fields ...zap.Field) { l.log(zapcore.DebugLevel, msg, fields) }
func (l jobLogger) Info(msg string, fields ...zap.Field)  { l.log(zapcore.InfoLevel, msg, fields) }
func (l jobLogger) Warn(msg string, fields ...zap.Field)  { l.log(zapcore.WarnLevel, msg, fields) }
func (l jobLogger) Error(msg string, fields ...zap.Field) { l.log(zapcore.ErrorLevel, msg, fields) }
