package httpapi_test

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/paygate/paygate/internal/httpapi"
	"github.com/paygate/paygate/internal/testenv"
)

// TestRouting pins how every kind of path is routed: which handler answers,
// whether the API key is checked first (decisions §1: unknown /v1 paths and
// wrong methods answer 401 without a key), the Allow header of a 405, and
// the route the log line names. No path is ever redirected: an unclean
// path ("//", "/./", "..") is matched as sent, and /v1 paths match after
// their leading and trailing slashes are trimmed.
func TestRouting(t *testing.T) {
	t.Parallel()
	var logs testenv.Buffer
	s := newServer(t, func(c *httpapi.Config) {
		c.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
		c.Dashboard = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	})
	const (
		id    = "4b3f2a8e-1c5d-4e6f-8a9b-0c1d2e3f4a5b"
		upper = "4B3F2A8E-1C5D-4E6F-8A9B-0C1D2E3F4A5B"
		pay   = "/v1/payments/{id}"
		card  = "/v1/customers/{id}/cards/{id}"
		adyen = "/v1/providers/adyen/{provider}/notifications"
		cb    = "/v1/3ds/callback/{token}"
		chal  = "/v1/3ds/sandbox/challenge"
		none  = "unmatched"
		dash  = "/dashboard/*"
	)
	for _, c := range []struct {
		method, path string
		key          bool
		status       int
		allow, route string
	}{
		{"GET", "/healthz", false, 200, "", "/healthz"},
		{"POST", "/healthz", false, 200, "", "/healthz"},
		{"GET", "/healthz/", false, 404, "", none},
		{"GET", "//healthz", false, 404, "", none},
		{"GET", "/nothing", false, 404, "", none},
		{"GET", "/", false, 302, "", "/"},
		{"HEAD", "/", false, 302, "", "/"},
		{"POST", "/", false, 404, "", "/"},
		{"GET", "/v1/payments/" + id, true, 404, "", pay},
		{"GET", "/v1/payments/" + id, false, 401, "", pay},
		{"GET", "/v1/payments/" + upper, true, 404, "", pay},
		{"GET", "/v1/payments/" + id + "/", true, 404, "", pay},
		{"GET", "/v1/payments/" + id + "//", true, 404, "", pay},
		{"GET", "/v1/payments%2F" + id, true, 404, "", pay},
		{"GET", "/v1/payments/not-a-uuid", true, 404, "", none},
		{"GET", "/v1/payments/not-a-uuid", false, 401, "", none},
		{"POST", "/v1/payments/not-a-uuid", true, 404, "", none},
		{"DELETE", "/v1/payments", true, 405, "GET, POST", "/v1/payments"},
		{"DELETE", "/v1/payments", false, 401, "", "/v1/payments"},
		{"HEAD", "/v1/payments/" + id, true, 405, "GET", pay},
		{"PUT", "/v1/customers/" + id + "/cards", true, 405, "GET, POST", "/v1/customers/{id}/cards"},
		{"GET", "/v1/customers/" + id + "/cards/" + id, true, 405, "DELETE", card},
		{"GET", "/v1/customers/" + id + "/cards/x", true, 404, "", none},
		{"GET", "/v1//payments/" + id, true, 404, "", none},
		{"GET", "/v1//payments/" + id, false, 401, "", none},
		{"GET", "/v1/./payments", true, 404, "", none},
		{"GET", "/v1/payments/../payments", true, 404, "", none},
		{"GET", "/v1/payments/" + id + "/..", true, 404, "", none},
		{"GET", "//v1/payments", false, 404, "", none},
		{"GET", "/v1", true, 404, "", none},
		{"GET", "/v1", false, 401, "", none},
		{"GET", "/v1/", false, 401, "", none},
		{"GET", "/v1/3ds/callback", false, 401, "", none},
		{"GET", "/v1/3ds/callback/x", false, 405, "POST", cb},
		{"GET", "/v1/3ds/callback/../../healthz", false, 405, "POST", cb},
		{"GET", "/v1/3ds/callback//x", false, 405, "POST", cb},
		{"GET", chal, false, 405, "POST", chal},
		{"GET", chal + "/", false, 401, "", none},
		{"GET", "/v1/providers/adyen/x/notifications", false, 405, "POST", adyen},
		{"POST", "/v1/providers/adyen/x/notifications", false, 404, "", adyen},
		{"POST", "/v1/providers/adyen/../notifications", false, 404, "", adyen},
		{"POST", "/v1/providers/adyen//notifications", false, 401, "", none},
		{"GET", "/dashboard", false, 418, "", dash},
		{"POST", "/dashboard/", false, 418, "", dash},
		{"GET", "/dashboard/test/../../v1/payments", false, 418, "", dash},
		{"GET", "/dashboard//x", false, 418, "", dash},
		{"GET", "/dashboardx", false, 404, "", none},
		{"GET", "//dashboard", false, 404, "", none},
	} {
		key := ""
		if c.key {
			key = s.secret
		}
		before := len(requestLines(t, &logs))
		w := s.do(c.method, c.path, key, "", nil)
		wantLocation := ""
		if c.status == http.StatusFound {
			wantLocation = "/dashboard/" // GET / leads to the dashboard
		}
		if w.Code != c.status || w.Header().Get("Allow") != c.allow || w.Header().Get("Location") != wantLocation {
			t.Errorf("%s %s: %d Allow %q Location %q, want %d Allow %q", c.method, c.path, w.Code,
				w.Header().Get("Allow"), w.Header().Get("Location"), c.status, c.allow)
		}
		if ct := w.Header().Get("Content-Type"); w.Code != 418 && !strings.HasPrefix(ct, "application/json") && !strings.HasPrefix(ct, "text/html") {
			t.Errorf("%s %s: Content-Type %q", c.method, c.path, ct)
		}
		lines := requestLines(t, &logs)
		if len(lines) != before+1 {
			t.Fatalf("%s %s: %d log lines", c.method, c.path, len(lines)-before)
		}
		if got := lines[before]["route"]; got != c.route {
			t.Errorf("%s %s: route %v, want %q", c.method, c.path, got, c.route)
		}
	}
}

// TestEndpoints checks Config.Endpoints: served without an API key, logged
// under the pattern without its method, and 405 with Allow for the other
// methods of the path.
func TestEndpoints(t *testing.T) {
	t.Parallel()
	var logs testenv.Buffer
	s := newServer(t, func(c *httpapi.Config) {
		c.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
		c.Endpoints = map[string]http.Handler{
			"POST /v1/providers/{provider}/notifications": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("X-Provider", r.PathValue("provider"))
				w.WriteHeader(http.StatusAccepted)
			}),
		}
	})
	w := s.do(http.MethodPost, "/v1/providers/adyen-eu/notifications", "", "", nil)
	if w.Code != http.StatusAccepted || w.Header().Get("X-Provider") != "adyen-eu" {
		t.Errorf("POST: %d %v", w.Code, w.Header())
	}
	w = s.do(http.MethodGet, "/v1/providers/adyen-eu/notifications", "", "", nil)
	if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != "POST" {
		t.Errorf("GET: %d %v", w.Code, w.Header())
	}
	for i, l := range requestLines(t, &logs) {
		if l["route"] != "/v1/providers/{provider}/notifications" {
			t.Errorf("line %d: route %v", i, l["route"])
		}
	}
}
