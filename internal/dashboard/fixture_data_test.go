package dashboard

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/auth"
	"github.com/paygate/paygate/internal/httpapi"
	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/payment"
	"github.com/paygate/paygate/internal/provider"
	"github.com/paygate/paygate/internal/provider/sandbox"
	"github.com/paygate/paygate/internal/ratelimit"
	"github.com/paygate/paygate/internal/store/sqlite"
	"github.com/paygate/paygate/internal/testenv"
	"github.com/paygate/paygate/internal/vault"
)

// The data pages' handler tests run against a real SQLite store, the real
// payment service with the sandbox providers, and the real /v1 API, which
// creates their data exactly as a merchant's backend would. Handlers are
// called through dataRoutes with a signed-in viewer: the session and CSRF
// checks in front of them are the framework's and tested there.

// newStoreAndService opens a fresh SQLite store and the real payment
// service over it, with the sandbox providers and a card vault, on clock.
func newStoreAndService(t *testing.T, clock paygate.Clock) (*sqlite.Store, *payment.Service) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "dashboard.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	master := make([]byte, 32)
	if _, err := rand.Read(master); err != nil {
		t.Fatal(err)
	}
	v, err := vault.New(master)
	if err != nil {
		t.Fatal(err)
	}
	routes, err := provider.NewTable(map[paygate.Mode]provider.Routes{paygate.ModeTest: sandbox.Routes()})
	if err != nil {
		t.Fatal(err)
	}
	svc := payment.New(payment.Config{
		Store: st, Router: routes, Clock: clock, Encoder: httpapi.Encoder{},
		Vault: v,
	})
	return st, svc
}

// tenant is a merchant's mode: its API key and a dashboard viewer of it.
type tenant struct {
	merchantID string
	mode       paygate.Mode
	key        string
	viewer     *viewer
}

type dataFixture struct {
	t     *testing.T
	st    *sqlite.Store
	svc   *payment.Service
	api   *httpapi.Server
	d     *Dashboard
	clock *testenv.Clock
	// a and b are two merchants in test mode; aLive is a's live mode.
	a, b, aLive tenant
}

func newDataFixture(t *testing.T) *dataFixture {
	t.Helper()
	clock := testenv.NewClock(time.Now())
	st, svc := newStoreAndService(t, clock)
	api := httpapi.New(httpapi.Config{
		Store: st, Payments: svc, Auth: &auth.Authenticator{Store: st, Clock: clock}, Limiter: ratelimit.NewMemory(),
		Clock: clock, RateLimitTest: 100000, RateLimitLive: 100000, RateLimitUnauthenticated: 100000,
	})
	f := &dataFixture{t: t, st: st, svc: svc, api: api, clock: clock, d: New(Config{Store: st, Payments: svc, Limiter: ratelimit.NewMemory(), Clock: clock, Vault: siteVault})}
	f.a = f.merchant("m-a", "Ada's Books")
	f.b = f.merchant("m-b", "Bob's Bikes")
	f.aLive = f.a
	f.aLive.mode = paygate.ModeLive
	f.aLive.viewer = &viewer{User: f.a.viewer.User, Mode: paygate.ModeLive, CSRF: "csrf", Loc: time.UTC}
	return f
}

// merchant creates a merchant with a test key and a viewer of its test mode.
func (f *dataFixture) merchant(mid, name string) tenant {
	f.t.Helper()
	now := f.clock.Now()
	secret, key, err := auth.NewKey(id.New(), mid, paygate.ModeTest, paygate.KeySecret, now)
	if err != nil {
		f.t.Fatal(err)
	}
	if err := f.st.Commit(context.Background(), paygate.Unit{Ops: []paygate.Op{paygate.Merchant{ID: mid, Name: name, CreatedAt: now}, key}}); err != nil {
		f.t.Fatal(err)
	}
	u := paygate.User{ID: id.New(), MerchantID: mid, Email: "support@" + mid + ".example", Role: paygate.RoleOwner}
	return tenant{merchantID: mid, mode: paygate.ModeTest, key: secret,
		viewer: &viewer{User: u, Mode: paygate.ModeTest, CSRF: "csrf", Loc: time.UTC}}
}

