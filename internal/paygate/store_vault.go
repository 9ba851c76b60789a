package paygate

import (
	"context"
	"time"
)

// StoredCardState is the life cycle of a stored card.
type StoredCardState string

const (
	// StoredCardActive: listed, usable for stored_card payments.
	StoredCardActive StoredCardState = "active"
	// StoredCardPending: saved by a card payment with saveCard that waits
	// for 3-D Secure. Neither listed nor usable; the payment's success
	// activates it, its failure discards it. It exists because the card
	// number lives only in memory: after the creating request it can no
	// longer be encrypted.
	StoredCardPending StoredCardState = "pending"
	// StoredCardDeleted: deleted by the merchant (or a discarded pending
	// card). Its encrypted number, wrapped data key and fingerprint are
	// erased; only the masked summary remains.
	StoredCardDeleted StoredCardState = "deleted"
)

// SealedCard is a card number as the vault stores it: encrypted under its own
// data key, which is wrapped by a master key. Nothing in it is readable
// without the master key named by KeyID.
type SealedCard struct {
	// KeyID names the master key that wrapped DataKey and keyed
	// Fingerprint: a short hash of the key, never the key.
	KeyID string
	// WrappedKey is the card's data key, encrypted under the master key.
	WrappedKey []byte
	// Ciphertext is the card number, encrypted under the data key.
	Ciphertext []byte
	// Fingerprint is a keyed hash (hex) of the number under a key derived
	// from the master key KeyID, to find the same card saved twice.
	Fingerprint string
}

// StoredCard is a card in the vault. It belongs to one (merchant, mode,
// customer). The number is only in Sealed; the rest is what may be shown.
type StoredCard struct {
	ID         string
	MerchantID string
	Mode       Mode
	CustomerID string // the customer's UUID
	State      StoredCardState
	// PaymentID is the payment that saved the card (saveCard), "" when it
	// was saved directly. A pending card waits for this payment.
	PaymentID  string
	Brand      string
	Last4      string
	ExpMonth   int
	ExpYear    int // four digits
	HolderName string
	Sealed     SealedCard // empty once deleted
	CreatedAt  time.Time
	UpdatedAt  time.Time
	DeletedAt  *time.Time
}

// VaultStore is the part of Store for stored cards (issue 6): encrypted card
// records bound to (merchant, mode, customer).
// Methods follow the rules of Store: one transaction at most, merchant and
// mode filtered in SQL for merchant data, errors as documented on Store.
//
// The store never sees a card number: it keeps what the vault sealed.
type VaultStore interface {
	// SaveStoredCard stores c (State active or pending), in one transaction.
	// An active card is deduplicated: when the customer already has an
	// active card whose fingerprint is one of match, that card is returned
	// with created false and c is not stored. When c.PaymentID is set and
	// the card is active, the payment's StoredCardID becomes the returned
	// card's id in the same transaction. A pending card is always inserted
	// (and not linked to its payment until activated). NOT_FOUND when the
	// customer does not exist for (c.MerchantID, c.Mode), or when
	// c.PaymentID names no payment of that customer; ErrConflict on a
	// duplicate id.
	SaveStoredCard(ctx context.Context, c StoredCard, match []string) (saved StoredCard, created bool, err error)
	// ActivatePendingCard activates the pending card of the payment (after
	// a successful 3-D Secure challenge) and links the payment to it, in one
	// transaction. When the customer already has an active card with the
	// pending card's fingerprint, the pending card is erased as a deleted
	// one and the payment is linked to the existing card instead. Returns
	// the active card. NOT_FOUND when the payment has no pending card in
	// (merchant, mode).
	ActivatePendingCard(ctx context.Context, merchantID string, mode Mode, paymentID string, at time.Time) (StoredCard, error)
	// DiscardPendingCard erases the pending card of the payment (its
	// challenge failed or expired), as DeleteStoredCard does. A payment
	// without a pending card is left alone (no error).
	DiscardPendingCard(ctx context.Context, merchantID string, mode Mode, paymentID string, at time.Time) error
	// StoredCardByID returns an active card of the customer (a UUID) in
	// (merchant, mode), or NOT_FOUND.
	StoredCardByID(ctx context.Context, merchantID string, mode Mode, customerID, id string) (StoredCard, error)
	// StoredCardByCustomerRef returns an active card of the customer of the
	// external id in (merchant, mode), as a stored_card payment names it, or
	// NOT_FOUND (also when no such customer exists).
	StoredCardByCustomerRef(ctx context.Context, merchantID string, mode Mode, customerExternalID, id string) (StoredCard, error)
	// StoredCardsByCustomer lists the customer's active cards, newest first.
	// NOT_FOUND when the customer does not exist for (merchant, mode).
	StoredCardsByCustomer(ctx context.Context, merchantID string, mode Mode, customerID string) ([]StoredCard, error)
	// DeleteStoredCard deletes an active card of the customer at the time:
	// the state becomes deleted and the sealed number, wrapped key and
	// fingerprint are erased. NOT_FOUND when the customer has no active card
	// with the id in (merchant, mode), deleted cards included.
	DeleteStoredCard(ctx context.Context, merchantID string, mode Mode, customerID, id string, at time.Time) error

	// StoredCardsToRewrap returns up to limit cards of any merchant, active
	// or pending, whose KeyID is not keyID and whose id is greater than
	// after, in id order. It serves `paygate vault rewrap` only. A limit <= 0
	// means no limit.
	StoredCardsToRewrap(ctx context.Context, keyID, after string, limit int) ([]StoredCard, error)
	// RewrapStoredCard replaces the sealed number of a card that is still
	// sealed under fromKeyID and not deleted. ErrStateConflict when the card
	// changed meanwhile (deleted, or rewrapped by another process);
	// NOT_FOUND when no card has the id.
	RewrapStoredCard(ctx context.Context, id, fromKeyID string, to SealedCard, at time.Time) error
	// StoredCardKeyIDs counts the cards that are not deleted by the master
	// key id they are sealed under.
	StoredCardKeyIDs(ctx context.Context) (map[string]int, error)
}
