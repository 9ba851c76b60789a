package payment

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/paygate/paygate/internal/card"
	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/vault"
)

// The stored-card use cases (decisions.md section 13): save a card for a
// customer, delete it, pay with it, and save the card of a card payment.
//
// A stored card's number is decrypted only to be handed to the provider, in
// the request that pays with it; it is encrypted once, in the request that
// saves it. Between the two it exists only as the vault's ciphertext.

// newStoredCard returns the stored card of c for the customer, sealed by
// the vault, in the state given. Nothing of c's CVV is kept.
func (s *Service) newStoredCard(merchantID string, mode paygate.Mode, customerID string, c paygate.Card, state paygate.StoredCardState, paymentID string) (paygate.StoredCard, error) {
	now := s.clock.Now()
	sc := paygate.StoredCard{
		ID: id.New(), MerchantID: merchantID, Mode: mode, CustomerID: customerID,
		State: state, PaymentID: paymentID,
		Brand: card.Brand(c.Number.Reveal()), Last4: c.Number.Last4(),
		ExpMonth: c.ExpMonth, ExpYear: c.ExpYear, HolderName: c.HolderName,
		CreatedAt: now, UpdatedAt: now,
	}
	sealed, err := s.vault.Seal(sc, c.Number)
	if err != nil {
		return paygate.StoredCard{}, fmt.Errorf("seal stored card: %w", err)
	}
	sc.Sealed = sealed
	return sc, nil
}

// SaveCard stores a card (validated, without CVV) for the customer of
// (merchant, mode) with the id, and stores the answer (201 with the stored
// card) under the request's idempotency key. Saving a number the customer
// already has answers that card. Errors (nothing stored): NOT_FOUND when the
// customer does not exist; internal failures.
func (s *Service) SaveCard(ctx context.Context, req Request, customerID string, c paygate.Card) (Result, error) {
	sc, err := s.newStoredCard(req.MerchantID, req.Mode, customerID, c, paygate.StoredCardActive, "")
	if err != nil {
		return Result{}, err
	}
	saved, created, err := paygate.SaveStoredCard(ctx, s.store, sc, s.vault.Fingerprints(c.Number))
	if err != nil {
		return Result{}, fmt.Errorf("save stored card: %w", err)
	}
	if created {
		s.log.LogAttrs(ctx, levelInfo, "card stored", attrStoredCard(saved), strAttr("key_id", saved.Sealed.KeyID))
	}
	return s.storeResult(ctx, req, Result{Kind: CardStored, StoredCard: &saved})
}

// DeleteCard deletes an active stored card of the customer: it can no
// longer be used, and its encrypted number is erased. NOT_FOUND when the
// customer has no such card (a deleted card included).
func (s *Service) DeleteCard(ctx context.Context, merchantID string, mode paygate.Mode, customerID, cardID string) error {
	del := paygate.StoredCardDeletion{MerchantID: merchantID, Mode: mode, CustomerID: customerID, ID: cardID, At: s.clock.Now()}
	if err := s.store.Commit(ctx, paygate.Unit{Ops: []paygate.Op{del}}); err != nil {
		return err
	}
	s.log.LogAttrs(ctx, levelInfo, "stored card deleted",
		slog.Group("stored_card", slog.String("id", cardID), slog.String("merchant", merchantID), slog.String("mode", string(mode))))
	return nil
}

