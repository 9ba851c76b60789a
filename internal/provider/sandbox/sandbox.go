// Package sandbox is the test-mode provider: it answers every call from the
// test-card table of decisions.md section 12, in process, charging nothing
// (after an optional simulated latency).
//
// Like a remote provider, a sandbox keeps a durable ledger of the charges it
// received (in the gateway's database, see Ledger), so that a status inquiry
// (Inquire) tells the truth after a crash of the gateway. The ledger holds
// the outcome of each charge, never card data. What a later call must know
// about a payment (that every refund of card 4000000000005126 fails) travels
// in the ProviderRef it returns, which the gateway stores.
//
// Two knobs make a sandbox behave like a real remote provider for tests and
// demos: a latency (WithLatency) and a failure rate (WithFailureRate). A
// third, the approval rate (WithApprovalRate), declines a share of the
// cards outside the test-card table, for routing experiments.
package sandbox

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/provider/connector"
)

var _ paygate.Provider = (*Provider)(nil)

// Provider is one sandbox provider (sandbox-eu, sandbox-global, ...). It is
// safe for concurrent use and immutable once built, except for the
// operator's approval rate override (SetApprovalOverride).
type Provider struct {
	id         string
	currencies map[string]bool // nil: every currency
	// failsOver holds the currencies whose route this provider heads with
	// another provider behind it: card 0259 is unavailable for them.
	failsOver map[string]bool
	// failsOverOthers: card 0259 is also unavailable for every currency
	// outside notFirst (the provider heads the default route).
	failsOverOthers bool
	notFirst        map[string]bool
	latency         time.Duration
	failureRate     float64
	approvalRate    float64 // WithApprovalRate; 1 by default
	// approvalOverride is the operator's rate (SetApprovalOverride), nil
	// when none: the one thing that changes after the provider is built.
	approvalOverride atomic.Pointer[float64]
	ledger           Ledger
	withOutcome      bool // WithOutcomeLedger: entries commit with the outcome
	clock            paygate.Clock
}

// Option configures a Provider.
type Option func(*Provider)

// WithLatency makes every call take d before it is answered, to simulate a
// remote provider. A charge is received (and written to the ledger) first and
// answered after d: a context that ends during the wait is an unknown
// outcome, which the gateway resolves by inquiry. Capture, void and refund
// wait first: a context that ends during the wait aborts them with nothing
// processed.
func WithLatency(d time.Duration) Option {
	return func(p *Provider) { p.latency = d }
}

// FirstOf names the currencies whose route this provider heads, with another
// provider after it. For those, card 4000000000000259 answers
// ProviderUnavailable (nothing processed) so that the payment fails over to
// the next provider, which captures it: the failover happens exactly once
// whatever the currency. Everywhere else (alone in a route, or behind another
// provider) the card is captured. The routing table that places the provider
// sets this; it is the only thing a sandbox knows about routes.
func FirstOf(currencies ...string) Option {
	return func(p *Provider) {
		if p.failsOver == nil {
			p.failsOver = make(map[string]bool, len(currencies))
		}
		for _, c := range currencies {
			p.failsOver[strings.ToUpper(c)] = true
		}
	}
}

// FirstOfDefault says that the provider heads the default route with
// another provider after it: card 4000000000000259 is unavailable for every
// currency except the listed ones (which have routes of their own), as
// FirstOf says for listed currencies.
func FirstOfDefault(except ...string) Option {
	return func(p *Provider) {
		p.failsOverOthers = true
		if p.notFirst == nil {
			p.notFirst = make(map[string]bool, len(except))
		}
		for _, c := range except {
			p.notFirst[strings.ToUpper(c)] = true
		}
	}
}

