package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paygate/paygate/internal/auth"
	"github.com/paygate/paygate/internal/clientaddr"
	"github.com/paygate/paygate/internal/httpapi"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store/sqlite"
	"github.com/paygate/paygate/internal/testenv"
)

// newServer wires the handler as serve does on a fresh SQLite store with
// one merchant and its test secret key, and lets the test change the
// configuration first (limits, trusted proxies, logger).
func newServer(t *testing.T, mutate ...func(*httpapi.Config)) benchServer {
	t.Helper()
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "paygate.db"))
	if err != nil {
		t.Fatalf("open sqlite: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return wireServer(t, st, mutate...)
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

// failAuth sends a request with a wrong key from peer, forwarded for xff
// when xff is not empty, and returns the status.
func failAuth(s benchServer, peer, xff string) int {
	req := httptest.NewRequestWithContext(context.Background(), http.MethodGet, "/v1/payments?merchantRef=x", nil)
	req.RemoteAddr = peer
	req.Header.Set("X-API-Key", "smtgw_sk_test_wrongwrongwrongwrongwrongwrongwrong")
	if xff != "" {
		req.Header.Set("X-Forwarded-For", xff)
	}
	w := httptest.NewRecorder()
	s.handler.ServeHTTP(w, req)
	return w.Code
}

// TestFailedAuthLimitKeysOnClientAddress checks finding 6: behind a
// trusted proxy the failed-authentication limit (decisions §6) counts per
// forwarded client, so one client's failures do not lock out the others
// behind the same proxy; without --trusted-proxies X-Forwarded-For is
// ignored and the peer is the client, whatever the header says.
func TestFailedAuthLimitKeysOnClientAddress(t *testing.T) {
	t.Parallel()
	const limit = 3
	t.Run("TrustedProxy", func(t *testing.T) {
		t.Parallel()
		proxies, err := clientaddr.Parse("10.0.0.0/8")
		if err != nil {
			t.Fatal(err)
		}
		s := newServer(t, func(c *httpapi.Config) { c.RateLimitUnauthenticated = limit; c.TrustedProxies = proxies })
		for i := range limit {
			if code := failAuth(s, "10.0.0.2:5000", "198.51.100.7, 10.0.0.3"); code != http.StatusUnauthorized {
				t.Fatalf("failure %d: status %d, want 401", i+1, code)
			}
		}
		if code := failAuth(s, "10.0.0.2:5000", "198.51.100.7"); code != http.StatusTooManyRequests {
			t.Errorf("client over its budget: status %d, want 429", code)
		}
		// Another client behind the same proxy keeps its own budget.
		if code := failAuth(s, "10.0.0.2:5000", "198.51.100.8"); code != http.StatusUnauthorized {
			t.Errorf("other client behind the proxy: status %d, want 401", code)
		}
		// An untrusted peer cannot borrow another client's name, nor
		// escape its own budget with a header.
		for i := range limit {
			if code := failAuth(s, "203.0.113.9:5000", "198.51.100.9"); code != http.StatusUnauthorized {
				t.Fatalf("untrusted peer, failure %d: status %d, want 401", i+1, code)
			}
		}
		if code := failAuth(s, "203.0.113.9:5000", "198.51.100.10"); code != http.StatusTooManyRequests {
			t.Errorf("untrusted peer with a fresh forwarded address: status %d, want 429", code)
		}
		if code := failAuth(s, "10.0.0.2:5000", "198.51.100.9"); code != http.StatusUnauthorized {
			t.Errorf("the address the untrusted peer claimed was charged: status %d, want 401", code)
		}
	})
	t.Run("NoTrustedProxies", func(t *testing.T) {
		t.Parallel()
		s := newServer(t, func(c *httpapi.Config) { c.RateLimitUnauthenticated = limit })
		for i := range limit {
			if code := failAuth(s, "10.0.0.2:5000", fmt.Sprintf("198.51.100.%d", i+1)); code != http.StatusUnauthorized {
				t.Fatalf("failure %d: status %d, want 401", i+1, code)
			}
		}
		if code := failAuth(s, "10.0.0.2:5000", "198.51.100.99"); code != http.StatusTooManyRequests {
			t.Errorf("the peer over its budget with a fresh X-Forwarded-For: status %d, want 429", code)
		}
	})
}

// TestDashboardSeesClientAddress checks that the dashboard, mounted under
// the API's handler, reads the client address the server resolved once.
func TestDashboardSeesClientAddress(t *testing.T) {
	t.Parallel()
	proxies, err := clientaddr.Parse("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	dash := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, clientaddr.FromRequest(r))
	})
	for _, c := range []struct {
		proxies clientaddr.Proxies
		want    string
	}{{proxies, "198.51.100.7"}, {nil, "127.0.0.1"}} {
		seen = nil
		s := newServer(t, func(cfg *httpapi.Config) { cfg.TrustedProxies = c.proxies; cfg.Dashboard = dash })
		req := httptest.NewRequest(http.MethodGet, "/dashboard/login", nil)
		req.RemoteAddr = "127.0.0.1:5000"
		req.Header.Set("X-Forwarded-For", "198.51.100.7")
		s.handler.ServeHTTP(httptest.NewRecorder(), req)
		if len(seen) != 1 || seen[0] != c.want {
			t.Errorf("proxies %q: the dashboard saw %q, want %q", c.proxies, seen, c.want)
		}
	}
}

// TestBillingIPAddressDefaultsToClientAddress checks that a payment's
// billing.ipAddress, when omitted, is the forwarded client behind a
// trusted proxy, and the peer otherwise.
func TestBillingIPAddressDefaultsToClientAddress(t *testing.T) {
	t.Parallel()
	proxies, err := clientaddr.Parse("10.0.0.0/8")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		proxies clientaddr.Proxies
		want    string
	}{{"TrustedProxy", proxies, "198.51.100.7"}, {"NoTrustedProxies", nil, "10.0.0.2"}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := newServer(t, func(cfg *httpapi.Config) { cfg.TrustedProxies = c.proxies })
			req := httptest.NewRequest(http.MethodPost, "/v1/payments", bytes.NewReader(benchBody(1)))
			req.RemoteAddr = "10.0.0.2:5000"
			req.Header.Set("X-API-Key", s.secret)
			req.Header.Set("Idempotency-Key", "billing-ip")
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Forwarded-For", "198.51.100.7")
			w := httptest.NewRecorder()
			s.handler.ServeHTTP(w, req)
			var env struct {
				Data struct {
					ID string `json:"id"`
				} `json:"data"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &env); err != nil || w.Code != http.StatusCreated {
				t.Fatalf("create: %d %s", w.Code, w.Body)
			}
			key, err := paygate.OneAPIKey(s.store.APIKeys(context.Background(), paygate.APIKeyQuery{Hash: auth.Hash(s.secret)}))
			if err != nil {
				t.Fatal(err)
			}
			p, err := s.store.PaymentByID(context.Background(), key.MerchantID, key.Mode, env.Data.ID)
			if err != nil {
				t.Fatal(err)
			}
			if p.Billing == nil || p.Billing.IPAddress != c.want {
				t.Errorf("billing %+v, want ipAddress %s", p.Billing, c.want)
			}
		})
	}
}

// requestLines returns the "request" log lines written to logs so far.
func requestLines(t *testing.T, logs *testenv.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(logs.String(), "\n") {
		if len(line) == 0 {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if rec["msg"] == "request" {
			out = append(out, rec)
		}
	}
	return out
}

// TestRequestLogLine checks decisions §15: each request's log line names
// the request id, method, route (the pattern, never the raw path), status,
// latency, the key's id (never the key), merchant, mode and client address.
func TestRequestLogLine(t *testing.T) {
	t.Parallel()
	var logs testenv.Buffer
	proxies, err := clientaddr.Parse("10.0.0.0/8")
	if err != nil {
		t.Fatal(err)
	}
	s := newServer(t, func(c *httpapi.Config) {
		c.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
		c.TrustedProxies = proxies
	})
	key, err := paygate.OneAPIKey(s.store.APIKeys(context.Background(), paygate.APIKeyQuery{Hash: auth.Hash(s.secret)}))
	if err != nil {
		t.Fatal(err)
	}
	created := s.do(http.MethodPost, "/v1/payments", s.secret, "log-1", benchBody(1))
	var env struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(created.Body.Bytes(), &env); err != nil || created.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", created.Code, created.Body)
	}

	req := httptest.NewRequest(http.MethodGet, "/v1/payments/"+env.Data.ID, nil)
	req.RemoteAddr = "10.0.0.2:5000"
	req.Header.Set("X-API-Key", s.secret)
	req.Header.Set("X-Request-Id", "log-test-1")
	req.Header.Set("X-Forwarded-For", "198.51.100.7")
	s.handler.ServeHTTP(httptest.NewRecorder(), req)
	s.do(http.MethodGet, "/v1/payments/"+env.Data.ID, "smtgw_sk_test_wrongwrongwrongwrongwrongwrongwrong", "", nil)
	s.do(http.MethodGet, "/v1/no/such/path", s.secret, "", nil)

	lines := requestLines(t, &logs)
	if len(lines) != 4 {
		t.Fatalf("%d request lines, want 4: %v", len(lines), lines)
	}
	get := lines[1]
	for name, want := range map[string]any{
		"request_id": "log-test-1", "method": "GET", "route": "/v1/payments/{id}", "status": float64(200),
		"key_id": key.ID, "merchant_id": key.MerchantID, "mode": "test", "client_ip": "198.51.100.7",
	} {
		if get[name] != want {
			t.Errorf("GET line: %s = %v, want %v (line %v)", name, get[name], want, get)
		}
	}
	if ms, ok := get["latency_ms"].(float64); !ok || ms < 0 {
		t.Errorf("GET line: latency_ms = %v (line %v)", get["latency_ms"], get)
	}
	if lines[0]["route"] != "/v1/payments" || lines[0]["status"] != float64(201) || lines[0]["key_id"] != key.ID {
		t.Errorf("POST line: %v", lines[0])
	}
	// A failed authentication names no key, merchant or mode.
	if l := lines[2]; l["status"] != float64(401) || l["route"] != "/v1/payments/{id}" || l["key_id"] != nil || l["merchant_id"] != nil || l["client_ip"] != "127.0.0.1" {
		t.Errorf("401 line: %v", l)
	}
	if l := lines[3]; l["status"] != float64(404) || l["route"] != "unmatched" {
		t.Errorf("unknown path line: %v", l)
	}
	all := logs.String()
	for _, secret := range []string{s.secret, s.secret[len("smtgw_sk_test_"):], "4242424242424242", "/v1/payments/" + env.Data.ID} {
		if strings.Contains(all, secret) {
			t.Errorf("the log holds %q:\n%s", secret, all)
		}
	}
	if strings.Contains(all, `"path"`) {
		t.Errorf("the log shows a raw path:\n%s", all)
	}
}

// TestReadyzWhileDraining checks decisions §16: once serve drains (SIGTERM),
// /readyz answers 503 at once while /healthz and the API go on answering.
func TestReadyzWhileDraining(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	if w := s.do(http.MethodGet, "/readyz", "", "", nil); w.Code != http.StatusOK {
		t.Fatalf("readyz before draining: %d %s", w.Code, w.Body)
	}
	s.handler.(*httpapi.Server).Drain()
	w := s.do(http.MethodGet, "/readyz", "", "", nil)
	if w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), `"name":"SERVICE_UNAVAILABLE"`) ||
		!strings.Contains(w.Body.String(), "shutting down") || w.Header().Get("Retry-After") == "" {
		t.Errorf("readyz while draining: %d %v %s", w.Code, w.Header(), w.Body)
	}
	if w := s.do(http.MethodGet, "/healthz", "", "", nil); w.Code != http.StatusOK {
		t.Errorf("healthz while draining: %d %s", w.Code, w.Body)
	}
	if w := s.do(http.MethodPost, "/v1/payments", s.secret, "drain-1", benchBody(1)); w.Code != http.StatusCreated {
		t.Errorf("a payment while draining: %d %s", w.Code, w.Body)
	}
}
