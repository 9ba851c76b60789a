package apidoctest

import (
	"encoding/json"
	"maps"
	"net/http"
	"strings"
	"testing"
)

const (
	paymentID = "01966b3e-5f2a-7c41-9d3e-2b8f4a6c1d09"
	testKey   = "smtgw_sk_test_0123456789abcdefghijklmnopqrstuv"
)

// payment is a payment record as GET /v1/payments/{id} shows it.
func payment() map[string]any {
	return map[string]any{
		"id": paymentID, "merchantId": "m-1", "customerId": "01966b3d-0a4b-7f12-a3c5-7e91d0b2c4f6",
		"providerId": "sandbox-eu", "status": "captured", "amount": "10.50", "currency": "EUR",
		"paymentMethod": "card", "merchantRef": nil, "errorCode": nil, "errorMessage": nil,
		"declineCode": nil, "amountCaptured": "10.50", "amountRefunded": "0.00",
		"createdAt": "2025-04-24T10:15:30.123Z", "updatedAt": "2025-04-24T10:15:30.187Z",
	}
}

var meta = map[string]any{"timestamp": "2025-04-24T11:05:00.000Z"}

// headers are those of an answer to a request with a valid key, with
// extra name-value pairs set ("" deletes).
func headers(extra ...string) http.Header {
	h := http.Header{
		"Content-Type":           {"application/json"},
		"X-Request-Id":           {"req-1"},
		"X-Ratelimit-Limit":      {"100"},
		"X-Ratelimit-Remaining":  {"99"},
		"X-Ratelimit-Reset":      {"60"},
		"Cache-Control":          {"no-store"},
		"X-Content-Type-Options": {"nosniff"},
	}
	for i := 0; i+1 < len(extra); i += 2 {
		if extra[i+1] == "" {
			h.Del(extra[i])
		} else {
			h.Set(extra[i], extra[i+1])
		}
	}
	return h
}

// exchange is one request and its answer.
type exchange struct {
	method, path string
	reqHeader    http.Header
	reqBody      string
	status       int
	header       http.Header
	body         any // marshalled to JSON unless a string
}

func (x exchange) check(t *testing.T, c *Checker) error {
	t.Helper()
	req, err := http.NewRequest(x.method, "http://127.0.0.1:8080"+x.path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header = http.Header{"X-Api-Key": {testKey}}
	if x.method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "k-1")
	}
	maps.Copy(req.Header, x.reqHeader)
	for k, v := range req.Header {
		if len(v) == 1 && v[0] == "" {
			req.Header.Del(k)
		}
	}
	var body []byte
	switch b := x.body.(type) {
	case string:
		body = []byte(b)
	case nil:
	default:
		if body, err = json.Marshal(b); err != nil {
			t.Fatal(err)
		}
	}
	return c.Check(req, []byte(x.reqBody), x.status, x.header, body)
}

func with(m map[string]any, kv ...any) map[string]any {
	out := maps.Clone(m)
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "-" {
			delete(out, kv[i].(string))
		} else {
			out[kv[i].(string)] = kv[i+1]
		}
	}
	return out
}

