package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store"
)

// events opens the gateway's database and lists a merchant's events.
func events(t *testing.T, dbURL, merchantID string, mode paygate.Mode) []paygate.Event {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, dbURL)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	defer st.Close()
	evs, err := st.Events(ctx, paygate.EventQuery{MerchantID: merchantID, Mode: mode, Limit: 10000})
	if err != nil {
		t.Fatalf("events: %v", err)
	}
	return evs
}

func countEvents(evs []paygate.Event, typ paygate.EventType, paymentID string) int {
	n := 0
	for _, e := range evs {
		if e.Type == typ && (paymentID == "" || e.PaymentID == paymentID) {
			n++
		}
	}
	return n
}

// TestWalkthrough is the README's five-minute walkthrough: customer, payment,
// lookups, refund, on both engines.
func TestWalkthrough(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engine) {
		db, m, g := startWithMerchant(t, e, "Walkthrough Ltd")
		key := m.TestSecretKey

		c := g.call(http.MethodPost, "/v1/customers", key, map[string]any{"externalId": "cust-42", "email": "ada@example.com", "metadata": map[string]any{"tier": "gold"}})
		expect(t, c, http.StatusCreated)
		cust := c.Data()
		if cust["externalId"] != "cust-42" || cust["email"] != "ada@example.com" {
			t.Fatalf("customer: %s", c.Raw)
		}
		again := g.call(http.MethodPost, "/v1/customers", key, map[string]any{"externalId": "cust-42"})
		expect(t, again, http.StatusCreated)
		if again.Data()["id"] != cust["id"] || again.Data()["createdAt"] != cust["createdAt"] || again.Data()["email"] != "ada@example.com" {
			t.Fatalf("upsert changed identity or dropped email: %s vs %s", again.Raw, c.Raw)
		}
		got := g.call(http.MethodGet, "/v1/customers/"+cust["id"].(string), key, nil)
		expect(t, got, http.StatusOK)
		if got.Body["meta"].(map[string]any)["timestamp"] == "" {
			t.Fatalf("no meta.timestamp: %s", got.Raw)
		}

		body := paymentBody("4242424242424242", "10.5", "eur")
		body["customerId"] = "cust-42"
		body["merchantRef"] = "order-1001"
		p := g.call(http.MethodPost, "/v1/payments", key, body)
		expect(t, p, http.StatusCreated)
		pd := p.Data()
		if pd["status"] != "captured" || pd["amount"] != "10.5" || pd["currency"] != "EUR" || pd["provider"] != "sandbox-eu" ||
			pd["threeDsRequired"] != false || pd["threeDsData"] != nil {
			t.Fatalf("creation result: %s", p.Raw)
		}
		if _, ok := pd["meta"]; ok {
			t.Fatalf("create response has meta")
		}
		pid := pd["id"].(string)

		rec := g.call(http.MethodGet, "/v1/payments/"+pid, key, nil)
		expect(t, rec, http.StatusOK)
		rd := rec.Data()
		want := map[string]any{
			"id": pid, "merchantId": m.MerchantID, "customerId": cust["id"], "providerId": "sandbox-eu",
			"status": "captured", "amount": "10.5", "currency": "EUR", "paymentMethod": "card",
			"merchantRef": "order-1001", "errorCode": nil, "errorMessage": nil, "declineCode": nil,
			"amountCaptured": "10.50", "amountRefunded": "0.00",
		}
		for k, v := range want {
			if rd[k] != v {
				t.Errorf("record %s = %v, want %v", k, rd[k], v)
			}
		}
		if _, ok := rd["metadata"]; ok {
			t.Errorf("metadata is not part of the retrieve record")
		}
		for _, f := range []string{"createdAt", "updatedAt"} {
			if _, err := time.Parse(time.RFC3339, rd[f].(string)); err != nil {
				t.Errorf("%s: %v", f, err)
			}
		}
		look := g.call(http.MethodGet, "/v1/payments?merchantRef=order-1001", key, nil)
		expect(t, look, http.StatusOK)
		if look.Data()["id"] != pid {
			t.Fatalf("lookup: %s", look.Raw)
		}

		rf := g.call(http.MethodPost, "/v1/refunds", key, map[string]any{"transactionId": pid, "amount": "4", "currency": "eur", "reason": "damaged"})
		expect(t, rf, http.StatusCreated)
		rfd := rf.Data()
		if rfd["status"] != "created" || rfd["amount"] != "4" || rfd["currency"] != "EUR" || rfd["transactionId"] != pid || rfd["reason"] != "damaged" {
			t.Fatalf("refund: %s", rf.Raw)
		}
		rid := rfd["id"].(string)
		eventually(t, 15*time.Second, "refund succeeded", func() bool {
			r := g.call(http.MethodGet, "/v1/refunds/"+rid, key, nil)
			return r.Status == 200 && r.Data()["status"] == "succeeded"
		})
		list := g.call(http.MethodGet, "/v1/payments/"+pid+"/refunds", key, nil)
		expect(t, list, http.StatusOK)
		if arr, _ := list.Body["data"].([]any); len(arr) != 1 {
			t.Fatalf("refund list: %s", list.Raw)
		}
		after := g.call(http.MethodGet, "/v1/payments/"+pid, key, nil)
		if after.Data()["status"] != "captured" || after.Data()["amountRefunded"] != "4.00" {
			t.Fatalf("after refund: %s", after.Raw)
		}
		evs := events(t, db, m.MerchantID, paygate.ModeTest)
		for _, typ := range []paygate.EventType{paygate.EventPaymentCaptured, paygate.EventRefundCreated, paygate.EventRefundSucceeded} {
			if n := countEvents(evs, typ, pid); n != 1 {
				t.Errorf("%s events: %d, want 1", typ, n)
			}
		}
	})
}

