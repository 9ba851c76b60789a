// Package id mints resource identifiers: UUID version 7 strings, whose time
// ordering keeps database indexes compact.
package id

import "github.com/google/uuid"

// New returns a new lower-case canonical UUIDv7 string. It panics only if
// the system's random source fails, which the runtime treats as fatal anyway.
func New() string { return uuid.Must(uuid.NewV7()).String() }

// Valid reports whether s is a UUID in canonical lower- or upper-case form.
func Valid(s string) bool {
	if len(s) != 36 {
		return false
	}
	_, err := uuid.Parse(s)
	return err == nil
}
