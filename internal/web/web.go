// Package web is what the service's HTTP handlers share wherever they live
// (package httpapi, and the connectors' endpoints and pages that httpapi
// serves): the request's id and error answer, and the self-contained pages
// shown to a customer's browser during 3-D Secure, with their security
// headers.
//
// Every page is self-contained (no script, no external resource, its one
// inline style allowed by hash) and is sent with:
//
//   - Content-Security-Policy: default-src 'none'; the style hash;
//     base-uri 'none'; form-action limited to where the page's forms go.
//     A challenge page's forms post to the callback, which answers 303 to
//     the merchant's returnUrl; browsers check form-action on the redirect
//     as well, so the returnUrl's origin is allowed too, and nothing else.
//   - frame-ancestors: a 3-D Secure challenge is often shown in an iframe
//     of the merchant's checkout. The pages of a payment may be framed by
//     the origin of that payment's returnUrl (the merchant's site) and by
//     nothing else; without a returnUrl, and on error pages, by nothing.
//     X-Frame-Options: DENY is sent as well, for browsers without CSP
//     level 2; browsers that know frame-ancestors ignore it.
//   - Referrer-Policy: no-referrer, so that the callback URL (its token)
//     never reaches the merchant or anyone else through Referer.
//   - Cache-Control: no-store and X-Content-Type-Options: nosniff.
//
// No page shows an API key or card data.
package web

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"errors"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/paygate/paygate/internal/paygate"
)

// Request is what the server tells a handler it did not write itself
// about the request being served.
type Request struct {
	// ID is the request's id (X-Request-Id), for log lines.
	ID string
	// WriteError answers an error in the API's JSON error envelope.
	WriteError func(w http.ResponseWriter, r *http.Request, e *paygate.Error)
}

type ctxKey struct{}

// NewContext returns ctx carrying req.
func NewContext(ctx context.Context, req Request) context.Context {
	return context.WithValue(ctx, ctxKey{}, req)
}

// FromContext returns the Request of ctx. Outside httpapi's server (a
// wiring mistake) it has no id, and WriteError answers 500 in plain text.
func FromContext(ctx context.Context) Request {
	if req, ok := ctx.Value(ctxKey{}).(Request); ok {
		return req
	}
	return Request{WriteError: func(w http.ResponseWriter, _ *http.Request, e *paygate.Error) {
		http.Error(w, e.Message, http.StatusInternalServerError)
	}}
}

//go:embed pages/page.html pages/page.css
var pageFiles embed.FS

var (
	pageTemplate = template.Must(template.ParseFS(pageFiles, "pages/page.html"))
	pageStyle    = EmbeddedStyle(pageFiles, "pages/page.css")
)

// EmbeddedStyle returns the style sheet name of files, trimmed, for one
// inline <style> element (see StyleSource). It panics when the file is
// missing: the binary was built without it.
func EmbeddedStyle(files embed.FS, name string) string {
	b, err := files.ReadFile(name)
	if err != nil {
		panic("web: style " + name + ": " + err.Error())
	}
	return strings.TrimSpace(string(b))
}

// StyleSource is the CSP source that allows one inline style and nothing
// else ('sha256-...').
func StyleSource(css string) string {
	h := sha256.Sum256([]byte(css))
	return "'sha256-" + base64.StdEncoding.EncodeToString(h[:]) + "'"
}

// PageStyleSource is the StyleSource of Page's style.
func PageStyleSource() string { return StyleSource(pageStyle) }

// originPattern is an origin that may appear in a CSP source list: a
// scheme and a host name or IPv4 address with an optional port.
var originPattern = regexp.MustCompile(`^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?$`)

// ReturnOrigin is the origin of a payment's returnUrl, or "" when it has
// none (or one that cannot be written in a CSP source list).
func ReturnOrigin(returnURL string) string {
	if returnURL == "" {
		return ""
	}
	u, err := url.Parse(returnURL)
	if err != nil {
		return ""
	}
	o := strings.ToLower(u.Scheme) + "://" + u.Host
	if !originPattern.MatchString(o) {
		return ""
	}
	return o
}