// TestTestCards checks every test card of decisions §12 that this version
// serves, end to end.
func TestTestCards(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engine) {
		_, m, g := startWithMerchant(t, e, "Cards Ltd", "--rate-limit-test", "1000")
		key := m.TestSecretKey
		cases := []struct {
			name, number, currency string
			status                 int
			payStatus, provider    string
			errName, declineCode   string
		}{
			{"Visa", "4242424242424242", "EUR", 201, "captured", "sandbox-eu", "", ""},
			{"Mastercard", "5555555555554444", "USD", 201, "captured", "sandbox-us", "", ""},
			{"Amex", "378282246310005", "JPY", 201, "captured", "sandbox-apac", "", ""},
			{"OtherValid", "4012888888881881", "KWD", 201, "captured", "sandbox-global", "", ""},
			{"Authorized", "4000000000000077", "EUR", 201, "authorized", "sandbox-eu", "", ""},
			{"GenericDecline", "4000000000000002", "EUR", 400, "failed", "sandbox-eu", "CARD_DECLINED", "generic_decline"},
			{"InsufficientFunds", "4000000000009995", "EUR", 400, "failed", "sandbox-eu", "CARD_DECLINED", "insufficient_funds"},
			{"ExpiredCard", "4000000000000069", "EUR", 400, "failed", "sandbox-eu", "CARD_DECLINED", "expired_card"},
			{"IncorrectCVC", "4000000000000127", "EUR", 400, "failed", "sandbox-eu", "CARD_DECLINED", "incorrect_cvc"},
			{"ProviderError", "4000000000000119", "EUR", 502, "failed", "sandbox-eu", "PROVIDER_ERROR", ""},
			{"Failover", "4000000000000259", "EUR", 201, "captured", "sandbox-global", "", ""},
			{"RefundFails", "4000000000005126", "GBP", 201, "captured", "sandbox-eu", "", ""},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				amount := "25.00"
				if tc.currency == "JPY" {
					amount = "2500"
				}
				r := g.call(http.MethodPost, "/v1/payments", key, paymentBody(tc.number, amount, tc.currency))
				expect(t, r, tc.status)
				var pid string
				if tc.errName != "" {
					e := r.Err()
					if e["name"] != tc.errName || e["transactionId"] == nil {
						t.Fatalf("error: %s", r.Raw)
					}
					if tc.declineCode != "" && e["declineCode"] != tc.declineCode {
						t.Fatalf("declineCode: %s", r.Raw)
					}
					if r.Body["data"] != nil {
						t.Fatalf("data must be null on error: %s", r.Raw)
					}
					pid = e["transactionId"].(string)
				} else {
					if r.Data()["status"] != tc.payStatus || r.Data()["provider"] != tc.provider {
						t.Fatalf("result: %s", r.Raw)
					}
					pid = r.Data()["id"].(string)
				}
				rec := g.call(http.MethodGet, "/v1/payments/"+pid, key, nil)
				expect(t, rec, 200)
				d := rec.Data()
				if d["status"] != tc.payStatus || d["providerId"] != tc.provider {
					t.Fatalf("record: %s", rec.Raw)
				}
				if tc.errName != "" {
					if d["errorCode"] != tc.errName || d["errorMessage"] == nil {
						t.Fatalf("record error fields: %s", rec.Raw)
					}
					if tc.declineCode != "" && d["declineCode"] != tc.declineCode {
						t.Fatalf("record declineCode: %s", rec.Raw)
					}
				}
			})
		}
	})
}

