package httpapi_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/docs"
	"github.com/paygate/paygate/internal/auth"
	"github.com/paygate/paygate/internal/guard"
	"github.com/paygate/paygate/internal/httpapi"
	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
)

// addPublicKey stores an active test public key of the secret key's
// merchant and returns it.
func addPublicKey(t *testing.T, s benchServer) string {
	t.Helper()
	k, err := paygate.OneAPIKey(s.store.APIKeys(t.Context(), paygate.APIKeyQuery{Hash: auth.Hash(s.secret)}))
	if err != nil {
		t.Fatal(err)
	}
	public, key, err := auth.NewKey(id.New(), k.MerchantID, k.Mode, paygate.KeyPublic, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.store.Commit(t.Context(), paygate.Unit{Ops: []paygate.Op{key}}); err != nil {
		t.Fatal(err)
	}
	return public
}

// tokenize posts a token request from the address with the key.
func tokenize(s benchServer, key, addr, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/v1/tokens", strings.NewReader(body))
	req.RemoteAddr = addr + ":40000"
	req.Header.Set("X-API-Key", key)
	req.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	s.handler.ServeHTTP(w, req)
	return w
}

const tokenCard = `{"card":{"number":"4242424242424242","expiryMonth":"12","expiryYear":"30","cvv":"123","holderName":"Ada Lovelace"}}`

// errorOf decodes the error of an answer.
func errorOf(t *testing.T, w *httptest.ResponseRecorder) (name, param, decline string) {
	t.Helper()
	var env struct {
		Error struct {
			Name, Param, DeclineCode string
		} `json:"error"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &env); err != nil {
		t.Fatalf("answer %d %s: %v", w.Code, w.Body, err)
	}
	return env.Error.Name, env.Error.Param, env.Error.DeclineCode
}

// TestPublicKeyRefusedByEveryOtherOperation sends the public key to every
// operation of the document that takes a key but POST /v1/tokens (the
// document's operations are the routes: TestOpenAPIOperationsAreTheRoutes):
// 401, each. A secret key is 401 on POST /v1/tokens.
func TestPublicKeyRefusedByEveryOtherOperation(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	public := addPublicKey(t, s)
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal([]byte(docs.OpenAPI), &doc); err != nil {
		t.Fatal(err)
	}
	wildcard := regexp.MustCompile(`\{[^}]+\}`)
	n := 0
	for path, ops := range doc.Paths {
		for method, raw := range ops {
			var op struct {
				Security *[]map[string]any `json:"security"`
			}
			if method == "parameters" || json.Unmarshal(raw, &op) != nil {
				continue
			}
			if op.Security != nil { // keyless, or the public key's own
				continue
			}
			n++
			p := wildcard.ReplaceAllString(path, id.New())
			var body []byte
			if method == "post" {
				body = []byte(`{}`)
			}
			w := s.do(strings.ToUpper(method), p, public, "pk-"+id.New(), body)
			if name, _, _ := errorOf(t, w); w.Code != http.StatusUnauthorized || name != "UNAUTHORIZED" {
				t.Errorf("%s %s with the public key: %d %s", strings.ToUpper(method), p, w.Code, w.Body)
			}
		}
	}
	if n < 13 {
		t.Fatalf("only %d operations tried", n)
	}
	w := tokenize(s, s.secret, "203.0.113.5", tokenCard)
	if name, _, _ := errorOf(t, w); w.Code != http.StatusUnauthorized || name != "UNAUTHORIZED" || w.Header().Get("X-RateLimit-Limit") != "" {
		t.Fatalf("POST /v1/tokens with a secret key: %d %s", w.Code, w.Body)
	}
	if w := tokenize(s, public, "203.0.113.5", tokenCard); w.Code != http.StatusCreated {
		t.Fatalf("POST /v1/tokens with the public key: %d %s", w.Code, w.Body)
	}
}

// TestTokenGuardBlocks: a card the card-testing guard blocks gets no token
// (decisions §20's answer: 400 CARD_DECLINED, declineCode blocked, without
// a transactionId), from any address; another card still does. A token
// made before the block pays a blocked payment, stored as such, and is
// used up by it.
func TestTokenGuardBlocks(t *testing.T) {
	t.Parallel()
	guardEngines(t, func(t *testing.T, st paygate.Store) {
		n := newGuardNode(t, st, guard.NewMemory(), paygate.SystemClock{}, "")
		enableGuard(t, st, n.merchantOf(t))
		public := addPublicKey(t, n.benchServer)
		const declining = "4000000000000002"
		body := strings.Replace(tokenCard, "4242424242424242", declining, 1)
		early := tokenize(n.benchServer, public, "192.0.2.77", body)
		if early.Code != http.StatusCreated {
			t.Fatalf("a token before the block: %d %s", early.Code, early.Body)
		}
		var tok struct {
			Data struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		if err := json.Unmarshal(early.Body.Bytes(), &tok); err != nil {
			t.Fatal(err)
		}
		// The card rule: 5 declines of one card from any address, each
		// from an address and a customer of its own.
		for i := range 5 {
			wantDeclined(t, n.pay(t, "198.51.100."+string(rune('1'+i)), declining, "c-"+id.New()), "a decline")
		}
		w := tokenize(n.benchServer, public, "192.0.2.77", body)
		name, _, decline := errorOf(t, w)
		if w.Code != http.StatusBadRequest || name != "CARD_DECLINED" || decline != paygate.DeclineBlocked || bytes.Contains(w.Body.Bytes(), []byte("transactionId")) {
			t.Fatalf("a blocked card's token: %d %s", w.Code, w.Body)
		}
		if got := blockedCount(t, n.mx, paygate.GuardCard); got != 1 {
			t.Errorf("blocked metric %v, want 1", got)
		}
		if w := tokenize(n.benchServer, public, "192.0.2.77", tokenCard); w.Code != http.StatusCreated {
			t.Fatalf("another card's token: %d %s", w.Code, w.Body)
		}

		payBody := []byte(`{"amount":"12.00","currency":"EUR","customerId":"c-token","paymentMethod":"token","token":"` + tok.Data.ID + `"}`)
		pay := func() guardAnswer {
			w := n.do(http.MethodPost, "/v1/payments", n.secret, id.New(), payBody)
			var env struct {
				Error struct {
					Name, Param, DeclineCode, TransactionID string
				} `json:"error"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &env); err != nil {
				t.Fatal(err)
			}
			return guardAnswer{code: w.Code, id: env.Error.TransactionID, name: env.Error.Name, decline: env.Error.DeclineCode, status: env.Error.Param}
		}
		wantBlocked(t, n, pay(), "a blocked card's token payment")
		if a := pay(); a.code != http.StatusBadRequest || a.name != "INVALID_REQUEST" || a.status != "token" {
			t.Fatalf("the token again after its blocked payment: %+v", a)
		}
	})
}