// TestCheck shows that the checker passes what the document describes and
// fails each kind of drift: a field the document lacks or requires, a value
// outside its enum, a missing header, an undocumented status, an error name
// that is not the status's, and a request the document refuses but the
// gateway accepts.
func TestCheck(t *testing.T) {
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	get := "/v1/payments/" + paymentID
	notFound := map[string]any{"data": nil, "error": map[string]any{"status": 404, "name": "NOT_FOUND", "message": "No such payment."}, "meta": meta}
	customer := map[string]any{"id": paymentID, "externalId": "c-1", "metadata": map[string]any{}, "createdAt": "2025-04-24T10:15:30.123Z"}
	declined := map[string]any{"status": 400, "name": "CARD_DECLINED", "message": "Your card was declined.", "transactionId": paymentID, "declineCode": "generic_decline"}
	payBody := `{"amount":"10.50","currency":"EUR","customerId":"c-1","card":{"number":"4000000000000002","expiryMonth":"12","expiryYear":"30","cvv":"123","holderName":"Ada"}}`
	creation := map[string]any{"id": paymentID, "status": "captured", "amount": "10.50", "currency": "EUR", "provider": "sandbox-eu", "threeDsRequired": false, "threeDsData": nil, "createdAt": "2025-04-24T10:15:30.123Z"}
	page := http.Header{"Content-Type": {"text/html; charset=utf-8"}, "X-Request-Id": {"r"}, "Content-Security-Policy": {"default-src 'none'"}, "Cache-Control": {"no-store"}}
	cases := []struct {
		name string
		x    exchange
		fail string // a part of the error; "" when the exchange conforms
	}{
		{"OK", exchange{method: "GET", path: get, status: 200, header: headers(), body: map[string]any{"data": payment(), "meta": meta}}, ""},
		{"ErrExtraField", exchange{method: "GET", path: get, status: 200, header: headers(), body: map[string]any{"data": with(payment(), "surcharge", "1.00"), "meta": meta}}, "surcharge"},
		{"ErrExtraEnvelopeField", exchange{method: "GET", path: get, status: 200, header: headers(), body: map[string]any{"data": payment(), "meta": meta, "links": map[string]any{}}}, "links"},
		{"ErrMissingField", exchange{method: "GET", path: get, status: 200, header: headers(), body: map[string]any{"data": with(payment(), "updatedAt", "-"), "meta": meta}}, "updatedAt"},
		{"ErrNotInEnum", exchange{method: "GET", path: get, status: 200, header: headers(), body: map[string]any{"data": with(payment(), "status", "refunded"), "meta": meta}}, "status"},
		{"ErrAmountNumber", exchange{method: "GET", path: get, status: 200, header: headers(), body: map[string]any{"data": with(payment(), "amount", 10.5), "meta": meta}}, "amount"},
		{"ErrNoMetaOnGet", exchange{method: "GET", path: get, status: 200, header: headers(), body: map[string]any{"data": payment()}}, "meta"},
		{"ErrUndocumentedStatus", exchange{method: "GET", path: get, status: 418, header: headers(), body: notFound}, "status is not supported"},
		{"ErrNoRequestId", exchange{method: "GET", path: get, status: 200, header: headers("X-Request-Id", ""), body: map[string]any{"data": payment(), "meta": meta}}, "X-Request-Id"},
		{"ErrNoRateLimit", exchange{method: "GET", path: get, status: 200, header: headers("X-RateLimit-Remaining", ""), body: map[string]any{"data": payment(), "meta": meta}}, "X-RateLimit-Remaining"},
		{"NotFound", exchange{method: "GET", path: get, status: 404, header: headers(), body: notFound}, ""},
		{"ErrNameOfAnotherStatus", exchange{method: "GET", path: get, status: 404, header: headers(), body: map[string]any{"data": nil, "error": map[string]any{"status": 404, "name": "INVALID_REQUEST", "message": "x"}, "meta": meta}}, "name"},
		{"ErrDeclineCodeOnNotFound", exchange{method: "GET", path: get, status: 404, header: headers(), body: map[string]any{"data": nil, "error": map[string]any{"status": 404, "name": "NOT_FOUND", "message": "x", "declineCode": "generic_decline"}, "meta": meta}}, "declineCode"},
		// A request without a key is invalid to the document; its 401
		// conforms, and is all that is checked.
		{"UnauthorizedWithoutKey", exchange{method: "GET", path: get, reqHeader: http.Header{"X-Api-Key": {""}}, status: 401, header: headers("X-RateLimit-Limit", "", "X-RateLimit-Remaining", "", "X-RateLimit-Reset", ""), body: map[string]any{"data": nil, "error": map[string]any{"status": 401, "name": "UNAUTHORIZED", "message": "x"}, "meta": meta}}, ""},
		{"ErrAcceptedWithoutKey", exchange{method: "GET", path: get, reqHeader: http.Header{"X-Api-Key": {""}}, status: 200, header: headers(), body: map[string]any{"data": payment(), "meta": meta}}, "refuses the request"},
		{"ErrAcceptedWithoutIdempotencyKey", exchange{method: "POST", path: "/v1/customers", reqHeader: http.Header{"Idempotency-Key": {""}}, reqBody: `{"externalId":"c-1"}`, status: 201, header: headers(), body: map[string]any{"data": customer}}, "Idempotency-Key"},
		{"ErrAcceptedUnknownField", exchange{method: "POST", path: "/v1/customers", reqBody: `{"externalId":"c-1","nickname":"x"}`, status: 201, header: headers(), body: map[string]any{"data": customer}}, "nickname"},
		{"RefusedUnknownField", exchange{method: "POST", path: "/v1/customers", reqBody: `{"externalId":"c-1","nickname":"x"}`, status: 400, header: headers(), body: map[string]any{"data": nil, "error": map[string]any{"status": 400, "name": "INVALID_REQUEST", "message": "nickname is not a known field", "param": "nickname"}}}, ""},
		{"ErrMetaOnPost", exchange{method: "POST", path: "/v1/customers", reqBody: `{"externalId":"c-1"}`, status: 201, header: headers(), body: map[string]any{"data": customer, "meta": meta}}, "meta"},
		{"Created", exchange{method: "POST", path: "/v1/payments", reqBody: payBody, status: 201, header: headers(), body: map[string]any{"data": creation}}, ""},
		{"ErrCreatedStatusWith201", exchange{method: "POST", path: "/v1/payments", reqBody: payBody, status: 201, header: headers(), body: map[string]any{"data": with(creation, "status", "created")}}, "status"},
		{"OutcomeUnknown", exchange{method: "POST", path: "/v1/payments", reqBody: payBody, status: 202, header: headers(), body: map[string]any{"data": with(creation, "status", "created")}}, ""},
		{"Declined", exchange{method: "POST", path: "/v1/payments", reqBody: payBody, status: 400, header: headers(), body: map[string]any{"data": nil, "error": declined}}, ""},
		{"ErrDeclinedWithoutCode", exchange{method: "POST", path: "/v1/payments", reqBody: payBody, status: 400, header: headers(), body: map[string]any{"data": nil, "error": with(declined, "declineCode", "-")}}, "declineCode"},
		{"UnknownPath", exchange{method: "GET", path: "/v1/nothing", status: 404, header: headers(), body: notFound}, ""},
		{"ErrUnknownPathAnswered", exchange{method: "GET", path: "/v1/nothing", status: 200, header: headers(), body: map[string]any{"data": payment(), "meta": meta}}, "status is not supported"},
		{"MethodNotAllowed", exchange{method: "DELETE", path: "/v1/payments", status: 405, header: headers("Allow", "GET, POST"), body: map[string]any{"data": nil, "error": map[string]any{"status": 405, "name": "METHOD_NOT_ALLOWED", "message": "x"}}}, ""},
		{"ErrMethodNotAllowedWithoutAllow", exchange{method: "DELETE", path: "/v1/payments", status: 405, header: headers(), body: map[string]any{"data": nil, "error": map[string]any{"status": 405, "name": "METHOD_NOT_ALLOWED", "message": "x"}}}, "Allow"},
		{"ErrHeadServed", exchange{method: "HEAD", path: get, status: 200, header: headers()}, "serves no HEAD"},
		{"CallbackRedirect", exchange{method: "POST", path: "/v1/3ds/callback/tok", reqHeader: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}, "X-Api-Key": {""}, "Idempotency-Key": {""}}, reqBody: "cres=x", status: 303, header: with2(page, "Location", "https://shop.example/done?status=captured")}, ""},
		{"ErrCallbackRedirectWithoutLocation", exchange{method: "POST", path: "/v1/3ds/callback/tok", reqHeader: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}, "X-Api-Key": {""}, "Idempotency-Key": {""}}, reqBody: "cres=x", status: 303, header: page}, "Location"},
		{"OutsideV1", exchange{method: "GET", path: "/healthz", status: 200, header: http.Header{}, body: "anything"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.x.check(t, c)
			switch {
			case tc.fail == "" && err != nil:
				t.Fatalf("the exchange conforms, but: %v", err)
			case tc.fail != "" && err == nil:
				t.Fatal("the exchange does not conform, but the checker passed it")
			case tc.fail != "" && !strings.Contains(err.Error(), tc.fail):
				t.Fatalf("the error should name %q: %v", tc.fail, err)
			}
		})
	}
}

