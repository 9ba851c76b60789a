package httpapi

import (
	"encoding/json"
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// TestCardNumberInFreeText checks decisions §15: a card number in a field
// where none belongs is 400 INVALID_REQUEST naming the field, with a message
// saying so that never shows the number; merchantRef, externalId and
// billing.phone are not scanned.
func TestCardNumberInFreeText(t *testing.T) {
	t.Parallel()
	const pan = "4242 4242 4242 4242"
	b := validPaymentBody
	s := validStoredCardBody
	type check func() (string, string) // param, message ("" when accepted)
	payment := func(body jsonBody) check {
		return func() (string, string) {
			_, e := decodeAndValidatePayment(body.json(t), "203.0.113.7")
			if e == nil {
				return "", ""
			}
			return e.Param, e.Message
		}
	}
	refund := func(reason string) check {
		return func() (string, string) {
			in, _, e := parseRefund(jsonBody{"transactionId": "0190c8e4-7b1a-7c3d-8e2f-123456789abc", "amount": "1", "currency": "EUR", "reason": reason}.json(t))
			_ = in
			if e == nil {
				return "", ""
			}
			return e.Param, e.Message
		}
	}
	customer := func(body jsonBody) check {
		return func() (string, string) {
			var r customerRequest
			e := decodeJSON(body.json(t), &r)
			if e == nil {
				_, _, _, e = r.validate()
			}
			if e == nil {
				return "", ""
			}
			return e.Param, e.Message
		}
	}
	storedCard := func(holder string) check {
		return func() (string, string) {
			var r storedCardRequest
			e := decodeJSON(jsonBody{"card": map[string]any{"number": "5555555555554444", "expiryMonth": "12", "expiryYear": "30", "holderName": holder}}.json(t), &r)
			if e == nil {
				_, e = r.validate(validationNow)
			}
			if e == nil {
				return "", ""
			}
			return e.Param, e.Message
		}
	}
	tests := []struct {
		name      string
		check     check
		wantParam string // "" when the request is accepted
	}{
		{"ErrHolderName", payment(b().set("card.holderName", "Ada "+pan)), "card.holderName"},
		{"ErrStoredCardPaymentBilling", payment(s().set("billing.city", pan)), "billing.city"},
		{"ErrBillingFirstName", payment(b().set("billing.firstName", "4242424242424242")), "billing.firstName"},
		{"ErrBillingLastName", payment(b().set("billing.lastName", "Lovelace 5555-5555-5555-4444")), "billing.lastName"},
		{"ErrBillingEmail", payment(b().set("billing.email", "4242424242424242@example.com")), "billing.email"},
		{"ErrBillingAddress", payment(b().set("billing.address", "pay "+pan+" now")), "billing.address"},
		{"ErrBillingAddressLine2", payment(b().set("billing.addressLine2", "378282246310005")), "billing.addressLine2"},
		{"ErrBillingCity", payment(b().set("billing.city", pan)), "billing.city"},
		{"ErrBillingPostalCode", payment(b().set("billing.postalCode", "4242424242424242")), "billing.postalCode"},
		{"ErrBillingState", payment(b().set("billing.state", pan)), "billing.state"},
		{"ErrMetadataString", payment(b().set("metadata", map[string]any{"note": "card " + pan})), "metadata.note"},
		{"ErrMetadataNumber", payment(b().set("metadata", map[string]any{"a": 1, "n": 4242424242424242})), "metadata.n"},
		{"ErrMetadataNested", payment(b().set("metadata", map[string]any{"cart": []any{"x", map[string]any{"c": pan}}})), "metadata.cart"},
		{"ErrRefundReason", refund("refund to 4242-4242-4242-4242 please"), "reason"},
		{"ErrRefundReasonMultiline", refund("card:\n6011111111111117"), "reason"},
		{"ErrCustomerEmail", customer(jsonBody{"externalId": "c", "email": "4242424242424242@example.com"}), "email"},
		{"ErrCustomerMetadata", customer(jsonBody{"externalId": "c", "metadata": map[string]any{"pan": pan}}), "metadata.pan"},
		{"ErrStoredCardHolderName", storedCard(pan), "card.holderName"},
		// The shapes a review found accepted (a card number with something
		// around it in the same run of digits), and escapes hiding one.
		{"ErrHolderNameCardThenCVV", payment(b().set("card.holderName", "Ada 4242424242424242 123")), "card.holderName"},
		{"ErrBillingAddressAfterHouseNumber", payment(b().set("billing.address", "Apt 5 4111 1111 1111 1111")), "billing.address"},
		{"ErrBillingAddressLine2AfterShortNumber", payment(b().set("billing.addressLine2", "12 4242424242424242")), "billing.addressLine2"},
		{"ErrRefundReasonDashSuffix", refund("4242424242424242-1"), "reason"},
		{"ErrBillingCityDashes", payment(b().set("billing.city", "4242-4242-4242-4242")), "billing.city"},
		{"ErrCustomerEmailCardThenCVV", customer(jsonBody{"externalId": "c", "email": "4242424242424242-123@example.com"}), "email"},
		{"ErrMetadataCardThenCVV", payment(b().set("metadata", map[string]any{"note": "4242424242424242 123"})), "metadata.note"},
		{"ErrMetadataEscaped", payment(b().set("metadata", json.RawMessage(`{"note":"\u0034242424242424242"}`))), "metadata.note"},
		{"ErrMetadataEscapedSeparators", payment(b().set("metadata", json.RawMessage(`{"a":1,"note":"4242\u00204242\u002d4242 4242"}`))), "metadata.note"},
		{"ErrMetadataEscapedNested", payment(b().set("metadata", json.RawMessage(`{"cart":[1,{"c":"x \u0034242 4242 4242 4242"}]}`))), "metadata.cart"},
		{"ErrMetadataEscapedKey", payment(b().set("metadata", json.RawMessage(`{"n\u006fte":"\u0034242424242424242"}`))), "metadata.note"},
		{"ErrMetadataNestedKey", payment(b().set("metadata", json.RawMessage(`{"cart":{"4242424242424242":1}}`))), "metadata.cart"},
		{"ErrMetadataNestedNumber", payment(b().set("metadata", json.RawMessage(`{"cart":[[4242424242424242]]}`))), "metadata.cart"},
		{"ErrCustomerMetadataEscaped", customer(jsonBody{"externalId": "c", "metadata": json.RawMessage(`{"pan":"\u0034242424242424242"}`)}), "metadata.pan"},
		{"ErrHolderNameEscaped", payment(b().set("card.holderName", json.RawMessage(`"Ada \u0034242424242424242"`))), "card.holderName"},
		// A top-level key is scanned too, and blamed on metadata so that
		// the error does not show it; a number is scanned as its value.
		{"ErrMetadataKey", payment(b().set("metadata", map[string]any{"4242424242424242": "x"})), "metadata"},
		{"ErrMetadataKeyGrouped", payment(b().set("metadata", map[string]any{"a": 1, "card 4242 4242 4242 4242": true})), "metadata"},
		{"ErrMetadataKeyEscaped", payment(b().set("metadata", json.RawMessage(`{"\u0034242424242424242":1}`))), "metadata"},
		{"ErrCustomerMetadataKey", customer(jsonBody{"externalId": "c", "metadata": map[string]any{"4242-4242-4242-4242": 1}}), "metadata"},
		{"ErrMetadataExponent", payment(b().set("metadata", json.RawMessage(`{"a":1,"n":4.242424242424242e15}`))), "metadata.n"},
		{"ErrMetadataExponentUpper", payment(b().set("metadata", json.RawMessage(`{"n":-4.242424242424242E+15}`))), "metadata.n"},
		{"ErrMetadataTrailingFraction", payment(b().set("metadata", json.RawMessage(`{"n":4242424242424242.000}`))), "metadata.n"},
		{"ErrMetadataNegativeExponent", payment(b().set("metadata", json.RawMessage(`{"n":42424242424242420000e-4}`))), "metadata.n"},
		{"ErrMetadataNestedExponent", payment(b().set("metadata", json.RawMessage(`{"cart":[1,{"n":3.78282246310005e14}]}`))), "metadata.cart"},
		{"ErrCustomerMetadataExponent", customer(jsonBody{"externalId": "c", "metadata": json.RawMessage(`{"n":4.242424242424242e15}`)}), "metadata.n"},
		{"OKMetadataExponentNotLuhn", payment(b().set("metadata", json.RawMessage(`{"n":4.242424242424241e15}`))), ""},
		{"OKMetadataExponentFraction", payment(b().set("metadata", json.RawMessage(`{"n":4.2424242424242425e15}`))), ""},
		{"OKMetadataHugeExponents", payment(b().set("metadata", json.RawMessage(`{"n":[1e999999999,-1e-999999999,0e99999999999999999999,4e99999999999999999999]}`))), ""},
		{"OKMetadataKey", payment(b().set("metadata", map[string]any{"2024-01-01 - 2024-02-28": "x"})), ""},
		// Ordinary text an earlier rule refused: dates, phone numbers.
		{"OKMetadataDateRange", payment(b().set("metadata", map[string]any{"stay": "2024-01-01 - 2024-02-28"})), ""},
		{"OKMetadataThreeDates", payment(b().set("metadata", map[string]any{"on": "2024-01-01 2024-02-28 2024-03-31"})), ""},
		{"OKMetadataPhones", payment(b().set("metadata", map[string]any{"call": "555-123-0004 555-987-6543"})), ""},
		{"OKBillingAddressDateRange", payment(b().set("billing.address", "2024-01-01 - 2024-02-28")), ""},
		{"OKBillingAddressPhones", payment(b().set("billing.address", "555-123-0004 555-987-6543")), ""},
		{"OKBillingAddressDoubleSpaces", payment(b().set("billing.address", "4242  4242  4242  4242")), ""},
		{"OKMetadataLongID", payment(b().set("metadata", map[string]any{"orderId": "12345678901234567890"})), ""},
		{"OKMetadataDate", payment(b().set("metadata", map[string]any{"on": "2023-11-25"})), ""},
		{"OKMetadataEscapedNotLuhn", payment(b().set("metadata", json.RawMessage(`{"note":"\u0034242424242424241"}`))), ""},
		{"OKMetadataNumbers", payment(b().set("metadata", json.RawMessage(`{"n":[12,-3.5e2,424242424242,true,null,"4242424242424241 124"]}`))), ""},
		{"OKMerchantRef", payment(b().set("merchantRef", "4242424242424242")), ""},
		{"OKExternalID", customer(jsonBody{"externalId": "4242424242424242"}), ""},
		{"OKPhone", payment(b().set("billing.phone", "4242424242424242")), ""},
		{"OKNotLuhn", payment(b().set("billing.address", "4242 4242 4242 4241")), ""},
		{"OKLongRun", payment(b().set("metadata", map[string]any{"orderId": "42424242424242421234"})), ""},
		{"OKStartsWith9", refund("ticket 9000000000000001"), ""},
		{"OKShort", payment(b().set("billing.address", "424242424242")), ""},
		{"OKMetadataKeyDigits", payment(b().set("metadata", map[string]any{"k": "12 items"})), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			param, msg := tt.check()
			if param != tt.wantParam {
				t.Fatalf("param %q (%s), want %q", param, msg, tt.wantParam)
			}
			if tt.wantParam == "" {
				return
			}
			if want := "card numbers do not belong in " + tt.wantParam; !strings.Contains(msg, want) {
				t.Errorf("message %q, want it to contain %q", msg, want)
			}
			for _, digits := range []string{"4242", "5555", "3782", "6011"} {
				if strings.Contains(msg, digits) {
					t.Errorf("message %q shows digits of the number", msg)
				}
			}
		})
	}
}

