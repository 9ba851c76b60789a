package dashboard

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pquerna/otp/totp"

	"github.com/paygate/paygate/internal/paygate"
)

// lockAfterRead is a store that, once armed, locks the user it just read:
// as failures running in parallel do between a request's read of the user
// and its write.
type lockAfterRead struct {
	Store
	armed atomic.Bool
	now   func() time.Time
}

func (l *lockAfterRead) lock(ctx context.Context, u paygate.User) {
	if !l.armed.CompareAndSwap(true, false) {
		return
	}
	err := l.Store.Commit(ctx, paygate.Unit{Ops: []paygate.Op{paygate.SignInFailure{MerchantID: u.MerchantID,
		UserID: u.ID, LockAfter: 1, LockUntil: l.now().Add(paygate.LockoutDuration)}}})
	if err != nil {
		panic(err)
	}
}

func (l *lockAfterRead) Users(ctx context.Context, q paygate.UserQuery) ([]paygate.User, error) {
	us, err := l.Store.Users(ctx, q)
	if err == nil && len(us) == 1 {
		l.lock(ctx, us[0])
	}
	return us, err
}

func (l *lockAfterRead) UserByEmail(ctx context.Context, email string) (paygate.User, error) {
	u, err := l.Store.UserByEmail(ctx, email)
	if err == nil {
		l.lock(ctx, u)
	}
	return u, err
}

func lockingSite(t *testing.T) (*site, *lockAfterRead) {
	var l *lockAfterRead
	s := newSite(t, func(c *Config) {
		l = &lockAfterRead{Store: c.Store, now: c.Clock.Now}
		c.Store = l
	})
	return s, l
}

func TestMFACodeRefusedWhenLockedInParallel(t *testing.T) {
	t.Parallel()
	s, l := lockingSite(t)
	secret, codes := enrolMFA(t, s, s.signedIn())
	for _, code := range []func() string{
		func() string { c, _ := totp.GenerateCode(secret, s.clock.Now()); return c },
		func() string { return codes[0] },
	} {
		s.clock.Add(time.Minute)
		uid := s.mustUserID(s.a.email)
		must(t, s.st.Commit(context.Background(), paygate.Unit{Ops: []paygate.Op{paygate.UserUnlock{MerchantID: s.a.id, UserID: uid, At: s.clock.Now()}}}))
		b := s.browser()
		b.signIn(s.a.email, password)
		form := b.get("/dashboard/login/mfa")
		if form.code != http.StatusOK {
			t.Fatalf("code form: %d", form.code)
		}
		// The code's request reads the user unlocked; the lock lands
		// right after that read.
		l.armed.Store(true)
		p := b.do(http.MethodPost, "/dashboard/login/mfa", url.Values{"csrf": {csrfOf(t, form)}, "code": {code()}})
		if p.code != http.StatusLocked || b.cookies[sessionCookie] != "" {
			t.Errorf("right code while the account got locked: %d, session %q\n%s", p.code, b.cookies[sessionCookie], p.body)
		}
	}
}

func TestPasswordSignInRefusedWhenLockedInParallel(t *testing.T) {
	t.Parallel()
	s, l := lockingSite(t)
	b := s.browser()
	l.armed.Store(true)
	p := b.signIn(s.a.email, password)
	if p.code != http.StatusLocked || b.cookies[sessionCookie] != "" {
		t.Errorf("right password while the account got locked: %d, session %q", p.code, b.cookies[sessionCookie])
	}
}

func TestMFAStepThrottledPerUser(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	secret, codes := enrolMFA(t, s, s.signedIn())
	s.clock.Add(time.Minute)
	// Every attempt counts, right or not: ten sign-ins with recovery
	// codes spend the user's budget of the minute.
	for i := range loginPerAccount {
		b := s.browser()
		b.signIn(s.a.email, password)
		if p := secondStep(t, b, codes[i]); p.code != http.StatusSeeOther {
			t.Fatalf("recovery code %d: %d", i, p.code)
		}
	}
	b := s.browser()
	b.addr = "198.51.100.7:4444" // another address: the user's budget still counts
	b.signIn(s.a.email, password)
	code, _ := totp.GenerateCode(secret, s.clock.Now())
	p := secondStep(t, b, code)
	if p.code != http.StatusTooManyRequests || b.cookies[sessionCookie] != "" || p.header.Get("Retry-After") == "" {
		t.Errorf("attempt %d in a minute: %d, session %q", loginPerAccount+1, p.code, b.cookies[sessionCookie])
	}
}

func TestAccountMFARefusesReplacement(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	b := s.signedIn()
	enrolMFA(t, s, b)
	u := s.user(s.mustUserID(s.a.email))
	// A fresh secret sealed as the enrolment page would, and its code.
	const other = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP"
	sealed, err := siteVault.SealSecret(totpContext(u), []byte(other))
	must(t, err)
	code, _ := totp.GenerateCode(other, s.clock.Now())
	p := b.postSigned("/dashboard/account/mfa?mode=test", url.Values{"sealed": {base64.RawURLEncoding.EncodeToString(sealed)}, "code": {code}})
	if p.code != http.StatusForbidden {
		t.Errorf("replacing MFA without the current factor: %d", p.code)
	}
	if after := s.user(u.ID); string(after.MFASecret) != string(u.MFASecret) {
		t.Error("the TOTP secret was replaced")
	}
}

