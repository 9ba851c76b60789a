// Package dashboard serves the merchant dashboard under /dashboard/:
// server-rendered HTML pages with embedded assets, signed in with a
// dashboard user's email and password (issue 8).
//
// Every page under /dashboard/{mode}/ is a route (contract.go): the
// framework here signs the request in (session cookie), checks the CSRF
// token of a POST, and hands the page a viewer. Pages answer with render,
// fail or a redirect.
//
// Templates: templates/<name>.html defines "title" and "content" and is
// executed inside templates/layout.html. The data of every template is a
// pageData: {{.V}} is the *viewer (nil on the sign-in page and on errors
// before sign-in), {{.D}} the page's own data, {{.Merchant}} the signed-in
// user's merchant name, {{.SwitchURL}} the same section in the other mode.
package dashboard

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"time"

	// The zones of the tz cookie are looked up by name; the tz database
	// is embedded so that a machine without /usr/share/zoneinfo works.
	_ "time/tzdata"

	"github.com/paygate/paygate/internal/clientaddr"
	"github.com/paygate/paygate/internal/httpx"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/payment"
	"github.com/paygate/paygate/internal/ratelimit"
	"github.com/paygate/paygate/internal/vault"
	"github.com/paygate/paygate/internal/webhook"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Defaults of Config.
const (
	DefaultSessionIdle = 15 * time.Minute
	DefaultSessionMax  = 12 * time.Hour
)

// Config holds what the dashboard needs.
type Config struct {
	Store    Store
	Payments *payment.Service
	// Limiter throttles sign-in attempts per account and per address.
	Limiter ratelimit.Limiter
	Clock   paygate.Clock
	Logger  *slog.Logger
	// BaseURL is the public URL of the gateway; cookies are Secure when it
	// is https.
	BaseURL string
	// SessionIdle ends a session after that long without a request;
	// SessionMax ends it that long after sign-in, whatever the activity.
	SessionIdle, SessionMax time.Duration
	// Wake, when set, asks the webhook dispatcher to look for due
	// deliveries now (after a test event or a resend).
	Wake func()
	// Vault seals and opens webhook signing secrets (setting, rotating and
	// revealing them need it).
	Vault *vault.Vault
	// Webhooks is where webhooks may go (serve
	// --allow-private-test-webhooks): endpoints are set and pinged under
	// it, and endpoints' answers shown under it.
	Webhooks webhook.Policy
	// RequireMFA makes TOTP mandatory (serve --require-mfa): a user
	// without it is sent to enrolment after the password and can do
	// nothing else until enrolled.
	RequireMFA bool
	// LiveWarning, when set, is shown on every page of live mode, under the
	// mode banner: something about how the gateway runs that puts live
	// payments at risk (serve: live providers served over plain HTTP).
	LiveWarning string
	// LiveProviders, when set, tells how many providers serve live
	// payments now (configured for live mode and not drained): the live
	// Overview warns when there is none. Nil: no such warning.
	LiveProviders func() int
}

// Dashboard is the http.Handler of /dashboard and everything under it.
type Dashboard struct {
	cfg      Config
	store    Store
	payments *payment.Service
	log      *slog.Logger
	clock    paygate.Clock
	secure   bool
	pages    map[string]*template.Template
	routes   []route
	static   http.Handler
	mux      *httpx.Mux
}