func with2(h http.Header, k, v string) http.Header {
	out := h.Clone()
	out.Set(k, v)
	return out
}

// TestCheckWebhook shows that deliveries are checked against the
// document's webhooks: the event must be one of them, with its signature
// headers and a body of its schema.
func TestCheckWebhook(t *testing.T) {
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	event := func(kv ...any) []byte {
		data := with(map[string]any{"transactionId": paymentID, "merchantId": "m-1", "status": "captured", "amount": 1050, "currency": "EUR"}, kv...)
		b, _ := json.Marshal(map[string]any{"id": paymentID, "event": "payment.captured", "mode": "test", "timestamp": "2025-04-24T10:15:30.200Z", "data": data})
		return b
	}
	signed := http.Header{"Content-Type": {"application/json"}, "Webhook-Id": {paymentID}, "Webhook-Timestamp": {"1745489730"}, "Webhook-Signature": {"v1,c2lnbmF0dXJl"}}
	unsigned := signed.Clone()
	unsigned.Del("Webhook-Signature")
	for _, tc := range []struct {
		name   string
		header http.Header
		body   []byte
		fail   string
	}{
		{"OK", signed, event(), ""},
		{"ErrExtraField", signed, event("fee", 30), "fee"},
		{"ErrAmountString", signed, event("amount", "10.50"), "amount"},
		{"ErrUnknownEvent", signed, []byte(`{"id":"x","event":"payment.refunded"}`), "no such webhook"},
		{"ErrUnsigned", unsigned, event(), "webhook-signature"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := c.CheckWebhook(tc.header, tc.body)
			switch {
			case tc.fail == "" && err != nil:
				t.Fatalf("the delivery conforms, but: %v", err)
			case tc.fail != "" && err == nil:
				t.Fatal("the delivery does not conform, but the checker passed it")
			case tc.fail != "" && !strings.Contains(err.Error(), tc.fail):
				t.Fatalf("the error should name %q: %v", tc.fail, err)
			}
		})
	}
}

