// Package stripe is the Stripe connector: card payments through the
// PaymentIntents API (form-encoded requests, Authorization: Bearer, an
// Idempotency-Key on every POST derived from our payment or refund id).
//
// Calls:
//   - Charge: POST /v1/payment_methods (type=card, the raw card, billing
//     details), then POST /v1/payment_intents with that payment_method and
//     confirm=true. stripe-mock's OpenAPI description (v0.203.0) refuses
//     payment_method_data[type]=card with raw card fields, so the card goes
//     through a PaymentMethod. The only metadata sent is our payment id
//     (metadata[paygate_payment_id]), which Inquire searches by.
//   - Capture: POST /v1/payment_intents/{id}/capture; Void: .../cancel.
//   - Refund: POST /v1/refunds.
//   - 3-D Secure: a confirmed intent in requires_action with
//     next_action.redirect_to_url answers pending_3ds with that URL. Stripe
//     sends the customer back to ChargeRequest.ThreeDSReturnURL (paygate's
//     callback); CompleteThreeDS then retrieves the intent
//     (GET /v1/payment_intents/{id}) and answers its final status.
//   - Inquire: GET /v1/payment_intents/search by the metadata. Stripe's search
//     is eventually consistent (Stripe documents under a minute): an intent
//     not found for a payment younger than Config.SearchLag (read from the
//     UUIDv7 payment id) is pending, not unknown.
//
// Amounts are paygate's minor units (ISO 4217 digits), converted to Stripe's:
// the same for every currency but ISK, which Stripe represents with two
// decimals (ISO: none; amounts are multiplied by 100), and the three-decimal
// currencies (BHD, JOD, KWD, OMR, TND), whose amounts Stripe requires to end
// in 0 (others are refused before anything is sent).
package stripe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/paygate/paygate/internal/money"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/tracing"
)

var (
	_ paygate.Provider        = (*Provider)(nil)
	_ paygate.ThreeDSProvider = (*Provider)(nil)
	_ paygate.Inquirer        = (*Provider)(nil)
)

// DefaultBaseURL is Stripe's API.
const DefaultBaseURL = "https://api.stripe.com"

// DefaultSearchLag is how long after a payment's creation an inquiry that
// finds no intent answers pending rather than unknown.
const DefaultSearchLag = 2 * time.Minute

// MetadataKey is the intent metadata that carries our payment id.
const MetadataKey = "paygate_payment_id"

// Config configures a Stripe connector.
type Config struct {
	ID        string
	SecretKey string
	// BaseURL is the API's address; "" is DefaultBaseURL.
	BaseURL string
	// Currencies served (ISO 4217); nil serves every currency.
	Currencies []string
	// Timeout of each call; 0 is 10 s (the router may set a shorter deadline).
	Timeout time.Duration
	// HTTPClient; nil is a client of its own.
	HTTPClient *http.Client
	// SearchLag: see DefaultSearchLag; 0 is the default, negative none (a
	// backend whose search is consistent, as the tests' fake).
	SearchLag time.Duration
}

// Provider is a Stripe connector. It is safe for concurrent use.
type Provider struct {
	id         string
	key        string
	base       string
	currencies map[string]bool
	timeout    time.Duration
	client     *http.Client
	searchLag  time.Duration
}

