package httpapi

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/paygate/paygate/internal/paygate"
)

func TestDecodeJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		raw       string
		wantErr   bool
		wantParam string
	}{
		{"OK", `{"amount":"1","currency":"EUR"}`, false, ""},
		{"OKWhitespace", " \n\t{ \"amount\" : \"1\" }\r\n ", false, ""},
		{"OKEmptyObject", `{}`, false, ""},
		{"OKNested", `{"card":{"number":"4242424242424242"},"billing":{"state":"NY"}}`, false, ""},
		{"OKNulls", `{"amount":null,"card":null,"billing":{"state":null},"metadata":null,"saveCard":null}`, false, ""},
		{"OKMetadataAnyJSON", `{"metadata":{"a":[1,{"b":null}],"c":"d","e":1.5e300}}`, false, ""},
		{"ErrEmpty", ``, true, ""},
		{"ErrWhitespaceOnly", `   `, true, ""},
		{"ErrMalformed", `{"amount":"1",}`, true, ""},
		{"ErrMalformedNested", `{"card":{"number":"1"`, true, ""},
		{"ErrUnterminatedString", `{"amount":"1}`, true, ""},
		{"ErrMissingColon", `{"amount" "1"}`, true, ""},
		{"ErrNotObjectArray", `[{"amount":"1"}]`, true, ""},
		{"ErrNotObjectString", `"amount"`, true, ""},
		{"ErrNotObjectNull", `null`, true, ""},
		{"ErrTrailingObject", `{"amount":"1"}{"amount":"2"}`, true, ""},
		{"ErrTrailingGarbage", `{"amount":"1"} x`, true, ""},
		{"ErrTrailingComma", `{"amount":"1"},`, true, ""},
		{"ErrUnknownField", `{"amount":"1","foo":1}`, true, "foo"},
		{"ErrUnknownFieldNull", `{"foo":null}`, true, "foo"},
		{"ErrUnknownFieldCaseDiffers", `{"AMOUNT":"1"}`, true, "AMOUNT"},
		{"ErrUnknownNestedField", `{"card":{"number":"1","foo":"x"}}`, true, "card.foo"},
		{"ErrUnknownBillingField", `{"billing":{"State":"NY"}}`, true, "billing.State"},
		{"ErrUnknownFieldLongName", `{"` + strings.Repeat("k", 300) + `":1}`, true, strings.Repeat("k", 64) + "…"},
		{"ErrUnknownFieldDigits", `{"card":{"4242424242424242":"x"}}`, true, "card.[redacted]"},
		{"ErrUnknownFieldControl", `{"a\u0000b":1}`, true, "a?b"},
		{"ErrWrongTypeNumber", `{"amount":10.5}`, true, "amount"},
		{"ErrWrongTypeBool", `{"amount":true}`, true, "amount"},
		{"ErrWrongTypeObject", `{"amount":{"value":"1"}}`, true, "amount"},
		{"ErrWrongTypeArray", `{"currency":["EUR"]}`, true, "currency"},
		{"ErrWrongTypeNested", `{"card":{"expiryMonth":12}}`, true, "card.expiryMonth"},
		{"ErrWrongTypeNestedObject", `{"card":"4242424242424242"}`, true, "card"},
		{"ErrWrongTypeNestedArray", `{"billing":[]}`, true, "billing"},
		{"ErrWrongTypeBoolField", `{"saveCard":"true"}`, true, "saveCard"},
		{"ErrWrongTypeBoolNumber", `{"saveCard":1}`, true, "saveCard"},
		{"ErrDuplicateField", `{"amount":"1","amount":"2"}`, true, "amount"},
		{"ErrDuplicateNestedField", `{"card":{"cvv":"1","cvv":"2"}}`, true, "card.cvv"},
		{"ErrDuplicateObject", `{"card":{},"card":{}}`, true, "card"},
		{"OKEscapedBackslashBeforeU0000", `{"merchantRef":"a\\u0000"}`, false, ""},
		{"OKSurrogatePair", `{"merchantRef":"\ud83d\ude00","metadata":{"k":"\uD83D\uDE00"}}`, false, ""},
		{"OKReplacementCharacter", "{\"merchantRef\":\"\xef\xbf\xbd\\ufffd\"}", false, ""},
		{"ErrInvalidUTF8", "{\"merchantRef\":\"a\xc3\"}", true, "merchantRef"},
		{"ErrInvalidUTF8Nested", "{\"billing\":{\"city\":\"\xff\xfe\"}}", true, "billing.city"},
		{"ErrNULEscape", `{"card":{"holderName":"a\u0000"}}`, true, "card.holderName"},
		{"ErrRawNUL", "{\"card\":{\"holderName\":\"a\x00\"}}", true, "card.holderName"},
		{"ErrRawNULOutsideString", "{\"amount\":\"1\"\x00}", true, ""},
		{"ErrLoneHighSurrogate", `{"currency":"\ud800"}`, true, "currency"},
		{"ErrHighSurrogateThenText", `{"currency":"\ud800abcdef"}`, true, "currency"},
		{"ErrHighSurrogatePairedWithHigh", `{"currency":"\ud800\ud800"}`, true, "currency"},
		{"ErrLoneLowSurrogate", `{"currency":"\uDFFF"}`, true, "currency"},
		{"ErrMetadataValue", "{\"metadata\":{\"a\":1,\"note\":\"\xc3\"}}", true, "metadata.note"},
		{"ErrMetadataNested", `{"metadata":{"n":{"x":["\u0000"]}}}`, true, "metadata.n"},
		{"ErrMetadataNestedKey", `{"metadata":{"n":{"\udc00":1}}}`, true, "metadata.n"},
		{"ErrMetadataKey", "{\"metadata\":{\"\xff\":1}}", true, "metadata"},
		{"ErrMetadataNotObject", "{\"metadata\":\"\xff\"}", true, "metadata"},
		{"ErrUnknownFieldInvalidUTF8", "{\"card\":{\"a\xffb\":1}}", true, "card.a?b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var req paymentRequest
			e := decodeJSON([]byte(tt.raw), &req)
			if !tt.wantErr {
				if e != nil {
					t.Fatalf("decodeJSON(%s) = %v", tt.raw, e)
				}
				return
			}
			if e == nil {
				t.Fatalf("decodeJSON(%s) succeeded", tt.raw)
			}
			if e.Code != paygate.CodeInvalidRequest || e.Param != tt.wantParam {
				t.Errorf("decodeJSON(%.80s) = %v, want INVALID_REQUEST param %q", tt.raw, e, tt.wantParam)
			}
			if strings.Contains(e.Message, "424242424242") {
				t.Errorf("message %q shows a card number", e.Message)
			}
		})
	}
}