// TestTokenValidationAndLimits: the card's rules and params are a
// payment's; the limits per key and per address answer 429 with the
// usual headers.
func TestTokenValidationAndLimits(t *testing.T) {
	t.Parallel()
	s := newServer(t, func(c *httpapi.Config) { c.RateLimitTokens, c.RateLimitTokensPerAddr = 1000, 1000 })
	public := addPublicKey(t, s)
	for body, param := range map[string]string{
		`{}`:          "card",
		`{"card":{}}`: "card.number",
		`{"card":{"number":"4242424242424242","expiryMonth":"13","expiryYear":"30","cvv":"123","holderName":"A"}}`:       "card.expiryMonth",
		`{"card":{"number":"4242424242424242","expiryMonth":"12","expiryYear":"30","cvv":"12","holderName":"A"}}`:        "card.cvv",
		`{"card":{"number":"4242424242424242","expiryMonth":"12","expiryYear":"30","cvv":"123"}}`:                        "card.holderName",
		`{"card":{"number":"4242424242424242","expiryMonth":"12","expiryYear":"30","cvv":"123","holderName":"A"},"x":1}`: "x",
	} {
		w := tokenize(s, public, "203.0.113.5", body)
		if name, p, _ := errorOf(t, w); w.Code != http.StatusBadRequest || name != "INVALID_REQUEST" || p != param {
			t.Errorf("%s: %d %s, want 400 param %s", body, w.Code, w.Body, param)
		}
		if bytes.Contains(w.Body.Bytes(), []byte("4242424242424242")) {
			t.Errorf("%s: the answer echoes the number", body)
		}
	}

	limited := newServer(t, func(c *httpapi.Config) { c.RateLimitTokens, c.RateLimitTokensPerAddr = 3, 2 })
	public = addPublicKey(t, limited)
	for i, want := range []int{201, 201, 429} {
		w := tokenize(limited, public, "203.0.113.5", tokenCard)
		if w.Code != want {
			t.Fatalf("token %d from one address: %d %s", i, w.Code, w.Body)
		}
		if w.Code == 429 && (w.Header().Get("Retry-After") == "" || w.Header().Get("X-RateLimit-Limit") != "2") {
			t.Fatalf("429 headers %v", w.Header())
		}
	}
	// Another address has its own budget; the key's (3) runs out.
	for i, want := range []int{201, 429} {
		w := tokenize(limited, public, "203.0.113.6", tokenCard)
		if w.Code != want {
			t.Fatalf("token %d from another address: %d %s", i, w.Code, w.Body)
		}
		if w.Code == 429 && w.Header().Get("X-RateLimit-Limit") != "3" {
			t.Fatalf("429 of the key: headers %v", w.Header())
		}
	}
}

