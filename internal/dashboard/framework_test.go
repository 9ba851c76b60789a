package dashboard

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/auth"
	"github.com/paygate/paygate/internal/clientaddr"
	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/ratelimit"
	"github.com/paygate/paygate/internal/store/sqlite"
	"github.com/paygate/paygate/internal/testenv"
)

// The framework's tests go through ServeHTTP like a browser: sign-in with
// the form and its cookies, sessions, CSRF, and the Developers, webhook and
// audit pages, on a real SQLite store.

// site is a dashboard over a fresh store with two merchants, each with a
// user whose password is password.
type site struct {
	t     *testing.T
	st    *sqlite.Store
	d     *Dashboard
	clock *testenv.Clock
	// proxies are the trusted proxies the server in front of the
	// dashboard resolves client addresses with (httpapi.Server does it in
	// production); none: the peer.
	proxies clientaddr.Proxies
	// Merchants A and B: their ids, a test secret key id each, and their
	// users' emails.
	a, b siteMerchant
}

type siteMerchant struct {
	id, testKeyID, liveKeyID, email string
}

const password = "correct horse battery"

func newSite(t *testing.T, mutate ...func(*Config)) *site {
	t.Helper()
	clock := testenv.NewClock(time.Now())
	st, svc := newStoreAndService(t, clock)
	// The throttles run on the site's clock: under a loaded machine a test's
	// attempts may span minutes of real time, refilling a real-time budget.
	lim := ratelimit.NewMemory()
	lim.Now = clock.Now
	cfg := Config{Store: st, Payments: svc, Limiter: lim, Clock: clock, BaseURL: "http://127.0.0.1:8080", Vault: siteVault}
	for _, m := range mutate {
		m(&cfg)
	}
	s := &site{t: t, st: st, d: New(cfg), clock: clock}
	hash, err := auth.HashPassword(password)
	if err != nil {
		t.Fatal(err)
	}
	s.a = s.merchant("Ada's Books", "ada@books.example", hash)
	s.b = s.merchant("Bob's Bikes", "bob@bikes.example", hash)
	return s
}

func (s *site) merchant(name, email, hash string) siteMerchant {
	s.t.Helper()
	ctx := context.Background()
	now := s.clock.Now()
	mid := id.New()
	_, tk, err := auth.NewKey(id.New(), mid, paygate.ModeTest, paygate.KeySecret, now)
	if err != nil {
		s.t.Fatal(err)
	}
	_, lk, err := auth.NewKey(id.New(), mid, paygate.ModeLive, paygate.KeySecret, now)
	if err != nil {
		s.t.Fatal(err)
	}
	if err := s.st.Commit(ctx, paygate.Unit{Ops: []paygate.Op{paygate.Merchant{ID: mid, Name: name, CreatedAt: now}, tk, lk}}); err != nil {
		s.t.Fatal(err)
	}
	u := paygate.User{ID: id.New(), MerchantID: mid, Email: email, PasswordHash: hash, CreatedAt: now, UpdatedAt: now}
	if err := s.st.Commit(ctx, paygate.Unit{Ops: []paygate.Op{u}}); err != nil {
		s.t.Fatal(err)
	}
	return siteMerchant{id: mid, testKeyID: tk.ID, liveKeyID: lk.ID, email: email}
}

// browser keeps cookies like a browser does for one site.
type browser struct {
	s       *site
	cookies map[string]string
	addr    string
	xff     string // X-Forwarded-For, when not empty
}

func (s *site) browser() *browser {
	return &browser{s: s, cookies: map[string]string{}, addr: "192.0.2.10:5555"}
}

// signedInSite is where most tests start: a new site and a browser signed
// in as merchant A's user.
func signedInSite(t *testing.T) (*site, *browser) {
	t.Helper()
	s := newSite(t)
	return s, s.signedIn()
}

// signedIn returns a new browser signed in as merchant A's user.
func (s *site) signedIn() *browser {
	s.t.Helper()
	b := s.browser()
	b.mustSignIn(s.a.email)
	return b
}

// reply is one answer.
type reply struct {
	code     int
	body     string
	location string
	header   http.Header
	cookies  []*http.Cookie
}

