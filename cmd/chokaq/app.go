package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/chokaq/chokaq-go/config"
	"github.com/chokaq/chokaq-go/internal/redact"
	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/memstore"
	"github.com/chokaq/chokaq-go/schema"
	"github.com/chokaq/chokaq-go/sqlserver"
)

// Exit codes.
const (
	exitOK      = 0
	exitRuntime = 1
	exitUsage   = 2
	// exitNotFound: the job named, or every job a filter could select,
	// does not exist; nothing changed.
	exitNotFound = 3
	// exitWarnings: chokaq doctor found warnings and nothing failed.
	exitWarnings = 3
)

// usageError marks an error that is the caller's input, not the system's.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usage(format string, args ...any) error { return &usageError{fmt.Errorf(format, args...)} }

// notFoundError: what the command was asked to show or change does not
// exist (exit 3).
type notFoundError struct{ err error }

func (e *notFoundError) Error() string { return e.err.Error() }
func (e *notFoundError) Unwrap() error { return e.err }

func notFound(format string, args ...any) error { return &notFoundError{fmt.Errorf(format, args...)} }

// warningsError: nothing failed, but something deserves a look (exit 3).
type warningsError struct{ err error }

func (e *warningsError) Error() string { return e.err.Error() }
func (e *warningsError) Unwrap() error { return e.err }

// errNeedsSQLServer: the command needs a database and none is configured.
var errNeedsSQLServer = errors.New("this command needs SQL Server: set ChokaQ.ConnectionString in appsettings.yaml, " +
	"the CHOKAQ__CONNECTIONSTRING environment variable, or --connection-string")

// app is one invocation of the command.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	env            []string

	// Global flags.
	configDir, configFile, environment string
	sets                               []string
	connectionString, schemaName       string
	output                             string
	logLevel                           string

	cfg *config.Config
	log *zap.Logger
	// in reads stdin line by line across questions (a bulk action may ask
	// twice); nil until the first question.
	in *bufio.Reader
	// newMemStore makes the store of a memory-backed command; tests share one.
	newMemStore func() jobs.Store
	// closers run when the command ends (the stores it opened).
	closers []func()
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, env []string) int {
	return runWith(ctx, args, stdin, stdout, stderr, env, func() jobs.Store { return memstore.New() })
}

// runWith is run with the in-memory store chosen by the caller, so tests
// can look at one store across several commands.
func runWith(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, env []string, newMemStore func() jobs.Store) int {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr, env: env, newMemStore: newMemStore}
	return a.execute(ctx, args)
}

func (a *app) execute(ctx context.Context, args []string) int {
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	err := root.ExecuteContext(ctx)
	for i := len(a.closers) - 1; i >= 0; i-- {
		a.closers[i]()
	}
	if a.log != nil {
		_ = a.log.Sync()
	}
	if err != nil {
		fmt.Fprintln(a.stderr, "chokaq: "+a.redact(err.Error()))
	}
	return a.exitCode(err)
}

// exitCode maps a command's error to the process's exit code, in one place.
func (a *app) exitCode(err error) int {
	switch {
	case err == nil:
		return exitOK
	case isUsage(err):
		return exitUsage
	}
	if _, ok := errors.AsType[*notFoundError](err); ok {
		return exitNotFound
	}
	if _, ok := errors.AsType[*warningsError](err); ok {
		return exitWarnings
	}
	return exitRuntime
}

func isUsage(err error) bool {
	var ue *usageError
	return errors.As(err, &ue) || errors.Is(err, config.ErrInvalid) || errors.Is(err, config.ErrSyntax) ||
		errors.Is(err, errNeedsSQLServer) || errors.Is(err, jobs.ErrWorkflowsUnsupported) || errors.Is(err, jobs.ErrInvalidArgument) ||
		errors.Is(err, jobs.ErrEmptyFilter) || errors.Is(err, schema.ErrInvalidName) ||
		errors.Is(err, sqlserver.ErrInvalidDSN) || errors.Is(err, schema.ErrInvalidDSN)
}

// redact removes the connection string's password from text that reaches
// the terminal, whatever produced it.
func (a *app) redact(s string) string {
	cs := a.connectionString
	if a.cfg != nil && a.cfg.ConnectionString != "" {
		cs = a.cfg.ConnectionString
	}
	return redact.Text(s, cs)
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "chokaq",
		Short:         "Operate chokaq-go: migrations, a database check, jobs, dead letters, queues, rescue, demo",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	f := root.PersistentFlags()
	f.StringVar(&a.configDir, "config-dir", ".", "directory of appsettings.yaml")
	f.StringVar(&a.configFile, "config", "", "explicit appsettings file (must exist)")
	f.StringVar(&a.environment, "environment", "", "environment overlay: appsettings.<environment>.yaml (default $CHOKAQ_ENVIRONMENT)")
	f.StringArrayVar(&a.sets, "set", nil, "override a setting, e.g. --set Execution.Concurrency=4 (repeatable)")
	f.StringVar(&a.connectionString, "connection-string", "", "SQL Server connection string (overrides ChokaQ.ConnectionString)")
	f.StringVar(&a.schemaName, "schema", "", "SQL Server schema (overrides ChokaQ.Schema)")
	f.StringVarP(&a.output, "output", "o", "table", "output format: table or json")
	f.StringVar(&a.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return &usageError{err} })
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		if a.output != "table" && a.output != "json" {
			return usage("--output %q: must be table or json", a.output)
		}
		var lvl zapcore.Level
		if err := lvl.UnmarshalText([]byte(a.logLevel)); err != nil {
			return usage("--log-level %q: must be debug, info, warn or error", a.logLevel)
		}
		enc := zap.NewDevelopmentEncoderConfig()
		enc.EncodeTime = zapcore.TimeEncoderOfLayout("15:04:05.000")
		a.log = zap.New(zapcore.NewCore(zapcore.NewConsoleEncoder(enc), zapcore.AddSync(a.stderr), lvl))
		return nil
	}
	root.AddCommand(a.versionCommand(), a.migrateCommand(), a.doctorCommand(), a.enqueueCommand(), a.dlqCommand(), a.jobsCommand(), a.queuesCommand(), a.schedulesCommand(),
		a.statsCommand(), a.rescueCommand(), a.demoCommand(), a.configCommand())
	root.AddCommand(a.dashboardCommand())
	root.AddCommand(a.serveMetricsCommand())
	root.AddCommand(a.workflowsCommand())
	// Unknown subcommands and wrong argument counts are usage errors too.
	markUsage(root)
	return root
}

