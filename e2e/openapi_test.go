package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
)

// TestAPIDescription checks decisions §18 from the outside: the gateway
// serves docs/openapi.json as committed, without a key and whatever the
// client's failed authentications; /docs/ renders it; and the check every
// exchange of this suite goes through refuses real answers that drift.
func TestAPIDescription(t *testing.T) {
	db := sqliteEngine().url(t)
	m := createMerchant(t, db, "Docs Ltd")
	g := startGateway(t, db, "--rate-limit-unauthenticated", "2")
	file, err := os.ReadFile("../docs/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		expect(t, g.call(http.MethodGet, "/v1/payments?merchantRef=x", "smtgw_sk_test_wrong", nil), 401)
	}
	expect(t, g.call(http.MethodGet, "/v1/payments?merchantRef=x", "smtgw_sk_test_wrong", nil), 429, "RATE_LIMITED")
	doc := g.call(http.MethodGet, "/v1/openapi.json", "", nil)
	expect(t, doc, http.StatusOK)
	if !bytes.Equal(doc.Raw, file) || doc.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /v1/openapi.json: %q, %d bytes; want the %d bytes of docs/openapi.json", doc.Header.Get("Content-Type"), len(doc.Raw), len(file))
	}
	expect(t, g.call(http.MethodPost, "/v1/openapi.json", "", map[string]any{}), 405, "METHOD_NOT_ALLOWED")

	var parsed struct {
		OpenAPI string                     `json:"openapi"`
		Paths   map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(doc.Raw, &parsed); err != nil || parsed.OpenAPI != "3.1.0" {
		t.Fatalf("the document: openapi %q, %v", parsed.OpenAPI, err)
	}
	page := g.call(http.MethodGet, "/docs/", "", nil)
	expect(t, page, http.StatusOK)
	for path := range parsed.Paths {
		if !strings.Contains(string(page.Raw), "<code>"+path+"</code>") {
			t.Errorf("/docs/ does not show %s", path)
		}
	}

	// A real answer conforms; the same answer with a field the document
	// does not name, or without one it requires, does not.
	created := g.call(http.MethodPost, "/v1/payments", m.TestSecretKey, paymentBody("4242424242424242", "10.50", "EUR"))
	expect(t, created, http.StatusCreated)
	path := "/v1/payments/" + created.Data()["id"].(string)
	before := checked.Load()
	rec := g.call(http.MethodGet, path, m.TestSecretKey, nil)
	expect(t, rec, http.StatusOK)
	if checked.Load() == before {
		t.Fatal("the exchange was not checked against the document")
	}
	req, _ := http.NewRequest(http.MethodGet, g.url+path, nil)
	req.Header.Set("X-API-Key", m.TestSecretKey)
	if err := checker.Check(req, nil, rec.Status, rec.Header, rec.Raw); err != nil {
		t.Fatalf("the gateway's answer does not conform: %v", err)
	}
	for name, body := range map[string][]byte{
		"ExtraField":   bytes.Replace(rec.Raw, []byte(`"data":{`), []byte(`"data":{"surcharge":"1.00",`), 1),
		"MissingField": bytes.Replace(rec.Raw, []byte(`"updatedAt"`), []byte(`"updatedAtX"`), 1),
	} {
		if bytes.Equal(body, rec.Raw) {
			t.Fatalf("%s: the answer was not changed: %s", name, rec.Raw)
		}
		if err := checker.Check(req, nil, rec.Status, rec.Header, body); err == nil {
			t.Errorf("%s: the checker passed %s", name, body)
		}
	}
}

// TestConformanceHookReports checks the hook itself: an exchange with a
// gateway whose answer departs from the document is reported, and the
// test still reads the answer as sent.
func TestConformanceHookReports(t *testing.T) {
	answer := `{"data":{"id":"01966b3e-5f2a-7c41-9d3e-2b8f4a6c1d09","externalId":"c-1","metadata":{},"createdAt":"2025-04-24T10:15:30.123Z","nickname":"x"},"meta":{"timestamp":"2025-04-24T10:15:30.123Z"}}`
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, v := range map[string]string{"Content-Type": "application/json", "X-Request-Id": "r-1", "Cache-Control": "no-store",
			"X-Content-Type-Options": "nosniff", "X-RateLimit-Limit": "100", "X-RateLimit-Remaining": "99", "X-RateLimit-Reset": "60"} {
			w.Header().Set(k, v)
		}
		_, _ = io.WriteString(w, answer)
	}))
	defer fake.Close()
	fg := &gateway{t: t, url: fake.URL}
	defer watch(strings.TrimPrefix(fake.URL, "http://"), fg)()

	var reported []error
	c := &http.Client{Transport: conformingTransport{next: http.DefaultTransport, report: func(g *gateway, _ *http.Request, _ int, err error) {
		if g != fg {
			t.Errorf("reported to the gateway %s", g.url)
		}
		reported = append(reported, err)
	}}}
	req, _ := http.NewRequest(http.MethodGet, fake.URL+"/v1/customers/01966b3e-5f2a-7c41-9d3e-2b8f4a6c1d09", nil)
	req.Header.Set("X-API-Key", "smtgw_sk_test_x")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != answer {
		t.Errorf("the test read %q, not the answer", body)
	}
	if len(reported) != 1 || !strings.Contains(reported[0].Error(), "nickname") {
		t.Fatalf("reported %v; want the unknown field nickname", reported)
	}
}