// do sends a request with the browser's cookies and keeps the ones set.
func (b *browser) do(method, path string, form url.Values) reply {
	b.s.t.Helper()
	var r *http.Request
	if form != nil {
		r = httptest.NewRequest(method, path, strings.NewReader(form.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	} else {
		r = httptest.NewRequest(method, path, nil)
	}
	r.RemoteAddr = b.addr
	if b.xff != "" {
		r.Header.Set("X-Forwarded-For", b.xff)
	}
	r = r.WithContext(clientaddr.NewContext(r.Context(), b.s.proxies.ClientAddr(r)))
	for n, v := range b.cookies {
		r.AddCookie(&http.Cookie{Name: n, Value: v})
	}
	w := httptest.NewRecorder()
	b.s.d.ServeHTTP(w, r)
	res := w.Result()
	for _, c := range res.Cookies() {
		if c.MaxAge < 0 || c.Value == "" {
			delete(b.cookies, c.Name)
		} else {
			b.cookies[c.Name] = c.Value
		}
	}
	return reply{code: w.Code, body: w.Body.String(), location: w.Header().Get("Location"), header: w.Header(), cookies: res.Cookies()}
}

func (b *browser) get(path string) reply { return b.do(http.MethodGet, path, nil) }

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrfOf returns the CSRF token of the first form of a page.
func csrfOf(t *testing.T, p reply) string {
	t.Helper()
	m := csrfField.FindStringSubmatch(p.body)
	if m == nil {
		t.Fatalf("no csrf field in the page (%d):\n%s", p.code, p.body)
	}
	return m[1]
}

// signIn signs the browser in as email and returns the answer to the form.
func (b *browser) signIn(email, pw string) reply {
	b.s.t.Helper()
	form := b.get("/dashboard/login")
	if form.code != http.StatusOK {
		b.s.t.Fatalf("GET login: %d", form.code)
	}
	return b.do(http.MethodPost, "/dashboard/login", url.Values{
		"email": {email}, "password": {pw}, "csrf": {csrfOf(b.s.t, form)},
	})
}

// mustSignIn signs in and fails the test unless it worked.
func (b *browser) mustSignIn(email string) {
	b.s.t.Helper()
	p := b.signIn(email, password)
	if p.code != http.StatusSeeOther || b.cookies[sessionCookie] == "" {
		b.s.t.Fatalf("sign in as %s: %d %q\n%s", email, p.code, p.location, p.body)
	}
}

// post submits a form of the page at formPath (taking its CSRF token) to
// action.
func (b *browser) post(formPath, action string, form url.Values) reply {
	b.s.t.Helper()
	p := b.get(formPath)
	if p.code != http.StatusOK {
		b.s.t.Fatalf("GET %s: %d %s", formPath, p.code, p.location)
	}
	if form == nil {
		form = url.Values{}
	}
	form.Set("csrf", csrfOf(b.s.t, p))
	// A form's idempotency key, minted with the page, goes with it as a
	// browser would send it (the create-key and refund forms).
	if form.Get("idempotency_key") == "" && strings.Contains(p.body, `name="idempotency_key"`) {
		form.Set("idempotency_key", formValue(b.s.t, p.body, "idempotency_key"))
	}
	return b.do(http.MethodPost, action, form)
}

// auditActions lists a merchant's audit actions, newest first.
func (s *site) auditActions(merchantID string) []string {
	s.t.Helper()
	es, err := s.st.AuditLog(context.Background(), paygate.AuditQuery{MerchantID: merchantID})
	if err != nil {
		s.t.Fatal(err)
	}
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Action
	}
	return out
}

func countOf(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

func TestSignIn(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	b := s.browser()

	t.Run("RedirectToLogin", func(t *testing.T) {
		p := b.get("/dashboard/test/payments?status=failed")
		if p.code != http.StatusSeeOther || p.location != "/dashboard/login?next="+url.QueryEscape("/dashboard/test/payments?status=failed") {
			t.Fatalf("signed-out GET: %d %q", p.code, p.location)
		}
		if p := b.get("/dashboard/"); p.code != http.StatusSeeOther || p.location != "/dashboard/test/" {
			t.Errorf("/dashboard/: %d %q", p.code, p.location)
		}
	})

	t.Run("ErrWrongPassword", func(t *testing.T) {
		p := b.signIn(s.a.email, "not the password at all")
		if p.code != http.StatusUnauthorized || !strings.Contains(p.body, "email or password is wrong") {
			t.Fatalf("wrong password: %d\n%s", p.code, p.body)
		}
		if b.cookies[sessionCookie] != "" {
			t.Error("a wrong password set a session cookie")
		}
		if got := s.auditActions(s.a.id); countOf(got, paygate.AuditSignInFailed) != 1 {
			t.Errorf("audit after a failed sign-in: %v", got)
		}
	})

	t.Run("ErrUnknownEmail", func(t *testing.T) {
		p := b.signIn("nobody@nowhere.example", password)
		if p.code != http.StatusUnauthorized || !strings.Contains(p.body, "email or password is wrong") {
			t.Fatalf("unknown email: %d\n%s", p.code, p.body)
		}
	})

	t.Run("ErrLoginCSRF", func(t *testing.T) {
		// A cross-site form has no login CSRF cookie to match.
		fresh := s.browser()
		p := fresh.do(http.MethodPost, "/dashboard/login", url.Values{"email": {s.a.email}, "password": {password}, "csrf": {"forged"}})
		if p.code != http.StatusForbidden || fresh.cookies[sessionCookie] != "" {
			t.Fatalf("login without the CSRF cookie: %d, session %q", p.code, fresh.cookies[sessionCookie])
		}
	})

	t.Run("OK", func(t *testing.T) {
		// A planted session cookie is never promoted (session fixation).
		b.cookies[sessionCookie] = "planted-by-an-attacker"
		form := b.get("/dashboard/login?next=" + url.QueryEscape("/dashboard/live/developers"))
		p := b.do(http.MethodPost, "/dashboard/login", url.Values{
			"email": {strings.ToUpper(s.a.email)}, "password": {password}, "csrf": {csrfOf(t, form)},
			"next": {"/dashboard/live/developers"},
		})
		if p.code != http.StatusSeeOther || p.location != "/dashboard/live/developers" {
			t.Fatalf("sign in: %d %q\n%s", p.code, p.location, p.body)
		}
		var sc *http.Cookie
		for _, c := range p.cookies {
			if c.Name == sessionCookie {
				sc = c
			}
		}
		if sc == nil || sc.Value == "planted-by-an-attacker" || len(sc.Value) != 43 {
			t.Fatalf("session cookie %+v", sc)
		}
		if !sc.HttpOnly || sc.SameSite != http.SameSiteLaxMode || sc.Path != "/dashboard" || sc.Secure {
			t.Errorf("session cookie attributes %+v, want HttpOnly, SameSite=Lax, Path=/dashboard, not Secure on http", sc)
		}
		// Only the token's hash is stored.
		if _, _, err := s.st.SessionByTokenHash(context.Background(), []byte(sc.Value)); !paygate.IsNotFound(err) {
			t.Errorf("the raw token finds a session: %v", err)
		}
		dev := b.get("/dashboard/live/developers")
		if dev.code != http.StatusOK || !strings.Contains(dev.body, "LIVE MODE") || !strings.Contains(dev.body, "Ada&#39;s Books") {
			t.Fatalf("developers after sign-in: %d\n%s", dev.code, dev.body)
		}
		got := s.auditActions(s.a.id)
		if len(got) == 0 || got[0] != paygate.AuditSignIn {
			t.Errorf("audit after sign-in: %v", got)
		}
		// Signed in, the login page leads back in.
		if p := b.get("/dashboard/login"); p.code != http.StatusSeeOther || p.location != "/dashboard/test/" {
			t.Errorf("login page when signed in: %d %q", p.code, p.location)
		}
	})

	t.Run("ErrOpenRedirect", func(t *testing.T) {
		for _, next := range []string{"//evil.example/x", "https://evil.example/", "/v1/payments", "/dashboard/../v1/x", "/dashboard/%2e%2e/v1", "/dashboard\\evil"} {
			if got := safeNext(next); got != "" {
				t.Errorf("safeNext(%q) = %q, want refused", next, got)
			}
		}
		if got := safeNext("/dashboard/test/payments?status=failed"); got != "/dashboard/test/payments?status=failed" {
			t.Errorf("safeNext refused a dashboard path: %q", got)
		}
	})
}

func TestSecureCookieOnHTTPS(t *testing.T) {
	t.Parallel()
	s := newSite(t, func(c *Config) { c.BaseURL = "https://pay.example.com" })
	b := s.browser()
	p := b.signIn(s.a.email, password)
	var found bool
	for _, c := range p.cookies {
		if c.Name == sessionCookie {
			found = true
			if !c.Secure || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode {
				t.Errorf("session cookie on https %+v, want Secure, HttpOnly, SameSite=Lax", c)
			}
		}
	}
	if !found {
		t.Fatalf("no session cookie: %d %s", p.code, p.body)
	}
}

// TestLiveWarning checks decisions §16: serve's warning about how it runs
// (live providers over plain HTTP) is on every live-mode page, escaped,
// and on no test-mode page.
func TestLiveWarning(t *testing.T) {
	t.Parallel()
	const warning = "Live providers are configured & served over plain HTTP"
	s := newSite(t, func(c *Config) { c.LiveWarning = warning })
	b := s.signedIn()
	for _, path := range []string{"/dashboard/live/", "/dashboard/live/payments", "/dashboard/live/developers"} {
		p := b.get(path)
		if p.code != http.StatusOK || !strings.Contains(p.body, `id="serve-warning">Live providers are configured &amp; served over plain HTTP</div>`) {
			t.Errorf("%s: %d, the warning is not shown:\n%s", path, p.code, p.body)
		}
	}
	for _, path := range []string{"/dashboard/test/", "/dashboard/test/payments", "/dashboard/login"} {
		if p := b.get(path); strings.Contains(p.body, "serve-warning") || strings.Contains(p.body, "plain HTTP") {
			t.Errorf("%s shows the live warning:\n%s", path, p.body)
		}
	}
	// Without a warning, live pages show none.
	quiet := newSite(t).signedIn()
	if p := quiet.get("/dashboard/live/"); p.code != http.StatusOK || strings.Contains(p.body, "serve-warning") {
		t.Errorf("live page without a warning: %d\n%s", p.code, p.body)
	}
}

func TestSignInThrottled(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	// Per address: many accounts from one address.
	spray := s.browser()
	spray.addr = "203.0.113.9:1234"
	var refused bool
	for i := range 2 * loginPerAddr {
		p := spray.signIn("user"+string(rune('a'+i%26))+strings.Repeat("x", i)+"@spray.example", "whatever password")
		if p.code == http.StatusTooManyRequests {
			refused = true
			break
		}
	}
	if !refused {
		t.Errorf("%d attempts from one address were never throttled", 2*loginPerAddr)
	}
}

func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	b := s.browser()
	for _, path := range []string{"/dashboard/login", "/dashboard/static/dashboard.css", "/dashboard/test/nope"} {
		p := b.get(path)
		csp := p.header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "script-src 'self'") {
			t.Errorf("%s: CSP %q", path, csp)
		}
		if p.header.Get("X-Content-Type-Options") != "nosniff" || p.header.Get("X-Frame-Options") != "DENY" || p.header.Get("Referrer-Policy") != "same-origin" {
			t.Errorf("%s: headers %v", path, p.header)
		}
	}
	if p := b.get("/dashboard/login"); p.header.Get("Cache-Control") != "no-store" {
		t.Errorf("login page Cache-Control %q", p.header.Get("Cache-Control"))
	}
	if p := b.get("/dashboard/static/"); p.code != http.StatusNotFound {
		t.Errorf("static directory: %d, want 404", p.code)
	}
	css := b.get("/dashboard/static/dashboard.css")
	if css.code != http.StatusOK || !strings.HasPrefix(css.header.Get("Content-Type"), "text/css") {
		t.Errorf("static css: %d %q", css.code, css.header.Get("Content-Type"))
	}
	// No inline script or style anywhere in the templates: the CSP would
	// block them.
	b.mustSignIn(s.a.email)
	for _, path := range []string{"/dashboard/test/developers", "/dashboard/test/webhook", "/dashboard/test/audit", "/dashboard/account", "/dashboard/login"} {
		p := b.get(path)
		for _, bad := range []string{"style=", "onclick", "<script>", "<style"} {
			if strings.Contains(p.body, bad) {
				t.Errorf("%s contains %q", path, bad)
			}
		}
	}
}

