package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/retention"
)

// Rules for values of the wrong type. Each names the accepted forms, so
// the message alone says how to fix the value.
const (
	ruleInt          = "must be a whole number"
	ruleFloat        = "must be a number"
	ruleBool         = "must be true or false"
	ruleString       = "must be a single value, not a list or a section"
	ruleTimestamp    = "is read by YAML as a timestamp; quote it to use it as text"
	ruleDuration     = "must be a duration such as 90s, 1m30s, 7d or 00:01:30"
	ruleRetention    = "must be a duration such as 7d, 36h or 7.00:00:00, or 0 (or forever) to keep forever"
	ruleQueueRetain  = "must be a duration such as 7d, 36h or 7.00:00:00, 0 (or forever) to keep forever, or default for Retention's"
	ruleJSON         = "must be JSON: a YAML mapping or list, or a string holding JSON"
	rulePlainNumber  = "a plain number has no unit: write a duration such as 90s or 00:01:30 (only keys ending in Seconds read a plain number as seconds)"
	ruleSeconds      = "must be a number of seconds or a duration such as 90s or 00:01:30"
	ruleWholeSeconds = "must be whole seconds, such as 90, 90s or 00:01:30"
	ruleQueues       = "must be a list of queue names or a comma-separated string"
	ruleSequence     = "must be continue or hold"
	ruleRateLimit    = `must be "N/window", as "100/1m" or "20/s", or "none"`
)

// parse reads a raw value as kind k. Values from YAML arrive as string,
// int, float64, bool, []any or map[string]any; values from the
// environment and overrides as string. On failure it returns the rule.
func parse(k kind, raw any) (any, string) {
	switch k {
	case kindString:
		switch v := raw.(type) {
		case string:
			return v, ""
		case int, int64, uint64, float64, bool:
			// YAML reads WorkerId: 42 as a number; it is still a name.
			return fmt.Sprint(v), ""
		case time.Time:
			return nil, ruleTimestamp
		}
		return nil, ruleString
	case kindInt:
		if n, ok := toInt(raw); ok {
			return n, ""
		}
		return nil, ruleInt
	case kindFloat:
		switch v := raw.(type) {
		case int:
			return float64(v), ""
		case float64:
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				return v, ""
			}
		case string:
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
				return f, ""
			}
		}
		return nil, ruleFloat
	case kindBool:
		switch v := raw.(type) {
		case bool:
			return v, ""
		case string:
			// Only true and false, as .NET's binder: YAML 1.1's yes, no, on
			// and off are too easy to write by accident.
			switch strings.ToLower(strings.TrimSpace(v)) {
			case "true":
				return true, ""
			case "false":
				return false, ""
			}
		}
		return nil, ruleBool
	case kindDuration:
		if isNumber(raw) {
			return nil, rulePlainNumber
		}
		s, ok := raw.(string)
		if !ok {
			return nil, ruleDuration
		}
		d, ok := parseDuration(s)
		if !ok {
			return nil, ruleDuration
		}
		return d, ""
	case kindSeconds, kindWholeSeconds:
		d, rule := parseSeconds(raw)
		if rule != "" {
			if k == kindWholeSeconds {
				return nil, ruleWholeSeconds
			}
			return nil, rule
		}
		if k == kindSeconds {
			return d, ""
		}
		if d%time.Second != 0 {
			return nil, ruleWholeSeconds
		}
		return int(d / time.Second), ""
	case kindQueues:
		return parseQueues(raw)
	case kindQueueRetention:
		if s, ok := raw.(string); ok && strings.EqualFold(strings.TrimSpace(s), "default") {
			return time.Duration(0), "" // the override cleared
		}
		if d, rule := parse(kindRetention, raw); rule == "" {
			return d, ""
		}
		return nil, ruleQueueRetain
	case kindRetention:
		if n, ok := toInt(raw); ok && n == 0 {
			return jobs.KeepForever, ""
		}
		s, ok := raw.(string)
		if !ok {
			return nil, ruleRetention
		}
		if strings.EqualFold(strings.TrimSpace(s), "forever") {
			return jobs.KeepForever, ""
		}
		d, ok := parseDuration(s)
		switch {
		case !ok || d < 0:
			return nil, ruleRetention
		case d == 0:
			return jobs.KeepForever, ""
		}
		return d, ""
	case kindSequencePolicy:
		// An empty value is not set (as for any key), so "" never reaches
		// ParseSequencePolicy's default.
		if s, ok := raw.(string); ok && strings.TrimSpace(s) != "" {
			if p, err := jobs.ParseSequencePolicy(strings.TrimSpace(s)); err == nil {
				return p, ""
			}
		}
		return nil, ruleSequence
	case kindRateLimit:
		// jobs.ParseRateLimit reads the form and applies the bounds, so
		// its rule (a zero count, a window of 10ms or 48h) is the message;
		// "none" is the zero limit, which removes the queue's.
		s, ok := raw.(string)
		if !ok {
			return nil, ruleRateLimit
		}
		r, err := jobs.ParseRateLimit(s)
		if ve, isVE := errors.AsType[*jobs.ValidationError](err); isVE {
			return nil, ve.Rule
		} else if err != nil {
			return nil, ruleRateLimit
		}
		return r, ""
	case kindJSON:
		switch v := raw.(type) {
		case jsonValue:
			return []byte(v), ""
		case string:
			if json.Valid([]byte(v)) {
				return []byte(strings.TrimSpace(v)), ""
			}
			return nil, ruleJSON
		case int, int64, uint64, float64, bool:
			b, _ := json.Marshal(v)
			return b, ""
		}
		return nil, ruleJSON
	}
	panic(fmt.Sprintf("config: unknown kind %d", k))
}

