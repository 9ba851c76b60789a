package payment_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/httpapi"
	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/payment"
	"github.com/paygate/paygate/internal/provider/sandbox"
)

// TestUnknownOutcomeReplays202 is decisions §15, "Replays of an unknown
// outcome": card 4000000000000705 answers 202 with status created; that
// answer is stored under the key at once, and a retry gets it byte for
// byte while the provider is still processing the payment, and still after
// recovery has captured it (recovery writes the payment and its event, not
// a second answer).
func TestUnknownOutcomeReplays202(t *testing.T) {
	t.Parallel()
	sandboxEngines(t, func(t *testing.T, fx *sandboxFixture) {
		ctx := t.Context()
		ans := fx.pay(t, "ik-timeout", sandbox.CardTimeout)
		var body struct {
			Data struct {
				ID       string `json:"id"`
				Status   string `json:"status"`
				Provider string `json:"provider"`
			} `json:"data"`
		}
		if err := json.Unmarshal(ans.Body, &body); err != nil || ans.Status != 202 ||
			body.Data.Status != "created" || body.Data.Provider != "sandbox-eu" {
			t.Fatalf("create answered %d %s", ans.Status, ans.Body)
		}
		fx.assertReplays(t, "ik-timeout", 202, ans.Body)

		// The provider is still processing it: recovery leaves it created.
		rec := fx.svc.NewRecovery(time.Second)
		if n := rec.RunOnce(ctx); n != 0 {
			t.Fatalf("recovery finished %d payments before the provider knew the outcome", n)
		}
		fx.assertReplays(t, "ik-timeout", 202, ans.Body)

		fx.clock.Add(sandbox.TimeoutAfter + sandbox.InquiryDelay)
		if n := rec.RunOnce(ctx); n != 1 {
			t.Fatalf("recovery finished %d payments, want 1", n)
		}
		p, err := fx.st.PaymentByID(ctx, "m1", paygate.ModeTest, body.Data.ID)
		if err != nil || p.Status != paygate.PaymentCaptured || p.ProviderID != "sandbox-eu" || p.AmountCaptured != 1050 {
			t.Fatalf("payment after recovery: %+v %v", p, err)
		}
		evs, err := fx.st.Events(ctx, paygate.EventQuery{MerchantID: "m1", Mode: paygate.ModeTest})
		if err != nil || len(evs) != 1 || evs[0].Type != paygate.EventPaymentCaptured || evs[0].PaymentID != p.ID {
			t.Fatalf("events after recovery: %+v %v", evs, err)
		}
		fx.assertReplays(t, "ik-timeout", 202, ans.Body)
	})
}

// TestCrashedRequestReplaysRecoveredAnswer: a request that never answered
// (its process died after the provider processed the charge) leaves its
// key in flight; retries get 409 until recovery, which then stores the
// answer the request would have given, and retries get that.
func TestCrashedRequestReplaysRecoveredAnswer(t *testing.T) {
	t.Parallel()
	sandboxEngines(t, func(t *testing.T, fx *sandboxFixture) {
		ctx := t.Context()
		const key = "ik-crash"
		if _, reserved, err := fx.st.ReserveIdempotency(ctx, fx.reservation(key)); err != nil || !reserved {
			t.Fatalf("reserve: %v %v", reserved, err)
		}
		now := fx.clock.Now()
		p, err := fx.st.CreatePayment(ctx, paygate.NewPayment{
			Payment: paygate.Payment{
				ID: id.New(), MerchantID: "m1", Mode: paygate.ModeTest, Status: paygate.PaymentCreated,
				Amount: paygate.Money{Amount: 1050, Currency: "EUR"}, AmountText: "10.50", Method: paygate.MethodCard,
				MerchantRef: key, Metadata: []byte("{}"), IdempotencyKey: key,
				LeaseUntil: now.Add(paygate.PaymentLease), CreatedAt: now, UpdatedAt: now,
			},
			CustomerExternalID: "c1", NewCustomerID: id.New(),
		})
		if err != nil {
			t.Fatal(err)
		}
		// The provider processed the charge; the answer died with the process.
		if _, err := fx.prov.Charge(ctx, paygate.ChargeRequest{
			PaymentID: p.ID, MerchantID: "m1", Mode: paygate.ModeTest, Amount: p.Amount,
			Card: paygate.Card{Number: "4242424242424242", ExpMonth: 12, ExpYear: 2040, CVV: "123", HolderName: "A"},
		}); err != nil {
			t.Fatal(err)
		}
		if rec := fx.replay(t, key); rec.State != paygate.IdempotencyInFlight {
			t.Fatalf("before recovery the key is %s, want in flight (409)", rec.State)
		}
		recovery := fx.svc.NewRecovery(time.Second)
		if n := recovery.RunOnce(ctx); n != 0 {
			t.Fatalf("recovery took over a payment within its lease (%d)", n)
		}
		fx.clock.Add(paygate.PaymentLease + time.Second)
		if n := recovery.RunOnce(ctx); n != 1 {
			t.Fatalf("recovery finished %d payments, want 1", n)
		}
		got, err := fx.st.PaymentByID(ctx, "m1", paygate.ModeTest, p.ID)
		if err != nil || got.Status != paygate.PaymentCaptured || got.ProviderID != "sandbox-eu" {
			t.Fatalf("payment after recovery: %+v %v", got, err)
		}
		want := httpapi.Encoder{}.Encode(payment.Result{Kind: payment.PaymentCreated, Payment: &got})
		fx.assertReplays(t, key, 201, want.Body)
	})
}
