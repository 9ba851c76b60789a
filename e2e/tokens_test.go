package e2e

import (
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// Card tokens (decisions §19): POST /v1/tokens with the public key, then a
// payment with paymentMethod token.

var tokenID = regexp.MustCompile(`^tok_[0-9a-f]{64}$`)

// tokenBody is a token request for the card number, with a CVV of the
// brand's length.
func tokenBody(number string) map[string]any {
	return map[string]any{"card": paymentBody(number, "1.00", "EUR")["card"]}
}

// tokenize makes a token of the number with the public key and returns its
// id.
func tokenize(t *testing.T, g *gateway, publicKey, number string) string {
	t.Helper()
	r := g.call(http.MethodPost, "/v1/tokens", publicKey, tokenBody(number), "Idempotency-Key", "")
	expect(t, r, http.StatusCreated)
	id, _ := r.Data()["id"].(string)
	if !tokenID.MatchString(id) {
		t.Fatalf("token id %q: %s", id, r.Raw)
	}
	return id
}

// tokenPayment is a payment body with the token instead of a card.
func tokenPayment(token string) map[string]any {
	b := paymentBody("4242424242424242", "10.00", "EUR")
	delete(b, "card")
	b["paymentMethod"] = "token"
	b["token"] = token
	return b
}

func TestTokens(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engine) {
		dbURL, m, g := startWithMerchant(t, e, "Token Shop")
		other := createMerchant(t, dbURL, "Other Shop")

		// 201 and its shape (the document checks the rest).
		before := time.Now()
		r := g.call(http.MethodPost, "/v1/tokens", m.TestPublicKey, tokenBody("4242424242424242"), "Idempotency-Key", "")
		expect(t, r, http.StatusCreated)
		d := r.Data()
		card, _ := d["card"].(map[string]any)
		if !tokenID.MatchString(d["id"].(string)) || d["used"] != false || card["brand"] != "visa" || card["last4"] != "4242" ||
			card["expiryMonth"] != "12" || card["expiryYear"] != futureYear() || len(card) != 4 {
			t.Fatalf("token: %s", r.Raw)
		}
		exp, err := time.Parse(time.RFC3339Nano, d["expiresAt"].(string))
		if err != nil || exp.Before(before.Add(14*time.Minute)) || exp.After(time.Now().Add(16*time.Minute)) {
			t.Fatalf("expiresAt %v (%v), want 15 minutes from now", d["expiresAt"], err)
		}
		if r.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Fatal("a token answer allows another origin")
		}
		tok := d["id"].(string)

		// Only the public key: a secret key is 401 here, and the public
		// key is 401 everywhere else.
		expect(t, g.call(http.MethodPost, "/v1/tokens", m.TestSecretKey, tokenBody("4242424242424242")), http.StatusUnauthorized, "UNAUTHORIZED")
		expect(t, g.call(http.MethodPost, "/v1/tokens", "", tokenBody("4242424242424242")), http.StatusUnauthorized, "UNAUTHORIZED")
		expect(t, g.call(http.MethodPost, "/v1/payments", m.TestPublicKey, tokenPayment(tok)), http.StatusUnauthorized, "UNAUTHORIZED")
		expect(t, g.call(http.MethodPost, "/v1/customers", m.TestPublicKey, map[string]any{"externalId": "x"}), http.StatusUnauthorized, "UNAUTHORIZED")
		expect(t, g.call(http.MethodGet, "/v1/payments?merchantRef=x", m.TestPublicKey, nil), http.StatusUnauthorized, "UNAUTHORIZED")

		// The card is validated as a payment's.
		bad := tokenBody("4242424242424241")
		expect(t, g.call(http.MethodPost, "/v1/tokens", m.TestPublicKey, bad), http.StatusBadRequest, "INVALID_REQUEST", "card.number")
		bad = tokenBody("4242424242424242")
		delete(bad["card"].(map[string]any), "cvv")
		expect(t, g.call(http.MethodPost, "/v1/tokens", m.TestPublicKey, bad), http.StatusBadRequest, "INVALID_REQUEST", "card.cvv")
		expect(t, g.call(http.MethodPost, "/v1/tokens", m.TestPublicKey, map[string]any{}), http.StatusBadRequest, "INVALID_REQUEST", "card")

		// A foreign origin's preflight is not allowed.
		req, _ := http.NewRequest(http.MethodOptions, g.url+"/v1/tokens", nil)
		req.Header.Set("Origin", "https://evil.example")
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "x-api-key, content-type")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode < 400 || resp.Header.Get("Access-Control-Allow-Origin") != "" || resp.Header.Get("Access-Control-Allow-Headers") != "" {
			t.Fatalf("preflight: %d %v", resp.StatusCode, resp.Header)
		}

		// The request's rules: no card with a token, a token required.
		withCard := tokenPayment(tok)
		withCard["card"] = paymentBody("4242424242424242", "1.00", "EUR")["card"]
		expect(t, g.call(http.MethodPost, "/v1/payments", m.TestSecretKey, withCard), http.StatusBadRequest, "INVALID_REQUEST", "card")
		noToken := tokenPayment(tok)
		delete(noToken, "token")
		expect(t, g.call(http.MethodPost, "/v1/payments", m.TestSecretKey, noToken), http.StatusBadRequest, "INVALID_REQUEST", "token")

		// Another merchant's or mode's key cannot use it.
		expect(t, g.call(http.MethodPost, "/v1/payments", m.LiveSecretKey, tokenPayment(tok)), http.StatusBadRequest, "INVALID_REQUEST", "token")
		expect(t, g.call(http.MethodPost, "/v1/payments", other.TestSecretKey, tokenPayment(tok)), http.StatusBadRequest, "INVALID_REQUEST", "token")

		// It pays once, as a card payment.
		r = g.call(http.MethodPost, "/v1/payments", m.TestSecretKey, tokenPayment(tok))
		expect(t, r, http.StatusCreated)
		if r.Data()["status"] != "captured" {
			t.Fatalf("payment with a token: %s", r.Raw)
		}
		got := g.call(http.MethodGet, "/v1/payments/"+r.Data()["id"].(string), m.TestSecretKey, nil)
		expect(t, got, http.StatusOK)
		if got.Data()["paymentMethod"] != "card" || got.Data()["status"] != "captured" {
			t.Fatalf("the token's payment: %s", got.Raw)
		}
		expect(t, g.call(http.MethodPost, "/v1/payments", m.TestSecretKey, tokenPayment(tok)), http.StatusBadRequest, "INVALID_REQUEST", "token")
		expect(t, g.call(http.MethodPost, "/v1/payments", m.TestSecretKey, tokenPayment("tok_00000000000000000000000000000000")), http.StatusBadRequest, "INVALID_REQUEST", "token")

		// A replay answers what was stored, without using anything.
		tok2 := tokenize(t, g, m.TestPublicKey, "5555555555554444")
		first := g.call(http.MethodPost, "/v1/payments", m.TestSecretKey, tokenPayment(tok2), "Idempotency-Key", "tok-replay")
		expect(t, first, http.StatusCreated)
		again := g.call(http.MethodPost, "/v1/payments", m.TestSecretKey, tokenPayment(tok2), "Idempotency-Key", "tok-replay")
		if again.Status != http.StatusCreated || again.Header.Get("Idempotent-Replayed") != "true" || string(again.Raw) != string(first.Raw) {
			t.Fatalf("replay: %d %s", again.Status, again.Raw)
		}

		// A 3-D Secure card through a token.
		r = g.call(http.MethodPost, "/v1/payments", m.TestSecretKey, tokenPayment(tokenize(t, g, m.TestPublicKey, "4000000000003220")))
		expect(t, r, http.StatusCreated)
		tds, _ := r.Data()["threeDsData"].(map[string]any)
		if r.Data()["status"] != "pending_3ds" || tds == nil || !strings.HasPrefix(tds["redirectUrl"].(string), "http") {
			t.Fatalf("3-D Secure through a token: %s", r.Raw)
		}

		// saveCard stores the tokenized card for the customer.
		save := tokenPayment(tokenize(t, g, m.TestPublicKey, "378282246310005"))
		save["saveCard"], save["customerId"] = true, "token-saver"
		r = g.call(http.MethodPost, "/v1/payments", m.TestSecretKey, save)
		expect(t, r, http.StatusCreated)
		cardID, _ := r.Data()["storedCardId"].(string)
		if cardID == "" {
			t.Fatalf("saveCard through a token: %s", r.Raw)
		}
		p := g.call(http.MethodGet, "/v1/payments/"+r.Data()["id"].(string), m.TestSecretKey, nil)
		cards := g.call(http.MethodGet, "/v1/customers/"+p.Data()["customerId"].(string)+"/cards", m.TestSecretKey, nil)
		expect(t, cards, http.StatusOK)
		list, _ := cards.Body["data"].([]any)
		if len(list) != 1 || list[0].(map[string]any)["id"] != cardID || list[0].(map[string]any)["last4"] != "0005" {
			t.Fatalf("the customer's cards: %s", cards.Raw)
		}
		// The stored card pays without its CVV.
		sc := paymentBody("4242424242424242", "3.00", "EUR")
		delete(sc, "card")
		sc["paymentMethod"], sc["storedCardId"], sc["customerId"] = "stored_card", cardID, "token-saver"
		expect(t, g.call(http.MethodPost, "/v1/payments", m.TestSecretKey, sc), http.StatusCreated)

		// Racing payments with one token: one is charged.
		race := tokenize(t, g, m.TestPublicKey, "4242424242424242")
		const racers = 6
		statuses := make([]int, racers)
		var wg sync.WaitGroup
		for i := range racers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				statuses[i] = g.call(http.MethodPost, "/v1/payments", m.TestSecretKey, tokenPayment(race)).Status
			}()
		}
		wg.Wait()
		won := 0
		for _, s := range statuses {
			switch s {
			case http.StatusCreated:
				won++
			case http.StatusBadRequest:
			default:
				t.Fatalf("racing payments: %v", statuses)
			}
		}
		if won != 1 {
			t.Fatalf("racing payments with one token: %v, want one 201", statuses)
		}
	})
}