func TestDecodeJSONValues(t *testing.T) {
	t.Parallel()
	t.Run("OKFieldsSet", func(t *testing.T) {
		t.Parallel()
		var req paymentRequest
		raw := `{"amount":"1.50","card":{"number":"4242424242424242","cvv":"123"},"billing":{"state":"NY"},"metadata":{"a": [1, 2]},"saveCard":true}`
		if e := decodeJSON([]byte(raw), &req); e != nil {
			t.Fatal(e)
		}
		if req.Amount != "1.50" || req.Card == nil || req.Card.Number != "4242424242424242" || req.Card.CVV != "123" ||
			req.Billing == nil || req.Billing.State != "NY" || string(req.Metadata) != `{"a": [1, 2]}` || !req.SaveCard {
			t.Errorf("decoded %+v", req)
		}
	})
	t.Run("OKNullLeavesAbsent", func(t *testing.T) {
		t.Parallel()
		var req paymentRequest
		if e := decodeJSON([]byte(`{"card":null,"billing":null,"metadata":null,"amount":null}`), &req); e != nil {
			t.Fatal(e)
		}
		if req.Card != nil || req.Billing != nil || req.Metadata != nil || req.Amount != "" {
			t.Errorf("decoded %+v", req)
		}
	})
	t.Run("OKPointerNull", func(t *testing.T) {
		t.Parallel()
		var req customerRequest
		if e := decodeJSON([]byte(`{"email":null}`), &req); e != nil || req.Email != nil {
			t.Fatalf("email %v, error %v", req.Email, e)
		}
		if e := decodeJSON([]byte(`{"email":""}`), &req); e != nil || req.Email == nil || *req.Email != "" {
			t.Fatalf("email %v, error %v", req.Email, e)
		}
	})
	t.Run("OKEscapedKey", func(t *testing.T) {
		t.Parallel()
		// A key spelt with escapes is the same key.
		var req refundRequest
		if e := decodeJSON([]byte(`{"\u0072eason":"x"}`), &req); e != nil || req.Reason != "x" {
			t.Fatalf("reason %q, error %v", req.Reason, e)
		}
	})
}

func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{
		`{"amount":"1","currency":"EUR","customerId":"c","card":{"number":"4242424242424242","expiryMonth":"12","expiryYear":"30","cvv":"123","holderName":"A"}}`,
		`{"billing":{"email":"a@b.co"}}`, `{"metadata":{"a":[1]}}`, `{}`, `[]`, `{"a":1}`, `{"card":{"x":1}}`,
		`{"card":null,"amount":"\u00e9\"","saveCard":true, "metadata" : {"x":"}"} }`, `{"billing":{"state":"a\\"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var req paymentRequest
		e := decodeJSON(raw, &req)
		if e == nil {
			// What the strict decoder accepts, encoding/json decodes the
			// same way.
			var std paymentRequest
			if err := json.Unmarshal(raw, &std); err != nil {
				t.Fatalf("decodeJSON accepted %q, encoding/json refuses it: %v", raw, err)
			}
			if string(std.Metadata) == "null" {
				std.Metadata = nil
			}
			if !reflect.DeepEqual(req, std) {
				t.Fatalf("decodeJSON(%q) = %+v, encoding/json gives %+v", raw, req, std)
			}
			_, e = req.validate(validationNow, "203.0.113.7")
		}
		if e != nil && e.Code != paygate.CodeInvalidRequest {
			t.Fatalf("error %v is not INVALID_REQUEST", e)
		}
		if e != nil && req.Card != nil && len(req.Card.Number) >= 12 && strings.Contains(e.Message, req.Card.Number) {
			t.Fatalf("message %q shows the card number", e.Message)
		}
	})
}
