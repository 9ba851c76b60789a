package paygate

import "time"

// IdempotencyState is the state of an idempotency record.
type IdempotencyState string

const (
	// IdempotencyInFlight: the first request with the key is still running.
	IdempotencyInFlight IdempotencyState = "in_flight"
	// IdempotencyComplete: the answer is stored and is replayed.
	IdempotencyComplete IdempotencyState = "complete"
)

// IdempotencyRecord is the stored state of one Idempotency-Key within a
// (merchant, mode).
type IdempotencyRecord struct {
	MerchantID  string
	Mode        Mode
	Key         string
	Fingerprint []byte // keyed hash (HMAC-SHA256) of method, path and canonical body; never the body
	State       IdempotencyState
	StatusCode  int    // when complete
	Body        []byte // when complete: the exact response body
	PaymentID   string // the payment the request created, if any
	CreatedAt   time.Time
}

// KeyTakenError is the answer of a write that was to reserve an
// idempotency key (NewPayment.Reservation) when the key already has a live
// record: nothing was written, and Record is that live record, for a replay
// or a 409.
type KeyTakenError struct {
	Record IdempotencyRecord
}

func (e *KeyTakenError) Error() string {
	return "the idempotency key " + e.Record.Key + " is taken"
}

// Expired reports whether the key may be used for a new request at now.
func (r IdempotencyRecord) Expired(now time.Time) bool {
	return !now.Before(r.CreatedAt.Add(IdempotencyTTL))
}

// IdempotencyReservation asks to reserve a key for a new request.
type IdempotencyReservation struct {
	MerchantID  string
	Mode        Mode
	Key         string
	Fingerprint []byte
	// APIKeyID is re-checked in the same transaction: a key revoked or
	// expired since authentication gets UNAUTHORIZED. "" skips the check:
	// the dashboard reserves keys for its users, whose session is checked
	// instead.
	APIKeyID string
	Now      time.Time
}

// IdempotencyCompletion stores the answer of a request under its key.
type IdempotencyCompletion struct {
	MerchantID string
	Mode       Mode
	Key        string
	StatusCode int
	Body       []byte
}
