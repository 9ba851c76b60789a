package webhook

import (
	"encoding/base64"
	"testing"
	"time"
)

// BenchmarkSign signs a payment event as each delivery attempt does.
func BenchmarkSign(b *testing.B) {
	secret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	body := []byte(`{"id":"01a2024c-0a59-7770-98c6-c87478e3149c","event":"payment.captured","mode":"test",` +
		`"timestamp":"2026-11-22T08:07:47.545Z","data":{"transactionId":"01a2024c-0a59-7770-98c6-c87478e3149d",` +
		`"merchantId":"8f0c5b1e-3a4d-4e6f-9a7b-0c1d2e3f4a5b","status":"captured","amount":4200,"currency":"EUR"}}`)
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Sign(secret, "01a2024c-0a59-7770-98c6-c87478e3149c", now, body); err != nil {
			b.Fatal(err)
		}
	}
}
