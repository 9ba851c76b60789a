package httpapi

import (
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/payment"
)

// BenchmarkPaymentAnswer renders the 201 answer of a payment, stored under
// its idempotency key and sent.
func BenchmarkPaymentAnswer(b *testing.B) {
	p := benchPayment()
	b.ReportAllocs()
	for b.Loop() {
		if a := (Encoder{}).Encode(payment.Result{Kind: payment.PaymentCreated, Payment: &p}); a.Status != 201 {
			b.Fatal(a.Status)
		}
	}
}

func benchPayment() paygate.Payment {
	now := paygate.Normalize(time.Now())
	return paygate.Payment{
		ID: "01a2024c-0a59-7770-98c6-c87478e3149c", MerchantID: "8f0c5b1e-3a4d-4e6f-9a7b-0c1d2e3f4a5b",
		Mode: paygate.ModeTest, Status: paygate.PaymentCaptured, ProviderID: "sandbox-eu",
		Amount: paygate.Money{Amount: 4200, Currency: "EUR"}, AmountText: "42.00", AmountCaptured: 4200,
		Method: paygate.MethodCard, CreatedAt: now, UpdatedAt: now,
	}
}
