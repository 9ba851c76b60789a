package dashboard

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/paygate/paygate/internal/auth"
	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
)

// Cookie names. The session cookie carries a random 32-byte token; only
// its SHA-256 is stored. The login CSRF cookie is a random value the
// sign-in form repeats (double submit), so a cross-site form cannot sign a
// browser into an attacker's account.
const (
	sessionCookie   = "paygate_session"
	loginCSRFCookie = "paygate_login_csrf"
	tzCookie        = "tz"
)

// touchEvery is how often at most a session's last-seen time is written.
const touchEvery = time.Minute

// Sign-in throttle (OWASP Authentication Cheat Sheet: limit attempts per
// source to slow password spraying). Every attempt counts, successful or
// not; the budget refills continuously. Failed attempts per account lock
// the account instead (paygate.MaxFailedSignIns, decisions.md section 17).
const (
	// loginPerAccount guesses per minute at the current password on the
	// account page (a burst of 10, then one every 6 seconds).
	loginPerAccount = 10
	// loginPerAddr attempts per minute from one client address, across
	// emails: enough for an office behind one NAT.
	loginPerAddr = 30
)

func newID() string { return id.New() }

// newToken returns 32 random bytes in base64url, and their SHA-256.
func newToken() (string, []byte, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", nil, fmt.Errorf("session token: %w", err)
	}
	tok := base64.RawURLEncoding.EncodeToString(b)
	return tok, tokenHash(tok), nil
}

func tokenHash(tok string) []byte {
	h := sha256.Sum256([]byte(tok))
	return h[:]
}

// csrfToken is the session's CSRF token: derived from the session token,
// so it is never stored and dies with the session.
func csrfToken(sessionToken string) string {
	m := hmac.New(sha256.New, []byte(sessionToken))
	m.Write([]byte("csrf"))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// sameToken compares two tokens in constant time; an empty one never
// matches.
func sameToken(a, b string) bool {
	return a != "" && b != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// setCookie writes a dashboard cookie: Path=/dashboard, HttpOnly,
// SameSite=Lax, Secure when the base URL is https. maxAge < 0 deletes it;
// 0 makes a browser-session cookie.
func (d *Dashboard) setCookie(w http.ResponseWriter, name, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{
		Name:     name,
		Value:    value,
		Path:     root,
		MaxAge:   maxAge,
		HttpOnly: true,
		Secure:   d.secure,
		SameSite: http.SameSiteLaxMode,
	})
}

// viewerOf signs the request in from its session cookie. It returns nil
// when there is no valid session (no cookie, unknown, revoked, idle or past
// its end). A store failure other than NOT_FOUND is returned.
func (d *Dashboard) viewerOf(r *http.Request, mode paygate.Mode) (*viewer, error) {
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" || len(c.Value) > 100 {
		return nil, nil
	}
	s, u, err := d.store.SessionByTokenHash(r.Context(), tokenHash(c.Value))
	if err != nil {
		if paygate.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("read session: %w", err)
	}
	now := d.now()
	if !s.ValidAt(now, d.cfg.SessionIdle) || u.Disabled() {
		return nil, nil
	}
	if now.Sub(s.LastSeenAt) >= touchEvery {
		if err := d.store.Commit(r.Context(), paygate.Unit{Ops: []paygate.Op{paygate.SessionTouch{SessionID: s.ID, At: now}}}); err != nil {
			// The request may go on; the session only looks idler than it is.
			d.log.Warn("dashboard: touch session", "session", s.ID, "error", err)
		} else {
			s.LastSeenAt = now
		}
	}
	return &viewer{User: u, Session: s, Mode: mode, CSRF: csrfToken(c.Value), Loc: zoneOf(r)}, nil
}

// zoneOf is the user's time zone: the tz cookie when it names a zone,
// UTC otherwise.
func zoneOf(r *http.Request) *time.Location {
	c, err := r.Cookie(tzCookie)
	if err != nil {
		return time.UTC
	}
	if loc, ok := loadZone(c.Value); ok {
		return loc
	}
	return time.UTC
}

// loadZone loads an IANA zone name. Only names made of the characters of
// the tz database are tried ("Local" and paths are refused).
func loadZone(name string) (*time.Location, bool) {
	if v, err := url.QueryUnescape(name); err == nil {
		name = v
	}
	if name == "" || len(name) > 64 || name == "Local" || strings.Contains(name, "..") || strings.HasPrefix(name, "/") {
		return nil, false
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("/_-+", c)) {
			return nil, false
		}
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, false
	}
	return loc, true
}