// TestCaptureVoidAndRefundFailure covers the extensions of decisions §8 and
// §10: capture, void, and a refund the provider refuses.
func TestCaptureVoidAndRefundFailure(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engine) {
		db, m, g := startWithMerchant(t, e, "Capture Ltd")
		key := m.TestSecretKey

		auth := g.call(http.MethodPost, "/v1/payments", key, paymentBody("4000000000000077", "50.00", "EUR"))
		expect(t, auth, 201)
		pid := auth.Data()["id"].(string)
		// A refund of an authorized payment is refused.
		expect(t, g.call(http.MethodPost, "/v1/refunds", key, map[string]any{"transactionId": pid, "amount": "1.00", "currency": "EUR"}), 400, "INVALID_REQUEST", "transactionId")
		expect(t, g.call(http.MethodPost, "/v1/payments/"+pid+"/capture", key, map[string]any{"amount": "50.01"}), 400, "INVALID_REQUEST", "amount")
		c := g.call(http.MethodPost, "/v1/payments/"+pid+"/capture", key, map[string]any{"amount": "30.00"})
		expect(t, c, 200)
		if c.Data()["status"] != "captured" || c.Data()["amountCaptured"] != "30.00" {
			t.Fatalf("capture: %s", c.Raw)
		}
		expect(t, g.call(http.MethodPost, "/v1/payments/"+pid+"/capture", key, map[string]any{}), 400, "INVALID_REQUEST", "-")
		// Refunds are limited by the captured amount.
		expect(t, g.call(http.MethodPost, "/v1/refunds", key, map[string]any{"transactionId": pid, "amount": "30.01", "currency": "EUR"}), 400, "INVALID_REQUEST", "amount")
		expect(t, g.call(http.MethodPost, "/v1/refunds", key, map[string]any{"transactionId": pid, "amount": "30.00", "currency": "USD"}), 400, "INVALID_REQUEST", "currency")
		expect(t, g.call(http.MethodPost, "/v1/refunds", key, map[string]any{"transactionId": pid, "amount": "30.00", "currency": "EUR"}), 201)

		auth2 := g.call(http.MethodPost, "/v1/payments", key, paymentBody("4000000000000077", "20.00", "USD"))
		pid2 := auth2.Data()["id"].(string)
		v := g.call(http.MethodPost, "/v1/payments/"+pid2+"/void", key, map[string]any{})
		expect(t, v, 200)
		if v.Data()["status"] != "voided" {
			t.Fatalf("void: %s", v.Raw)
		}
		expect(t, g.call(http.MethodPost, "/v1/payments/"+pid2+"/void", key, map[string]any{}), 400, "INVALID_REQUEST", "-")

		bad := g.call(http.MethodPost, "/v1/payments", key, paymentBody("4000000000005126", "10.00", "EUR"))
		bid := bad.Data()["id"].(string)
		rf := g.call(http.MethodPost, "/v1/refunds", key, map[string]any{"transactionId": bid, "amount": "10.00", "currency": "EUR"})
		expect(t, rf, 201)
		rid := rf.Data()["id"].(string)
		eventually(t, 15*time.Second, "refund failed", func() bool {
			return g.call(http.MethodGet, "/v1/refunds/"+rid, key, nil).Data()["status"] == "failed"
		})
		// A failed refund gives the amount back.
		if got := g.call(http.MethodGet, "/v1/payments/"+bid, key, nil).Data()["amountRefunded"]; got != "0.00" {
			t.Fatalf("amountRefunded after failed refund: %v", got)
		}
		// It says why (decisions §15), by id and in the payment's list; the
		// create answer and a refund that did not fail say null.
		assertRefundError(t, rf.Raw, "", "")
		const why = "The card issuer refused the refund."
		assertRefundError(t, g.call(http.MethodGet, "/v1/refunds/"+rid, key, nil).Raw, "PROVIDER_ERROR", why)
		list := g.call(http.MethodGet, "/v1/payments/"+bid+"/refunds", key, nil)
		var listed struct {
			Data []json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(list.Raw, &listed); err != nil || len(listed.Data) != 1 {
			t.Fatalf("refunds of the payment: %s", list.Raw)
		}
		assertRefundError(t, []byte(`{"data":`+string(listed.Data[0])+`}`), "PROVIDER_ERROR", why)
		refunds := g.call(http.MethodGet, "/v1/payments/"+pid+"/refunds", key, nil)
		if err := json.Unmarshal(refunds.Raw, &listed); err != nil || len(listed.Data) != 1 {
			t.Fatalf("refunds of the payment: %s", refunds.Raw)
		}
		assertRefundError(t, []byte(`{"data":`+string(listed.Data[0])+`}`), "", "")
		evs := events(t, db, m.MerchantID, paygate.ModeTest)
		for typ, want := range map[paygate.EventType]int{
			paygate.EventPaymentAuthorized: 2, paygate.EventPaymentCaptured: 2, paygate.EventPaymentVoided: 1,
			paygate.EventRefundCreated: 2, paygate.EventRefundFailed: 1,
		} {
			if n := countEvents(evs, typ, ""); n != want {
				t.Errorf("%s: %d events, want %d", typ, n, want)
			}
		}
	})
}

// assertRefundError checks the errorCode and errorMessage of the refund
// record in an answer's body: both present, null when want is "".
func assertRefundError(t *testing.T, body []byte, code, message string) {
	t.Helper()
	var env struct {
		Data map[string]json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		t.Fatalf("refund answer %s: %v", body, err)
	}
	quoted := func(s string) string {
		if s == "" {
			return "null"
		}
		b, _ := json.Marshal(s)
		return string(b)
	}
	gotCode, hasCode := env.Data["errorCode"]
	gotMsg, hasMsg := env.Data["errorMessage"]
	if !hasCode || !hasMsg || string(gotCode) != quoted(code) || string(gotMsg) != quoted(message) {
		t.Errorf("refund %s: want errorCode %s and errorMessage %s", body, quoted(code), quoted(message))
	}
}