// New checks the configuration and returns the connector.
func New(cfg Config) (*Provider, error) {
	if cfg.ID == "" {
		return nil, errors.New("stripe: a provider id is required")
	}
	if cfg.SecretKey == "" {
		return nil, fmt.Errorf("stripe %s: a secret key is required", cfg.ID)
	}
	base := cfg.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("stripe %s: base URL %q is not an http(s) URL", cfg.ID, base)
	}
	p := &Provider{
		id: cfg.ID, key: cfg.SecretKey, base: strings.TrimRight(base, "/"),
		timeout: cfg.Timeout, client: cfg.HTTPClient, searchLag: cfg.SearchLag,
	}
	if p.timeout <= 0 {
		p.timeout = 10 * time.Second
	}
	if p.client == nil {
		// A client span per call, carrying traceparent to Stripe.
		p.client = &http.Client{Transport: tracing.Transport(nil, tracing.ProviderKey.String(cfg.ID))}
	}
	if p.searchLag == 0 {
		p.searchLag = DefaultSearchLag
	}
	if cfg.Currencies != nil {
		p.currencies = map[string]bool{}
		for _, c := range cfg.Currencies {
			p.currencies[strings.ToUpper(c)] = true
		}
	}
	return p, nil
}

// ID returns the provider id.
func (p *Provider) ID() string { return p.id }

// Messages shown to merchants; never card data.
const (
	msgCancelled    = "The request was cancelled before it reached Stripe."
	msgUnreachable  = "Stripe could not be reached; nothing was sent."
	msgRateLimited  = "Stripe is rate limiting requests; nothing was processed."
	msgUnknown      = "Stripe did not answer in time; the outcome is not known yet."
	msgServer       = "Stripe answered with a server error; the outcome is not known yet."
	msgBadAnswer    = "Stripe's answer could not be read."
	msgCurrency     = "The payment provider does not serve this currency."
	msgAmount       = "Stripe requires amounts in this currency to be a multiple of 10 minor units."
	msgNotCompleted = "The customer has not completed 3-D Secure authentication yet."
	msgDeclined     = "Your card was declined."
)

// --- amounts ---------------------------------------------------------------

// stripeAmount converts paygate's minor units (ISO 4217 digits) to Stripe's.
func stripeAmount(m paygate.Money) (int64, string, error) {
	cur := strings.ToUpper(m.Currency)
	digits, ok := money.Digits(cur)
	if !ok {
		return 0, "", errors.New("unknown currency")
	}
	amt := m.Amount
	switch {
	case cur == "ISK":
		amt *= 100 // zero-decimal in ISO, two-decimal at Stripe
	case digits == 3 && amt%10 != 0:
		return 0, "", errors.New(msgAmount)
	}
	return amt, strings.ToLower(cur), nil
}

// --- HTTP -----------------------------------------------------------------

// apiError is Stripe's error object.
type apiError struct {
	Type          string  `json:"type"`
	Code          string  `json:"code"`
	DeclineCode   string  `json:"decline_code"`
	Message       string  `json:"message"`
	PaymentIntent *intent `json:"payment_intent"`
}

type errorBody struct {
	Error *apiError `json:"error"`
}

// response is an answer that came back: a status and a body.
type response struct {
	status int
	body   []byte
}

func (p *Provider) fail(kind paygate.ProviderErrorKind, msg string) *paygate.ProviderError {
	return &paygate.ProviderError{Kind: kind, Provider: p.id, Message: msg}
}

// call sends one request. A transport failure is a *paygate.ProviderError:
// ProviderUnavailable when nothing can have been sent (the context ended
// first, the connection could not be made), else ProviderUnknownOutcome.
func (p *Provider) call(ctx context.Context, method, path string, form url.Values, idemKey string) (response, *paygate.ProviderError) {
	if ctx.Err() != nil {
		return response{}, p.fail(paygate.ProviderUnavailable, msgCancelled)
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, p.base+path, body)
	if err != nil {
		return response{}, p.fail(paygate.ProviderFailed, "The Stripe request could not be built.")
	}
	req.Header.Set("Authorization", "Bearer "+p.key)
	req.Header.Set("Accept", "application/json")
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if idemKey != "" {
		req.Header.Set("Idempotency-Key", idemKey)
	}
	res, err := p.client.Do(req)
	if err != nil {
		if notSent(err) {
			return response{}, p.fail(paygate.ProviderUnavailable, msgUnreachable)
		}
		return response{}, p.fail(paygate.ProviderUnknownOutcome, msgUnknown)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return response{}, p.fail(paygate.ProviderUnknownOutcome, msgUnknown)
	}
	return response{status: res.StatusCode, body: b}, nil
}

