package dashboard

import (
	"net/http"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// Store is what the dashboard reads and writes.
type Store interface {
	paygate.Store
	paygate.DashboardStore
}

// viewer is the signed-in user of a request and what every page shows.
type viewer struct {
	User    paygate.User
	Session paygate.Session
	// Mode comes from the URL (/dashboard/{mode}/…): every page says which
	// mode it shows, and a link never silently switches it.
	Mode paygate.Mode
	// CSRF is the token every state-changing form carries as field "csrf".
	CSRF string
	// Loc is the user's time zone; times are shown in it.
	Loc *time.Location
}

// page serves a signed-in request under /dashboard/{mode}/. params holds the
// path's {parameters} in order. A POST reaches its page only after the
// session and the CSRF token were checked.
type page func(w http.ResponseWriter, r *http.Request, v *viewer, params []string)

// route is one page: method GET (which serves HEAD too) or POST, and a
// ServeMux pattern relative to /dashboard/{mode}, such as "/payments/{id}"
// ("/" is the overview). A {parameter} matches one non-empty path segment.
//
// need says which roles may use the route (decisions.md section 17); New
// panics on a route that does not declare it, and the framework answers
// 403 to a user whose role it does not allow (withAccess), before the page
// runs.
type route struct {
	method  string
	pattern string
	need    access
	h       page
}

// access is what a route requires of the signed-in user's role, in the
// route's mode. Its zero value is no declaration, which New refuses.
type access int

const (
	accessUndeclared access = iota
	// needRead: every role (reading pages, searching, exporting).
	needRead
	// needDeveloper: keys, webhooks and the card fields' allowed origins,
	// in either mode (owner, admin, developer).
	needDeveloper
	// needPaymentAction: actions on a merchant's payments and customers
	// (refund, capture, void, deleting a stored card): owner and admin in
	// both modes, developer in test mode only.
	needPaymentAction
	// needAdmin: every other change (owner, admin).
	needAdmin
	// needOwner: the team (owner only).
	needOwner
)

// String names the access for messages and tests.
func (a access) String() string {
	switch a {
	case needRead:
		return "read"
	case needDeveloper:
		return "developer"
	case needPaymentAction:
		return "payment action"
	case needAdmin:
		return "admin"
	case needOwner:
		return "owner"
	}
	return "undeclared"
}

// allows reports whether a user of role may use a route needing a in mode.
// An unknown role is allowed nothing.
func (a access) allows(role paygate.Role, mode paygate.Mode) bool {
	switch role {
	case paygate.RoleOwner:
		return a != accessUndeclared
	case paygate.RoleAdmin:
		return a != accessUndeclared && a != needOwner
	case paygate.RoleDeveloper:
		return a == needRead || a == needDeveloper || (a == needPaymentAction && mode == paygate.ModeTest)
	case paygate.RoleAnalyst:
		return a == needRead
	}
	return false
}

// Can reports whether the viewer's role allows what a template names:
// "developer" (keys, webhooks), "act" (refund, capture, void, delete a
// card in the viewer's mode), "admin" or "owner" (the team). Templates
// show a button only when it is allowed: {{if .V.Can "act"}}.
func (v *viewer) Can(what string) bool {
	if v == nil {
		return false
	}
	a := map[string]access{"read": needRead, "developer": needDeveloper, "act": needPaymentAction,
		"admin": needAdmin, "owner": needOwner}[what]
	return a.allows(v.User.Role, v.Mode)
}
