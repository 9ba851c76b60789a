package dashboard

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/paygate/paygate/internal/paygate"
)

// The Team page (issue 22): owners list their merchant's users, invite new
// ones with a one-time link (72 h), change roles, remove (disable) users
// and lift lockouts. Admins and the other roles are answered 403 (the
// page and its link are the owners' only: "everything but users"). Every
// change is audited with the acting owner.

// teamRoutes are the Team page and its forms.
func (d *Dashboard) teamRoutes() []route {
	return []route{
		{method: http.MethodGet, pattern: "/team", need: needOwner, h: d.teamPage},
		{method: http.MethodPost, pattern: "/team/invite", need: needOwner, h: d.invite},
		{method: http.MethodPost, pattern: "/team/users/{id}/role", need: needOwner, h: d.setRole},
		{method: http.MethodPost, pattern: "/team/users/{id}/unlock", need: needOwner, h: d.unlockUser},
		{method: http.MethodPost, pattern: "/team/users/{id}/remove", need: needOwner, h: d.removeUser},
		{method: http.MethodPost, pattern: "/team/users/{id}/mfa-reset", need: needOwner, h: d.resetMFA},
		{method: http.MethodPost, pattern: "/team/invitations/{id}/revoke", need: needOwner, h: d.revokeInvitation},
	}
}

// teamData is the Team page.
type teamData struct {
	Users       []teamUser
	Invitations []paygate.Invitation
	Roles       []paygate.Role
	// Link is a new invitation's link, shown once.
	Link, LinkEmail string
	Error, Notice   string
	// Email and Role refill the invitation form after an error.
	Email string
	Role  paygate.Role
}

// teamUser is one row of the Team page.
type teamUser struct {
	paygate.User
	Locked, Self bool
}

// teamPage serves GET /team.
func (d *Dashboard) teamPage(w http.ResponseWriter, r *http.Request, v *viewer, _ []string) {
	data := teamData{}
	switch r.URL.Query().Get("done") {
	case "role":
		data.Notice = "The role was changed."
	case "unlock":
		data.Notice = "The user was unlocked."
	case "remove":
		data.Notice = "The user was removed and signed out."
	case "revoke":
		data.Notice = "The invitation was revoked."
	case "mfa":
		data.Notice = "Two-step sign-in was turned off for the user: they set it up again from their account."
	}
	d.renderTeam(w, r, v, http.StatusOK, data)
}

// renderTeam renders the Team page with the merchant's users and pending
// invitations.
func (d *Dashboard) renderTeam(w http.ResponseWriter, r *http.Request, v *viewer, status int, data teamData) {
	users, err := d.store.Users(r.Context(), paygate.UserQuery{MerchantID: v.User.MerchantID})
	if err != nil {
		d.fail(w, r, v, err)
		return
	}
	invitations, err := d.store.Invitations(r.Context(), paygate.InvitationQuery{MerchantID: v.User.MerchantID})
	if err != nil {
		d.fail(w, r, v, err)
		return
	}
	now := d.now()
	for _, u := range users {
		data.Users = append(data.Users, teamUser{User: u, Locked: u.LockedAt(now), Self: u.ID == v.User.ID})
	}
	for _, i := range invitations {
		if i.UsableAt(now) {
			data.Invitations = append(data.Invitations, i)
		}
	}
	data.Roles = paygate.Roles
	if data.Role == "" {
		data.Role = paygate.RoleDeveloper
	}
	d.render(w, r, v, status, "team", data)
}

// teamUserOf loads the merchant's user named by the path, or answers 404.
func (d *Dashboard) teamUserOf(w http.ResponseWriter, r *http.Request, v *viewer, userID string) (paygate.User, bool) {
	users, err := d.store.Users(r.Context(), paygate.UserQuery{MerchantID: v.User.MerchantID, ID: userID})
	if err != nil {
		d.fail(w, r, v, err)
		return paygate.User{}, false
	}
	if len(users) == 0 {
		d.fail(w, r, v, paygate.Errorf(paygate.CodeNotFound, "", "no such user"))
		return paygate.User{}, false
	}
	return users[0], true
}

// teamChange commits a change of the team with its audit entry, and leads
// back to the Team page; the last owner's refusal is shown on the page.
func (d *Dashboard) teamChange(w http.ResponseWriter, r *http.Request, v *viewer, op paygate.Op, action, target, detail, done string) {
	e := paygate.AuditEntry{ID: newID(), MerchantID: v.User.MerchantID, UserID: v.User.ID, Email: v.User.Email,
		Action: action, Target: target, Detail: detail, RemoteAddr: clientAddr(r), CreatedAt: d.now()}
	err := d.store.Commit(r.Context(), paygate.Unit{Ops: []paygate.Op{op, e}})
	switch {
	case errors.Is(err, paygate.ErrStateConflict):
		msg := "Your team must keep an owner: give another user the owner role first."
		if done == "revoke" {
			msg = "The invitation was already accepted."
		}
		d.renderTeam(w, r, v, http.StatusConflict, teamData{Error: msg})
		return
	case err != nil:
		d.fail(w, r, v, err)
		return
	}
	http.Redirect(w, r, modePath(v, "/team")+"?done="+done, http.StatusSeeOther)
}

