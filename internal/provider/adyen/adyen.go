// Package adyen is the connector to Adyen's Checkout API v71 for card
// payments with raw card details (a PCI-compliant platform's integration).
//
// What it sends and how it reads Adyen's answers:
//
//   - Charge: POST /payments with paymentMethod.type "scheme" and the raw
//     number, expiryMonth, expiryYear (four digits), cvc and holderName;
//     reference is our payment id, Idempotency-Key is derived from it (at
//     most 64 characters), captureDelayHours is 0. returnUrl is paygate's
//     3-D Secure callback (ChargeRequest.ThreeDSReturnURL) with
//     redirectFromIssuerMethod POST, so that Adyen posts redirectResult to
//     it; without one, the merchant's returnUrl. Billing details go to
//     billingAddress, shopperEmail, shopperIP, shopperName,
//     telephoneNumber and dateOfBirth; the device fingerprint to
//     deviceFingerprint. Metadata is never sent.
//   - Capture: every charge asks Adyen to capture at once (captureDelayHours
//     0), whatever the merchant account's capture delay setting, so an
//     Authorised answer is reported as captured. Capture and Void still call
//     /payments/{pspReference}/captures and /cancels for payments authorized
//     otherwise; both are asynchronous at Adyen (status "received") and are
//     reported as done when Adyen accepts them.
//   - resultCode: Authorised → captured; Refused → failed with Adyen's
//     refusalReason mapped to our decline codes (refusal.go); RedirectShopper
//     with a redirect action → pending_3ds; Error, Cancelled and anything
//     unexpected → ProviderFailed; Received and Pending → an unknown outcome
//     (ProviderUnknownOutcome: the payment answers 202 and is left to
//     recovery, see Inquire).
//   - Refund: POST /payments/{pspReference}/refunds is asynchronous: Adyen
//     answers "received" and the outcome comes by a REFUND notification
//     (notification.go); the refund is reported pending.
//   - Transport: connection refused (nothing sent) → ProviderUnavailable;
//     429 (rate limited: not processed) → ProviderUnavailable; a timeout or
//     broken connection after sending, and any 5xx → ProviderUnknownOutcome;
//     other 4xx → ProviderFailed. No error text ever carries the card
//     number: messages come from fixed texts and Adyen's own messages, which
//     are scrubbed of digit runs long enough to be a card number.
package adyen

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
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
	"syscall"
	"time"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/tracing"
)

// DefaultBaseURL is Adyen's Checkout API v71 test endpoint. Live endpoints
// are account-specific (https://{prefix}-checkout-live.adyenpayments.com/checkout/v71).
const DefaultBaseURL = "https://checkout-test.adyen.com/v71"

// DefaultTimeout is the deadline of one call when the configuration gives none.
const DefaultTimeout = 10 * time.Second

// NoReturnURL is the returnUrl sent when the payment has none: Adyen
// requires one. The .invalid top-level domain never resolves, so a payment
// that needs a redirect and has no returnUrl of its own cannot come back
// from Adyen's pages; its challenge expires (AUTHENTICATION_EXPIRED).
const NoReturnURL = "https://no-return-url.paygate.invalid/"

// Config configures one Adyen connector.
type Config struct {
	ID              string
	APIKey          string
	MerchantAccount string
	// BaseURL is the Checkout API base, default DefaultBaseURL.
	BaseURL string
	// HMACKey is the hex HMAC key of the notification webhook (Customer
	// Area > Developers > Webhooks); empty refuses every notification.
	HMACKey string
	// Currencies served, nil serves every currency.
	Currencies []string
	// Timeout is the deadline of each call, default DefaultTimeout.
	Timeout    time.Duration
	HTTPClient *http.Client
}

// Provider is the Adyen connector. It implements paygate.Provider,
// paygate.ThreeDSProvider and paygate.Inquirer.
type Provider struct {
	id         string
	apiKey     string
	merchant   string
	base       string
	hmacKey    []byte
	currencies []string
	timeout    time.Duration
	client     *http.Client
	journal    journal
}

var (
	_ paygate.ThreeDSProvider = (*Provider)(nil)
	_ paygate.Inquirer        = (*Provider)(nil)
)

