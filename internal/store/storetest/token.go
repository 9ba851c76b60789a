package storetest

import (
	"encoding/hex"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// newTokenMerchant is newMerchant with an active public key in each mode,
// which a token's insert re-checks.
func newTokenMerchant(t *testing.T, s paygate.Store, created time.Time) fixture {
	t.Helper()
	f := newMerchant(t, s, created)
	f.testPublic = newKey(f.merchant.ID, paygate.ModeTest, paygate.KeyPublic, created)
	f.livePublic = newKey(f.merchant.ID, paygate.ModeLive, paygate.KeyPublic, created)
	must(t, commit(ctx(t), s, f.testPublic, f.livePublic))
	return f
}

// tokenValue returns an unused token of (merchant, mode) created at the
// time, sealed under keyID; it is not stored.
func (f fixture) tokenValue(mode paygate.Mode, created time.Time, keyID string) paygate.CardToken {
	public := f.testPublic
	if mode == paygate.ModeLive {
		public = f.livePublic
	}
	return paygate.CardToken{
		ClientAddr: "198.51.100.7", APIKeyID: public.ID,
		ID: paygate.TokenPrefix + hex.EncodeToString(randomBytes(16)), MerchantID: f.merchant.ID, Mode: mode,
		Brand: "visa", Last4: "4242", ExpMonth: 12, ExpYear: 2034, HolderName: "Ada Lovelace",
		KeyID: keyID, Sealed: randomBytes(57),
		CreatedAt: created, ExpiresAt: created.Add(paygate.TokenLifetime),
	}
}

// storeToken stores the token and returns it.
func (f fixture) storeToken(t *testing.T, tok paygate.CardToken) paygate.CardToken {
	t.Helper()
	must(t, commit(ctx(t), f.s, tok))
	tok.APIKeyID = "" // checked by the insert, not stored
	return tok
}

// use is the use of the token for a new payment id at the time.
func use(tok paygate.CardToken, now time.Time) paygate.TokenUse {
	return paygate.TokenUse{ID: tok.ID, MerchantID: tok.MerchantID, Mode: tok.Mode, PaymentID: newID(), At: now}
}

// tokenCases covers paygate.TokenStore and the CardToken and TokenUse
// operations: single-use card tokens (issue 24, decisions §19).
func tokenCases() []testCase {
	return []testCase{
		{"InsertAndRead", func(t *testing.T, s paygate.Store) {
			f := newTokenMerchant(t, s, base)
			other := newTokenMerchant(t, s, base)
			tok := f.storeToken(t, f.tokenValue(paygate.ModeTest, base, "k1"))
			got, err := s.CardToken(ctx(t), f.merchant.ID, paygate.ModeTest, tok.ID)
			must(t, err)
			equal(t, "token", tok, got)
			if !got.Usable(at(time.Minute)) || got.Usable(tok.ExpiresAt) {
				t.Errorf("Usable: a fresh token must be usable before its expiry only")
			}
			// Another mode or merchant does not see it.
			_, err = s.CardToken(ctx(t), f.merchant.ID, paygate.ModeLive, tok.ID)
			wantNotFound(t, err)
			_, err = s.CardToken(ctx(t), other.merchant.ID, paygate.ModeTest, tok.ID)
			wantNotFound(t, err)
			// A duplicate id is a conflict.
			dup := tok
			dup.APIKeyID = f.testPublic.ID
			wantIs(t, commit(ctx(t), s, dup), paygate.ErrConflict)
		}},
		{"UseOnce", func(t *testing.T, s paygate.Store) {
			f := newTokenMerchant(t, s, base)
			tok := f.storeToken(t, f.tokenValue(paygate.ModeLive, base, "k1"))
			u := use(tok, at(time.Minute))
			must(t, commit(ctx(t), s, u))
			got, err := s.CardToken(ctx(t), f.merchant.ID, paygate.ModeLive, tok.ID)
			must(t, err)
			want := tok
			want.KeyID, want.Sealed, want.UsedAt, want.PaymentID = "", nil, ptr(u.At), u.PaymentID
			equal(t, "used token", want, got)
			if got.Usable(at(2 * time.Minute)) {
				t.Error("a used token is usable")
			}
			// A second use is refused, and changes nothing.
			wantCode(t, commit(ctx(t), s, use(tok, at(2*time.Minute))), paygate.CodeInvalidRequest, "token")
			got, err = s.CardToken(ctx(t), f.merchant.ID, paygate.ModeLive, tok.ID)
			must(t, err)
			equal(t, "token after a refused use", want, got)
		}},
		{"OtherMerchantOrModeRefused", func(t *testing.T, s paygate.Store) {
			f := newTokenMerchant(t, s, base)
			other := newTokenMerchant(t, s, base)
			tok := f.storeToken(t, f.tokenValue(paygate.ModeTest, base, "k1"))
			for name, u := range map[string]paygate.TokenUse{
				"other mode":     {ID: tok.ID, MerchantID: f.merchant.ID, Mode: paygate.ModeLive, PaymentID: newID(), At: at(time.Minute)},
				"other merchant": {ID: tok.ID, MerchantID: other.merchant.ID, Mode: paygate.ModeTest, PaymentID: newID(), At: at(time.Minute)},
				"unknown":        {ID: paygate.TokenPrefix + "0123", MerchantID: f.merchant.ID, Mode: paygate.ModeTest, PaymentID: newID(), At: at(time.Minute)},
			} {
				t.Run(name, func(t *testing.T) {
					wantCode(t, commit(ctx(t), s, u), paygate.CodeInvalidRequest, "token")
				})
			}
			got, err := s.CardToken(ctx(t), f.merchant.ID, paygate.ModeTest, tok.ID)
			must(t, err)
			equal(t, "token after refused uses", tok, got)
		}},
		{"InsertRechecksPublicKey", func(t *testing.T, s paygate.Store) {
			// decisions §4: the insert re-checks the public key that
			// tokenized: revoked, another mode's, a secret key, or none
			// is UNAUTHORIZED, and nothing is stored.
			f := newTokenMerchant(t, s, base)
			revoked := newKey(f.merchant.ID, paygate.ModeTest, paygate.KeyPublic, base)
			must(t, commit(ctx(t), s, revoked, paygate.APIKeyRevocation{ID: revoked.ID, At: at(time.Second)}))
			for name, keyID := range map[string]string{
				"revoked": revoked.ID, "other mode": f.livePublic.ID, "secret": f.testKey.ID, "none": "",
			} {
				tok := f.tokenValue(paygate.ModeTest, at(time.Minute), "k1")
				tok.APIKeyID = keyID
				if err := commit(ctx(t), s, tok); paygate.ErrorCode(err) != paygate.CodeUnauthorized {
					t.Errorf("%s key: %v, want UNAUTHORIZED", name, err)
				}
				_, err := s.CardToken(ctx(t), f.merchant.ID, paygate.ModeTest, tok.ID)
				wantNotFound(t, err)
			}
			// Revoked later than the token's creation: still active then.
			tok := f.tokenValue(paygate.ModeTest, base.Add(time.Millisecond), "k1")
			tok.APIKeyID = revoked.ID
			must(t, commit(ctx(t), s, tok))
		}},
		{"ExpiredRefused", func(t *testing.T, s paygate.Store) {
			f := newTokenMerchant(t, s, base)
			tok := f.storeToken(t, f.tokenValue(paygate.ModeTest, base, "k1"))
			wantCode(t, commit(ctx(t), s, use(tok, tok.ExpiresAt)), paygate.CodeInvalidRequest, "token")
			wantCode(t, commit(ctx(t), s, use(tok, tok.ExpiresAt.Add(time.Hour))), paygate.CodeInvalidRequest, "token")
			// Just before its expiry it is still usable.
			must(t, commit(ctx(t), s, use(tok, tok.ExpiresAt.Add(-time.Microsecond))))
		}},
		{"RefusedUnitLeavesTokenUnused", func(t *testing.T, s paygate.Store) {
			f := newTokenMerchant(t, s, base)
			tok := f.storeToken(t, f.tokenValue(paygate.ModeTest, base, "k1"))
			missing := paygate.PaymentTransition{ID: newID(), MerchantID: f.merchant.ID, Mode: paygate.ModeTest,
				From: []paygate.PaymentStatus{paygate.PaymentCreated}, To: paygate.PaymentFailed, UpdatedAt: at(time.Minute)}
			wantNotFound(t, commit(ctx(t), s, use(tok, at(time.Minute)), missing))
			got, err := s.CardToken(ctx(t), f.merchant.ID, paygate.ModeTest, tok.ID)
			must(t, err)
			equal(t, "token after a refused unit", tok, got)
		}},
		{"ConcurrentUseWithPaymentOnce", func(t *testing.T, s paygate.Store) {
			// Each racer uses the token in the unit that inserts its
			// payment (as a token payment does): one unit commits, the
			// others fail whole and leave no payment behind.
			f := newTokenMerchant(t, s, base)
			tok := f.storeToken(t, f.tokenValue(paygate.ModeTest, base, "k1"))
			const racers = 8
			var wg sync.WaitGroup
			errs := make([]error, racers)
			payments := make([]paygate.Payment, racers)
			for i := range racers {
				p := f.paymentValue(paygate.ModeTest, at(time.Minute))
				r := f.reservation(paygate.ModeTest, p.IdempotencyKey, p.CreatedAt)
				payments[i] = p
				u := paygate.TokenUse{ID: tok.ID, MerchantID: tok.MerchantID, Mode: tok.Mode, PaymentID: p.ID, At: p.CreatedAt}
				np := paygate.NewPayment{Payment: p, CustomerExternalID: "cust-" + newID(), NewCustomerID: newID(), Reservation: &r}
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[i] = commit(ctx(t), s, u, np)
				}()
			}
			wg.Wait()
			won := -1
			for i, err := range errs {
				if err == nil {
					if won >= 0 {
						t.Fatalf("racers %d and %d both used the token", won, i)
					}
					won = i
					continue
				}
				var pe *paygate.Error
				if !errors.As(err, &pe) || pe.Code != paygate.CodeInvalidRequest || pe.Param != "token" {
					t.Errorf("racer %d: %v, want INVALID_REQUEST param token", i, err)
				}
				_, err := s.PaymentByID(ctx(t), f.merchant.ID, paygate.ModeTest, payments[i].ID)
				wantNotFound(t, err)
			}
			if won < 0 {
				t.Fatal("no racer used the token")
			}
			got, err := s.CardToken(ctx(t), f.merchant.ID, paygate.ModeTest, tok.ID)
			must(t, err)
			if got.PaymentID != payments[won].ID || got.Sealed != nil {
				t.Errorf("token after the race: payment %q sealed %d bytes, want payment %s and nothing sealed", got.PaymentID, len(got.Sealed), payments[won].ID)
			}
			_, err = s.PaymentByID(ctx(t), f.merchant.ID, paygate.ModeTest, payments[won].ID)
			must(t, err)
		}},
		{"PurgeAndKeyIDs", func(t *testing.T, s paygate.Store) {
			f := newTokenMerchant(t, s, base)
			old := f.storeToken(t, f.tokenValue(paygate.ModeTest, base, "k1"))
			oldUsed := f.storeToken(t, f.tokenValue(paygate.ModeLive, base, "k1"))
			must(t, commit(ctx(t), s, use(oldUsed, at(time.Minute))))
			fresh := f.storeToken(t, f.tokenValue(paygate.ModeTest, at(10*time.Minute), "k2"))
			f.storeToken(t, f.tokenValue(paygate.ModeLive, at(10*time.Minute), "k1"))

			ids, err := s.CardTokenKeyIDs(ctx(t))
			must(t, err)
			equal(t, "sealed tokens by key", map[string]int{"k1": 2, "k2": 1}, ids)

			// At the old tokens' expiry, they go (used or not); the fresh
			// ones stay.
			n, err := s.PurgeCardTokens(ctx(t), old.ExpiresAt)
			must(t, err)
			if n != 2 {
				t.Errorf("purged %d tokens, want 2", n)
			}
			for _, tok := range []paygate.CardToken{old, oldUsed} {
				_, err = s.CardToken(ctx(t), f.merchant.ID, tok.Mode, tok.ID)
				wantNotFound(t, err)
			}
			got, err := s.CardToken(ctx(t), f.merchant.ID, paygate.ModeTest, fresh.ID)
			must(t, err)
			equal(t, "fresh token", fresh, got)
			ids, err = s.CardTokenKeyIDs(ctx(t))
			must(t, err)
			equal(t, "sealed tokens by key after the purge", map[string]int{"k1": 1, "k2": 1}, ids)
		}},
	}
}
