package dashboard

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestHostileQueryAndForm checks decisions §15 on the dashboard: a search
// box, filter or form field holding text that is not UTF-8 or holds U+0000
// (%ff, %00 in the address) is answered as bad input, 400 with a message,
// never a 500 (PostgreSQL refuses such text) and never searched for. The
// check runs before any store call, so the engine does not matter here.
func TestHostileQueryAndForm(t *testing.T) {
	s, b := signedInSite(t)
	for _, bad := range []string{"%ff", "%00", "a%c3", "%ed%a0%80"} {
		for _, path := range []string{
			"/dashboard/test/payments?ref=" + bad,
			"/dashboard/test/payments?customer=" + bad,
			"/dashboard/test/payments?currency=" + bad,
			"/dashboard/test/payments?from=2026-01-01&" + bad + "=1",
			"/dashboard/test/customers?q=" + bad,
			"/dashboard/test/audit?after=" + bad,
			"/dashboard/test/?currency=" + bad,
			"/dashboard/test/developers?revoked=" + bad,
			"/dashboard/test/webhook?done=" + bad,
			"/dashboard/account?done=" + bad,
		} {
			p := b.get(path)
			if p.code != http.StatusBadRequest || !strings.Contains(p.body, "must be UTF-8 without NUL characters") {
				t.Errorf("GET %s: %d, want 400 with the message", path, p.code)
			}
		}
		raw, err := url.QueryUnescape(bad)
		if err != nil {
			t.Fatal(err)
		}
		p := b.post("/dashboard/test/webhook", "/dashboard/test/webhook", url.Values{"url": {"http://127.0.0.1:9/" + raw}})
		if p.code != http.StatusBadRequest || !strings.Contains(p.body, "must be UTF-8 without NUL characters") {
			t.Errorf("POST webhook url with %s: %d, want 400", bad, p.code)
		}

		// Signing in with such an email is a bad form, not a server error.
		nb := s.browser()
		if p := nb.signIn(s.a.email+raw, password); p.code != http.StatusBadRequest || !strings.Contains(p.body, "not valid text") {
			t.Errorf("sign in with %s in the email: %d", bad, p.code)
		}
	}
	// Clean text is searched as before.
	if p := b.get("/dashboard/test/customers?q=caf%C3%A9"); p.code != http.StatusOK {
		t.Errorf("a UTF-8 search: %d", p.code)
	}
}
