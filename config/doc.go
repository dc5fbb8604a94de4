// Package config owns chokaq's configuration: the ChokaQ section of
// appsettings.yaml, its per-environment overlay, CHOKAQ__ environment
// variables and programmatic overrides, merged in that order and validated
// as a whole before anything starts.
//
// It is the only place that knows the key names, their defaults (listed in
// docs/design.md (Configuration defaults)), the legacy aliases kept for
// configurations written for the .NET ChokaQ, and the accepted duration
// forms. Everything else takes the typed values through ProcessorConfig,
// RescueConfig and QueueUpdates.
//
// A mistake is never silently ignored: an unknown key, a value of the wrong
// type, a value out of range or two spellings of one setting that disagree
// all fail Load with an *Error naming the key, the value, where it came from
// and the rule it broke. The connection string's password never appears in
// an error or in String.
package config
