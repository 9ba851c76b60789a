package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// reservedCreateCases cover CreatePayment with NewPayment.Reservation: the
// idempotency key reserved in the payment's own transaction.
func reservedCreateCases() []testCase {
	const n = 12
	return []testCase{
		{"ReadKeyAndRecord", func(t *testing.T, s paygate.Store) {
			rr := requestReader(t, s)
			f := newMerchant(t, s, base)
			r := f.reservation(paygate.ModeTest, "key-1", at(time.Hour))
			_, reserved, err := s.ReserveIdempotency(ctx(t), r)
			must(t, err)
			if !reserved {
				t.Fatal("key-1 was not reserved")
			}
			reads := paygate.RequestReads{IdempotencyKey: "key-1"}
			key, data, err := rr.APIKeyAndRequest(ctx(t), f.testKey.Hash, reads)
			must(t, err)
			if key.ID != f.testKey.ID || data.Record == nil || data.Payment != nil || data.Err != nil {
				t.Fatalf("got key %s, data %+v; want key %s and its record alone", key.ID, data, f.testKey.ID)
			}
			equal(t, "record read with the key", paygate.IdempotencyRecord{
				MerchantID: f.merchant.ID, Mode: paygate.ModeTest, Key: "key-1",
				Fingerprint: r.Fingerprint, State: paygate.IdempotencyInFlight, CreatedAt: at(time.Hour),
			}, *data.Record)
			checkReadScope(t, s, f, func(hash []byte) (paygate.APIKey, bool, error) {
				k, data, err := rr.APIKeyAndRequest(ctx(t), hash, reads)
				return k, data.Record != nil, errors.Join(err, data.Err)
			})
		}},
		{"ReadKeyAndPayment", func(t *testing.T, s paygate.Store) {
			rr := requestReader(t, s)
			f := newMerchant(t, s, base)
			pay := f.createPayment(t, f.paymentValue(paygate.ModeTest, at(time.Hour)), "cus-1")
			key, data, err := rr.APIKeyAndRequest(ctx(t), f.testKey.Hash, paygate.RequestReads{PaymentID: pay.ID})
			must(t, err)
			if key.ID != f.testKey.ID || data.Payment == nil || data.Record != nil || data.Err != nil {
				t.Fatalf("got key %s, data %+v; want key %s and the payment alone", key.ID, data, f.testKey.ID)
			}
			stored, err := s.PaymentByID(ctx(t), f.merchant.ID, paygate.ModeTest, pay.ID)
			must(t, err)
			equal(t, "payment read with the key", stored, *data.Payment)
			key, data, err = rr.APIKeyAndRequest(ctx(t), f.testKey.Hash, paygate.RequestReads{PaymentID: "00000000-0000-7000-8000-000000000000", IdempotencyKey: "none"})
			must(t, err)
			if key.ID != f.testKey.ID || data != (paygate.RequestData{}) {
				t.Errorf("unknown payment and key: key %s, data %+v; want the key alone", key.ID, data)
			}
			checkReadScope(t, s, f, func(hash []byte) (paygate.APIKey, bool, error) {
				k, data, err := rr.APIKeyAndRequest(ctx(t), hash, paygate.RequestReads{PaymentID: pay.ID})
				return k, data.Payment != nil, errors.Join(err, data.Err)
			})
		}},
		{"ReservesAndLinks", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			p := f.paymentValue(paygate.ModeTest, at(time.Hour))
			r := f.reservation(p.Mode, p.IdempotencyKey, p.CreatedAt)
			got, err := s.CreatePayment(ctx(t), reservedPayment(p, r, "cus-1"))
			must(t, err)
			stored, err := s.PaymentByID(ctx(t), p.MerchantID, p.Mode, p.ID)
			must(t, err)
			equal(t, "stored payment", got, stored)
			rec := f.lookup(t, p.Mode, p.IdempotencyKey, at(time.Hour+time.Second))
			equal(t, "in-flight record", paygate.IdempotencyRecord{
				MerchantID: f.merchant.ID, Mode: p.Mode, Key: p.IdempotencyKey,
				Fingerprint: r.Fingerprint, State: paygate.IdempotencyInFlight,
				PaymentID: p.ID, CreatedAt: p.CreatedAt,
			}, rec)
		}},
		{"TakenKeyWritesNothing", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			// A completed answer, then a request still in flight.
			done := f.paymentValue(paygate.ModeTest, at(time.Hour))
			f.reserve(t, done.Mode, done.IdempotencyKey, done.CreatedAt)
			must(t, commitOp(ctx(t), s, paygate.IdempotencyCompletion{
				MerchantID: f.merchant.ID, Mode: done.Mode, Key: done.IdempotencyKey, StatusCode: 201, Body: []byte(`{"x":1}`),
			}))
			running := f.paymentValue(paygate.ModeTest, at(time.Hour))
			f.reserve(t, running.Mode, running.IdempotencyKey, running.CreatedAt)

			for _, c := range []struct {
				key   string
				state paygate.IdempotencyState
			}{{done.IdempotencyKey, paygate.IdempotencyComplete}, {running.IdempotencyKey, paygate.IdempotencyInFlight}} {
				// Within the lease: the in-flight request is not abandoned.
				p := f.paymentValue(paygate.ModeTest, at(time.Hour+5*time.Second))
				p.IdempotencyKey = c.key
				_, err := s.CreatePayment(ctx(t), reservedPayment(p, f.reservation(p.Mode, c.key, p.CreatedAt), "cus-new"))
				var taken *paygate.KeyTakenError
				if !errors.As(err, &taken) {
					t.Fatalf("key %s: got %v, want a *KeyTakenError", c.key, err)
				}
				if taken.Record.Key != c.key || taken.Record.State != c.state {
					t.Errorf("key %s: taken record %+v, want state %s", c.key, taken.Record, c.state)
				}
				if c.state == paygate.IdempotencyComplete && string(taken.Record.Body) != `{"x":1}` {
					t.Errorf("taken record body %q, want the stored answer", taken.Record.Body)
				}
				_, err = s.PaymentByID(ctx(t), p.MerchantID, p.Mode, p.ID)
				wantNotFound(t, err)
			}
			// Neither refused request created its customer.
			cs, err := s.SearchCustomers(ctx(t), paygate.CustomerQuery{MerchantID: f.merchant.ID, Mode: paygate.ModeTest, Text: "cus-new"})
			must(t, err)
			if len(cs) != 0 {
				t.Errorf("a refused request created customer %+v", cs[0])
			}
		}},
		{"ExpiredKeyReplaced", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			old := f.paymentValue(paygate.ModeLive, at(time.Hour))
			f.reserve(t, old.Mode, old.IdempotencyKey, old.CreatedAt)
			p := f.paymentValue(paygate.ModeLive, at(time.Hour+paygate.IdempotencyTTL))
			p.IdempotencyKey = old.IdempotencyKey
			_, err := s.CreatePayment(ctx(t), reservedPayment(p, f.reservation(p.Mode, p.IdempotencyKey, p.CreatedAt), "cus-1"))
			must(t, err)
			rec := f.lookup(t, p.Mode, p.IdempotencyKey, p.CreatedAt.Add(time.Second))
			if rec.PaymentID != p.ID || rec.State != paygate.IdempotencyInFlight || !rec.CreatedAt.Equal(p.CreatedAt) {
				t.Errorf("record after replacing an expired one: %+v", rec)
			}
		}},
		{"ReservationForAnotherKey", func(t *testing.T, s paygate.Store) {
			// A reservation must be for the payment's own key, merchant
			// and mode; otherwise nothing is written.
			f := newMerchant(t, s, base)
			other := newMerchant(t, s, base)
			p := f.paymentValue(paygate.ModeTest, at(time.Hour))
			for name, r := range map[string]paygate.IdempotencyReservation{
				"key":      f.reservation(p.Mode, "another-key", p.CreatedAt),
				"mode":     f.reservation(paygate.ModeLive, p.IdempotencyKey, p.CreatedAt),
				"merchant": other.reservation(p.Mode, p.IdempotencyKey, p.CreatedAt),
			} {
				if _, err := s.CreatePayment(ctx(t), reservedPayment(p, r, "cus-1")); err == nil {
					t.Fatalf("a reservation for another %s was accepted", name)
				}
				_, err := s.PaymentByID(ctx(t), p.MerchantID, p.Mode, p.ID)
				wantNotFound(t, err)
			}
			// Nor was any key reserved.
			f.reserve(t, p.Mode, p.IdempotencyKey, p.CreatedAt)
			f.reserve(t, p.Mode, "another-key", p.CreatedAt)
		}},
		{"InactiveAPIKey", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			err := commit(ctx(t), s, paygate.APIKeyRevocation{ID: f.testKey.ID, At: at(time.Minute)})
			must(t, err)
			p := f.paymentValue(paygate.ModeTest, at(time.Hour))
			_, err = s.CreatePayment(ctx(t), reservedPayment(p, f.reservation(p.Mode, p.IdempotencyKey, p.CreatedAt), "cus-1"))
			wantCode(t, err, paygate.CodeUnauthorized, "")
			_, err = s.PaymentByID(ctx(t), p.MerchantID, p.Mode, p.ID)
			wantNotFound(t, err)
		}},
		{"OnePaymentPerKey", func(t *testing.T, s paygate.Store) {
			// Concurrent requests with one key, for a customer that does
			// not exist yet: one payment, and the others see the key taken.
			f := newMerchant(t, s, base)
			key := "idem-" + newID()
			ids := make([]string, n)
			wins := countSuccesses(t, n, func(i int) (bool, error) {
				p := f.paymentValue(paygate.ModeTest, at(time.Hour))
				p.IdempotencyKey, ids[i] = key, p.ID
				_, err := s.CreatePayment(ctx(t), reservedPayment(p, f.reservation(p.Mode, key, p.CreatedAt), "cus-race"))
				var taken *paygate.KeyTakenError
				if errors.As(err, &taken) {
					return false, nil
				}
				return err == nil, err
			})
			if wins != 1 {
				t.Fatalf("%d of %d concurrent requests with one key created a payment, want 1", wins, n)
			}
			stored := 0
			for _, id := range ids {
				if _, err := s.PaymentByID(ctx(t), f.merchant.ID, paygate.ModeTest, id); err == nil {
					stored++
				}
			}
			if stored != 1 {
				t.Errorf("%d payments stored, want 1", stored)
			}
		}},
		{"NewCustomerRace", func(t *testing.T, s paygate.Store) {
			// Concurrent first payments of one new customer, each with its
			// own key: all are created, for one customer. A few rounds, so
			// that some inserts meet a customer committed after their
			// statement began.
			f := newMerchant(t, s, base)
			for round := range 5 {
				external := fmt.Sprintf("cus-first-%d", round)
				customers := make([]string, n)
				wins := countSuccesses(t, n, func(i int) (bool, error) {
					p := f.paymentValue(paygate.ModeTest, at(time.Hour))
					got, err := s.CreatePayment(ctx(t), reservedPayment(p, f.reservation(p.Mode, p.IdempotencyKey, p.CreatedAt), external))
					customers[i] = got.CustomerID
					return err == nil, err
				})
				if wins != n {
					t.Fatalf("%d of %d first payments of one customer were created, want all", wins, n)
				}
				for i, c := range customers {
					if c == "" || c != customers[0] {
						t.Fatalf("payment %d has customer %q, payment 0 %q: want one customer", i, c, customers[0])
					}
				}
			}
		}},
	}
}

