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

// ThreeDSFinish consumes a challenge and moves its payment to its final
// status, in one transaction.
type ThreeDSFinish struct {
	TokenHash []byte
	At        time.Time // the consumption time
	// OnlyExpired restricts the finish to a challenge that is expired at At
	// and not claimed by a callback at At (the expiry job).
	OnlyExpired bool
	// Transition moves the payment (From pending_3ds); its ID, MerchantID
	// and Mode must be the challenge's.
	Transition PaymentTransition
	Events     []Event
}

// ThreeDSStore is the part of Store for 3-D Secure challenges (issue 4): tokens bound to payments.
// Methods follow the rules of Store: one transaction at most, merchant and
// mode filtered in SQL for merchant data, errors as documented on Store.
type ThreeDSStore interface {
	// ThreeDSChallengeByTokenHash returns the challenge of the token hash,
	// whatever its state, or NOT_FOUND. The token is the credential (as an
	// API key is): the lookup is not scoped by merchant, and the challenge
	// names its merchant and mode for every later read.
	ThreeDSChallengeByTokenHash(ctx context.Context, tokenHash []byte) (ThreeDSChallenge, error)
	// ThreeDSChallengesByPayment lists the challenges of a payment of
	// (merchant, mode), oldest first; none for an unknown payment.
	ThreeDSChallengesByPayment(ctx context.Context, merchantID string, mode Mode, paymentID string) ([]ThreeDSChallenge, error)
	// ClaimThreeDSChallenge claims a usable challenge (not consumed, not
	// expired at now) for one callback request until the given time, and
	// returns it. NOT_FOUND when no usable challenge has the hash;
	// ErrStateConflict when another request's claim is still running at
	// now. Concurrent calls claim a challenge once.
	ClaimThreeDSChallenge(ctx context.Context, tokenHash []byte, now, until time.Time) (ThreeDSChallenge, error)
	// ReleaseThreeDSChallenge drops the claim of an unconsumed challenge,
	// so that the customer may try again at once (the provider could not
	// be reached). A consumed or unknown challenge is left alone (no error).
	ReleaseThreeDSChallenge(ctx context.Context, tokenHash []byte) error
	// FinishThreeDSChallenge consumes the challenge, applies f.Transition and
	// inserts f.Events, in one transaction. ErrStateConflict when the
	// challenge is already consumed, when f.OnlyExpired and it is not
	// expired or is claimed at f.At, or when the payment is in none of
	// f.Transition.From; NOT_FOUND when no challenge has the hash. Nothing
	// is written on error.
	FinishThreeDSChallenge(ctx context.Context, f ThreeDSFinish) error
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
