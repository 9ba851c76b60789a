package paygate

import (
	"context"
	"errors"
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

// StoredCardQuery selects stored cards for Store.StoredCards: the active
// cards of one customer of (MerchantID, Mode), named by CustomerID (its
// UUID) or, when that is "", by CustomerExternalID (as a stored_card
// payment names it).
type StoredCardQuery struct {
	MerchantID         string
	Mode               Mode
	CustomerID         string
	CustomerExternalID string
	// ID, when set, selects the card with the id only.
	ID string
	// Fingerprints, when set, selects the cards whose fingerprint is one
	// of them: the same number sealed under any of the master keys.
	Fingerprints []string
}

// StoredCardLink sets the stored card of the payment PaymentID, a payment
// of the customer CustomerID in (MerchantID, Mode), to StoredCardID (a card
// payment with saveCard). It fails the unit with NOT_FOUND when the payment
// is not one of the customer's in (MerchantID, Mode), and with ErrConflict
// when StoredCardID is not an active card of that customer in (MerchantID,
// Mode) (deleted since it was read, pending, or someone else's): a payment
// is never linked to a card that is not active when the unit commits.
type StoredCardLink struct {
	PaymentID    string
	MerchantID   string
	Mode         Mode
	CustomerID   string
	StoredCardID string
}

// StoredCardDeletion deletes an active card of the customer (a UUID) at At:
// the state becomes deleted and the sealed number, wrapped key and
// fingerprint are erased. It fails the unit with NOT_FOUND when the
// customer has no active card with the id in (MerchantID, Mode), deleted
// cards included.
type StoredCardDeletion struct {
	MerchantID string
	Mode       Mode
	CustomerID string
	ID         string
	At         time.Time
}

// PendingCardActivation activates the pending card of the payment (after a
// successful 3-D Secure challenge or a recovered outcome) and links the
// payment to it. When the customer already has an active card with the
// pending card's fingerprint, the pending card is erased as a deleted one
// and the payment is linked to the existing card instead. It fails the unit
// with NOT_FOUND when the payment has no pending card in (MerchantID, Mode).
type PendingCardActivation struct {
	MerchantID string
	Mode       Mode
	PaymentID  string
	At         time.Time
}

// PendingCardDiscard erases the pending card of the payment (its challenge
// failed or expired), as StoredCardDeletion does. A payment without a
// pending card is left alone: it never fails the unit.
type PendingCardDiscard struct {
	MerchantID string
	Mode       Mode
	PaymentID  string
	At         time.Time
}

// StoredCardRewrap replaces the sealed number of the card ID, when it is
// still sealed under FromKeyID and not deleted (`paygate vault rewrap`). It
// fails the unit with ErrStateConflict when the card changed meanwhile
// (deleted, or rewrapped by another process), with NOT_FOUND when no card
// has the id.
type StoredCardRewrap struct {
	ID        string
	FromKeyID string
	To        SealedCard
	At        time.Time
}

// VaultStore is the part of Store for stored cards (issue 6): encrypted card
// records bound to (merchant, mode, customer).
// Methods follow the rules of Store: one transaction at most, merchant and
// mode filtered in SQL for merchant data, errors as documented on Store.
//
// The store never sees a card number: it keeps what the vault sealed. Its
// writes are operations of a unit (Commit): StoredCard (insert),
// StoredCardLink, StoredCardDeletion, PendingCardActivation,
// PendingCardDiscard and StoredCardRewrap.
type VaultStore interface {
	// StoredCards lists the active cards the query selects, newest first.
	// NOT_FOUND when the customer does not exist for (merchant, mode).
	StoredCards(ctx context.Context, q StoredCardQuery) ([]StoredCard, error)

	// StoredCardsToRewrap returns up to limit cards of any merchant, active
	// or pending, whose KeyID is not keyID and whose id is greater than
	// after, in id order. It serves `paygate vault rewrap` only. A limit <= 0
	// means no limit.
	StoredCardsToRewrap(ctx context.Context, keyID, after string, limit int) ([]StoredCard, error)
	// StoredCardKeyIDs counts the cards that are not deleted by the master
	// key id they are sealed under.
	StoredCardKeyIDs(ctx context.Context) (map[string]int, error)
}

// StoredCardSaver is what SaveStoredCard needs of a Store.
type StoredCardSaver interface {
	StoredCards(ctx context.Context, q StoredCardQuery) ([]StoredCard, error)
	Commit(ctx context.Context, u Unit) error
}

// SaveStoredCard stores c (State active or pending) through st and returns
// the stored card. An active card is deduplicated: when the customer
// already has an active card whose fingerprint is one of match, that card
// is returned with created false and c is not stored. When c.PaymentID is
// set and the card is active, the payment's StoredCardID becomes the
// returned card's id (in the unit that stores c). A pending card is always
// inserted (and not linked to its payment until activated). NOT_FOUND when
// the customer does not exist for (c.MerchantID, c.Mode), or when
// c.PaymentID names no payment of that customer; ErrConflict on a duplicate
// id.
//
// Two concurrent saves of one number may both find no card; the store keeps
// one active card per fingerprint (StoredCard fails with ErrConflict), so
// the later one looks again and finds the first one's card. Likewise the
// card found may be deleted before the payment is linked to it; the link
// then fails with ErrConflict (StoredCardLink) and the save looks again.
func SaveStoredCard(ctx context.Context, st StoredCardSaver, c StoredCard, match []string) (saved StoredCard, created bool, err error) {
	c.CreatedAt, c.UpdatedAt = Normalize(c.CreatedAt), Normalize(c.UpdatedAt)
	linked := c.State == StoredCardActive && c.PaymentID != ""
	for range 3 {
		if c.State == StoredCardActive && len(match) > 0 {
			var cards []StoredCard
			cards, err = st.StoredCards(ctx, StoredCardQuery{
				MerchantID: c.MerchantID, Mode: c.Mode, CustomerID: c.CustomerID, Fingerprints: match,
			})
			if err != nil {
				return StoredCard{}, false, err
			}
			if len(cards) > 0 {
				existing := cards[len(cards)-1] // the oldest
				if !linked {
					return existing, false, nil
				}
				err = st.Commit(ctx, Unit{Ops: []Op{c.link(existing.ID)}})
				if err == nil {
					return existing, false, nil
				}
				if !errors.Is(err, ErrConflict) {
					break
				}
				continue // the card is no longer active: look again
			}
		}
		u := Unit{Ops: []Op{c}}
		if linked {
			u.Add(c.link(c.ID))
		}
		err = st.Commit(ctx, u)
		if err == nil {
			return c, true, nil
		}
		if !errors.Is(err, ErrConflict) {
			break
		}
	}
	return StoredCard{}, false, err
}

// link is the linking of c's payment to the card id.
func (c StoredCard) link(cardID string) StoredCardLink {
	return StoredCardLink{PaymentID: c.PaymentID, MerchantID: c.MerchantID, Mode: c.Mode, CustomerID: c.CustomerID, StoredCardID: cardID}
}
