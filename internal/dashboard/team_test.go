package dashboard

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pquerna/otp/totp"

	"github.com/paygate/paygate/internal/auth"
	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
)

// addUser adds a user of the role to a merchant of the site (password
// password) and returns it.
func (s *site) addUser(merchantID, email string, role paygate.Role) paygate.User {
	s.t.Helper()
	hash, err := auth.HashPassword(password)
	if err != nil {
		s.t.Fatal(err)
	}
	now := s.clock.Now()
	u := paygate.User{ID: id.New(), MerchantID: merchantID, Email: email, PasswordHash: hash, Role: role, CreatedAt: now, UpdatedAt: now}
	if err := s.st.Commit(context.Background(), paygate.Unit{Ops: []paygate.Op{u}}); err != nil {
		s.t.Fatal(err)
	}
	return u
}

// user reads a user back.
func (s *site) user(userID string) paygate.User {
	s.t.Helper()
	us, err := s.st.Users(context.Background(), paygate.UserQuery{ID: userID})
	if err != nil || len(us) != 1 {
		s.t.Fatalf("user %s: %v %v", userID, us, err)
	}
	return us[0]
}

// postSigned posts a form to path with the browser's session CSRF token.
func (b *browser) postSigned(path string, form url.Values) reply {
	b.s.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	form.Set("csrf", csrfToken(b.cookies[sessionCookie]))
	return b.do(http.MethodPost, path, form)
}

// wantAccess is the policy of decisions.md section 17, written out: for
// each declared access, the roles allowed in test mode and in live mode.
var wantAccess = map[access]map[paygate.Mode][]paygate.Role{
	needRead: {
		paygate.ModeTest: {paygate.RoleOwner, paygate.RoleAdmin, paygate.RoleDeveloper, paygate.RoleAnalyst},
		paygate.ModeLive: {paygate.RoleOwner, paygate.RoleAdmin, paygate.RoleDeveloper, paygate.RoleAnalyst},
	},
	needDeveloper: {
		paygate.ModeTest: {paygate.RoleOwner, paygate.RoleAdmin, paygate.RoleDeveloper},
		paygate.ModeLive: {paygate.RoleOwner, paygate.RoleAdmin, paygate.RoleDeveloper},
	},
	needPaymentAction: {
		paygate.ModeTest: {paygate.RoleOwner, paygate.RoleAdmin, paygate.RoleDeveloper},
		paygate.ModeLive: {paygate.RoleOwner, paygate.RoleAdmin},
	},
	needAdmin: {
		paygate.ModeTest: {paygate.RoleOwner, paygate.RoleAdmin},
		paygate.ModeLive: {paygate.RoleOwner, paygate.RoleAdmin},
	},
	needOwner: {
		paygate.ModeTest: {paygate.RoleOwner},
		paygate.ModeLive: {paygate.RoleOwner},
	},
}

// TestEveryRouteDeclaresAccess walks the real route table: every route
// declares what it needs, and New refuses one that does not.
func TestEveryRouteDeclaresAccess(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	for _, rt := range s.d.routes {
		if _, ok := wantAccess[rt.need]; !ok {
			t.Errorf("route %s %s declares no access the policy knows (%v)", rt.method, rt.pattern, rt.need)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("New accepted a route that declares no access")
		}
	}()
	d := &Dashboard{}
	d.routes = []route{{method: http.MethodGet, pattern: "/x", h: nil}}
	checkRoutes(d.routes)
}