// toInt accepts an integer, or a string holding one. A float is refused
// even when whole: 10.0 for a count is more likely a mistake than not.
func toInt(raw any) (int, bool) {
	switch v := raw.(type) {
	case int:
		return v, true
	case int64:
		if v >= math.MinInt && v <= math.MaxInt {
			return int(v), true
		}
	case uint64:
		if v <= math.MaxInt {
			return int(v), true
		}
	case string:
		n, err := strconv.Atoi(strings.TrimSpace(v))
		return n, err == nil
	}
	return 0, false
}

// toFloat accepts a float, or a string holding a number.
func toFloat(raw any) (float64, bool) {
	switch v := raw.(type) {
	case float64:
		return v, true
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		return f, err == nil
	}
	return 0, false
}

// isNumber reports whether raw is a plain number, typed or in a string.
func isNumber(raw any) bool {
	switch v := raw.(type) {
	case int, int64, uint64, float64:
		return true
	case string:
		_, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		return err == nil
	}
	return false
}

// parseSeconds reads a plain number as seconds, anything else as a
// duration. YAML reads 1e3 as a float, and a float is still a number of
// seconds: 1e3 is 1000s, 1.5 is 1.5s.
func parseSeconds(raw any) (time.Duration, string) {
	const maxSeconds = math.MaxInt64 / int64(time.Second)
	if n, ok := toInt(raw); ok {
		if int64(n) > maxSeconds || int64(n) < -maxSeconds {
			return 0, ruleSeconds
		}
		return time.Duration(n) * time.Second, ""
	}
	if f, ok := toFloat(raw); ok {
		if math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > float64(maxSeconds) {
			return 0, ruleSeconds
		}
		return time.Duration(math.Round(f * float64(time.Second))), ""
	}
	s, ok := raw.(string)
	if !ok {
		return 0, ruleSeconds
	}
	d, ok := parseDuration(s)
	if !ok {
		return 0, ruleSeconds
	}
	return d, ""
}

