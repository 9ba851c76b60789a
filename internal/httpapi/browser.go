package httpapi

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/paygate/paygate/internal/money"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/payment"
	"github.com/paygate/paygate/internal/provider/sandbox"
)

// The two browser-facing paths of 3-D Secure (decisions.md section 1): the
// sandbox challenge page that a test payment's redirectUrl points to, and the
// callback /v1/3ds/callback/<token>. The customer's browser reaches them,
// not the merchant's backend: they take form posts with no API key and no
// Idempotency-Key (the token is the credential), never count against the
// failed-authentication limit, and answer HTML.
//
// Every page is self-contained (no script, no external resource, its one
// inline style allowed by hash) and is sent with:
//
//   - Content-Security-Policy: default-src 'none'; the style hash;
//     base-uri 'none'; form-action limited to where the page's forms go.
//     The challenge page's forms post to the callback, which answers 303 to
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
// No page shows an API key or card data: the challenge page shows the
// merchant's name, the amount and the currency.

//go:embed pages/page.html pages/page.css
var pageFiles embed.FS

var (
	pageTemplate = template.Must(template.ParseFS(pageFiles, "pages/page.html"))
	pageStyle    = mustPageStyle()
)

func mustPageStyle() string {
	b, err := pageFiles.ReadFile("pages/page.css")
	if err != nil {
		panic("httpapi: page style: " + err.Error())
	}
	return strings.TrimSpace(string(b))
}

// styleSource is the CSP source of an inline style.
func styleSource(css string) string {
	h := sha256.Sum256([]byte(css))
	return "'sha256-" + base64.StdEncoding.EncodeToString(h[:]) + "'"
}

// logPath is the path as the request log shows it: a callback's token is
// a credential and is replaced.
func logPath(path string) string {
	if strings.HasPrefix(path, payment.CallbackPath) {
		return payment.CallbackPath + "[redacted]"
	}
	return path
}

// originPattern is an origin that may appear in a CSP source list: a
// scheme and a host name or IPv4 address with an optional port.
var originPattern = regexp.MustCompile(`^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?$`)

