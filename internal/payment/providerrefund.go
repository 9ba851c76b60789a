package payment

import (
	"context"
	"fmt"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// ProviderByID returns the configured provider with the id, in either mode,
// for callers that a provider reaches on its own (notification webhooks).
func (s *Service) ProviderByID(id string) (paygate.Provider, bool) {
	for _, mode := range []paygate.Mode{paygate.ModeLive, paygate.ModeTest} {
		if p, ok := s.router.Provider(mode, id); ok {
			return p, true
		}
	}
	return nil, false
}

// SettleRefund finishes a pending refund with the outcome its provider
// reported asynchronously (an Adyen REFUND notification): res.Status
// succeeded or failed moves it pending → succeeded or failed and sends
// refund.succeeded or refund.failed, as the refund worker does (it reuses
// the worker's finish).
//
// The refund must be one of a payment that providerID processed, with the
// provider's payment reference paymentRef; any other is an error and
// nothing changes. A refund already final is left as it is (a repeated
// notification): no error. An error means the outcome could not be recorded
// now; the provider should deliver the notification again.
func (s *Service) SettleRefund(ctx context.Context, providerID, refundID, paymentRef string, res paygate.RefundResult) error {
	if res.Status != paygate.RefundSucceeded && res.Status != paygate.RefundFailed {
		return fmt.Errorf("settle refund %s: status %q is not final", refundID, res.Status)
	}
	r, err := s.refundInFlight(ctx, refundID)
	if err != nil {
		return err
	}
	if r == nil {
		return nil // not in flight: final already, or not a refund of ours
	}
	p, err := s.store.PaymentByID(ctx, r.MerchantID, r.Mode, r.PaymentID)
	if err != nil {
		return fmt.Errorf("settle refund %s: load payment: %w", refundID, err)
	}
	if p.ProviderID != providerID || (paymentRef != "" && p.ProviderRef != paymentRef) {
		return fmt.Errorf("settle refund %s: the refund's payment was not processed by %s as %s", refundID, providerID, paymentRef)
	}
	if r.Status == paygate.RefundCreated {
		return fmt.Errorf("settle refund %s: the refund was not sent to its provider yet", refundID)
	}
	w := &RefundWorker{svc: s}
	if w.finish(ctx, *r, res) {
		return nil
	}
	// finish failed or lost a race: fine when the refund is final now.
	again, err := s.store.RefundByID(ctx, r.MerchantID, r.Mode, r.ID)
	if err != nil {
		return fmt.Errorf("settle refund %s: %w", refundID, err)
	}
	if again.Status == paygate.RefundSucceeded || again.Status == paygate.RefundFailed {
		return nil
	}
	return fmt.Errorf("settle refund %s: the outcome could not be recorded", refundID)
}

// refundInFlight finds a refund that is not final yet (created or pending)
// by its id alone: a notification names no merchant. It scans the refunds
// in flight, which are few; nil when the refund is not among them.
func (s *Service) refundInFlight(ctx context.Context, refundID string) (*paygate.Refund, error) {
	all, err := s.store.RefundsToProcess(ctx, s.clock.Now().Add(24*time.Hour), 0)
	if err != nil {
		return nil, fmt.Errorf("settle refund %s: list refunds in flight: %w", refundID, err)
	}
	for i := range all {
		if all[i].ID == refundID {
			return &all[i], nil
		}
	}
	return nil, nil
}
