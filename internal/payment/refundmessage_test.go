package payment

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestRefundErrorMessage(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 400)
	for _, c := range []struct{ name, in, want string }{
		{"OK", "The card issuer refused the refund.", "The card issuer refused the refund."},
		{"OKEmpty", "", msgRefundFailed},
		{"OKBlank", " \t\n ", msgRefundFailed},
		{"OKShortNumbersStay", "Refund 42 of 3 failed (code 1234567)", "Refund 42 of 3 failed (code 1234567)"},
		{"MasksCardNumber", "card 4242424242424242 blocked", "card [redacted] blocked"},
		{"MasksSpacedAndDashed", "card 4242 4242-4242 4242 blocked", "card [redacted] blocked"},
		{"ControlCharacters", "line one\nline\x00two\x7f", "line one line two"},
		{"InvalidUTF8", "bad \xff byte", "bad byte"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := refundErrorMessage(c.in); got != c.want {
				t.Fatalf("refundErrorMessage(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
	t.Run("BoundedAtACharacter", func(t *testing.T) {
		got := refundErrorMessage(long)
		if !utf8.ValidString(got) || len(got) > maxRefundErrorMessage+len("…") || !strings.HasSuffix(got, "…") {
			t.Fatalf("long reason became %d bytes %q", len(got), got)
		}
	})
}