// withSession calls page with the signed-in viewer. Without a valid
// session a GET is sent to the sign-in page (and back afterwards) and any
// other method too, without coming back. A POST must carry the session's
// CSRF token in field "csrf": otherwise 403 and nothing happens.
func (d *Dashboard) withSession(w http.ResponseWriter, r *http.Request, mode paygate.Mode, page func(v *viewer)) {
	v, err := d.viewerOf(r, mode)
	if err != nil {
		d.fail(w, r, nil, err)
		return
	}
	if v == nil {
		if c, err := r.Cookie(sessionCookie); err == nil && c.Value != "" {
			d.setCookie(w, sessionCookie, "", -1)
		}
		to := root + "/login"
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			next := r.URL.Path
			if r.URL.RawQuery != "" {
				next += "?" + r.URL.RawQuery
			}
			if next = safeNext(next); next != "" {
				to += "?" + url.Values{"next": {next}}.Encode()
			}
		}
		http.Redirect(w, r, to, http.StatusSeeOther)
		return
	}
	if r.Method == http.MethodPost {
		r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
		if !sameToken(r.PostFormValue("csrf"), v.CSRF) {
			d.forbidden(w, r, v)
			return
		}
	}
	if !cleanInput(r) {
		d.render(w, r, v, http.StatusBadRequest, "error", errorData{Title: "Invalid request", Message: badInputMessage})
		return
	}
	if d.cfg.RequireMFA && !v.User.MFAEnabled() && r.URL.Path != root+"/account/mfa" && r.URL.Path != root+"/logout" {
		// MFA is required: a session of before (or of a user whose MFA
		// was reset) may do nothing but enrol.
		http.Redirect(w, r, root+"/account/mfa?mode="+string(mode), http.StatusSeeOther)
		return
	}
	page(v)
}

// forbidden answers 403 for a form without the right CSRF token.
func (d *Dashboard) forbidden(w http.ResponseWriter, r *http.Request, v *viewer) {
	d.render(w, r, v, http.StatusForbidden, "error", errorData{
		Title:   "Form expired",
		Message: "This form could not be checked: it may be from an older page or another site. Go back, reload the page and try again.",
	})
}

// loginData is the sign-in page.
type loginData struct {
	Email, Next, CSRF, Error string
}

// serveLogin serves GET and POST /dashboard/login.
func (d *Dashboard) serveLogin(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		next := safeNext(r.URL.Query().Get("next"))
		if v, err := d.viewerOf(r, paygate.ModeTest); err == nil && v != nil {
			// Already signed in.
			if next == "" {
				next = root + "/test/"
			}
			http.Redirect(w, r, next, http.StatusSeeOther)
			return
		}
		d.loginPage(w, r, http.StatusOK, loginData{Next: next})
	case http.MethodPost:
		r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
		d.login(w, r)
	default:
		w.Header().Set("Allow", "GET, HEAD, POST")
		d.render(w, r, nil, http.StatusMethodNotAllowed, "error", errorData{Title: "Method not allowed", Message: "This page does not accept that kind of request."})
	}
}

// freshLoginCSRF sets a fresh login CSRF value in its cookie, for the
// form of a page before sign-in (sign-in, second step, invitation), and
// returns it; false when it answered an error instead.
func (d *Dashboard) freshLoginCSRF(w http.ResponseWriter, r *http.Request) (string, bool) {
	tok, _, err := newToken()
	if err != nil {
		d.fail(w, r, nil, err)
		return "", false
	}
	d.setCookie(w, loginCSRFCookie, tok, 0)
	return tok, true
}

// loginPage renders the sign-in form with a fresh login CSRF value (and
// cookie) each time.
func (d *Dashboard) loginPage(w http.ResponseWriter, r *http.Request, status int, data loginData) {
	tok, ok := d.freshLoginCSRF(w, r)
	if !ok {
		return
	}
	data.CSRF = tok
	d.render(w, r, nil, status, "login", data)
}

