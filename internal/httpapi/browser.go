package httpapi

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/paygate/paygate/internal/money"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/payment"
	"github.com/paygate/paygate/internal/web"
)

// The gateway's own browser-facing path of 3-D Secure (decisions.md
// section 1): the callback /v1/3ds/callback/<token>, where the challenge
// (the sandbox's page, served by its connector, or a provider's own) sends
// the customer back. The customer's browser reaches it, not the merchant's
// backend: it takes form posts with no API key and no Idempotency-Key (the
// token is the credential), never counts against the failed-authentication
// limit, and answers HTML pages with the headers of package web.

// logPath is the path as the request log shows it: a callback's token is
// a credential and is replaced.
func logPath(path string) string {
	if strings.HasPrefix(path, payment.CallbackPath) {
		return payment.CallbackPath + "[redacted]"
	}
	return path
}

// serveBrowser serves the 3-D Secure callback.
func (s *Server) serveBrowser(w http.ResponseWriter, r *http.Request) {
	token := strings.TrimPrefix(r.URL.Path, payment.CallbackPath)
	if r.Method == http.MethodGet && r.URL.Query().Get(stripeReturnParam) != "" {
		// A provider that redirects the customer itself sends them back
		// with a GET: Stripe adds payment_intent (and its client secret) to
		// the return_url's query. The provider checks what it brings.
		s.threeDSCallback(w, r, token, firstValues(r.URL.Query()))
		return
	}
	if !web.ReadForm(w, r) {
		return
	}
	s.threeDSCallback(w, r, token, firstValues(r.PostForm))
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

// threeDSCallback completes a payment with what the challenge posted, then
// sends the customer back to the merchant: 303 to the payment's returnUrl
// with transactionId and status added to its query, or a small result page
// when the payment has no returnUrl.
func (s *Server) threeDSCallback(w http.ResponseWriter, r *http.Request, token string, response map[string]string) {
	p, err := s.cfg.Payments.CompleteThreeDS(r.Context(), token, response)
	if err != nil {
		web.FailPage(w, r, s.log, logPath(r.URL.Path), err)
		return
	}
	origin := web.ReturnOrigin(p.ReturnURL)
	var frames []string
	if origin != "" {
		frames = []string{origin}
	}
	if p.ReturnURL != "" {
		if loc, ok := withResult(p.ReturnURL, p); ok {
			web.Headers(w.Header(), web.PageStyleSource(), nil, frames)
			w.Header().Set("Location", loc)
			w.WriteHeader(http.StatusSeeOther)
			return
		}
	}
	web.WritePage(w, http.StatusOK, resultPage(p), frames)
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
func resultPage(p paygate.Payment) web.Page {
	amount := money.Format(p.Amount.Amount, p.Amount.Currency) + " " + p.Amount.Currency
	switch p.Status {
	case paygate.PaymentCaptured, paygate.PaymentAuthorized:
		return web.Page{Tone: "ok", Mark: "✓", Heading: "Payment confirmed",
			Message:   "Your payment of " + amount + " was confirmed.",
			Next:      "You can close this window and return to the shop.",
			Reference: p.ID}
	case paygate.PaymentFailed:
		msg := "Your payment of " + amount + " was not completed."
		if p.ErrorCode == string(paygate.CodeAuthenticationFailed) {
			msg = "Your bank could not confirm that this payment is yours, so the payment of " + amount + " was not completed."
		}
		return web.Page{Tone: "bad", Mark: "!", Heading: "Payment not completed", Message: msg,
			Next: "Nothing was charged. You can close this window and return to the shop.", Reference: p.ID}
	default:
		return web.Page{Tone: "info", Mark: "i", Heading: "Payment in progress",
			Message: "Your payment of " + amount + " is being processed.",
			Next:    "You can close this window; the shop will tell you the result.", Reference: p.ID}
	}
}