// New returns the dashboard. It panics when a dependency is missing or a
// template does not parse, which are wiring and build mistakes.
func New(cfg Config) *Dashboard {
	if cfg.Store == nil || cfg.Payments == nil || cfg.Limiter == nil {
		panic("dashboard.New: Store, Payments and Limiter are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = paygate.SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.SessionIdle <= 0 {
		cfg.SessionIdle = DefaultSessionIdle
	}
	if cfg.SessionMax <= 0 {
		cfg.SessionMax = DefaultSessionMax
	}
	d := &Dashboard{
		cfg:      cfg,
		store:    cfg.Store,
		payments: cfg.Payments,
		log:      cfg.Logger,
		clock:    cfg.Clock,
		secure:   strings.HasPrefix(strings.ToLower(cfg.BaseURL), "https://"),
	}
	d.pages = mustParsePages()
	d.routes = append(d.dataRoutes(), d.adminRoutes()...)
	d.routes = append(d.routes, d.teamRoutes()...)
	checkRoutes(d.routes)
	sub, err := fs.Sub(staticFS, "static")
	if err != nil {
		panic(fmt.Sprintf("dashboard.New: static files: %v", err))
	}
	d.static = http.StripPrefix(staticPrefix, http.FileServerFS(sub))
	d.mux = d.newMux()
	return d
}

// checkRoutes panics on a route that does not declare what it needs: a
// page nobody decided the roles of is a build mistake, never served.
func checkRoutes(routes []route) {
	for _, rt := range routes {
		if rt.need == accessUndeclared {
			panic(fmt.Sprintf("dashboard.New: route %s %s declares no access (set route.need)", rt.method, rt.pattern))
		}
	}
}

// mustParsePages parses layout.html with each page template once.
func mustParsePages() map[string]*template.Template {
	funcs := baseFuncs()
	maps.Copy(funcs, dataFuncs())
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		panic(fmt.Sprintf("dashboard: list templates: %v", err))
	}
	pages := make(map[string]*template.Template, len(names))
	for _, n := range names {
		name := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if name == "layout" {
			continue
		}
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", n)
		if err != nil {
			panic(fmt.Sprintf("dashboard: parse template %s: %v", name, err))
		}
		pages[name] = t
	}
	return pages
}

// now is the injected clock's time.
func (d *Dashboard) now() time.Time { return d.clock.Now() }

const (
	root         = "/dashboard"
	staticPrefix = "/dashboard/static/"
)

// pageData is the data of every template; see the package comment.
type pageData struct {
	V         *viewer
	D         any
	Merchant  string
	SwitchURL string
	// Path is the request path: the nav marks its section.
	Path string
	// Warning is Config.LiveWarning on a live-mode page, "" elsewhere.
	Warning string
}

// ServeHTTP sets the security headers and dispatches.
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("X-Frame-Options", "DENY")
	// Static files set their own caching (serveStatic); so does every
	// path under their prefix, which the mux sends them too.
	if !strings.HasPrefix(r.URL.Path, staticPrefix) {
		h.Set("Cache-Control", "no-store")
	}
	d.mux.ServeHTTP(w, r)
}

// newMux returns the router of /dashboard. The pages of a mode are
// /dashboard/{mode}/… for the two modes (routes); each path answers the
// methods it lacks with 405 once the request is signed in. A path nothing
// matches, or a page's path with an empty parameter, is notFoundPage.
func (d *Dashboard) newMux() *httpx.Mux {
	mux := httpx.New(http.HandlerFunc(d.notFoundPage))
	mux.HandleFunc(staticPrefix, d.serveStatic)
	// Without it ServeMux would redirect /dashboard/static to the prefix.
	mux.HandleFunc(strings.TrimSuffix(staticPrefix, "/"), d.notFoundPage)
	toTest := func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, root+"/test/", http.StatusSeeOther)
	}
	mux.HandleFunc(root, toTest)
	mux.HandleFunc(root+"/{$}", toTest)
	mux.HandleFunc(root+"/login", d.serveLogin)
	mux.HandleFunc(root+"/login/mfa", d.serveMFA)
	mux.HandleFunc(root+"/login/enrol", d.serveEnrol)
	mux.HandleFunc(root+"/invite/{token}", d.serveInvite)
	mux.HandleFunc(root+"/account/mfa", func(w http.ResponseWriter, r *http.Request) {
		mode := paygate.ModeTest
		if r.URL.Query().Get("mode") == string(paygate.ModeLive) {
			mode = paygate.ModeLive
		}
		d.withSession(w, r, mode, func(v *viewer) { d.accountMFA(w, r, v) })
	})
	mux.HandleFunc(root+"/logout", func(w http.ResponseWriter, r *http.Request) {
		d.withSession(w, r, paygate.ModeTest, func(v *viewer) {
			if r.Method != http.MethodPost {
				d.methodNotAllowed(w, r, v, http.MethodPost)
				return
			}
			d.logout(w, r, v)
		})
	})
	mux.HandleFunc(root+"/account", func(w http.ResponseWriter, r *http.Request) {
		mode := paygate.ModeTest
		if r.URL.Query().Get("mode") == string(paygate.ModeLive) {
			mode = paygate.ModeLive
		}
		d.withSession(w, r, mode, func(v *viewer) { d.account(w, r, v) })
	})
	mux.HandleFunc(root+"/payments.csv", d.serveExport)
	for _, mode := range []paygate.Mode{paygate.ModeTest, paygate.ModeLive} {
		base := root + "/" + string(mode)
		mux.HandleFunc(base, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, base+"/", http.StatusSeeOther)
		})
		var patterns []string
		for _, rt := range d.routes {
			pattern := rt.method + " " + routePath(base, rt.pattern)
			mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
				d.withSession(w, r, mode, func(v *viewer) {
					if !rt.need.allows(v.User.Role, mode) {
						d.denied(w, r, v)
						return
					}
					rt.h(w, r, v, pathParams(r, pattern))
				})
			})
			patterns = append(patterns, pattern)
		}
		for path, allow := range httpx.Allowed(patterns) {
			mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
				d.withSession(w, r, mode, func(v *viewer) { d.methodNotAllowed(w, r, v, allow) })
			})
		}
	}
	return mux
}