// New returns a sandbox provider with the id that serves the currencies
// (ISO 4217 codes; nil serves every currency). Without WithLedger it keeps
// its ledger in memory.
func New(id string, currencies []string, opts ...Option) *Provider {
	p := &Provider{id: id, ledger: NewMemoryLedger(), clock: paygate.SystemClock{}, approvalRate: 1}
	if currencies != nil {
		p.currencies = make(map[string]bool, len(currencies))
		for _, c := range currencies {
			p.currencies[strings.ToUpper(c)] = true
		}
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

// ID returns the provider id shown to merchants.
func (p *Provider) ID() string { return p.id }

// LedgerInGateway is true: a sandbox charges nothing outside the gateway,
// and what it processed is recorded in its ledger after the payment's
// insert: in the gateway's database, with the payment's outcome
// (WithOutcomeLedger) or during Charge (card 4000000000000705, a latency,
// WithLedger),
// or in memory in unit tests, where a crash forgets the charge with
// everything else.
func (p *Provider) LedgerInGateway() bool { return true }

// Serves reports whether the provider accepts payments in the currency.
func (p *Provider) Serves(currency string) bool {
	return p.currencies == nil || p.currencies[currency]
}

// Currencies returns the currencies served, sorted, or nil when the provider
// serves every currency.
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

// firstWithNext reports whether card 4000000000000259 is unavailable here:
// this charge is its payment's first attempt with another provider of the
// route behind it. A router says so (connector.RoutePosition), from the
// order the payment really tries its route in (a success_rate route puts
// whichever provider scores best first); a charge that did not come
// through one goes by the routes the provider was told it heads (FirstOf,
// FirstOfDefault).
func (p *Provider) firstWithNext(ctx context.Context, currency string) bool {
	if head, known := connector.RoutePosition(ctx); known {
		return head
	}
	return p.failsOver[currency] || (p.failsOverOthers && !p.notFirst[currency])
}

// decide answers a charge from the test-card table by the card number, at
// once and without side effects; Charge (ledger.go) records and times the
// answer. Declines are results with status failed, a decline code and a
// message. Errors are *paygate.ProviderError: ProviderUnavailable for card
// 4000000000000259 when the provider heads the route (see FirstOf) and for
// a currency it does not serve; ProviderFailed for card 4000000000000119 and
// for a live-mode request. The 3-D Secure cards answer pending_3ds
// (threeds.go). A card outside the table is captured, or declined with
// generic_decline by the approval rate (approval.go). Card 4000000000000705 is captured here: Charge times its
// answer out.
func (p *Provider) decide(ctx context.Context, req paygate.ChargeRequest) (paygate.ChargeResult, error) {
	if req.Mode == paygate.ModeLive {
		// A misrouted live payment must never look captured.
		return paygate.ChargeResult{}, p.fail(paygate.ProviderFailed, msgLiveRefused)
	}
	currency := req.Amount.Currency
	if !p.Serves(currency) {
		return paygate.ChargeResult{}, p.fail(paygate.ProviderUnavailable, msgCurrencyMissing)
	}

	number := req.Card.Number.Reveal()
	if d, ok := declines[number]; ok {
		return paygate.ChargeResult{
			Status: paygate.PaymentFailed, ProviderRef: p.paymentRef(req.PaymentID, fateNone),
			DeclineCode: d.code, Message: d.message,
		}, nil
	}
	switch number {
	case CardProviderError:
		return paygate.ChargeResult{}, p.fail(paygate.ProviderFailed, msgProviderError)
	case CardFailover:
		if p.firstWithNext(ctx, currency) {
			return paygate.ChargeResult{}, p.fail(paygate.ProviderUnavailable, msgUnavailable)
		}
	case Card3DS, Card3DSCaptureDeclined:
		return p.challenge(req, number == Card3DSCaptureDeclined), nil // threeds.go
	case CardTimeout:
		// Processed and captured; Charge answers an unknown outcome.
		return paygate.ChargeResult{Status: paygate.PaymentCaptured, ProviderRef: p.paymentRef(req.PaymentID, fateNone)}, nil
	case CardAuthorize:
		return paygate.ChargeResult{Status: paygate.PaymentAuthorized, ProviderRef: p.paymentRef(req.PaymentID, fateNone)}, nil
	case CardRefundFails:
		return paygate.ChargeResult{Status: paygate.PaymentCaptured, ProviderRef: p.paymentRef(req.PaymentID, fateRefundFails)}, nil
	}
	if !tableCards[number] && !p.approves(req.PaymentID) {
		return p.approvalDecline(req.PaymentID), nil // approval.go
	}
	return paygate.ChargeResult{Status: paygate.PaymentCaptured, ProviderRef: p.paymentRef(req.PaymentID, fateNone)}, nil
}

// Capture accepts the capture of a payment this sandbox made; whether the
// payment is authorized is the caller's check. Errors: ProviderFailed for a
// reference the sandbox never issued; ProviderUnavailable when ctx ends
// first.
func (p *Provider) Capture(ctx context.Context, op paygate.PaymentOp) error {
	if err := p.begin(ctx); err != nil {
		return err
	}
	if _, ok := parsePaymentRef(op.ProviderRef); !ok {
		return p.fail(paygate.ProviderFailed, msgUnknownRef)
	}
	return nil
}

// Void accepts the cancellation of a payment this sandbox made, with the
// errors of Capture.
func (p *Provider) Void(ctx context.Context, op paygate.PaymentOp) error {
	return p.Capture(ctx, op)
}

// Refund settles a refund at once: RefundSucceeded, or RefundFailed with a
// FailureReason when the payment was made with card 4000000000005126 (as
// its ProviderRef tells). The refund's ProviderRef derives from its
// RefundID, so a repeated call gives the same answer. Errors: ProviderFailed
// for a payment reference the sandbox never issued; ProviderUnavailable
// when ctx ends first.
func (p *Provider) Refund(ctx context.Context, req paygate.RefundRequest) (paygate.RefundResult, error) {
	if err := p.begin(ctx); err != nil {
		return paygate.RefundResult{}, err
	}
	f, ok := parsePaymentRef(req.ProviderRef)
	if !ok {
		return paygate.RefundResult{}, p.fail(paygate.ProviderFailed, msgUnknownRef)
	}
	ref := refundRefPrefix + digest(p.id, "refund", req.RefundID)
	if f == fateRefundFails {
		return paygate.RefundResult{Status: paygate.RefundFailed, ProviderRef: ref, FailureReason: msgRefundRefused}, nil
	}
	return paygate.RefundResult{Status: paygate.RefundSucceeded, ProviderRef: ref}, nil
}

// begin waits the simulated latency. A context that is done before the
// call is processed means nothing was processed: ProviderUnavailable.
func (p *Provider) begin(ctx context.Context) error {
	if ctx.Err() != nil {
		return p.fail(paygate.ProviderUnavailable, msgCancelled)
	}
	if p.latency <= 0 {
		return nil
	}
	t := time.NewTimer(p.latency)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return p.fail(paygate.ProviderUnavailable, msgCancelled)
	}
}

func (p *Provider) fail(kind paygate.ProviderErrorKind, msg string) error {
	return &paygate.ProviderError{Kind: kind, Provider: p.id, Message: msg}
}

// fate is what the sandbox must remember about a payment for later calls,
// carried in its ProviderRef.
type fate byte

const (
	fateNone fate = iota
	fateRefundFails
)

// References: "sbx_" and 32 hex digits, plus "_rf" when every refund of the
// payment fails; refunds are "sbxr_" and 32 hex digits.
const (
	paymentRefPrefix  = "sbx_"
	refundRefPrefix   = "sbxr_"
	refundFailsSuffix = "_rf"
	refDigestLen      = 32
)

// paymentRef returns the payment's reference. It derives from the provider
// and payment ids, so a repeated charge of one payment gets the same
// reference, as the payment id is the provider's idempotency key; without a
// payment id it is random.
func (p *Provider) paymentRef(paymentID string, f fate) string {
	var d string
	if paymentID != "" {
		d = digest(p.id, "payment", paymentID)
	} else {
		var b [refDigestLen / 2]byte
		_, _ = rand.Read(b[:]) // never fails: crypto/rand aborts the program instead
		d = hex.EncodeToString(b[:])
	}
	ref := paymentRefPrefix + d
	if f == fateRefundFails {
		ref += refundFailsSuffix
	}
	return ref
}

// parsePaymentRef returns the fate a reference carries, and false when the
// reference is not one the sandbox issues.
func parsePaymentRef(ref string) (fate, bool) {
	rest, ok := strings.CutPrefix(ref, paymentRefPrefix)
	if !ok {
		return fateNone, false
	}
	f := fateNone
	if r, cut := strings.CutSuffix(rest, refundFailsSuffix); cut {
		rest, f = r, fateRefundFails
	}
	if len(rest) != refDigestLen {
		return fateNone, false
	}
	if _, err := hex.DecodeString(rest); err != nil {
		return fateNone, false
	}
	return f, true
}

// digest returns 32 hex digits of SHA-256 over the parts, each ended by a
// NUL (ids never contain one).
func digest(parts ...string) string {
	h := sha256.New()
	for _, s := range parts {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:refDigestLen/2])
}
