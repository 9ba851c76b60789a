package payment

import (
	"context"
	"errors"
	"fmt"

	"github.com/paygate/paygate/internal/paygate"
)

// Guard is the card-testing guard as the payment use cases see it
// (internal/guard implements it). Neither method fails: a guard that
// cannot decide lets the payment through (it fails open).
type Guard interface {
	// Check returns the rule that blocks the attempt, "" when none does.
	Check(ctx context.Context, a paygate.GuardAttempt) paygate.GuardRule
	// Declined counts a CARD_DECLINED answer of a provider to the attempt.
	Declined(ctx context.Context, a paygate.GuardAttempt)
}

// noGuard guards nothing: a service without a guard.
type noGuard struct{}

func (noGuard) Check(context.Context, paygate.GuardAttempt) paygate.GuardRule { return "" }
func (noGuard) Declined(context.Context, paygate.GuardAttempt)                {}

// guardAttempt is the payment p (with its keyed card fingerprint) as the
// guard sees it.
func guardAttempt(p paygate.Payment, in CreateInput) paygate.GuardAttempt {
	return paygate.GuardAttempt{
		MerchantID: p.MerchantID, Mode: p.Mode, ID: p.ID,
		Card: p.Card.Fingerprint, Customer: in.CustomerExternalID, Addr: guardAddr(in),
	}
}

// guardAddr is the address the guard counts an attempt by: the shopper's,
// billing.ipAddress, when the merchant's backend sends it (a payment comes
// from that backend, whose own address every payment of the merchant
// shares: counted by it, ip_cards would block a whole shop after five
// declined cards); otherwise the request's client address, which is also
// billing.ipAddress's default (decisions §8, §15, §20). A token payment's
// client address is the one that tokenized the card (the shopper's
// browser), not the merchant server's (Create).
func guardAddr(in CreateInput) string {
	if in.Billing != nil && in.Billing.IPAddress != "" && !in.BillingIPDefaulted {
		return in.Billing.IPAddress
	}
	return in.ClientAddr
}

// guardOutcome counts a payment's decline, after its outcome committed:
// CARD_DECLINED only, never a provider failure, an unknown outcome or a
// blocked attempt (decisions §20).
func (s *Service) guardOutcome(ctx context.Context, a paygate.GuardAttempt, out Result, err error) {
	if err != nil || out.Kind != PaymentDeclined || out.Payment == nil || out.Payment.DeclineCode == paygate.DeclineBlocked {
		return
	}
	// A client that hung up after its charge must not escape the count.
	s.guard.Declined(context.WithoutCancel(ctx), a)
}

// blockedMessage is the message of a blocked payment: it says no more than
// a decline would, and declineCode blocked tells the merchant why.
const blockedMessage = "The card was declined."

// createBlocked stores a payment the guard blocked before any provider
// call, in one unit (a token payment's token use, the key's verification and reservation, the payment
// failed with CARD_DECLINED and declineCode blocked, its payment.failed
// event and the request's answer), and counts it under rule.
func (s *Service) createBlocked(ctx context.Context, np paygate.NewPayment, use *paygate.TokenUse, rule paygate.GuardRule, unreserved func(error) error) (Result, error) {
	res := paygate.ChargeResult{Status: paygate.PaymentFailed, DeclineCode: paygate.DeclineBlocked, Message: blockedMessage}
	o, err := s.outcome(np.Payment, res, "", nil, "")
	if err != nil {
		return Result{}, unreserved(err)
	}
	np.Payment = o.p
	u := paygate.Unit{Ops: []paygate.Op{np}}
	u.AddEvents(o.events)
	u.AddCompletion(o.done)
	if use != nil {
		// A token's payment uses its token even when blocked.
		u.Add(*use)
	}
	err = s.store.Commit(ctx, u)
	var taken *paygate.KeyTakenError
	if errors.As(err, &taken) {
		return Result{}, taken
	}
	if err != nil {
		return Result{}, unreserved(fmt.Errorf("record blocked payment: %w", err))
	}
	s.metrics.CardTestingBlocked(string(rule))
	s.metrics.PaymentStatus(o.p.Mode, "", o.p.Status)
	s.log.LogAttrs(ctx, levelInfo, "payment blocked by the card-testing guard", attrPayment(o.p), strAttr("rule", string(rule)))
	return o.result, nil
}
