package adyen

import (
	"net/http"
	"strings"
	"testing"
)

// TestValidatorRefusesWhatTheSpecRefuses shows the fake's validation has
// teeth: requests that break Adyen's spec are refused.
func TestValidatorRefusesWhatTheSpecRefuses(t *testing.T) {
	router := spec(t)
	good := `{"amount":{"currency":"EUR","value":1050},"merchantAccount":"M","reference":"r","returnUrl":"https://x.example/",` +
		`"paymentMethod":{"type":"scheme","number":"4111111111111111","expiryMonth":"03","expiryYear":"2030","cvc":"737"}}`
	for _, c := range []struct {
		name, path, body, apiKey string
		ok                       bool
	}{
		{"conforming", "/payments", good, "k", true},
		{"no merchantAccount", "/payments", strings.Replace(good, `"merchantAccount":"M",`, "", 1), "k", false},
		{"amount as text", "/payments", strings.Replace(good, `"value":1050`, `"value":"10.50"`, 1), "k", false},
		{"unknown field", "/payments", strings.Replace(good, `"reference":"r",`, `"reference":"r","metadataX":1,`, 1), "k", false},
		{"no API key", "/payments", good, "", false},
		{"details without details", "/payments/details", `{"paymentData":"x"}`, "k", false},
		{"refund without amount", "/payments/PSP/refunds", `{"merchantAccount":"M"}`, "k", false},
		{"no such path", "/payments/PSP/unknown", `{}`, "k", false},
	} {
		r, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/v71"+c.path, nil)
		r.Header.Set("Content-Type", "application/json")
		if c.apiKey != "" {
			r.Header.Set("X-API-Key", c.apiKey)
		}
		_, err := validateRequest(router, r, c.path, []byte(c.body))
		if (err == nil) != c.ok {
			t.Errorf("%s: err = %v, want ok %v", c.name, err, c.ok)
		}
	}
}