// storedCard returns the card a stored_card payment names, decrypted for
// the provider call: INVALID_REQUEST param storedCardId when the customer of
// in.CustomerExternalID has no active card with the id (no customer is
// created for it), or when the card has expired. A card that cannot be
// decrypted (its record altered or moved, or its master key not configured)
// is an internal failure, logged without anything of the number.
func (s *Service) storedCard(ctx context.Context, req Request, in CreateInput) (paygate.Card, error) {
	cards, err := s.store.StoredCards(ctx, paygate.StoredCardQuery{
		MerchantID: req.MerchantID, Mode: req.Mode, CustomerExternalID: in.CustomerExternalID, ID: in.StoredCardID,
	})
	if paygate.IsNotFound(err) || (err == nil && len(cards) == 0) {
		return paygate.Card{}, paygate.Errorf(paygate.CodeInvalidRequest, "storedCardId", "no stored card with this id exists for the customer")
	}
	if err != nil {
		return paygate.Card{}, fmt.Errorf("load stored card: %w", err)
	}
	sc := cards[0]
	if card.Expired(sc.ExpMonth, sc.ExpYear, s.clock.Now()) {
		return paygate.Card{}, paygate.Errorf(paygate.CodeInvalidRequest, "storedCardId", "the stored card has expired")
	}
	pan, err := s.vault.Open(sc)
	if err != nil {
		s.log.LogAttrs(ctx, slog.LevelError, "stored card could not be decrypted",
			attrStoredCard(sc), strAttr("key_id", sc.Sealed.KeyID), strAttr("error", err.Error()))
		return paygate.Card{}, fmt.Errorf("open stored card %s: %w", sc.ID, err)
	}
	return paygate.Card{Number: pan, ExpMonth: sc.ExpMonth, ExpYear: sc.ExpYear, HolderName: sc.HolderName}, nil
}

// saveCard stores the card of a card payment with saveCard, once the
// provider has answered: a captured or authorized payment stores it (or
// finds the customer's card of the same number) and is linked to it, and
// the id is returned for the creation result. A payment whose outcome is
// still open (pending_3ds, or unknown after a timeout) stores it pending,
// because the number cannot be encrypted any later: settlePendingCard
// activates or erases it once the payment is final. Any other outcome
// stores nothing.
//
// The payment has been charged by now, so a failure to save is logged and
// the payment answered without storedCardId, never turned into an error
// that would free the idempotency key for a second charge.
func (s *Service) saveCard(ctx context.Context, p paygate.Payment, c paygate.Card, res paygate.ChargeResult, perr *paygate.ProviderError) string {
	var state paygate.StoredCardState
	switch {
	case perr != nil && perr.Kind == paygate.ProviderUnknownOutcome, perr == nil && res.Status == paygate.PaymentPending3DS:
		state = paygate.StoredCardPending
	case perr == nil && (res.Status == paygate.PaymentCaptured || res.Status == paygate.PaymentAuthorized):
		state = paygate.StoredCardActive
	default:
		return ""
	}
	if p.CustomerID == "" {
		// A token payment is inserted by a unit, which does not hand
		// back the customer it resolved (tokenInsert).
		stored, err := s.store.PaymentByID(ctx, p.MerchantID, p.Mode, p.ID)
		if err != nil {
			s.log.LogAttrs(ctx, slog.LevelError, "card not stored", attrPayment(p), strAttr("error", err.Error()))
			return ""
		}
		p.CustomerID = stored.CustomerID
	}
	sc, err := s.newStoredCard(p.MerchantID, p.Mode, p.CustomerID, c, state, p.ID)
	if err == nil {
		sc, _, err = paygate.SaveStoredCard(ctx, s.store, sc, s.vault.Fingerprints(c.Number))
	}
	if err != nil {
		s.log.LogAttrs(ctx, slog.LevelError, "card not stored", attrPayment(p), strAttr("error", err.Error()))
		return ""
	}
	if state == paygate.StoredCardPending {
		return ""
	}
	return sc.ID
}

