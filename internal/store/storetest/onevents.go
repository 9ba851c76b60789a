package storetest

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// CheckOnEvents checks an engine's OnEvents hook: open returns a store that
// calls onEvents after each commit that wrote outbox events (that is how
// the local webhook dispatcher learns of them), and only then: not for a
// write without events, nor for one that wrote nothing. Both engines run
// it.
func CheckOnEvents(t *testing.T, open func(t *testing.T, onEvents func()) paygate.Store) {
	t.Helper()
	var woken atomic.Int64
	s := open(t, func() { woken.Add(1) })
	want := func(what string, n int64) {
		t.Helper()
		if got := woken.Load(); got != n {
			t.Fatalf("after %s: the hook ran %d times, want %d", what, got, n)
		}
	}
	f := newMerchant(t, s, base)
	p := f.newPayment(t, paygate.ModeTest, at(time.Minute))
	want("a payment's insert", 0)

	move := paygate.PaymentTransition{
		ID: p.ID, MerchantID: p.MerchantID, Mode: p.Mode,
		From: []paygate.PaymentStatus{paygate.PaymentCreated}, To: paygate.PaymentCaptured,
		ProviderID: "sandbox-eu", ProviderRef: "ref-" + p.ID, AmountCaptured: ptr(p.Amount.Amount),
		UpdatedAt: at(2 * time.Minute),
	}
	must(t, s.TransitionPayment(ctx(t), move, []paygate.Event{eventValue(p, paygate.EventPaymentCaptured, "", at(2*time.Minute))}, nil))
	want("a transition with an event", 1)
	wantIs(t, s.TransitionPayment(ctx(t), move, []paygate.Event{eventValue(p, paygate.EventPaymentCaptured, "", at(3*time.Minute))}, nil), paygate.ErrStateConflict)
	want("a transition that lost its race", 1)

	r := refundValue(p, 100, at(4*time.Minute))
	must(t, s.CreateRefund(ctx(t), r, []paygate.Event{eventValue(p, paygate.EventRefundCreated, r.ID, at(4*time.Minute))}, nil))
	want("a refund with an event", 2)
	must(t, s.TransitionRefund(ctx(t), paygate.RefundTransition{
		ID: r.ID, MerchantID: r.MerchantID, Mode: r.Mode, From: paygate.RefundCreated, To: paygate.RefundPending,
		UpdatedAt: at(5 * time.Minute),
	}, nil))
	want("a refund's transition without events", 2)
	must(t, s.TransitionRefund(ctx(t), paygate.RefundTransition{
		ID: r.ID, MerchantID: r.MerchantID, Mode: r.Mode, From: paygate.RefundPending, To: paygate.RefundSucceeded,
		ProviderRef: "re-" + r.ID, UpdatedAt: at(6 * time.Minute),
	}, []paygate.Event{eventValue(p, paygate.EventRefundSucceeded, r.ID, at(6*time.Minute))}))
	want("a refund's transition with an event", 3)
}
