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
	must(t, s.Commit(ctx(t), transitionUnit(move, []paygate.Event{eventValue(p, paygate.EventPaymentCaptured, "", at(2*time.Minute))}, nil)))
	want("a transition with an event", 1)
	wantIs(t, s.Commit(ctx(t), transitionUnit(move, []paygate.Event{eventValue(p, paygate.EventPaymentCaptured, "", at(3*time.Minute))}, nil)), paygate.ErrStateConflict)
	want("a transition that lost its race", 1)
	must(t, s.Commit(ctx(t), paygate.Unit{Ops: []paygate.Op{sandboxChargeValue("sandbox-eu", p.ID, at(3*time.Minute))}}))
	want("a unit without events", 1)
	q := f.newPayment(t, paygate.ModeTest, at(time.Minute))
	must(t, s.Commit(ctx(t), paygate.Unit{Ops: []paygate.Op{
		eventValue(q, paygate.EventPaymentAuthorized, "", at(3*time.Minute)),
		paygate.PaymentTransition{ID: q.ID, MerchantID: q.MerchantID, Mode: q.Mode,
			From: []paygate.PaymentStatus{paygate.PaymentCreated}, To: paygate.PaymentAuthorized, UpdatedAt: at(3 * time.Minute)},
		eventValue(q, paygate.EventPaymentAuthorized, "", at(3*time.Minute)),
	}}))
	want("a unit with events around its transition", 2)

	r := refundValue(p, 100, at(4*time.Minute))
	must(t, createRefund(ctx(t), s, r, []paygate.Event{eventValue(p, paygate.EventRefundCreated, r.ID, at(4*time.Minute))}, nil))
	want("a refund with an event", 3)
	must(t, commitRefundTransition(ctx(t), s, paygate.RefundTransition{
		ID: r.ID, MerchantID: r.MerchantID, Mode: r.Mode, From: paygate.RefundCreated, To: paygate.RefundPending,
		UpdatedAt: at(5 * time.Minute),
	}, nil))
	want("a refund's transition without events", 3)
	must(t, commitRefundTransition(ctx(t), s, paygate.RefundTransition{
		ID: r.ID, MerchantID: r.MerchantID, Mode: r.Mode, From: paygate.RefundPending, To: paygate.RefundSucceeded,
		ProviderRef: "re-" + r.ID, UpdatedAt: at(6 * time.Minute),
	}, []paygate.Event{eventValue(p, paygate.EventRefundSucceeded, r.ID, at(6*time.Minute))}))
	want("a refund's transition with an event", 4)
}
