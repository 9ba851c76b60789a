package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/paygate/paygate/internal/paygate"
)

// The fuzz targets drive the request decoders (body → validated input) with
// arbitrary bytes. A decoder may refuse a body only with a *paygate.Error of
// code INVALID_REQUEST (anything else would be a 500), must never panic,
// and what it accepts must be text every store can keep: valid UTF-8
// without U+0000, in every string and in metadata. .ci/fuzz runs each for
// a few seconds; a plain go test runs the seeds.

// hostileLiterals are JSON string literals the seeds put in string fields.
var hostileLiterals = []string{
	"\"a\xc3\"", "\"a\xff\xfeb\"", `"\ud800"`, `"\udc00x"`, `"\ud83d\ude00"`, `"a\u0000b"`, "\"a\x00b\"",
	"\"\xc0\xaf\"", "\"\xed\xa0\x80\"", `"\\u0000"`, `"4242 4242 4242 4242"`, `"\ufffd"`,
	`"\u0034242424242424242"`, `"4242424242424242 123"`, `"2024-01-01 - 2024-02-28"`, `"555-123-0004 555-987-6543"`,
	`"4242  4242  4242  4242"`, `"Apt 5 4111 1111 1111 1111"`,
}

// seedBodies adds body, then body with each hostile literal in place of
// the first string value of each of fields, to f.
func seedBodies(f *testing.F, body []byte, fields ...string) {
	f.Add(body)
	for _, field := range fields {
		key := []byte(`"` + field + `":"`)
		i := bytes.Index(body, key)
		if i < 0 {
			f.Fatalf("seed body has no string field %s", field)
		}
		start := i + len(key) - 1
		end := start + 1 + bytes.IndexByte(body[start+1:], '"') + 1
		for _, lit := range hostileLiterals {
			b := append(append(append([]byte{}, body[:start]...), lit...), body[end:]...)
			f.Add(b)
		}
	}
	for _, junk := range []string{"", "{", "[]", "null", `{"a":1}`, "{\"\xff\":1}", "{\"metadata\":{\"\x00\":1}}", `{"card":{"card":{}}}`,
		`{"metadata":{"4242424242424242":1}}`, `{"metadata":{"n":4.242424242424242e15,"m":[1e999999999,-0.0e-99999999999]}}`} {
		f.Add([]byte(junk))
	}
}

func mustMarshal(f *testing.F, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		f.Fatal(err)
	}
	return b
}

// checkDecoded fails t for an error that is not INVALID_REQUEST, and for
// accepted text that is not UTF-8 or holds U+0000.
func checkDecoded(t *testing.T, out any, e *paygate.Error) {
	t.Helper()
	if e != nil {
		if e.Code != paygate.CodeInvalidRequest {
			t.Fatalf("error %v: code %s, want INVALID_REQUEST", e, e.Code)
		}
		if !cleanText(e.Param) || !cleanText(e.Message) {
			t.Fatalf("error param %q message %q: not clean text", e.Param, e.Message)
		}
		return
	}
	walkText(t, reflect.ValueOf(out), "")
}

func cleanText(s string) bool { return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 }

// walkText checks every string and byte slice (JSON, such as metadata) in v.
func walkText(t *testing.T, v reflect.Value, path string) {
	t.Helper()
	switch v.Kind() {
	case reflect.String:
		if !cleanText(v.String()) {
			t.Fatalf("accepted %s %q: not UTF-8 without NUL", path, v.String())
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			b := v.Bytes()
			if len(b) == 0 {
				return
			}
			if !utf8.Valid(b) {
				t.Fatalf("accepted %s %q: not UTF-8", path, b)
			}
			var doc any
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatalf("accepted %s %q: not JSON: %v", path, b, err)
			}
			walkText(t, reflect.ValueOf(&doc).Elem(), path)
			return
		}
		for i := range v.Len() {
			walkText(t, v.Index(i), path)
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			walkText(t, it.Key(), path+" key")
			walkText(t, it.Value(), path+"."+it.Key().String())
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			walkText(t, v.Elem(), path)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				walkText(t, v.Field(i), path+"."+v.Type().Field(i).Name)
			}
		}
	}
}

