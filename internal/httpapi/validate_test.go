package httpapi

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/payment"
)

// validationNow is the clock of the validation tests: mid-June 2026, UTC.
var validationNow = time.Date(2026, 6, 15, 12, 0, 0, 0, time.UTC)

const validationPAN = "4242424242424242"

// jsonBody is a request body under construction: a JSON object as Go maps.
type jsonBody map[string]any

func validPaymentBody() jsonBody {
	return jsonBody{
		"amount":     "10.50",
		"currency":   "eur",
		"customerId": "cus_1",
		"card": map[string]any{
			"number":      validationPAN,
			"expiryMonth": "12",
			"expiryYear":  "30",
			"cvv":         "123",
			"holderName":  "Ada Lovelace",
		},
		"billing": map[string]any{
			"firstName":  "Ada",
			"lastName":   "Lovelace",
			"email":      "ada@example.com",
			"phone":      "+44 20 7946 0000",
			"country":    "gb",
			"address":    "1 Example Street",
			"city":       "London",
			"postalCode": "NW1 6XE",
		},
		"merchantRef":       "order-1",
		"returnUrl":         "https://shop.example/return?x=1",
		"deviceFingerprint": "fp-123",
		"metadata":          map[string]any{"orderId": "1", "tags": []any{"a", "b"}},
	}
}

func validStoredCardBody() jsonBody {
	b := validPaymentBody()
	delete(b, "card")
	b["paymentMethod"] = "stored_card"
	b["storedCardId"] = "0190C8E4-7B1A-7C3D-8E2F-123456789ABC"
	return b
}

// set sets a dotted path; value omitField removes it.
func (b jsonBody) set(path string, value any) jsonBody {
	m := map[string]any(b)
	parts := strings.Split(path, ".")
	for _, p := range parts[:len(parts)-1] {
		m = m[p].(map[string]any)
	}
	last := parts[len(parts)-1]
	if value == omitField {
		delete(m, last)
	} else {
		m[last] = value
	}
	return b
}

type omitMarker struct{}

var omitField = omitMarker{}

