package dashboard

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/paygate/paygate/internal/auth"
	"github.com/paygate/paygate/internal/paygate"
)

// accountData is the account page: the password form and the time zone.
type accountData struct {
	Email string
	// Zone is the zone times are shown in; Zones the choices.
	Zone  string
	Zones []string
	// Error is about the password form; Notice says what was done.
	Error, Notice string
}

// commonZones are offered by the account page's select, with UTC first.
// The browser's own zone (set by dashboard.js) is added when missing.
var commonZones = []string{
	"UTC",
	"Africa/Cairo", "Africa/Johannesburg", "Africa/Lagos", "Africa/Nairobi",
	"America/Anchorage", "America/Bogota", "America/Chicago", "America/Denver", "America/Halifax",
	"America/Los_Angeles", "America/Mexico_City", "America/New_York", "America/Phoenix",
	"America/Santiago", "America/Sao_Paulo", "America/Toronto", "America/Vancouver",
	"Asia/Bangkok", "Asia/Dubai", "Asia/Hong_Kong", "Asia/Jakarta", "Asia/Jerusalem", "Asia/Karachi",
	"Asia/Kolkata", "Asia/Manila", "Asia/Seoul", "Asia/Shanghai", "Asia/Singapore", "Asia/Tokyo",
	"Atlantic/Reykjavik",
	"Australia/Adelaide", "Australia/Brisbane", "Australia/Perth", "Australia/Sydney",
	"Europe/Amsterdam", "Europe/Athens", "Europe/Berlin", "Europe/Dublin", "Europe/Helsinki",
	"Europe/Istanbul", "Europe/Lisbon", "Europe/London", "Europe/Madrid", "Europe/Moscow",
	"Europe/Paris", "Europe/Rome", "Europe/Stockholm", "Europe/Warsaw", "Europe/Zurich",
	"Pacific/Auckland", "Pacific/Honolulu",
}

// account serves GET and POST /dashboard/account. A POST either changes
// the password (field action=password) or sets the time zone
// (action=zone).
func (d *Dashboard) account(w http.ResponseWriter, r *http.Request, v *viewer) {
	data := accountData{Email: v.User.Email, Zone: v.Loc.String()}
	data.Zones = commonZones
	if !slices.Contains(data.Zones, data.Zone) {
		data.Zones = append([]string{data.Zone}, commonZones...)
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		switch r.URL.Query().Get("done") {
		case "password":
			data.Notice = "Your password was changed. Every other session of yours was signed out."
		case "zone":
			data.Notice = "Times are now shown in " + data.Zone + "."
		}
		d.render(w, r, v, http.StatusOK, "account", data)
	case http.MethodPost:
		back := root + "/account?mode=" + string(v.Mode) + "&done="
		switch r.PostFormValue("action") {
		case "zone":
			name := r.PostFormValue("tz")
			if _, ok := loadZone(name); !ok {
				d.fail(w, r, v, paygate.Errorf(paygate.CodeInvalidRequest, "tz", "unknown time zone"))
				return
			}
			// The zone cookie is read by the pages only; it is no secret.
			http.SetCookie(w, &http.Cookie{
				Name: tzCookie, Value: url.QueryEscape(name), Path: root,
				MaxAge: int((365 * 24 * time.Hour) / time.Second), Secure: d.secure, SameSite: http.SameSiteLaxMode,
			})
			http.Redirect(w, r, back+"zone", http.StatusSeeOther)
		case "password":
			if msg, err := d.changePassword(w, r, v); err != nil {
				d.fail(w, r, v, err)
				return
			} else if msg != "" {
				data.Error = msg
				d.render(w, r, v, http.StatusBadRequest, "account", data)
				return
			}
			http.Redirect(w, r, back+"password", http.StatusSeeOther)
		default:
			d.fail(w, r, v, paygate.Errorf(paygate.CodeInvalidRequest, "action", "unknown action"))
		}
	default:
		d.methodNotAllowed(w, r, v, "GET, HEAD, POST")
	}
}

// changePassword checks the password form and stores the new hash,
// revoking every session of the user: the browser that changed it goes on
// under a new session token (OWASP: renew the session after a password
// change), with the same absolute end as before. It returns a message for
// the user when the form is refused, or an error when something broke.
func (d *Dashboard) changePassword(w http.ResponseWriter, r *http.Request, v *viewer) (string, error) {
	ctx := r.Context()
	current := r.PostFormValue("current_password")
	next := r.PostFormValue("new_password")
	confirm := r.PostFormValue("confirm_password")

	// The current password is a password guess like any other: throttled
	// under the account's sign-in budget.
	dec, err := d.cfg.Limiter.Allow(ctx, "dashboard-login-account:"+v.User.Email, loginPerAccount)
	if err != nil {
		return "", fmt.Errorf("password throttle: %w", err)
	}
	if !dec.Allowed {
		return "Too many attempts. Wait a minute and try again.", nil
	}
	ok, err := auth.CheckPassword(v.User.PasswordHash, current)
	if err != nil {
		return "", fmt.Errorf("check current password: %w", err)
	}
	if !ok {
		// A wrong guess from a signed-in browser is recorded like a failed
		// sign-in: it may be someone else at an unlocked screen.
		d.audit(ctx, r, v, "", paygate.AuditSignInFailed, "", "wrong current password on the password form")
		return "The current password is wrong.", nil
	}
	if next != confirm {
		return "The new password and its confirmation differ.", nil
	}
	if err := auth.ValidatePassword(next); err != nil {
		return "The new password is refused: " + err.Error() + ".", nil
	}
	hash, err := auth.HashPassword(next)
	if err != nil {
		return "", fmt.Errorf("hash password: %w", err)
	}
	tok, tokHash, err := newToken()
	if err != nil {
		return "", err
	}
	now := d.now()
	renewed := paygate.Session{
		ID: newID(), TokenHash: tokHash, UserID: v.User.ID, MerchantID: v.User.MerchantID,
		CreatedAt: now, LastSeenAt: now, ExpiresAt: v.Session.ExpiresAt, RemoteAddr: clientAddr(r),
	}
	// The renewed session is created, the password changes and every
	// other session, this request's included, is revoked in one unit: a
	// failure leaves no renewed session behind.
	if err := d.store.Commit(ctx, paygate.Unit{Ops: []paygate.Op{
		renewed,
		paygate.PasswordChange{MerchantID: v.User.MerchantID, UserID: v.User.ID, PasswordHash: hash, KeepSessionID: renewed.ID, At: now},
	}}); err != nil {
		return "", fmt.Errorf("set password: %w", err)
	}
	d.setCookie(w, sessionCookie, tok, max(int(renewed.ExpiresAt.Sub(now)/time.Second), 1))
	d.audit(ctx, r, v, "", paygate.AuditPasswordChanged, v.User.Email, "other sessions signed out")
	return "", nil
}
