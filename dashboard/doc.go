// Package dashboard is the operations dashboard of chokaq-go: a web UI over
// any jobs.Store that shows what is queued, what is stuck and what died and
// why, and brings dead letters back with one click and a safety catch.
//
// A *Dashboard is an http.Handler. `chokaq dashboard` serves it on its own,
// and a service can mount it inside its own mux:
//
//	dash, err := dashboard.New(store, dashboard.Options{BasePath: "/jobs", Logger: log})
//	if err != nil { ... }
//	defer dash.Close()
//	mux.Handle("/jobs/", dash) // no http.StripPrefix: the dashboard strips BasePath itself
//
// Pages are rendered on the server with html/template (so payloads are
// escaped) and use a little plain JavaScript from embedded files: there is
// no front-end build. Counts and a console of events stream over
// Server-Sent Events from {BasePath}/events. The console shows what Publish
// is given (hang OnSweep on zombie.Config.OnSweep to see rescue sweeps),
// every action taken in the dashboard, and dead-letter arrivals, which the
// dashboard finds by polling the store, so they show up even when jobs die
// in another process.
//
// The overview and each queue's page ({BasePath}/queue/{name}) draw charts
// as inline SVG, on the server, without a charting library: a live chart
// of the jobs that succeeded and that were dead-lettered per second over
// the last 5 minutes, updated over the event stream, and a history per
// hour (48 hours) or per day (14 days) with dead letters by reason, read
// at most once a minute for every viewer. Both count the store's finish
// instants, so they show the whole fleet's work; they need a store that
// implements jobs.FinishedCounter, and say so when it does not. The
// overview's queue table has a sparkline of each queue's lag over the
// recent polls.
//
// The Schedules page lists the recurring jobs the store records (package
// schedule): each one's cron and zone, job, missed-fire policy, next fire
// (overdue or paused) and last fire, on the store's clock, with pause,
// resume and trigger. The Queues page shows and edits each queue's
// retention beside its other settings; set Options.Retention to show the
// global value a queue without its own falls back on.
//
// The Workflows page lists the workflows (ADR 0034) with their state and
// progress, newest first; a workflow's page ({BasePath}/workflow/{id})
// draws its tasks as inline SVG, in columns by depth and colored by state,
// each linked to its job, beside a table of the same, and cancels it. Past
// 500 tasks it shows a summary by state instead of the drawing. They need
// a store that implements jobs.WorkflowAdmin, and say so when it does not.
//
// Every action is a POST that carries a CSRF token bound to the login;
// bulk actions show how many rows they will touch, want that number typed
// back, and then touch exactly those rows; ReadOnly hides and refuses them
// all. Options.Auth guards the whole dashboard with a bearer token (or a
// login form that opens a server-side session) and/or HTTP basic
// credentials. Failed attempts are counted per client address: after 10,
// each failure makes that client wait before its next attempt is checked,
// 1s and doubling to at most 5 minutes, so guessing is slow but the right
// secret still gets in once the wait is over, and an open login session
// is never held up (see Auth). Behind a reverse proxy, set
// Options.TrustedProxyHeader and Options.TrustedProxies so each client is
// counted by its own address rather than the proxy's. RequireAuth puts
// the same guard on handlers served beside it, such as metrics.
// CheckListen refuses to serve on a non-loopback address without
// credentials, or with short ones.
//
// A service that embeds the dashboard decides where it listens, so
// CheckListen is not consulted there: the service must protect the
// dashboard itself, or set Options.Auth. Without Auth the dashboard serves
// only clients connecting from loopback that name it by a loopback Host
// (localhost, 127.0.0.1, [::1]), which also defeats DNS rebinding. Behind
// the service's own authentication middleware, set Options.AllowedHosts to
// the names it is reached by, or to "*" to accept any; behind a
// TLS-terminating proxy, set Options.SecureCookies.
package dashboard
