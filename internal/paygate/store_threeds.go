package paygate

import (
	"context"
	"time"
)

// ThreeDSChallenge is one 3-D Secure challenge: the credential a customer's
// browser carries back to the callback (/v1/3ds/callback/<token>), bound to
// one payment in status pending_3ds. Only the SHA-256 hash of the token is
// stored; the token itself exists in the payment's creation answer and in
// the customer's browser.
//
// A challenge is used once: the callback claims it (so that one request at a
// time talks to the provider), then consumes it in the same transaction as
// the payment's final status. The expiry job consumes challenges that were
// not completed before ExpiresAt.
type ThreeDSChallenge struct {
	TokenHash  []byte // SHA-256 of the token
	PaymentID  string
	MerchantID string
	Mode       Mode
	CreatedAt  time.Time
	ExpiresAt  time.Time
	// ClaimedUntil is set while a callback request completes the
	// challenge with the provider; after it, the claim has lapsed.
	ClaimedUntil *time.Time
	// ConsumedAt is set once the challenge is used: completed or expired.
	ConsumedAt *time.Time
}

// Usable reports whether the challenge may still be completed at now: not
// consumed and not expired.
func (c ThreeDSChallenge) Usable(now time.Time) bool {
	return c.ConsumedAt == nil && now.Before(c.ExpiresAt)
}

// ThreeDSConsumption consumes the challenge of TokenHash, which must be the
// challenge of the payment PaymentID of (MerchantID, Mode), at At. It is
// what a callback or the expiry job commits, in one unit with the payment's
// transition out of pending_3ds and its events (ThreeDSFinish). It fails
// the unit with ErrStateConflict when the challenge is already consumed, or
// when OnlyExpired and it is not expired or is claimed at At; with
// NOT_FOUND when the payment has no challenge with the hash.
type ThreeDSConsumption struct {
	TokenHash  []byte
	PaymentID  string
	MerchantID string
	Mode       Mode
	At         time.Time // the consumption time
	// OnlyExpired restricts the consumption to a challenge that is expired
	// at At and not claimed by a callback at At (the expiry job).
	OnlyExpired bool
}

// ThreeDSRelease drops the claim of an unconsumed challenge, so that the
// customer may try again at once (the provider could not be reached). A
// consumed or unknown challenge is left alone: it never fails the unit.
type ThreeDSRelease struct {
	TokenHash []byte
}

// ThreeDSFinish consumes a challenge and moves its payment to its final
// status: the operations of one unit (Ops).
type ThreeDSFinish struct {
	TokenHash []byte
	At        time.Time // the consumption time
	// OnlyExpired restricts the finish to a challenge that is expired at At
	// and not claimed by a callback at At (the expiry job).
	OnlyExpired bool
	// Transition moves the payment (From pending_3ds); its ID, MerchantID
	// and Mode name the challenge's payment.
	Transition PaymentTransition
	Events     []Event
}

// Ops returns the finish's operations: the challenge's consumption, then
// the payment's transition, then the events. The unit writes nothing when
// the challenge cannot be consumed or the payment cannot move.
func (f ThreeDSFinish) Ops() []Op {
	t := f.Transition
	ops := []Op{ThreeDSConsumption{
		TokenHash: f.TokenHash, PaymentID: t.ID, MerchantID: t.MerchantID, Mode: t.Mode,
		At: f.At, OnlyExpired: f.OnlyExpired,
	}, t}
	for _, e := range f.Events {
		ops = append(ops, e)
	}
	return ops
}

// ThreeDSChallengeQuery selects challenges for Store.ThreeDSChallenges:
// the challenge of TokenHash when it is set, otherwise the challenges of
// the payment PaymentID of (MerchantID, Mode).
type ThreeDSChallengeQuery struct {
	// TokenHash selects the challenge of the token, whatever its state.
	// The token is the credential (as an API key is): this lookup is not
	// scoped by merchant, and the challenge names its merchant and mode for
	// every later read.
	TokenHash  []byte
	MerchantID string
	Mode       Mode
	PaymentID  string
}

// ThreeDSStore is the part of Store for 3-D Secure challenges (issue 4): tokens bound to payments.
// Methods follow the rules of Store: one transaction at most, merchant and
// mode filtered in SQL for merchant data, errors as documented on Store.
type ThreeDSStore interface {
	// ThreeDSChallenges lists the challenges the query selects, oldest
	// first: at most one for a token hash; none for an unknown hash or
	// payment.
	ThreeDSChallenges(ctx context.Context, q ThreeDSChallengeQuery) ([]ThreeDSChallenge, error)
	// ClaimThreeDSChallenge claims a usable challenge (not consumed, not
	// expired at now) for one callback request until the given time, and
	// returns it. NOT_FOUND when no usable challenge has the hash;
	// ErrStateConflict when another request's claim is still running at
	// now. Concurrent calls claim a challenge once.
	ClaimThreeDSChallenge(ctx context.Context, tokenHash []byte, now, until time.Time) (ThreeDSChallenge, error)
	// A ThreeDSRelease operation (Commit) drops a claim; a
	// ThreeDSConsumption consumes a challenge, in the unit of its payment's
	// transition (ThreeDSFinish).

	// ExpiredThreeDSChallenges returns up to limit challenges of any
	// merchant that are unconsumed, expired at now and not claimed at now,
	// oldest expiry first. It serves the background expiry job only. A
	// limit <= 0 means no limit.
	ExpiredThreeDSChallenges(ctx context.Context, now time.Time, limit int) ([]ThreeDSChallenge, error)
}

// ThreeDSView is what a challenge page shows: the payment waiting for its
// customer, and who is asking for the money.
type ThreeDSView struct {
	Payment      Payment
	MerchantName string
}