func TestCSRF(t *testing.T) {
	t.Parallel()
	s, b := signedInSite(t)
	keys := func() int {
		ks, err := s.st.APIKeys(context.Background(), paygate.APIKeyQuery{MerchantID: s.a.id})
		if err != nil {
			t.Fatal(err)
		}
		return len(ks)
	}
	before := keys()
	for name, form := range map[string]url.Values{
		"Missing": {},
		"Wrong":   {"csrf": {"bm90IHRoZSB0b2tlbg"}},
	} {
		t.Run("Err"+name, func(t *testing.T) {
			p := b.do(http.MethodPost, "/dashboard/test/keys", form)
			if p.code != http.StatusForbidden || strings.Contains(p.body, "new-secret") {
				t.Errorf("POST /keys with a %s token: %d", name, p.code)
			}
			if p := b.do(http.MethodPost, "/dashboard/logout", form); p.code != http.StatusForbidden {
				t.Errorf("logout with a %s token: %d", name, p.code)
			}
		})
	}
	if got := keys(); got != before {
		t.Fatalf("keys %d → %d after refused forms", before, got)
	}
	// Another session's token does not work either.
	other := s.browser()
	other.mustSignIn(s.a.email)
	foreign := csrfOf(t, other.get("/dashboard/test/developers"))
	if p := b.do(http.MethodPost, "/dashboard/test/keys", url.Values{"csrf": {foreign}}); p.code != http.StatusForbidden {
		t.Errorf("another session's token: %d", p.code)
	}
	p := b.post("/dashboard/test/developers", "/dashboard/test/keys", nil)
	if p.code != http.StatusOK || !strings.Contains(p.body, `id="new-secret">smtgw_sk_test_`) {
		t.Fatalf("POST /keys with the token: %d\n%s", p.code, p.body)
	}
	if got := keys(); got != before+1 {
		t.Errorf("keys %d → %d after creating one", before, got)
	}
	// The session still works: the refused logouts did nothing.
	if p := b.get("/dashboard/test/developers"); p.code != http.StatusOK {
		t.Errorf("after refused logouts: %d", p.code)
	}
}

