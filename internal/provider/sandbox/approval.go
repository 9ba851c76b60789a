package sandbox

import (
	"crypto/sha256"
	"encoding/binary"
	"math"
	"math/rand/v2"

	"github.com/paygate/paygate/internal/paygate"
)

// tableCards is the test-card table (cards.go): these numbers answer as the
// table says whatever the approval rate.
var tableCards = map[string]bool{
	CardVisa: true, CardMastercard: true, CardAmex: true, CardAuthorize: true,
	Card3DS: true, Card3DSCaptureDeclined: true,
	CardDeclined: true, CardInsufficientFunds: true, CardExpired: true, CardIncorrectCVC: true,
	CardProviderError: true, CardFailover: true, CardTimeout: true, CardRefundFails: true,
}

// msgApprovalDecline is the message of a card that the approval rate
// declines, the one of the generic declining test card.
const msgApprovalDecline = "Your card was declined."

// WithApprovalRate makes the sandbox authorize the share rate (0 to 1) of
// the charges of cards outside the test-card table, and decline the others
// with generic_decline, as an acquirer with a worse authorization rate
// would (decisions.md section 21). The default is 1: every such card is
// captured. The test-card table keeps its meaning whatever the rate.
//
// The draw is reproducible: it derives from the provider's id and the
// payment id (the provider's idempotency key), so a repeated charge of one
// payment gets the same answer, two providers draw independently, and a
// simulation replaying the same payment ids replays the same answers. A
// charge without a payment id draws at random. An operator's override
// (SetApprovalOverride) takes the place of the rate while it is set.
func WithApprovalRate(rate float64) Option {
	return func(p *Provider) { p.approvalRate = clampRate(rate) }
}

// SetApprovalOverride replaces the configured approval rate with rate (0
// to 1) until ClearApprovalOverride: `paygate providers set-approval`
// stores it in the database and every node's watcher applies it within a
// second, so that an experiment can degrade a provider mid-run. Safe for
// concurrent use with charges.
func (p *Provider) SetApprovalOverride(rate float64) {
	r := clampRate(rate)
	p.approvalOverride.Store(&r)
}

// ClearApprovalOverride puts the configured approval rate back in force.
func (p *Provider) ClearApprovalOverride() { p.approvalOverride.Store(nil) }

// ApprovalRate returns the approval rate in force: the operator's override
// when set, else the configured one.
func (p *Provider) ApprovalRate() float64 {
	if r := p.approvalOverride.Load(); r != nil {
		return *r
	}
	return p.approvalRate
}

// approves reports whether the provider authorizes a charge of a card
// outside the test-card table for the payment.
func (p *Provider) approves(paymentID string) bool {
	rate := p.ApprovalRate()
	switch {
	case rate >= 1:
		return true
	case rate <= 0:
		return false
	}
	return approvalDraw(p.id, paymentID) < rate
}

// approvalDraw returns a number in [0, 1) that depends only on the
// provider and payment ids (at random without a payment id). It is derived
// from ids, never from card data.
func approvalDraw(providerID, paymentID string) float64 {
	if paymentID == "" {
		return rand.Float64()
	}
	h := sha256.New()
	h.Write([]byte(providerID))
	h.Write([]byte{0})
	h.Write([]byte("approval"))
	h.Write([]byte{0})
	h.Write([]byte(paymentID))
	var sum [sha256.Size]byte
	return float64(binary.BigEndian.Uint64(h.Sum(sum[:0]))>>11) / (1 << 53)
}

// clampRate bounds a rate to [0, 1]; NaN counts as 0.
func clampRate(r float64) float64 {
	if math.IsNaN(r) || r < 0 {
		return 0
	}
	return math.Min(r, 1)
}

// approvalDecline is the result of a charge the approval rate declines.
func (p *Provider) approvalDecline(paymentID string) paygate.ChargeResult {
	return paygate.ChargeResult{
		Status: paygate.PaymentFailed, ProviderRef: p.paymentRef(paymentID, fateNone),
		DeclineCode: paygate.DeclineGeneric, Message: msgApprovalDecline,
	}
}
