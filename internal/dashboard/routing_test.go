package dashboard

import (
	"net/http"
	"strings"
	"testing"
)

// TestRouting pins how the dashboard routes every kind of path, signed in
// and out: pages, the 303s it answers itself, 404 and 405 pages (405 only
// once signed in) with their Allow header. An unclean path ("//", "/./",
// "..") is matched as sent and never redirected to a cleaned one.
func TestRouting(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	in := s.browser()
	in.mustSignIn(s.a.email)
	out := s.browser()
	const (
		notFound   = "There is no such page."
		notAllowed = "This page does not accept that kind of request."
	)
	for _, c := range []struct {
		method, path   string
		signedIn       bool
		code           int
		location, body string
		allow          string
	}{
		{"GET", "/dashboard", false, 303, "/dashboard/test/", "", ""},
		{"POST", "/dashboard/", false, 303, "/dashboard/test/", "", ""},
		{"GET", "/dashboard//", true, 404, "", notFound, ""},
		{"GET", "/dashboard/test", false, 303, "/dashboard/test/", "", ""},
		{"DELETE", "/dashboard/live", true, 303, "/dashboard/live/", "", ""},
		{"GET", "/dashboard/other/", true, 404, "", notFound, ""},
		{"GET", "/dashboard/other", true, 404, "", notFound, ""},
		{"GET", "/dashboard/test/", true, 200, "", "", ""},
		{"HEAD", "/dashboard/test/payments", true, 200, "", "", ""},
		{"PUT", "/dashboard/test/", true, 405, "", notAllowed, "GET"},
		{"PUT", "/dashboard/live/keys/x/rotate", true, 405, "", notAllowed, "GET, POST"},
		{"GET", "/dashboard/test/keys", true, 405, "", notAllowed, "POST"},
		{"PUT", "/dashboard/test/keys/x/rotate", false, 303, "/dashboard/login", "", ""},
		{"PUT", "/dashboard/test/nothing", false, 404, "", notFound, ""},
		{"GET", "/dashboard/test/payments/", true, 404, "", notFound, ""},
		{"GET", "/dashboard/test//payments", true, 404, "", notFound, ""},
		{"GET", "/dashboard/test/./payments", true, 404, "", notFound, ""},
		{"GET", "/dashboard/test/payments//x", true, 404, "", notFound, ""},
		{"PUT", "/dashboard/test/payments//", true, 404, "", notFound, ""},
		{"GET", "/dashboard/test/customers/x%2Fy", true, 404, "", notFound, ""},
		{"GET", "/dashboard/test/payments/..", true, 404, "", "Not found", ""},
		{"GET", "/dashboard/test/../live/payments", true, 404, "", notFound, ""},
		{"GET", "/dashboard/login/", false, 404, "", notFound, ""},
		{"GET", "/dashboard/static", false, 404, "", notFound, ""},
		{"GET", "/dashboard/static/", false, 404, "", notFound, ""},
		{"POST", "/dashboard/static/dashboard.css", false, 405, "", notAllowed, "GET, HEAD"},
		{"GET", "/dashboard/static/../login", false, 404, "", "", ""},
	} {
		b := out
		if c.signedIn {
			b = in
		}
		p := b.do(c.method, c.path, nil)
		if p.code != c.code || p.location != c.location || p.header.Get("Allow") != c.allow || !strings.Contains(p.body, c.body) {
			t.Errorf("%s %s: %d Location %q Allow %q, want %d %q %q with %q in\n%.300s", c.method, c.path, p.code, p.location,
				p.header.Get("Allow"), c.code, c.location, c.allow, c.body, p.body)
		}
		if cc := p.header.Get("Cache-Control"); !strings.HasPrefix(c.path, staticPrefix) && cc != "no-store" {
			t.Errorf("%s %s: Cache-Control %q", c.method, c.path, cc)
		}
	}
	if p := out.get("/dashboard/static/dashboard.css"); p.code != http.StatusOK || p.header.Get("Cache-Control") != "no-cache" {
		t.Errorf("static file: %d Cache-Control %q", p.code, p.header.Get("Cache-Control"))
	}
}
