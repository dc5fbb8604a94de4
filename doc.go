// Package chokaq is the front door of chokaq-go, a job processor for Go
// services whose durable store is SQL Server: one Client that builds the
// store, the processor and the rescue loop from a Config, and everything a
// handler author needs, so a service embeds it with one import of this
// module besides its store.
//
// A job's kind is its arguments' type:
//
//	type WelcomeArgs struct{ Email string `json:"email"` }
//
//	func (WelcomeArgs) Kind() string { return "mail.welcome" }
//
//	reg := chokaq.NewRegistry()
//	chokaq.MustHandle(reg, func(ctx context.Context, job *chokaq.Job, a WelcomeArgs) error {
//		return sendWelcome(ctx, a.Email) // or chokaq.Permanent(err): no retry
//	})
//	client, err := chokaq.New(ctx, chokaq.Config{ConnectionString: dsn, Migrate: true}, reg)
//	...
//	err = client.Start(ctx)
//	defer client.Stop(context.Background())
//	client.Enqueue(ctx, WelcomeArgs{Email: "ada@example.com"}, nil)
//
// New refuses a Config that names no store (ErrNoStore); tests and demos
// pass Store: memstore.New(). The engine lives in packages processor
// (workers, heartbeats, outcomes) and zombie (rescue); the contract every
// store keeps is docs/design.md, checked by jobs/storetest.
package chokaq
