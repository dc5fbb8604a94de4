// Package chokaqtest helps application authors test their jobs without a
// database: Worker runs one job at a time through the real processor (its
// decoding, panic recovery, retry and dead-letter rules) over an in-memory
// store whose clock moves only when told, and RequireEnqueued asserts what a
// piece of code enqueued, by kind, queue and arguments.
//
// It imports package testing, so import it from _test.go files only.
package chokaqtest