// routePath is the ServeMux path of a route's pattern under base
// (/dashboard/test): the overview "/" is base's own page and nothing below.
func routePath(base, pattern string) string {
	if pattern == "/" {
		return base + "/{$}"
	}
	return base + pattern
}

// pathParams returns the values of a pattern's {parameters} in order.
func pathParams(r *http.Request, pattern string) []string {
	var params []string
	for _, name := range httpx.Wildcards(pattern) {
		params = append(params, r.PathValue(name))
	}
	return params
}

// serveStatic serves the embedded assets: GET and HEAD, no directory
// listings.
func (d *Dashboard) serveStatic(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		d.methodNotAllowed(w, r, nil, "GET, HEAD")
		return
	}
	if strings.HasSuffix(r.URL.Path, "/") {
		d.render(w, r, nil, http.StatusNotFound, "error", errorData{Title: "Page not found", Message: "There is no such page."})
		return
	}
	w.Header().Set("Cache-Control", "no-cache")
	d.static.ServeHTTP(w, r)
}

// notFoundPage answers 404 for an unknown path; a signed-in user sees the
// page with the layout, anyone else without it (a signed-out visitor learns
// nothing about which paths exist either way).
func (d *Dashboard) notFoundPage(w http.ResponseWriter, r *http.Request) {
	v, _ := d.viewerOf(r, paygate.ModeTest)
	d.render(w, r, v, http.StatusNotFound, "error", errorData{Title: "Page not found", Message: "There is no such page."})
}

// methodNotAllowed answers 405.
func (d *Dashboard) methodNotAllowed(w http.ResponseWriter, r *http.Request, v *viewer, allow string) {
	w.Header().Set("Allow", allow)
	d.render(w, r, v, http.StatusMethodNotAllowed, "error", errorData{Title: "Method not allowed", Message: "This page does not accept that kind of request."})
}

// denied answers 403: the viewer's role does not allow the page.
func (d *Dashboard) denied(w http.ResponseWriter, r *http.Request, v *viewer) {
	d.render(w, r, v, http.StatusForbidden, "error", errorData{
		Title:   "Not allowed",
		Message: "Your role (" + string(v.User.Role) + ") does not allow this in " + string(v.Mode) + " mode. Ask an owner of your team.",
	})
}

// errorData is the error page.
type errorData struct {
	Title, Message string
}

