package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/paygate/paygate/internal/paygate"
)

// TestIdempotency covers decisions §5 end to end.
func TestIdempotency(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engine) {
		db, m, g := startWithMerchant(t, e, "Idem Ltd", "--rate-limit-test", "1000")
		key := m.TestSecretKey

		t.Run("ReplayIsByteIdentical", func(t *testing.T) {
			body := `{"amount":"12.00","currency":"EUR","customerId":"c1","card":{"number":"4242424242424242","expiryMonth":"12","expiryYear":"` + futureYear() + `","cvv":"123","holderName":"A B"}}`
			first := g.call(http.MethodPost, "/v1/payments", key, body, "Idempotency-Key", "replay-1")
			expect(t, first, 201)
			// Same JSON, other key order and whitespace: same fingerprint.
			reordered := `{ "currency":"EUR", "amount":"12.00", "card":{"holderName":"A B","cvv":"123","expiryYear":"` + futureYear() + `","expiryMonth":"12","number":"4242424242424242"}, "customerId":"c1" }`
			second := g.call(http.MethodPost, "/v1/payments", key, reordered, "Idempotency-Key", "replay-1")
			expect(t, second, 201)
			if !bytes.Equal(first.Raw, second.Raw) {
				t.Fatalf("replay differs:\n%s\n%s", first.Raw, second.Raw)
			}
			if second.Header.Get("Idempotent-Replayed") != "true" || first.Header.Get("Idempotent-Replayed") != "" {
				t.Fatalf("Idempotent-Replayed header: first %q second %q", first.Header.Get("Idempotent-Replayed"), second.Header.Get("Idempotent-Replayed"))
			}
			other := g.call(http.MethodPost, "/v1/payments", key, paymentBody("4242424242424242", "13.00", "EUR"), "Idempotency-Key", "replay-1")
			expect(t, other, 409, "DUPLICATE_REQUEST")
			// The key is scoped per merchant and mode, not per endpoint.
			expect(t, g.call(http.MethodPost, "/v1/customers", key, map[string]any{"externalId": "x"}, "Idempotency-Key", "replay-1"), 409, "DUPLICATE_REQUEST")
			// Another mode has its own scope.
			live := g.call(http.MethodPost, "/v1/customers", m.LiveSecretKey, map[string]any{"externalId": "x"}, "Idempotency-Key", "replay-1")
			expect(t, live, 201)
		})
		t.Run("DeclineIsStored", func(t *testing.T) {
			b := paymentBody("4000000000000002", "5.00", "EUR")
			first := g.call(http.MethodPost, "/v1/payments", key, b, "Idempotency-Key", "decl-1")
			expect(t, first, 400, "CARD_DECLINED")
			again := g.call(http.MethodPost, "/v1/payments", key, b, "Idempotency-Key", "decl-1")
			if !bytes.Equal(first.Raw, again.Raw) || again.Header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("decline not replayed: %s / %s", first.Raw, again.Raw)
			}
		})
		t.Run("ValidationIsNotStored", func(t *testing.T) {
			b := paymentBody("4242424242424242", "5.001", "EUR")
			expect(t, g.call(http.MethodPost, "/v1/payments", key, b, "Idempotency-Key", "fix-1"), 400, "INVALID_REQUEST", "amount")
			b["amount"] = "5.00"
			expect(t, g.call(http.MethodPost, "/v1/payments", key, b, "Idempotency-Key", "fix-1"), 201)
			// A 404 target is not stored either.
			rb := map[string]any{"transactionId": "00000000-0000-0000-0000-000000000000", "amount": "1.00", "currency": "EUR"}
			expect(t, g.call(http.MethodPost, "/v1/refunds", key, rb, "Idempotency-Key", "fix-2"), 404, "NOT_FOUND")
			expect(t, g.call(http.MethodPost, "/v1/customers", key, map[string]any{"externalId": "y"}, "Idempotency-Key", "fix-2"), 201)
		})
		t.Run("IdempotencyBeforeValidation", func(t *testing.T) {
			// decisions §1: idempotency (409/replay) is checked before
			// validation (400), although a payment is validated before its
			// key is reserved.
			expect(t, g.call(http.MethodPost, "/v1/payments", key, paymentBody("4242424242424242", "8.00", "EUR"), "Idempotency-Key", "order-7"), 201)
			expect(t, g.call(http.MethodPost, "/v1/payments", key, paymentBody("4242424242424242", "8.001", "EUR"), "Idempotency-Key", "order-7"), 409, "DUPLICATE_REQUEST", "Idempotency-Key")
			expect(t, g.call(http.MethodPost, "/v1/payments", key, `{"amount":`, "Idempotency-Key", "order-7"), 409, "DUPLICATE_REQUEST", "Idempotency-Key")
			unknownCard := map[string]any{"amount": "8.00", "currency": "EUR", "paymentMethod": "stored_card", "customerId": "c1", "storedCardId": "00000000-0000-4000-8000-000000000000"}
			expect(t, g.call(http.MethodPost, "/v1/payments", key, unknownCard, "Idempotency-Key", "order-7"), 409, "DUPLICATE_REQUEST", "Idempotency-Key")
			// The same failures on a fresh key are theirs, and leave the
			// key free.
			expect(t, g.call(http.MethodPost, "/v1/payments", key, unknownCard, "Idempotency-Key", "order-8"), 400, "INVALID_REQUEST")
			expect(t, g.call(http.MethodPost, "/v1/payments", key, `{"amount":`, "Idempotency-Key", "order-8"), 400, "INVALID_REQUEST")
			expect(t, g.call(http.MethodPost, "/v1/payments", key, paymentBody("4242424242424242", "8.00", "EUR"), "Idempotency-Key", "order-8"), 201)
		})
		t.Run("LongKeyRefused", func(t *testing.T) {
			long := string(bytes.Repeat([]byte("k"), 256))
			expect(t, g.call(http.MethodPost, "/v1/customers", key, map[string]any{"externalId": "z"}, "Idempotency-Key", long), 400, "INVALID_REQUEST", "Idempotency-Key")
		})
		t.Run("ConcurrentIdenticalRequests", func(t *testing.T) {
			b := paymentBody("4242424242424242", "77.00", "EUR")
			b["merchantRef"] = "concurrent-1"
			const n = 16
			var wg sync.WaitGroup
			results := make([]response, n)
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					results[i] = g.call(http.MethodPost, "/v1/payments", key, b, "Idempotency-Key", "conc-1")
				}()
			}
			wg.Wait()
			var ids = map[string]bool{}
			for _, r := range results {
				switch r.Status {
				case 201:
					ids[r.Data()["id"].(string)] = true
				case 409:
					expect(t, r, 409, "DUPLICATE_REQUEST")
					if r.Header.Get("Retry-After") != "1" {
						t.Fatalf("409 in flight without Retry-After: 1")
					}
				default:
					t.Fatalf("unexpected answer %d: %s", r.Status, r.Raw)
				}
			}
			if len(ids) != 1 {
				t.Fatalf("%d distinct payments from one key", len(ids))
			}
			var pid string
			for k := range ids {
				pid = k
			}
			evs := events(t, db, m.MerchantID, paygate.ModeTest)
			captured := 0
			for _, ev := range evs {
				if ev.Type == paygate.EventPaymentCaptured && bytes.Contains(ev.Payload, []byte(`"amount":7700`)) {
					captured++
					if ev.PaymentID != pid {
						t.Fatalf("a second payment was captured: %s", ev.PaymentID)
					}
				}
			}
			if captured != 1 {
				t.Fatalf("%d captures for one idempotency key, want 1", captured)
			}
		})
	})
}