func (b jsonBody) json(t testing.TB) []byte {
	t.Helper()
	out, err := json.Marshal(map[string]any(b))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// decodeAndValidatePayment runs a body through the path of a handler.
func decodeAndValidatePayment(raw []byte, clientIP string) (payment.CreateInput, *paygate.Error) {
	var req paymentRequest
	if e := decodeJSON(raw, &req); e != nil {
		return payment.CreateInput{}, e
	}
	return req.validate(validationNow, clientIP)
}

func metadataKeys(n, keyLen int) map[string]any {
	m := make(map[string]any, n)
	for i := range n {
		k := fmt.Sprintf("%0*d", keyLen, i)
		m[k] = i
	}
	return m
}

type paymentCase struct {
	name      string
	body      jsonBody
	wantParam string // "" for success
}

func paymentErrorCases() []paymentCase {
	b := validPaymentBody
	s := validStoredCardBody
	return []paymentCase{
		// amount and currency
		{"ErrAmountMissing", b().set("amount", omitField), "amount"},
		{"ErrAmountNull", b().set("amount", nil), "amount"},
		{"ErrAmountNumber", b().set("amount", 10.5), "amount"},
		{"ErrAmountSyntax", b().set("amount", "10,50"), "amount"},
		{"ErrAmountNegative", b().set("amount", "-1"), "amount"},
		{"ErrAmountZero", b().set("amount", "0.00"), "amount"},
		{"ErrAmountTooLarge", b().set("amount", "1000000000.00"), "amount"},
		{"ErrAmountTooPrecise", b().set("amount", "10.505"), "amount"},
		{"ErrAmountTooPreciseForJPY", b().set("amount", "10.5").set("currency", "JPY"), "amount"},
		{"ErrAmountSyntaxBeforeCurrency", b().set("amount", "x").set("currency", "XXX"), "amount"},
		{"ErrCurrencyMissing", b().set("currency", omitField), "currency"},
		{"ErrCurrencyNumber", b().set("currency", 978), "currency"},
		{"ErrCurrencyUnknown", b().set("currency", "ABC"), "currency"},
		{"ErrCurrencyNotMoney", b().set("currency", "XAU"), "currency"},
		{"ErrCurrencyTest", b().set("currency", "XTS"), "currency"},
		{"ErrCurrencyWithdrawn", b().set("currency", "HRK"), "currency"},
		{"ErrCurrencyHistoric", b().set("currency", "DEM"), "currency"},
		{"ErrCurrencyPadded", b().set("currency", " EUR"), "currency"},
		// paymentMethod and customerId
		{"ErrPaymentMethod", b().set("paymentMethod", "paypal"), "paymentMethod"},
		{"ErrPaymentMethodCase", b().set("paymentMethod", "CARD"), "paymentMethod"},
		{"ErrCustomerIDMissing", b().set("customerId", omitField), "customerId"},
		{"ErrCustomerIDBlank", b().set("customerId", "   "), "customerId"},
		{"ErrCustomerIDTooLong", b().set("customerId", strings.Repeat("c", 256)), "customerId"},
		{"ErrCustomerIDControl", b().set("customerId", "a\nb"), "customerId"},
		// card
		{"ErrCardMissing", b().set("card", omitField), "card"},
		{"ErrCardNull", b().set("card", nil), "card"},
		{"ErrCardNotObject", b().set("card", validationPAN), "card"},
		{"ErrCardUnknownField", b().set("card.foo", "x"), "card.foo"},
		{"ErrCardNumberMissing", b().set("card.number", omitField), "card.number"},
		{"ErrCardNumberNotString", b().set("card.number", 4242424242424242), "card.number"},
		{"ErrCardNumberTooShort", b().set("card.number", "424242424242"), "card.number"},
		{"ErrCardNumberTooLong", b().set("card.number", "42424242424242424242"), "card.number"},
		{"ErrCardNumberSpaces", b().set("card.number", "4242 4242 4242 4242"), "card.number"},
		{"ErrCardNumberDashes", b().set("card.number", "4242-4242-4242-4242"), "card.number"},
		{"ErrLuhn", b().set("card.number", "4242424242424241"), "card.number"},
		{"ErrExpiryMonthMissing", b().set("card.expiryMonth", omitField), "card.expiryMonth"},
		{"ErrExpiryMonthOneDigit", b().set("card.expiryMonth", "1"), "card.expiryMonth"},
		{"ErrExpiryMonthZero", b().set("card.expiryMonth", "00"), "card.expiryMonth"},
		{"ErrExpiryMonth13", b().set("card.expiryMonth", "13"), "card.expiryMonth"},
		{"ErrExpiryMonthNumber", b().set("card.expiryMonth", 12), "card.expiryMonth"},
		{"ErrExpiryYearMissing", b().set("card.expiryYear", omitField), "card.expiryYear"},
		{"ErrExpiryYearFourDigits", b().set("card.expiryYear", "2030"), "card.expiryYear"},
		{"ErrExpiryYearOneDigit", b().set("card.expiryYear", "3"), "card.expiryYear"},
		{"ErrExpiryYearLetters", b().set("card.expiryYear", "3O"), "card.expiryYear"},
		{"ErrCardExpired", b().set("card.expiryMonth", "05").set("card.expiryYear", "26"), "card.expiryYear"},
		{"ErrCardExpiredLastYear", b().set("card.expiryYear", "25"), "card.expiryYear"},
		{"ErrCVVMissing", b().set("card.cvv", omitField), "card.cvv"},
		{"ErrCVVTooShort", b().set("card.cvv", "12"), "card.cvv"},
		{"ErrCVVTooLong", b().set("card.cvv", "12345"), "card.cvv"},
		{"ErrCVVLetters", b().set("card.cvv", "12a"), "card.cvv"},
		{"ErrCVVFourDigitsVisa", b().set("card.cvv", "1234"), "card.cvv"},
		{"ErrCVVFourDigitsMastercard", b().set("card.number", "5555555555554444").set("card.cvv", "1234"), "card.cvv"},
		{"ErrCVVThreeDigitsAmex", b().set("card.number", "378282246310005").set("card.cvv", "123"), "card.cvv"},
		{"ErrCVVFiveDigitsAmex", b().set("card.number", "371449635398431").set("card.cvv", "12345"), "card.cvv"},
		{"ErrCVVLettersAmex", b().set("card.number", "378282246310005").set("card.cvv", "12a4"), "card.cvv"},
		{"ErrHolderNameMissing", b().set("card.holderName", omitField), "card.holderName"},
		{"ErrHolderNameBlank", b().set("card.holderName", " "), "card.holderName"},
		{"ErrHolderNameTooLong", b().set("card.holderName", strings.Repeat("é", 101)), "card.holderName"},
		{"ErrHolderNameControl", b().set("card.holderName", "Ada\x00"), "card.holderName"},
		{"ErrStoredCardIDOnCardPayment", b().set("storedCardId", "0190c8e4-7b1a-7c3d-8e2f-123456789abc"), "storedCardId"},
		// stored_card
		{"ErrStoredCardWithCard", s().set("card", validPaymentBody()["card"]), "card"},
		{"ErrStoredCardIDMissing", s().set("storedCardId", omitField), "storedCardId"},
		{"ErrStoredCardIDNotUUID", s().set("storedCardId", "card_123"), "storedCardId"},
		{"ErrStoredCardIDBraces", s().set("storedCardId", "{0190c8e4-7b1a-7c3d-8e2f-123456789abc}"), "storedCardId"},
		{"ErrStoredCardIDNoHyphens", s().set("storedCardId", "0190c8e47b1a7c3d8e2f123456789abc"), "storedCardId"},
		{"ErrSaveCardOnStoredCard", s().set("saveCard", true), "saveCard"},
		{"ErrSaveCardNotBool", b().set("saveCard", "true"), "saveCard"},
		// billing
		{"ErrBillingNotObject", b().set("billing", []any{}), "billing"},
		{"ErrBillingUnknownField", b().set("billing.foo", "x"), "billing.foo"},
		{"ErrBillingFirstNameTooLong", b().set("billing.firstName", strings.Repeat("a", 101)), "billing.firstName"},
		{"ErrBillingLastNameNumber", b().set("billing.lastName", 1), "billing.lastName"},
		{"ErrBillingEmailMissing", b().set("billing.email", omitField), "billing.email"},
		{"ErrBillingEmailNoAt", b().set("billing.email", "ada.example.com"), "billing.email"},
		{"ErrBillingEmailNoDomainDot", b().set("billing.email", "ada@localhost"), "billing.email"},
		{"ErrBillingEmailDisplayName", b().set("billing.email", "Ada <ada@example.com>"), "billing.email"},
		{"ErrBillingEmailSpace", b().set("billing.email", "ada lovelace@example.com"), "billing.email"},
		{"ErrBillingEmailIPLiteral", b().set("billing.email", "ada@[127.0.0.1]"), "billing.email"},
		{"ErrBillingEmailDoubleDot", b().set("billing.email", "ada@example..com"), "billing.email"},
		{"ErrBillingEmailHyphenLabel", b().set("billing.email", "ada@-example.com"), "billing.email"},
		{"ErrBillingEmailNumericTLD", b().set("billing.email", "ada@example.123"), "billing.email"},
		{"ErrBillingEmailTooLong", b().set("billing.email", strings.Repeat("a", 64)+"@"+strings.Repeat("b", 190)+".com"), "billing.email"},
		{"ErrBillingEmailLocalTooLong", b().set("billing.email", strings.Repeat("a", 65)+"@example.com"), "billing.email"},
		{"ErrBillingPhoneMissing", b().set("billing.phone", omitField), "billing.phone"},
		{"ErrBillingPhoneTooShort", b().set("billing.phone", "+123"), "billing.phone"},
		{"ErrBillingPhoneTooLong", b().set("billing.phone", "+"+strings.Repeat("1", 32)), "billing.phone"},
		{"ErrBillingPhoneLetters", b().set("billing.phone", "+44 CALL ME"), "billing.phone"},
		{"ErrBillingPhoneNoDigit", b().set("billing.phone", "+ - ()"), "billing.phone"},
		{"ErrBillingCountryMissing", b().set("billing.country", omitField), "billing.country"},
		{"ErrBillingCountryZZ", b().set("billing.country", "ZZ"), "billing.country"},
		{"ErrBillingCountryEU", b().set("billing.country", "EU"), "billing.country"},
		{"ErrBillingCountryUN", b().set("billing.country", "UN"), "billing.country"},
		{"ErrBillingCountryNumeric", b().set("billing.country", "276"), "billing.country"},
		{"ErrBillingCountryNumericWorld", b().set("billing.country", "001"), "billing.country"},
		{"ErrBillingCountryAlpha3", b().set("billing.country", "DEU"), "billing.country"},
		{"ErrBillingCountryUK", b().set("billing.country", "UK"), "billing.country"},
		{"ErrBillingCountryXK", b().set("billing.country", "XK"), "billing.country"},
		{"ErrBillingCountryDeletedYU", b().set("billing.country", "YU"), "billing.country"},
		{"ErrBillingCountryDeletedAN", b().set("billing.country", "AN"), "billing.country"},
		{"ErrBillingCountryPrivateUse", b().set("billing.country", "QM"), "billing.country"},
		{"ErrBillingAddressMissing", b().set("billing.address", omitField), "billing.address"},
		{"ErrBillingAddressLine2TooLong", b().set("billing.addressLine2", strings.Repeat("a", 256)), "billing.addressLine2"},
		{"ErrBillingCityMissing", b().set("billing.city", omitField), "billing.city"},
		{"ErrBillingPostalCodeMissing", b().set("billing.postalCode", omitField), "billing.postalCode"},
		{"ErrBillingPostalCodeTooLong", b().set("billing.postalCode", strings.Repeat("1", 21)), "billing.postalCode"},
		{"ErrBillingStateMissingUS", b().set("billing.country", "US"), "billing.state"},
		{"ErrBillingStateMissingCA", b().set("billing.country", "ca"), "billing.state"},
		{"ErrBillingStateBlankUS", b().set("billing.country", "US").set("billing.state", " "), "billing.state"},
		{"ErrBillingIPAddressIPv6", b().set("billing.ipAddress", "2001:db8::1"), "billing.ipAddress"},
		{"ErrBillingIPAddressMapped", b().set("billing.ipAddress", "::ffff:192.0.2.1"), "billing.ipAddress"},
		{"ErrBillingIPAddressLeadingZero", b().set("billing.ipAddress", "192.0.2.01"), "billing.ipAddress"},
		{"ErrBillingIPAddressGarbage", b().set("billing.ipAddress", "not an ip"), "billing.ipAddress"},
		{"ErrBillingDOBFormat", b().set("billing.dob", "15/06/1990"), "billing.dob"},
		{"ErrBillingDOBNotADate", b().set("billing.dob", "1990-02-30"), "billing.dob"},
		{"ErrBillingDOBShortMonth", b().set("billing.dob", "1990-2-03"), "billing.dob"},
		{"ErrBillingDOBToday", b().set("billing.dob", "2026-06-15"), "billing.dob"},
		{"ErrBillingDOBFuture", b().set("billing.dob", "2030-01-01"), "billing.dob"},
		{"ErrBillingDOBTooOld", b().set("billing.dob", "1899-12-31"), "billing.dob"},
		{"ErrBillingGender", b().set("billing.gender", "X"), "billing.gender"},
		{"ErrBillingGenderLowerCase", b().set("billing.gender", "f"), "billing.gender"},
		// the optional top-level fields
		{"ErrMerchantRefTooLong", b().set("merchantRef", strings.Repeat("r", 256)), "merchantRef"},
		{"ErrReturnURLRelative", b().set("returnUrl", "/return"), "returnUrl"},
		{"ErrReturnURLScheme", b().set("returnUrl", "ftp://shop.example/"), "returnUrl"},
		{"ErrReturnURLJavascript", b().set("returnUrl", "javascript:alert(1)"), "returnUrl"},
		{"ErrReturnURLNoHost", b().set("returnUrl", "https:///return"), "returnUrl"},
		{"ErrReturnURLOpaque", b().set("returnUrl", "https:shop.example"), "returnUrl"},
		{"ErrReturnURLUserinfo", b().set("returnUrl", "https://user:pw@shop.example/"), "returnUrl"},
		{"ErrReturnURLSpace", b().set("returnUrl", "https://shop.example/a b"), "returnUrl"},
		{"ErrReturnURLTooLong", b().set("returnUrl", "https://shop.example/"+strings.Repeat("a", 2048)), "returnUrl"},
		{"ErrDeviceFingerprintTooLong", b().set("deviceFingerprint", strings.Repeat("f", 129)), "deviceFingerprint"},
		{"ErrMetadataArray", b().set("metadata", []any{1}), "metadata"},
		{"ErrMetadataString", b().set("metadata", "{}"), "metadata"},
		{"ErrMetadataTooManyKeys", b().set("metadata", metadataKeys(51, 3)), "metadata"},
		{"ErrMetadataKeyTooLong", b().set("metadata", metadataKeys(1, 41)), "metadata"},
		{"ErrMetadataKeyEmpty", b().set("metadata", map[string]any{"": 1}), "metadata"},
		{"ErrMetadataTooLarge", b().set("metadata", map[string]any{"k": strings.Repeat("v", 8192)}), "metadata"},
		{"ErrUnknownField", b().set("foo", 1), "foo"},
		{"ErrUnknownFieldCase", b().set("Amount", "10.50"), "Amount"},
	}
}

func TestPaymentValidate(t *testing.T) {
	t.Parallel()
	for _, tt := range paymentErrorCases() {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			raw := tt.body.json(t)
			in, e := decodeAndValidatePayment(raw, "203.0.113.7")
			if e == nil {
				t.Fatalf("no error for %s; input %+v", raw, in)
			}
			if e.Code != paygate.CodeInvalidRequest || e.Param != tt.wantParam {
				t.Fatalf("error %v, want INVALID_REQUEST param %q", e, tt.wantParam)
			}
			if e.Message == "" {
				t.Error("empty message")
			}
			if strings.Contains(e.Message, validationPAN) || strings.Contains(e.Param, validationPAN) {
				t.Errorf("error %v contains the card number", e)
			}
		})
	}
}

