package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/auth"
	"github.com/paygate/paygate/internal/httpapi"
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

// TestKnownKeyRevokedOverItsLimit checks that a revoked key this node knows
// gets 401, not 429, when it is over its rate limit (decisions §1: 401
// comes first), and is forgotten: the next request authenticates it again.
func TestKnownKeyRevokedOverItsLimit(t *testing.T) {
	t.Parallel()
	s := newBenchServer(t, "sqlite")
	s = wireServer(t, s.store, func(c *httpapi.Config) { c.RateLimitTest = 2 })
	ctx := t.Context()
	s.create(t, 1, "first")
	s.create(t, 2, "second") // the limit is used up, the key is known
	key, err := paygate.OneAPIKey(s.store.APIKeys(ctx, paygate.APIKeyQuery{Hash: auth.Hash(s.secret)}))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.store.Commit(ctx, paygate.Unit{Ops: []paygate.Op{paygate.APIKeyRevocation{ID: key.ID, At: time.Now().Add(-time.Second)}}}); err != nil {
		t.Fatal(err)
	}
	for i, idem := range []string{"third", "fourth"} {
		w := s.do(http.MethodPost, "/v1/payments", s.secret, idem, benchBody(int64(3+i)))
		if w.Code != http.StatusUnauthorized || w.Header().Get("X-RateLimit-Limit") != "" {
			t.Errorf("request %d of a revoked key over its limit: %d, X-RateLimit-Limit %q: %s",
				i+1, w.Code, w.Header().Get("X-RateLimit-Limit"), w.Body.String())
		}
	}
}

// countingStore counts the reads of stored cards, and keeps the store's
// paygate.RequestReader.
type countingStore struct {
	paygate.Store
	cardReads, keyReads atomic.Int64
}

func (c *countingStore) StoredCards(ctx context.Context, q paygate.StoredCardQuery) ([]paygate.StoredCard, error) {
	c.cardReads.Add(1)
	return c.Store.StoredCards(ctx, q)
}

func (c *countingStore) APIKeyAndRequest(ctx context.Context, hash []byte, reads paygate.RequestReads) (paygate.APIKey, paygate.RequestData, error) {
	c.keyReads.Add(1)
	return c.Store.(paygate.RequestReader).APIKeyAndRequest(ctx, hash, reads)
}

// TestKnownKeyRevokedReadsNoCard checks that a payment with a key this node
// knows reads nothing before its insert, that a replay of an idempotency
// key the node has seen reads the key and the record first, and that a
// stored-card payment with a revoked known key reads no card of the
// merchant's before it is refused: the key is verified first.
func TestKnownKeyRevokedReadsNoCard(t *testing.T) {
	t.Parallel()
	counting := &countingStore{}
	s := newBenchServer(t, "sqlite", func(st paygate.Store) paygate.Store { counting.Store = st; return counting })
	ctx := t.Context()
	s.create(t, 1, "first") // the key is known from now on
	reads := counting.keyReads.Load()
	s.create(t, 2, "second")
	if n := counting.keyReads.Load() - reads; n != 0 {
		t.Errorf("a payment with a known key read its key %d times before its insert, want 0", n)
	}
	if w := s.do(http.MethodPost, "/v1/payments", s.secret, "second", benchBody(2)); w.Code != http.StatusCreated ||
		w.Header().Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: %d %s", w.Code, w.Body.String())
	}
	if n := counting.keyReads.Load() - reads; n != 1 {
		t.Errorf("a replay of a key seen here: %d reads of the key and record, want 1", n)
	}
	key, err := paygate.OneAPIKey(s.store.APIKeys(ctx, paygate.APIKeyQuery{Hash: auth.Hash(s.secret)}))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.store.Commit(ctx, paygate.Unit{Ops: []paygate.Op{paygate.APIKeyRevocation{ID: key.ID, At: time.Now().Add(-time.Second)}}}); err != nil {
		t.Fatal(err)
	}
	before := counting.cardReads.Load()
	body := []byte(`{"amount":"1.00","currency":"EUR","customerId":"customer-1","paymentMethod":"stored_card","storedCardId":"` + id.New() + `"}`)
	if w := s.do(http.MethodPost, "/v1/payments", s.secret, "card", body); w.Code != http.StatusUnauthorized {
		t.Fatalf("stored card with a revoked key: %d %s", w.Code, w.Body.String())
	}
	if n := counting.cardReads.Load() - before; n != 0 {
		t.Errorf("a revoked key's payment read stored cards %d times before its refusal", n)
	}
}
