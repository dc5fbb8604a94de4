package jobs

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// Bounds of a job's metadata (EnqueueParams.Metadata). The stores keep it
// as JSON text; operators see it (the dashboard's job page, chokaq jobs
// show), so it is no place for a secret.
const (
	// MaxMetadataBytes bounds the metadata as JSON (4 KiB).
	MaxMetadataBytes = 4096
	// MaxMetadataKeyLen bounds a key, in bytes.
	MaxMetadataKeyLen = 64
)

// ValidateMetadata checks a job's metadata: each key 1 to
// MaxMetadataKeyLen ASCII letters, digits, '_', '-', '.', ':' or '/'
// (W3C's traceparent and tracestate are such keys), each value valid
// UTF-8, and the whole at most MaxMetadataBytes as JSON. A nil or empty
// map is no metadata.
func ValidateMetadata(m map[string]string) error {
	_, err := EncodeMetadata(m)
	return err
}

// EncodeMetadata validates m (ValidateMetadata) and returns its JSON
// text, "" for no metadata: the form every store keeps.
func EncodeMetadata(m map[string]string) (string, error) {
	if len(m) == 0 {
		return "", nil
	}
	for k, v := range m {
		if err := checkMetadataKey(k); err != nil {
			return "", err
		}
		if !utf8.ValidString(v) {
			return "", &ValidationError{Field: "metadata", Value: k, Rule: "the value of key " + k + " must be valid UTF-8"}
		}
	}
	b, err := json.Marshal(m)
	if err != nil { // a map of strings always encodes; kept for the contract
		return "", fmt.Errorf("jobs: encode metadata: %w", err)
	}
	if len(b) > MaxMetadataBytes {
		return "", &ValidationError{Field: "metadata", Value: len(b), Rule: "must be at most " + itoa(MaxMetadataBytes) + " bytes as JSON"}
	}
	return string(b), nil
}

// DecodeMetadata reads metadata a store kept (EncodeMetadata's text; ""
// gives nil).
func DecodeMetadata(s string) (map[string]string, error) {
	if s == "" {
		return nil, nil
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, fmt.Errorf("jobs: decode metadata: %w", err)
	}
	return m, nil
}

func checkMetadataKey(k string) error {
	if k == "" || len(k) > MaxMetadataKeyLen {
		return &ValidationError{Field: "metadata", Value: k, Rule: "a key must be 1 to " + itoa(MaxMetadataKeyLen) + " bytes"}
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c == ':' || c == '/') {
			return &ValidationError{Field: "metadata", Value: k, Rule: "a key may contain only ASCII letters, digits, '_', '-', '.', ':' and '/'"}
		}
	}
	return nil
}