// returnOrigin is the origin of a payment's returnUrl, or "" when it has
// none (or one that cannot be written in a CSP source list).
func returnOrigin(returnURL string) string {
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

// browserHeaders sets the security headers of a browser page. formAction
// and frameAncestors list CSP sources; empty lists mean 'none'.
func browserHeaders(h http.Header, styleSrc string, formAction, frameAncestors []string) {
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

// page is a small result or error page.
type page struct {
	Tone      string // ok, bad or info
	Mark      string
	Heading   string
	Message   string
	Next      string
	Reference string // the payment id, when the page is about one
}

// writePage writes a page with the status; frameAncestors as for
// browserHeaders.
func (s *Server) writePage(w http.ResponseWriter, status int, p page, frameAncestors []string) {
	var b bytes.Buffer
	err := pageTemplate.Execute(&b, struct {
		page
		Style template.CSS
	}{p, template.CSS(pageStyle)})
	if err != nil {
		// The template and its data are fixed: a failure is a bug.
		panic("httpapi: render page: " + err.Error())
	}
	browserHeaders(w.Header(), styleSource(pageStyle), nil, frameAncestors)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

var (
	pageNotFound = page{Tone: "bad", Mark: "!", Heading: "This link is no longer valid",
		Message: "This payment confirmation link is unknown, has already been used or has expired, so it cannot be used again.",
		Next:    "Go back to the shop and check the status of your order there."}
	pageBadRequest = page{Tone: "bad", Mark: "!", Heading: "The request could not be read",
		Message: "The shop sent an incomplete payment confirmation request.",
		Next:    "Go back to the shop and try again."}
	pageMethod = page{Tone: "bad", Mark: "!", Heading: "This page cannot be opened directly",
		Message: "Payment confirmation pages are reached from the shop's checkout.",
		Next:    "Go back to the shop and try again."}
	pageUnavailable = page{Tone: "info", Mark: "i", Heading: "Please try again",
		Message: "Your payment could not be confirmed right now. Nothing was charged yet.",
		Next:    "Go back one page and choose again, or try again in a minute."}
	pageInternal = page{Tone: "bad", Mark: "!", Heading: "Something went wrong",
		Message: "Your payment could not be confirmed because of an error on our side.",
		Next:    "Go back to the shop and check the status of your order there."}
)

// serveBrowser serves the browser-facing 3-D Secure paths.
func (s *Server) serveBrowser(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, payment.CallbackPath) && r.URL.Query().Get(stripeReturnParam) != "" {
		// A provider that redirects the customer itself sends them back
		// with a GET: Stripe adds payment_intent (and its client secret) to
		// the return_url's query. The provider checks what it brings.
		s.threeDSCallback(w, r, strings.TrimPrefix(r.URL.Path, payment.CallbackPath), firstValues(r.URL.Query()))
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		s.writePage(w, http.StatusMethodNotAllowed, pageMethod, nil)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	if err := r.ParseForm(); err != nil {
		var tooLarge *http.MaxBytesError
		status := http.StatusBadRequest
		if errors.As(err, &tooLarge) {
			status = http.StatusRequestEntityTooLarge
		}
		s.writePage(w, status, pageBadRequest, nil)
		return
	}
	if r.URL.Path == sandbox.ChallengePath {
		s.challengePage(w, r)
		return
	}
	s.threeDSCallback(w, r, strings.TrimPrefix(r.URL.Path, payment.CallbackPath), firstValues(r.PostForm))
}

// stripeReturnParam is the query parameter of Stripe's return to the
// callback; a GET without it is refused as before (405).
const stripeReturnParam = "payment_intent"

// firstValues keeps the first value of each field.
func firstValues(form url.Values) map[string]string {
	out := make(map[string]string, len(form))
	for k, vs := range form {
		if len(vs) > 0 {
			out[k] = vs[0]
		}
	}
	return out
}

// challengePage serves the sandbox challenge page: the merchant's page posts
// the threeDsData parameters (creq, threeDSSessionData, TermUrl) to it.
// TermUrl must be this service's callback of a challenge that can still be
// completed, for the payment the creq names; anything else is 404.
func (s *Server) challengePage(w http.ResponseWriter, r *http.Request) {
	c, err := sandbox.ParseChallenge(r.PostForm)
	if err != nil {
		s.writePage(w, http.StatusBadRequest, pageBadRequest, nil)
		return
	}
	token, ok := s.cfg.Payments.TokenFromCallbackURL(c.TermURL)
	if !ok {
		s.writePage(w, http.StatusBadRequest, pageBadRequest, nil)
		return
	}
	v, err := s.cfg.Payments.ThreeDSChallenge(r.Context(), token)
	if err == nil && v.Payment.ID != c.PaymentID {
		err = paygate.Errorf(paygate.CodeNotFound, "", "the challenge is not this payment's")
	}
	if err != nil {
		s.browserFail(w, r, err)
		return
	}
	p := v.Payment
	var frames []string
	formAction := []string{s.cfg.Payments.CallbackURL("")}
	if o := returnOrigin(p.ReturnURL); o != "" {
		formAction = append(formAction, o)
		frames = []string{o}
	}
	var b bytes.Buffer
	if err := sandbox.RenderChallenge(&b, c, sandbox.ChallengeDetails{
		MerchantName: v.MerchantName,
		Amount:       money.Format(p.Amount.Amount, p.Amount.Currency),
		Currency:     p.Amount.Currency,
	}); err != nil {
		s.browserFail(w, r, err)
		return
	}
	browserHeaders(w.Header(), sandbox.ChallengeStyleSource(), formAction, frames)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b.Bytes())
}

// threeDSCallback completes a payment with what the challenge posted, then
// sends the customer back to the merchant: 303 to the payment's returnUrl
// with transactionId and status added to its query, or a small result page
// when the payment has no returnUrl.
func (s *Server) threeDSCallback(w http.ResponseWriter, r *http.Request, token string, response map[string]string) {
	p, err := s.cfg.Payments.CompleteThreeDS(r.Context(), token, response)
	if err != nil {
		s.browserFail(w, r, err)
		return
	}
	origin := returnOrigin(p.ReturnURL)
	var frames []string
	if origin != "" {
		frames = []string{origin}
	}
	if p.ReturnURL != "" {
		if loc, ok := withResult(p.ReturnURL, p); ok {
			browserHeaders(w.Header(), styleSource(pageStyle), nil, frames)
			w.Header().Set("Location", loc)
			w.WriteHeader(http.StatusSeeOther)
			return
		}
	}
	s.writePage(w, http.StatusOK, resultPage(p), frames)
}

// withResult is the returnUrl with transactionId and status added to its
// query; the URL's own query (other than those two names) is kept as it is.
func withResult(returnURL string, p paygate.Payment) (string, bool) {
	u, err := url.Parse(returnURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", false
	}
	add := url.Values{"transactionId": {p.ID}, "status": {string(p.Status)}}.Encode()
	q := u.Query()
	switch {
	case u.RawQuery == "":
		u.RawQuery = add
	case !q.Has("transactionId") && !q.Has("status"):
		u.RawQuery += "&" + add
	default:
		q.Set("transactionId", p.ID)
		q.Set("status", string(p.Status))
		u.RawQuery = q.Encode()
	}
	return u.String(), true
}

// resultPage tells the customer the outcome when there is no merchant page
// to return to.
func resultPage(p paygate.Payment) page {
	amount := money.Format(p.Amount.Amount, p.Amount.Currency) + " " + p.Amount.Currency
	switch p.Status {
	case paygate.PaymentCaptured, paygate.PaymentAuthorized:
		return page{Tone: "ok", Mark: "✓", Heading: "Payment confirmed",
			Message:   "Your payment of " + amount + " was confirmed.",
			Next:      "You can close this window and return to the shop.",
			Reference: p.ID}
	case paygate.PaymentFailed:
		msg := "Your payment of " + amount + " was not completed."
		if p.ErrorCode == string(paygate.CodeAuthenticationFailed) {
			msg = "Your bank could not confirm that this payment is yours, so the payment of " + amount + " was not completed."
		}
		return page{Tone: "bad", Mark: "!", Heading: "Payment not completed", Message: msg,
			Next: "Nothing was charged. You can close this window and return to the shop.", Reference: p.ID}
	default:
		return page{Tone: "info", Mark: "i", Heading: "Payment in progress",
			Message: "Your payment of " + amount + " is being processed.",
			Next:    "You can close this window; the shop will tell you the result.", Reference: p.ID}
	}
}

// browserFail answers an error of a browser path with a page: 404 for an
// unknown, used or expired token; 503 when the customer should retry; 500
// otherwise (logged, without the token).
func (s *Server) browserFail(w http.ResponseWriter, r *http.Request, err error) {
	switch paygate.ErrorCode(err) {
	case paygate.CodeNotFound:
		s.writePage(w, http.StatusNotFound, pageNotFound, nil)
	case paygate.CodeServiceUnavailable:
		w.Header().Set("Retry-After", "5")
		s.writePage(w, http.StatusServiceUnavailable, pageUnavailable, nil)
	default:
		s.log.Error("3-D Secure page failed", "request_id", stateOf(r.Context()).requestID, "path", logPath(r.URL.Path), "error", err.Error())
		s.writePage(w, http.StatusInternalServerError, pageInternal, nil)
	}
}
