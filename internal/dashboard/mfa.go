package dashboard

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"image/png"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/vault"
)

// Multi-factor sign-in (decisions.md section 17): TOTP per RFC 6238 (6
// digits, 30 s steps, SHA-1) and ten one-time recovery codes.
//
// The second step: after the right password a user with MFA gets no
// session but a pending cookie, valid pendingTTL, that allows only the
// code form. It is an HMAC keyed with a key derived from the vault's master
// keys (a server secret every node holds and the database does not) over
// the user id, its purpose, its end, the password hash and the MFA state
// (so a password change or an MFA change voids it). A wrong code counts
// as a failed sign-in (lockout); an accepted code's step is stored and the
// same step refused again; a recovery code is consumed once, atomically.
//
// With Config.RequireMFA a user without MFA gets a pending cookie of
// purpose "enrol" instead, which allows only enrolment; the session starts
// when the first code is confirmed.
//
// The TOTP secret is stored sealed by the vault (purpose "totp:<user id>",
// so a sealed secret cannot be moved to another user) and never in clear;
// `paygate vault rewrap` moves it to the current vault key.
// Between the enrolment page and its confirmation the new secret travels
// sealed in the form, and only its confirmation stores it.

const (
	mfaCookie  = "paygate_mfa"
	pendingTTL = 10 * time.Minute
	totpPeriod = 30
	// recoveryCodes is how many recovery codes an enrolment makes.
	recoveryCodes = 10
)

// Purposes of a pending cookie.
const (
	pendingVerify = "verify"
	pendingEnrol  = "enrol"
)

// totpContext is the vault context of a user's TOTP secret. TOTP belongs
// to no mode; the context names live mode so that it is a valid one.
func totpContext(u paygate.User) vault.SecretContext {
	return vault.SecretContext{Purpose: "totp:" + u.ID, MerchantID: u.MerchantID, Mode: paygate.ModeLive}
}

// pendingLabel names the key of pending cookies' MACs, derived from the
// vault's master keys (vault.DerivedKeys): a server secret every node
// holds and the database does not.
const pendingLabel = "paygate/dashboard/v1/mfa-pending"

