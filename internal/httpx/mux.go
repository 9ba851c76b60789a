// Package httpx routes requests on http.ServeMux patterns ("GET
// /v1/payments/{id}") without the ServeMux habits paygate's wire contract
// forbids: it never redirects, and a path is matched as it was sent.
//
// http.ServeMux cleans a path ("//", "/./", "..") and adds a missing
// trailing slash by answering 301, and answers 404 and 405 in plain text.
// The API and the dashboard answer those in their own formats instead, so
// a Mux matches a path segment by segment as sent: "." and ".." are
// ordinary segments, and an empty segment (from "//") ends the path there:
// only a pattern that ends in a slash (a subtree) can match it, and one
// whose wildcard would take its place sends it to the not-found handler.
// What nothing matches goes to the not-found handler too.
package httpx

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// Mux is an http.ServeMux that never redirects. The zero value is not
// usable; call New.
type Mux struct {
	mux      http.ServeMux
	notFound http.Handler
}

// New returns a Mux that serves notFound for every path no pattern
// matches.
func New(notFound http.Handler) *Mux {
	m := &Mux{notFound: notFound}
	m.mux.Handle("/", http.HandlerFunc(m.serveNotFound))
	return m
}

// Handle registers h for pattern, in http.ServeMux syntax. h sees the
// request with its original URL and the values of the pattern's wildcards
// (PathValue). A pattern that ends in a slash must come with the same path
// without it (registered too), or ServeMux would redirect to it.
// It panics, as ServeMux does, on a pattern that conflicts with another.
func (m *Mux) Handle(pattern string, h http.Handler) {
	names := Wildcards(pattern)
	m.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		restoreURL(r)
		for _, n := range names {
			// A value with a slash stands for an empty segment (see
			// matchPath): no wildcard matches one.
			if strings.Contains(r.PathValue(n), "/") {
				m.notFound.ServeHTTP(w, r)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// HandleFunc registers f for pattern, as Handle does.
func (m *Mux) HandleFunc(pattern string, f func(http.ResponseWriter, *http.Request)) {
	m.Handle(pattern, http.HandlerFunc(f))
}

func (m *Mux) serveNotFound(w http.ResponseWriter, r *http.Request) {
	restoreURL(r)
	m.notFound.ServeHTTP(w, r)
}

// ServeHTTP routes r by its (decoded) path.
func (m *Mux) ServeHTTP(w http.ResponseWriter, r *http.Request) { m.ServePath(w, r, r.URL.Path) }

// ServePath routes r as if its decoded path were path; the handler still
// sees r's own URL.
func (m *Mux) ServePath(w http.ResponseWriter, r *http.Request, path string) {
	if path == r.URL.Path && r.URL.RawPath == "" && plain(path) {
		m.mux.ServeHTTP(w, r)
		return
	}
	u := *r.URL
	u.Path, u.RawPath = matchPath(path)
	r2 := r.WithContext(context.WithValue(r.Context(), urlKey{}, r.URL))
	r2.URL = &u
	m.mux.ServeHTTP(w, r2)
}

type urlKey struct{}

// restoreURL gives a request routed by a rewritten path its own URL back.
func restoreURL(r *http.Request) {
	if u, ok := r.Context().Value(urlKey{}).(*url.URL); ok {
		r.URL = u
	}
}

// plain reports whether ServeMux matches path as it is: it starts with a
// slash and has no ".", ".." or empty segment but a trailing slash.
func plain(path string) bool {
	if !strings.HasPrefix(path, "/") {
		return false
	}
	for seg := range strings.SplitSeq(path[1:], "/") {
		if seg == "." || seg == ".." {
			return false
		}
	}
	return !strings.Contains(path, "//")
}

// matchPath returns the path ServeMux is given for a decoded path, decoded
// and escaped: every segment escaped on its own ("." as "%2E", so that it
// is not cleaned away), and an empty segment before the last replaced by
// one "%2F%2F" that ends the path. No literal matches that segment, a
// wildcard's value would hold a slash (refused by Handle: the request goes
// to the not-found handler), and ServeMux finds nothing to clean.
func matchPath(path string) (decoded, escaped string) {
	var d, e strings.Builder
	segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
	for i, seg := range segs {
		d.WriteByte('/')
		e.WriteByte('/')
		switch {
		case seg == "" && i < len(segs)-1:
			d.WriteString("//")
			e.WriteString("%2F%2F")
			return d.String(), e.String()
		case seg == "." || seg == "..":
			d.WriteString(seg)
			e.WriteString(strings.Repeat("%2E", len(seg)))
		default:
			d.WriteString(seg)
			e.WriteString(url.PathEscape(seg))
		}
	}
	return d.String(), e.String()
}

// Wildcards returns the names of a pattern's wildcards in order:
// "GET /v1/customers/{id}/cards/{cardId}" has id and cardId.
func Wildcards(pattern string) []string {
	var names []string
	for seg := range strings.SplitSeq(pattern, "/") {
		if name, ok := strings.CutPrefix(seg, "{"); ok {
			name = strings.TrimSuffix(strings.TrimSuffix(name, "}"), "...")
			if name != "$" {
				names = append(names, name)
			}
		}
	}
	return names
}

// Allowed returns the paths of method patterns ("POST /v1/payments"),
// each with its Allow header: GET, POST and DELETE in that order, whichever
// of them its patterns name. A path's other methods are answered 405 with
// it; patterns without a method are left out.
func Allowed(patterns []string) map[string]string {
	methods := map[string][]string{}
	for _, p := range patterns {
		if method, path, ok := strings.Cut(p, " "); ok {
			methods[path] = append(methods[path], method)
		}
	}
	allowed := make(map[string]string, len(methods))
	for path, ms := range methods {
		var allow []string
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodDelete} {
			if slices.Contains(ms, m) {
				allow = append(allow, m)
			}
		}
		allowed[path] = strings.Join(allow, ", ")
	}
	return allowed
}