// setRole serves POST /team/users/{id}/role.
func (d *Dashboard) setRole(w http.ResponseWriter, r *http.Request, v *viewer, params []string) {
	role, ok := paygate.ParseRole(r.PostFormValue("role"))
	if !ok {
		d.fail(w, r, v, paygate.Errorf(paygate.CodeInvalidRequest, "role", "unknown role"))
		return
	}
	u, ok := d.teamUserOf(w, r, v, params[0])
	if !ok {
		return
	}
	d.teamChange(w, r, v, paygate.UserRoleChange{MerchantID: u.MerchantID, UserID: u.ID, Role: role, At: d.now()},
		paygate.AuditUserRoleChanged, u.ID, u.Email+": role "+string(u.Role)+" → "+string(role), "role")
}

// unlockUser serves POST /team/users/{id}/unlock.
func (d *Dashboard) unlockUser(w http.ResponseWriter, r *http.Request, v *viewer, params []string) {
	u, ok := d.teamUserOf(w, r, v, params[0])
	if !ok {
		return
	}
	d.teamChange(w, r, v, paygate.UserUnlock{MerchantID: u.MerchantID, UserID: u.ID, At: d.now()},
		paygate.AuditUserUnlocked, u.ID, u.Email, "unlock")
}

// removeUser serves POST /team/users/{id}/remove: the user is disabled
// and signed out.
func (d *Dashboard) removeUser(w http.ResponseWriter, r *http.Request, v *viewer, params []string) {
	u, ok := d.teamUserOf(w, r, v, params[0])
	if !ok {
		return
	}
	d.teamChange(w, r, v, paygate.UserDisable{MerchantID: u.MerchantID, UserID: u.ID, At: d.now()},
		paygate.AuditUserRemoved, u.ID, u.Email+" removed and signed out", "remove")
}

// resetMFA serves POST /team/users/{id}/mfa-reset: a user who lost their
// device and their recovery codes signs in with the password alone again
// (or enrols again, with --require-mfa).
//
// Never the owner's own: with a stolen session one could otherwise drop
// the owner's second factor and enrol another device (an owner who lost
// theirs asks another owner, or the operator).
func (d *Dashboard) resetMFA(w http.ResponseWriter, r *http.Request, v *viewer, params []string) {
	if params[0] == v.User.ID {
		d.render(w, r, v, http.StatusForbidden, "error", errorData{
			Title:   "Not allowed",
			Message: "You cannot turn off your own two-step sign-in: ask another owner of your team.",
		})
		return
	}
	u, ok := d.teamUserOf(w, r, v, params[0])
	if !ok {
		return
	}
	d.teamChange(w, r, v, paygate.MFAChange{MerchantID: u.MerchantID, UserID: u.ID, At: d.now()},
		paygate.AuditUserMFADisabled, u.ID, u.Email, "mfa")
}

// revokeInvitation serves POST /team/invitations/{id}/revoke.
func (d *Dashboard) revokeInvitation(w http.ResponseWriter, r *http.Request, v *viewer, params []string) {
	d.teamChange(w, r, v, paygate.InvitationRevocation{MerchantID: v.User.MerchantID, ID: params[0], At: d.now()},
		paygate.AuditInvitationRevoked, params[0], "", "revoke")
}

// invite serves POST /team/invite: a one-time link for the email and role,
// shown once on the page that answers.
func (d *Dashboard) invite(w http.ResponseWriter, r *http.Request, v *viewer, _ []string) {
	email := strings.ToLower(strings.TrimSpace(r.PostFormValue("email")))
	role, ok := paygate.ParseRole(r.PostFormValue("role"))
	data := teamData{Email: email, Role: role}
	local, domain, found := strings.Cut(email, "@")
	switch {
	case !ok:
		data.Error = "Choose a role."
	case !found || local == "" || domain == "" || len(email) > 254 || strings.ContainsAny(email, " \t\r\n") || strings.Count(email, "@") != 1:
		data.Error = "Enter the email address of the person to invite."
	}
	if data.Error == "" {
		if _, err := d.store.UserByEmail(r.Context(), email); err == nil {
			data.Error = "A dashboard user with this email exists already."
		} else if !paygate.IsNotFound(err) {
			d.fail(w, r, v, err)
			return
		}
	}
	if data.Error != "" {
		d.renderTeam(w, r, v, http.StatusBadRequest, data)
		return
	}
	tok, hash, err := newToken()
	if err != nil {
		d.fail(w, r, v, err)
		return
	}
	now := d.now()
	inv := paygate.Invitation{ID: newID(), MerchantID: v.User.MerchantID, Email: email, Role: role, TokenHash: hash,
		CreatedBy: v.User.ID, CreatedAt: now, ExpiresAt: now.Add(paygate.InvitationTTL)}
	e := paygate.AuditEntry{ID: newID(), MerchantID: v.User.MerchantID, UserID: v.User.ID, Email: v.User.Email,
		Action: paygate.AuditUserInvited, Target: inv.ID, Detail: email + " as " + string(role),
		RemoteAddr: clientAddr(r), CreatedAt: now}
	if err := d.store.Commit(r.Context(), paygate.Unit{Ops: []paygate.Op{inv, e}}); err != nil {
		d.fail(w, r, v, err)
		return
	}
	d.renderTeam(w, r, v, http.StatusOK, teamData{Link: d.inviteURL(tok), LinkEmail: email})
}

// inviteURL is the link of an invitation token.
func (d *Dashboard) inviteURL(tok string) string {
	return strings.TrimSuffix(d.cfg.BaseURL, "/") + root + "/invite/" + url.PathEscape(tok)
}