// pendingMAC is the MAC of a pending cookie's fields under key. Besides the
// fields it covers the user's password hash and MFA state, so that a
// password change, an enrolment or an owner's reset of MFA voids it.
func pendingMAC(key []byte, u paygate.User, purpose string, until int64) string {
	m := hmac.New(sha256.New, key)
	var enabled int64
	if u.MFAEnabledAt != nil {
		enabled = u.MFAEnabledAt.UnixMicro()
	}
	secret := sha256.Sum256(u.MFASecret)
	fmt.Fprintf(m, "%s\x00%s\x00%d\x00%s\x00%d\x00%x", u.ID, purpose, until, u.PasswordHash, enabled, secret)
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// startSecondStep answers a right password of a user who must give a code
// (or enrol first): a pending cookie and the code or enrolment page.
func (d *Dashboard) startSecondStep(w http.ResponseWriter, r *http.Request, u paygate.User, next string) {
	purpose := pendingVerify
	if !u.MFAEnabled() {
		purpose = pendingEnrol
	}
	keys, err := d.cfg.Vault.DerivedKeys(pendingLabel)
	if err != nil {
		d.fail(w, r, nil, fmt.Errorf("MFA needs the vault key (--vault-key): %w", err))
		return
	}
	until := d.now().Add(pendingTTL).Unix()
	d.setCookie(w, mfaCookie, strings.Join([]string{u.ID, purpose, strconv.FormatInt(until, 10), pendingMAC(keys[0], u, purpose, until)}, "."), int(pendingTTL/time.Second))
	to := root + "/login/mfa"
	if purpose == pendingEnrol {
		to = root + "/login/enrol"
	}
	if next != "" {
		to += "?next=" + url.QueryEscape(next)
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// pendingUser returns the user of the request's pending cookie of the
// purpose, or false when there is none valid: expired, forged, for a user
// disabled or whose password or MFA changed since, a verify cookie of a
// user without MFA now (an owner reset it) or an enrol cookie of a user
// who has MFA now. The caller then leads to the sign-in page again.
func (d *Dashboard) pendingUser(r *http.Request, purpose string) (paygate.User, bool) {
	c, err := r.Cookie(mfaCookie)
	if err != nil || len(c.Value) > 200 {
		return paygate.User{}, false
	}
	parts := strings.Split(c.Value, ".")
	if len(parts) != 4 || parts[1] != purpose {
		return paygate.User{}, false
	}
	until, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil || d.now().Unix() >= until {
		return paygate.User{}, false
	}
	keys, err := d.cfg.Vault.DerivedKeys(pendingLabel)
	if err != nil {
		return paygate.User{}, false
	}
	users, err := d.store.Users(r.Context(), paygate.UserQuery{ID: parts[0]})
	if err != nil || len(users) != 1 || users[0].Disabled() {
		return paygate.User{}, false
	}
	u := users[0]
	if u.MFAEnabled() != (purpose == pendingVerify) {
		return paygate.User{}, false
	}
	for _, k := range keys {
		if hmac.Equal([]byte(pendingMAC(k, u, purpose, until)), []byte(parts[3])) {
			return u, true
		}
	}
	return paygate.User{}, false
}

// mfaData is the code page, the enrolment page and the recovery codes page.
type mfaData struct {
	Next, CSRF, Error string
	// Enrolment: the QR code (a data: PNG URL), the secret in text and
	// sealed for the form; Action is where the form goes.
	QR                     template.URL
	Secret, Sealed, Action string
	// Codes are new recovery codes, shown once; Continue where to go next.
	Codes    []string
	Continue string
}

// serveMFA serves GET and POST /dashboard/login/mfa, the second step.
func (d *Dashboard) serveMFA(w http.ResponseWriter, r *http.Request) {
	next := safeNext(r.URL.Query().Get("next"))
	u, ok := d.pendingUser(r, pendingVerify)
	if !ok {
		http.Redirect(w, r, root+"/login", http.StatusSeeOther)
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		d.mfaPage(w, r, http.StatusOK, "mfa", mfaData{Next: next})
	case http.MethodPost:
		r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
		if !d.loginFormChecked(w, r) {
			return
		}
		next = safeNext(r.PostFormValue("next"))
		if !d.mfaThrottled(w, r, u, next) {
			return
		}
		now := d.now()
		if u.LockedAt(now) {
			d.setCookie(w, mfaCookie, "", -1)
			d.lockedPage(w, r, loginData{Email: u.Email}, *u.LockedUntil)
			return
		}
		detail, locked, err := d.checkSecondFactor(r.Context(), u, r.PostFormValue("code"), now)
		if err != nil {
			d.fail(w, r, nil, err)
			return
		}
		if locked != nil {
			// Locked by failures that ran in parallel with this code: the
			// store refused the code (the lock is checked in its statement).
			d.setCookie(w, mfaCookie, "", -1)
			d.lockedPage(w, r, loginData{Email: u.Email}, *locked)
			return
		}
		if detail != "" {
			failure := paygate.AuditEntry{MerchantID: u.MerchantID, UserID: u.ID, Email: u.Email,
				RemoteAddr: clientAddr(r), CreatedAt: now, Action: paygate.AuditSignInFailed, Detail: detail}
			if locked := d.signInFailed(r.Context(), u, failure); locked != nil {
				d.setCookie(w, mfaCookie, "", -1)
				d.lockedPage(w, r, loginData{Email: u.Email}, *locked)
				return
			}
			d.mfaPage(w, r, http.StatusUnauthorized, "mfa", mfaData{Next: next, Error: "The code is wrong or was used already."})
			return
		}
		d.setCookie(w, mfaCookie, "", -1)
		d.startSession(w, r, u, "", next)
	default:
		w.Header().Set("Allow", "GET, HEAD, POST")
		d.render(w, r, nil, http.StatusMethodNotAllowed, "error", errorData{Title: "Method not allowed", Message: "This page does not accept that kind of request."})
	}
}

// loginFormChecked checks the login CSRF double submit of a form before a
// session exists; it answers 403 and returns false when it fails.
func (d *Dashboard) loginFormChecked(w http.ResponseWriter, r *http.Request) bool {
	c, err := r.Cookie(loginCSRFCookie)
	if err != nil || !sameToken(c.Value, r.PostFormValue("csrf")) {
		d.render(w, r, nil, http.StatusForbidden, "error", errorData{
			Title:   "Form expired",
			Message: "The form could not be checked. Sign in again (cookies must be enabled).",
		})
		return false
	}
	return true
}

// mfaPage renders a page of the second step with a fresh login CSRF value.
func (d *Dashboard) mfaPage(w http.ResponseWriter, r *http.Request, status int, name string, data mfaData) {
	tok, ok := d.freshLoginCSRF(w, r)
	if !ok {
		return
	}
	data.CSRF = tok
	d.render(w, r, nil, status, name, data)
}

// checkSecondFactor checks a TOTP code or a recovery code of u and
// consumes it. It returns "" when it is accepted, or why it is not (for
// the audit log); the end of the lock when the store refused the code
// because the account is locked now; an error when the check itself broke.
func (d *Dashboard) checkSecondFactor(ctx context.Context, u paygate.User, code string, now time.Time) (string, *time.Time, error) {
	code = strings.ReplaceAll(strings.TrimSpace(code), " ", "")
	if len(code) == 6 && strings.Trim(code, "0123456789") == "" {
		secret, err := d.cfg.Vault.OpenSecret(totpContext(u), u.MFASecret)
		if err != nil {
			return "", nil, fmt.Errorf("open TOTP secret: %w", err)
		}
		step, ok := matchTOTP(string(secret), code, now)
		if !ok {
			return "wrong TOTP code", nil, nil
		}
		err = d.store.Commit(ctx, paygate.Unit{Ops: []paygate.Op{paygate.TOTPStepUse{MerchantID: u.MerchantID, UserID: u.ID, Step: step, At: now}}})
		switch {
		case errors.Is(err, paygate.ErrStateConflict):
			if locked := d.lockedUntil(ctx, u, now); locked != nil {
				return "", locked, nil
			}
			return "TOTP code used already", nil, nil
		case err != nil:
			return "", nil, err
		}
		return "", nil, nil
	}
	if code == "" {
		return "no code", nil, nil
	}
	use := func(hash []byte) error {
		return d.store.Commit(ctx, paygate.Unit{Ops: []paygate.Op{paygate.RecoveryCodeUse{MerchantID: u.MerchantID,
			UserID: u.ID, CodeHash: hash, At: now}}})
	}
	err := use(recoveryHash(u.ID, code))
	if paygate.IsNotFound(err) {
		err = use(legacyRecoveryHash(code))
	}
	switch {
	case errors.Is(err, paygate.ErrStateConflict):
		if locked := d.lockedUntil(ctx, u, now); locked != nil {
			return "", locked, nil
		}
		return "recovery code used already", nil, nil
	case paygate.IsNotFound(err):
		return "wrong recovery code", nil, nil
	case err != nil:
		return "", nil, err
	}
	return "", nil, nil
}

// lockedUntil reads u again and returns the end of its lock when it is
// locked at now (nil when it is not, or cannot be read).
func (d *Dashboard) lockedUntil(ctx context.Context, u paygate.User, now time.Time) *time.Time {
	users, err := d.store.Users(ctx, paygate.UserQuery{MerchantID: u.MerchantID, ID: u.ID})
	if err != nil || len(users) != 1 || !users[0].LockedAt(now) {
		return nil
	}
	return users[0].LockedUntil
}

// mfaThrottled throttles the code step as the password step is: per
// client address and per user, every attempt counting. It answers 429 and
// returns false when the budget is spent.
func (d *Dashboard) mfaThrottled(w http.ResponseWriter, r *http.Request, u paygate.User, next string) bool {
	for _, k := range []struct {
		key   string
		limit int
	}{
		{"dashboard-mfa-addr:" + throttleSource(clientAddr(r)), loginPerAddr},
		{"dashboard-mfa-user:" + u.ID, loginPerAccount},
	} {
		dec, err := d.cfg.Limiter.Allow(r.Context(), k.key, k.limit)
		if err != nil {
			d.fail(w, r, nil, fmt.Errorf("sign-in throttle: %w", err))
			return false
		}
		if !dec.Allowed {
			secs := max(int((dec.RetryAfter+time.Second-1)/time.Second), 1)
			w.Header().Set("Retry-After", fmt.Sprint(secs))
			d.mfaPage(w, r, http.StatusTooManyRequests, "mfa", mfaData{Next: next,
				Error: fmt.Sprintf("Too many sign-in attempts. Wait %d seconds and try again.", secs)})
			return false
		}
	}
	return true
}

// matchTOTP returns the time step whose code is code: the current step or
// one either side (clock drift), RFC 6238 with 6 digits, 30 s, SHA-1.
func matchTOTP(secret, code string, now time.Time) (int64, bool) {
	cur := now.Unix() / totpPeriod
	for _, step := range []int64{cur, cur - 1, cur + 1} {
		want, err := totp.GenerateCodeCustom(secret, time.Unix(step*totpPeriod, 0), totpOpts)
		if err == nil && hmac.Equal([]byte(want), []byte(code)) {
			return step, true
		}
	}
	return 0, false
}

var totpOpts = totp.ValidateOpts{Period: totpPeriod, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1}

// recoveryHash is the stored form of a recovery code of the user userID:
// an HMAC-SHA-256 keyed with a fixed label and the user's id (a salt per
// user, so that one table of precomputed hashes serves no two users) over
// the code in lower case without dashes or spaces. It is not keyed with a
// vault key on purpose: recovery codes live for years, and dropping a
// rotated-out vault key would void them all.
func recoveryHash(userID, code string) []byte {
	m := hmac.New(sha256.New, []byte("paygate/dashboard/v1/recovery-code\x00"+userID))
	m.Write([]byte(normalRecoveryCode(code)))
	return m.Sum(nil)
}

// legacyRecoveryHash is the unsalted SHA-256 recovery codes were stored
// as before recoveryHash: codes enrolled then still work, once each.
func legacyRecoveryHash(code string) []byte {
	h := sha256.Sum256([]byte(normalRecoveryCode(code)))
	return h[:]
}

func normalRecoveryCode(code string) string {
	return strings.ToLower(strings.NewReplacer("-", "", " ", "").Replace(code))
}

// newRecoveryCodes returns ten fresh codes ("xxxxx-xxxxx", 50 bits each)
// of the user userID and their hashes.
func newRecoveryCodes(userID string) ([]string, [][]byte, error) {
	codes := make([]string, recoveryCodes)
	hashes := make([][]byte, recoveryCodes)
	enc := base32.StdEncoding.WithPadding(base32.NoPadding)
	for i := range codes {
		b := make([]byte, 7)
		if _, err := rand.Read(b); err != nil {
			return nil, nil, fmt.Errorf("recovery code: %w", err)
		}
		s := strings.ToLower(enc.EncodeToString(b))[:10]
		codes[i] = s[:5] + "-" + s[5:]
		hashes[i] = recoveryHash(userID, codes[i])
	}
	return codes, hashes, nil
}

// newEnrolment makes a TOTP secret for u: the page's QR code (data: PNG),
// the secret in text and sealed for the confirmation form.
func (d *Dashboard) newEnrolment(u paygate.User) (mfaData, error) {
	key, err := totp.Generate(totp.GenerateOpts{Issuer: "paygate", AccountName: u.Email, Period: totpPeriod,
		Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
	if err != nil {
		return mfaData{}, fmt.Errorf("TOTP secret: %w", err)
	}
	img, err := key.Image(240, 240)
	if err != nil {
		return mfaData{}, fmt.Errorf("QR code: %w", err)
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return mfaData{}, fmt.Errorf("QR code: %w", err)
	}
	sealed, err := d.cfg.Vault.SealSecret(totpContext(u), []byte(key.Secret()))
	if err != nil {
		return mfaData{}, fmt.Errorf("seal TOTP secret: %w", err)
	}
	return mfaData{
		// A PNG this function just encoded: safe as an image URL.
		QR:     template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(buf.Bytes())),
		Secret: key.Secret(), Sealed: base64.RawURLEncoding.EncodeToString(sealed),
	}, nil
}

// confirmEnrolment checks the first code against the sealed secret of the
// form and enables MFA for u with new recovery codes, audited. It returns
// the codes, or a message for the user when the code is wrong.
func (d *Dashboard) confirmEnrolment(r *http.Request, u paygate.User, actor paygate.AuditEntry) ([]string, string, error) {
	sealed, err := base64.RawURLEncoding.DecodeString(r.PostFormValue("sealed"))
	if err != nil {
		return nil, "The enrolment form is damaged: start again.", nil
	}
	secret, err := d.cfg.Vault.OpenSecret(totpContext(u), sealed)
	if err != nil {
		return nil, "The enrolment form is damaged or too old: start again.", nil
	}
	now := d.now()
	step, ok := matchTOTP(string(secret), strings.TrimSpace(r.PostFormValue("code")), now)
	if !ok {
		return nil, "The code is wrong. Check the time of your device and enter the current code.", nil
	}
	codes, hashes, err := newRecoveryCodes(u.ID)
	if err != nil {
		return nil, "", err
	}
	actor.ID, actor.Action, actor.Target, actor.CreatedAt = newID(), paygate.AuditUserMFAEnabled, u.ID, now
	err = d.store.Commit(r.Context(), paygate.Unit{Ops: []paygate.Op{
		paygate.MFAChange{MerchantID: u.MerchantID, UserID: u.ID, Secret: sealed, RecoveryCodeHashes: hashes, At: now},
		paygate.TOTPStepUse{MerchantID: u.MerchantID, UserID: u.ID, Step: step, At: now},
		actor,
	}})
	if errors.Is(err, paygate.ErrStateConflict) {
		// The account got locked meanwhile (the step itself is new: MFAChange reset it).
		return nil, "The account is locked: sign in again when the lock ends, or ask an owner of your team to unlock it.", nil
	}
	if err != nil {
		return nil, "", err
	}
	return codes, "", nil
}

// serveEnrol serves GET and POST /dashboard/login/enrol: the enrolment a
// user without MFA must complete after the password when MFA is required.
func (d *Dashboard) serveEnrol(w http.ResponseWriter, r *http.Request) {
	u, ok := d.pendingUser(r, pendingEnrol)
	if !ok {
		http.Redirect(w, r, root+"/login", http.StatusSeeOther)
		return
	}
	next := safeNext(r.URL.Query().Get("next"))
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		data, err := d.newEnrolment(u)
		if err != nil {
			d.fail(w, r, nil, err)
			return
		}
		data.Next, data.Action = next, root+"/login/enrol"
		d.mfaPage(w, r, http.StatusOK, "mfa_enrol", data)
	case http.MethodPost:
		r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
		if !d.loginFormChecked(w, r) {
			return
		}
		next = safeNext(r.PostFormValue("next"))
		actor := paygate.AuditEntry{MerchantID: u.MerchantID, UserID: u.ID, Email: u.Email, RemoteAddr: clientAddr(r)}
		codes, msg, err := d.confirmEnrolment(r, u, actor)
		if err != nil {
			d.fail(w, r, nil, err)
			return
		}
		if msg != "" {
			data, err := d.newEnrolment(u)
			if err != nil {
				d.fail(w, r, nil, err)
				return
			}
			data.Next, data.Action, data.Error = next, root+"/login/enrol", msg
			d.mfaPage(w, r, http.StatusUnprocessableEntity, "mfa_enrol", data)
			return
		}
		d.setCookie(w, mfaCookie, "", -1)
		if next == "" {
			next = root + "/test/"
		}
		// The session starts now; the codes are shown once, then the
		// user goes on.
		d.startSessionThen(w, r, u, func(v *viewer) {
			d.render(w, r, v, http.StatusOK, "mfa_codes", mfaData{Codes: codes, Continue: next})
		})
	default:
		w.Header().Set("Allow", "GET, HEAD, POST")
		d.render(w, r, nil, http.StatusMethodNotAllowed, "error", errorData{Title: "Method not allowed", Message: "This page does not accept that kind of request."})
	}
}

// accountMFA serves GET and POST /dashboard/account/mfa: enrolment from
// the Account page of a signed-in user.
func (d *Dashboard) accountMFA(w http.ResponseWriter, r *http.Request, v *viewer) {
	action := root + "/account/mfa?mode=" + string(v.Mode)
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		if v.User.MFAEnabled() {
			http.Redirect(w, r, root+"/account?mode="+string(v.Mode), http.StatusSeeOther)
			return
		}
		data, err := d.newEnrolment(v.User)
		if err != nil {
			d.fail(w, r, v, err)
			return
		}
		data.Action, data.CSRF = action, v.CSRF
		d.render(w, r, v, http.StatusOK, "mfa_enrol", data)
	case http.MethodPost:
		if v.User.MFAEnabled() {
			// Replacing the factor would need proof of the current one:
			// a stolen session must not swap in the thief's device.
			d.render(w, r, v, http.StatusForbidden, "error", errorData{Title: "MFA is on already",
				Message: "Two-step sign-in is on for this account already. To use another device, ask an owner of your team to turn it off, then enrol again."})
			return
		}
		actor := paygate.AuditEntry{MerchantID: v.User.MerchantID, UserID: v.User.ID, Email: v.User.Email, RemoteAddr: clientAddr(r)}
		codes, msg, err := d.confirmEnrolment(r, v.User, actor)
		if err != nil {
			d.fail(w, r, v, err)
			return
		}
		if msg != "" {
			data, err := d.newEnrolment(v.User)
			if err != nil {
				d.fail(w, r, v, err)
				return
			}
			data.Action, data.CSRF, data.Error = action, v.CSRF, msg
			d.render(w, r, v, http.StatusUnprocessableEntity, "mfa_enrol", data)
			return
		}
		d.render(w, r, v, http.StatusOK, "mfa_codes", mfaData{Codes: codes, Continue: root + "/account?mode=" + string(v.Mode)})
	default:
		d.methodNotAllowed(w, r, v, "GET, HEAD, POST")
	}
}
