package codec

import (
	"fmt"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// AttemptResponse is the stored form of a delivery attempt's answer: never
// nil, and at most paygate.MaxAttemptResponse bytes, whatever the caller
// passed (decisions.md section 15: no more than 1 KiB of an endpoint's
// answer is kept or shown).
func AttemptResponse(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b[:min(len(b), paygate.MaxAttemptResponse)]
}

// AttemptColumns are the columns of a webhook_attempts row that
// ScanAttempt reads, in its order. Both engines store an attempt alike
// (issue 19): latency_us is integer microseconds, response bytes (never
// NULL), private_address a nullable boolean (PostgreSQL's boolean, SQLite's
// integer 0 or 1, which a CHECK keeps to), NULL when the address was not
// recorded.
const AttemptColumns = `delivery_id, number, url, started_at, status_code, latency_us, response, error, private_address`

// ScanAttempt reads a row of AttemptColumns.
func ScanAttempt(row Scanner) (paygate.DeliveryAttempt, error) {
	var a paygate.DeliveryAttempt
	var latency int64
	if err := row.Scan(&a.DeliveryID, &a.Number, &a.URL, At(&a.StartedAt), &a.StatusCode, &latency, &a.Response,
		&a.Error, OptionalBool(&a.PrivateAddress)); err != nil {
		return paygate.DeliveryAttempt{}, err
	}
	a.Latency = time.Duration(latency) * time.Microsecond
	if a.Response == nil {
		a.Response = []byte{}
	}
	return a, nil
}

// OptionalBool returns a scan destination for a nullable boolean column,
// as either engine stores it: PostgreSQL's boolean or SQLite's integer 0
// or 1. NULL sets *b to nil.
func OptionalBool(b **bool) interface{ Scan(any) error } { return boolDest{b: b} }

type boolDest struct{ b **bool }

func (d boolDest) Scan(src any) error {
	var v bool
	switch s := src.(type) {
	case nil:
		*d.b = nil
		return nil
	case bool:
		v = s
	case int64:
		if s != 0 && s != 1 {
			return fmt.Errorf("codec: a stored boolean of %d", s)
		}
		v = s == 1
	default:
		return fmt.Errorf("codec: a stored boolean of type %T", src)
	}
	*d.b = &v
	return nil
}