// TestPaymentValidateErrorsNeverShowCardNumber sends the card number in
// every place it could leak from: as the value of fields of each type, as a
// JSON number, as an unknown field's name and value, and checks that no
// error message or param contains it.
func TestPaymentValidateErrorsNeverShowCardNumber(t *testing.T) {
	t.Parallel()
	pans := []string{validationPAN, "4242424242424241", "424242424242424242424"}
	var cases []jsonBody
	for _, pan := range pans {
		cases = append(cases,
			validPaymentBody().set("card.number", pan).set("card.expiryYear", "20"),
			validPaymentBody().set("card.number", pan).set("card.cvv", "x"),
			validPaymentBody().set("card.number", pan+" "),
			validPaymentBody().set("card.cvv", pan),
			validPaymentBody().set("card.expiryYear", pan),
			validPaymentBody().set("card.expiryMonth", pan),
			validPaymentBody().set("card.holderName", pan+strings.Repeat("x", 100)),
			validPaymentBody().set("amount", pan),
			validPaymentBody().set("currency", pan),
			validPaymentBody().set("customerId", pan+strings.Repeat("x", 255)),
			validPaymentBody().set("storedCardId", pan),
			validPaymentBody().set("billing.phone", pan+pan+pan),
			validPaymentBody().set("billing.email", pan),
			validPaymentBody().set("billing.dob", pan),
			validPaymentBody().set("returnUrl", pan),
			validPaymentBody().set("metadata", pan),
			validPaymentBody().set(pan, 1),
			validPaymentBody().set("card."+pan, pan),
			validPaymentBody().set("card.x"+pan+"x", pan),
			validPaymentBody().set("foo", pan),
			validStoredCardBody().set("storedCardId", pan),
		)
	}
	raws := make([][]byte, 0, len(cases)+2)
	for _, c := range cases {
		raws = append(raws, c.json(t))
	}
	raws = append(raws,
		[]byte(`{"card":{"number":`+validationPAN+`}}`),
		[]byte(`{"card":{"number":"`+validationPAN+`"`),
		[]byte(`{"card":{"number":"`+validationPAN+`"}} "`+validationPAN+`"`),
		[]byte(`"`+validationPAN+`"`),
	)
	for _, raw := range raws {
		_, e := decodeAndValidatePayment(raw, "203.0.113.7")
		if e == nil {
			t.Errorf("no error for %.60s…", raw)
			continue
		}
		for _, pan := range pans {
			if strings.Contains(e.Message, pan[:13]) || strings.Contains(e.Param, pan[:13]) || strings.Contains(e.Error(), pan[:13]) {
				t.Errorf("error %q (param %q) shows a card number", e.Message, e.Param)
			}
		}
	}
}