// notSent reports whether a transport error happened before the request
// could reach Stripe: the connection was never made.
func notSent(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns)
}

var longDigits = regexp.MustCompile(`\d[\d \-]{10,}\d`)

// safe keeps a message from Stripe free of anything like a card number.
func safe(msg string) string {
	return longDigits.ReplaceAllString(msg, "[redacted]")
}

// classify turns a non-2xx answer into an error: 429 nothing processed,
// 5xx unknown, anything else a failure with Stripe's message.
func (p *Provider) classify(r response) *paygate.ProviderError {
	switch {
	case r.status == http.StatusTooManyRequests:
		return p.fail(paygate.ProviderUnavailable, msgRateLimited)
	case r.status >= 500:
		return p.fail(paygate.ProviderUnknownOutcome, msgServer)
	}
	var eb errorBody
	if json.Unmarshal(r.body, &eb) == nil && eb.Error != nil && eb.Error.Message != "" {
		return p.fail(paygate.ProviderFailed, "Stripe: "+safe(eb.Error.Message))
	}
	return p.fail(paygate.ProviderFailed, fmt.Sprintf("Stripe answered HTTP %d.", r.status))
}

// --- payment intents ------------------------------------------------------

type intent struct {
	ID               string            `json:"id"`
	Object           string            `json:"object"`
	Status           string            `json:"status"`
	Metadata         map[string]string `json:"metadata"`
	LastPaymentError *apiError         `json:"last_payment_error"`
	NextAction       *struct {
		Type          string `json:"type"`
		RedirectToURL *struct {
			URL       string `json:"url"`
			ReturnURL string `json:"return_url"`
		} `json:"redirect_to_url"`
	} `json:"next_action"`
}

// declineCode maps Stripe's decline code to ours.
func declineCode(e *apiError) string {
	if e == nil {
		return paygate.DeclineGeneric
	}
	code := e.DeclineCode
	if code == "" || code == "generic_decline" {
		code = e.Code
	}
	switch code {
	case "insufficient_funds":
		return paygate.DeclineInsufficientFunds
	case "expired_card":
		return paygate.DeclineExpiredCard
	case "incorrect_cvc", "invalid_cvc":
		return paygate.DeclineIncorrectCVC
	}
	if e.DeclineCode == "insufficient_funds" {
		return paygate.DeclineInsufficientFunds
	}
	return paygate.DeclineGeneric
}

func declineMessage(e *apiError) string {
	if e == nil || e.Message == "" {
		return msgDeclined
	}
	return safe(e.Message)
}

// errNotFinal: the intent is still processing (Charge answers unknown,
// Inquire pending).
var errNotFinal = errors.New("processing")

// result maps an intent to a charge result.
func (p *Provider) result(in *intent) (paygate.ChargeResult, error) {
	res := paygate.ChargeResult{ProviderRef: in.ID}
	switch in.Status {
	case "succeeded":
		res.Status = paygate.PaymentCaptured
	case "requires_capture":
		res.Status = paygate.PaymentAuthorized
	case "requires_action":
		if in.NextAction == nil || in.NextAction.Type != "redirect_to_url" || in.NextAction.RedirectToURL == nil || in.NextAction.RedirectToURL.URL == "" {
			return res, p.fail(paygate.ProviderFailed, "Stripe asked for an action other than a 3-D Secure redirect.")
		}
		res.Status = paygate.PaymentPending3DS
		res.ThreeDS = &paygate.ThreeDSAction{RedirectURL: in.NextAction.RedirectToURL.URL, Method: "GET", Parameters: map[string]string{}}
	case "requires_payment_method", "canceled":
		res.Status = paygate.PaymentFailed
		res.DeclineCode = declineCode(in.LastPaymentError)
		res.Message = declineMessage(in.LastPaymentError)
	case "processing", "requires_confirmation":
		return res, errNotFinal
	default:
		return res, p.fail(paygate.ProviderFailed, "Stripe answered an unexpected payment status.")
	}
	return res, nil
}

