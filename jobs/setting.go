package jobs

import (
	"fmt"
	"strings"
)

// SettingError is a setting of a component's configuration (processor.Config,
// zombie.Config) that breaks a rule. The components' Validate methods and
// the checks between them (chokaq.CheckConfig) return it, so a caller that
// names the settings its own way (package config, with appsettings keys)
// can report the same rule in its own words: the rules exist once.
type SettingError struct {
	// Component is the configuration's package: "processor" or "zombie".
	Component string
	// Key is the setting's field path in that Config, e.g.
	// "HeartbeatIntervalMin" or "Retry.BaseDelay".
	Key   string
	Value any
	// Rule says what is wrong. It refers to other settings as
	// {component.Key}, rendered by Error as component.Key and by RuleWith
	// in the caller's words.
	Rule string
	// Other, for a rule between two settings, tells the same mistake from
	// the other setting's side ("must be >= HeartbeatIntervalMin" for "must
	// be <= HeartbeatIntervalMax"), for a caller that knows the user set
	// only the other one.
	Other *SettingError
}

// Error reads "processor: HeartbeatIntervalMin = 20s: must be <=
// processor.HeartbeatIntervalMax (12s)".
func (e *SettingError) Error() string {
	return fmt.Sprintf("%s: %s = %v: %s", e.Component, e.Key, e.Value,
		e.RuleWith(func(component, key string) string { return component + "." + key }))
}

// Unwrap makes every SettingError an ErrInvalidArgument.
func (e *SettingError) Unwrap() error { return ErrInvalidArgument }

// RuleWith renders Rule with each {component.Key} reference named by name.
func (e *SettingError) RuleWith(name func(component, key string) string) string {
	var b strings.Builder
	r := e.Rule
	for {
		i := strings.IndexByte(r, '{')
		j := strings.IndexByte(r, '}')
		if i < 0 || j < i {
			b.WriteString(r)
			return b.String()
		}
		b.WriteString(r[:i])
		ref := r[i+1 : j]
		if c, k, ok := strings.Cut(ref, "."); ok {
			b.WriteString(name(c, k))
		} else {
			b.WriteString(ref)
		}
		r = r[j+1:]
	}
}
