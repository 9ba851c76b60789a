package payment_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/payment"
	"github.com/paygate/paygate/internal/provider/sandbox"
)

// TestFailedRefundSaysWhy: every refund of card 4000000000005126 fails at
// the sandbox. The failed refund carries errorCode PROVIDER_ERROR and the
// provider's reason as errorMessage, in its record and in its refund.failed
// event; refund.created says null for both (decisions §15).
func TestFailedRefundSaysWhy(t *testing.T) {
	t.Parallel()
	sandboxEngines(t, func(t *testing.T, fx *sandboxFixture) {
		ctx := t.Context()
		if ans := fx.pay(t, "ik-pay", sandbox.CardRefundFails); ans.Status != 201 {
			t.Fatalf("payment: %d %s", ans.Status, ans.Body)
		}
		p, err := fx.st.PaymentByMerchantRef(ctx, "m1", paygate.ModeTest, "ik-pay")
		if err != nil {
			t.Fatal(err)
		}
		if _, reserved, err := fx.st.ReserveIdempotency(ctx, fx.reservation("ik-refund")); err != nil || !reserved {
			t.Fatalf("reserve: %v %v", reserved, err)
		}
		if _, err := fx.svc.Refund(ctx, payment.Request{MerchantID: "m1", Mode: paygate.ModeTest, IdempotencyKey: "ik-refund"},
			payment.RefundInput{PaymentID: p.ID, Amount: paygate.Money{Amount: 400, Currency: "EUR"}, AmountText: "4.00"}); err != nil {
			t.Fatal(err)
		}
		if n := fx.svc.NewRefundWorker(time.Hour, time.Hour).RunOnce(ctx); n != 1 {
			t.Fatalf("the worker finished %d refunds, want 1", n)
		}
		refunds, err := fx.st.RefundsByPayment(ctx, "m1", paygate.ModeTest, p.ID)
		if err != nil || len(refunds) != 1 {
			t.Fatalf("refunds %+v %v", refunds, err)
		}
		r := refunds[0]
		const want = "The card issuer refused the refund."
		if r.Status != paygate.RefundFailed || r.ErrorCode != "PROVIDER_ERROR" || r.ErrorMessage != want {
			t.Fatalf("refund %+v; want failed, PROVIDER_ERROR, %q", r, want)
		}
		evs, err := fx.st.Events(ctx, paygate.EventQuery{MerchantID: "m1", Mode: paygate.ModeTest})
		if err != nil {
			t.Fatal(err)
		}
		got := map[paygate.EventType]map[string]json.RawMessage{}
		for _, e := range evs {
			if e.RefundID != r.ID {
				continue
			}
			var env struct {
				Data map[string]json.RawMessage `json:"data"`
			}
			if err := json.Unmarshal(e.Payload, &env); err != nil {
				t.Fatal(err)
			}
			got[e.Type] = env.Data
		}
		created, failed := got[paygate.EventRefundCreated], got[paygate.EventRefundFailed]
		if string(created["errorCode"]) != "null" || string(created["errorMessage"]) != "null" {
			t.Errorf("refund.created data %v; want errorCode and errorMessage null", created)
		}
		if string(failed["errorCode"]) != `"PROVIDER_ERROR"` || string(failed["errorMessage"]) != `"`+want+`"` {
			t.Errorf("refund.failed data %v; want PROVIDER_ERROR and %q", failed, want)
		}
	})
}
