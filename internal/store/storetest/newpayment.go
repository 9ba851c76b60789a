package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// newPaymentCases cover the NewPayment operation of a unit: a payment whose
// charge was answered before anything was written, inserted with its
// outcome, its events, its key's answer and the provider's ledger entry in
// one unit (decisions.md section 22).
func newPaymentCases() []testCase {
	const n = 12
	return []testCase{
		{"InsertsTheOutcome", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			p := answeredPayment(f, at(time.Hour))
			r := f.reservation(p.Mode, p.IdempotencyKey, p.CreatedAt)
			ev := eventValue(p, paygate.EventPaymentCaptured, "", p.UpdatedAt)
			charge := sandboxChargeValue("sandbox-eu", p.ID, p.CreatedAt)
			must(t, s.Commit(ctx(t), paygate.Unit{Ops: []paygate.Op{
				reservedPayment(p, r, "cus-1"), ev, keyAnswer(p, `{"ok":1}`), charge,
			}}))

			got, err := s.PaymentByID(ctx(t), p.MerchantID, p.Mode, p.ID)
			must(t, err)
			c, err := s.CustomerByID(ctx(t), p.MerchantID, p.Mode, got.CustomerID)
			must(t, err)
			if c.ExternalID != "cus-1" {
				t.Errorf("the payment's customer is %q, want cus-1", c.ExternalID)
			}
			want := p
			want.CustomerID = got.CustomerID
			equal(t, "payment", want, got)
			events, err := s.Events(ctx(t), paygate.EventQuery{MerchantID: p.MerchantID, Mode: p.Mode})
			must(t, err)
			equal(t, "events", []paygate.Event{ev}, events)
			rec := f.lookup(t, p.Mode, p.IdempotencyKey, at(2*time.Hour))
			equal(t, "idempotency record", paygate.IdempotencyRecord{
				MerchantID: p.MerchantID, Mode: p.Mode, Key: p.IdempotencyKey, Fingerprint: r.Fingerprint,
				State: paygate.IdempotencyComplete, StatusCode: 201, Body: []byte(`{"ok":1}`),
				PaymentID: p.ID, CreatedAt: p.CreatedAt,
			}, rec)
			stored, err := s.SandboxChargeByPayment(ctx(t), "sandbox-eu", p.ID)
			must(t, err)
			equal(t, "ledger entry", charge, stored)
		}},
		{"KeyReservedBefore", func(t *testing.T, s paygate.Store) {
			// Without a reservation the key was reserved by an earlier
			// write: the record is linked to the payment and answered.
			f := newMerchant(t, s, base)
			p := answeredPayment(f, at(time.Hour))
			p.Status, p.AmountCaptured = paygate.PaymentFailed, 0
			p.ErrorCode, p.ErrorMessage, p.DeclineCode = string(paygate.CodeCardDeclined), "Declined.", paygate.DeclineGeneric
			f.reserve(t, p.Mode, p.IdempotencyKey, p.CreatedAt)
			must(t, s.Commit(ctx(t), paygate.Unit{Ops: []paygate.Op{
				paygate.NewPayment{Payment: p, CustomerExternalID: "cus-1", NewCustomerID: newID()},
				keyAnswer(p, `{"declined":1}`),
			}}))
			got, err := s.PaymentByID(ctx(t), p.MerchantID, p.Mode, p.ID)
			must(t, err)
			want := p
			want.CustomerID = got.CustomerID
			equal(t, "payment", want, got)
			rec := f.lookup(t, p.Mode, p.IdempotencyKey, at(2*time.Hour))
			if rec.PaymentID != p.ID || rec.State != paygate.IdempotencyComplete || string(rec.Body) != `{"declined":1}` {
				t.Errorf("idempotency record %+v, want the answer, linked to the payment", rec)
			}
		}},
		{"PendingWithItsChallenge", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			p := answeredPayment(f, at(time.Hour))
			p.Status, p.AmountCaptured = paygate.PaymentPending3DS, 0
			c := challengeValue(p, p.UpdatedAt)
			np := reservedPayment(p, f.reservation(p.Mode, p.IdempotencyKey, p.CreatedAt), "cus-1")
			must(t, s.Commit(ctx(t), paygate.Unit{Ops: []paygate.Op{np, keyAnswer(p, `{}`), c}}))
			got, err := challengeByHash(ctx(t), s, c.TokenHash)
			must(t, err)
			if got.PaymentID != p.ID {
				t.Errorf("challenge of payment %s, want %s", got.PaymentID, p.ID)
			}
			// A challenge must follow its payment's insert in pending_3ds.
			other := answeredPayment(f, at(time.Hour))
			np = reservedPayment(other, f.reservation(other.Mode, other.IdempotencyKey, other.CreatedAt), "cus-1")
			if err := s.Commit(ctx(t), paygate.Unit{Ops: []paygate.Op{np, challengeValue(other, other.UpdatedAt)}}); err == nil {
				t.Fatal("a challenge after a captured payment's insert was accepted")
			}
			_, err = s.PaymentByID(ctx(t), other.MerchantID, other.Mode, other.ID)
			wantNotFound(t, err)
		}},
		{"TakenKeyWritesNothing", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			done := f.paymentValue(paygate.ModeTest, at(time.Hour))
			f.reserve(t, done.Mode, done.IdempotencyKey, done.CreatedAt)
			must(t, commitOp(ctx(t), s, keyAnswer(done, `{"x":1}`)))
			running := f.paymentValue(paygate.ModeTest, at(time.Hour))
			f.reserve(t, running.Mode, running.IdempotencyKey, running.CreatedAt)
			for _, c := range []struct {
				key   string
				state paygate.IdempotencyState
			}{{done.IdempotencyKey, paygate.IdempotencyComplete}, {running.IdempotencyKey, paygate.IdempotencyInFlight}} {
				p := answeredPayment(f, at(time.Hour+5*time.Second))
				p.IdempotencyKey = c.key
				err := s.Commit(ctx(t), paygate.Unit{Ops: []paygate.Op{
					reservedPayment(p, f.reservation(p.Mode, c.key, p.CreatedAt), "cus-new"),
					eventValue(p, paygate.EventPaymentCaptured, "", p.UpdatedAt),
					keyAnswer(p, `{"second":1}`),
					sandboxChargeValue("sandbox-eu", p.ID, p.CreatedAt),
				}})
				var taken *paygate.KeyTakenError
				if !errors.As(err, &taken) {
					t.Fatalf("key %s: got %v, want a *KeyTakenError", c.key, err)
				}
				if taken.Record.Key != c.key || taken.Record.State != c.state {
					t.Errorf("key %s: taken record %+v, want state %s", c.key, taken.Record, c.state)
				}
				wantNoPayment(t, f, p)
			}
			if rec := f.lookup(t, paygate.ModeTest, done.IdempotencyKey, at(2*time.Hour)); string(rec.Body) != `{"x":1}` {
				t.Errorf("the complete record's answer became %s", rec.Body)
			}
			cs, err := s.SearchCustomers(ctx(t), paygate.CustomerQuery{MerchantID: f.merchant.ID, Mode: paygate.ModeTest, Text: "cus-new"})
			must(t, err)
			if len(cs) != 0 {
				t.Errorf("a refused unit created customer %+v", cs[0])
			}
		}},
		{"InactiveAPIKeyWritesNothing", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			must(t, commit(ctx(t), s, paygate.APIKeyRevocation{ID: f.testKey.ID, At: at(time.Minute)}))
			p := answeredPayment(f, at(time.Hour))
			err := s.Commit(ctx(t), paygate.Unit{Ops: []paygate.Op{
				reservedPayment(p, f.reservation(p.Mode, p.IdempotencyKey, p.CreatedAt), "cus-1"),
				eventValue(p, paygate.EventPaymentCaptured, "", p.UpdatedAt),
				keyAnswer(p, `{}`),
				sandboxChargeValue("sandbox-eu", p.ID, p.CreatedAt),
			}})
			wantCode(t, err, paygate.CodeUnauthorized, "")
			wantNoPayment(t, f, p)
			// The key is free (reserved here without the revoked key, as
			// the dashboard does).
			r := f.reservation(p.Mode, p.IdempotencyKey, p.CreatedAt)
			r.APIKeyID = ""
			_, reserved, err := s.ReserveIdempotency(ctx(t), r)
			must(t, err)
			if !reserved {
				t.Error("the refused unit left its key reserved")
			}
		}},
		{"FailsMidwayWritesNothing", func(t *testing.T, s paygate.Store) {
			// A refusal after the insert takes the reservation with it.
			f := newMerchant(t, s, base)
			p := answeredPayment(f, at(time.Hour))
			err := s.Commit(ctx(t), paygate.Unit{Ops: []paygate.Op{
				reservedPayment(p, f.reservation(p.Mode, p.IdempotencyKey, p.CreatedAt), "cus-1"),
				eventValue(p, paygate.EventPaymentCaptured, "", p.UpdatedAt),
				keyAnswer(p, `{}`),
				sandboxChargeValue("sandbox-eu", p.ID, p.CreatedAt),
				paygate.PaymentTransition{ID: p.ID, MerchantID: p.MerchantID, Mode: p.Mode,
					From: []paygate.PaymentStatus{paygate.PaymentAuthorized}, To: paygate.PaymentVoided},
			}})
			wantIs(t, err, paygate.ErrStateConflict)
			wantNoPayment(t, f, p)
			f.reserve(t, p.Mode, p.IdempotencyKey, p.CreatedAt)
		}},
		{"OnePaymentPerKey", func(t *testing.T, s paygate.Store) {
			// Concurrent units with one key: one payment, and every other
			// unit meets the key answered (never in flight: the answer
			// commits with the reservation).
			f := newMerchant(t, s, base)
			key := "idem-" + newID()
			ids := make([]string, n)
			records := make([]*paygate.IdempotencyRecord, n)
			wins := countSuccesses(t, n, func(i int) (bool, error) {
				p := answeredPayment(f, at(time.Hour))
				p.IdempotencyKey, ids[i] = key, p.ID
				err := s.Commit(ctx(t), paygate.Unit{Ops: []paygate.Op{
					reservedPayment(p, f.reservation(p.Mode, key, p.CreatedAt), "cus-race"),
					eventValue(p, paygate.EventPaymentCaptured, "", p.UpdatedAt),
					keyAnswer(p, `{"id":"`+p.ID+`"}`),
					sandboxChargeValue("sandbox-eu", p.ID, p.CreatedAt),
				}})
				var taken *paygate.KeyTakenError
				if errors.As(err, &taken) {
					records[i] = &taken.Record
					return false, nil
				}
				return err == nil, err
			})
			if wins != 1 {
				t.Fatalf("%d of %d concurrent units with one key created a payment, want 1", wins, n)
			}
			var winner string
			for _, id := range ids {
				if _, err := s.PaymentByID(ctx(t), f.merchant.ID, paygate.ModeTest, id); err == nil {
					if winner != "" {
						t.Fatalf("payments %s and %s stored for one key", winner, id)
					}
					winner = id
				}
			}
			for i, rec := range records {
				if rec != nil && (rec.State != paygate.IdempotencyComplete || string(rec.Body) != `{"id":"`+winner+`"}`) {
					t.Errorf("unit %d met the record %+v, want the answer of payment %s", i, *rec, winner)
				}
				if _, err := s.SandboxChargeByPayment(ctx(t), "sandbox-eu", ids[i]); (err == nil) != (ids[i] == winner) {
					t.Errorf("payment %s: ledger entry read %v (winner %s)", ids[i], err, winner)
				}
			}
		}},
	}
}