// BenchmarkCheck measures what the check costs an end-to-end exchange: a
// payment's creation, request and answer.
func BenchmarkCheck(b *testing.B) {
	c, err := Load()
	if err != nil {
		b.Fatal(err)
	}
	reqBody := []byte(`{"amount":"10.50","currency":"EUR","customerId":"c-1","card":{"number":"4242424242424242","expiryMonth":"12","expiryYear":"30","cvv":"123","holderName":"Ada"},"billing":{"email":"ada@example.com","phone":"+44 20 7946 0000","country":"GB","address":"1 Analytical St","city":"London","postalCode":"N1 1AA"},"metadata":{"orderId":"1"}}`)
	body, _ := json.Marshal(map[string]any{"data": map[string]any{"id": paymentID, "status": "captured", "amount": "10.50", "currency": "EUR", "provider": "sandbox-eu", "threeDsRequired": false, "threeDsData": nil, "createdAt": "2025-04-24T10:15:30.123Z"}})
	h := headers()
	for b.Loop() {
		req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1:8080/v1/payments", nil)
		req.Header = http.Header{"X-Api-Key": {testKey}, "Content-Type": {"application/json"}, "Idempotency-Key": {"k-1"}}
		if err := c.Check(req, reqBody, 201, h, body); err != nil {
			b.Fatal(err)
		}
	}
}
