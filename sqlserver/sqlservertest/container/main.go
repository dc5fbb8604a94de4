// Command container starts SQL Server in Docker for chokaq-go's tests, the
// way package sqlservertest asks for one when no DSN is configured: it
// prints "DSN <connection string>" on stdout once the server accepts logins,
// then keeps the container until its stdin closes, and removes it.
//
// It is a module of its own, so that testcontainers-go and the Docker client
// are no dependency of chokaq-go's.
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/modules/mssql"
)

// Image is the SQL Server image the tests run against.
const Image = "mcr.microsoft.com/mssql/server:2022-latest"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "container:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := dockerHealthy(ctx); err != nil {
		return fmt.Errorf("container: docker is not reachable: %w", err)
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	c, err := mssql.Run(ctx, Image, mssql.WithAcceptEULA(), mssql.WithPassword("Chokaq-"+hex.EncodeToString(b)+"!a1"))
	if err != nil {
		return fmt.Errorf("the %s container did not start: %w", Image, err)
	}
	defer func() { _ = testcontainers.TerminateContainer(c) }()
	dsn, err := c.ConnectionString(ctx)
	if err != nil {
		return fmt.Errorf("container connection string: %w", err)
	}
	fmt.Println("DSN " + dsn)
	// Keep the server until the tests are done with it.
	_, _ = io.Copy(io.Discard, bufio.NewReader(os.Stdin))
	return nil
}

// dockerHealthy asks the Docker engine for a health check, within seconds.
func dockerHealthy(ctx context.Context) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("docker provider: %v", r)
		}
	}()
	p, err := testcontainers.ProviderDocker.GetProvider()
	if err != nil {
		return err
	}
	defer p.Close()
	hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return p.Health(hctx)
}