// TestIntegerDigits checks the integer value of JSON numbers that
// jsonHoldsCardNumber scans, against math/big.
func TestIntegerDigits(t *testing.T) {
	t.Parallel()
	tests := []struct{ lit, want string }{
		{"4.242424242424242e15", "4242424242424242"},
		{"4242424242424242.0", "4242424242424242"},
		{"0.4242424242424242e16", "4242424242424242"},
		{"-4.242424242424242E+15", "4242424242424242"},
		{"42424242424242420000e-4", "4242424242424242"},
		{"4242424242424242", "4242424242424242"},
		{"00.0004242424242424242000e19", "4242424242424242"},
		{"12.5e1", "125"},
		{"1e18", "1000000000000000000"},
		{"9999999999999999999", "9999999999999999999"},
		{"1e19", ""},
		{"12345678901234567890", ""},
		{"4.2424242424242425e15", ""},
		{"1.5", ""},
		{"0", ""},
		{"-0.0e5", ""},
		{"1e999999999", ""},
		{"1e-999999999", ""},
		{"1e99999999999999999999999", ""},
		{"123456789e-99999999999999999999999", ""},
	}
	for _, tt := range tests {
		var buf [maxIntegerDigits]byte
		if got := string(integerDigits([]byte(tt.lit), &buf)); got != tt.want {
			t.Errorf("integerDigits(%s) = %q, want %q", tt.lit, got, tt.want)
		}
	}
	r := rand.New(rand.NewPCG(15, 17))
	for range 20000 {
		lit := strconv.Itoa(r.IntN(1_000_000_000))
		if r.IntN(2) == 0 {
			lit += "." + strings.Repeat("0", r.IntN(3)) + strconv.Itoa(r.IntN(100_000))
		}
		if r.IntN(3) > 0 {
			lit += "e" + strconv.Itoa(r.IntN(30)-12)
		}
		var want string
		if v, ok := new(big.Rat).SetString(lit); ok && v.IsInt() && v.Sign() != 0 && len(v.Num().String()) <= maxIntegerDigits {
			want = v.Num().String()
		}
		var buf [maxIntegerDigits]byte
		if got := string(integerDigits([]byte(lit), &buf)); got != want {
			t.Fatalf("integerDigits(%s) = %q, math/big says %q", lit, got, want)
		}
	}
}
