package dashboard

import (
	"errors"
	"net/http"
	"strings"

	"github.com/paygate/paygate/internal/auth"
	"github.com/paygate/paygate/internal/paygate"
)

// inviteData is the page of an invitation link.
type inviteData struct {
	Email, CSRF, Error string
	Role               paygate.Role
	// Gone is set when the link cannot be used (used, expired, revoked,
	// unknown): the page says so and shows no form.
	Gone bool
}

// serveInvite serves GET and POST /dashboard/invite/{token}: the invitee
// sets a password and lands signed in. A link works once, for
// paygate.InvitationTTL.
func (d *Dashboard) serveInvite(w http.ResponseWriter, r *http.Request) {
	tok := r.PathValue("token")
	var inv paygate.Invitation
	found := false
	if tok != "" && len(tok) <= 100 {
		list, err := d.store.Invitations(r.Context(), paygate.InvitationQuery{TokenHash: tokenHash(tok)})
		if err != nil {
			d.fail(w, r, nil, err)
			return
		}
		if len(list) == 1 && list[0].UsableAt(d.now()) {
			inv, found = list[0], true
		}
	}
	if !found {
		d.render(w, r, nil, http.StatusGone, "invite", inviteData{Gone: true})
		return
	}
	data := inviteData{Email: inv.Email, Role: inv.Role}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		d.invitePage(w, r, http.StatusOK, data)
	case http.MethodPost:
		r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
		if !d.loginFormChecked(w, r) {
			return
		}
		pw, confirm := r.PostFormValue("new_password"), r.PostFormValue("confirm_password")
		if pw != confirm {
			data.Error = "The password and its confirmation differ."
		} else if err := auth.ValidatePassword(pw); err != nil {
			data.Error = "The password is refused: " + err.Error() + "."
		}
		if data.Error != "" {
			d.invitePage(w, r, http.StatusBadRequest, data)
			return
		}
		hash, err := auth.HashPassword(pw)
		if err != nil {
			d.fail(w, r, nil, err)
			return
		}
		now := d.now()
		u := paygate.User{ID: newID(), MerchantID: inv.MerchantID, Email: inv.Email, PasswordHash: hash, Role: inv.Role,
			CreatedAt: now, UpdatedAt: now}
		joined := paygate.AuditEntry{ID: newID(), MerchantID: u.MerchantID, UserID: u.ID, Email: u.Email,
			Action: paygate.AuditUserCreated, Target: u.ID, Detail: "accepted invitation " + inv.ID + " as " + string(u.Role),
			RemoteAddr: clientAddr(r), CreatedAt: now}
		err = d.store.Commit(r.Context(), paygate.Unit{Ops: []paygate.Op{
			paygate.InvitationAcceptance{TokenHash: inv.TokenHash, User: u, At: now}, joined}})
		switch {
		case errors.Is(err, paygate.ErrStateConflict), paygate.IsNotFound(err):
			d.render(w, r, nil, http.StatusGone, "invite", inviteData{Gone: true})
			return
		case errors.Is(err, paygate.ErrConflict):
			data.Error = "A dashboard user with this email exists already: sign in instead."
			d.invitePage(w, r, http.StatusConflict, data)
			return
		case err != nil:
			d.fail(w, r, nil, err)
			return
		}
		if d.cfg.RequireMFA {
			d.startSecondStep(w, r, u, "")
			return
		}
		d.startSession(w, r, u, "", "")
	default:
		w.Header().Set("Allow", "GET, HEAD, POST")
		d.render(w, r, nil, http.StatusMethodNotAllowed, "error", errorData{Title: "Method not allowed", Message: "This page does not accept that kind of request."})
	}
}

// invitePage renders the invitation form with a fresh login CSRF value.
func (d *Dashboard) invitePage(w http.ResponseWriter, r *http.Request, status int, data inviteData) {
	tok, ok := d.freshLoginCSRF(w, r)
	if !ok {
		return
	}
	data.CSRF = tok
	data.Email = strings.ToLower(data.Email)
	d.render(w, r, nil, status, "invite", data)
}