// reservedPayment is the NewPayment of p for the customer of the external
// id, reserving p's idempotency key with r.
func reservedPayment(p paygate.Payment, r paygate.IdempotencyReservation, customerExternalID string) paygate.NewPayment {
	return paygate.NewPayment{
		Payment:            p,
		CustomerExternalID: customerExternalID,
		NewCustomerID:      newID(),
		Reservation:        &r,
	}
}

// checkReadScope checks a store's read of an API key with something of f's
// test mode that exists (peek returns the key and whether that something
// was found): an unknown hash is NOT_FOUND; f's live key and another
// merchant's test key are returned without it, since the read is scoped by
// the key's merchant and mode; and a revoked key is returned with it, for
// the caller to judge. It revokes f's test key.
func checkReadScope(t *testing.T, s paygate.Store, f fixture, peek func(hash []byte) (paygate.APIKey, bool, error)) {
	t.Helper()
	_, _, err := peek(randomBytes(32))
	wantNotFound(t, err)
	other := newMerchant(t, s, base)
	for _, k := range []paygate.APIKey{f.liveKey, other.testKey} {
		got, found, err := peek(k.Hash)
		must(t, err)
		if got.ID != k.ID || found {
			t.Errorf("key %s: got key %s, found %v; want the key alone", k.ID, got.ID, found)
		}
	}
	err = commit(ctx(t), s, paygate.APIKeyRevocation{ID: f.testKey.ID, At: at(time.Minute)})
	must(t, err)
	key, found, err := peek(f.testKey.Hash)
	must(t, err)
	if key.ID != f.testKey.ID || key.RevokedAt == nil || !found {
		t.Errorf("revoked key: got %+v, found %v; want the revoked key and what it read", key, found)
	}
}

// requestReader returns s as the paygate.RequestReader both engines are.
func requestReader(t *testing.T, s paygate.Store) paygate.RequestReader {
	t.Helper()
	rr, ok := s.(paygate.RequestReader)
	if !ok {
		t.Fatalf("%T does not implement paygate.RequestReader", s)
	}
	return rr
}