// settlePendingCard finishes the pending stored card of a payment that
// reached its final status after the request that created it (3-D Secure
// completed or expired, or recovery resolved an unknown outcome): captured
// or authorized activates the card (or links the customer's card of the
// same number) and returns its id, which the payment record now shows; any
// other status erases it. A payment without a pending card is left alone.
// Failures are logged: the payment's outcome stands either way.
func (s *Service) settlePendingCard(ctx context.Context, p paygate.Payment) string {
	now := s.clock.Now()
	switch p.Status {
	case paygate.PaymentCaptured, paygate.PaymentAuthorized:
		activate := paygate.PendingCardActivation{MerchantID: p.MerchantID, Mode: p.Mode, PaymentID: p.ID, At: now}
		err := s.store.Commit(ctx, paygate.Unit{Ops: []paygate.Op{activate}})
		if paygate.IsNotFound(err) {
			return ""
		}
		var linked paygate.Payment
		if err == nil {
			// The card the payment is now linked to: its pending card, or
			// the customer's card of the same number.
			linked, err = s.store.PaymentByID(ctx, p.MerchantID, p.Mode, p.ID)
		}
		if err != nil {
			s.log.LogAttrs(ctx, slog.LevelError, "pending card not stored", attrPayment(p), strAttr("error", err.Error()))
			return ""
		}
		return linked.StoredCardID
	case paygate.PaymentFailed, paygate.PaymentVoided:
		discard := paygate.PendingCardDiscard{MerchantID: p.MerchantID, Mode: p.Mode, PaymentID: p.ID, At: now}
		if err := s.store.Commit(ctx, paygate.Unit{Ops: []paygate.Op{discard}}); err != nil {
			s.log.LogAttrs(ctx, slog.LevelError, "pending card not erased", attrPayment(p), strAttr("error", err.Error()))
		}
	}
	return ""
}

// settleRecoveredCard settles the pending card of a payment whose unknown
// outcome recovery is about to write (res, or perr): before the write, so
// that the answer recovery stores shows the card as the creating request's
// would have.
func (s *Service) settleRecoveredCard(ctx context.Context, p paygate.Payment, res paygate.ChargeResult, perr *paygate.ProviderError) string {
	if perr != nil {
		p.Status = paygate.PaymentFailed
	} else {
		p.Status = res.Status
	}
	return s.settlePendingCard(ctx, p)
}

// attrStoredCard names a stored card in a log line: ids, brand and last
// four, nothing more.
func attrStoredCard(c paygate.StoredCard) slog.Attr {
	return slog.Group("stored_card", slog.String("id", c.ID), slog.String("merchant", c.MerchantID),
		slog.String("mode", string(c.Mode)), slog.String("customer", c.CustomerID),
		slog.String("brand", c.Brand), slog.String("last4", c.Last4))
}

// RewrapResult is what Rewrap did.
type RewrapResult struct {
	KeyID     string // the key every card is now sealed under
	Rewrapped int    // cards moved to it
}

// RewrapStore is what Rewrap needs of a Store.
type RewrapStore interface {
	StoredCardsToRewrap(ctx context.Context, keyID, after string, limit int) ([]paygate.StoredCard, error)
	Commit(ctx context.Context, u paygate.Unit) error
}

// Rewrap seals every stored card that is not under the vault's first master
// key afresh under it (a new data key, and the fingerprint under the new
// key), page by page. It stops at the first card it cannot open, naming the
// card and its key id: a card whose key is not configured stays unreadable
// until that key is given again.
func Rewrap(ctx context.Context, st RewrapStore, v *vault.Vault, clock paygate.Clock) (RewrapResult, error) {
	const page = 100
	res := RewrapResult{KeyID: v.PrimaryKeyID()}
	after := ""
	for {
		cards, err := st.StoredCardsToRewrap(ctx, res.KeyID, after, page)
		if err != nil {
			return res, fmt.Errorf("list stored cards: %w", err)
		}
		for _, c := range cards {
			after = c.ID
			sealed, moved, err := v.Rewrap(c)
			if err != nil {
				return res, fmt.Errorf("stored card %s (key id %s): %w", c.ID, c.Sealed.KeyID, err)
			}
			if !moved {
				continue
			}
			rewrap := paygate.StoredCardRewrap{ID: c.ID, FromKeyID: c.Sealed.KeyID, To: sealed, At: clock.Now()}
			err = st.Commit(ctx, paygate.Unit{Ops: []paygate.Op{rewrap}})
			if errors.Is(err, paygate.ErrStateConflict) || paygate.IsNotFound(err) {
				continue // deleted or moved meanwhile
			}
			if err != nil {
				return res, fmt.Errorf("rewrap stored card %s: %w", c.ID, err)
			}
			res.Rewrapped++
		}
		if len(cards) < page {
			return res, nil
		}
	}
}
