// Command chokaq migrates, checks, operates and demonstrates chokaq-go:
// migrations, a check of a database before going live (doctor), enqueue,
// the dead-letter queue, queue controls, stats, rescue, and a one-command
// demo. Configuration comes from appsettings.yaml (see package
// config); `chokaq --help` lists the commands.
//
// Exit codes: 0 success, 1 runtime failure (server unreachable, a store
// error, a failed check of `chokaq doctor`), 2 usage or configuration error
// (unknown command or flag, bad value, invalid appsettings, missing
// connection string, a command that needs SQL Server on the in-memory
// store), 3 nothing found (a job named, a filter's jobs) or, for
// `chokaq doctor`, warnings and nothing failed.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Environ())
	stop()
	os.Exit(code)
}
