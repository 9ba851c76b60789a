package main

import (
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// timeLayout is RFC 3339 in UTC with milliseconds, as at the HTTP edge.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// formatTime renders t for CLI output.
func formatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

// formatTimePtr renders an optional time; nil stays nil (JSON null).
func formatTimePtr(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := formatTime(*t)
	return &s
}

// writeJSON prints v as one line of JSON. HTML characters are not escaped,
// so URLs print as given.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}