func TestPaymentValidateOK(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		in, e := decodeAndValidatePayment(validPaymentBody().json(t), "203.0.113.7")
		if e != nil {
			t.Fatal(e)
		}
		want := payment.CreateInput{
			Amount:             paygate.Money{Amount: 1050, Currency: "EUR"},
			AmountText:         "10.50",
			Method:             paygate.MethodCard,
			CustomerExternalID: "cus_1",
			Card: &paygate.Card{
				Number: validationPAN, ExpMonth: 12, ExpYear: 2030, CVV: "123", HolderName: "Ada Lovelace",
			},
			Billing: &paygate.Billing{
				FirstName: "Ada", LastName: "Lovelace", Email: "ada@example.com", Phone: "+44 20 7946 0000",
				Country: "GB", Address: "1 Example Street", City: "London", PostalCode: "NW1 6XE",
				IPAddress: "203.0.113.7",
			},
			MerchantRef:       "order-1",
			ReturnURL:         "https://shop.example/return?x=1",
			DeviceFingerprint: "fp-123",
			Metadata:          []byte(`{"orderId":"1","tags":["a","b"]}`),
		}
		assertCreateInput(t, in, want)
	})
	t.Run("OKMinimal", func(t *testing.T) {
		t.Parallel()
		raw := []byte(`{"amount":"100","currency":"JPY","customerId":"c","card":{"number":"5555555555554444","expiryMonth":"06","expiryYear":"26","cvv":"123","holderName":"A"}}`)
		in, e := decodeAndValidatePayment(raw, "203.0.113.7")
		if e != nil {
			t.Fatal(e)
		}
		want := payment.CreateInput{
			Amount:             paygate.Money{Amount: 100, Currency: "JPY"},
			AmountText:         "100",
			Method:             paygate.MethodCard,
			CustomerExternalID: "c",
			Card:               &paygate.Card{Number: "5555555555554444", ExpMonth: 6, ExpYear: 2026, CVV: "123", HolderName: "A"},
		}
		assertCreateInput(t, in, want)
	})
	t.Run("OKNullsAreAbsent", func(t *testing.T) {
		t.Parallel()
		raw := []byte(`{"amount":"1.5","currency":"usd","paymentMethod":null,"customerId":"c","storedCardId":null,
			"card":{"number":"378282246310005","expiryMonth":"01","expiryYear":"99","cvv":"1234","holderName":"A"},
			"billing":null,"merchantRef":null,"returnUrl":null,"deviceFingerprint":null,"metadata":null,"saveCard":null}`)
		in, e := decodeAndValidatePayment(raw, "203.0.113.7")
		if e != nil {
			t.Fatal(e)
		}
		if in.Method != paygate.MethodCard || in.Billing != nil || in.Metadata != nil || in.SaveCard || in.Amount.Amount != 150 {
			t.Errorf("input %+v", in)
		}
	})
	t.Run("OKStoredCard", func(t *testing.T) {
		t.Parallel()
		in, e := decodeAndValidatePayment(validStoredCardBody().set("saveCard", false).json(t), "203.0.113.7")
		if e != nil {
			t.Fatal(e)
		}
		if in.Method != paygate.MethodStoredCard || in.Card != nil || in.StoredCardID != "0190c8e4-7b1a-7c3d-8e2f-123456789abc" {
			t.Errorf("input %+v", in)
		}
	})
	t.Run("OKSaveCard", func(t *testing.T) {
		t.Parallel()
		in, e := decodeAndValidatePayment(validPaymentBody().set("saveCard", true).json(t), "203.0.113.7")
		if e != nil || !in.SaveCard {
			t.Fatalf("input %+v, error %v", in, e)
		}
	})
	t.Run("OKAmexFourDigitCVV", func(t *testing.T) {
		t.Parallel()
		for _, pan := range []string{"378282246310005", "371449635398431", "340000000000009"} {
			in, e := decodeAndValidatePayment(validPaymentBody().set("card.number", pan).set("card.cvv", "0123").json(t), "203.0.113.7")
			if e != nil || in.Card.CVV.Reveal() != "0123" {
				t.Fatalf("amex %s with a 4-digit cvv: error %v", pan[:2], e)
			}
		}
	})
	t.Run("OKKWDThreeDecimals", func(t *testing.T) {
		t.Parallel()
		in, e := decodeAndValidatePayment(validPaymentBody().set("amount", "1.23").set("currency", "kwd").json(t), "203.0.113.7")
		if e != nil || in.Amount != (paygate.Money{Amount: 1230, Currency: "KWD"}) || in.AmountText != "1.23" {
			t.Fatalf("input %+v, error %v", in, e)
		}
	})
	t.Run("OKAmountTextAsSubmitted", func(t *testing.T) {
		t.Parallel()
		in, e := decodeAndValidatePayment(validPaymentBody().set("amount", "10.5").json(t), "203.0.113.7")
		if e != nil || in.AmountText != "10.5" || in.Amount.Amount != 1050 {
			t.Fatalf("input %+v, error %v", in, e)
		}
	})
	t.Run("OKExpiresEndOfThisMonth", func(t *testing.T) {
		t.Parallel()
		_, e := decodeAndValidatePayment(validPaymentBody().set("card.expiryMonth", "06").set("card.expiryYear", "26").json(t), "203.0.113.7")
		if e != nil {
			t.Fatal(e)
		}
	})
	t.Run("OKBillingStateUS", func(t *testing.T) {
		t.Parallel()
		in, e := decodeAndValidatePayment(validPaymentBody().set("billing.country", "us").set("billing.state", "NY").json(t), "203.0.113.7")
		if e != nil || in.Billing.Country != "US" || in.Billing.State != "NY" {
			t.Fatalf("input %+v, error %v", in.Billing, e)
		}
	})
	t.Run("OKBillingAllFields", func(t *testing.T) {
		t.Parallel()
		b := validPaymentBody().set("billing.addressLine2", "Flat 2").set("billing.state", "Greater London").
			set("billing.ipAddress", "198.51.100.4").set("billing.dob", "1990-02-28").set("billing.gender", "F")
		in, e := decodeAndValidatePayment(b.json(t), "203.0.113.7")
		if e != nil {
			t.Fatal(e)
		}
		g := in.Billing
		if g.AddressLine2 != "Flat 2" || g.State != "Greater London" || g.IPAddress != "198.51.100.4" || g.DOB != "1990-02-28" || g.Gender != "F" {
			t.Errorf("billing %+v", g)
		}
	})
	t.Run("OKBillingIPDefaultsToClient", func(t *testing.T) {
		t.Parallel()
		in, e := decodeAndValidatePayment(validPaymentBody().json(t), "::ffff:198.51.100.9")
		if e != nil || in.Billing.IPAddress != "198.51.100.9" {
			t.Fatalf("billing %+v, error %v", in.Billing, e)
		}
	})
	t.Run("OKBillingIPv6ClientLeavesEmpty", func(t *testing.T) {
		t.Parallel()
		in, e := decodeAndValidatePayment(validPaymentBody().json(t), "2001:db8::1")
		if e != nil || in.Billing.IPAddress != "" {
			t.Fatalf("billing %+v, error %v", in.Billing, e)
		}
	})
	t.Run("OKEmails", func(t *testing.T) {
		t.Parallel()
		for _, email := range []string{"a@b.co", "first.last+tag@sub.example.org", "o'brien@example.ie", "x@xn--bcher-kva.example", "ü@bücher.de"} {
			if _, e := decodeAndValidatePayment(validPaymentBody().set("billing.email", email).json(t), ""); e != nil {
				t.Errorf("email %q: %v", email, e)
			}
		}
	})
	t.Run("OKPhones", func(t *testing.T) {
		t.Parallel()
		for _, p := range []string{"12345", "+1 (555) 010-9999", strings.Repeat("1", 32)} {
			if _, e := decodeAndValidatePayment(validPaymentBody().set("billing.phone", p).json(t), ""); e != nil {
				t.Errorf("phone %q: %v", p, e)
			}
		}
	})
	t.Run("OKCountries", func(t *testing.T) {
		t.Parallel()
		for _, c := range []string{"DE", "de", "Fr", "AQ", "SS", "CW", "BQ", "TL", "CD", "MM", "RS", "ME", "PS", "TW", "AX"} {
			if _, e := decodeAndValidatePayment(validPaymentBody().set("billing.country", c).json(t), ""); e != nil {
				t.Errorf("country %q: %v", c, e)
			}
		}
	})
	t.Run("OKMetadataLimits", func(t *testing.T) {
		t.Parallel()
		// 50 keys of 40 characters, and an object of exactly 8 KiB.
		if _, e := decodeAndValidatePayment(validPaymentBody().set("metadata", metadataKeys(50, 40)).json(t), ""); e != nil {
			t.Errorf("50 keys of 40: %v", e)
		}
		v := strings.Repeat("v", 8192-len(`{"k":""}`))
		in, e := decodeAndValidatePayment(validPaymentBody().set("metadata", map[string]any{"k": v}).json(t), "")
		if e != nil || len(in.Metadata) != 8192 {
			t.Errorf("8 KiB metadata: %v (len %d)", e, len(in.Metadata))
		}
		if _, e := decodeAndValidatePayment(validPaymentBody().set("metadata", map[string]any{"ключ": map[string]any{"nested": []any{1, nil, true}}}).json(t), ""); e != nil {
			t.Errorf("nested metadata: %v", e)
		}
	})
	t.Run("OKMetadataCompacted", func(t *testing.T) {
		t.Parallel()
		raw := []byte(`{"amount":"1","currency":"EUR","customerId":"c","card":{"number":"4242424242424242","expiryMonth":"12","expiryYear":"30","cvv":"123","holderName":"A"},
			"metadata": { "b" : [ 1 , 2 ],
			"a" : "x y" } }`)
		in, e := decodeAndValidatePayment(raw, "")
		if e != nil || string(in.Metadata) != `{"b":[1,2],"a":"x y"}` {
			t.Fatalf("metadata %s, error %v", in.Metadata, e)
		}
	})
	t.Run("OKReturnURLs", func(t *testing.T) {
		t.Parallel()
		for _, u := range []string{"http://localhost:3000/done", "https://shop.example", "HTTPS://Shop.Example/a?b=c#d", "https://[2001:db8::1]/x"} {
			if _, e := decodeAndValidatePayment(validPaymentBody().set("returnUrl", u).json(t), ""); e != nil {
				t.Errorf("returnUrl %q: %v", u, e)
			}
		}
	})
}

