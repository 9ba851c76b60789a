package paygate

import (
	"context"
	"time"
)

// TokenLifetime is how long a card token may be used after it was created
// (decisions §19): 15 minutes. Its sealed card is erased when it is used,
// and by the sweeper (Store.PurgeCardTokens) once it has expired.
const TokenLifetime = 15 * time.Minute

// TokenPrefix starts every card token id.
const TokenPrefix = "tok_"

// CardToken is a single-use card token (decisions §19): a card collected in
// the browser with the public key, to be paid with once by the merchant's
// server (paymentMethod token) within TokenLifetime. It belongs to one
// (merchant, mode). The card number and CVV are only in Sealed, sealed
// together by the vault for the token's id, merchant and mode; nothing else
// in it (no fingerprint, no hash) leads back to them.
//
// As an operation of a unit (Commit), a CardToken inserts the token, in a
// statement that re-checks that APIKeyID is a public key of the merchant
// and mode, active at CreatedAt (decisions §4: a request re-checks its key
// in its first transaction): it fails the unit with UNAUTHORIZED when the
// key is not, and with ErrConflict on a duplicate id.
type CardToken struct {
	ID         string // TokenPrefix and random characters
	MerchantID string
	Mode       Mode
	Brand      string
	Last4      string
	ExpMonth   int
	ExpYear    int // four digits
	HolderName string
	// ClientAddr is the address of the client that tokenized the card
	// (the shopper's browser): the card-testing guard counts the token's
	// payment by it, not by the merchant server's address (decisions §20).
	ClientAddr string
	// APIKeyID is the public key that tokenized the card, re-checked by
	// the insert; it is not stored.
	APIKeyID string
	// KeyID names the master key that sealed Sealed; "" once erased.
	KeyID string
	// Sealed is the card number and CVV sealed by the vault; nil once the
	// token was used or purged.
	Sealed    []byte
	CreatedAt time.Time
	ExpiresAt time.Time
	// UsedAt is when a payment used the token; nil while it is unused.
	UsedAt *time.Time
	// PaymentID is the payment that used the token, "" while it is unused.
	PaymentID string
}

// Used reports whether a payment used the token.
func (t CardToken) Used() bool { return t.UsedAt != nil }

// Usable reports whether the token may pay at now: not used and not
// expired.
func (t CardToken) Usable(now time.Time) bool {
	return t.UsedAt == nil && now.Before(t.ExpiresAt) && len(t.Sealed) > 0
}

// TokenUse uses the token ID of (MerchantID, Mode) for the payment
// PaymentID at At: atomically, once. It succeeds only when the token exists
// for that merchant and mode, is not used, and has not expired at At; it
// erases the sealed card (the CVV with it) and records the payment and
// the time. Any refusal (unknown, another merchant's or mode's, used,
// expired) fails the unit with INVALID_REQUEST param token; of two
// concurrent uses, one succeeds.
type TokenUse struct {
	ID         string
	MerchantID string
	Mode       Mode
	PaymentID  string
	At         time.Time
}

// TokenStore is the part of Store for card tokens (issue 24). Methods follow
// the rules of Store. Its writes are operations of a unit (Commit):
// CardToken (insert) and TokenUse.
type TokenStore interface {
	// CardToken returns the token of (merchant, mode) with the id, used or
	// not, expired or not; NOT_FOUND when there is none.
	CardToken(ctx context.Context, merchantID string, mode Mode, id string) (CardToken, error)
	// PurgeCardTokens deletes the tokens that expired at or before the
	// time, used or not, their sealed cards with them, and returns how
	// many. It serves the sweeper only.
	PurgeCardTokens(ctx context.Context, expiredBy time.Time) (int64, error)
	// CardTokenKeyIDs counts the tokens whose card is still sealed by the
	// master key id that sealed it, so that a key still sealing live tokens
	// is not dropped unawares.
	CardTokenKeyIDs(ctx context.Context) (map[string]int, error)
}

func (CardToken) unitOp() {}
func (TokenUse) unitOp()  {}