// markUsage makes argument-count errors of a command tree usage errors,
// and an unknown subcommand one at every level: a command that only groups
// others runs, so that cobra checks its arguments instead of printing help
// and exiting 0 for a mistyped `chokaq dlq resurect 5`.
func markUsage(c *cobra.Command) {
	if c.HasSubCommands() {
		if c.Run == nil && c.RunE == nil {
			c.RunE = func(cmd *cobra.Command, args []string) error { return cmd.Help() }
		}
		c.Args = unknownSubcommand
		c.SuggestionsMinimumDistance = 2 // cobra's default, which it sets only for the root
	}
	if c.Args != nil {
		check := c.Args
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := check(cmd, args); err != nil {
				return &usageError{err}
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		markUsage(sub)
	}
}

// unknownSubcommand refuses any argument of a command that only groups
// others: it can only be a subcommand that does not exist.
func unknownSubcommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += fmt.Sprintf("; did you mean %q?", strings.Join(s, `" or "`))
	}
	return usage("%s (%s --help lists the commands)", msg, cmd.CommandPath())
}

// loadConfig reads appsettings and applies the global flags over it.
func (a *app) loadConfig() (*config.Config, error) {
	if a.cfg != nil {
		return a.cfg, nil
	}
	overrides := map[string]string{}
	for _, s := range a.sets {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return nil, usage("--set %q: want Key=Value, e.g. Execution.Concurrency=4", s)
		}
		overrides[k] = v
	}
	if a.connectionString != "" {
		overrides["ConnectionString"] = a.connectionString
	}
	if a.schemaName != "" {
		overrides["Schema"] = a.schemaName
	}
	cfg, err := config.Load(config.Options{Dir: a.configDir, File: a.configFile, Environment: a.environment, Env: a.env, Overrides: overrides})
	if errors.Is(err, fs.ErrNotExist) {
		// A --config file or an environment overlay that is not there is
		// the operator's configuration, not a failure of the system.
		return nil, &usageError{err}
	}
	if err != nil {
		return nil, err
	}
	a.cfg = cfg
	return cfg, nil
}

// openStore opens the configured store; the command closes it when it
// ends. needSQL refuses the in-memory store for commands that make no sense
// without a database.
func (a *app) openStore(ctx context.Context, needSQL bool) (jobs.Store, error) {
	cfg, err := a.loadConfig()
	if err != nil {
		return nil, err
	}
	if cfg.StorageKind() == config.StorageMemory {
		if needSQL {
			return nil, errNeedsSQLServer
		}
		return a.newMemStore(), nil
	}
	s, err := sqlserver.Open(ctx, cfg.ConnectionString, sqlserver.WithSchema(cfg.Schema), sqlserver.WithLogger(a.log))
	if err != nil {
		return nil, err
	}
	if err := s.CheckSchema(ctx); err != nil {
		s.Close()
		return nil, err
	}
	a.closers = append(a.closers, func() { s.Close() })
	return s, nil
}

// openAdmin opens the configured store in its operator role, all that the
// dlq, queues and stats commands may do with it: they cannot claim or
// settle a job by mistake.
func (a *app) openAdmin(ctx context.Context) (jobs.Admin, error) {
	s, err := a.openStore(ctx, false)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// migrate runs the schema migrations of the configured SQL Server.
func (a *app) migrate(ctx context.Context, cfg *config.Config) error {
	if err := schema.Up(ctx, cfg.ConnectionString, cfg.Schema); err != nil {
		return fmt.Errorf("migrate up: %w", redact.Error(err, cfg.ConnectionString))
	}
	return nil
}

// input is stdin, buffered once for every question the command asks.
func (a *app) input() *bufio.Reader {
	if a.in == nil {
		a.in = bufio.NewReader(a.stdin)
	}
	return a.in
}

// print writes v as JSON, or calls table to write a human table.
func (a *app) print(v any, table func(w *tabwriter.Writer)) error {
	if a.output == "json" {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	table(w)
	return w.Flush()
}

// say prints a human line; in JSON mode human lines go to stderr so stdout
// stays machine-readable.
func (a *app) say(format string, args ...any) {
	out := a.stdout
	if a.output == "json" {
		out = a.stderr
	}
	fmt.Fprintf(out, format+"\n", args...)
}