func assertCreateInput(t *testing.T, got, want payment.CreateInput) {
	t.Helper()
	gm, wm := string(got.Metadata), string(want.Metadata)
	got.Metadata, want.Metadata = nil, nil
	if gm != wm {
		t.Errorf("metadata %s, want %s", gm, wm)
	}
	if (got.Card == nil) != (want.Card == nil) || (got.Card != nil && *got.Card != *want.Card) {
		t.Errorf("card %+v, want %+v", got.Card, want.Card)
	}
	if (got.Billing == nil) != (want.Billing == nil) || (got.Billing != nil && *got.Billing != *want.Billing) {
		t.Errorf("billing %+v, want %+v", got.Billing, want.Billing)
	}
	got.Card, want.Card, got.Billing, want.Billing = nil, nil, nil, nil
	if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
		t.Errorf("input %+v, want %+v", got, want)
	}
}

func TestRefundValidate(t *testing.T) {
	t.Parallel()
	base := func() jsonBody {
		return jsonBody{"transactionId": "0190C8E4-7B1A-7C3D-8E2F-123456789ABC", "amount": "5.5", "currency": "eur", "reason": "customer asked\nnicely"}
	}
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		var r refundRequest
		if e := decodeJSON(base().json(t), &r); e != nil {
			t.Fatal(e)
		}
		in, cur, e := r.validate()
		if e != nil {
			t.Fatal(e)
		}
		want := payment.RefundInput{
			PaymentID:  "0190c8e4-7b1a-7c3d-8e2f-123456789abc",
			Amount:     paygate.Money{Amount: 550, Currency: "EUR"},
			AmountText: "5.5",
			Reason:     "customer asked\nnicely",
		}
		if in != want || cur != "EUR" {
			t.Errorf("validate = %+v, %q; want %+v, EUR", in, cur, want)
		}
	})
	tests := []struct {
		name      string
		body      jsonBody
		wantParam string
	}{
		{"ErrTransactionIDMissing", base().set("transactionId", omitField), "transactionId"},
		{"ErrTransactionIDNotUUID", base().set("transactionId", "pay_123"), "transactionId"},
		{"ErrTransactionIDURN", base().set("transactionId", "urn:uuid:0190c8e4-7b1a-7c3d-8e2f-123456789abc"), "transactionId"},
		{"ErrTransactionIDNumber", base().set("transactionId", 1), "transactionId"},
		{"ErrAmountMissing", base().set("amount", omitField), "amount"},
		{"ErrAmountNumber", base().set("amount", 5.5), "amount"},
		{"ErrAmountTooPrecise", base().set("amount", "5.555"), "amount"},
		{"ErrAmountTooPreciseForJPY", base().set("amount", "5.5").set("currency", "jpy"), "amount"},
		{"ErrCurrencyMissing", base().set("currency", omitField), "currency"},
		{"ErrCurrencyUnknown", base().set("currency", "EURO"), "currency"},
		{"ErrReasonTooLong", base().set("reason", strings.Repeat("r", 501)), "reason"},
		{"ErrReasonControl", base().set("reason", "a\x07b"), "reason"},
		{"ErrUnknownField", base().set("paymentId", "x"), "paymentId"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var r refundRequest
			e := decodeJSON(tt.body.json(t), &r)
			if e == nil {
				_, _, e = r.validate()
			}
			if e == nil || e.Code != paygate.CodeInvalidRequest || e.Param != tt.wantParam {
				t.Fatalf("error %v, want INVALID_REQUEST param %q", e, tt.wantParam)
			}
		})
	}
	t.Run("OKReasonAtLimit", func(t *testing.T) {
		t.Parallel()
		r := refundRequest{TransactionID: "0190c8e4-7b1a-7c3d-8e2f-123456789abc", Amount: "1", Currency: "EUR", Reason: strings.Repeat("é", 500)}
		if _, _, e := r.validate(); e != nil {
			t.Fatal(e)
		}
	})
}