// TestRoutesByRole requests every route of the real route table in both
// modes as every role: a role the policy does not allow is answered 403
// with the error page, before the page runs; an allowed one is not.
func TestRoutesByRole(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	browsers := map[paygate.Role]*browser{}
	for _, role := range paygate.Roles {
		email := string(role) + "@books.example"
		s.addUser(s.a.id, email, role)
		b := s.browser()
		b.mustSignIn(email)
		browsers[role] = b
	}
	// The card fields' origins are developer settings, as the webhook's
	// are: one policy for both.
	needs := map[string]access{}
	for _, rt := range s.d.routes {
		if rt.method == http.MethodPost {
			needs[rt.pattern] = rt.need
		}
	}
	if needs["/origins"] != needs["/webhook"] {
		t.Errorf("POST /origins needs %v, POST /webhook %v: want the same", needs["/origins"], needs["/webhook"])
	}
	params := regexp.MustCompile(`\{[^}]+\}`)
	for _, rt := range s.d.routes {
		for _, mode := range []paygate.Mode{paygate.ModeTest, paygate.ModeLive} {
			path := routePath(root+"/"+string(mode), rt.pattern)
			path = strings.TrimSuffix(params.ReplaceAllString(path, id.New()), "{$}")
			for _, role := range paygate.Roles {
				allowed := false
				for _, r := range wantAccess[rt.need][mode] {
					allowed = allowed || r == role
				}
				var p reply
				if rt.method == http.MethodPost {
					p = browsers[role].postSigned(path, nil)
				} else {
					p = browsers[role].get(path)
				}
				denied := p.code == http.StatusForbidden && strings.Contains(p.body, "Not allowed")
				if allowed == denied {
					t.Errorf("%s %s as %s: %d (allowed by the policy: %v)", rt.method, path, role, p.code, allowed)
				}
			}
		}
	}
}

// TestButtonsByRole: a button the role cannot use is not shown.
func TestButtonsByRole(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	s.addUser(s.a.id, "analyst@books.example", paygate.RoleAnalyst)
	s.addUser(s.a.id, "dev@books.example", paygate.RoleDeveloper)
	s.addUser(s.a.id, "admin@books.example", paygate.RoleAdmin)
	for _, c := range []struct {
		email, path, button string
		shown               bool
	}{
		{s.a.email, "/dashboard/test/developers", `id="create-key"`, true},
		{"analyst@books.example", "/dashboard/test/developers", `id="create-key"`, false},
		{"analyst@books.example", "/dashboard/test/webhook", `id="save-webhook"`, false},
		{"dev@books.example", "/dashboard/live/developers", `id="create-key"`, true},
		{s.a.email, "/dashboard/test/", `id="nav-team"`, true},
		{"admin@books.example", "/dashboard/test/", `id="nav-team"`, false},
		{"dev@books.example", "/dashboard/test/", `id="nav-team"`, false},
	} {
		b := s.browser()
		b.mustSignIn(c.email)
		p := b.get(c.path)
		if p.code != http.StatusOK || strings.Contains(p.body, c.button) != c.shown {
			t.Errorf("%s on %s: %d, %s shown %v, want %v", c.email, c.path, p.code, c.button, !c.shown, c.shown)
		}
	}
}

func TestSignInLockout(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	b := s.browser()
	for i := range paygate.MaxFailedSignIns - 1 {
		if p := b.signIn(s.b.email, "wrong password number"); p.code != http.StatusUnauthorized {
			t.Fatalf("failure %d: %d", i+1, p.code)
		}
	}
	p := b.signIn(s.b.email, "wrong password number")
	if p.code != http.StatusLocked || !strings.Contains(p.body, "locked") {
		t.Fatalf("failure %d: %d, want the account locked\n%s", paygate.MaxFailedSignIns, p.code, p.body)
	}
	// The right password now gets the same answer, and no session.
	p = b.signIn(s.b.email, password)
	if p.code != http.StatusLocked || b.cookies[sessionCookie] != "" {
		t.Fatalf("right password on a locked account: %d, session %q", p.code, b.cookies[sessionCookie])
	}
	actions := s.auditActions(s.b.id)
	if countOf(actions, paygate.AuditUserLocked) != 1 || countOf(actions, paygate.AuditSignInFailed) != paygate.MaxFailedSignIns+1 {
		t.Errorf("audit after the lockout: %v", actions)
	}
	// Another account is not affected.
	s.browser().mustSignIn(s.a.email)
}

