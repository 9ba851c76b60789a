package paygate

import (
	"context"
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

// IdempotencyRelease deletes the in-flight record of a key, for answers that
// are not stored (validation errors): the key may be used again at once. A
// complete record is kept, and a key without a record is left alone.
type IdempotencyRelease struct {
	MerchantID string
	Mode       Mode
	Key        string
}

// RequestReads names what a request reads together with its API key.
type RequestReads struct {
	// IdempotencyKey, when not "", asks for the record of this
	// Idempotency-Key: a replay is then answered with no other read, and
	// a new request learns that its key is free before it is validated
	// (decisions §1 checks idempotency before validation).
	IdempotencyKey string
	// PaymentID, when not "", asks for the payment with this id
	// (GET /v1/payments/{id}).
	PaymentID string
}

// RequestData is what was read for RequestReads, within the merchant and
// mode of the API key read with it.
type RequestData struct {
	Record  *IdempotencyRecord // the key's record, live or not; nil when none
	Payment *Payment           // nil when there is no such payment
	// Err is a failure of the reads beside the key; Record and Payment are
	// then unset. The caller meets it after the checks that come first
	// (decisions §1: authentication, then the rate limit).
	Err error
}

// RequestReader is the optional capability of a Store that reads a
// request's API key and what the request needs (RequestReads) in one round
// trip. Without it a request reads its API key alone and the rest on its
// own, after authentication; nothing but the number of round trips
// differs.
type RequestReader interface {
	// APIKeyAndRequest returns the key whose hash matches (NOT_FOUND
	// otherwise, whether or not the key is active) and what reads names
	// within that key's merchant and mode.
	APIKeyAndRequest(ctx context.Context, hash []byte, reads RequestReads) (APIKey, RequestData, error)
}