func TestSessionExpiry(t *testing.T) {
	t.Parallel()

	t.Run("Idle", func(t *testing.T) {
		t.Parallel()
		s := newSite(t, func(c *Config) { c.SessionIdle = 30 * time.Minute; c.SessionMax = 12 * time.Hour })
		b := s.signedIn()
		// Activity keeps the session: 20 minutes apart, three times.
		for i := range 3 {
			s.clock.Add(20 * time.Minute)
			if p := b.get("/dashboard/test/developers"); p.code != http.StatusOK {
				t.Fatalf("request %d, 20 minutes after the last: %d %q", i+1, p.code, p.location)
			}
		}
		s.clock.Add(31 * time.Minute)
		p := b.get("/dashboard/test/developers")
		if p.code != http.StatusSeeOther || !strings.HasPrefix(p.location, "/dashboard/login") {
			t.Fatalf("after 31 idle minutes: %d %q", p.code, p.location)
		}
		if b.cookies[sessionCookie] != "" {
			t.Error("the expired session's cookie was kept")
		}
	})

	t.Run("Absolute", func(t *testing.T) {
		t.Parallel()
		s := newSite(t, func(c *Config) { c.SessionIdle = 30 * time.Minute; c.SessionMax = time.Hour })
		b := s.signedIn()
		for range 2 {
			s.clock.Add(25 * time.Minute)
			if p := b.get("/dashboard/test/audit"); p.code != http.StatusOK {
				t.Fatalf("within the hour: %d", p.code)
			}
		}
		s.clock.Add(11 * time.Minute) // 61 minutes after sign-in, 11 idle
		if p := b.get("/dashboard/test/audit"); p.code != http.StatusSeeOther {
			t.Fatalf("61 minutes after sign-in: %d, want a redirect to sign in", p.code)
		}
	})
}