func TestLockoutEndsAndOwnerUnlocks(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	dev := s.addUser(s.a.id, "dev@books.example", paygate.RoleDeveloper)
	b := s.browser()
	for range paygate.MaxFailedSignIns {
		b.signIn(dev.Email, "wrong password number")
	}
	if !s.user(dev.ID).LockedAt(s.clock.Now()) {
		t.Fatal("not locked")
	}
	// After 30 minutes it signs in again.
	s.clock.Add(paygate.LockoutDuration)
	s.browser().mustSignIn(dev.Email)

	for range paygate.MaxFailedSignIns {
		b.signIn(dev.Email, "wrong password number")
	}
	owner := s.signedIn()
	page := owner.get("/dashboard/test/team")
	if page.code != http.StatusOK || !strings.Contains(page.body, `id="unlock-`+dev.ID+`"`) {
		t.Fatalf("team page: %d\n%s", page.code, page.body)
	}
	if p := owner.postSigned("/dashboard/test/team/users/"+dev.ID+"/unlock", nil); p.code != http.StatusSeeOther {
		t.Fatalf("unlock: %d\n%s", p.code, p.body)
	}
	s.browser().mustSignIn(dev.Email)
	if got := countOf(s.auditActions(s.a.id), paygate.AuditUserUnlocked); got != 1 {
		t.Errorf("%d unlocks audited", got)
	}
}

func TestTeamInviteAndRoles(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	owner := s.signedIn()
	p := owner.postSigned("/dashboard/test/team/invite", url.Values{"email": {"New@Books.example"}, "role": {"analyst"}})
	m := regexp.MustCompile(`id="invite-link" value="([^"]+)"`).FindStringSubmatch(p.body)
	if p.code != http.StatusOK || m == nil {
		t.Fatalf("invite: %d\n%s", p.code, p.body)
	}
	link, err := url.Parse(html.UnescapeString(m[1]))
	if err != nil {
		t.Fatal(err)
	}
	guest := s.browser()
	form := guest.get(link.Path)
	if form.code != http.StatusOK || !strings.Contains(form.body, "new@books.example") {
		t.Fatalf("invitation page: %d\n%s", form.code, form.body)
	}
	p = guest.do(http.MethodPost, link.Path, url.Values{"csrf": {csrfOf(t, form)},
		"new_password": {"a long new password"}, "confirm_password": {"a long new password"}})
	if p.code != http.StatusSeeOther || guest.cookies[sessionCookie] == "" {
		t.Fatalf("accept: %d %s", p.code, p.body)
	}
	// Signed in as an analyst: no Team page, no refunds.
	if p := guest.get("/dashboard/test/team"); p.code != http.StatusForbidden {
		t.Errorf("analyst on the team page: %d", p.code)
	}
	// The link works once.
	if p := s.browser().get(link.Path); p.code != http.StatusGone || !strings.Contains(p.body, "no longer works") {
		t.Errorf("used link: %d", p.code)
	}

	newUser, err := s.st.UserByEmail(context.Background(), "new@books.example")
	if err != nil || newUser.Role != paygate.RoleAnalyst {
		t.Fatalf("invited user: %+v %v", newUser, err)
	}
	// Roles change; the last owner stays one.
	if p := owner.postSigned("/dashboard/test/team/users/"+newUser.ID+"/role", url.Values{"role": {"admin"}}); p.code != http.StatusSeeOther {
		t.Errorf("set role: %d", p.code)
	}
	ownerID := s.mustUserID(s.a.email)
	if p := owner.postSigned("/dashboard/test/team/users/"+ownerID+"/role", url.Values{"role": {"admin"}}); p.code != http.StatusConflict || !strings.Contains(p.body, "keep an owner") {
		t.Errorf("demote the last owner: %d", p.code)
	}
	// Remove signs out.
	if p := owner.postSigned("/dashboard/test/team/users/"+newUser.ID+"/remove", nil); p.code != http.StatusSeeOther {
		t.Errorf("remove: %d", p.code)
	}
	if p := guest.get("/dashboard/test/"); p.code != http.StatusSeeOther {
		t.Errorf("removed user's session still works: %d", p.code)
	}
	if p := s.browser().signIn("new@books.example", "a long new password"); p.code != http.StatusUnauthorized {
		t.Errorf("removed user signs in: %d", p.code)
	}
	// Another merchant's user is not found.
	other := s.mustUserID(s.b.email)
	if p := owner.postSigned("/dashboard/test/team/users/"+other+"/remove", nil); p.code != http.StatusNotFound {
		t.Errorf("remove another merchant's user: %d", p.code)
	}
	// An expired link does not work.
	p = owner.postSigned("/dashboard/test/team/invite", url.Values{"email": {"late@books.example"}, "role": {"developer"}})
	m = regexp.MustCompile(`id="invite-link" value="([^"]+)"`).FindStringSubmatch(p.body)
	if m == nil {
		t.Fatalf("second invite: %d", p.code)
	}
	late, _ := url.Parse(html.UnescapeString(m[1]))
	s.clock.Add(paygate.InvitationTTL)
	if p := s.browser().get(late.Path); p.code != http.StatusGone {
		t.Errorf("expired link: %d", p.code)
	}
	actions := s.auditActions(s.a.id)
	for _, a := range []string{paygate.AuditUserInvited, paygate.AuditUserCreated, paygate.AuditUserRoleChanged, paygate.AuditUserRemoved} {
		if countOf(actions, a) == 0 {
			t.Errorf("no %s in the audit log %v", a, actions)
		}
	}
}

