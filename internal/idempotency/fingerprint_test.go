package idempotency

import (
	"bytes"
	"crypto/sha256"
	"strings"
	"testing"
)

// testKey keys the fingerprints of these tests.
var testKey = sha256.New().Sum([]byte("a key of the tests, 32 bytes...."))[:32]

func fp(t testing.TB, method, path, body string) []byte {
	t.Helper()
	f, err := Fingerprint(testKey, method, path, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if len(f) != 32 {
		t.Fatalf("fingerprint has %d bytes, want 32", len(f))
	}
	return f
}

func TestFingerprintSame(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, a, b string }{
		{"KeyOrder", `{"amount":"10.50","currency":"EUR"}`, `{"currency":"EUR","amount":"10.50"}`},
		{"Whitespace", `{"amount":"10.50","currency":"EUR"}`, "{\n  \"amount\" : \"10.50\",\r\n\t\"currency\":\"EUR\"\n}\n"},
		{"Nested", `{"card":{"number":"4242424242424242","cvv":"123"},"billing":{"city":"Paris","country":"FR"}}`,
			`{"billing":{"country":"FR","city":"Paris"},"card":{"cvv":"123","number":"4242424242424242"}}`},
		{"NestedInArray", `{"a":[{"x":1,"y":2},{"z":[3]}]}`, `{"a":[{"y":2,"x":1},{"z":[ 3 ]}]}`},
		{"StringEscapes", `{"name":"José \"J\" <a&b>"}`, `{"name":"Jos\u00e9 \u0022J\u0022 \u003ca\u0026b\u003e"}`},
		{"SlashEscape", `{"url":"https://x/y"}`, `{"url":"https:\/\/x\/y"}`},
		{"DuplicateKeyLastWins", `{"a":"1","a":"2"}`, `{"a":"2"}`},
		{"EmptyAndWhitespace", ``, " \n\t\r "},
		{"EmptyObjectSpacing", `{}`, `{ }`},
		{"Literals", `{"t":true,"f":false,"n":null}`, `{"n":null,"f":false,"t":true}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if a, b := fp(t, "POST", "/v1/payments", c.a), fp(t, "POST", "/v1/payments", c.b); !bytes.Equal(a, b) {
				t.Fatalf("fingerprints differ for\n%s\n%s", c.a, c.b)
			}
		})
	}
}

func TestFingerprintDifferent(t *testing.T) {
	t.Parallel()
	type req struct{ method, path, body string }
	base := req{"POST", "/v1/payments", `{"amount":"10.50","currency":"EUR","items":["a","b"]}`}
	cases := []struct {
		name string
		b    req
	}{
		{"Value", req{base.method, base.path, `{"amount":"10.51","currency":"EUR","items":["a","b"]}`}},
		{"ArrayOrder", req{base.method, base.path, `{"amount":"10.50","currency":"EUR","items":["b","a"]}`}},
		{"MissingKey", req{base.method, base.path, `{"amount":"10.50","items":["a","b"]}`}},
		{"ExtraKey", req{base.method, base.path, `{"amount":"10.50","currency":"EUR","items":["a","b"],"x":null}`}},
		{"Path", req{base.method, "/v1/refunds", base.body}},
		{"Method", req{"PUT", base.path, base.body}},
		{"MethodCase", req{"post", base.path, base.body}},
		{"Empty", req{base.method, base.path, ``}},
		{"StringVsNumber", req{base.method, base.path, `{"amount":10.50,"currency":"EUR","items":["a","b"]}`}},
		{"KeyCase", req{base.method, base.path, `{"Amount":"10.50","currency":"EUR","items":["a","b"]}`}},
	}
	a := fp(t, base.method, base.path, base.body)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if b := fp(t, c.b.method, c.b.path, c.b.body); bytes.Equal(a, b) {
				t.Fatalf("same fingerprint for %+v and %+v", base, c.b)
			}
		})
	}
}

// TestFingerprintNumbersByLiteral documents the choice: numbers are compared
// by their text.
func TestFingerprintNumbersByLiteral(t *testing.T) {
	t.Parallel()
	if bytes.Equal(fp(t, "POST", "/p", `{"n":1}`), fp(t, "POST", "/p", `{"n":1.0}`)) {
		t.Fatal("1 and 1.0 share a fingerprint; numbers are meant to compare by literal")
	}
	if !bytes.Equal(fp(t, "POST", "/p", `{"n":1.0}`), fp(t, "POST", "/p", `{ "n" : 1.0 }`)) {
		t.Fatal("the same literal differs")
	}
}

// TestFingerprintFraming checks that moving bytes between method, path and
// body cannot produce the same fingerprint.
func TestFingerprintFraming(t *testing.T) {
	t.Parallel()
	pairs := [][2][3]string{
		{{"POST", "/v1/a", `{}`}, {"POST/", "v1/a", `{}`}},
		{{"POST", "/v1/a", `"x"`}, {"POST", "/v1/a\"x", ``}},
		{{"POST", "", ``}, {"", "POST", ``}},
	}
	for _, p := range pairs {
		if bytes.Equal(fp(t, p[0][0], p[0][1], p[0][2]), fp(t, p[1][0], p[1][1], p[1][2])) {
			t.Fatalf("%q and %q collide", p[0], p[1])
		}
	}
}

func TestFingerprintInvalidJSON(t *testing.T) {
	t.Parallel()
	cases := []string{
		`{"amount":`,
		`{"a":1} {"b":2}`, // trailing value
		`{"a":1}x`,
		"{\"a\":\"\xff\"}", // invalid UTF-8
		`NaN`,
	}
	for _, body := range cases {
		a := fp(t, "POST", "/v1/payments", body)
		if !bytes.Equal(a, fp(t, "POST", "/v1/payments", body)) {
			t.Fatalf("invalid body %q is not stable", body)
		}
		// Raw bytes: whitespace now counts.
		if bytes.Equal(a, fp(t, "POST", "/v1/payments", body+" ")) {
			t.Fatalf("invalid body %q hashed as something else than raw bytes", body)
		}
	}
	// A valid body and the same body with a trailing value differ.
	if bytes.Equal(fp(t, "POST", "/p", `{"a":1}`), fp(t, "POST", "/p", `{"a":1} {"b":2}`)) {
		t.Fatal("trailing data ignored")
	}
}

func TestFingerprintDeepNesting(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat("[", 20000) + strings.Repeat("]", 20000) // beyond the decoder's depth limit
	if _, err := Fingerprint(testKey, "POST", "/p", []byte(deep)); err != nil {
		t.Fatal(err)
	}
}

// benchBody is a payment request as a client formats it.
const benchBody = `{
  "amount": "10.50", "currency": "EUR", "customerId": "cus_123",
  "card": {"number": "4242424242424242", "expiryMonth": "12", "expiryYear": "30", "cvv": "123", "holderName": "Jane Doe"},
  "billing": {"firstName": "Jane", "lastName": "Doe", "email": "jane@example.com", "phone": "+33 1 23 45 67 89",
    "country": "FR", "address": "1 rue de Rivoli", "city": "Paris", "postalCode": "75001"},
  "merchantRef": "order-42", "metadata": {"cart": "abc", "items": ["x", "y", "z"]}
}`

func BenchmarkFingerprint(b *testing.B) {
	body := []byte(benchBody)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Fingerprint(testKey, "POST", "/v1/payments", body); err != nil {
			b.Fatal(err)
		}
	}
}

// TestFingerprintKeyed checks that the fingerprint depends on the key, so
// that a stored fingerprint cannot be recomputed (and a card number in the
// body brute-forced) without it, and that it is not the unkeyed hash.
func TestFingerprintKeyed(t *testing.T) {
	t.Parallel()
	body := []byte(`{"card":{"number":"4242424242424242","cvv":"123"}}`)
	a, err := Fingerprint(testKey, "POST", "/v1/payments", body)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Fingerprint([]byte("another installation's key......"), "POST", "/v1/payments", body)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a, b) {
		t.Fatal("two keys give the same fingerprint")
	}
	if again, _ := Fingerprint(append([]byte(nil), testKey...), "POST", "/v1/payments", body); !bytes.Equal(a, again) {
		t.Fatal("the same key gives another fingerprint")
	}
	plain := sha256.Sum256(body)
	if bytes.Equal(a, plain[:]) || bytes.Contains(a, []byte("4242")) {
		t.Fatal("the fingerprint is an unkeyed hash of the body")
	}
	if _, err := Fingerprint(nil, "POST", "/v1/payments", body); err == nil {
		t.Fatal("an empty key was accepted")
	}
}

// TestFingerprintCard checks the card's redaction (decisions §15): the CVV
// does not count, the number counts only through its keyed fingerprint, and
// only the top-level "card" object is redacted.
func TestFingerprintCard(t *testing.T) {
	t.Parallel()
	const base = `{"amount":"1.00","card":{"number":"4242424242424242","cvv":"123","expiryMonth":"12"}}`
	same := map[string]string{
		"OtherCVV":      `{"amount":"1.00","card":{"number":"4242424242424242","cvv":"999","expiryMonth":"12"}}`,
		"NoCVV":         `{"amount":"1.00","card":{"number":"4242424242424242","expiryMonth":"12"}}`,
		"CVVNotAString": `{"amount":"1.00","card":{"cvv":123,"number":"4242424242424242","expiryMonth":"12"}}`,
		"EscapedNumber": `{"amount":"1.00","card":{"number":"\u0034242424242424242","cvv":"123","expiryMonth":"12"}}`,
		"DuplicateLast": `{"amount":"1.00","card":{"number":"5555555555554444","number":"4242424242424242","cvv":"123","expiryMonth":"12"}}`,
		"DuplicateCard": `{"card":{"number":"5555555555554444"},"amount":"1.00","card":{"number":"4242424242424242","cvv":"1","expiryMonth":"12"}}`,
	}
	want := fp(t, "POST", "/v1/payments", base)
	for name, body := range same {
		if !bytes.Equal(fp(t, "POST", "/v1/payments", body), want) {
			t.Errorf("%s: another fingerprint, want the same", name)
		}
	}
	differ := map[string]string{
		"OtherNumber": `{"amount":"1.00","card":{"number":"5555555555554444","cvv":"123","expiryMonth":"12"}}`,
		"NumberAsInt": `{"amount":"1.00","card":{"number":4242424242424242,"cvv":"123","expiryMonth":"12"}}`,
		"OtherExpiry": `{"amount":"1.00","card":{"number":"4242424242424242","cvv":"123","expiryMonth":"11"}}`,
	}
	for name, body := range differ {
		if bytes.Equal(fp(t, "POST", "/v1/payments", body), want) {
			t.Errorf("%s: the same fingerprint, want another", name)
		}
	}
	// Only the top-level card: elsewhere a cvv is an ordinary field.
	nested := func(cvv string) []byte {
		return fp(t, "POST", "/v1/x", `{"metadata":{"card":{"cvv":"`+cvv+`"}}}`)
	}
	if bytes.Equal(nested("1"), nested("2")) {
		t.Error("a cvv outside the top-level card was left out")
	}
	// The canonical text itself holds neither the number nor the CVV.
	canon, ok := canonicalRequest([]byte(base), testKey)
	if !ok || bytes.Contains(canon, []byte("4242424242424242")) || bytes.Contains(canon, []byte(`"cvv"`)) {
		t.Fatalf("canonical text %s holds card data", canon)
	}
	// And the number's fingerprint depends on the key.
	other, _ := canonicalRequest([]byte(base), []byte("another key....................."))
	if bytes.Equal(canon, other) {
		t.Fatal("the number's fingerprint does not depend on the key")
	}
}
