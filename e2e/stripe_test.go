package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
)

// stripeBackend is a minimal stand-in for Stripe's API, for the one flow
// the connector's own tests cannot show: a 3-D Secure payment whose customer
// comes back from Stripe to paygate's callback with a GET. Its payloads
// follow Stripe's documented PaymentMethod and PaymentIntent objects; the
// connector's package tests cover the rest (and stripe-mock the requests).
type stripeBackend struct {
	mu        sync.Mutex
	returnURL string
	status    string
}

func (b *stripeBackend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	b.mu.Lock()
	defer b.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	intent := func() map[string]any {
		pi := map[string]any{"id": "pi_e2e3ds", "object": "payment_intent", "amount": 1050, "currency": "eur",
			"status": b.status, "metadata": map[string]string{}, "next_action": nil, "last_payment_error": nil}
		if b.status == "requires_action" {
			pi["next_action"] = map[string]any{"type": "redirect_to_url",
				"redirect_to_url": map[string]any{"url": "https://hooks.stripe.example/redirect/authenticate/src_1", "return_url": b.returnURL}}
		}
		return pi
	}
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/payment_methods":
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "pm_e2e", "object": "payment_method", "type": "card"})
	case r.Method == http.MethodPost && r.URL.Path == "/v1/payment_intents":
		b.returnURL, b.status = r.PostForm.Get("return_url"), "requires_action"
		_ = json.NewEncoder(w).Encode(intent())
	case r.Method == http.MethodGet && r.URL.Path == "/v1/payment_intents/pi_e2e3ds":
		_ = json.NewEncoder(w).Encode(intent())
	default:
		w.WriteHeader(http.StatusNotFound)
		_, _ = fmt.Fprint(w, `{"error":{"type":"invalid_request_error","message":"Unrecognized request URL."}}`)
	}
}

// TestStripeThreeDSReturn: a test-mode payment routed to a stripe provider
// (pointed at a local backend) answers pending_3ds with Stripe's redirect,
// the return_url Stripe got is paygate's callback, and the customer's GET
// back to it finishes the payment and sends them on to the merchant.
func TestStripeThreeDSReturn(t *testing.T) {
	t.Parallel()
	backend := &stripeBackend{}
	srv := httptest.NewServer(backend)
	t.Cleanup(srv.Close)
	// A variable of its own: no other test reads it.
	os.Setenv("PAYGATE_E2E_STRIPE_KEY", "sk_test_e2e")
	cfg := writeConfig(t, `
providers:
  - id: stripe-e2e
    kind: stripe
    mode: test
    currencies: [EUR]
    base_url: `+srv.URL+`
    credentials:
      secret_key: PAYGATE_E2E_STRIPE_KEY
routes:
  test:
    EUR: [stripe-e2e]
`)
	db := sqliteEngine().url(t)
	m := createMerchant(t, db, "Stripe Shop")
	g := startGateway(t, db, "--config", cfg)

	body := paymentBody("4000000000003220", "10.50", "EUR")
	body["returnUrl"] = "https://shop.example/return"
	r := g.call(http.MethodPost, "/v1/payments", m.TestSecretKey, body)
	expect(t, r, http.StatusCreated)
	d := r.Data()
	tds, _ := d["threeDsData"].(map[string]any)
	if d["status"] != "pending_3ds" || d["provider"] != "stripe-e2e" || tds["redirectUrl"] != "https://hooks.stripe.example/redirect/authenticate/src_1" {
		t.Fatalf("creation answer: %s", r.Raw)
	}
	backend.mu.Lock()
	ret := backend.returnURL
	backend.mu.Unlock()
	u, err := url.Parse(ret)
	if err != nil || !strings.HasPrefix(u.Path, "/v1/3ds/callback/") {
		t.Fatalf("return_url sent to Stripe: %q", ret)
	}
	params, _ := tds["parameters"].(map[string]any)
	if params["TermUrl"] != ret {
		t.Fatalf("TermUrl %v, return_url %q: one token", params["TermUrl"], ret)
	}

	// The customer authenticates at Stripe, which sends them back.
	backend.mu.Lock()
	backend.status = "succeeded"
	backend.mu.Unlock()
	back := g.url + u.Path + "?payment_intent=pi_e2e3ds&payment_intent_client_secret=pi_e2e3ds_secret_x&source_type=card"
	resp, err := browserClient.Get(back)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusSeeOther || loc == nil || loc.Host != "shop.example" || loc.Query().Get("status") != "captured" {
		t.Fatalf("return: %d Location %q\n%s", resp.StatusCode, resp.Header.Get("Location"), g.Logs())
	}
	got := g.call(http.MethodGet, "/v1/payments/"+d["id"].(string), m.TestSecretKey, nil)
	if got.Data()["status"] != "captured" {
		t.Fatalf("payment: %s", got.Raw)
	}
	// The token is used: a second return finds nothing.
	resp, err = browserClient.Get(back)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("second return: %d", resp.StatusCode)
	}
}