func (s *site) mustUserID(email string) string {
	s.t.Helper()
	u, err := s.st.UserByEmail(context.Background(), email)
	if err != nil {
		s.t.Fatal(err)
	}
	return u.ID
}

// enrolMFA turns MFA on for the browser's user from the Account page and
// returns the secret and the recovery codes.
func enrolMFA(t *testing.T, s *site, b *browser) (string, []string) {
	t.Helper()
	page := b.get("/dashboard/account/mfa?mode=test")
	secret := regexp.MustCompile(`id="totp-secret">([A-Z2-7]+)<`).FindStringSubmatch(page.body)
	if page.code != http.StatusOK || secret == nil || !strings.Contains(page.body, `src="data:image/png;base64,`) {
		t.Fatalf("enrolment page: %d\n%s", page.code, page.body)
	}
	code, err := totp.GenerateCode(secret[1], s.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	p := b.postSigned("/dashboard/account/mfa?mode=test", url.Values{"sealed": {formValue(t, page.body, "sealed")}, "code": {code}})
	codes := regexp.MustCompile(`<li>([a-z2-7]{5}-[a-z2-7]{5})</li>`).FindAllStringSubmatch(p.body, -1)
	if p.code != http.StatusOK || len(codes) != recoveryCodes {
		t.Fatalf("confirm enrolment: %d\n%s", p.code, p.body)
	}
	out := make([]string, len(codes))
	for i, c := range codes {
		out[i] = c[1]
	}
	return secret[1], out
}

// secondStep posts a code to the second step of a browser that gave the
// right password.
func secondStep(t *testing.T, b *browser, code string) reply {
	t.Helper()
	form := b.get("/dashboard/login/mfa")
	if form.code != http.StatusOK {
		t.Fatalf("code form: %d %s", form.code, form.location)
	}
	return b.do(http.MethodPost, "/dashboard/login/mfa", url.Values{"csrf": {csrfOf(t, form)}, "code": {code}})
}

func TestMFASignIn(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	owner := s.signedIn()
	secret, codes := enrolMFA(t, s, owner)
	if u := s.user(s.mustUserID(s.a.email)); !u.MFAEnabled() || strings.Contains(string(u.MFASecret), secret) {
		t.Fatalf("MFA stored: enabled %v, secret in clear %v", u.MFAEnabled(), strings.Contains(string(u.MFASecret), secret))
	}
	s.clock.Add(time.Minute)

	b := s.browser()
	p := b.signIn(s.a.email, password)
	if p.code != http.StatusSeeOther || p.location != "/dashboard/login/mfa" || b.cookies[sessionCookie] != "" {
		t.Fatalf("password of an MFA user: %d %q, session %q", p.code, p.location, b.cookies[sessionCookie])
	}
	// Without the code nothing is open.
	if p := b.get("/dashboard/test/"); p.code != http.StatusSeeOther {
		t.Errorf("dashboard before the code: %d", p.code)
	}
	// A wrong code.
	if p := secondStep(t, b, "000000"); p.code != http.StatusUnauthorized || b.cookies[sessionCookie] != "" {
		t.Fatalf("wrong code: %d", p.code)
	}
	// The right code signs in.
	code, _ := totp.GenerateCode(secret, s.clock.Now())
	if p := secondStep(t, b, code); p.code != http.StatusSeeOther || b.cookies[sessionCookie] == "" {
		t.Fatalf("right code: %d %s", p.code, p.body)
	}
	// The same code again, in its step, is refused.
	again := s.browser()
	again.signIn(s.a.email, password)
	if p := secondStep(t, again, code); p.code != http.StatusUnauthorized || again.cookies[sessionCookie] != "" {
		t.Errorf("reused code: %d", p.code)
	}
	// A recovery code works once.
	if p := secondStep(t, again, codes[0]); p.code != http.StatusSeeOther || again.cookies[sessionCookie] == "" {
		t.Errorf("recovery code: %d", p.code)
	}
	third := s.browser()
	third.signIn(s.a.email, password)
	if p := secondStep(t, third, codes[0]); p.code != http.StatusUnauthorized || third.cookies[sessionCookie] != "" {
		t.Errorf("recovery code used twice: %d", p.code)
	}
	// Wrong codes count as failed sign-ins.
	if got := countOf(s.auditActions(s.a.id), paygate.AuditSignInFailed); got != 3 {
		t.Errorf("%d failed sign-ins audited, want 3 (wrong, reused, used recovery code)", got)
	}
	// A sign-in resets the count: only the failure after the last one
	// counts towards the lockout.
	if got := s.user(s.mustUserID(s.a.email)).FailedSignIns; got != 1 {
		t.Errorf("failed count: %d, want 1", got)
	}
	// An owner turns MFA off for a user who lost their device.
	other := s.addUser(s.a.id, "owner2@books.example", paygate.RoleOwner)
	second := s.browser()
	second.mustSignIn(other.Email)
	// Never one's own: a stolen owner session must not drop the owner's
	// second factor to enrol another device.
	if p := second.postSigned("/dashboard/test/team/users/"+other.ID+"/mfa-reset", nil); p.code != http.StatusForbidden {
		t.Errorf("an owner's reset of their own MFA: %d, want 403", p.code)
	}
	if p := second.postSigned("/dashboard/test/team/users/"+s.mustUserID(s.a.email)+"/mfa-reset", nil); p.code != http.StatusSeeOther {
		t.Errorf("MFA reset: %d", p.code)
	}
	if u := s.user(s.mustUserID(s.a.email)); u.MFAEnabled() || u.MFASecret != nil {
		t.Errorf("after the MFA reset: enabled %v", u.MFAEnabled())
	}
	if p := s.browser().signIn(s.a.email, password); p.code != http.StatusSeeOther || p.location != "/dashboard/test/" {
		t.Errorf("sign-in after the MFA reset: %d %q", p.code, p.location)
	}
}

func TestRequireMFA(t *testing.T) {
	t.Parallel()
	s := newSite(t, func(c *Config) { c.RequireMFA = true })
	b := s.browser()
	p := b.signIn(s.a.email, password)
	if p.code != http.StatusSeeOther || !strings.HasPrefix(p.location, "/dashboard/login/enrol") || b.cookies[sessionCookie] != "" {
		t.Fatalf("password without MFA: %d %q", p.code, p.location)
	}
	page := b.get(p.location)
	secret := regexp.MustCompile(`id="totp-secret">([A-Z2-7]+)<`).FindStringSubmatch(page.body)
	if page.code != http.StatusOK || secret == nil {
		t.Fatalf("enrolment: %d\n%s", page.code, page.body)
	}
	code, _ := totp.GenerateCode(secret[1], s.clock.Now())
	p = b.do(http.MethodPost, "/dashboard/login/enrol", url.Values{"csrf": {csrfOf(t, page)},
		"sealed": {formValue(t, page.body, "sealed")}, "code": {code}})
	if p.code != http.StatusOK || b.cookies[sessionCookie] == "" || !strings.Contains(p.body, "recovery-codes") {
		t.Fatalf("confirm: %d\n%s", p.code, p.body)
	}
	if p := b.get("/dashboard/test/"); p.code != http.StatusOK {
		t.Errorf("after enrolment: %d", p.code)
	}
}
