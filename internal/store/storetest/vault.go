package storetest

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// sealedValue returns a sealed card as the vault would make it: random bytes
// the store must keep exactly, under the key id.
func sealedValue(keyID string) paygate.SealedCard {
	return paygate.SealedCard{
		KeyID:       keyID,
		WrappedKey:  randomBytes(61),
		Ciphertext:  randomBytes(45),
		Fingerprint: hex.EncodeToString(randomBytes(32)),
	}
}

// customer creates a customer of (merchant, mode) with the external id.
func (f fixture) customer(t *testing.T, mode paygate.Mode, externalID string) paygate.Customer {
	t.Helper()
	c, err := f.s.UpsertCustomer(ctx(t), paygate.CustomerUpsert{
		NewID: newID(), MerchantID: f.merchant.ID, Mode: mode, ExternalID: externalID, Now: base,
	})
	must(t, err)
	return c
}

// storedCardValue returns an active card of the customer, created at the
// time; it is not stored.
func storedCardValue(c paygate.Customer, created time.Time) paygate.StoredCard {
	return paygate.StoredCard{
		ID: newID(), MerchantID: c.MerchantID, Mode: c.Mode, CustomerID: c.ID,
		State: paygate.StoredCardActive, Brand: "visa", Last4: "4242", ExpMonth: 12, ExpYear: 2034,
		HolderName: "Ada Lovelace", Sealed: sealedValue("k1-" + newID()[:8]),
		CreatedAt: created, UpdatedAt: created,
	}
}

// saveCard stores the card and fails unless it was created.
func saveCard(t *testing.T, s paygate.Store, c paygate.StoredCard) paygate.StoredCard {
	t.Helper()
	got, created, err := paygate.SaveStoredCard(ctx(t), s, c, []string{c.Sealed.Fingerprint})
	must(t, err)
	if !created {
		t.Fatalf("card %s was not created", c.ID)
	}
	return got
}

// oneCard returns the one card the query selects, or NOT_FOUND.
func oneCard(c context.Context, s paygate.Store, q paygate.StoredCardQuery) (paygate.StoredCard, error) {
	cards, err := s.StoredCards(c, q)
	switch {
	case err != nil:
		return paygate.StoredCard{}, err
	case len(cards) == 0:
		return paygate.StoredCard{}, paygate.Errorf(paygate.CodeNotFound, "", "no such stored card")
	case len(cards) > 1:
		return paygate.StoredCard{}, fmt.Errorf("%d stored cards have one id", len(cards))
	}
	return cards[0], nil
}

// activateCard commits the activation of the payment's pending card and
// returns the card the payment is now linked to, as the payment service
// reads it back.
func activateCard(c context.Context, s paygate.Store, merchantID string, mode paygate.Mode, paymentID string, now time.Time) (paygate.StoredCard, error) {
	err := s.Commit(c, paygate.Unit{Ops: []paygate.Op{paygate.PendingCardActivation{
		MerchantID: merchantID, Mode: mode, PaymentID: paymentID, At: now,
	}}})
	if err != nil {
		return paygate.StoredCard{}, err
	}
	p, err := s.PaymentByID(c, merchantID, mode, paymentID)
	if err != nil {
		return paygate.StoredCard{}, err
	}
	return oneCard(c, s, paygate.StoredCardQuery{MerchantID: merchantID, Mode: mode, CustomerID: p.CustomerID, ID: p.StoredCardID})
}

// wantNoCard fails unless the card is invisible to the customer's reads.
func wantNoCard(t *testing.T, s paygate.Store, c paygate.StoredCard, externalID string) {
	t.Helper()
	_, err := oneCard(ctx(t), s, paygate.StoredCardQuery{MerchantID: c.MerchantID, Mode: c.Mode, CustomerID: c.CustomerID, ID: c.ID})
	wantNotFound(t, err)
	_, err = oneCard(ctx(t), s, paygate.StoredCardQuery{MerchantID: c.MerchantID, Mode: c.Mode, CustomerExternalID: externalID, ID: c.ID})
	wantNotFound(t, err)
	list, err := s.StoredCards(ctx(t), paygate.StoredCardQuery{MerchantID: c.MerchantID, Mode: c.Mode, CustomerID: c.CustomerID})
	must(t, err)
	for _, l := range list {
		if l.ID == c.ID {
			t.Fatalf("card %s is listed", c.ID)
		}
	}
}

