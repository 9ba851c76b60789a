package storetest

import (
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

func eventCases() []testCase {
	return []testCase{
		{"OldestFirstAndTenancy", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			other := newMerchant(t, s, base)
			p := f.newPayment(t, paygate.ModeTest, at(time.Hour))
			live := f.newPayment(t, paygate.ModeLive, at(time.Hour))
			foreign := other.newPayment(t, paygate.ModeTest, at(time.Hour))
			captured := eventValue(p, paygate.EventPaymentCaptured, "", at(3*time.Hour))
			authorized := eventValue(p, paygate.EventPaymentAuthorized, "", at(2*time.Hour))
			// Written in one transition, newer first: listed oldest first.
			must(t, s.Commit(ctx(t), transitionUnit(paygate.PaymentTransition{
				ID: p.ID, MerchantID: p.MerchantID, Mode: p.Mode,
				From: []paygate.PaymentStatus{paygate.PaymentCreated}, To: paygate.PaymentCaptured,
				AmountCaptured: ptr(p.Amount.Amount), UpdatedAt: at(3 * time.Hour),
			}, []paygate.Event{captured, authorized}, nil)))
			for _, q := range []paygate.Payment{live, foreign} {
				must(t, s.Commit(ctx(t), transitionUnit(paygate.PaymentTransition{
					ID: q.ID, MerchantID: q.MerchantID, Mode: q.Mode,
					From: []paygate.PaymentStatus{paygate.PaymentCreated}, To: paygate.PaymentFailed,
					UpdatedAt: at(90 * time.Minute),
				}, []paygate.Event{eventValue(q, paygate.EventPaymentFailed, "", at(90*time.Minute))}, nil)))
			}
			refund := refundValue(p, 100, at(4*time.Hour))
			created := eventValue(p, paygate.EventRefundCreated, refund.ID, at(4*time.Hour))
			must(t, createRefund(ctx(t), s, refund, []paygate.Event{created}, nil))
			succeeded := eventValue(p, paygate.EventRefundSucceeded, refund.ID, at(5*time.Hour))
			must(t, commitRefundTransition(ctx(t), s, paygate.RefundTransition{
				ID: refund.ID, MerchantID: refund.MerchantID, Mode: refund.Mode,
				From: paygate.RefundCreated, To: paygate.RefundSucceeded, UpdatedAt: at(5 * time.Hour),
			}, []paygate.Event{succeeded}))

			got, err := s.Events(ctx(t), paygate.EventQuery{MerchantID: f.merchant.ID, Mode: paygate.ModeTest, Limit: 100})
			must(t, err)
			equal(t, "events", []paygate.Event{authorized, captured, created, succeeded}, got)
			got, err = s.Events(ctx(t), paygate.EventQuery{MerchantID: f.merchant.ID, Mode: paygate.ModeTest, Limit: 2})
			must(t, err)
			equal(t, "events, limited", []paygate.Event{authorized, captured}, got)
			got, err = s.Events(ctx(t), paygate.EventQuery{MerchantID: f.merchant.ID, Mode: paygate.ModeLive, Limit: 100})
			must(t, err)
			if len(got) != 1 || got[0].PaymentID != live.ID {
				t.Errorf("live events: got %d, want the live payment's one", len(got))
			}
		}},
	}
}
