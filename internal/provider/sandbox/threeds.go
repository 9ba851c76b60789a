package sandbox

import (
	"bytes"
	"context"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"html/template"
	"io"
	"net/url"
	"strings"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/web"
)

// The 3-D Secure simulation of the test cards 4000000000003220 and
// 4000008400001629. Charge answers pending_3ds with a challenge shown by the
// sandbox's challenge page, which paygate itself serves at ChallengePath (a
// test-mode stand-in for the card issuer's page). The page posts the
// customer's choice to the callback (TermUrl) as a challenge response (cres),
// which the completion reads: authenticated cards are captured, except
// 4000008400001629, whose capture is declined after authentication.
//
// Messages follow the shape of EMV 3-D Secure 2 (creq/cres, base64url JSON),
// without its cryptography: test mode needs none. What the sandbox must
// remember between the charge and the completion travels in the payment's
// ProviderRef, as for the other cards.

var _ paygate.ThreeDSProvider = (*Provider)(nil)

// ChallengePath is the path, under paygate's base URL, of the sandbox
// challenge page. Charge answers it as the RedirectURL; paygate resolves it
// against its base URL and serves the page.
const ChallengePath = "/v1/3ds/sandbox/challenge"

// Challenge references: "sbx3ds_" and the 32 hex digits of the payment's
// later reference, plus "_cd" when the capture is declined after
// authentication. Once completed, the payment gets its usual "sbx_"
// reference, so capture, void and refund work as for any card.
const (
	threeDSRefPrefix          = "sbx3ds_"
	threeDSCaptureDeclinedSfx = "_cd"
	messageVersion            = "2.2.0"
)

// Messages of the 3-D Secure simulation.
const (
	msg3DSBadResponse     = "The 3-D Secure challenge response is invalid."
	msg3DSCaptureDeclined = "Your card was declined."
)

// creq is a challenge request, as the merchant's page posts it to the
// challenge page.
type creq struct {
	MessageType          string `json:"messageType"`
	MessageVersion       string `json:"messageVersion"`
	ThreeDSServerTransID string `json:"threeDSServerTransID"`
	ACSTransID           string `json:"acsTransID"`
	ChallengeWindowSize  string `json:"challengeWindowSize"`
}

// cres is a challenge response, as the challenge page posts it to TermUrl.
// TransStatus is Y (authenticated) or N (not authenticated).
type cres struct {
	MessageType          string `json:"messageType"`
	MessageVersion       string `json:"messageVersion"`
	ThreeDSServerTransID string `json:"threeDSServerTransID"`
	ACSTransID           string `json:"acsTransID"`
	TransStatus          string `json:"transStatus"`
}

