// Package retention owns how long finished jobs are kept: a loop, run by
// the elected leader, that deletes archived and dead-lettered jobs older
// than their queue's retention (jobs.QueueSettings), else the global one
// (7 days for the archive, 30 for dead letters), oldest first, in bounded
// deletes with a pause between them. Without it the archive and the
// dead-letter queue grow until someone purges them by hand.
//
// It deletes through jobs.Admin.Trim, queue by queue, each step continuing
// after the last job the step before deleted, so on SQL Server each delete
// seeks the queue's (Queue, FinishedAtUtc) index at that key and reads about
// as many rows as it deletes, not the ghosts of the rows deleted before. The decisions are in
// docs/adr/0020-schedules-and-retention.md.
package retention