// login checks a sign-in form and starts a session.
func (d *Dashboard) login(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	email := strings.ToLower(strings.TrimSpace(r.PostFormValue("email")))
	password := r.PostFormValue("password")
	next := safeNext(r.PostFormValue("next"))
	data := loginData{Email: email, Next: next}

	c, err := r.Cookie(loginCSRFCookie)
	if err != nil || !sameToken(c.Value, r.PostFormValue("csrf")) {
		d.render(w, r, nil, http.StatusForbidden, "error", errorData{
			Title:   "Form expired",
			Message: "The sign-in form could not be checked. Reload the sign-in page and try again (cookies must be enabled).",
		})
		return
	}
	if !cleanInput(r) {
		data.Email, data.Next = "", ""
		data.Error = "The email or password is not valid text."
		d.loginPage(w, r, http.StatusBadRequest, data)
		return
	}
	if len(email) > 254 {
		email = email[:254]
	}
	addr := clientAddr(r)
	dec, err := d.cfg.Limiter.Allow(ctx, "dashboard-login-addr:"+throttleSource(addr), loginPerAddr)
	if err != nil {
		d.fail(w, r, nil, fmt.Errorf("sign-in throttle: %w", err))
		return
	}
	if !dec.Allowed {
		secs := int((dec.RetryAfter + time.Second - 1) / time.Second)
		w.Header().Set("Retry-After", fmt.Sprint(max(secs, 1)))
		data.Error = fmt.Sprintf("Too many sign-in attempts. Wait %d seconds and try again.", max(secs, 1))
		d.loginPage(w, r, http.StatusTooManyRequests, data)
		return
	}

	const wrong = "The email or password is wrong."
	u, err := d.store.UserByEmail(ctx, email)
	if err != nil {
		if !paygate.IsNotFound(err) {
			d.fail(w, r, nil, err)
			return
		}
		auth.DummyCheck(password)
		data.Error = wrong
		d.loginPage(w, r, http.StatusUnauthorized, data)
		return
	}
	now := d.now()
	failure := paygate.AuditEntry{
		MerchantID: u.MerchantID, UserID: u.ID, Email: u.Email, RemoteAddr: addr, CreatedAt: now,
		Action: paygate.AuditSignInFailed,
	}
	if u.LockedAt(now) {
		// The password is not checked: a locked account says so whether
		// or not it was right.
		auth.DummyCheck(password)
		failure.Detail = "account locked"
		d.recordAudit(ctx, failure)
		d.lockedPage(w, r, data, *u.LockedUntil)
		return
	}
	ok, err := auth.CheckPassword(u.PasswordHash, password)
	if err != nil {
		d.log.Error("dashboard: unreadable password hash", "user", u.ID, "error", err)
	}
	if ok && u.Disabled() {
		// A removed user is told nothing more than a wrong password.
		ok = false
		failure.Detail = "user disabled"
	}
	if !ok {
		if failure.Detail == "" {
			failure.Detail = "wrong password"
		}
		if locked := d.signInFailed(ctx, u, failure); locked != nil {
			d.lockedPage(w, r, data, *locked)
			return
		}
		data.Error = wrong
		d.loginPage(w, r, http.StatusUnauthorized, data)
		return
	}
	if u.MFAEnabled() || d.cfg.RequireMFA {
		// The session starts only after the second step (mfa.go).
		d.startSecondStep(w, r, u, next)
		return
	}
	d.startSession(w, r, u, password, next)
}

// signInFailed records a failed sign-in of u: the failure counted towards
// the lockout and audited, in one unit. When it locked the account it is
// audited too (user.locked), and the end of the lock is returned.
func (d *Dashboard) signInFailed(ctx context.Context, u paygate.User, failure paygate.AuditEntry) *time.Time {
	failure.ID = newID()
	now := failure.CreatedAt
	err := d.store.Commit(context.WithoutCancel(ctx), paygate.Unit{Ops: []paygate.Op{
		paygate.SignInFailure{MerchantID: u.MerchantID, UserID: u.ID, LockAfter: paygate.MaxFailedSignIns,
			LockUntil: now.Add(paygate.LockoutDuration)},
		failure,
	}})
	if err != nil {
		d.log.Error("dashboard: record failed sign-in", "user", u.ID, "error", err)
		return nil
	}
	after, err := d.store.Users(ctx, paygate.UserQuery{MerchantID: u.MerchantID, ID: u.ID})
	if err != nil || len(after) != 1 || !after[0].LockedAt(now) {
		return nil
	}
	locked := failure
	locked.Action = paygate.AuditUserLocked
	locked.Target = u.ID
	locked.Detail = fmt.Sprintf("%d failed sign-ins; locked until %s", paygate.MaxFailedSignIns,
		after[0].LockedUntil.UTC().Format(time.RFC3339))
	d.recordAudit(ctx, locked)
	return after[0].LockedUntil
}

// lockedPage answers a sign-in to a locked account: 423, and when the lock
// ends. It says nothing of the password.
func (d *Dashboard) lockedPage(w http.ResponseWriter, r *http.Request, data loginData, until time.Time) {
	data.Error = fmt.Sprintf("This account is locked after %d failed sign-ins, until %s. "+
		"Try again then, or ask an owner of your team to unlock it.", paygate.MaxFailedSignIns, until.UTC().Format("2006-01-02 15:04 MST"))
	d.loginPage(w, r, http.StatusLocked, data)
}

