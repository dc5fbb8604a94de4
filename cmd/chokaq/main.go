// Command chokaq migrates, operates and demonstrates chokaq-go: migrations,
// enqueue, the dead-letter queue, queue controls, stats, rescue, and a
// one-command demo. Configuration comes from appsettings.yaml (see package
// config); `chokaq --help` lists the commands.
//
// Exit codes: 0 success, 1 runtime failure (server unreachable, a store
// error), 2 usage or configuration error (unknown command or flag, bad
// value, invalid appsettings, missing connection string).
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