func FuzzDecodePayment(f *testing.F) {
	seedBodies(f, mustMarshal(f, validPaymentBody()), "customerId", "holderName", "city", "merchantRef", "orderId", "amount", "currency")
	seedBodies(f, mustMarshal(f, validStoredCardBody()), "storedCardId", "address")
	f.Fuzz(func(t *testing.T, body []byte) {
		var req paymentRequest
		e := decodeJSON(body, &req)
		if e != nil {
			checkDecoded(t, nil, e)
			return
		}
		in, e := req.validate(validationNow, "203.0.113.7")
		checkDecoded(t, in, e)
	})
}

func FuzzDecodeCustomer(f *testing.F) {
	seedBodies(f, []byte(`{"externalId":"cus-1","email":"ada@example.com","metadata":{"tier":"gold","n":[1,"x"]}}`), "externalId", "email", "tier")
	f.Fuzz(func(t *testing.T, body []byte) {
		var req customerRequest
		e := decodeJSON(body, &req)
		if e != nil {
			checkDecoded(t, nil, e)
			return
		}
		ext, email, md, e := req.validate()
		checkDecoded(t, struct {
			Ext   string
			Email *string
			MD    []byte
		}{ext, email, md}, e)
	})
}

func FuzzDecodeRefund(f *testing.F) {
	seedBodies(f, []byte(`{"transactionId":"0190c8e4-7b1a-7c3d-8e2f-123456789abc","amount":"5.50","currency":"EUR","reason":"asked\nnicely"}`), "transactionId", "amount", "reason")
	f.Add([]byte(`{"transactionId":"0190c8e4-7b1a-7c3d-8e2f-123456789abc","amount":"-10.00","currency":"EUR"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		in, cur, e := parseRefund(body)
		checkDecoded(t, struct {
			In  any
			Cur string
		}{in, cur}, e)
	})
}

func FuzzDecodeStoredCard(f *testing.F) {
	seedBodies(f, []byte(`{"card":{"number":"378282246310005","expiryMonth":"12","expiryYear":"30","holderName":"Ada Lovelace"}}`), "number", "holderName", "expiryMonth")
	f.Fuzz(func(t *testing.T, body []byte) {
		var req storedCardRequest
		e := decodeJSON(body, &req)
		if e != nil {
			checkDecoded(t, nil, e)
			return
		}
		c, e := req.validate(validationNow)
		checkDecoded(t, c, e)
	})
}

func FuzzDecodeCapture(f *testing.F) {
	seedBodies(f, []byte(`{"amount":"10.00"}`), "amount")
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var req captureRequest
		e := decodeJSON(body, &req)
		if e != nil {
			checkDecoded(t, nil, e)
			return
		}
		amount, e := req.validate()
		checkDecoded(t, amount, e)
		var v emptyObject // a void's body
		if e := decodeJSON(body, &v); e != nil {
			checkDecoded(t, nil, e)
		}
	})
}

// FuzzQueryText drives the query decoder with arbitrary raw queries.
func FuzzQueryText(f *testing.F) {
	for _, q := range []string{"merchantRef=order-1", "merchantRef=%ff", "merchantRef=%00", "merchantRef=a%c3", "merchantRef=%ed%a0%80",
		"merchantRef=%zz", "merchantRef=a&merchantRef=%ff", "merchantRef=caf%C3%A9", "", "merchantRef"} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, rawQuery string) {
		r := &http.Request{URL: &url.URL{Path: "/v1/payments", RawQuery: rawQuery}}
		v, e := queryText(r, "merchantRef")
		checkDecoded(t, v, e)
	})
}
