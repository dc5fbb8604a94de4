package main

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	chokaq "github.com/chokaq/chokaq-go"
	"github.com/chokaq/chokaq-go/config"
	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/sqlserver"
)

func (a *app) doctorCommand() *cobra.Command {
	timeout := 2 * time.Minute
	c := &cobra.Command{
		Use:   "doctor",
		Short: "Check a SQL Server database before going live, with the service's own login (exit 0 all ok, 1 a check failed, 3 only warnings)",
		Long: `Checks, with the login of the connection string, that the database can run chokaq: the engine, its
edition and compatibility level; the options that change how the statements lock; the schema's version;
every right the store uses, by trying it; the round trip and the server's clock; then every worker and
operator statement once, in a private queue, inside one transaction that it rolls back; and the locks a
claim of 20 holds. It changes nothing that outlives it but one job ID taken from the sequence. Rescue is
not exercised. Run it with the service's login; docs/operations.md lists each check and its remedy.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if timeout <= 0 {
				return usage("--timeout %v: must be positive", timeout)
			}
			cfg, err := a.loadConfig()
			if err != nil {
				return err
			}
			if cfg.StorageKind() == config.StorageMemory {
				return errNeedsSQLServer
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			s, err := sqlserver.Open(ctx, cfg.ConnectionString, sqlserver.WithSchema(cfg.Schema), sqlserver.WithLogger(a.log))
			if err != nil {
				return err
			}
			defer s.Close()
			report := s.Doctor(ctx)
			report.Add(configurationCheck(ctx, s, cfg))
			if err := a.printDoctor(report); err != nil {
				return err
			}
			return doctorVerdict(report)
		},
	}
	c.Flags().DurationVar(&timeout, "timeout", timeout, "give up after this long (the doctor's transaction is rolled back)")
	return c
}

// configurationCheck holds this configuration to the queues' settings in
// the database (chokaq.CheckConfig): a zombie timeout an operator set on a
// queue must still be more than three of this configuration's heartbeats.
func configurationCheck(ctx context.Context, s jobs.Admin, cfg *config.Config) sqlserver.DoctorCheck {
	const name = "configuration"
	stored, err := s.Queues(ctx)
	if err != nil {
		return sqlserver.DoctorCheck{Name: name, Status: sqlserver.CheckWarning, Detail: "the queues' settings were not read: " + err.Error(),
			Remedy: "fix the failed checks above, then run the doctor again"}
	}
	queues := map[string]jobs.QueueUpdate{}
	for _, q := range stored {
		if q.ZombieTimeout > 0 {
			z := q.ZombieTimeout
			queues[q.Name] = jobs.QueueUpdate{ZombieTimeout: &z}
		}
	}
	// What the configuration sets is what a starting service writes.
	maps.Copy(queues, cfg.QueueUpdates())
	if err := chokaq.CheckConfig(cfg.ProcessorConfig(), cfg.RescueConfig(), queues); err != nil {
		return sqlserver.DoctorCheck{Name: name, Status: sqlserver.CheckFailed, Detail: err.Error(),
			Remedy: "change the setting named above: in appsettings.yaml, or a queue's with `chokaq queues set QUEUE --zombie-timeout ...`"}
	}
	return sqlserver.DoctorCheck{Name: name, Status: sqlserver.CheckOK,
		Detail: fmt.Sprintf("this configuration's heartbeats, releases and rescue timeouts fit each other and the %d queues the database has settings for", len(stored))}
}

// doctorVerdict is the exit status of a report: 1 when a check failed, 3
// when only warnings remain.
func doctorVerdict(r *sqlserver.DoctorReport) error {
	failed, warned := 0, 0
	for _, c := range r.Checks {
		switch c.Status {
		case sqlserver.CheckFailed:
			failed++
		case sqlserver.CheckWarning:
			warned++
		}
	}
	switch {
	case failed > 0:
		return fmt.Errorf("doctor: %d checks failed, %d warnings", failed, warned)
	case warned > 0:
		return &warningsError{fmt.Errorf("doctor: %d warnings, nothing failed", warned)}
	}
	return nil
}

// printDoctor writes the report: a table of the checks, each one that is
// not ok followed by its remedy, then what was not exercised; or JSON.
// Every text goes through the redaction of the connection string.
func (a *app) printDoctor(r *sqlserver.DoctorReport) error {
	checks := make([]sqlserver.DoctorCheck, len(r.Checks))
	for i, c := range r.Checks {
		c.Detail, c.Remedy = a.redact(c.Detail), a.redact(c.Remedy)
		checks[i] = c
	}
	out := struct {
		Status sqlserver.CheckStatus `json:"status"`
		sqlserver.DoctorReport
	}{r.Status(), sqlserver.DoctorReport{Schema: r.Schema, Checks: checks, NotExercised: r.NotExercised}}
	return a.print(out, func(w *tabwriter.Writer) {
		fmt.Fprintf(w, "STATUS\tCHECK\tDETAIL\n")
		for _, c := range checks {
			detail := c.Detail
			if c.ErrorNumber != 0 && !strings.Contains(detail, fmt.Sprint(c.ErrorNumber)) {
				detail += fmt.Sprintf(" (error %d)", c.ErrorNumber)
			}
			fmt.Fprintf(w, "%s\t%s\t%s\n", c.Status, c.Name, detail)
			if c.Status != sqlserver.CheckOK && c.Remedy != "" {
				fmt.Fprintf(w, "\t\t-> %s\n", c.Remedy)
			}
		}
		fmt.Fprintf(w, "\nNot exercised (schema %s):\n", r.Schema)
		for _, n := range r.NotExercised {
			fmt.Fprintf(w, "  %s: %s\n", n.Statements, n.Reason)
		}
		fmt.Fprintf(w, "\nResult: %s\n", out.Status)
	})
}