func TestCustomerValidate(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		var r customerRequest
		if e := decodeJSON([]byte(`{"externalId":"ext-1","email":"a@example.com","metadata":{ "a" : 1 }}`), &r); e != nil {
			t.Fatal(e)
		}
		ext, email, md, e := r.validate()
		if e != nil || ext != "ext-1" || email == nil || *email != "a@example.com" || string(md) != `{"a":1}` {
			t.Fatalf("validate = %q, %v, %s, %v", ext, email, md, e)
		}
	})
	t.Run("OKAbsentAndNull", func(t *testing.T) {
		t.Parallel()
		for _, raw := range []string{`{"externalId":"x"}`, `{"externalId":"x","email":null,"metadata":null}`} {
			var r customerRequest
			if e := decodeJSON([]byte(raw), &r); e != nil {
				t.Fatal(e)
			}
			ext, email, md, e := r.validate()
			if e != nil || ext != "x" || email != nil || md != nil {
				t.Fatalf("%s: validate = %q, %v, %s, %v", raw, ext, email, md, e)
			}
		}
	})
	t.Run("OKEmptyMetadataReplaces", func(t *testing.T) {
		t.Parallel()
		r := customerRequest{ExternalID: "x", Metadata: json.RawMessage(`{}`)}
		if _, _, md, e := r.validate(); e != nil || string(md) != "{}" {
			t.Fatalf("metadata %s, error %v", md, e)
		}
	})
	t.Run("OKExternalIDAtLimit", func(t *testing.T) {
		t.Parallel()
		r := customerRequest{ExternalID: strings.Repeat("é", 255)}
		if _, _, _, e := r.validate(); e != nil {
			t.Fatal(e)
		}
	})
	tests := []struct {
		name, raw, wantParam string
	}{
		{"ErrExternalIDMissing", `{}`, "externalId"},
		{"ErrExternalIDEmpty", `{"externalId":""}`, "externalId"},
		{"ErrExternalIDTooLong", `{"externalId":"` + strings.Repeat("x", 256) + `"}`, "externalId"},
		{"ErrExternalIDNumber", `{"externalId":5}`, "externalId"},
		{"ErrEmailEmpty", `{"externalId":"x","email":""}`, "email"},
		{"ErrEmailInvalid", `{"externalId":"x","email":"nope"}`, "email"},
		{"ErrEmailNumber", `{"externalId":"x","email":1}`, "email"},
		{"ErrMetadataArray", `{"externalId":"x","metadata":[]}`, "metadata"},
		{"ErrMetadataNumber", `{"externalId":"x","metadata":1}`, "metadata"},
		{"ErrMetadataDuplicateKey", `{"externalId":"x","metadata":{"a":1,"a":2}}`, "metadata"},
		{"ErrUnknownField", `{"externalId":"x","name":"y"}`, "name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var r customerRequest
			e := decodeJSON([]byte(tt.raw), &r)
			if e == nil {
				_, _, _, e = r.validate()
			}
			if e == nil || e.Code != paygate.CodeInvalidRequest || e.Param != tt.wantParam {
				t.Fatalf("error %v, want INVALID_REQUEST param %q", e, tt.wantParam)
			}
		})
	}
}

func TestCaptureValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, raw, want, wantParam string
	}{
		{"OKEmpty", `{}`, "", ""},
		{"OKNull", `{"amount":null}`, "", ""},
		{"OKAmount", `{"amount":"12.5"}`, "12.5", ""},
		{"ErrAmountEmpty", `{"amount":""}`, "", "amount"},
		{"ErrAmountNumber", `{"amount":12.5}`, "", "amount"},
		{"ErrAmountTooPrecise", `{"amount":"12.555"}`, "", "amount"},
		{"ErrAmountZero", `{"amount":"0"}`, "", "amount"},
		{"ErrUnknownField", `{"amount":"1","currency":"EUR"}`, "", "currency"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var r captureRequest
			e := decodeJSON([]byte(tt.raw), &r)
			var got string
			if e == nil {
				got, e = r.validate()
			}
			if tt.wantParam == "" {
				if e != nil || got != tt.want {
					t.Fatalf("validate = %q, %v; want %q", got, e, tt.want)
				}
				return
			}
			if e == nil || e.Code != paygate.CodeInvalidRequest || e.Param != tt.wantParam {
				t.Fatalf("error %v, want INVALID_REQUEST param %q", e, tt.wantParam)
			}
		})
	}
}

func TestStoredCardValidate(t *testing.T) {
	t.Parallel()
	const ok = `{"card":{"number":"4242424242424242","expiryMonth":"12","expiryYear":"30","holderName":"Ada"}}`
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		var r storedCardRequest
		if e := decodeJSON([]byte(ok), &r); e != nil {
			t.Fatal(e)
		}
		c, e := r.validate(validationNow)
		want := paygate.Card{Number: validationPAN, ExpMonth: 12, ExpYear: 2030, HolderName: "Ada"}
		if e != nil || c != want {
			t.Fatalf("validate = %+v, %v", c, e)
		}
	})
	tests := []struct {
		name, raw, wantParam string
	}{
		{"ErrCardMissing", `{}`, "card"},
		{"ErrCVVRefused", `{"card":{"number":"4242424242424242","expiryMonth":"12","expiryYear":"30","cvv":"123","holderName":"Ada"}}`, "card.cvv"},
		{"ErrLuhn", `{"card":{"number":"4242424242424241","expiryMonth":"12","expiryYear":"30","holderName":"Ada"}}`, "card.number"},
		{"ErrExpired", `{"card":{"number":"4242424242424242","expiryMonth":"12","expiryYear":"20","holderName":"Ada"}}`, "card.expiryYear"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var r storedCardRequest
			e := decodeJSON([]byte(tt.raw), &r)
			if e == nil {
				_, e = r.validate(validationNow)
			}
			if e == nil || e.Param != tt.wantParam {
				t.Fatalf("error %v, want param %q", e, tt.wantParam)
			}
			if strings.Contains(e.Message, "424242424242") {
				t.Errorf("message %q shows the card number", e.Message)
			}
		})
	}
}