// TestTokenRateLimits: per public key (--rate-limit-tokens) and per client
// address (--rate-limit-tokens-per-address), 429 with the usual headers.
func TestTokenRateLimits(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engine) {
		_, m, g := startWithMerchant(t, e, "Busy Shop", "--rate-limit-tokens", "2", "--rate-limit-tokens-per-address", "4")
		tokenize(t, g, m.TestPublicKey, "4242424242424242")
		tokenize(t, g, m.TestPublicKey, "4242424242424242")
		r := g.call(http.MethodPost, "/v1/tokens", m.TestPublicKey, tokenBody("4242424242424242"))
		expect(t, r, http.StatusTooManyRequests, "RATE_LIMITED")
		if r.Header.Get("Retry-After") == "" || r.Header.Get("X-RateLimit-Limit") != "2" {
			t.Fatalf("429 headers: %v", r.Header)
		}
		// Another key from the same address: its own budget, but the
		// address has one request left (the key's 429 counted for it).
		tokenize(t, g, m.LivePublicKey, "4242424242424242")
		r = g.call(http.MethodPost, "/v1/tokens", m.LivePublicKey, tokenBody("4242424242424242"))
		expect(t, r, http.StatusTooManyRequests, "RATE_LIMITED")
		if r.Header.Get("X-RateLimit-Limit") != "4" {
			t.Fatalf("429 of the address: %v", r.Header)
		}
	})
}