// Headers sets the security headers of a browser page. formAction and
// frameAncestors list CSP sources; empty lists mean 'none'.
func Headers(h http.Header, styleSrc string, formAction, frameAncestors []string) {
	list := func(sources []string) string {
		if len(sources) == 0 {
			return "'none'"
		}
		return strings.Join(sources, " ")
	}
	h.Set("Content-Security-Policy", "default-src 'none'; style-src "+styleSrc+"; img-src 'none'; base-uri 'none'; form-action "+
		list(formAction)+"; frame-ancestors "+list(frameAncestors))
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
}

// WriteHTML writes a rendered page with its headers (as for Headers).
func WriteHTML(w http.ResponseWriter, status int, body []byte, styleSrc string, formAction, frameAncestors []string) {
	Headers(w.Header(), styleSrc, formAction, frameAncestors)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// Page is a small result or error page.
type Page struct {
	Tone      string // ok, bad or info
	Mark      string
	Heading   string
	Message   string
	Next      string
	Reference string // the payment id, when the page is about one
}

// WritePage writes a page with the status; frameAncestors as for Headers.
func WritePage(w http.ResponseWriter, status int, p Page, frameAncestors []string) {
	var b bytes.Buffer
	err := pageTemplate.Execute(&b, struct {
		Page
		Style template.CSS
	}{p, template.CSS(pageStyle)})
	if err != nil {
		// The template and its data are fixed: a failure is a bug.
		panic("web: render page: " + err.Error())
	}
	WriteHTML(w, status, b.Bytes(), PageStyleSource(), nil, frameAncestors)
}

// The error pages.
var (
	PageNotFound = Page{Tone: "bad", Mark: "!", Heading: "This link is no longer valid",
		Message: "This payment confirmation link is unknown, has already been used or has expired, so it cannot be used again.",
		Next:    "Go back to the shop and check the status of your order there."}
	PageBadRequest = Page{Tone: "bad", Mark: "!", Heading: "The request could not be read",
		Message: "The shop sent an incomplete payment confirmation request.",
		Next:    "Go back to the shop and try again."}
	pageMethod = Page{Tone: "bad", Mark: "!", Heading: "This page cannot be opened directly",
		Message: "Payment confirmation pages are reached from the shop's checkout.",
		Next:    "Go back to the shop and try again."}
	pageUnavailable = Page{Tone: "info", Mark: "i", Heading: "Please try again",
		Message: "Your payment could not be confirmed right now. Nothing was charged yet.",
		Next:    "Go back one page and choose again, or try again in a minute."}
	pageInternal = Page{Tone: "bad", Mark: "!", Heading: "Something went wrong",
		Message: "Your payment could not be confirmed because of an error on our side.",
		Next:    "Go back to the shop and check the status of your order there."}
)

// maxForm is the largest form a page takes: the largest request body the
// service accepts (decisions §1).
const maxForm = 64 << 10

// ReadForm reads the form a page's POST carries. Anything else is answered
// with an error page (405 with Allow: POST, 413, 400) and false.
func ReadForm(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		WritePage(w, http.StatusMethodNotAllowed, pageMethod, nil)
		return false
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		var tooLarge *http.MaxBytesError
		status := http.StatusBadRequest
		if errors.As(err, &tooLarge) {
			status = http.StatusRequestEntityTooLarge
		}
		WritePage(w, status, PageBadRequest, nil)
		return false
	}
	return true
}

// FailPage answers an error of a browser page with a page: 404 for an
// unknown, used or expired token; 503 when the customer should retry; 500
// otherwise, logged with the request's id and logPath (never a token).
func FailPage(w http.ResponseWriter, r *http.Request, log *slog.Logger, logPath string, err error) {
	switch paygate.ErrorCode(err) {
	case paygate.CodeNotFound:
		WritePage(w, http.StatusNotFound, PageNotFound, nil)
	case paygate.CodeServiceUnavailable:
		w.Header().Set("Retry-After", "5")
		WritePage(w, http.StatusServiceUnavailable, pageUnavailable, nil)
	default:
		log.Error("3-D Secure page failed", "request_id", FromContext(r.Context()).ID, "path", logPath, "error", err.Error())
		WritePage(w, http.StatusInternalServerError, pageInternal, nil)
	}
}
