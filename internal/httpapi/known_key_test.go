package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/auth"
	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
)

// TestKnownKeyRevoked checks the payment that skips its key's read because
// the key authenticated on this node before (decisions §22: the insert
// verifies the key): once the key is revoked, every answer is the same 401
// as for any refused key, before a replay, a 409 or a validation error, and
// nothing is written. On both engines.
func TestKnownKeyRevoked(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			s := newBenchServer(t, engine)
			ctx := t.Context()
			s.create(t, 1, "first") // the key is known from now on
			key, err := paygate.OneAPIKey(s.store.APIKeys(ctx, paygate.APIKeyQuery{Hash: auth.Hash(s.secret)}))
			if err != nil {
				t.Fatal(err)
			}
			// Still valid: a payment through the known key works, and
			// its replay too.
			s.create(t, 2, "second")
			if w := s.do(http.MethodPost, "/v1/payments", s.secret, "second", benchBody(2)); w.Code != http.StatusCreated ||
				w.Header().Get("Idempotent-Replayed") != "true" {
				t.Fatalf("replay with the known key: %d %s", w.Code, w.Body.String())
			}
			if err := s.store.Commit(ctx, paygate.Unit{Ops: []paygate.Op{paygate.APIKeyRevocation{ID: key.ID, At: time.Now().Add(-time.Second)}}}); err != nil {
				t.Fatal(err)
			}
			invalid := []byte(`{"amount":"1.001","currency":"EUR"}`)
			storedCard := []byte(`{"amount":"1.00","currency":"EUR","customerId":"c","paymentMethod":"stored_card","storedCardId":"` + id.New() + `"}`)
			for _, c := range []struct {
				name, idemKey string
				body          []byte
			}{
				{"a new payment", "third", benchBody(3)},
				{"a replay", "second", benchBody(2)},
				{"another request with a used key", "second", benchBody(4)},
				{"an invalid body", "fourth", invalid},
				{"an invalid body with a used key", "second", invalid},
				{"a stored card that does not exist", "fifth", storedCard},
				{"a bad idempotency key", "", benchBody(5)},
			} {
				w := s.do(http.MethodPost, "/v1/payments", s.secret, c.idemKey, c.body)
				if w.Code != http.StatusUnauthorized {
					t.Errorf("%s: status %d, want 401: %s", c.name, w.Code, w.Body.String())
					continue
				}
				var env struct {
					Error paygate.Error `json:"error"`
				}
				if err := json.Unmarshal(w.Body.Bytes(), &env); err != nil {
					t.Fatal(err)
				}
				if want := auth.Unauthorized(); env.Error.Message != want.Message || env.Error.Param != want.Param {
					t.Errorf("%s: error %+v, want the refusal of every key: %+v", c.name, env.Error, want)
				}
				for _, h := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "Idempotent-Replayed"} {
					if v := w.Header().Get(h); v != "" {
						t.Errorf("%s: %s: %q on a 401", c.name, h, v)
					}
				}
			}
			for _, n := range []int{3, 4, 5} {
				if p, err := s.store.PaymentByMerchantRef(ctx, key.MerchantID, key.Mode, "order-"+strconv.Itoa(n)); !paygate.IsNotFound(err) {
					t.Errorf("order-%d: a revoked key stored payment %s (err %v)", n, p.ID, err)
				}
			}
		})
	}
}
