package paygate

import (
	"context"
	"errors"
	"time"
)

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

// Live reports whether the record still answers for its key at now: it has
// not expired, and it is not an in-flight record that created no payment
// and is older than PaymentLease (its request died). A key whose record is
// not live may be reserved again.
func (r IdempotencyRecord) Live(now time.Time) bool {
	if r.Expired(now) {
		return false
	}
	abandoned := r.State == IdempotencyInFlight && r.PaymentID == "" && now.After(r.CreatedAt.Add(PaymentLease))
	return !abandoned
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

// IdempotencyPeeker is implemented by a Store that can read a request's API
// key and the record of its Idempotency-Key together, in one round trip, so
// that a replay is answered with no other read and a new request learns
// that its key is free before it is validated (decisions §1 checks
// idempotency before validation).
type IdempotencyPeeker interface {
	// APIKeyAndIdempotency returns the key whose hash matches (NOT_FOUND
	// otherwise, whether or not the key is active) and the record of the
	// Idempotency-Key idemKey within that key's merchant and mode, live or
	// not, with found false when there is none; ErrNotPeeked with the key
	// when only the record's read failed.
	APIKeyAndIdempotency(ctx context.Context, hash []byte, idemKey string) (key APIKey, rec IdempotencyRecord, found bool, err error)
}

// ErrNotPeeked is returned by APIKeyAndIdempotency and APIKeyAndPayment,
// with the key, when the key was read but the read alongside it failed: the
// caller authenticates with the key as if the store could not peek, and
// meets the failure, if it lasts, when it reads on its own after the checks
// that come first (decisions §1: authentication, then the rate limit).
var ErrNotPeeked = errors.New("paygate: the key was read, the read alongside it failed")

// PaymentPeeker is implemented by a Store that can read a request's API key
// and a payment of that key's merchant and mode together, in one round trip
// (GET /v1/payments/{id}: one round trip instead of two on a networked
// database).
type PaymentPeeker interface {
	// APIKeyAndPayment returns the key whose hash matches (NOT_FOUND
	// otherwise, whether or not the key is active) and the payment id of
	// that key's merchant and mode, with found false when there is none;
	// ErrNotPeeked with the key when only the payment's read failed.
	APIKeyAndPayment(ctx context.Context, hash []byte, paymentID string) (key APIKey, p Payment, found bool, err error)
}
