package dashboard

import (
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/clientaddr"
	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
)

// Tests of the security review of the dashboard (issue 8).

func TestThrottleSource(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ addr, want string }{
		{"192.0.2.10", "192.0.2.10"},
		{"::ffff:192.0.2.10", "192.0.2.10"},
		{"2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"},
		{"2001:db8:1:2::ffff", "2001:db8:1:2::/64"},
		{"fe80::1%eth0", "fe80::/64"},
		{"not an address", "not an address"},
	} {
		if got := throttleSource(c.addr); got != c.want {
			t.Errorf("throttleSource(%q) = %q, want %q", c.addr, got, c.want)
		}
	}
}

// One IPv6 subscriber holds a whole /64: walking through its addresses
// must not give a password spray a fresh budget each time.
func TestSignInThrottledPerIPv6Prefix(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	var refused bool
	for i := range 2 * loginPerAddr {
		b := s.browser()
		b.addr = fmt.Sprintf("[2001:db8:77:1::%x]:4000", i+1)
		p := b.signIn(fmt.Sprintf("user%d@spray.example", i), "whatever password")
		if p.code == http.StatusTooManyRequests {
			refused = true
			break
		}
	}
	if !refused {
		t.Errorf("%d attempts from one IPv6 /64, each from another address, were never throttled", 2*loginPerAddr)
	}
	// Another /64 has its own budget.
	other := s.browser()
	other.addr = "[2001:db8:77:2::1]:4000"
	other.mustSignIn(s.a.email)
}

// A password change renews the session token of the browser that made it
// (the old token dies with every other session) without extending the
// session's absolute end; a wrong current password is audited.
func TestChangePasswordRenewsSession(t *testing.T) {
	t.Parallel()
	s := newSite(t, func(c *Config) { c.SessionIdle = time.Hour; c.SessionMax = 2 * time.Hour })
	b := s.signedIn()
	old := b.cookies[sessionCookie]
	change := func(current string) reply {
		return b.post("/dashboard/account", "/dashboard/account", url.Values{
			"action": {"password"}, "current_password": {current},
			"new_password": {"a brand new passphrase"}, "confirm_password": {"a brand new passphrase"},
		})
	}
	if p := change("not my password!"); p.code != http.StatusBadRequest {
		t.Fatalf("wrong current password: %d", p.code)
	}
	es, err := s.st.AuditLog(context.Background(), paygate.AuditQuery{MerchantID: s.a.id})
	if err != nil {
		t.Fatal(err)
	}
	if len(es) == 0 || es[0].Action != paygate.AuditSignInFailed || es[0].RemoteAddr != "192.0.2.10" || es[0].Email != s.a.email {
		t.Errorf("audit after a wrong current password: %+v", es)
	}
	if b.cookies[sessionCookie] != old {
		t.Fatal("a refused change replaced the session")
	}

	s.clock.Add(30 * time.Minute)
	if p := change(password); p.code != http.StatusSeeOther {
		t.Fatalf("change password: %d\n%s", p.code, p.body)
	}
	renewed := b.cookies[sessionCookie]
	if renewed == "" || renewed == old {
		t.Fatalf("session token after the change %q, want a new one", renewed)
	}
	if p := b.get("/dashboard/test/developers"); p.code != http.StatusOK {
		t.Fatalf("the renewed session: %d %q", p.code, p.location)
	}
	thief := s.browser()
	thief.cookies[sessionCookie] = old
	if p := thief.get("/dashboard/test/developers"); p.code != http.StatusSeeOther {
		t.Errorf("the old token after a password change: %d, want a redirect to sign in", p.code)
	}
	// Still two hours after sign-in at most: 119 minutes works, 121 not.
	for _, d := range []time.Duration{50 * time.Minute, 39 * time.Minute} {
		s.clock.Add(d)
		if p := b.get("/dashboard/test/developers"); p.code != http.StatusOK {
			t.Fatalf("%s later: %d", d, p.code)
		}
	}
	s.clock.Add(2 * time.Minute)
	if p := b.get("/dashboard/test/developers"); p.code != http.StatusSeeOther {
		t.Errorf("121 minutes after sign-in, the renewed session still works: %d", p.code)
	}
}

// A password in an endpoint URL is masked in the audit log, which outlives
// the endpoint.
func TestWebhookAuditMasksURLPassword(t *testing.T) {
	t.Parallel()
	s, b := signedInSite(t)
	const hook = "http://hookuser:s3cret-pass@127.0.0.1:9/hook"
	if p := b.post("/dashboard/test/webhook", "/dashboard/test/webhook", url.Values{"url": {hook}}); p.code != http.StatusSeeOther {
		t.Fatalf("set webhook: %d\n%s", p.code, p.body)
	}
	if p := b.post("/dashboard/test/webhook", "/dashboard/test/webhook/secret", nil); p.code != http.StatusOK {
		t.Fatalf("reveal: %d", p.code)
	}
	if p := b.post("/dashboard/test/webhook", "/dashboard/test/webhook/rotate", nil); p.code != http.StatusOK {
		t.Fatalf("rotate: %d", p.code)
	}
	es, err := s.st.AuditLog(context.Background(), paygate.AuditQuery{MerchantID: s.a.id})
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, e := range es {
		if strings.Contains(e.Target+e.Detail, "s3cret-pass") {
			t.Errorf("audit entry %s keeps the URL's password: %q", e.Action, e.Target)
		}
		if e.Target == "http://hookuser:xxxxx@127.0.0.1:9/hook" {
			seen++
		}
	}
	if seen != 3 {
		t.Errorf("%d audit entries name the masked endpoint, want 3: %+v", seen, es)
	}
	if p := b.get("/dashboard/test/audit"); strings.Contains(p.body, "s3cret-pass") {
		t.Error("the audit page shows the URL's password")
	}
}