// New checks the configuration and returns the connector.
func New(cfg Config) (*Provider, error) {
	if cfg.ID == "" {
		return nil, errors.New("adyen: an id is required")
	}
	if cfg.APIKey == "" {
		return nil, fmt.Errorf("adyen %s: an API key is required", cfg.ID)
	}
	if cfg.MerchantAccount == "" {
		return nil, fmt.Errorf("adyen %s: a merchant account is required", cfg.ID)
	}
	base := strings.TrimRight(cfg.BaseURL, "/")
	if base == "" {
		base = DefaultBaseURL
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("adyen %s: base URL %q is not an absolute http(s) URL", cfg.ID, cfg.BaseURL)
	}
	var key []byte
	if cfg.HMACKey != "" {
		key, err = hex.DecodeString(cfg.HMACKey)
		if err != nil || len(key) == 0 {
			return nil, fmt.Errorf("adyen %s: the HMAC key must be hexadecimal", cfg.ID)
		}
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	client := cfg.HTTPClient
	if client == nil {
		// A client span per call, carrying traceparent to Adyen.
		client = &http.Client{Transport: tracing.Transport(nil, tracing.ProviderKey.String(cfg.ID))}
	}
	var cur []string
	if cfg.Currencies != nil {
		cur = make([]string, 0, len(cfg.Currencies))
		for _, c := range cfg.Currencies {
			cur = append(cur, strings.ToUpper(c))
		}
		slices.Sort(cur)
		cur = slices.Compact(cur)
	}
	return &Provider{
		id: cfg.ID, apiKey: cfg.APIKey, merchant: cfg.MerchantAccount, base: base,
		hmacKey: key, currencies: cur, timeout: timeout, client: client,
	}, nil
}

// ID returns the provider id.
func (p *Provider) ID() string { return p.id }

// Serves reports whether the provider accepts payments in the currency.
func (p *Provider) Serves(currency string) bool {
	return p.currencies == nil || slices.Contains(p.currencies, strings.ToUpper(currency))
}

// Currencies returns the currencies served, sorted, or nil for every one.
func (p *Provider) Currencies() []string { return slices.Clone(p.currencies) }

// --- wire types (the subset of Checkout v71 paygate uses) ---

type amount struct {
	Currency string `json:"currency"`
	Value    int64  `json:"value"`
}

type cardDetails struct {
	Type        string `json:"type"`
	Number      string `json:"number"`
	ExpiryMonth string `json:"expiryMonth"`
	ExpiryYear  string `json:"expiryYear"`
	CVC         string `json:"cvc,omitempty"`
	HolderName  string `json:"holderName,omitempty"`
}

type billingAddress struct {
	City              string `json:"city"`
	Country           string `json:"country"`
	HouseNumberOrName string `json:"houseNumberOrName"`
	PostalCode        string `json:"postalCode"`
	StateOrProvince   string `json:"stateOrProvince,omitempty"`
	Street            string `json:"street"`
}

type shopperName struct {
	FirstName string `json:"firstName"`
	LastName  string `json:"lastName"`
}

type paymentRequest struct {
	Amount             amount          `json:"amount"`
	MerchantAccount    string          `json:"merchantAccount"`
	PaymentMethod      cardDetails     `json:"paymentMethod"`
	Reference          string          `json:"reference"`
	ReturnURL          string          `json:"returnUrl"`
	ShopperInteraction string          `json:"shopperInteraction"`
	RedirectFromIssuer string          `json:"redirectFromIssuerMethod,omitempty"`
	CaptureDelayHours  int             `json:"captureDelayHours"`
	BillingAddress     *billingAddress `json:"billingAddress,omitempty"`
	ShopperEmail       string          `json:"shopperEmail,omitempty"`
	ShopperIP          string          `json:"shopperIP,omitempty"`
	ShopperName        *shopperName    `json:"shopperName,omitempty"`
	TelephoneNumber    string          `json:"telephoneNumber,omitempty"`
	DateOfBirth        string          `json:"dateOfBirth,omitempty"`
	DeviceFingerprint  string          `json:"deviceFingerprint,omitempty"`
}

type action struct {
	Type   string            `json:"type"`
	URL    string            `json:"url"`
	Method string            `json:"method"`
	Data   map[string]string `json:"data"`
}

type paymentResponse struct {
	PSPReference      string  `json:"pspReference"`
	ResultCode        string  `json:"resultCode"`
	RefusalReason     string  `json:"refusalReason"`
	RefusalReasonCode string  `json:"refusalReasonCode"`
	MerchantReference string  `json:"merchantReference"`
	Action            *action `json:"action"`
}

type detailsRequest struct {
	Details map[string]string `json:"details"`
}

type modificationRequest struct {
	MerchantAccount string  `json:"merchantAccount"`
	Amount          *amount `json:"amount,omitempty"`
	Reference       string  `json:"reference,omitempty"`
}

type modificationResponse struct {
	PSPReference        string `json:"pspReference"`
	PaymentPSPReference string `json:"paymentPspReference"`
	Status              string `json:"status"`
}

type serviceError struct {
	Status    int    `json:"status"`
	ErrorCode string `json:"errorCode"`
	Message   string `json:"message"`
	ErrorType string `json:"errorType"`
}

// --- operations ---

// Charge submits a payment to /payments.
func (p *Provider) Charge(ctx context.Context, req paygate.ChargeRequest) (paygate.ChargeResult, error) {
	amt, err := p.amount(req.Amount)
	if err != nil {
		return paygate.ChargeResult{}, err
	}
	body := paymentRequest{
		Amount:          amt,
		MerchantAccount: p.merchant,
		PaymentMethod: cardDetails{
			Type:        "scheme",
			Number:      req.Card.Number.Reveal(),
			ExpiryMonth: fmt.Sprintf("%02d", req.Card.ExpMonth),
			ExpiryYear:  fmt.Sprintf("%04d", req.Card.ExpYear),
			CVC:         req.Card.CVV.Reveal(),
			HolderName:  req.Card.HolderName,
		},
		Reference:          req.PaymentID,
		ReturnURL:          req.ReturnURL,
		ShopperInteraction: "Ecommerce",
		CaptureDelayHours:  0,
		DeviceFingerprint:  req.DeviceFingerprint,
	}
	switch {
	case req.ThreeDSReturnURL != "":
		// Adyen brings the customer back to paygate's callback, posting
		// redirectResult (the callback takes form posts).
		body.ReturnURL, body.RedirectFromIssuer = req.ThreeDSReturnURL, http.MethodPost
	case body.ReturnURL == "":
		body.ReturnURL = NoReturnURL
	}
	if b := req.Billing; b != nil {
		body.ShopperEmail, body.ShopperIP, body.TelephoneNumber = b.Email, b.IPAddress, b.Phone
		if b.FirstName != "" && b.LastName != "" {
			body.ShopperName = &shopperName{FirstName: b.FirstName, LastName: b.LastName}
		}
		if b.DOB != "" {
			body.DateOfBirth = b.DOB + "T00:00:00Z"
		}
		if b.Country != "" && b.Address != "" && b.City != "" && b.PostalCode != "" {
			body.BillingAddress = &billingAddress{
				Street: b.Address, HouseNumberOrName: b.AddressLine2, City: b.City,
				PostalCode: b.PostalCode, StateOrProvince: b.State, Country: b.Country,
			}
		}
	}
	var res paymentResponse
	err = p.call(ctx, "/payments", idemKey("pay", req.PaymentID), body, &res)
	var out paygate.ChargeResult
	if err == nil {
		out, err = p.chargeResult(res)
	}
	p.note(req.PaymentID, out, err)
	return out, err
}

// note journals a charge's outcome for Inquire.
func (p *Provider) note(paymentID string, res paygate.ChargeResult, err error) {
	var pe *paygate.ProviderError
	switch {
	case err == nil:
		p.journal.put(paymentID, entry{sent: true, done: true, result: res})
	case errors.As(err, &pe) && pe.Kind == paygate.ProviderUnavailable:
		if old, ok := p.journal.get(paymentID); !ok || !old.sent {
			p.journal.put(paymentID, entry{sent: false})
		}
	case errors.As(err, &pe) && pe.Kind == paygate.ProviderFailed:
		p.journal.put(paymentID, entry{sent: true, done: true, errored: pe.Message})
	default:
		p.journal.put(paymentID, entry{sent: true})
	}
}

// chargeResult reads a /payments answer.
func (p *Provider) chargeResult(res paymentResponse) (paygate.ChargeResult, error) {
	out := paygate.ChargeResult{ProviderRef: res.PSPReference}
	switch res.ResultCode {
	case "Authorised":
		out.Status = paygate.PaymentCaptured
	case "Refused":
		out.Status = paygate.PaymentFailed
		out.DeclineCode, out.Message = declineOf(res.RefusalReasonCode, res.RefusalReason)
	case "RedirectShopper":
		a := res.Action
		if a == nil || a.Type != "redirect" || a.URL == "" {
			return paygate.ChargeResult{}, p.fail(paygate.ProviderFailed, "asked for a shopper action paygate cannot present (only redirect actions are supported)")
		}
		method := strings.ToUpper(a.Method)
		if method != http.MethodPost {
			method = http.MethodGet
		}
		out.Status = paygate.PaymentPending3DS
		out.ThreeDS = &paygate.ThreeDSAction{RedirectURL: a.URL, Method: method, Parameters: cloneMap(a.Data)}
	case "Received", "Pending":
		// Adyen holds the payment and has not decided: the outcome is not
		// known now (see Inquire).
		return paygate.ChargeResult{}, p.fail(paygate.ProviderUnknownOutcome, "Adyen received the payment but has not decided it yet ("+res.ResultCode+")")
	case "Error":
		return paygate.ChargeResult{}, p.fail(paygate.ProviderFailed, "Adyen could not process the payment: "+scrub(orDefault(res.RefusalReason, "error")))
	default:
		return paygate.ChargeResult{}, p.fail(paygate.ProviderFailed, "Adyen answered with result code "+strconv.Quote(scrub(res.ResultCode)))
	}
	return out, nil
}

// CompleteThreeDS submits what the customer's browser brought back to
// /payments/details: redirectResult (Adyen posts it to the callback, the
// charge's returnUrl), or MD and PaRes (a POST challenge whose TermUrl
// paygate replaced with its callback). The details
// call carries an Idempotency-Key derived from the payment.
func (p *Provider) CompleteThreeDS(ctx context.Context, req paygate.ThreeDSCompletion) (paygate.ThreeDSResult, error) {
	details := map[string]string{}
	for _, k := range []string{"redirectResult", "MD", "PaRes", "threeDSResult", "payload"} {
		if v := req.Response[k]; v != "" {
			details[k] = v
		}
	}
	if len(details) == 0 {
		return paygate.ThreeDSResult{}, p.fail(paygate.ProviderFailed, "the 3-D Secure return carried no redirectResult (nor MD and PaRes)")
	}
	var res paymentResponse
	if err := p.call(ctx, "/payments/details", idemKey("3ds", req.PaymentID), detailsRequest{Details: details}, &res); err != nil {
		return paygate.ThreeDSResult{}, err
	}
	if res.MerchantReference != "" && res.MerchantReference != req.PaymentID {
		return paygate.ThreeDSResult{}, p.fail(paygate.ProviderFailed, "the 3-D Secure return belongs to another payment")
	}
	ref := orDefault(res.PSPReference, req.ProviderRef)
	switch res.ResultCode {
	case "Authorised":
		return paygate.ThreeDSResult{Authenticated: true, Status: paygate.PaymentCaptured, ProviderRef: ref}, nil
	case "Refused":
		if isAuthenticationFailure(res.RefusalReasonCode, res.RefusalReason) {
			return paygate.ThreeDSResult{Authenticated: false, ProviderRef: ref}, nil
		}
		code, msg := declineOf(res.RefusalReasonCode, res.RefusalReason)
		return paygate.ThreeDSResult{Authenticated: true, Status: paygate.PaymentFailed, ProviderRef: ref, DeclineCode: code, Message: msg}, nil
	case "Cancelled":
		return paygate.ThreeDSResult{Authenticated: false, ProviderRef: ref}, nil
	case "Received", "Pending":
		return paygate.ThreeDSResult{}, p.fail(paygate.ProviderUnknownOutcome, "Adyen has not decided the payment yet ("+res.ResultCode+")")
	case "Error":
		return paygate.ThreeDSResult{}, p.fail(paygate.ProviderFailed, "Adyen could not process the payment: "+scrub(orDefault(res.RefusalReason, "error")))
	default:
		return paygate.ThreeDSResult{}, p.fail(paygate.ProviderFailed, "Adyen answered the 3-D Secure return with result code "+strconv.Quote(scrub(res.ResultCode)))
	}
}

// Capture captures an authorized payment through /captures.
func (p *Provider) Capture(ctx context.Context, op paygate.PaymentOp) error {
	amt, err := p.amount(op.Amount)
	if err != nil {
		return err
	}
	var res modificationResponse
	return p.modify(ctx, op.ProviderRef, "captures", idemKey("cap", op.PaymentID),
		modificationRequest{MerchantAccount: p.merchant, Amount: &amt, Reference: op.PaymentID}, &res)
}

// Void cancels an authorized payment through /cancels.
func (p *Provider) Void(ctx context.Context, op paygate.PaymentOp) error {
	var res modificationResponse
	return p.modify(ctx, op.ProviderRef, "cancels", idemKey("can", op.PaymentID),
		modificationRequest{MerchantAccount: p.merchant, Reference: op.PaymentID}, &res)
}

// Refund asks for a refund through /refunds. Adyen decides later: the
// answer is pending, and a REFUND notification brings the outcome.
func (p *Provider) Refund(ctx context.Context, req paygate.RefundRequest) (paygate.RefundResult, error) {
	amt, err := p.amount(req.Amount)
	if err != nil {
		return paygate.RefundResult{}, err
	}
	var res modificationResponse
	err = p.modify(ctx, req.ProviderRef, "refunds", idemKey("ref", req.RefundID),
		modificationRequest{MerchantAccount: p.merchant, Amount: &amt, Reference: req.RefundID}, &res)
	if err != nil {
		return paygate.RefundResult{}, err
	}
	return paygate.RefundResult{Status: paygate.RefundPending, ProviderRef: res.PSPReference}, nil
}

// Inquire answers from what this process learned of the charge: Adyen's
// Checkout API has no lookup of a payment by our reference (nor by
// idempotency key without repeating the original request, and paygate
// keeps no card data to repeat one). The connector journals every charge it
// sends (in memory) and what Adyen answered, directly or later by an
// AUTHORISATION notification (notification.go):
//
//   - a charge that never left (connection refused, a context already done)
//     is InquiryUnknown;
//   - a charge sent without an answer (a timeout, Received or Pending) is
//     InquiryPending until its AUTHORISATION notification arrives;
//   - an answered charge is InquiryAnswered (or InquiryErrored).
//
// A payment this process has no record of (it was sent by another node, or
// before a restart) cannot be asked about: Inquire answers an error, so
// recovery asks again later and the payment stays created until a
// notification reaches this process or an operator resolves it from
// Adyen's Customer Area. It is never guessed to be unknown, which would
// mark a payment failed that Adyen may have charged.
func (p *Provider) Inquire(_ context.Context, paymentID string) (paygate.Inquiry, error) {
	e, ok := p.journal.get(paymentID)
	switch {
	case !ok:
		return paygate.Inquiry{}, p.fail(paygate.ProviderUnknownOutcome,
			"this process has no record of the payment and Adyen's Checkout API cannot be asked for it; resolve it from the Customer Area")
	case !e.sent:
		return paygate.Inquiry{Status: paygate.InquiryUnknown}, nil
	case !e.done:
		return paygate.Inquiry{Status: paygate.InquiryPending}, nil
	case e.errored != "":
		return paygate.Inquiry{Status: paygate.InquiryErrored, Message: e.errored}, nil
	default:
		return paygate.Inquiry{Status: paygate.InquiryAnswered, Result: e.result}, nil
	}
}

func (p *Provider) modify(ctx context.Context, pspRef, what, key string, body modificationRequest, out *modificationResponse) error {
	if pspRef == "" {
		return p.fail(paygate.ProviderFailed, "the payment has no Adyen reference")
	}
	path := "/payments/" + url.PathEscape(pspRef) + "/" + what
	if err := p.call(ctx, path, key, body, out); err != nil {
		return err
	}
	if out.Status != "received" {
		return p.fail(paygate.ProviderFailed, "Adyen answered the "+strings.TrimSuffix(what, "s")+" with status "+strconv.Quote(scrub(out.Status)))
	}
	return nil
}

// --- transport ---

// call POSTs body as JSON and decodes a 200 answer into out.
func (p *Provider) call(ctx context.Context, path, idempotencyKey string, body, out any) error {
	raw, err := json.Marshal(body)
	if err != nil {
		return p.fail(paygate.ProviderFailed, "could not encode the request")
	}
	if ctx.Err() != nil {
		return p.fail(paygate.ProviderUnavailable, "the call was cancelled before it was sent (nothing was sent)")
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, p.base+path, bytes.NewReader(raw))
	if err != nil {
		return p.fail(paygate.ProviderFailed, "could not build the request")
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	hreq.Header.Set("X-API-Key", p.apiKey)
	hreq.Header.Set("Idempotency-Key", idempotencyKey)
	resp, err := p.client.Do(hreq)
	if err != nil {
		if notSent(err) {
			return p.fail(paygate.ProviderUnavailable, "Adyen could not be reached (nothing was sent)")
		}
		return p.fail(paygate.ProviderUnknownOutcome, "no answer from Adyen (the request may have been processed)")
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return p.fail(paygate.ProviderUnknownOutcome, "the answer from Adyen was cut off (the request may have been processed)")
	}
	switch {
	case resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusCreated:
		if err := json.Unmarshal(data, out); err != nil {
			return p.fail(paygate.ProviderUnknownOutcome, "Adyen's answer could not be read (the request may have been processed)")
		}
		return nil
	case resp.StatusCode == http.StatusTooManyRequests:
		return p.fail(paygate.ProviderUnavailable, "Adyen is rate limiting requests (nothing was processed)")
	case resp.StatusCode >= 500:
		return p.fail(paygate.ProviderUnknownOutcome, fmt.Sprintf("Adyen answered HTTP %d (the request may have been processed)", resp.StatusCode))
	default:
		var se serviceError
		_ = json.Unmarshal(data, &se)
		msg := fmt.Sprintf("Adyen refused the request (HTTP %d", resp.StatusCode)
		if se.ErrorCode != "" {
			msg += ", error " + scrub(se.ErrorCode)
		}
		msg += ")"
		if se.Message != "" {
			msg += ": " + scrub(se.Message)
		}
		return p.fail(paygate.ProviderFailed, msg)
	}
}

// notSent reports whether a transport error proves the request never left:
// the connection was refused or could not be made.
func notSent(err error) bool {
	if errors.Is(err, syscall.ECONNREFUSED) {
		return true
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns)
}

func (p *Provider) fail(kind paygate.ProviderErrorKind, msg string) error {
	return &paygate.ProviderError{Kind: kind, Provider: p.id, Message: msg}
}

// idemKey is the Idempotency-Key of an operation on one of our ids: a
// prefix naming the operation and the id, at most 64 characters (an id too
// long for it is hashed).
func idemKey(op, id string) string {
	k := "paygate-" + op + "-" + id
	if len(k) <= 64 {
		return k
	}
	h := sha256.Sum256([]byte(id))
	k = "paygate-" + op + "-" + hex.EncodeToString(h[:])
	return k[:64]
}

// digitRun is a run of digits (with spaces or dashes) long enough to be a
// card number.
var digitRun = regexp.MustCompile(`\d[\d -]{10,}\d`)

// scrub removes anything that could be a card number from Adyen's text
// and bounds its length.
func scrub(s string) string {
	s = digitRun.ReplaceAllString(s, "[redacted]")
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func cloneMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