// encodeMessage is base64url (no padding) of the JSON of v.
func encodeMessage(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic("sandbox: encode 3-D Secure message: " + err.Error()) // strings only: cannot fail
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeMessage decodes base64url JSON into v, refusing unknown fields.
func decodeMessage(s string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil {
		return err
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	return d.Decode(v)
}

// acsTransID is the issuer's id of the challenge of a payment: a stable
// UUID-shaped digest, so the completion can check it without state.
func acsTransID(paymentID string) string {
	d := digest("sandbox-acs", paymentID)
	return d[0:8] + "-" + d[8:12] + "-" + d[12:16] + "-" + d[16:20] + "-" + d[20:32]
}

// sessionData is the threeDSSessionData of a payment's challenge.
func sessionData(paymentID string) string {
	return digest("sandbox-3ds-session", paymentID)
}

// challenge answers a 3-D Secure card: pending_3ds, with the challenge page
// to send the customer to.
func (p *Provider) challenge(req paygate.ChargeRequest, captureDeclined bool) paygate.ChargeResult {
	ref := threeDSRefPrefix + strings.TrimPrefix(p.paymentRef(req.PaymentID, fateNone), paymentRefPrefix)
	if captureDeclined {
		ref += threeDSCaptureDeclinedSfx
	}
	return paygate.ChargeResult{Status: paygate.PaymentPending3DS, ProviderRef: ref, ThreeDS: threeDSAction(req.PaymentID)}
}

// threeDSAction is the challenge of a payment: the challenge page and the
// provider's parameters for it (paygate adds TermUrl). It derives from the
// payment id alone, so a status inquiry can answer it again.
func threeDSAction(paymentID string) *paygate.ThreeDSAction {
	return &paygate.ThreeDSAction{
		RedirectURL: ChallengePath,
		Method:      "POST",
		Parameters: map[string]string{
			"creq": encodeMessage(creq{
				MessageType: "CReq", MessageVersion: messageVersion,
				ThreeDSServerTransID: paymentID, ACSTransID: acsTransID(paymentID),
				ChallengeWindowSize: "05",
			}),
			"threeDSSessionData": sessionData(paymentID),
		},
	}
}

// parseThreeDSRef returns the digest of a challenge reference and whether
// its capture is declined; ok is false for a reference the sandbox never
// issued.
func parseThreeDSRef(ref string) (d string, captureDeclined, ok bool) {
	rest, ok := strings.CutPrefix(ref, threeDSRefPrefix)
	if !ok {
		return "", false, false
	}
	if r, cut := strings.CutSuffix(rest, threeDSCaptureDeclinedSfx); cut {
		rest, captureDeclined = r, true
	}
	if len(rest) != refDigestLen {
		return "", false, false
	}
	if _, err := hex.DecodeString(rest); err != nil {
		return "", false, false
	}
	return rest, captureDeclined, true
}

// CompleteThreeDS reads the challenge response the customer's browser posted
// (cres and threeDSSessionData, as the challenge page sends them). TransStatus
// N: not authenticated. Y: captured, or for card 4000008400001629 declined
// (generic_decline). The answer derives from the payment alone, so a repeated
// call gives the same one. Errors: ProviderFailed for a reference the sandbox
// never issued or a response that is not the one of this payment's
// challenge; ProviderUnavailable when ctx ends first.
func (p *Provider) CompleteThreeDS(ctx context.Context, req paygate.ThreeDSCompletion) (paygate.ThreeDSResult, error) {
	if err := p.begin(ctx); err != nil {
		return paygate.ThreeDSResult{}, err
	}
	d, captureDeclined, ok := parseThreeDSRef(req.ProviderRef)
	if !ok || d != digest(p.id, "payment", req.PaymentID) {
		return paygate.ThreeDSResult{}, p.fail(paygate.ProviderFailed, msgUnknownRef)
	}
	var r cres
	if err := decodeMessage(req.Response["cres"], &r); err != nil ||
		r.MessageType != "CRes" || r.ThreeDSServerTransID != req.PaymentID ||
		r.ACSTransID != acsTransID(req.PaymentID) || req.Response["threeDSSessionData"] != sessionData(req.PaymentID) {
		return paygate.ThreeDSResult{}, p.fail(paygate.ProviderFailed, msg3DSBadResponse)
	}
	switch r.TransStatus {
	case "N":
		return paygate.ThreeDSResult{Authenticated: false, ProviderRef: req.ProviderRef}, nil
	case "Y":
	default:
		return paygate.ThreeDSResult{}, p.fail(paygate.ProviderFailed, msg3DSBadResponse)
	}
	ref := p.paymentRef(req.PaymentID, fateNone)
	if captureDeclined {
		return paygate.ThreeDSResult{
			Authenticated: true, Status: paygate.PaymentFailed, ProviderRef: ref,
			DeclineCode: paygate.DeclineGeneric, Message: msg3DSCaptureDeclined,
		}, nil
	}
	return paygate.ThreeDSResult{Authenticated: true, Status: paygate.PaymentCaptured, ProviderRef: ref}, nil
}

// --- the challenge page --------------------------------------------------

//go:embed challenge/page.html challenge/page.css
var challengeFiles embed.FS

var (
	challengeTemplate = template.Must(template.ParseFS(challengeFiles, "challenge/page.html"))
	challengeStyle    = web.EmbeddedStyle(challengeFiles, "challenge/page.css")
)

// ChallengeStyleSource is the Content-Security-Policy source that allows
// the page's one inline style element and nothing else ('sha256-...').
func ChallengeStyleSource() string { return web.StyleSource(challengeStyle) }

// Challenge is a challenge request as the challenge page received it from
// the merchant's page.
type Challenge struct {
	PaymentID   string // the payment the challenge is for
	TermURL     string // where the page posts the customer's choice
	SessionData string
	acsTransID  string
}

// ParseChallenge reads the form fields the merchant's page posted: creq,
// threeDSSessionData and TermUrl. It checks that they form a challenge the
// sandbox issued (the caller still checks that TermUrl is paygate's callback
// of a live challenge of that payment).
func ParseChallenge(form url.Values) (Challenge, error) {
	var r creq
	if err := decodeMessage(form.Get("creq"), &r); err != nil {
		return Challenge{}, errors.New("sandbox: creq is not a challenge request")
	}
	c := Challenge{
		PaymentID: r.ThreeDSServerTransID, TermURL: form.Get("TermUrl"),
		SessionData: form.Get("threeDSSessionData"), acsTransID: r.ACSTransID,
	}
	if r.MessageType != "CReq" || c.PaymentID == "" || r.ACSTransID != acsTransID(c.PaymentID) {
		return Challenge{}, errors.New("sandbox: creq is not a sandbox challenge request")
	}
	if c.SessionData != sessionData(c.PaymentID) {
		return Challenge{}, errors.New("sandbox: threeDSSessionData does not belong to the challenge")
	}
	if c.TermURL == "" {
		return Challenge{}, errors.New("sandbox: TermUrl is missing")
	}
	return c, nil
}

// ChallengeDetails is what the page shows the customer: who asks for how
// much. Never card data.
type ChallengeDetails struct {
	MerchantName string
	Amount       string // the decimal amount, with the currency's decimals
	Currency     string // ISO 4217 code
}

// RenderChallenge writes the challenge page of c: the details, and two
// forms posting to c.TermURL, form#threeds-complete (authentication
// succeeds) and form#threeds-fail (it fails), each with its own cres and the
// session data. The page has no script and loads nothing: its only style is
// inline, allowed by ChallengeStyleSource.
func RenderChallenge(w io.Writer, c Challenge, d ChallengeDetails) error {
	response := func(status string) string {
		return encodeMessage(cres{
			MessageType: "CRes", MessageVersion: messageVersion,
			ThreeDSServerTransID: c.PaymentID, ACSTransID: c.acsTransID, TransStatus: status,
		})
	}
	return challengeTemplate.Execute(w, struct {
		Style                  template.CSS
		MerchantName           string
		Amount, Currency       string
		TermURL                string
		CResComplete, CResFail string
		SessionData            string
	}{
		Style:        template.CSS(challengeStyle),
		MerchantName: d.MerchantName, Amount: d.Amount, Currency: d.Currency,
		TermURL:      c.TermURL,
		CResComplete: response("Y"), CResFail: response("N"),
		SessionData: c.SessionData,
	})
}
