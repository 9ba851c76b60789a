// Package paygate is the domain of the payment gateway: the resources
// (merchants, keys, customers, payments, refunds, events), their statuses and
// allowed transitions, money, error codes, and the interfaces the rest of the
// program implements (Store, Provider, Clock).
//
// It imports only the standard library. Domain types carry no JSON or
// database tags: every boundary converts with named functions.
package paygate

import "time"

// Mode separates test traffic from live traffic. Every resource belongs to
// exactly one (merchant, mode) pair and is invisible from the other mode.
type Mode string

const (
	// ModeTest makes no real charges; it is served by the sandbox providers.
	ModeTest Mode = "test"
	// ModeLive processes real payments.
	ModeLive Mode = "live"
)

// Valid reports whether m is one of the two modes.
func (m Mode) Valid() bool { return m == ModeTest || m == ModeLive }

// Money is an amount in the currency's minor units (cents for EUR, yen for
// JPY, fils for KWD). It is never a float.
type Money struct {
	Amount   int64
	Currency string
}

// Clock tells the time. It is injected so that tests can move time instead
// of sleeping.
type Clock interface {
	Now() time.Time
}

// SystemClock is the wall clock, in UTC and truncated to microseconds so that
// every time survives a round trip through either database unchanged.
type SystemClock struct{}

// Now returns the current UTC time at microsecond precision.
func (SystemClock) Now() time.Time { return Normalize(time.Now()) }

// Normalize returns t in UTC truncated to microseconds, the precision both
// stores keep.
func Normalize(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// IdempotencyTTL is how long an idempotency key keeps its first answer.
const IdempotencyTTL = 24 * time.Hour

// PaymentLease is how long a request may be working on a payment it created.
// After the lease, the recovery job may take the payment over.
const PaymentLease = 20 * time.Second
