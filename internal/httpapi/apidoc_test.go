package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/paygate/paygate/docs"
	"github.com/paygate/paygate/internal/httpapi"
)

// TestAPIDescriptionRoutes checks where the API's description is served
// (decisions §18): /v1/openapi.json without a key, the committed bytes,
// outside the rate limits (a client over its failed-authentication budget
// still reads it); other methods 405, HEAD included, as on every /v1
// path; and the reference page at /docs/.
func TestAPIDescriptionRoutes(t *testing.T) {
	t.Parallel()
	s := newServer(t, func(c *httpapi.Config) { c.RateLimitUnauthenticated = 1 })
	// Spend the address's budget of failed authentications.
	for range 2 {
		s.do(http.MethodGet, "/v1/payments?merchantRef=x", "smtgw_sk_test_nope", "", nil)
	}
	if w := s.do(http.MethodGet, "/v1/payments?merchantRef=x", "smtgw_sk_test_nope", "", nil); w.Code != http.StatusTooManyRequests {
		t.Fatalf("the failed-authentication limit is not reached: %d", w.Code)
	}
	for range 3 {
		w := s.do(http.MethodGet, "/v1/openapi.json", "", "", nil)
		if w.Code != http.StatusOK || w.Body.String() != docs.OpenAPI || w.Header().Get("Content-Type") != "application/json" {
			t.Fatalf("GET /v1/openapi.json: %d %q, %d bytes", w.Code, w.Header().Get("Content-Type"), w.Body.Len())
		}
		if w.Header().Get("X-RateLimit-Limit") != "" || w.Header().Get("X-Request-Id") == "" {
			t.Errorf("GET /v1/openapi.json headers: %v", w.Header())
		}
	}
	for _, m := range []string{http.MethodPost, http.MethodHead, http.MethodDelete} {
		w := s.do(m, "/v1/openapi.json", "", "", nil)
		if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != http.MethodGet {
			t.Errorf("%s /v1/openapi.json: %d, Allow %q; want 405, Allow GET", m, w.Code, w.Header().Get("Allow"))
		}
	}
	for _, p := range []string{"/docs/", "/docs"} {
		w := s.do(http.MethodGet, p, "", "", nil)
		if w.Code != http.StatusOK || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/html") || !strings.Contains(w.Body.String(), "/v1/payments/{id}/capture") {
			t.Errorf("GET %s: %d %q", p, w.Code, w.Header().Get("Content-Type"))
		}
	}
	if w := s.do(http.MethodGet, "/docs/other", "", "", nil); w.Code != http.StatusNotFound {
		t.Errorf("GET /docs/other: %d, want 404", w.Code)
	}
}