// Serves reports whether the provider accepts payments in the currency.
func (p *Provider) Serves(currency string) bool {
	return p.currencies == nil || p.currencies[strings.ToUpper(currency)]
}

// Currencies returns the currencies served, sorted, or nil for every one.
func (p *Provider) Currencies() []string {
	if p.currencies == nil {
		return nil
	}
	out := make([]string, 0, len(p.currencies))
	for c := range p.currencies {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

// paymentMethodForm is the PaymentMethod creation of a charge's card:
// POST /v1/payment_methods with type=card and the raw card (the documented
// way to pass raw card numbers for accounts allowed to; stripe-mock's
// OpenAPI description has no raw card fields in payment_method_data).
func paymentMethodForm(req paygate.ChargeRequest) url.Values {
	f := url.Values{}
	f.Set("type", "card")
	f.Set("card[number]", req.Card.Number.Reveal())
	f.Set("card[exp_month]", strconv.Itoa(req.Card.ExpMonth))
	f.Set("card[exp_year]", strconv.Itoa(req.Card.ExpYear))
	if cvc := req.Card.CVV.Reveal(); cvc != "" {
		f.Set("card[cvc]", cvc)
	}
	name := req.Card.HolderName
	if b := req.Billing; b != nil {
		if name == "" {
			name = strings.TrimSpace(b.FirstName + " " + b.LastName)
		}
		set := func(k, v string) {
			if v != "" {
				f.Set("billing_details"+k, v)
			}
		}
		set("[email]", b.Email)
		set("[phone]", b.Phone)
		set("[address][line1]", b.Address)
		set("[address][line2]", b.AddressLine2)
		set("[address][city]", b.City)
		set("[address][postal_code]", b.PostalCode)
		set("[address][state]", b.State)
		set("[address][country]", b.Country)
	}
	if name != "" {
		f.Set("billing_details[name]", name)
	}
	return f
}

// intentForm is the PaymentIntent creation and confirmation of a charge.
func intentForm(req paygate.ChargeRequest, paymentMethod string, amount int64, currency string) url.Values {
	f := url.Values{}
	f.Set("amount", strconv.FormatInt(amount, 10))
	f.Set("currency", currency)
	f.Set("confirm", "true")
	f.Set("capture_method", "automatic")
	f.Set("payment_method_types[0]", "card")
	f.Set("payment_method", paymentMethod)
	f.Set("metadata["+MetadataKey+"]", req.PaymentID)
	if req.ThreeDSReturnURL != "" {
		f.Set("return_url", req.ThreeDSReturnURL)
	}
	return f
}

// cardError reads a 402 card error, or nil.
func cardError(r response) *apiError {
	if r.status != http.StatusPaymentRequired {
		return nil
	}
	var eb errorBody
	if json.Unmarshal(r.body, &eb) != nil || eb.Error == nil || eb.Error.Type != "card_error" {
		return nil
	}
	return eb.Error
}

// Charge creates a PaymentMethod with the card, then creates and confirms a
// PaymentIntent with it. The first call charges nothing: any failure of it
// but a refusal is ProviderUnavailable, as nothing was processed.
func (p *Provider) Charge(ctx context.Context, req paygate.ChargeRequest) (paygate.ChargeResult, error) {
	if ctx.Err() != nil {
		return paygate.ChargeResult{}, p.fail(paygate.ProviderUnavailable, msgCancelled)
	}
	if !p.Serves(req.Amount.Currency) {
		return paygate.ChargeResult{}, p.fail(paygate.ProviderUnavailable, msgCurrency)
	}
	amount, currency, err := stripeAmount(req.Amount)
	if err != nil {
		return paygate.ChargeResult{}, p.fail(paygate.ProviderFailed, err.Error())
	}

	r, perr := p.call(ctx, http.MethodPost, "/v1/payment_methods", paymentMethodForm(req), "paygate-pm-"+req.PaymentID)
	if perr != nil {
		perr.Kind = paygate.ProviderUnavailable // a payment method charges nothing
		return paygate.ChargeResult{}, perr
	}
	if ce := cardError(r); ce != nil {
		// The card was refused before any intent existed.
		return paygate.ChargeResult{Status: paygate.PaymentFailed, ProviderRef: "pm_declined_" + strings.ReplaceAll(req.PaymentID, "-", ""),
			DeclineCode: declineCode(ce), Message: declineMessage(ce)}, nil
	}
	if r.status/100 != 2 {
		pe := p.classify(r)
		if pe.Kind == paygate.ProviderUnknownOutcome {
			pe.Kind = paygate.ProviderUnavailable
		}
		return paygate.ChargeResult{}, pe
	}
	var pm struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(r.body, &pm); err != nil || pm.ID == "" {
		return paygate.ChargeResult{}, p.fail(paygate.ProviderUnavailable, msgBadAnswer)
	}

	r, perr = p.call(ctx, http.MethodPost, "/v1/payment_intents", intentForm(req, pm.ID, amount, currency), "paygate-charge-"+req.PaymentID)
	if perr != nil {
		return paygate.ChargeResult{}, perr
	}
	if ce := cardError(r); ce != nil {
		// A decline: the intent comes with it.
		res := paygate.ChargeResult{Status: paygate.PaymentFailed, DeclineCode: declineCode(ce), Message: declineMessage(ce)}
		if ce.PaymentIntent != nil {
			res.ProviderRef = ce.PaymentIntent.ID
		}
		if res.ProviderRef == "" {
			res.ProviderRef = "pi_declined_" + strings.ReplaceAll(req.PaymentID, "-", "")
		}
		return res, nil
	}
	if r.status/100 != 2 {
		return paygate.ChargeResult{}, p.classify(r)
	}
	var in intent
	if err := json.Unmarshal(r.body, &in); err != nil || in.ID == "" {
		return paygate.ChargeResult{}, p.fail(paygate.ProviderUnknownOutcome, msgBadAnswer)
	}
	res, err := p.result(&in)
	if errors.Is(err, errNotFinal) {
		return paygate.ChargeResult{}, p.fail(paygate.ProviderUnknownOutcome, "Stripe is still processing the payment; the outcome is not known yet.")
	}
	return res, err
}

// Capture captures an authorized intent, fully or partly.
func (p *Provider) Capture(ctx context.Context, op paygate.PaymentOp) error {
	amount, _, err := stripeAmount(op.Amount)
	if err != nil {
		return p.fail(paygate.ProviderFailed, err.Error())
	}
	f := url.Values{}
	f.Set("amount_to_capture", strconv.FormatInt(amount, 10))
	return p.intentOp(ctx, op, "capture", f)
}

// Void cancels an authorized intent.
func (p *Provider) Void(ctx context.Context, op paygate.PaymentOp) error {
	return p.intentOp(ctx, op, "cancel", url.Values{})
}

func (p *Provider) intentOp(ctx context.Context, op paygate.PaymentOp, verb string, f url.Values) error {
	if !validRef(op.ProviderRef, "pi_") {
		return p.fail(paygate.ProviderFailed, "The payment provider does not know this payment.")
	}
	r, perr := p.call(ctx, http.MethodPost, "/v1/payment_intents/"+url.PathEscape(op.ProviderRef)+"/"+verb, f, "paygate-"+verb+"-"+op.PaymentID)
	if perr != nil {
		return perr
	}
	if r.status/100 != 2 {
		return p.classify(r)
	}
	return nil
}

var refPattern = regexp.MustCompile(`^[A-Za-z0-9_]{3,255}$`)

func validRef(ref, prefix string) bool {
	return strings.HasPrefix(ref, prefix) && refPattern.MatchString(ref)
}

type refund struct {
	ID            string `json:"id"`
	Status        string `json:"status"`
	FailureReason string `json:"failure_reason"`
}

// Stripe's refund reasons; others are not forwarded.
var refundReasons = map[string]bool{"duplicate": true, "fraudulent": true, "requested_by_customer": true}

// Refund refunds a captured intent; the refund id is the idempotency key.
func (p *Provider) Refund(ctx context.Context, req paygate.RefundRequest) (paygate.RefundResult, error) {
	if !validRef(req.ProviderRef, "pi_") {
		return paygate.RefundResult{}, p.fail(paygate.ProviderFailed, "The payment provider does not know this payment.")
	}
	amount, _, err := stripeAmount(req.Amount)
	if err != nil {
		return paygate.RefundResult{}, p.fail(paygate.ProviderFailed, err.Error())
	}
	f := url.Values{}
	f.Set("payment_intent", req.ProviderRef)
	f.Set("amount", strconv.FormatInt(amount, 10))
	if refundReasons[req.Reason] {
		f.Set("reason", req.Reason)
	}
	r, perr := p.call(ctx, http.MethodPost, "/v1/refunds", f, "paygate-refund-"+req.RefundID)
	if perr != nil {
		return paygate.RefundResult{}, perr
	}
	if r.status/100 != 2 {
		return paygate.RefundResult{}, p.classify(r)
	}
	var rf refund
	if err := json.Unmarshal(r.body, &rf); err != nil || rf.ID == "" {
		return paygate.RefundResult{}, p.fail(paygate.ProviderUnknownOutcome, msgBadAnswer)
	}
	out := paygate.RefundResult{ProviderRef: rf.ID}
	switch rf.Status {
	case "succeeded":
		out.Status = paygate.RefundSucceeded
	case "failed", "canceled":
		out.Status = paygate.RefundFailed
		out.FailureReason = "Stripe could not refund the payment"
		if rf.FailureReason != "" {
			out.FailureReason += ": " + strings.ReplaceAll(rf.FailureReason, "_", " ")
		}
		out.FailureReason += "."
	default: // pending, requires_action
		out.Status = paygate.RefundPending
	}
	return out, nil
}

// --- 3-D Secure -----------------------------------------------------------

// CompleteThreeDS retrieves the intent once the customer is back. What the
// browser posted is not trusted: only the intent, read from Stripe by the
// reference paygate stored, decides. A payment_intent field, when the
// browser brings one (Stripe adds it to the return URL), must name it.
func (p *Provider) CompleteThreeDS(ctx context.Context, req paygate.ThreeDSCompletion) (paygate.ThreeDSResult, error) {
	if !validRef(req.ProviderRef, "pi_") {
		return paygate.ThreeDSResult{}, p.fail(paygate.ProviderFailed, "The payment provider does not know this payment.")
	}
	if pi, ok := req.Response["payment_intent"]; ok && pi != req.ProviderRef {
		return paygate.ThreeDSResult{}, p.fail(paygate.ProviderFailed, "The 3-D Secure response is not the one of this payment.")
	}
	in, perr := p.retrieve(ctx, req.ProviderRef)
	if perr != nil {
		return paygate.ThreeDSResult{}, perr
	}
	if in.Metadata[MetadataKey] != "" && in.Metadata[MetadataKey] != req.PaymentID {
		return paygate.ThreeDSResult{}, p.fail(paygate.ProviderFailed, "The 3-D Secure response is not the one of this payment.")
	}
	switch in.Status {
	case "requires_action":
		return paygate.ThreeDSResult{}, p.fail(paygate.ProviderUnavailable, msgNotCompleted)
	case "requires_payment_method", "canceled":
		if e := in.LastPaymentError; e == nil || e.Code == "payment_intent_authentication_failure" {
			return paygate.ThreeDSResult{Authenticated: false, ProviderRef: in.ID}, nil
		}
	}
	res, err := p.result(in)
	if errors.Is(err, errNotFinal) {
		return paygate.ThreeDSResult{}, p.fail(paygate.ProviderUnknownOutcome, "Stripe is still processing the payment; the outcome is not known yet.")
	}
	if err != nil {
		return paygate.ThreeDSResult{}, err
	}
	return paygate.ThreeDSResult{Authenticated: true, Status: res.Status, ProviderRef: res.ProviderRef, DeclineCode: res.DeclineCode, Message: res.Message}, nil
}

func (p *Provider) retrieve(ctx context.Context, ref string) (*intent, *paygate.ProviderError) {
	r, perr := p.call(ctx, http.MethodGet, "/v1/payment_intents/"+url.PathEscape(ref), nil, "")
	if perr != nil {
		return nil, perr
	}
	if r.status/100 != 2 {
		pe := p.classify(r)
		if pe.Kind == paygate.ProviderUnknownOutcome {
			pe.Kind = paygate.ProviderUnavailable // a read: nothing was processed
		}
		return nil, pe
	}
	var in intent
	if err := json.Unmarshal(r.body, &in); err != nil || in.ID == "" {
		return nil, p.fail(paygate.ProviderFailed, msgBadAnswer)
	}
	return &in, nil
}

// --- inquiry --------------------------------------------------------------

// Inquire searches the intent carrying our payment id in its metadata.
func (p *Provider) Inquire(ctx context.Context, paymentID string) (paygate.Inquiry, error) {
	q := url.Values{}
	q.Set("query", fmt.Sprintf("metadata['%s']:'%s'", MetadataKey, strings.ReplaceAll(paymentID, "'", "")))
	q.Set("limit", "10")
	r, perr := p.call(ctx, http.MethodGet, "/v1/payment_intents/search?"+q.Encode(), nil, "")
	if perr != nil {
		perr.Kind = paygate.ProviderUnavailable
		return paygate.Inquiry{}, perr
	}
	if r.status/100 != 2 {
		return paygate.Inquiry{}, p.fail(paygate.ProviderUnavailable, p.classify(r).Message)
	}
	var list struct {
		Data []intent `json:"data"`
	}
	if err := json.Unmarshal(r.body, &list); err != nil {
		return paygate.Inquiry{}, p.fail(paygate.ProviderUnavailable, msgBadAnswer)
	}
	var found *intent
	for i := range list.Data {
		if list.Data[i].Metadata[MetadataKey] == paymentID {
			found = &list.Data[i]
			break
		}
	}
	if found == nil {
		if p.young(paymentID) {
			return paygate.Inquiry{Status: paygate.InquiryPending}, nil
		}
		return paygate.Inquiry{Status: paygate.InquiryUnknown}, nil
	}
	res, err := p.result(found)
	switch {
	case errors.Is(err, errNotFinal):
		return paygate.Inquiry{Status: paygate.InquiryPending}, nil
	case err != nil:
		return paygate.Inquiry{Status: paygate.InquiryErrored, Message: err.(*paygate.ProviderError).Message}, nil
	}
	return paygate.Inquiry{Status: paygate.InquiryAnswered, Result: res}, nil
}

// young reports whether a payment (a UUIDv7 id) is recent enough that
// Stripe's search may not show its intent yet.
func (p *Provider) young(paymentID string) bool {
	if p.searchLag < 0 {
		return false
	}
	u, err := uuid.Parse(paymentID)
	if err != nil || u.Version() != 7 {
		return false
	}
	sec, nsec := u.Time().UnixTime()
	return time.Since(time.Unix(sec, nsec)) < p.searchLag
}
