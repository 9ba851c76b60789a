package httpapi

import (
	"testing"

	"github.com/paygate/paygate/internal/paygate"
)

func TestWithResult(t *testing.T) {
	t.Parallel()
	p := paygate.Payment{ID: "0193c5f4-0000-7000-8000-000000000001", Status: paygate.PaymentCaptured}
	const tail = "status=captured&transactionId=0193c5f4-0000-7000-8000-000000000001"
	cases := []struct{ name, in, want string }{
		{"OK_NoQuery", "https://shop.example/return", "https://shop.example/return?" + tail},
		{"OK_KeepsQueryAsWritten", "https://shop.example/r?z=1&a=%2F&a=2", "https://shop.example/r?z=1&a=%2F&a=2&" + tail},
		{"OK_KeepsFragment", "http://127.0.0.1:8081/r?o=42#top", "http://127.0.0.1:8081/r?o=42&" + tail + "#top"},
		{"OK_ReplacesOwnNames", "https://shop.example/r?status=paid&o=1", "https://shop.example/r?o=1&" + tail},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, ok := withResult(c.in, p)
			if !ok || got != c.want {
				t.Fatalf("withResult(%q) = %q, %v; want %q", c.in, got, ok, c.want)
			}
		})
	}
	for _, bad := range []string{"javascript:alert(1)", "/relative", "https://"} {
		if got, ok := withResult(bad, p); ok {
			t.Errorf("withResult(%q) = %q, want refused", bad, got)
		}
	}
}

func TestLogPathRedactsToken(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"/v1/3ds/callback/DHSmKYi53CQnOAQtoxSoHmsnZF2S6RitCpaQwEXROgA": "/v1/3ds/callback/[redacted]",
		"/v1/3ds/callback/": "/v1/3ds/callback/[redacted]",
		"/v1/payments/abc":  "/v1/payments/abc",
	} {
		if got := logPath(in); got != want {
			t.Errorf("logPath(%q) = %q, want %q", in, got, want)
		}
	}
}