// Every state-changing route, present and future, refuses a form without
// the session's CSRF token, and a signed-out POST changes nothing either.
func TestEveryPostNeedsCSRF(t *testing.T) {
	t.Parallel()
	s, b := signedInSite(t)
	signedOut := s.browser()
	var paths []string
	for _, rt := range s.d.routes {
		if rt.method != http.MethodPost {
			continue
		}
		p := rt.pattern
		for strings.Contains(p, "{") {
			i, j := strings.Index(p, "{"), strings.Index(p, "}")
			p = p[:i] + id.New() + p[j+1:]
		}
		paths = append(paths, "/dashboard/test"+p, "/dashboard/live"+p)
	}
	paths = append(paths, "/dashboard/account", "/dashboard/logout")
	if len(paths) < 20 {
		t.Fatalf("only %d POST paths: %v", len(paths), paths)
	}
	before := s.auditActions(s.a.id)
	for _, path := range paths {
		for name, form := range map[string]url.Values{
			"Missing": {"action": {"password"}, "amount": {"1.00"}},
			"Forged":  {"csrf": {"forged-token"}, "action": {"zone"}, "tz": {"UTC"}},
		} {
			if p := b.do(http.MethodPost, path, form); p.code != http.StatusForbidden {
				t.Errorf("POST %s with a %s token: %d, want 403", path, name, p.code)
			}
		}
		p := signedOut.do(http.MethodPost, path, url.Values{"csrf": {"x"}})
		if p.code != http.StatusSeeOther || p.location != "/dashboard/login" {
			t.Errorf("signed-out POST %s: %d %q, want a redirect to sign in", path, p.code, p.location)
		}
	}
	if after := s.auditActions(s.a.id); len(after) != len(before) {
		t.Errorf("refused forms were audited as actions: %v", after[:len(after)-len(before)])
	}
	if p := b.get("/dashboard/test/developers"); p.code != http.StatusOK {
		t.Errorf("the session after the refused forms: %d", p.code)
	}
}

// The Content-Security-Policy allows no inline script or style: no
// template may carry one, nor an event handler attribute or a javascript:
// URL.
func TestTemplatesHaveNoInlineCode(t *testing.T) {
	t.Parallel()
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil || len(names) == 0 {
		t.Fatalf("templates: %v %v", names, err)
	}
	bad := regexp.MustCompile(`(?i)\sstyle\s*=|<style|\son[a-z]+\s*=|javascript:`)
	script := regexp.MustCompile(`(?is)<script\b([^>]*)>(.*?)</script>`)
	for _, n := range names {
		b, err := fs.ReadFile(templateFS, n)
		if err != nil {
			t.Fatal(err)
		}
		if m := bad.Find(b); m != nil {
			t.Errorf("%s: inline code %q", n, m)
		}
		if got, all := len(script.FindAll(b, -1)), strings.Count(strings.ToLower(string(b)), "<script"); got != all {
			t.Errorf("%s: a <script> tag that does not close", n)
		}
		for _, m := range script.FindAllSubmatch(b, -1) {
			if !strings.Contains(string(m[1]), "src=") || strings.TrimSpace(string(m[2])) != "" {
				t.Errorf("%s: inline script %q", n, m[0])
			}
		}
	}
}

// Finding 6: behind a reverse proxy every client had the proxy's address,
// so a password spray locked everyone out. With the proxy trusted, the
// sign-in throttle and the audit log key on the forwarded client; without,
// the header is ignored and cannot buy a spray fresh budgets.
func TestSignInThrottleBehindProxy(t *testing.T) {
	t.Parallel()
	spray := func(s *site, xff func(i int) string) bool {
		for i := range 2 * loginPerAddr {
			b := s.browser()
			b.addr, b.xff = "10.0.0.2:4000", xff(i)
			if p := b.signIn(fmt.Sprintf("user%d@spray.example", i), "whatever password"); p.code == http.StatusTooManyRequests {
				return true
			}
		}
		return false
	}
	t.Run("TrustedProxy", func(t *testing.T) {
		t.Parallel()
		s := newSite(t)
		proxies, err := clientaddr.Parse("10.0.0.0/8")
		if err != nil {
			t.Fatal(err)
		}
		s.proxies = proxies
		if !spray(s, func(int) string { return "203.0.113.66, 10.0.0.3" }) {
			t.Fatalf("%d attempts from one forwarded client were never throttled", 2*loginPerAddr)
		}
		// Another client behind the same proxy signs in, and is recorded
		// under its own address.
		b := s.browser()
		b.addr, b.xff = "10.0.0.2:4000", "198.51.100.7"
		b.mustSignIn(s.a.email)
		es, err := s.st.AuditLog(context.Background(), paygate.AuditQuery{MerchantID: s.a.id})
		if err != nil {
			t.Fatal(err)
		}
		if len(es) == 0 || es[0].Action != paygate.AuditSignIn || es[0].RemoteAddr != "198.51.100.7" {
			t.Errorf("newest audit entry %+v, want a sign-in from 198.51.100.7", es)
		}
	})
	t.Run("NoTrustedProxies", func(t *testing.T) {
		t.Parallel()
		s := newSite(t)
		if !spray(s, func(i int) string { return fmt.Sprintf("198.51.100.%d", i+1) }) {
			t.Fatalf("%d attempts from one peer, each claiming another X-Forwarded-For, were never throttled", 2*loginPerAddr)
		}
	})
}
