package storetest

import (
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// unitWorld is a payment in status created, its reserved idempotency key,
// and the store's view of what a unit about it may write.
type unitWorld struct {
	f fixture
	p paygate.Payment
}

func newUnitWorld(t *testing.T, s paygate.Store) unitWorld {
	t.Helper()
	f := newMerchant(t, s, base)
	return unitWorld{f: f, p: f.newPayment(t, paygate.ModeTest, at(time.Minute))}
}

// move is a transition of the payment from the statuses to the status.
func (w unitWorld) move(to paygate.PaymentStatus, from ...paygate.PaymentStatus) paygate.PaymentTransition {
	return paygate.PaymentTransition{
		ID: w.p.ID, MerchantID: w.p.MerchantID, Mode: w.p.Mode, From: from, To: to,
		ProviderID: "sandbox-eu", ProviderRef: "ref-" + w.p.ID, UpdatedAt: at(2 * time.Minute),
	}
}

// answer is the completion of the payment's idempotency key.
func (w unitWorld) answer(body string) paygate.IdempotencyCompletion {
	return paygate.IdempotencyCompletion{
		MerchantID: w.p.MerchantID, Mode: w.p.Mode, Key: w.p.IdempotencyKey, StatusCode: 201, Body: []byte(body),
	}
}

// wantNothingWritten checks that no unit about the payment was written: it
// is still created and unchanged, it has no events, its key is in flight,
// and the sandbox has no entry for it.
func (w unitWorld) wantNothingWritten(t *testing.T) {
	t.Helper()
	s := w.f.s
	got, err := s.PaymentByID(ctx(t), w.p.MerchantID, w.p.Mode, w.p.ID)
	must(t, err)
	equal(t, "payment after a failed unit", w.p, got)
	events, err := s.Events(ctx(t), paygate.EventQuery{MerchantID: w.p.MerchantID, Mode: w.p.Mode})
	must(t, err)
	if len(events) != 0 {
		t.Errorf("a failed unit wrote events %+v", events)
	}
	if rec := w.f.lookup(t, w.p.Mode, w.p.IdempotencyKey, at(3*time.Minute)); rec.State != paygate.IdempotencyInFlight {
		t.Errorf("a failed unit completed the idempotency record: %+v", rec)
	}
	_, err = s.SandboxChargeByPayment(ctx(t), "sandbox-eu", w.p.ID)
	wantNotFound(t, err)
}

// wantEvents checks the payment's events, oldest first, by id.
func (w unitWorld) wantEvents(t *testing.T, want ...paygate.Event) {
	t.Helper()
	got, err := w.f.s.Events(ctx(t), paygate.EventQuery{MerchantID: w.p.MerchantID, Mode: w.p.Mode})
	must(t, err)
	equal(t, "events", want, got)
}

func unitCases() []testCase {
	return []testCase{
		{"EmptyWritesNothing", func(t *testing.T, s paygate.Store) {
			w := newUnitWorld(t, s)
			must(t, s.Commit(ctx(t), paygate.Unit{}))
			w.wantNothingWritten(t)
		}},
		{"AppliesEveryOperation", func(t *testing.T, s paygate.Store) {
			w := newUnitWorld(t, s)
			ev := eventValue(w.p, paygate.EventPaymentCaptured, "", at(2*time.Minute))
			charge := sandboxChargeValue("sandbox-eu", w.p.ID, at(90*time.Second))
			tr := w.move(paygate.PaymentCaptured, paygate.PaymentCreated)
			tr.AmountCaptured = ptr(w.p.Amount.Amount)
			must(t, s.Commit(ctx(t), paygate.Unit{Ops: []paygate.Op{charge, tr, ev, w.answer(`{"ok":1}`)}}))

			got, err := s.PaymentByID(ctx(t), w.p.MerchantID, w.p.Mode, w.p.ID)
			must(t, err)
			want := w.p
			want.Status, want.ProviderID, want.ProviderRef = paygate.PaymentCaptured, tr.ProviderID, tr.ProviderRef
			want.AmountCaptured, want.UpdatedAt = w.p.Amount.Amount, tr.UpdatedAt
			equal(t, "payment", want, got)
			w.wantEvents(t, ev)
			rec := w.f.lookup(t, w.p.Mode, w.p.IdempotencyKey, at(3*time.Minute))
			if rec.State != paygate.IdempotencyComplete || rec.StatusCode != 201 || string(rec.Body) != `{"ok":1}` {
				t.Errorf("idempotency record %+v, want the unit's answer", rec)
			}
			stored, err := s.SandboxChargeByPayment(ctx(t), "sandbox-eu", w.p.ID)
			must(t, err)
			equal(t, "ledger entry", charge, stored)
		}},
		{"RefusedTransitionWritesNothing", func(t *testing.T, s paygate.Store) {
			// The refusal comes after writes of every kind, and before
			// others: none of them is written.
			w := newUnitWorld(t, s)
			err := s.Commit(ctx(t), paygate.Unit{Ops: []paygate.Op{
				eventValue(w.p, paygate.EventPaymentCaptured, "", at(2*time.Minute)),
				sandboxChargeValue("sandbox-eu", w.p.ID, at(2*time.Minute)),
				w.answer(`{"first":1}`),
				w.move(paygate.PaymentCaptured, paygate.PaymentAuthorized),
				eventValue(w.p, paygate.EventPaymentFailed, "", at(2*time.Minute)),
			}})
			wantIs(t, err, paygate.ErrStateConflict)
			w.wantNothingWritten(t)
		}},
		{"MissingPaymentIsNotFoundAndWritesNothing", func(t *testing.T, s paygate.Store) {
			w := newUnitWorld(t, s)
			other := newMerchant(t, s, base)
			for _, tr := range []paygate.PaymentTransition{
				{ID: newID(), MerchantID: w.p.MerchantID, Mode: w.p.Mode},
				{ID: w.p.ID, MerchantID: other.merchant.ID, Mode: w.p.Mode}, // another merchant's
				{ID: w.p.ID, MerchantID: w.p.MerchantID, Mode: otherMode(w.p.Mode)},
			} {
				tr.From, tr.To, tr.UpdatedAt = []paygate.PaymentStatus{paygate.PaymentCreated}, paygate.PaymentFailed, at(2*time.Minute)
				err := s.Commit(ctx(t), paygate.Unit{Ops: []paygate.Op{
					sandboxChargeValue("sandbox-eu", w.p.ID, at(2*time.Minute)),
					tr,
					eventValue(w.p, paygate.EventPaymentFailed, "", at(2*time.Minute)),
					w.answer(`{}`),
				}})
				wantNotFound(t, err)
			}
			w.wantNothingWritten(t)
		}},
		{"FailedWriteMidwayWritesNothing", func(t *testing.T, s paygate.Store) {
			// Not a refusal but an error of the database: a duplicate
			// event id, after a transition that applied.
			w := newUnitWorld(t, s)
			ev := eventValue(w.p, paygate.EventPaymentCaptured, "", at(2*time.Minute))
			err := s.Commit(ctx(t), paygate.Unit{Ops: []paygate.Op{
				w.move(paygate.PaymentAuthorized, paygate.PaymentCreated),
				sandboxChargeValue("sandbox-eu", w.p.ID, at(2*time.Minute)),
				ev, w.answer(`{}`), ev,
			}})
			wantIs(t, err, paygate.ErrConflict)
			w.wantNothingWritten(t)
		}},
		{"OperationsSeeTheOnesBefore", func(t *testing.T, s paygate.Store) {
			w := newUnitWorld(t, s)
			// In the wrong order the second transition is refused...
			err := s.Commit(ctx(t), paygate.Unit{Ops: []paygate.Op{
				w.move(paygate.PaymentCaptured, paygate.PaymentAuthorized),
				w.move(paygate.PaymentAuthorized, paygate.PaymentCreated),
			}})
			wantIs(t, err, paygate.ErrStateConflict)
			w.wantNothingWritten(t)
			// ...and in the right one the first makes the second apply.
			// Of two answers the first is kept, as for two requests.
			must(t, s.Commit(ctx(t), paygate.Unit{Ops: []paygate.Op{
				w.move(paygate.PaymentAuthorized, paygate.PaymentCreated),
				w.answer(`{"first":1}`),
				w.move(paygate.PaymentVoided, paygate.PaymentAuthorized),
				w.answer(`{"second":2}`),
			}}))
			got, err := s.PaymentByID(ctx(t), w.p.MerchantID, w.p.Mode, w.p.ID)
			must(t, err)
			if got.Status != paygate.PaymentVoided {
				t.Errorf("status %s, want voided", got.Status)
			}
			rec := w.f.lookup(t, w.p.Mode, w.p.IdempotencyKey, at(3*time.Minute))
			if string(rec.Body) != `{"first":1}` {
				t.Errorf("answer %s, want the first one", rec.Body)
			}
		}},
		{"EventsInTheirOrder", func(t *testing.T, s paygate.Store) {
			// Events of one instant, around and between other
			// operations, are listed in the unit's order.
			w := newUnitWorld(t, s)
			when := at(2 * time.Minute)
			evs := make([]paygate.Event, 5)
			for i := range evs {
				evs[i] = eventValue(w.p, paygate.EventPaymentAuthorized, "", when)
			}
			must(t, s.Commit(ctx(t), paygate.Unit{Ops: []paygate.Op{
				evs[0],
				w.move(paygate.PaymentAuthorized, paygate.PaymentCreated),
				evs[1], evs[2],
				w.answer(`{}`),
				evs[3],
				sandboxChargeValue("sandbox-eu", w.p.ID, when),
				evs[4],
			}}))
			w.wantEvents(t, evs...)
		}},
		{"LedgerEntryFirstWins", func(t *testing.T, s paygate.Store) {
			// An entry the provider has already is kept, without failing
			// the unit.
			w := newUnitWorld(t, s)
			first := sandboxChargeValue("sandbox-eu", w.p.ID, at(90*time.Second))
			must(t, commitOp(ctx(t), s, first))
			again := first
			again.Outcome, again.DeclineCode, again.Message = paygate.SandboxCaptured, "", ""
			again.CreatedAt = at(2 * time.Minute)
			must(t, s.Commit(ctx(t), paygate.Unit{Ops: []paygate.Op{
				again, w.move(paygate.PaymentFailed, paygate.PaymentCreated),
			}}))
			stored, err := s.SandboxChargeByPayment(ctx(t), "sandbox-eu", w.p.ID)
			must(t, err)
			equal(t, "ledger entry", first, stored)
			// Another provider's entry for the payment is its own.
			other := sandboxChargeValue("sandbox-us", w.p.ID, at(3*time.Minute))
			must(t, s.Commit(ctx(t), paygate.Unit{Ops: []paygate.Op{other}}))
			stored, err = s.SandboxChargeByPayment(ctx(t), "sandbox-us", w.p.ID)
			must(t, err)
			equal(t, "other provider's entry", other, stored)
		}},
		{"EventsMakeDeliveries", func(t *testing.T, s paygate.Store) {
			w := newUnitWorld(t, s)
			w.f.endpoint(t, paygate.ModeTest)
			failed := eventValue(w.p, paygate.EventPaymentFailed, "", at(2*time.Minute))
			err := s.Commit(ctx(t), paygate.Unit{Ops: []paygate.Op{
				failed, w.move(paygate.PaymentFailed, paygate.PaymentAuthorized),
			}})
			wantIs(t, err, paygate.ErrStateConflict)
			wantDeliveries(t, s, paygate.DeliveryQuery{MerchantID: w.p.MerchantID}, 0)

			captured := eventValue(w.p, paygate.EventPaymentCaptured, "", at(3*time.Minute))
			must(t, s.Commit(ctx(t), paygate.Unit{Ops: []paygate.Op{
				w.move(paygate.PaymentCaptured, paygate.PaymentCreated), captured,
			}}))
			got := wantDeliveries(t, s, paygate.DeliveryQuery{MerchantID: w.p.MerchantID}, 1)
			if got[0].EventID != captured.ID || got[0].Status != paygate.DeliveryPending {
				t.Errorf("delivery %+v, want a pending one of event %s", got[0], captured.ID)
			}
		}},
		{"RefusedRefundWritesNothing", func(t *testing.T, s paygate.Store) {
			// Each refusal of a new refund, between writes of every kind:
			// none of them is written, and nothing is reserved.
			f := newMerchant(t, s, base)
			other := newMerchant(t, s, base)
			p := f.capturedPayment(t, paygate.ModeTest, 1000, "EUR", 1000)
			key := "refund-unit-key"
			f.reserve(t, p.Mode, key, at(time.Hour))
			created := f.newPayment(t, paygate.ModeTest, at(time.Minute))
			for _, c := range []struct {
				name  string
				edit  func(r *paygate.Refund)
				code  paygate.Code
				param string
			}{
				{"over the captured amount", func(r *paygate.Refund) { r.Amount.Amount = 1001 }, paygate.CodeInvalidRequest, "amount"},
				{"not positive", func(r *paygate.Refund) { r.Amount.Amount = 0 }, paygate.CodeInvalidRequest, "amount"},
				{"another currency", func(r *paygate.Refund) { r.Amount.Currency = "USD" }, paygate.CodeInvalidRequest, "currency"},
				{"not captured", func(r *paygate.Refund) { r.PaymentID = created.ID }, paygate.CodeInvalidRequest, "transactionId"},
				{"missing payment", func(r *paygate.Refund) { r.PaymentID = newID() }, paygate.CodeNotFound, ""},
				{"another merchant's", func(r *paygate.Refund) { r.MerchantID = other.merchant.ID }, paygate.CodeNotFound, ""},
				{"another mode's", func(r *paygate.Refund) { r.Mode = otherMode(p.Mode) }, paygate.CodeNotFound, ""},
			} {
				r := refundValue(p, 400, at(time.Hour))
				c.edit(&r)
				err := s.Commit(ctx(t), paygate.Unit{Ops: []paygate.Op{
					eventValue(p, paygate.EventRefundCreated, "", at(time.Hour)),
					sandboxChargeValue("sandbox-eu", p.ID, at(time.Hour)),
					paygate.NewRefund{Refund: r},
					eventValue(p, paygate.EventRefundCreated, r.ID, at(time.Hour)),
					paygate.IdempotencyCompletion{MerchantID: p.MerchantID, Mode: p.Mode, Key: key, StatusCode: 201, Body: []byte(`{}`)},
				}})
				if c.code == paygate.CodeNotFound {
					wantNotFound(t, err)
				} else {
					wantCode(t, err, c.code, c.param)
				}
				assertNoRefundWritten(t, f, p, r, key)
				events, err := s.Events(ctx(t), paygate.EventQuery{MerchantID: p.MerchantID, Mode: p.Mode})
				must(t, err)
				if len(events) != 0 {
					t.Errorf("%s: a refused unit wrote events %+v", c.name, events)
				}
				_, err = s.SandboxChargeByPayment(ctx(t), "sandbox-eu", p.ID)
				wantNotFound(t, err)
			}
		}},
		{"RefusedRefundTransitionWritesNothing", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			other := newMerchant(t, s, base)
			p := f.capturedPayment(t, paygate.ModeTest, 1000, "EUR", 1000)
			r := refundValue(p, 1000, at(time.Hour))
			must(t, createRefund(ctx(t), s, r, nil, nil))
			later := refundValue(p, 1000, at(2*time.Hour))
			for _, c := range []struct {
				tr      paygate.RefundTransition
				missing bool
			}{
				{paygate.RefundTransition{ID: r.ID, MerchantID: r.MerchantID, Mode: r.Mode, From: paygate.RefundPending}, false},
				{paygate.RefundTransition{ID: newID(), MerchantID: r.MerchantID, Mode: r.Mode, From: paygate.RefundCreated}, true},
				{paygate.RefundTransition{ID: r.ID, MerchantID: other.merchant.ID, Mode: r.Mode, From: paygate.RefundCreated}, true},
				{paygate.RefundTransition{ID: r.ID, MerchantID: r.MerchantID, Mode: otherMode(r.Mode), From: paygate.RefundCreated}, true},
			} {
				c.tr.To, c.tr.UpdatedAt, c.tr.FailureReason = paygate.RefundFailed, at(2*time.Hour), "declined"
				// Had the transition applied, it would have given the
				// amount back and the new refund would have fitted.
				err := s.Commit(ctx(t), paygate.Unit{Ops: []paygate.Op{
					eventValue(p, paygate.EventRefundFailed, r.ID, at(2*time.Hour)),
					c.tr,
					paygate.NewRefund{Refund: later},
				}})
				if c.missing {
					wantNotFound(t, err)
				} else {
					wantIs(t, err, paygate.ErrStateConflict)
				}
			}
			got, err := s.RefundByID(ctx(t), r.MerchantID, r.Mode, r.ID)
			must(t, err)
			equal(t, "refund after refused units", r, got)
			if n := refundedAmount(t, s, p); n != 1000 {
				t.Errorf("AmountRefunded: got %d, want 1000", n)
			}
			_, err = s.RefundByID(ctx(t), later.MerchantID, later.Mode, later.ID)
			wantNotFound(t, err)
			events, err := s.Events(ctx(t), paygate.EventQuery{MerchantID: p.MerchantID, Mode: p.Mode})
			must(t, err)
			if len(events) != 0 {
				t.Errorf("a refused unit wrote events %+v", events)
			}
		}},
		{"RefundOperationsSeeTheOnesBefore", func(t *testing.T, s paygate.Store) {
			// A capture makes a refund of the same unit possible, and a
			// failed refund gives back what a later one of the unit takes.
			w := newUnitWorld(t, s)
			tr := w.move(paygate.PaymentCaptured, paygate.PaymentCreated)
			tr.AmountCaptured = ptr(w.p.Amount.Amount)
			first := refundValue(w.p, w.p.Amount.Amount, at(3*time.Minute))
			must(t, s.Commit(ctx(t), paygate.Unit{Ops: []paygate.Op{tr, paygate.NewRefund{Refund: first}}}))
			second := refundValue(w.p, w.p.Amount.Amount, at(4*time.Minute))
			second.ProviderID = tr.ProviderID
			ev := eventValue(w.p, paygate.EventRefundFailed, first.ID, at(4*time.Minute))
			must(t, s.Commit(ctx(t), paygate.Unit{Ops: []paygate.Op{
				paygate.RefundTransition{ID: first.ID, MerchantID: first.MerchantID, Mode: first.Mode,
					From: paygate.RefundCreated, To: paygate.RefundFailed, UpdatedAt: at(4 * time.Minute)},
				ev,
				paygate.NewRefund{Refund: second},
			}}))
			got, err := s.RefundByID(ctx(t), first.MerchantID, first.Mode, first.ID)
			must(t, err)
			if got.Status != paygate.RefundFailed {
				t.Errorf("first refund %s, want failed", got.Status)
			}
			got, err = s.RefundByID(ctx(t), second.MerchantID, second.Mode, second.ID)
			must(t, err)
			equal(t, "second refund", second, got)
			if n := refundedAmount(t, s, w.p); n != w.p.Amount.Amount {
				t.Errorf("AmountRefunded: got %d, want %d", n, w.p.Amount.Amount)
			}
			w.wantEvents(t, ev)
		}},
		{"RefusesWhatIsNotAnOperation", func(t *testing.T, s paygate.Store) {
			w := newUnitWorld(t, s)
			done := w.answer(`{}`)
			err := s.Commit(ctx(t), paygate.Unit{Ops: []paygate.Op{
				sandboxChargeValue("sandbox-eu", w.p.ID, at(2*time.Minute)), &done,
			}})
			if err == nil {
				t.Fatal("a unit with a pointer operation was committed")
			}
			w.wantNothingWritten(t)
		}},
	}
}