// oldPendingMAC is the pending cookie's MAC as it was keyed before: by
// the password hash only, which the database holds.
func oldPendingMAC(u paygate.User, purpose string, until int64) string {
	m := hmac.New(sha256.New, []byte("paygate mfa pending\x00"+u.PasswordHash))
	fmt.Fprintf(m, "%s\x00%s\x00%d", u.ID, purpose, until)
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func TestPendingCookieNeedsServerKey(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	secret, _ := enrolMFA(t, s, s.signedIn())
	u := s.user(s.mustUserID(s.a.email))
	// Someone who read the database (the password hash) forges a cookie.
	until := s.clock.Now().Add(pendingTTL).Unix()
	b := s.browser()
	b.cookies[mfaCookie] = strings.Join([]string{u.ID, pendingVerify, strconv.FormatInt(until, 10), oldPendingMAC(u, pendingVerify, until)}, ".")
	if p := b.get("/dashboard/login/mfa"); p.code != http.StatusSeeOther || p.location != "/dashboard/login" {
		t.Errorf("pending cookie keyed by the password hash only: %d %q", p.code, p.location)
	}
	// An enrol cookie is no use once the user has MFA, even one signed
	// with the server's key (as the node itself would have signed it).
	keys, err := s.d.cfg.Vault.DerivedKeys(pendingLabel)
	if err != nil {
		t.Fatal(err)
	}
	b.cookies[mfaCookie] = strings.Join([]string{u.ID, pendingEnrol, strconv.FormatInt(until, 10), pendingMAC(keys[0], u, pendingEnrol, until)}, ".")
	if p := b.get("/dashboard/login/enrol"); p.code != http.StatusSeeOther {
		t.Errorf("enrol cookie of a user with MFA: %d", p.code)
	}

	// A verify cookie, then an owner resets the user's MFA: sign in again.
	s.clock.Add(time.Minute)
	v := s.browser()
	v.signIn(s.a.email, password)
	form := v.get("/dashboard/login/mfa")
	if form.code != http.StatusOK {
		t.Fatalf("code form: %d", form.code)
	}
	must(t, s.st.Commit(context.Background(), paygate.Unit{Ops: []paygate.Op{paygate.MFAChange{MerchantID: s.a.id, UserID: u.ID, At: s.clock.Now()}}}))
	code, _ := totp.GenerateCode(secret, s.clock.Now())
	p := v.do(http.MethodPost, "/dashboard/login/mfa", url.Values{"csrf": {csrfOf(t, form)}, "code": {code}})
	if p.code != http.StatusSeeOther || p.location != "/dashboard/login" || v.cookies[sessionCookie] != "" {
		t.Errorf("verify cookie after an MFA reset: %d %q", p.code, p.location)
	}
}

func TestRecoveryCodesSaltedPerUser(t *testing.T) {
	t.Parallel()
	if string(recoveryHash("usr_1", "abcde-fghij")) == string(recoveryHash("usr_2", "abcde-fghij")) {
		t.Error("one code hashes alike for two users")
	}
	if string(recoveryHash("usr_1", "ABCDE fghij")) != string(recoveryHash("usr_1", "abcdefghij")) {
		t.Error("case, dashes and spaces matter")
	}
	s := newSite(t)
	_, codes := enrolMFA(t, s, s.signedIn())
	unsalted := sha256.Sum256([]byte(strings.ReplaceAll(codes[1], "-", "")))
	err := s.st.Commit(context.Background(), paygate.Unit{Ops: []paygate.Op{paygate.RecoveryCodeUse{MerchantID: s.a.id,
		UserID: s.mustUserID(s.a.email), CodeHash: unsalted[:], At: s.clock.Now()}}})
	if !paygate.IsNotFound(err) {
		t.Errorf("a code stored as its plain SHA-256: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestEnrolmentRefusedWhenLockedInParallel(t *testing.T) {
	t.Parallel()
	var l *lockAfterRead
	s := newSite(t, func(c *Config) {
		c.RequireMFA = true
		l = &lockAfterRead{Store: c.Store, now: c.Clock.Now}
		c.Store = l
	})
	b := s.browser()
	p := b.signIn(s.a.email, password)
	page := b.get(p.location)
	secret := regexp.MustCompile(`id="totp-secret">([A-Z2-7]+)<`).FindStringSubmatch(page.body)
	if page.code != http.StatusOK || secret == nil {
		t.Fatalf("enrolment: %d", page.code)
	}
	code, _ := totp.GenerateCode(secret[1], s.clock.Now())
	l.armed.Store(true)
	p = b.do(http.MethodPost, "/dashboard/login/enrol", url.Values{"csrf": {csrfOf(t, page)},
		"sealed": {formValue(t, page.body, "sealed")}, "code": {code}})
	if p.code != http.StatusUnprocessableEntity || b.cookies[sessionCookie] != "" || !strings.Contains(p.body, "locked") {
		t.Errorf("enrolment while the account got locked: %d, session %q", p.code, b.cookies[sessionCookie])
	}
	if s.user(s.mustUserID(s.a.email)).MFAEnabled() {
		t.Error("MFA was enabled by a refused enrolment")
	}
}
