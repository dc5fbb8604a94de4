// Package sqlserver is the production jobs.Store on Microsoft SQL Server
// (2019, 2022 and Azure SQL), through github.com/microsoft/go-mssqldb.
//
// Every T-SQL statement is in queries.go. The store owns only SQL and the
// mechanics of talking to the server: retries of transient errors, table-
// valued parameters, scanning rows. Policy (when to retry a job, when to
// rescue) belongs to the processor and zombie packages.
//
// Run the migrations in package schema before using a Store; CheckSchema
// confirms the database is at the version this binary expects.
package sqlserver