// startSession starts the session of u, who passed every step of the
// sign-in, and leads to next. password is the one just checked ("" after
// a second step: the hash is then not upgraded).
func (d *Dashboard) startSession(w http.ResponseWriter, r *http.Request, u paygate.User, password, next string) {
	if next == "" {
		next = root + "/test/"
	}
	d.startSessionWith(w, r, u, password, func(*viewer) { http.Redirect(w, r, next, http.StatusSeeOther) })
}

// startSessionThen starts the session of u after a second step and lets
// then answer as the signed-in viewer.
func (d *Dashboard) startSessionThen(w http.ResponseWriter, r *http.Request, u paygate.User, then func(v *viewer)) {
	d.startSessionWith(w, r, u, "", then)
}

// startSessionWith starts the session of u and calls then to answer.
func (d *Dashboard) startSessionWith(w http.ResponseWriter, r *http.Request, u paygate.User, password string, then func(v *viewer)) {
	ctx := r.Context()
	addr := clientAddr(r)
	// Always a new token: a session id planted before sign-in is never
	// promoted (session fixation).
	tok, hash, err := newToken()
	if err != nil {
		d.fail(w, r, nil, err)
		return
	}
	now := d.now()
	s := paygate.Session{
		ID: newID(), TokenHash: hash, UserID: u.ID, MerchantID: u.MerchantID,
		CreatedAt: now, LastSeenAt: now, ExpiresAt: now.Add(d.cfg.SessionMax), RemoteAddr: addr,
	}
	signedIn := paygate.AuditEntry{ID: newID(), MerchantID: u.MerchantID, UserID: u.ID, Email: u.Email,
		Action: paygate.AuditSignIn, RemoteAddr: addr, CreatedAt: now}
	err = d.store.Commit(ctx, paygate.Unit{Ops: []paygate.Op{s,
		paygate.SignInSuccess{MerchantID: u.MerchantID, UserID: u.ID, At: now}, signedIn}})
	if errors.Is(err, paygate.ErrStateConflict) {
		// Locked since its lock was read, by failures in parallel: the
		// store refused the sign-in, and no session was created.
		if until := d.lockedUntil(ctx, u, now); until != nil {
			d.setCookie(w, mfaCookie, "", -1)
			d.lockedPage(w, r, loginData{Email: u.Email}, *until)
			return
		}
	}
	if err != nil {
		d.fail(w, r, nil, fmt.Errorf("create session: %w", err))
		return
	}
	// A hash made at an older cost is upgraded now that the password is
	// known. A PasswordChange also signs the user's other sessions out:
	// that happens once, after the cost changed, and errs on the safe side.
	if password != "" && auth.NeedsRehash(u.PasswordHash) {
		if h, err := auth.HashPassword(password); err == nil {
			if err := d.store.Commit(ctx, paygate.Unit{Ops: []paygate.Op{paygate.PasswordChange{MerchantID: u.MerchantID, UserID: u.ID, PasswordHash: h, KeepSessionID: s.ID, At: now}}}); err != nil {
				d.log.Warn("dashboard: upgrade password hash", "user", u.ID, "error", err)
			}
		}
	}
	d.setCookie(w, sessionCookie, tok, int(d.cfg.SessionMax/time.Second))
	d.setCookie(w, loginCSRFCookie, "", -1)
	then(&viewer{User: u, Session: s, Mode: paygate.ModeTest, CSRF: csrfToken(tok), Loc: zoneOf(r)})
}

// throttleSource is the source a sign-in attempt is throttled under: an
// IPv4 address as it is, an IPv6 address by its /64 prefix. One IPv6
// subscriber usually holds a whole /64, so a budget per single IPv6 address
// would let one attacker spread a password spray over 2^64 budgets.
func throttleSource(addr string) string {
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		return addr
	}
	ip = ip.Unmap()
	if ip.Is4() {
		return ip.String()
	}
	p, err := ip.WithZone("").Prefix(64)
	if err != nil {
		return addr
	}
	return p.String()
}

// logout revokes the session and forgets the cookie.
func (d *Dashboard) logout(w http.ResponseWriter, r *http.Request, v *viewer) {
	if err := d.store.Commit(r.Context(), paygate.Unit{Ops: []paygate.Op{paygate.SessionRevocation{SessionID: v.Session.ID, At: d.now()}}}); err != nil && !paygate.IsNotFound(err) {
		d.fail(w, r, v, fmt.Errorf("revoke session: %w", err))
		return
	}
	d.setCookie(w, sessionCookie, "", -1)
	d.audit(r.Context(), r, v, "", paygate.AuditSignOut, "", "")
	http.Redirect(w, r, root+"/login", http.StatusSeeOther)
}