// render executes templates/<name>.html inside the layout and writes it
// with status. A template error is logged and answered 500 (nothing of the
// half-rendered page is sent).
func (d *Dashboard) render(w http.ResponseWriter, r *http.Request, v *viewer, status int, name string, data any) {
	t, ok := d.pages[name]
	if !ok {
		d.log.Error("dashboard: no such template", "template", name)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	pd := pageData{V: v, D: data, Path: r.URL.Path}
	if v != nil {
		pd.SwitchURL = switchURL(r.URL.Path, v.Mode)
		if v.Mode == paygate.ModeLive {
			pd.Warning = d.cfg.LiveWarning
		}
		if m, err := paygate.OneMerchant(d.store.Merchants(r.Context(), paygate.MerchantQuery{ID: v.User.MerchantID})); err == nil {
			pd.Merchant = m.Name
		} else {
			d.log.Warn("dashboard: read merchant for the header", "merchant", v.User.MerchantID, "error", err)
		}
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout.html", pd); err != nil {
		d.log.Error("dashboard: render template", "template", name, "error", err)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintln(w, "An internal error occurred.")
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(buf.Bytes())
	}
}

// switchURL is the same section of the dashboard in the other mode: the
// first path segment after the mode is kept (an id of one mode means
// nothing in the other).
func switchURL(path string, mode paygate.Mode) string {
	other := paygate.ModeLive
	if mode == paygate.ModeLive {
		other = paygate.ModeTest
	}
	rest := strings.TrimPrefix(path, root+"/")
	first, sub, ok := strings.Cut(rest, "/")
	if !ok || (first != string(paygate.ModeTest) && first != string(paygate.ModeLive)) {
		if path == root+"/account" {
			return root + "/account?mode=" + string(other)
		}
		return root + "/" + string(other) + "/"
	}
	section, _, _ := strings.Cut(sub, "/")
	switch section {
	case "":
		return root + "/" + string(other) + "/"
	case "keys":
		// A key's pages belong to the Developers section.
		section = "developers"
	}
	return root + "/" + string(other) + "/" + section
}

// fail answers an error as a page: NOT_FOUND 404, INVALID_REQUEST 400 and
// RATE_LIMITED 429 with their message; anything else 500 with a generic
// message, the error itself logged.
func (d *Dashboard) fail(w http.ResponseWriter, r *http.Request, v *viewer, err error) {
	var pe *paygate.Error
	if errors.As(err, &pe) {
		switch pe.Code {
		case paygate.CodeNotFound:
			d.render(w, r, v, http.StatusNotFound, "error", errorData{Title: "Not found", Message: capitalize(pe.Message) + "."})
			return
		case paygate.CodeInvalidRequest:
			d.render(w, r, v, http.StatusBadRequest, "error", errorData{Title: "Invalid request", Message: capitalize(pe.Message) + "."})
			return
		case paygate.CodeRateLimited:
			d.render(w, r, v, http.StatusTooManyRequests, "error", errorData{Title: "Too many requests", Message: capitalize(pe.Message) + "."})
			return
		}
	}
	attrs := []any{"method", r.Method, "path", logPath(r.URL.Path), "error", err}
	if v != nil {
		attrs = append(attrs, "merchant", v.User.MerchantID, "user", v.User.ID)
	}
	d.log.Error("dashboard request failed", attrs...)
	d.render(w, r, v, http.StatusInternalServerError, "error", errorData{Title: "Something went wrong", Message: "An internal error occurred. Try again in a moment."})
}

// capitalize upper-cases the first letter of an ASCII message.
func capitalize(s string) string {
	s = strings.TrimSuffix(s, ".")
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}

// audit records an administrative action by the viewer. A failure to
// record is logged, never shown: the action itself has happened.
func (d *Dashboard) audit(ctx context.Context, r *http.Request, v *viewer, mode paygate.Mode, action, target, detail string) {
	e := paygate.AuditEntry{
		MerchantID: v.User.MerchantID,
		Mode:       mode,
		UserID:     v.User.ID,
		Email:      v.User.Email,
		Action:     action,
		Target:     target,
		Detail:     detail,
		RemoteAddr: clientAddr(r),
		CreatedAt:  d.now(),
	}
	d.recordAudit(ctx, e)
}

// recordAudit stores an entry with a fresh id; a failure is logged.
func (d *Dashboard) recordAudit(ctx context.Context, e paygate.AuditEntry) {
	e.ID = newID()
	if err := d.store.Commit(context.WithoutCancel(ctx), paygate.Unit{Ops: []paygate.Op{e}}); err != nil {
		d.log.Error("dashboard: record audit entry", "action", e.Action, "merchant", e.MerchantID, "error", err)
	}
}

// clientAddr is the request's client address, as the server's entry
// point decided it (the peer, or the client a trusted proxy forwarded
// for: package clientaddr).
func clientAddr(r *http.Request) string { return clientaddr.FromRequest(r) }

// safeNext returns next when it is a path inside the dashboard on this
// origin, and "" otherwise (an open redirect through ?next= is refused).
func safeNext(next string) string {
	if next == "" || !strings.HasPrefix(next, root+"/") || strings.HasPrefix(next, "//") ||
		strings.ContainsAny(next, "\\\r\n\t") || strings.Contains(next, "/..") || strings.Contains(strings.ToLower(next), "%2e") {
		return ""
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil {
		return ""
	}
	if strings.HasPrefix(next, root+"/login") || strings.HasPrefix(next, staticPrefix) {
		return ""
	}
	return next
}
