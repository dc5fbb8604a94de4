// Package schema owns chokaq-go's SQL Server schema: the embedded migrations,
// the rules for a schema name, and the check a store runs at start-up that
// the database is at the version this binary expects.
//
// Migrations run through golang-migrate with its iofs source. The schema name
// is configurable; it is validated as an identifier and substituted,
// bracket-quoted, into the migration text before golang-migrate sees it. The
// migrations table lives in the same schema, so two schemas in one database
// are independent. golang-migrate's sqlserver driver holds sp_getapplock
// while it migrates, so many processes may call Up at once.
package schema