func vaultCases() []testCase {
	return []testCase{
		{"SaveAndRead", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			cust := f.customer(t, paygate.ModeTest, "cust-1")
			want := storedCardValue(cust, at(time.Hour))
			got := saveCard(t, s, want)
			equal(t, "saved card", want, got)
			got, err := oneCard(ctx(t), s, paygate.StoredCardQuery{MerchantID: f.merchant.ID, Mode: paygate.ModeTest, CustomerID: cust.ID, ID: want.ID})
			must(t, err)
			equal(t, "card by id", want, got)
			got, err = oneCard(ctx(t), s, paygate.StoredCardQuery{MerchantID: f.merchant.ID, Mode: paygate.ModeTest, CustomerExternalID: "cust-1", ID: want.ID})
			must(t, err)
			equal(t, "card by customer reference", want, got)
			list, err := s.StoredCards(ctx(t), paygate.StoredCardQuery{MerchantID: f.merchant.ID, Mode: paygate.ModeTest, CustomerID: cust.ID})
			must(t, err)
			if len(list) != 1 {
				t.Fatalf("listed %d cards, want 1", len(list))
			}
			equal(t, "listed card", want, list[0])
		}},
		{"SaveDeduplicatesByFingerprint", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			cust := f.customer(t, paygate.ModeTest, "cust-1")
			first := saveCard(t, s, storedCardValue(cust, at(time.Hour)))
			// Another seal of the same number: its fingerprint under an
			// older key matches the stored one.
			again := storedCardValue(cust, at(2*time.Hour))
			got, created, err := paygate.SaveStoredCard(ctx(t), s, again, []string{again.Sealed.Fingerprint, first.Sealed.Fingerprint})
			must(t, err)
			if created {
				t.Fatal("the same number was stored twice")
			}
			equal(t, "existing card", first, got)
			// Another number is another card.
			other := saveCard(t, s, storedCardValue(cust, at(3*time.Hour)))
			list, err := s.StoredCards(ctx(t), paygate.StoredCardQuery{MerchantID: f.merchant.ID, Mode: paygate.ModeTest, CustomerID: cust.ID})
			must(t, err)
			if len(list) != 2 || list[0].ID != other.ID || list[1].ID != first.ID {
				t.Fatalf("listed %v, want the two cards newest first", list)
			}
			// The same fingerprint for another customer is not a duplicate.
			cust2 := f.customer(t, paygate.ModeTest, "cust-2")
			c2 := storedCardValue(cust2, at(4*time.Hour))
			c2.Sealed.Fingerprint = first.Sealed.Fingerprint
			saveCard(t, s, c2)
		}},
		{"SaveNeedsTheCustomer", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			other := newMerchant(t, s, base)
			cust := f.customer(t, paygate.ModeTest, "cust-1")
			for name, change := range map[string]func(c *paygate.StoredCard){
				"Missing":       func(c *paygate.StoredCard) { c.CustomerID = newID() },
				"OtherMode":     func(c *paygate.StoredCard) { c.Mode = paygate.ModeLive },
				"OtherMerchant": func(c *paygate.StoredCard) { c.MerchantID = other.merchant.ID },
			} {
				c := storedCardValue(cust, base)
				change(&c)
				if _, _, err := paygate.SaveStoredCard(ctx(t), s, c, []string{c.Sealed.Fingerprint}); !paygate.IsNotFound(err) {
					t.Errorf("%s: got %v, want NOT_FOUND", name, err)
				}
			}
			keys, err := s.StoredCardKeyIDs(ctx(t))
			must(t, err)
			if len(keys) != 0 {
				t.Fatalf("refused saves stored cards: %v", keys)
			}
		}},
		{"SaveDuplicateID", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			cust := f.customer(t, paygate.ModeTest, "cust-1")
			c := saveCard(t, s, storedCardValue(cust, base))
			dup := storedCardValue(cust, base)
			dup.ID = c.ID
			_, _, err := paygate.SaveStoredCard(ctx(t), s, dup, []string{dup.Sealed.Fingerprint})
			wantIs(t, err, paygate.ErrConflict)
		}},
		{"SaveLinksThePayment", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			p := f.createPayment(t, f.paymentValue(paygate.ModeTest, at(time.Hour)), "cust-1")
			cust, err := s.CustomerByID(ctx(t), f.merchant.ID, paygate.ModeTest, p.CustomerID)
			must(t, err)
			c := storedCardValue(cust, at(time.Hour))
			c.PaymentID = p.ID
			saved := saveCard(t, s, c)
			got, err := s.PaymentByID(ctx(t), p.MerchantID, p.Mode, p.ID)
			must(t, err)
			if got.StoredCardID != saved.ID || saved.PaymentID != p.ID {
				t.Fatalf("payment's stored card %q, card's payment %q; want %s and %s", got.StoredCardID, saved.PaymentID, saved.ID, p.ID)
			}
			// A second payment with the same number links the existing card.
			p2 := f.createPayment(t, f.paymentValue(paygate.ModeTest, at(2*time.Hour)), "cust-1")
			again := storedCardValue(cust, at(2*time.Hour))
			again.PaymentID = p2.ID
			dup, created, err := paygate.SaveStoredCard(ctx(t), s, again, []string{saved.Sealed.Fingerprint})
			must(t, err)
			got, err = s.PaymentByID(ctx(t), p2.MerchantID, p2.Mode, p2.ID)
			must(t, err)
			if created || dup.ID != saved.ID || got.StoredCardID != saved.ID {
				t.Fatalf("second payment: created %v, card %s, linked %q; want the existing %s", created, dup.ID, got.StoredCardID, saved.ID)
			}
			// A payment of another customer is refused, and nothing stored.
			p3 := f.createPayment(t, f.paymentValue(paygate.ModeTest, at(3*time.Hour)), "cust-other")
			bad := storedCardValue(cust, at(3*time.Hour))
			bad.PaymentID = p3.ID
			_, _, err = paygate.SaveStoredCard(ctx(t), s, bad, []string{bad.Sealed.Fingerprint})
			wantNotFound(t, err)
			wantNoCard(t, s, bad, "cust-1")
		}},
		{"LinkNeedsAnActiveCard", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			p := f.createPayment(t, f.paymentValue(paygate.ModeTest, at(time.Hour)), "cust-1")
			cust, err := s.CustomerByID(ctx(t), f.merchant.ID, paygate.ModeTest, p.CustomerID)
			must(t, err)
			deleted := saveCard(t, s, storedCardValue(cust, base))
			must(t, commitOp(ctx(t), s, paygate.StoredCardDeletion{MerchantID: p.MerchantID, Mode: p.Mode, CustomerID: cust.ID, ID: deleted.ID, At: base}))
			pending := storedCardValue(cust, base)
			pending.State, pending.PaymentID = paygate.StoredCardPending, p.ID
			pending = saveCard(t, s, pending)
			cust2 := f.customer(t, paygate.ModeTest, "cust-2")
			others := saveCard(t, s, storedCardValue(cust2, base))
			liveCust := f.customer(t, paygate.ModeLive, "cust-1")
			live := saveCard(t, s, storedCardValue(liveCust, base))
			for name, cardID := range map[string]string{
				"Deleted":       deleted.ID,
				"Pending":       pending.ID,
				"OtherCustomer": others.ID,
				"OtherMode":     live.ID,
				"Missing":       newID(),
			} {
				err := commitOp(ctx(t), s, paygate.StoredCardLink{PaymentID: p.ID, MerchantID: p.MerchantID, Mode: p.Mode, CustomerID: cust.ID, StoredCardID: cardID})
				if !errors.Is(err, paygate.ErrConflict) {
					t.Errorf("%s: got %v, want ErrConflict", name, err)
				}
				got, err := s.PaymentByID(ctx(t), p.MerchantID, p.Mode, p.ID)
				must(t, err)
				if got.StoredCardID != "" {
					t.Fatalf("%s: the payment was linked to %s", name, got.StoredCardID)
				}
			}
			// A payment that is not the customer's is still NOT_FOUND, the
			// card active or not.
			wantNotFound(t, commitOp(ctx(t), s, paygate.StoredCardLink{PaymentID: newID(), MerchantID: p.MerchantID, Mode: p.Mode, CustomerID: cust.ID, StoredCardID: deleted.ID}))
		}},
		{"SaveLooksAgainWhenTheCardIsDeleted", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			p := f.createPayment(t, f.paymentValue(paygate.ModeTest, at(time.Hour)), "cust-1")
			cust, err := s.CustomerByID(ctx(t), f.merchant.ID, paygate.ModeTest, p.CustomerID)
			must(t, err)
			first := saveCard(t, s, storedCardValue(cust, base))
			// The same number, saved by a payment: the dedupe finds first,
			// which is deleted before the payment is linked to it.
			again := storedCardValue(cust, at(time.Hour))
			again.Sealed.Fingerprint, again.PaymentID = first.Sealed.Fingerprint, p.ID
			racing := &deleteAfterRead{Store: s, t: t, del: paygate.StoredCardDeletion{
				MerchantID: p.MerchantID, Mode: p.Mode, CustomerID: cust.ID, ID: first.ID, At: at(time.Hour),
			}}
			got, created, err := paygate.SaveStoredCard(ctx(t), racing, again, []string{first.Sealed.Fingerprint})
			must(t, err)
			if !created || got.ID != again.ID {
				t.Fatalf("save after the found card was deleted: created %v, card %s; want the new card %s", created, got.ID, again.ID)
			}
			linked, err := s.PaymentByID(ctx(t), p.MerchantID, p.Mode, p.ID)
			must(t, err)
			if linked.StoredCardID != again.ID {
				t.Fatalf("payment linked to %q, want the new card %s (not the deleted %s)", linked.StoredCardID, again.ID, first.ID)
			}
			wantNoCard(t, s, first, "cust-1")
			saved, err := oneCard(ctx(t), s, paygate.StoredCardQuery{MerchantID: p.MerchantID, Mode: p.Mode, CustomerID: cust.ID, ID: again.ID})
			must(t, err)
			equal(t, "new card", again, saved)
		}},
		{"ScopedByMerchantModeAndCustomer", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			other := newMerchant(t, s, base)
			cust := f.customer(t, paygate.ModeTest, "cust-1")
			f.customer(t, paygate.ModeLive, "cust-1")
			other.customer(t, paygate.ModeTest, "cust-1")
			cust2 := f.customer(t, paygate.ModeTest, "cust-2")
			c := saveCard(t, s, storedCardValue(cust, base))
			// Every combination but the card's own: (merchant, mode,
			// customer id, customer external id).
			type scope struct {
				merchant   string
				mode       paygate.Mode
				customer   string
				externalID string
			}
			for name, sc := range map[string]scope{
				"OtherCustomer": {f.merchant.ID, paygate.ModeTest, cust2.ID, "cust-2"},
				"OtherMode":     {f.merchant.ID, paygate.ModeLive, cust.ID, "cust-1"},
				"OtherMerchant": {other.merchant.ID, paygate.ModeTest, cust.ID, "cust-1"},
				"NoCustomer":    {f.merchant.ID, paygate.ModeTest, newID(), "nobody"},
			} {
				_, err := oneCard(ctx(t), s, paygate.StoredCardQuery{MerchantID: sc.merchant, Mode: sc.mode, CustomerID: sc.customer, ID: c.ID})
				if !paygate.IsNotFound(err) {
					t.Errorf("%s: by id: got %v, want NOT_FOUND", name, err)
				}
				_, err = oneCard(ctx(t), s, paygate.StoredCardQuery{MerchantID: sc.merchant, Mode: sc.mode, CustomerExternalID: sc.externalID, ID: c.ID})
				if !paygate.IsNotFound(err) {
					t.Errorf("%s: by customer reference: got %v, want NOT_FOUND", name, err)
				}
				if err := commitOp(ctx(t), s, paygate.StoredCardDeletion{MerchantID: sc.merchant, Mode: sc.mode, CustomerID: sc.customer, ID: c.ID, At: base}); !paygate.IsNotFound(err) {
					t.Errorf("%s: delete: got %v, want NOT_FOUND", name, err)
				}
				list, err := s.StoredCards(ctx(t), paygate.StoredCardQuery{MerchantID: sc.merchant, Mode: sc.mode, CustomerID: sc.customer})
				if sc.customer != cust2.ID && !paygate.IsNotFound(err) {
					t.Errorf("%s: list: got %v, want NOT_FOUND (no such customer there)", name, err)
				}
				if slices.ContainsFunc(list, func(l paygate.StoredCard) bool { return l.ID == c.ID }) {
					t.Errorf("%s: the card is listed", name)
				}
			}
			list, err := s.StoredCards(ctx(t), paygate.StoredCardQuery{MerchantID: f.merchant.ID, Mode: paygate.ModeTest, CustomerID: cust2.ID})
			must(t, err)
			if list == nil || len(list) != 0 {
				t.Errorf("another customer's list: %v, want empty (not nil)", list)
			}
			// The card is still there for its customer.
			_, err = oneCard(ctx(t), s, paygate.StoredCardQuery{MerchantID: f.merchant.ID, Mode: paygate.ModeTest, CustomerID: cust.ID, ID: c.ID})
			must(t, err)
		}},
		{"ListNewestFirst", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			cust := f.customer(t, paygate.ModeTest, "cust-1")
			var ids []string
			for i := range 4 {
				created := at(time.Hour) // equal times: insertion order breaks the tie
				if i == 3 {
					created = at(2 * time.Hour)
				}
				ids = append(ids, saveCard(t, s, storedCardValue(cust, created)).ID)
			}
			list, err := s.StoredCards(ctx(t), paygate.StoredCardQuery{MerchantID: f.merchant.ID, Mode: paygate.ModeTest, CustomerID: cust.ID})
			must(t, err)
			if len(list) != 4 {
				t.Fatalf("listed %d cards, want 4", len(list))
			}
			for i, c := range list {
				if c.ID != ids[3-i] {
					t.Fatalf("card %d is %s, want %s (newest first)", i, c.ID, ids[3-i])
				}
			}
		}},
		{"DeleteErases", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			cust := f.customer(t, paygate.ModeTest, "cust-1")
			c := saveCard(t, s, storedCardValue(cust, base))
			keep := saveCard(t, s, storedCardValue(cust, base))
			must(t, commitOp(ctx(t), s, paygate.StoredCardDeletion{MerchantID: f.merchant.ID, Mode: paygate.ModeTest, CustomerID: cust.ID, ID: c.ID, At: at(time.Hour)}))
			wantNoCard(t, s, c, "cust-1")
			wantNotFound(t, commitOp(ctx(t), s, paygate.StoredCardDeletion{MerchantID: f.merchant.ID, Mode: paygate.ModeTest, CustomerID: cust.ID, ID: c.ID, At: at(2 * time.Hour)}))
			// The sealed number is gone: nothing to rewrap, nothing counted.
			keys, err := s.StoredCardKeyIDs(ctx(t))
			must(t, err)
			if len(keys) != 1 || keys[keep.Sealed.KeyID] != 1 {
				t.Errorf("key ids after delete: %v, want only the kept card's", keys)
			}
			todo, err := s.StoredCardsToRewrap(ctx(t), "another-key", "", 0)
			must(t, err)
			if len(todo) != 1 || todo[0].ID != keep.ID {
				t.Errorf("cards to rewrap after delete: %v", todo)
			}
			wantIs(t, commitOp(ctx(t), s, paygate.StoredCardRewrap{ID: c.ID, FromKeyID: c.Sealed.KeyID, To: sealedValue("k2"), At: at(time.Hour)}), paygate.ErrStateConflict)
			// Saving the number again makes a new card.
			again := storedCardValue(cust, at(3*time.Hour))
			again.Sealed.Fingerprint = c.Sealed.Fingerprint
			got, created, err := paygate.SaveStoredCard(ctx(t), s, again, []string{again.Sealed.Fingerprint})
			must(t, err)
			if !created || got.ID == c.ID {
				t.Fatalf("re-saving a deleted number: created %v, id %s", created, got.ID)
			}
		}},
		{"PendingActivates", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			p := f.createPayment(t, f.paymentValue(paygate.ModeTest, at(time.Hour)), "cust-1")
			cust, err := s.CustomerByID(ctx(t), f.merchant.ID, paygate.ModeTest, p.CustomerID)
			must(t, err)
			c := storedCardValue(cust, at(time.Hour))
			c.State, c.PaymentID = paygate.StoredCardPending, p.ID
			saved := saveCard(t, s, c)
			equal(t, "pending card", c, saved)
			wantNoCard(t, s, c, "cust-1")
			if got, _ := s.PaymentByID(ctx(t), p.MerchantID, p.Mode, p.ID); got.StoredCardID != "" {
				t.Fatal("a pending card is linked to its payment")
			}
			// Only the payment's merchant and mode can activate it.
			_, err = activateCard(ctx(t), s, f.merchant.ID, paygate.ModeLive, p.ID, at(2*time.Hour))
			wantNotFound(t, err)

			got, err := activateCard(ctx(t), s, f.merchant.ID, paygate.ModeTest, p.ID, at(2*time.Hour))
			must(t, err)
			want := c
			want.State, want.UpdatedAt = paygate.StoredCardActive, at(2*time.Hour)
			equal(t, "activated card", want, got)
			byID, err := oneCard(ctx(t), s, paygate.StoredCardQuery{MerchantID: f.merchant.ID, Mode: paygate.ModeTest, CustomerID: cust.ID, ID: c.ID})
			must(t, err)
			equal(t, "active card", want, byID)
			pay, err := s.PaymentByID(ctx(t), p.MerchantID, p.Mode, p.ID)
			must(t, err)
			if pay.StoredCardID != c.ID {
				t.Fatalf("payment's stored card %q, want %s", pay.StoredCardID, c.ID)
			}
			_, err = activateCard(ctx(t), s, f.merchant.ID, paygate.ModeTest, p.ID, at(3*time.Hour))
			wantNotFound(t, err)
		}},
		{"PendingJoinsTheExistingCard", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			p := f.createPayment(t, f.paymentValue(paygate.ModeTest, at(time.Hour)), "cust-1")
			cust, err := s.CustomerByID(ctx(t), f.merchant.ID, paygate.ModeTest, p.CustomerID)
			must(t, err)
			pending := storedCardValue(cust, at(time.Hour))
			pending.State, pending.PaymentID = paygate.StoredCardPending, p.ID
			saveCard(t, s, pending)
			// Meanwhile the customer saved the same number directly.
			direct := storedCardValue(cust, at(90*time.Minute))
			direct.Sealed.Fingerprint = pending.Sealed.Fingerprint
			direct = saveCard(t, s, direct)

			got, err := activateCard(ctx(t), s, f.merchant.ID, paygate.ModeTest, p.ID, at(2*time.Hour))
			must(t, err)
			equal(t, "card of the payment", direct, got)
			pay, err := s.PaymentByID(ctx(t), p.MerchantID, p.Mode, p.ID)
			must(t, err)
			if pay.StoredCardID != direct.ID {
				t.Fatalf("payment's stored card %q, want the existing %s", pay.StoredCardID, direct.ID)
			}
			list, err := s.StoredCards(ctx(t), paygate.StoredCardQuery{MerchantID: f.merchant.ID, Mode: paygate.ModeTest, CustomerID: cust.ID})
			must(t, err)
			if len(list) != 1 {
				t.Fatalf("listed %d cards, want 1", len(list))
			}
			keys, err := s.StoredCardKeyIDs(ctx(t))
			must(t, err)
			if len(keys) != 1 || keys[direct.Sealed.KeyID] != 1 {
				t.Errorf("the pending card was not erased: key ids %v", keys)
			}
		}},
		{"PendingDiscarded", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			p := f.createPayment(t, f.paymentValue(paygate.ModeTest, at(time.Hour)), "cust-1")
			cust, err := s.CustomerByID(ctx(t), f.merchant.ID, paygate.ModeTest, p.CustomerID)
			must(t, err)
			c := storedCardValue(cust, at(time.Hour))
			c.State, c.PaymentID = paygate.StoredCardPending, p.ID
			saveCard(t, s, c)
			// Another merchant's discard leaves it alone.
			other := newMerchant(t, s, base)
			must(t, commitOp(ctx(t), s, paygate.PendingCardDiscard{MerchantID: other.merchant.ID, Mode: paygate.ModeTest, PaymentID: p.ID, At: at(2 * time.Hour)}))
			if keys, _ := s.StoredCardKeyIDs(ctx(t)); len(keys) != 1 {
				t.Fatalf("another merchant discarded the card: %v", keys)
			}
			must(t, commitOp(ctx(t), s, paygate.PendingCardDiscard{MerchantID: f.merchant.ID, Mode: paygate.ModeTest, PaymentID: p.ID, At: at(2 * time.Hour)}))
			keys, err := s.StoredCardKeyIDs(ctx(t))
			must(t, err)
			if len(keys) != 0 {
				t.Fatalf("discarded card still sealed: %v", keys)
			}
			_, err = activateCard(ctx(t), s, f.merchant.ID, paygate.ModeTest, p.ID, at(3*time.Hour))
			wantNotFound(t, err)
			// Nothing to discard is no error.
			must(t, commitOp(ctx(t), s, paygate.PendingCardDiscard{MerchantID: f.merchant.ID, Mode: paygate.ModeTest, PaymentID: p.ID, At: at(3 * time.Hour)}))
			wantNoCard(t, s, c, "cust-1")
		}},
		{"Rewrap", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			cust := f.customer(t, paygate.ModeTest, "cust-1")
			var old []paygate.StoredCard
			for range 5 {
				c := storedCardValue(cust, base)
				c.Sealed.KeyID = "old"
				old = append(old, saveCard(t, s, c))
			}
			current := storedCardValue(cust, base)
			current.Sealed.KeyID = "new"
			saveCard(t, s, current)
			pending := storedCardValue(cust, base)
			pending.Sealed.KeyID = "old"
			pending.State, pending.PaymentID = paygate.StoredCardPending, f.newPayment(t, paygate.ModeTest, base).ID
			saveCard(t, s, pending)

			keys, err := s.StoredCardKeyIDs(ctx(t))
			must(t, err)
			if len(keys) != 2 || keys["old"] != 6 || keys["new"] != 1 {
				t.Fatalf("key ids %v, want old: 6, new: 1", keys)
			}
			// Page through the cards not under "new", in id order.
			var seen []paygate.StoredCard
			after := ""
			for {
				page, err := s.StoredCardsToRewrap(ctx(t), "new", after, 2)
				must(t, err)
				seen = append(seen, page...)
				if len(page) < 2 {
					break
				}
				after = page[len(page)-1].ID
			}
			if len(seen) != 6 {
				t.Fatalf("cards to rewrap: %d, want 6 (the pending one too)", len(seen))
			}
			for i := 1; i < len(seen); i++ {
				if seen[i-1].ID >= seen[i].ID {
					t.Fatal("cards to rewrap are not in id order")
				}
			}
			for _, c := range seen {
				to := sealedValue("new")
				must(t, commitOp(ctx(t), s, paygate.StoredCardRewrap{ID: c.ID, FromKeyID: "old", To: to, At: at(time.Hour)}))
				if c.State == paygate.StoredCardActive {
					got, err := oneCard(ctx(t), s, paygate.StoredCardQuery{MerchantID: f.merchant.ID, Mode: paygate.ModeTest, CustomerID: cust.ID, ID: c.ID})
					must(t, err)
					want := c
					want.Sealed, want.UpdatedAt = to, at(time.Hour)
					equal(t, "rewrapped card", want, got)
				}
			}
			// A card already moved by another process is a conflict.
			wantIs(t, commitOp(ctx(t), s, paygate.StoredCardRewrap{ID: old[0].ID, FromKeyID: "old", To: sealedValue("new"), At: at(time.Hour)}), paygate.ErrStateConflict)
			wantNotFound(t, commitOp(ctx(t), s, paygate.StoredCardRewrap{ID: newID(), FromKeyID: "old", To: sealedValue("new"), At: at(time.Hour)}))
			todo, err := s.StoredCardsToRewrap(ctx(t), "new", "", 0)
			must(t, err)
			if len(todo) != 0 {
				t.Fatalf("%d cards left to rewrap", len(todo))
			}
			keys, err = s.StoredCardKeyIDs(ctx(t))
			must(t, err)
			if len(keys) != 1 || keys["new"] != 7 {
				t.Fatalf("key ids after rewrap %v, want new: 7", keys)
			}
		}},
		{"ConcurrentSavesStoreOnce", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			cust := f.customer(t, paygate.ModeTest, "cust-1")
			fp := storedCardValue(cust, base).Sealed.Fingerprint
			const n = 8
			ids := make([]string, n)
			created := countSuccesses(t, n, func(i int) (bool, error) {
				c := storedCardValue(cust, base)
				c.Sealed.Fingerprint = fp
				got, created, err := paygate.SaveStoredCard(ctx(t), s, c, []string{fp})
				ids[i] = got.ID
				return created, err
			})
			if created != 1 {
				t.Errorf("%d of %d concurrent saves of one number created a card, want 1", created, n)
			}
			for _, id := range ids {
				if id != ids[0] {
					t.Fatal("concurrent saves answered different cards")
				}
			}
			list, err := s.StoredCards(ctx(t), paygate.StoredCardQuery{MerchantID: f.merchant.ID, Mode: paygate.ModeTest, CustomerID: cust.ID})
			must(t, err)
			if len(list) != 1 {
				t.Fatalf("listed %d cards, want 1", len(list))
			}
		}},
		{"RefusedOpsWriteNothing", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			other := newMerchant(t, s, base)
			p := f.createPayment(t, f.paymentValue(paygate.ModeTest, at(time.Hour)), "cust-1")
			cust, err := s.CustomerByID(ctx(t), f.merchant.ID, paygate.ModeTest, p.CustomerID)
			must(t, err)
			keep := saveCard(t, s, storedCardValue(cust, base))
			gone := saveCard(t, s, storedCardValue(cust, base))
			must(t, commitOp(ctx(t), s, paygate.StoredCardDeletion{MerchantID: p.MerchantID, Mode: p.Mode, CustomerID: cust.ID, ID: gone.ID, At: base}))
			// The good operation of every unit: link the payment to the card.
			good := paygate.StoredCardLink{PaymentID: p.ID, MerchantID: p.MerchantID, Mode: p.Mode, CustomerID: cust.ID, StoredCardID: keep.ID}
			elsewhere := storedCardValue(cust, base)
			elsewhere.MerchantID = other.merchant.ID
			sameNumber := storedCardValue(cust, base)
			sameNumber.Sealed.Fingerprint = keep.Sealed.Fingerprint
			conflict := func(err error) bool { return errors.Is(err, paygate.ErrStateConflict) }
			duplicate := func(err error) bool { return errors.Is(err, paygate.ErrConflict) }
			for name, c := range map[string]struct {
				op   paygate.Op
				want func(error) bool
			}{
				"StoredCardOfNoCustomer":  {elsewhere, paygate.IsNotFound},
				"StoredCardOfSameNumber":  {sameNumber, duplicate},
				"StoredCardLinkNoPayment": {paygate.StoredCardLink{PaymentID: newID(), MerchantID: p.MerchantID, Mode: p.Mode, CustomerID: cust.ID, StoredCardID: keep.ID}, paygate.IsNotFound},
				"StoredCardLinkDeleted":   {paygate.StoredCardLink{PaymentID: p.ID, MerchantID: p.MerchantID, Mode: p.Mode, CustomerID: cust.ID, StoredCardID: gone.ID}, duplicate},
				"StoredCardDeletion":      {paygate.StoredCardDeletion{MerchantID: p.MerchantID, Mode: p.Mode, CustomerID: cust.ID, ID: newID(), At: at(time.Hour)}, paygate.IsNotFound},
				"PendingCardActivation":   {paygate.PendingCardActivation{MerchantID: p.MerchantID, Mode: p.Mode, PaymentID: p.ID, At: at(time.Hour)}, paygate.IsNotFound},
				"StoredCardRewrapMissing": {paygate.StoredCardRewrap{ID: newID(), FromKeyID: keep.Sealed.KeyID, To: sealedValue("k2"), At: at(time.Hour)}, paygate.IsNotFound},
				"StoredCardRewrapMoved":   {paygate.StoredCardRewrap{ID: keep.ID, FromKeyID: "another", To: sealedValue("k2"), At: at(time.Hour)}, conflict},
			} {
				if err := commitOp(ctx(t), s, good, c.op); !c.want(err) {
					t.Errorf("%s: got %v", name, err)
				}
				got, err := s.PaymentByID(ctx(t), p.MerchantID, p.Mode, p.ID)
				must(t, err)
				if got.StoredCardID != "" {
					t.Fatalf("%s: a refused unit linked the payment", name)
				}
			}
			keys, err := s.StoredCardKeyIDs(ctx(t))
			must(t, err)
			equal(t, "key ids after refused units", map[string]int{keep.Sealed.KeyID: 1}, keys)
			got, err := oneCard(ctx(t), s, paygate.StoredCardQuery{MerchantID: p.MerchantID, Mode: p.Mode, CustomerID: cust.ID, ID: keep.ID})
			must(t, err)
			equal(t, "card after refused units", keep, got)
		}},
		{"RefusesOtherStates", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			cust := f.customer(t, paygate.ModeTest, "cust-1")
			c := storedCardValue(cust, base)
			c.State = paygate.StoredCardDeleted
			if _, _, err := paygate.SaveStoredCard(ctx(t), s, c, nil); err == nil || paygate.IsNotFound(err) || errors.Is(err, paygate.ErrConflict) {
				t.Fatalf("saving a deleted card: %v, want an internal error", err)
			}
		}},
	}
}

// deleteAfterRead is a store whose first StoredCards read is followed, before
// it returns, by the commit of a deletion: a merchant deleting the card
// SaveStoredCard has just found.
type deleteAfterRead struct {
	paygate.Store
	t    *testing.T
	del  paygate.StoredCardDeletion
	done bool
}

func (d *deleteAfterRead) StoredCards(c context.Context, q paygate.StoredCardQuery) ([]paygate.StoredCard, error) {
	cards, err := d.Store.StoredCards(c, q)
	if err == nil && !d.done {
		d.done = true
		must(d.t, d.Store.Commit(c, paygate.Unit{Ops: []paygate.Op{d.del}}))
	}
	return cards, err
}