// answeredPayment is a payment of f's test mode created at the time whose
// charge was answered captured a second later, as a unit inserts it; it is
// not stored.
func answeredPayment(f fixture, created time.Time) paygate.Payment {
	p := f.paymentValue(paygate.ModeTest, created)
	p.Status, p.ProviderID, p.ProviderRef = paygate.PaymentCaptured, "sandbox-eu", "ref-"+p.ID
	p.AmountCaptured, p.UpdatedAt = p.Amount.Amount, created.Add(time.Second)
	return p
}

// keyAnswer is the completion of p's idempotency key with the body.
func keyAnswer(p paygate.Payment, body string) paygate.IdempotencyCompletion {
	return paygate.IdempotencyCompletion{MerchantID: p.MerchantID, Mode: p.Mode, Key: p.IdempotencyKey, StatusCode: 201, Body: []byte(body)}
}

// wantNoPayment checks that nothing of p's unit was written: no payment, no
// event of it, no ledger entry.
func wantNoPayment(t *testing.T, f fixture, p paygate.Payment) {
	t.Helper()
	_, err := f.s.PaymentByID(ctx(t), p.MerchantID, p.Mode, p.ID)
	wantNotFound(t, err)
	events, err := f.s.Events(ctx(t), paygate.EventQuery{MerchantID: p.MerchantID, Mode: p.Mode, PaymentID: p.ID})
	must(t, err)
	if len(events) != 0 {
		t.Errorf("a refused unit wrote events %+v", events)
	}
	_, err = f.s.SandboxChargeByPayment(ctx(t), "sandbox-eu", p.ID)
	wantNotFound(t, err)
}
