package httpapi_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// hostile is a string literal as it appears in a request body, raw bytes
// included: it replaces the placeholder "\"@@\"" of a valid body.
const placeholder = `"@@"`

// paymentBodyWith is benchBody with the value at one place replaced by lit,
// a JSON string literal that may hold raw bytes.
func paymentBodyWith(t *testing.T, path, lit string) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(benchBody(7), &m); err != nil {
		t.Fatal(err)
	}
	obj := m
	parts := strings.Split(path, ".")
	for _, p := range parts[:len(parts)-1] {
		obj = obj[p].(map[string]any)
	}
	obj[parts[len(parts)-1]] = "@@"
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Replace(b, []byte(placeholder), []byte(lit), 1)
}

type apiError struct {
	Error struct {
		Name    string `json:"name"`
		Param   string `json:"param"`
		Message string `json:"message"`
	} `json:"error"`
}

// wantInvalid checks that an answer is 400 INVALID_REQUEST blaming param;
// a param ending in * is an unknown key under that prefix, which must be
// shown as clean text.
func wantInvalid(t *testing.T, what string, code int, body []byte, param string) {
	t.Helper()
	var e apiError
	if err := json.Unmarshal(body, &e); err != nil {
		t.Errorf("%s: status %d, body not JSON (%v): %q", what, code, err, body)
		return
	}
	if prefix, ok := strings.CutSuffix(param, "*"); ok && strings.HasPrefix(e.Error.Param, prefix) &&
		utf8.ValidString(e.Error.Param) && !strings.ContainsAny(e.Error.Param, "\x00\ufffd") {
		param = e.Error.Param // an unknown key, shown cleaned
	}
	if code != http.StatusBadRequest || e.Error.Name != "INVALID_REQUEST" || e.Error.Param != param {
		t.Errorf("%s: status %d %s param %q, want 400 INVALID_REQUEST param %q: %s", what, code, e.Error.Name, e.Error.Param, param, body)
	}
}

// TestHostileTextRefused checks decisions §15 through the real router on
// both engines: invalid UTF-8 anywhere in a JSON body, a lone surrogate
// escape, and U+0000 (raw or escaped) in any string are 400 INVALID_REQUEST
// naming the field, never a 500 (PostgreSQL refuses such text) and never
// stored with U+FFFD in place of the bytes (SQLite keeps anything).
func TestHostileTextRefused(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			s := newBenchServer(t, engine)
			n := 0
			post := func(path string, body []byte) (int, []byte) {
				n++
				w := s.do(http.MethodPost, path, s.secret, "hostile-"+strconv.Itoa(n), body)
				return w.Code, w.Body.Bytes()
			}
			code, body := post("/v1/customers", []byte(`{"externalId":"cus-hostile"}`))
			var cus struct {
				Data struct {
					ID string `json:"id"`
				} `json:"data"`
			}
			if err := json.Unmarshal(body, &cus); err != nil || code != http.StatusCreated {
				t.Fatalf("create customer: %d %s", code, body)
			}
			paymentID := s.create(t, 1, "hostile-payment")

			lits := map[string]string{
				"LoneC3":       "\"a\xc3\"",
				"FFFE":         "\"a\xff\xfeb\"",
				"Surrogate":    `"a\ud800b"`,
				"LowSurrogate": `"\udc00"`,
				"NULEscape":    `"a\u0000b"`,
				"RawNUL":       "\"a\x00b\"",
				"Overlong":     "\"\xc0\xaf\"",
			}
			for name, lit := range lits {
				for _, tc := range []struct {
					path, field, param string
				}{
					{"/v1/payments", "metadata.channel", "metadata.channel"},
					{"/v1/payments", "billing.city", "billing.city"},
					{"/v1/payments", "card.holderName", "card.holderName"},
					{"/v1/payments", "merchantRef", "merchantRef"},
					{"/v1/payments", "customerId", "customerId"},
					{"/v1/payments", "amount", "amount"},
				} {
					code, body := post(tc.path, paymentBodyWith(t, tc.field, lit))
					wantInvalid(t, name+" "+tc.field, code, body, tc.param)
				}
				for _, tc := range []struct {
					path, body, param string
				}{
					{"/v1/customers", `{"externalId":@@}`, "externalId"},
					{"/v1/customers", `{"externalId":"c1","email":@@}`, "email"},
					{"/v1/customers", `{"externalId":"c1","metadata":{"k":@@}}`, "metadata.k"},
					{"/v1/customers", `{"externalId":"c1","metadata":{"k":{"deep":[1,@@]}}}`, "metadata.k"},
					{"/v1/customers", `{"externalId":"c1","metadata":{@@:"v"}}`, "metadata"},
					{"/v1/refunds", `{"transactionId":"` + paymentID + `","amount":"1.00","currency":"EUR","reason":@@}`, "reason"},
					{"/v1/payments/" + paymentID + "/capture", `{"amount":@@}`, "amount"},
					{"/v1/payments/" + paymentID + "/void", `{@@:1}`, "*"},
					{"/v1/customers/" + cus.Data.ID + "/cards", `{"card":{"number":"4242424242424242","expiryMonth":"12","expiryYear":"40","holderName":@@}}`, "card.holderName"},
					{"/v1/customers/" + cus.Data.ID + "/cards", `{"card":{@@:"x"}}`, "card.*"},
				} {
					code, body := post(tc.path, []byte(strings.Replace(tc.body, "@@", lit, 1)))
					wantInvalid(t, name+" "+tc.path+" "+tc.body, code, body, tc.param)
				}
			}

			// Nothing hostile was stored: the customer's external id was
			// refused, so looking it up by the replacement text finds
			// nothing, and a clean upsert still works.
			code, body = post("/v1/customers", []byte(`{"externalId":"a\ufffd\ufffdb"}`))
			if code != http.StatusCreated {
				t.Errorf("a real U+FFFD is text like any other: %d %s", code, body)
			}

			for _, q := range []string{"%ff", "%00", "a%c3", "%ed%a0%80"} {
				w := s.do(http.MethodGet, "/v1/payments?merchantRef="+q, s.secret, "", nil)
				wantInvalid(t, "GET merchantRef="+q, w.Code, w.Body.Bytes(), "merchantRef")
			}
		})
	}
}

// TestNotPositiveAmountMessage checks decisions §15 through the router: a
// negative or zero amount of a payment, a refund or a capture is 400 param
// amount with a message saying that it must be greater than zero.
func TestNotPositiveAmountMessage(t *testing.T) {
	s := newBenchServer(t, "sqlite")
	paymentID := s.create(t, 1, "amount-payment")
	n := 0
	for _, amount := range []string{"-10.00", "0", "0.00", "-1"} {
		for _, tc := range []struct{ path, body string }{
			{"/v1/payments", strings.Replace(string(benchBody(2)), `"amount":"42.00"`, `"amount":"`+amount+`"`, 1)},
			{"/v1/refunds", `{"transactionId":"` + paymentID + `","amount":"` + amount + `","currency":"EUR"}`},
			{"/v1/payments/" + paymentID + "/capture", `{"amount":"` + amount + `"}`},
		} {
			n++
			w := s.do(http.MethodPost, tc.path, s.secret, "amount-"+strconv.Itoa(n), []byte(tc.body))
			wantInvalid(t, tc.path+" "+amount, w.Code, w.Body.Bytes(), "amount")
			var e apiError
			_ = json.Unmarshal(w.Body.Bytes(), &e)
			if !strings.Contains(e.Error.Message, "greater than zero") {
				t.Errorf("%s amount %s: message %q does not say greater than zero", tc.path, amount, e.Error.Message)
			}
		}
	}
}