// parseDuration reads Go's form ("90s", "1m30s", "1.5h") or .NET
// TimeSpan's invariant form ("[-][d.]hh:mm[:ss[.fffffff]]", e.g.
// "00:01:30", "1.02:03:04", "00:00:01.500"), which is what configuration
// written for the .NET ChokaQ holds.
func parseDuration(s string) (time.Duration, bool) {
	s = strings.TrimSpace(s)
	if strings.Contains(s, ":") {
		return parseTimeSpan(s)
	}
	// Go's form has no unit longer than the hour; retentions are days, so
	// a leading whole number of days is read too: "7d", "1d12h".
	return retention.ParseDuration(s)
}

// jsonValue is a YAML mapping or list read from a file and encoded as
// JSON (a schedule's Payload).
type jsonValue []byte

// parseTimeSpan reads .NET's "[-][d.]hh:mm[:ss[.fffffff]]".
func parseTimeSpan(s string) (time.Duration, bool) {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var days int64
	colon := strings.IndexByte(s, ':')
	if dot := strings.IndexByte(s[:colon], '.'); dot >= 0 {
		d, ok := digits(s[:dot], 1, 8)
		// time.Duration holds about 106,751 days.
		if !ok || d > 106750 {
			return 0, false
		}
		days, s = d, s[dot+1:]
	}
	parts := strings.Split(s, ":")
	if len(parts) > 3 {
		return 0, false
	}
	h, okH := digits(parts[0], 1, 2)
	m, okM := digits(parts[1], 1, 2)
	if !okH || !okM || h > 23 || m > 59 {
		return 0, false
	}
	var sec, frac int64
	if len(parts) == 3 {
		whole, fraction, hasFraction := strings.Cut(parts[2], ".")
		var ok bool
		if sec, ok = digits(whole, 1, 2); !ok || sec > 59 {
			return 0, false
		}
		if hasFraction {
			// Up to seven digits: .NET's tick is 100ns.
			if _, ok := digits(fraction, 1, 7); !ok {
				return 0, false
			}
			frac, _ = digits(fraction+strings.Repeat("0", 9-len(fraction)), 9, 9)
		}
	}
	d := time.Duration(days)*24*time.Hour + time.Duration(h)*time.Hour + time.Duration(m)*time.Minute +
		time.Duration(sec)*time.Second + time.Duration(frac)
	if neg {
		d = -d
	}
	return d, true
}

// digits reads a string of minLen to maxLen ASCII digits.
func digits(s string, minLen, maxLen int) (int64, bool) {
	if len(s) < minLen || len(s) > maxLen {
		return 0, false
	}
	var n int64
	for _, r := range s {
		if r < '0' || r > '9' {
			return 0, false
		}
		n = n*10 + int64(r-'0')
	}
	return n, true
}

// parseQueues reads a YAML list of names or a comma-separated string.
// Names are checked later, by Validate.
func parseQueues(raw any) (any, string) {
	switch v := raw.(type) {
	case string:
		out := []string{}
		if strings.TrimSpace(v) == "" {
			return out, ""
		}
		for q := range strings.SplitSeq(v, ",") {
			out = append(out, strings.TrimSpace(q))
		}
		return out, ""
	case []any:
		out := make([]string, 0, len(v))
		for _, item := range v {
			switch q := item.(type) {
			case string:
				out = append(out, q)
			case int, int64, uint64, float64, bool:
				out = append(out, fmt.Sprint(q))
			default:
				return nil, ruleQueues
			}
		}
		return out, ""
	}
	return nil, ruleQueues
}

// formatRaw renders a raw value as written, for messages.
func formatRaw(raw any) string {
	switch v := raw.(type) {
	case string:
		return v
	case []any:
		parts := make([]string, len(v))
		for i, item := range v {
			parts[i] = formatRaw(item)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case time.Time:
		// YAML turned an unquoted date into a timestamp; show it as written.
		if v.Equal(v.Truncate(24*time.Hour)) && v.Location() == time.UTC {
			return v.Format(time.DateOnly)
		}
		return v.Format(time.RFC3339Nano)
	case nil:
		return ""
	}
	return fmt.Sprint(raw)
}
