package main

import (
	"errors"
	"fmt"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/chokaq/chokaq-go/config"
	"github.com/chokaq/chokaq-go/internal/redact"
	"github.com/chokaq/chokaq-go/schema"
	"github.com/chokaq/chokaq-go/sqlserver"
)

func (a *app) migrateCommand() *cobra.Command {
	c := &cobra.Command{Use: "migrate", Short: "Create or upgrade the SQL Server schema", Args: cobra.NoArgs}
	// dsn loads the configuration and insists on SQL Server.
	dsn := func() (*config.Config, error) {
		cfg, err := a.loadConfig()
		if err != nil {
			return nil, err
		}
		if cfg.StorageKind() == config.StorageMemory {
			return nil, errNeedsSQLServer
		}
		return cfg, nil
	}
	c.AddCommand(&cobra.Command{
		Use:   "up",
		Short: "Migrate the schema to the version this binary expects (safe to run from many processes)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := dsn()
			if err != nil {
				return err
			}
			if err := a.migrate(cmd.Context(), cfg); err != nil {
				return err
			}
			a.say("schema %s is at version %d", cfg.Schema, schema.Latest())
			return nil
		},
	}, &cobra.Command{
		Use:   "down",
		Short: "Run every down migration (drops the job tables; the schema and its migrations table remain)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := dsn()
			if err != nil {
				return err
			}
			cs, name := cfg.ConnectionString, cfg.Schema
			if err := schema.Down(cmd.Context(), cs, name); err != nil {
				return fmt.Errorf("migrate down: %w", redact.Error(err, cs))
			}
			a.say("schema %s migrated down", name)
			return nil
		},
	}, &cobra.Command{
		Use:   "status",
		Short: "Show the recorded schema version and whether it is what this binary expects",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := dsn()
			if err != nil {
				return err
			}
			cs, name := cfg.ConnectionString, cfg.Schema
			s, err := sqlserver.Open(cmd.Context(), cs, sqlserver.WithSchema(name))
			if err != nil {
				return err
			}
			defer s.Close()
			v, dirty, err := schema.Status(cmd.Context(), s.DB(), name)
			if err != nil && !errors.Is(err, schema.ErrNotMigrated) {
				return err
			}
			state := "up to date"
			if cerr := schemaState(v, dirty, err); cerr != "" {
				state = cerr
			}
			out := struct {
				Schema   string `json:"schema"`
				Version  uint   `json:"version"`
				Dirty    bool   `json:"dirty"`
				Expected uint   `json:"expected"`
				State    string `json:"state"`
			}{name, v, dirty, schema.Latest(), state}
			return a.print(out, func(w *tabwriter.Writer) {
				fmt.Fprintf(w, "schema\t%s\nversion\t%d\ndirty\t%v\nexpected\t%d\nstate\t%s\n", name, v, dirty, schema.Latest(), state)
			})
		},
	}, &cobra.Command{
		Use:   "force VERSION",
		Short: "Record VERSION as clean without running anything (after repairing a dirty migration by hand)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			v, err := strconv.Atoi(args[0])
			if err != nil || v < 0 {
				return usage("VERSION %q: want a non-negative integer", args[0])
			}
			cfg, err := dsn()
			if err != nil {
				return err
			}
			cs, name := cfg.ConnectionString, cfg.Schema
			if err := schema.Force(cmd.Context(), cs, name, v); err != nil {
				return fmt.Errorf("migrate force: %w", redact.Error(err, cs))
			}
			a.say("schema %s recorded at version %d", name, v)
			return nil
		},
	})
	return c
}

func schemaState(v uint, dirty bool, statusErr error) string {
	switch {
	case statusErr != nil:
		return "not migrated (run chokaq migrate up)"
	case dirty:
		return "dirty: a migration failed part way"
	case v < schema.Latest():
		return "outdated (run chokaq migrate up)"
	case v > schema.Latest():
		return "newer than this binary"
	}
	return ""
}
