package httpapi_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// TestCardNumberTextThroughRouter checks decisions §15 through the real
// router: a top-level metadata key that is a card number is 400 param
// metadata (the key is not echoed), a number whose value is a card number
// is 400 param metadata.<key> however it is written, and ordinary text
// with dates and phone numbers in metadata and billing.address is created.
func TestCardNumberTextThroughRouter(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	n := 0
	post := func(path string, body []byte) (int, []byte) {
		n++
		w := s.do(http.MethodPost, path, s.secret, "cardtext-"+strconv.Itoa(n), body)
		return w.Code, w.Body.Bytes()
	}
	for _, tc := range []struct {
		name, path string
		body       []byte
		param      string // "" when created
	}{
		{"ErrMetadataKey", "/v1/payments", paymentBodyWith(t, "metadata", `{"4242424242424242":"card"}`), "metadata"},
		{"ErrMetadataKeyGrouped", "/v1/payments", paymentBodyWith(t, "metadata", `{"a":1,"pay 4242 4242 4242 4242":true}`), "metadata"},
		{"ErrCustomerMetadataKey", "/v1/customers", []byte(`{"externalId":"c-key","metadata":{"4242-4242-4242-4242":1}}`), "metadata"},
		{"ErrMetadataExponent", "/v1/payments", paymentBodyWith(t, "metadata", `{"n":4.242424242424242e15}`), "metadata.n"},
		{"ErrMetadataNegativeExponent", "/v1/payments", paymentBodyWith(t, "metadata", `{"a":"x","n":42424242424242420000e-4}`), "metadata.n"},
		{"ErrCustomerMetadataExponent", "/v1/customers", []byte(`{"externalId":"c-exp","metadata":{"n":4.242424242424242E+15}}`), "metadata.n"},
		{"OKMetadataDateRange", "/v1/payments", paymentBodyWith(t, "metadata", `{"stay":"2024-01-01 - 2024-02-28"}`), ""},
		{"OKMetadataThreeDates", "/v1/payments", paymentBodyWith(t, "metadata", `{"on":"2024-01-01 2024-02-28 2024-03-31"}`), ""},
		{"OKMetadataPhones", "/v1/payments", paymentBodyWith(t, "metadata", `{"call":"555-123-0004 555-987-6543","us":"+1 555 123 0004"}`), ""},
		{"OKBillingAddressDateRange", "/v1/payments", paymentBodyWith(t, "billing.address", `"2024-01-01 - 2024-02-28"`), ""},
		{"OKBillingAddressThreeDates", "/v1/payments", paymentBodyWith(t, "billing.address", `"2024-01-01 2024-02-28 2024-03-31"`), ""},
		{"OKBillingAddressPhones", "/v1/payments", paymentBodyWith(t, "billing.address", `"555-123-0004 555-987-6543"`), ""},
		{"OKCustomerMetadataPhones", "/v1/customers", []byte(`{"externalId":"c-ok","metadata":{"555-123-0004 555-987-6543":"2024-01-01 - 2024-02-28"}}`), ""},
	} {
		code, body := post(tc.path, tc.body)
		if tc.param == "" {
			if code != http.StatusCreated {
				t.Errorf("%s: status %d, want 201: %s", tc.name, code, body)
			}
			continue
		}
		wantInvalid(t, tc.name, code, body, tc.param)
		if !strings.Contains(string(body), "card numbers do not belong in "+tc.param) || strings.Contains(string(body), "4242") {
			t.Errorf("%s: the message does not say so, or shows digits of the number: %s", tc.name, body)
		}
	}
}