// TestConcurrentRefunds fires refunds that together exceed the captured
// amount at once: the total never overshoots.
func TestConcurrentRefunds(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engine) {
		_, m, g := startWithMerchant(t, e, "Refunds Ltd", "--rate-limit-test", "1000")
		key := m.TestSecretKey
		p := g.call(http.MethodPost, "/v1/payments", key, paymentBody("4242424242424242", "100.00", "EUR"))
		pid := p.Data()["id"].(string)
		const n = 10
		var wg sync.WaitGroup
		statuses := make([]response, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				statuses[i] = g.call(http.MethodPost, "/v1/refunds", key,
					map[string]any{"transactionId": pid, "amount": "30.00", "currency": "EUR"},
					"Idempotency-Key", fmt.Sprintf("refund-%d", i))
			}()
		}
		wg.Wait()
		ok := 0
		for _, r := range statuses {
			switch r.Status {
			case 201:
				ok++
			case 400:
				expect(t, r, 400, "INVALID_REQUEST", "amount")
			default:
				t.Fatalf("unexpected %d: %s", r.Status, r.Raw)
			}
		}
		if ok != 3 {
			t.Fatalf("%d refunds of 30.00 accepted on 100.00, want 3", ok)
		}
		if got := g.call(http.MethodGet, "/v1/payments/"+pid, key, nil).Data()["amountRefunded"]; got != "90.00" {
			t.Fatalf("amountRefunded %v", got)
		}
	})
}

// TestIdempotencyIgnoresCVV: the CVV is left out of a request's fingerprint
// (decisions §15), so a retry that differs from the first request only in
// its CVV is the same request and gets the replay; a retry with another
// card number is another request.
func TestIdempotencyIgnoresCVV(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engine) {
		dbURL := e.url(t)
		m := createMerchant(t, dbURL, "CVV Ltd")
		g := startGateway(t, dbURL)
		b := paymentBody("4242424242424242", "5.00", "EUR")
		first := g.call(http.MethodPost, "/v1/payments", m.TestSecretKey, b, "Idempotency-Key", "cvv-retry")
		expect(t, first, http.StatusCreated)
		b["card"].(map[string]any)["cvv"] = "999"
		again := g.call(http.MethodPost, "/v1/payments", m.TestSecretKey, b, "Idempotency-Key", "cvv-retry")
		if again.Header.Get("Idempotent-Replayed") != "true" || string(again.Raw) != string(first.Raw) {
			t.Fatalf("retry with another CVV: %d %s, want the replay", again.Status, again.Raw)
		}
		b["card"].(map[string]any)["number"] = "5555555555554444"
		other := g.call(http.MethodPost, "/v1/payments", m.TestSecretKey, b, "Idempotency-Key", "cvv-retry")
		expect(t, other, http.StatusConflict, "DUPLICATE_REQUEST", "Idempotency-Key")
	})
}
