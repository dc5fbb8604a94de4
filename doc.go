// Package chokaq is the front door of chokaq-go: one Client that builds the
// store, the processor and the rescue loop from a Config, so a Go service
// embeds a SQL Server-backed job system in a few lines.
//
//	reg := processor.NewRegistry()
//	processor.HandleJSON(reg, "mail.send", sendMail)
//	client, err := chokaq.New(ctx, chokaq.Config{ConnectionString: dsn, Migrate: true}, reg)
//	if err := client.Start(ctx); err != nil { ... }
//	defer client.Stop(context.Background())
//	client.Enqueue(ctx, jobs.EnqueueParams{Type: "mail.send", Payload: body})
//
// Without a connection string the Client runs on the in-memory store, which
// is what demos and tests want.
package chokaq
