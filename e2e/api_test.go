package e2e

import (
	"bufio"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestHTTPBasics covers decisions §1 and §2: envelope, request ids, 404/405,
// strict JSON, content type and the body limit.
func TestHTTPBasics(t *testing.T) {
	db := sqliteEngine().url(t)
	m := createMerchant(t, db, "Basics Ltd")
	g := startGateway(t, db, "--rate-limit-test", "1000")
	key := m.TestSecretKey

	t.Run("RequestID", func(t *testing.T) {
		r := g.call(http.MethodGet, "/v1/payments/00000000-0000-0000-0000-000000000000", key, nil, "X-Request-Id", "abc-123.X:y_z")
		if r.Header.Get("X-Request-Id") != "abc-123.X:y_z" {
			t.Fatalf("request id not echoed: %q", r.Header.Get("X-Request-Id"))
		}
		r = g.call(http.MethodGet, "/v1/payments/00000000-0000-0000-0000-000000000000", key, nil, "X-Request-Id", "bad id!")
		if got := r.Header.Get("X-Request-Id"); got == "" || got == "bad id!" {
			t.Fatalf("invalid request id not replaced: %q", got)
		}
		if r := g.call(http.MethodGet, "/healthz", "", nil); r.Header.Get("X-Request-Id") == "" {
			t.Fatal("no request id on /healthz")
		}
	})
	t.Run("NotFoundAndMethod", func(t *testing.T) {
		r := g.call(http.MethodGet, "/v1/nothing", key, nil)
		expect(t, r, 404, "NOT_FOUND")
		if r.Body["meta"] == nil || r.Body["data"] != nil {
			t.Fatalf("GET error envelope: %s", r.Raw)
		}
		expect(t, g.call(http.MethodGet, "/v1/payments/not-a-uuid", key, nil), 404, "NOT_FOUND")
		r = g.call(http.MethodDelete, "/v1/payments", key, nil)
		expect(t, r, 405, "METHOD_NOT_ALLOWED")
		if r.Header.Get("Allow") != "GET, POST" {
			t.Fatalf("Allow: %q", r.Header.Get("Allow"))
		}
		r = g.call(http.MethodPost, "/v1/payments/00000000-0000-0000-0000-000000000000", key, map[string]any{})
		expect(t, r, 405, "METHOD_NOT_ALLOWED")
		if r.Header.Get("Allow") != "GET" {
			t.Fatalf("Allow: %q", r.Header.Get("Allow"))
		}
	})
	t.Run("AuthBeforeRouting", func(t *testing.T) {
		expect(t, g.call(http.MethodGet, "/v1/nothing", "", nil), 401, "UNAUTHORIZED")
		expect(t, g.call(http.MethodDelete, "/v1/payments", "", nil), 401, "UNAUTHORIZED")
		expect(t, g.call(http.MethodGet, "/v1/payments/x", m.TestPublicKey, nil), 401, "UNAUTHORIZED")
		expect(t, g.call(http.MethodGet, "/v1/payments/x", "smtgw_sk_test_"+strings.Repeat("a", 40), nil), 401, "UNAUTHORIZED")
	})
	t.Run("StrictJSON", func(t *testing.T) {
		expect(t, g.call(http.MethodPost, "/v1/customers", key, `{"externalId": "a"`), 400, "INVALID_REQUEST")
		expect(t, g.call(http.MethodPost, "/v1/customers", key, `{"externalId": 5}`), 400, "INVALID_REQUEST", "externalId")
		expect(t, g.call(http.MethodPost, "/v1/customers", key, `{"externalId": "a", "nickname": "x"}`), 400, "INVALID_REQUEST", "nickname")
		body := paymentBody("4242424242424242", "1.00", "EUR")
		body["card"].(map[string]any)["pin"] = "1234"
		expect(t, g.call(http.MethodPost, "/v1/payments", key, body), 400, "INVALID_REQUEST", "card.pin")
		body = paymentBody("4242424242424242", "1.00", "EUR")
		body["amount"] = 1.00
		expect(t, g.call(http.MethodPost, "/v1/payments", key, body), 400, "INVALID_REQUEST", "amount")
	})
	t.Run("ContentTypeAndSize", func(t *testing.T) {
		expect(t, g.call(http.MethodPost, "/v1/customers", key, `{"externalId":"a"}`, "Content-Type", "text/plain"), 400, "INVALID_REQUEST")
		expect(t, g.call(http.MethodPost, "/v1/customers", key, `{"externalId":"a"}`, "Content-Type", ""), 400, "INVALID_REQUEST")
		big := `{"externalId":"a","metadata":{"x":"` + strings.Repeat("y", 70000) + `"}}`
		r := g.call(http.MethodPost, "/v1/customers", key, big)
		expect(t, r, 413, "INVALID_REQUEST")
		if r.Err()["status"] != float64(413) {
			t.Fatalf("error.status: %s", r.Raw)
		}
	})
	t.Run("Validation", func(t *testing.T) {
		cases := map[string]func(b map[string]any){
			"amount":            func(b map[string]any) { b["amount"] = "10.001" },
			"currency":          func(b map[string]any) { b["currency"] = "XXX" },
			"card.number":       func(b map[string]any) { b["card"].(map[string]any)["number"] = "4242424242424241" },
			"card.expiryYear":   func(b map[string]any) { b["card"].(map[string]any)["expiryYear"] = "20" },
			"card.cvv":          func(b map[string]any) { b["card"].(map[string]any)["cvv"] = "12" },
			"billing.country":   func(b map[string]any) { b["billing"].(map[string]any)["country"] = "XX" },
			"billing.phone":     func(b map[string]any) { b["billing"].(map[string]any)["phone"] = "1" },
			"customerId":        func(b map[string]any) { delete(b, "customerId") },
			"card":              func(b map[string]any) { delete(b, "card") },
			"deviceFingerprint": func(b map[string]any) { b["deviceFingerprint"] = strings.Repeat("f", 129) },
			"returnUrl":         func(b map[string]any) { b["returnUrl"] = "/relative" },
			"billing.state":     func(b map[string]any) { b["billing"].(map[string]any)["country"] = "US" },
			"metadata":          func(b map[string]any) { b["metadata"] = "not an object" },
			"Idempotency-Key":   nil,
		}
		for param, mutate := range cases {
			t.Run(param, func(t *testing.T) {
				body := paymentBody("4242424242424242", "10.00", "EUR")
				if mutate == nil {
					expect(t, g.call(http.MethodPost, "/v1/payments", key, body, "Idempotency-Key", ""), 400, "INVALID_REQUEST", param)
					return
				}
				mutate(body)
				r := g.call(http.MethodPost, "/v1/payments", key, body)
				expect(t, r, 400, "INVALID_REQUEST", param)
				if strings.Contains(string(r.Raw), "4242424242424241") {
					t.Fatalf("error echoes the card number: %s", r.Raw)
				}
			})
		}
		expect(t, g.call(http.MethodGet, "/v1/payments", key, nil), 400, "INVALID_REQUEST", "merchantRef")
		expect(t, g.call(http.MethodGet, "/v1/payments?merchantRef=none", key, nil), 404, "NOT_FOUND")
	})
	t.Run("Health", func(t *testing.T) {
		expect(t, g.call(http.MethodGet, "/healthz", "", nil), 200)
		expect(t, g.call(http.MethodGet, "/readyz", "", nil), 200)
	})
}

// TestIsolation checks that another merchant's key and the other mode's key
// see every resource as missing, on every endpoint.
func TestIsolation(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engine) {
		db := e.url(t)
		a := createMerchant(t, db, "A")
		b := createMerchant(t, db, "B")
		g := startGateway(t, db, "--rate-limit-test", "1000", "--rate-limit-live", "1000")

		cust := g.call(http.MethodPost, "/v1/customers", a.TestSecretKey, map[string]any{"externalId": "shared-ext"})
		cid := cust.Data()["id"].(string)
		cap := g.call(http.MethodPost, "/v1/payments", a.TestSecretKey, paymentBody("4242424242424242", "10.00", "EUR"))
		pid := cap.Data()["id"].(string)
		authz := g.call(http.MethodPost, "/v1/payments", a.TestSecretKey, paymentBody("4000000000000077", "10.00", "EUR"))
		aid := authz.Data()["id"].(string)
		rf := g.call(http.MethodPost, "/v1/refunds", a.TestSecretKey, map[string]any{"transactionId": pid, "amount": "1.00", "currency": "EUR"})
		rid := rf.Data()["id"].(string)

		for who, key := range map[string]string{"otherMerchant": b.TestSecretKey, "otherMode": a.LiveSecretKey, "otherMerchantLive": b.LiveSecretKey} {
			t.Run(who, func(t *testing.T) {
				expect(t, g.call(http.MethodGet, "/v1/payments/"+pid, key, nil), 404, "NOT_FOUND")
				expect(t, g.call(http.MethodGet, "/v1/payments?merchantRef=order-4242", key, nil), 404, "NOT_FOUND")
				expect(t, g.call(http.MethodGet, "/v1/payments/"+pid+"/refunds", key, nil), 404, "NOT_FOUND")
				expect(t, g.call(http.MethodGet, "/v1/refunds/"+rid, key, nil), 404, "NOT_FOUND")
				expect(t, g.call(http.MethodGet, "/v1/customers/"+cid, key, nil), 404, "NOT_FOUND")
				expect(t, g.call(http.MethodPost, "/v1/refunds", key, map[string]any{"transactionId": pid, "amount": "1.00", "currency": "EUR"}), 404, "NOT_FOUND")
				expect(t, g.call(http.MethodPost, "/v1/payments/"+aid+"/capture", key, map[string]any{}), 404, "NOT_FOUND")
				expect(t, g.call(http.MethodPost, "/v1/payments/"+aid+"/void", key, map[string]any{}), 404, "NOT_FOUND")
				// The same external id is another customer in another scope.
				other := g.call(http.MethodPost, "/v1/customers", key, map[string]any{"externalId": "shared-ext"})
				expect(t, other, 201)
				if other.Data()["id"] == cid {
					t.Fatal("customer shared across scopes")
				}
			})
		}
		// Live mode has no providers configured: a clean PROVIDER_ERROR.
		live := g.call(http.MethodPost, "/v1/payments", a.LiveSecretKey, paymentBody("4242424242424242", "10.00", "EUR"))
		expect(t, live, 502, "PROVIDER_ERROR")
		if !strings.Contains(live.Err()["message"].(string), "EUR") {
			t.Fatalf("message should say no provider serves EUR: %s", live.Raw)
		}
	})
}