func TestSignOut(t *testing.T) {
	t.Parallel()
	s, b := signedInSite(t)
	token := b.cookies[sessionCookie]
	p := b.post("/dashboard/test/developers", "/dashboard/logout", nil)
	if p.code != http.StatusSeeOther || p.location != "/dashboard/login" || b.cookies[sessionCookie] != "" {
		t.Fatalf("sign out: %d %q, cookie %q", p.code, p.location, b.cookies[sessionCookie])
	}
	// The token is dead on the server, not only forgotten by the browser.
	b.cookies[sessionCookie] = token
	if p := b.get("/dashboard/test/developers"); p.code != http.StatusSeeOther || !strings.HasPrefix(p.location, "/dashboard/login") {
		t.Fatalf("revoked session: %d %q", p.code, p.location)
	}
	if got := s.auditActions(s.a.id); len(got) == 0 || got[0] != paygate.AuditSignOut {
		t.Errorf("audit after sign-out: %v", got)
	}
}

func TestChangePassword(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	laptop, phone := s.browser(), s.browser()
	laptop.mustSignIn(s.a.email)
	phone.mustSignIn(s.a.email)

	change := func(current, next, confirm string) reply {
		return laptop.post("/dashboard/account", "/dashboard/account", url.Values{
			"action": {"password"}, "current_password": {current}, "new_password": {next}, "confirm_password": {confirm},
		})
	}
	for name, c := range map[string][3]string{
		"ErrWrongCurrent": {"not my password!", "a brand new passphrase", "a brand new passphrase"},
		"ErrTooShort":     {password, "short", "short"},
		"ErrMismatch":     {password, "a brand new passphrase", "a brand new passphrase?"},
	} {
		if p := change(c[0], c[1], c[2]); p.code != http.StatusBadRequest || !strings.Contains(p.body, `id="password-error"`) {
			t.Errorf("%s: %d", name, p.code)
		}
	}
	if p := phone.get("/dashboard/test/developers"); p.code != http.StatusOK {
		t.Fatalf("refused changes signed the phone out: %d", p.code)
	}
	const next = "a brand new passphrase"
	if p := change(password, next, next); p.code != http.StatusSeeOther {
		t.Fatalf("change password: %d\n%s", p.code, p.body)
	}
	// This session goes on; the other one is revoked.
	if p := laptop.get("/dashboard/test/developers"); p.code != http.StatusOK {
		t.Errorf("the session that changed the password: %d", p.code)
	}
	if p := phone.get("/dashboard/test/developers"); p.code != http.StatusSeeOther {
		t.Errorf("the other session after a password change: %d, want a redirect to sign in", p.code)
	}
	if p := s.browser().signIn(s.a.email, password); p.code != http.StatusUnauthorized {
		t.Errorf("old password: %d", p.code)
	}
	s.browser().signIn(s.a.email, next)
	if got := s.auditActions(s.a.id); countOf(got, paygate.AuditPasswordChanged) != 1 {
		t.Errorf("audit: %v", got)
	}
}

