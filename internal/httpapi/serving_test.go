package httpapi_test

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/auth"
	"github.com/paygate/paygate/internal/httpapi"
	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/payment"
	"github.com/paygate/paygate/internal/provider"
	"github.com/paygate/paygate/internal/ratelimit"
	"github.com/paygate/paygate/internal/store/sqlite"
	"github.com/paygate/paygate/internal/webhook"
)

// newServer wires the handler as serve does on a fresh SQLite store with
// one merchant and its test secret key, and lets the test change the
// configuration first (limits, trusted proxies, logger).
func newServer(t *testing.T, mutate ...func(*httpapi.Config)) benchServer {
	t.Helper()
	ctx := t.Context()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "paygate.db"))
	if err != nil {
		t.Fatalf("open sqlite: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	now := time.Now()
	m := paygate.Merchant{ID: id.New(), Name: "Serving", CreatedAt: paygate.Normalize(now)}
	secret, key, err := auth.NewKey(id.New(), m.ID, paygate.ModeTest, paygate.KeySecret, now)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CreateMerchant(ctx, m, []paygate.APIKey{key}); err != nil {
		t.Fatalf("create merchant: %v", err)
	}
	routing, err := provider.LoadConfig("", func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	router, err := routing.Build(provider.BuildOptions{Ledger: st})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	payments := payment.New(payment.Config{
		Store:          webhook.WakeOnEvents(st, func() {}),
		Router:         router,
		Answers:        httpapi.Answers{},
		Logger:         log,
		FingerprintKey: bytes.Repeat([]byte{7}, 32),
	})
	cfg := httpapi.Config{
		Store: st, Payments: payments, Auth: &auth.Authenticator{Store: st},
		Limiter: ratelimit.NewMemory(), Logger: log,
		RateLimitTest: 1000, RateLimitLive: 1000, RateLimitUnauthenticated: 1000,
	}
	for _, f := range mutate {
		f(&cfg)
	}
	return benchServer{handler: httpapi.New(cfg), secret: secret, store: st}
}

// TestJSONAnswersAreNotCachedOrSniffed checks decisions §15: every /v1
// JSON answer, success or error, first answer or replay, carries
// Cache-Control: no-store and X-Content-Type-Options: nosniff.
func TestJSONAnswersAreNotCachedOrSniffed(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	created := s.do(http.MethodPost, "/v1/payments", s.secret, "headers-1", benchBody(1))
	if created.Code != http.StatusCreated {
		t.Fatalf("create payment: %d %s", created.Code, created.Body)
	}
	replay := s.do(http.MethodPost, "/v1/payments", s.secret, "headers-1", benchBody(1))
	if replay.Header().Get("Idempotent-Replayed") != "true" {
		t.Fatalf("no replay: %d %v", replay.Code, replay.Header())
	}
	limited := newServer(t, func(c *httpapi.Config) { c.RateLimitTest = 1 })
	limited.do(http.MethodGet, "/v1/payments?merchantRef=x", limited.secret, "", nil)
	for _, c := range []struct {
		name   string
		status int
		do     func() (int, http.Header)
	}{
		{"Created", http.StatusCreated, func() (int, http.Header) { return created.Code, created.Header() }},
		{"Replay", http.StatusCreated, func() (int, http.Header) { return replay.Code, replay.Header() }},
		{"Get", http.StatusOK, func() (int, http.Header) {
			w := s.do(http.MethodGet, "/v1/payments?merchantRef=order-1", s.secret, "", nil)
			return w.Code, w.Header()
		}},
		{"Invalid", http.StatusBadRequest, func() (int, http.Header) {
			w := s.do(http.MethodPost, "/v1/payments", s.secret, "headers-2", []byte(`{"amount":1}`))
			return w.Code, w.Header()
		}},
		{"Conflict", http.StatusConflict, func() (int, http.Header) {
			w := s.do(http.MethodPost, "/v1/payments", s.secret, "headers-1", benchBody(2))
			return w.Code, w.Header()
		}},
		{"Unauthorized", http.StatusUnauthorized, func() (int, http.Header) {
			w := s.do(http.MethodGet, "/v1/payments?merchantRef=x", "smtgw_sk_test_nope", "", nil)
			return w.Code, w.Header()
		}},
		{"NotFound", http.StatusNotFound, func() (int, http.Header) {
			w := s.do(http.MethodGet, "/v1/nothing-here", s.secret, "", nil)
			return w.Code, w.Header()
		}},
		{"MethodNotAllowed", http.StatusMethodNotAllowed, func() (int, http.Header) {
			w := s.do(http.MethodDelete, "/v1/payments", s.secret, "", nil)
			return w.Code, w.Header()
		}},
		{"RateLimited", http.StatusTooManyRequests, func() (int, http.Header) {
			w := limited.do(http.MethodGet, "/v1/payments?merchantRef=x", limited.secret, "", nil)
			return w.Code, w.Header()
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, h := c.do()
			if code != c.status {
				t.Fatalf("status %d, want %d", code, c.status)
			}
			if got := h.Get("Cache-Control"); got != "no-store" {
				t.Errorf("Cache-Control %q, want no-store", got)
			}
			if got := h.Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("X-Content-Type-Options %q, want nosniff", got)
			}
		})
	}
}