// TestKeyLifecycle drives rotation and revocation through the command line
// while the server runs.
func TestKeyLifecycle(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engine) {
		db, m, g := startWithMerchant(t, e, "Keys Ltd")
		probe := "/v1/payments/00000000-0000-0000-0000-000000000000"

		var rot struct{ ID, Mode, Key, OldKeyExpiresAt string }
		mustCLI(t, &rot, "key", "rotate", "--key", m.TestSecretKeyID, "--grace", "1h", "--json", "--database-url", db)
		expect(t, g.call(http.MethodGet, probe, m.TestSecretKey, nil), 404) // old key in grace
		expect(t, g.call(http.MethodGet, probe, rot.Key, nil), 404)
		exp, err := time.Parse(time.RFC3339, rot.OldKeyExpiresAt)
		if err != nil || exp.Before(time.Now().Add(55*time.Minute)) || exp.After(time.Now().Add(65*time.Minute)) {
			t.Fatalf("oldKeyExpiresAt %q: %v", rot.OldKeyExpiresAt, err)
		}
		mustCLI(t, nil, "key", "revoke", "--key", rot.ID, "--database-url", db)
		expect(t, g.call(http.MethodGet, probe, rot.Key, nil), 401, "UNAUTHORIZED")

		var rot0 struct{ ID, Key string }
		mustCLI(t, &rot0, "key", "rotate", "--key", m.LiveSecretKeyID, "--grace", "0s", "--json", "--database-url", db)
		expect(t, g.call(http.MethodGet, probe, m.LiveSecretKey, nil), 401, "UNAUTHORIZED")
		expect(t, g.call(http.MethodGet, probe, rot0.Key, nil), 404)
	})
}

// TestGracefulShutdown sends SIGTERM while a request is half sent and checks
// that it still completes.
func TestGracefulShutdown(t *testing.T) {
	db := sqliteEngine().url(t)
	m := createMerchant(t, db, "Shutdown Ltd")
	g := startGateway(t, db)
	body, _ := json.Marshal(paymentBody("4242424242424242", "10.00", "EUR"))
	conn, err := net.Dial("tcp", strings.TrimPrefix(g.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	head := "POST /v1/payments HTTP/1.1\r\nHost: x\r\nX-API-Key: " + m.TestSecretKey +
		"\r\nIdempotency-Key: shutdown-1\r\nContent-Type: application/json\r\nContent-Length: " + itoa(len(body)) + "\r\n\r\n"
	if _, err := conn.Write(append([]byte(head), body[:10]...)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // let the server start reading the request
	stopped := make(chan error, 1)
	go func() { stopped <- g.Stop() }()
	time.Sleep(300 * time.Millisecond)
	if _, err := conn.Write(body[10:]); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("in-flight request was cut: %v", err)
	}
	if resp.StatusCode != 201 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("server exit: %v\n%s", err, g.Logs())
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