func TestTimeZone(t *testing.T) {
	t.Parallel()
	_, b := signedInSite(t)
	if p := b.post("/dashboard/account", "/dashboard/account", url.Values{"action": {"zone"}, "tz": {"Mars/Olympus"}}); p.code != http.StatusBadRequest {
		t.Errorf("unknown zone: %d", p.code)
	}
	if p := b.post("/dashboard/account", "/dashboard/account", url.Values{"action": {"zone"}, "tz": {"Asia/Tokyo"}}); p.code != http.StatusSeeOther {
		t.Fatalf("set zone: %d", p.code)
	}
	p := b.get("/dashboard/test/audit")
	if !strings.Contains(p.body, "Times are in Asia/Tokyo") || !strings.Contains(p.body, "JST") {
		t.Errorf("audit page not in Tokyo time:\n%s", p.body)
	}
	for _, bad := range []string{"Local", "../../etc/passwd", "/etc/localtime", ""} {
		if _, ok := loadZone(bad); ok {
			t.Errorf("loadZone(%q) accepted", bad)
		}
	}
}

func TestSwitchURL(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		path string
		mode paygate.Mode
		want string
	}{
		{"/dashboard/test/", paygate.ModeTest, "/dashboard/live/"},
		{"/dashboard/test/payments/0190a4c2-0000-7000-8000-000000000000", paygate.ModeTest, "/dashboard/live/payments"},
		{"/dashboard/live/keys/0190a4c2-0000-7000-8000-000000000000/rotate", paygate.ModeLive, "/dashboard/test/developers"},
		{"/dashboard/live/webhook/deliveries/x", paygate.ModeLive, "/dashboard/test/webhook"},
		{"/dashboard/account", paygate.ModeTest, "/dashboard/account?mode=live"},
	} {
		if got := switchURL(c.path, c.mode); got != c.want {
			t.Errorf("switchURL(%q, %s) = %q, want %q", c.path, c.mode, got, c.want)
		}
	}
}