// TestTokensWrongMethodAuthenticatesFirst: another method than POST on
// /v1/tokens is authenticated first (decisions §1): without a key or with a
// secret key it is 401, and 429 past the failed-auth budget; only with the
// public key is it 405 with Allow: POST. Never a CORS header.
func TestTokensWrongMethodAuthenticatesFirst(t *testing.T) {
	t.Parallel()
	s := newServer(t, func(c *httpapi.Config) { c.RateLimitUnauthenticated = 4 })
	public := addPublicKey(t, s)
	send := func(method, key string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, "/v1/tokens", nil)
		req.RemoteAddr = "203.0.113.9:40000"
		req.Header.Set("Origin", "https://evil.example")
		if key != "" {
			req.Header.Set("X-API-Key", key)
		}
		w := httptest.NewRecorder()
		s.handler.ServeHTTP(w, req)
		if w.Header().Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("%s with %q: a CORS header: %v", method, key, w.Header())
		}
		return w
	}
	for _, method := range []string{http.MethodGet, http.MethodOptions} {
		for _, key := range []string{"", s.secret} {
			w := send(method, key)
			if name, _, _ := errorOf(t, w); w.Code != http.StatusUnauthorized || name != "UNAUTHORIZED" || w.Header().Get("Allow") != "" {
				t.Errorf("%s without the public key (%q): %d %v %s", method, key, w.Code, w.Header(), w.Body)
			}
		}
		w := send(method, public)
		if name, _, _ := errorOf(t, w); w.Code != http.StatusMethodNotAllowed || name != "METHOD_NOT_ALLOWED" || w.Header().Get("Allow") != http.MethodPost {
			t.Errorf("%s with the public key: %d %v %s", method, w.Code, w.Header(), w.Body)
		}
	}
	// Four failed authentications so far: the fifth is over the budget.
	if w := send(http.MethodGet, ""); w.Code != http.StatusTooManyRequests {
		t.Errorf("GET without a key past the failed-auth budget: %d %s", w.Code, w.Body)
	}
}