// TestCountryCodes checks the derived ISO 3166-1 set as a whole.
func TestCountryCodes(t *testing.T) {
	t.Parallel()
	n := 0
	for _, ok := range isoCountries() {
		if ok {
			n++
		}
	}
	if n != 249 {
		t.Errorf("%d country codes, ISO 3166-1 has 249", n)
	}
}

func TestCanonicalUUID(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"0190c8e4-7b1a-7c3d-8e2f-123456789abc": "0190c8e4-7b1a-7c3d-8e2f-123456789abc",
		"0190C8E4-7B1A-7C3D-8E2F-123456789ABC": "0190c8e4-7b1a-7c3d-8e2f-123456789abc",
		"00000000-0000-0000-0000-000000000000": "00000000-0000-0000-0000-000000000000",
	} {
		if got, ok := canonicalUUID(in); !ok || got != want {
			t.Errorf("canonicalUUID(%q) = %q, %v", in, got, ok)
		}
	}
	for _, in := range []string{"", "0190c8e47b1a7c3d8e2f123456789abc", "{0190c8e4-7b1a-7c3d-8e2f-123456789abc}",
		"0190c8e4-7b1a-7c3d-8e2f-123456789abg", "0190c8e4_7b1a_7c3d_8e2f_123456789abc", " 190c8e4-7b1a-7c3d-8e2f-123456789abc"} {
		if _, ok := canonicalUUID(in); ok {
			t.Errorf("canonicalUUID(%q) accepted", in)
		}
	}
}

func BenchmarkDecodeValidatePayment(b *testing.B) {
	raw := validPaymentBody().json(b)
	if _, e := decodeAndValidatePayment(raw, "203.0.113.7"); e != nil {
		b.Fatal(e)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, e := decodeAndValidatePayment(raw, "203.0.113.7"); e != nil {
			b.Fatal(e)
		}
	}
}
