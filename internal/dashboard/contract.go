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
type route struct {
	method  string
	pattern string
	h       page
}
