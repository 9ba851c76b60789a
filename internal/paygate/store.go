package paygate

import (
	"context"
	"time"
)

// Store is the storage contract. SQLite and PostgreSQL implement it, and one
// conformance suite (internal/store/storetest) checks both.
//
// Every method is one transaction at most; none may be called while holding
// another. Every read of merchant data filters by merchant and mode in SQL.
// Errors: *Error with CodeNotFound when a resource does not exist for the
// merchant and mode; *Error with CodeServiceUnavailable when the database
// cannot be reached; ErrStateConflict when a conditional transition lost a
// race; ErrConflict on a duplicate id. Anything else is internal.
type Store interface {
	// Feature parts, each in its own file.
	WebhookStore
	ThreeDSStore
	RoutingStore
	RoutingScoreStore
	VaultStore
	DashboardStore
	GuardStore
	OriginsStore
	TokenStore

	// Ping checks that the database answers (readiness).
	Ping(ctx context.Context) error
	// Close releases the connections.
	Close() error

	// Merchants lists merchants, oldest first (merchants created at the
	// same time in insertion order): the one with q.ID when it is set, at
	// most q.Limit (<= 0: no limit). See OneMerchant.
	Merchants(ctx context.Context, q MerchantQuery) ([]Merchant, error)

	// APIKeys lists the keys that match every field of q that is set,
	// oldest first (keys created at the same time in insertion order). It
	// does not judge whether a key is active. A query by ID or Hash finds
	// at most one key (see OneAPIKey); one with none of ID, Hash and
	// MerchantID set is refused, so that no read lists every merchant's
	// keys.
	APIKeys(ctx context.Context, q APIKeyQuery) ([]APIKey, error)

	// ReserveIdempotency reserves r.Key for a new request, in a transaction
	// that first re-checks that the API key r.APIKeyID is still active at
	// r.Now (UNAUTHORIZED otherwise; no check when it is ""). If a live
	// record exists (not expired, and not an abandoned in-flight record
	// without a payment older than PaymentLease), it is returned with
	// reserved false and nothing changes. Otherwise any old record is
	// replaced by a new in-flight one and reserved is true and existing is
	// the new in-flight record. Concurrent calls with one key reserve it
	// once.
	ReserveIdempotency(ctx context.Context, r IdempotencyReservation) (existing IdempotencyRecord, reserved bool, err error)
	// An IdempotencyCompletion operation (Commit) stores the answer of a
	// reserved key, and an IdempotencyRelease deletes an in-flight record.

	// PurgeIdempotency deletes records created before the time and returns
	// how many.
	PurgeIdempotency(ctx context.Context, createdBefore time.Time) (int64, error)

	// UpsertCustomer creates the customer or updates the one with the same
	// external id (email and metadata replaced when given). Returns the
	// stored record; an existing one keeps its id and CreatedAt.
	UpsertCustomer(ctx context.Context, u CustomerUpsert) (Customer, error)
	// CustomerByID returns a customer of (merchant, mode), or NOT_FOUND.
	CustomerByID(ctx context.Context, merchantID string, mode Mode, id string) (Customer, error)

	// CreatePayment, in one transaction, resolves the customer by external
	// id (creating it when missing), inserts the payment in status created,
	// and links the payment to the idempotency record of
	// p.Payment.IdempotencyKey. Returns the payment with CustomerID set.
	CreatePayment(ctx context.Context, p NewPayment) (Payment, error)
	// Commit applies the unit's operations in their order, in one
	// transaction: all of them, or none when it returns an error. Each
	// operation sees the writes of those before it. The first operation
	// that refuses (a PaymentTransition whose payment is in none of From:
	// ErrStateConflict; missing for its merchant and mode: NOT_FOUND; the
	// refusals of the other operations, see Op) fails the unit with its
	// error. An empty unit writes nothing.
	Commit(ctx context.Context, u Unit) error
	// PaymentByID returns a payment of (merchant, mode), or NOT_FOUND.
	PaymentByID(ctx context.Context, merchantID string, mode Mode, id string) (Payment, error)
	// PaymentByMerchantRef returns the most recently created payment of
	// (merchant, mode) with the reference, or NOT_FOUND. The empty
	// reference matches nothing (NOT_FOUND, without a query), although a
	// payment without a reference stores it as "".
	PaymentByMerchantRef(ctx context.Context, merchantID string, mode Mode, ref string) (Payment, error)

	// RefundByID returns a refund of (merchant, mode), or NOT_FOUND.
	RefundByID(ctx context.Context, merchantID string, mode Mode, id string) (Refund, error)
	// RefundsByPayment lists a payment's refunds, newest first; NOT_FOUND
	// when the payment does not exist for (merchant, mode).
	RefundsByPayment(ctx context.Context, merchantID string, mode Mode, paymentID string) ([]Refund, error)
	// RefundsToProcess returns up to limit refunds of any merchant in status
	// created, or pending and last updated before staleBefore, oldest first.
	// It serves the background refund worker only. A limit <= 0 means no
	// limit.
	RefundsToProcess(ctx context.Context, staleBefore time.Time, limit int) ([]Refund, error)
}
