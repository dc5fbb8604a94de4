package chokaq

import "github.com/chokaq/chokaq-go/config"

// FromSettings turns loaded appsettings (package config) into a Config for
// New: storage, connection, processor, rescue and queue settings. Fields
// that appsettings do not cover (Store, Logger, Migrate, SingleRescuer) are
// left for the caller.
func FromSettings(s *config.Config) Config {
	c := Config{
		Schema:             s.Schema,
		Processor:          s.ProcessorConfig(),
		Rescue:             s.RescueConfig(),
		Queues:             s.QueueUpdates(),
		DefaultMaxAttempts: s.Retry.MaxAttempts,
	}
	if s.StorageKind() == config.StorageSQLServer {
		c.ConnectionString = s.ConnectionString
	}
	return c
}
