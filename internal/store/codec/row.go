package codec

import (
	"fmt"
	"time"
)

// Scanner is a row of either engine's driver: a pgx.Row or a *sql.Row /
// *sql.Rows of database/sql.
type Scanner interface {
	Scan(dest ...any) error
}

// At returns a scan destination for a stored time, as either engine stores
// it: PostgreSQL's timestamptz (the driver gives a time.Time) or SQLite's
// integer microseconds since the epoch. The time is set in UTC, so that one
// record reads the same from both engines. A NULL is refused: a nullable
// time column scans with AtOptional.
func At(t *time.Time) interface{ Scan(any) error } { return timeDest{t: t} }

// AtOptional is At for a nullable time column: NULL sets *t to nil. Both
// engines store "no time" as NULL.
func AtOptional(t **time.Time) interface{ Scan(any) error } { return optionalTimeDest{t: t} }

type timeDest struct{ t *time.Time }

func (d timeDest) Scan(src any) error {
	v, ok, err := storedTime(src)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("codec: a stored time is NULL")
	}
	*d.t = v
	return nil
}

type optionalTimeDest struct{ t **time.Time }

func (d optionalTimeDest) Scan(src any) error {
	v, ok, err := storedTime(src)
	if err != nil {
		return err
	}
	if !ok {
		*d.t = nil
		return nil
	}
	*d.t = &v
	return nil
}

// storedTime decodes a driver value of a time column; ok is false for NULL.
func storedTime(src any) (time.Time, bool, error) {
	switch v := src.(type) {
	case nil:
		return time.Time{}, false, nil
	case time.Time:
		return v.UTC(), true, nil
	case int64:
		return time.UnixMicro(v).UTC(), true, nil
	default:
		return time.Time{}, false, fmt.Errorf("codec: a stored time of type %T", src)
	}
}

// OptionalText returns a scan destination for a nullable text column:
// NULL sets *s to "" (the columns whose NULL means "none", such as a
// customer's email, which a partial index leaves out when NULL).
func OptionalText(s *string) interface{ Scan(any) error } { return textDest{s: s} }

type textDest struct{ s *string }

func (d textDest) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*d.s = ""
	case string:
		*d.s = v
	case []byte:
		*d.s = string(v)
	default:
		return fmt.Errorf("codec: a stored text of type %T", src)
	}
	return nil
}