// call makes a /v1 request as the tenant's backend and returns the status
// and the decoded envelope's data.
func (f *dataFixture) call(tn tenant, method, path string, body any) (int, map[string]any) {
	f.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	r := httptest.NewRequest(method, path, rd)
	r.Header.Set("X-API-Key", tn.key)
	if method == http.MethodPost {
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Idempotency-Key", id.New())
	}
	w := httptest.NewRecorder()
	f.api.ServeHTTP(w, r)
	var env struct {
		Data  map[string]any `json:"data"`
		Error map[string]any `json:"error"`
	}
	_ = json.Unmarshal(w.Body.Bytes(), &env)
	if env.Data == nil {
		env.Data = env.Error
	}
	return w.Code, env.Data
}

// pay creates a payment through the API with a test card and returns its id.
func (f *dataFixture) pay(tn tenant, number, amount, currency, customer, ref string) string {
	f.t.Helper()
	body := map[string]any{
		"amount": amount, "currency": currency, "customerId": customer,
		"card": map[string]any{"number": number, "expiryMonth": "12", "expiryYear": fmt.Sprintf("%02d", (f.clock.Now().Year()+3)%100),
			"cvv": "123", "holderName": "Ada Lovelace"},
		"billing": map[string]any{"email": "ada@example.com", "phone": "+44 20 7946 0000", "country": "GB",
			"address": "1 Analytical Row", "city": "London", "postalCode": "N1 1AA"},
	}
	if ref != "" {
		body["merchantRef"] = ref
	}
	status, data := f.call(tn, http.MethodPost, "/v1/payments", body)
	if status != http.StatusCreated && status != http.StatusBadRequest {
		f.t.Fatalf("create payment: %d %v", status, data)
	}
	pid, _ := data["id"].(string)
	if pid == "" {
		pid, _ = data["transactionId"].(string)
	}
	if pid == "" {
		f.t.Fatalf("create payment: no id in %v", data)
	}
	return pid
}

// answer is a dashboard answer.
type answer struct {
	code     int
	body     string
	location string
}

// get serves a GET of a data page to the viewer; path is relative to
// /dashboard/{mode}.
func (f *dataFixture) get(v *viewer, path string) answer {
	f.t.Helper()
	return f.serve(v, http.MethodGet, path, nil)
}

// post serves a form POST (session and CSRF already checked, as the
// framework does before a page sees it).
func (f *dataFixture) post(v *viewer, path string, form url.Values) answer {
	f.t.Helper()
	return f.serve(v, http.MethodPost, path, form)
}

func (f *dataFixture) serve(v *viewer, method, path string, form url.Values) answer {
	f.t.Helper()
	full := "/dashboard/" + string(v.Mode) + path
	var rd io.Reader
	if form != nil {
		rd = strings.NewReader(form.Encode())
	}
	r := httptest.NewRequest(method, full, rd)
	if form != nil {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	base := "/dashboard/" + string(v.Mode)
	mux := http.NewServeMux()
	for _, rt := range f.d.dataRoutes() {
		if rt.method == method {
			path := routePath(base, rt.pattern)
			mux.HandleFunc(rt.method+" "+path, func(w http.ResponseWriter, r *http.Request) { rt.h(w, r, v, pathParams(r, path)) })
		}
	}
	if _, pattern := mux.Handler(r); pattern != "" {
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, r)
		return answer{code: w.Code, body: w.Body.String(), location: w.Header().Get("Location")}
	}
	f.t.Fatalf("no data route for %s %s", method, r.URL.Path)
	return answer{}
}

var paymentLink = regexp.MustCompile(`href="/dashboard/(?:test|live)/payments/([0-9a-f-]{36})"`)

// paymentIDs lists the payments a page links to, in order.
func paymentIDs(body string) []string {
	var out []string
	for _, m := range paymentLink.FindAllStringSubmatch(body, -1) {
		// A row links to its payment twice (amount and id).
		if len(out) > 0 && out[len(out)-1] == m[1] {
			continue
		}
		out = append(out, m[1])
	}
	return out
}

// hrefOf returns the unescaped href of the link with the text.
func hrefOf(t *testing.T, body, text string) string {
	t.Helper()
	re := regexp.MustCompile(`<a href="([^"]*)"[^>]*>` + regexp.QuoteMeta(text) + `</a>`)
	m := re.FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return strings.ReplaceAll(m[1], "&amp;", "&")
}

// formValue returns the value of the named hidden input.
func formValue(t *testing.T, body, name string) string {
	t.Helper()
	m := regexp.MustCompile(`name="` + regexp.QuoteMeta(name) + `" value="([^"]*)"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no field %s in the page", name)
	}
	return m[1]
}
