package httpapi

import (
	"testing"

	"github.com/paygate/paygate/internal/paygate"
)

func TestRefundBody(t *testing.T) {
	t.Parallel()
	const tx = "0190c8e4-7b1a-7c3d-8e2f-123456789abc"
	t.Run("OK", func(t *testing.T) {
		b, err := RefundBody(tx, "5.50", "eur", "")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := string(b), `{"amount":"5.50","currency":"eur","transactionId":"`+tx+`"}`; got != want {
			t.Fatalf("body %s, want %s", got, want)
		}
		in, cur, e := ParseRefund(b)
		if e != nil {
			t.Fatal(e)
		}
		if cur != "EUR" || in.Amount != (paygate.Money{Amount: 550, Currency: "EUR"}) || in.AmountText != "5.50" || in.PaymentID != tx || in.Reason != "" {
			t.Fatalf("parsed %+v %s", in, cur)
		}
	})
	t.Run("Reason", func(t *testing.T) {
		b, err := RefundBody(tx, "1", "JPY", "damaged")
		if err != nil {
			t.Fatal(err)
		}
		in, _, e := ParseRefund(b)
		if e != nil || in.Reason != "damaged" {
			t.Fatalf("parsed %+v, %v", in, e)
		}
	})
	t.Run("ErrAmountTooPrecise", func(t *testing.T) {
		b, _ := RefundBody(tx, "1.5", "JPY", "")
		_, _, e := ParseRefund(b)
		if e == nil || e.Param != "amount" {
			t.Fatalf("error %v, want param amount", e)
		}
	})
	t.Run("ErrUnknownField", func(t *testing.T) {
		_, _, e := ParseRefund([]byte(`{"transactionId":"` + tx + `","amount":"1","currency":"EUR","extra":1}`))
		if e == nil || e.Code != paygate.CodeInvalidRequest {
			t.Fatalf("error %v, want INVALID_REQUEST", e)
		}
	})
}
