package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/chokaq/chokaq-go/jobs"
)

func (a *app) enqueueCommand() *cobra.Command {
	var (
		p                    jobs.EnqueueParams
		payload, payloadFile string
		runAt                string
	)
	c := &cobra.Command{
		Use:   "enqueue --type TYPE [--payload JSON | --payload-file FILE|-]",
		Short: "Enqueue one job; the payload is JSON from an argument, a file or stdin (-)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if p.Type == "" {
				return usage("--type is required")
			}
			body, err := a.readPayload(payload, payloadFile, cmd.Flags().Changed("payload"))
			if err != nil {
				return err
			}
			p.Payload = body
			if runAt != "" {
				t, err := time.Parse(time.RFC3339, runAt)
				if err != nil {
					return usage("--run-at %q: want RFC 3339, e.g. 2026-12-01T08:00:00Z", runAt)
				}
				p.RunAt = t
			}
			cfg, err := a.loadConfig()
			if err != nil {
				return err
			}
			if p.MaxAttempts == 0 {
				p.MaxAttempts = cfg.Retry.MaxAttempts
			}
			s, err := a.openStore(cmd.Context(), false)
			if err != nil {
				return err
			}
			r, err := s.Enqueue(cmd.Context(), p)
			if err != nil {
				return err
			}
			if cfg.StorageKind() == "memory" {
				fmt.Fprintln(a.stderr, "note: in-memory store; the job lives only as long as this command (set a connection string for SQL Server)")
			}
			return a.print(r, func(w *tabwriter.Writer) {
				if r.Duplicate {
					fmt.Fprintf(w, "job %d already active with idempotency key %q (nothing enqueued)\n", r.ID, p.IdempotencyKey)
					return
				}
				fmt.Fprintf(w, "enqueued job %d (queue %s, type %s)\n", r.ID, orDefault(p.Queue, jobs.DefaultQueue), p.Type)
			})
		},
	}
	f := c.Flags()
	f.StringVar(&p.Type, "type", "", "job type (selects the handler); required")
	f.StringVar(&p.Queue, "queue", "", "queue (default \"default\")")
	f.StringVar(&payload, "payload", "", "JSON payload")
	f.StringVar(&payloadFile, "payload-file", "", "read the JSON payload from a file, or from stdin with -")
	f.IntVar(&p.Priority, "priority", 0, "priority, higher runs first (-1000 to 1000)")
	f.DurationVar(&p.Delay, "delay", 0, "run after this delay, e.g. 30s or 2h")
	f.StringVar(&runAt, "run-at", "", "run at this instant (RFC 3339)")
	f.StringVar(&p.IdempotencyKey, "key", "", "idempotency key: a second enqueue while the first is active returns its ID")
	f.IntVar(&p.MaxAttempts, "max-attempts", 0, "executions allowed (default Retry.MaxAttempts)")
	f.StringArrayVar(&p.Tags, "tag", nil, "tag (repeatable)")
	f.StringVar(&p.CreatedBy, "created-by", "chokaq-cli", "who enqueued it")
	return c
}

// readPayload takes the payload from --payload, --payload-file or stdin
// (--payload-file -) and insists it is JSON.
func (a *app) readPayload(inline, file string, inlineSet bool) ([]byte, error) {
	var body []byte
	var from string
	switch {
	case inlineSet && file != "":
		return nil, usage("set --payload or --payload-file, not both")
	case inlineSet:
		body, from = []byte(inline), "--payload"
	case file == "-":
		b, err := io.ReadAll(io.LimitReader(a.input(), jobs.DefaultMaxPayloadBytes+1))
		if err != nil {
			return nil, fmt.Errorf("read payload from stdin: %w", err)
		}
		body, from = b, "stdin"
	case file != "":
		f, err := os.Open(file)
		if err != nil {
			return nil, usage("--payload-file: %v", err)
		}
		b, err := io.ReadAll(io.LimitReader(f, jobs.DefaultMaxPayloadBytes+1))
		f.Close()
		if err != nil {
			return nil, usage("--payload-file: %v", err)
		}
		body, from = b, file
	default:
		return nil, nil
	}
	// The size first: a payload cut off at the limit is not valid JSON
	// either, and that would be the wrong thing to say about it.
	if len(body) > jobs.DefaultMaxPayloadBytes {
		return nil, usage("payload from %s: must be at most %d bytes", from, jobs.DefaultMaxPayloadBytes)
	}
	if !json.Valid(body) {
		var v any
		err := json.Unmarshal(body, &v)
		return nil, usage("payload from %s is not valid JSON: %v", from, err)
	}
	return body, nil
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
