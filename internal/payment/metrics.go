package payment

import (
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// Metrics receives what the use cases did, for the operator's metrics
// (internal/metrics implements it). Each call comes after the write it
// reports was committed.
type Metrics interface {
	// PaymentStatus reports a status written for a payment: a creation's
	// outcome, a capture, a void, a 3-D Secure result or expiry.
	PaymentStatus(mode paygate.Mode, provider string, status paygate.PaymentStatus)
	// RefundStatus reports a status written for a refund.
	RefundStatus(mode paygate.Mode, status paygate.RefundStatus)
	// Replayed reports a request answered with its key's stored answer.
	Replayed()
	// Recovered reports a payment the recovery job finished.
	Recovered(status paygate.PaymentStatus)
	// ProviderCall reports a call to a provider made here (charges are
	// reported by the router, which makes them): its operation, duration,
	// whether the answer was a refusal, and its error.
	ProviderCall(provider, operation string, d time.Duration, declined bool, err error)
	// CardTestingBlocked reports a payment the card-testing guard blocked,
	// by the rule that blocked it.
	CardTestingBlocked(rule string)
}

// noMetrics records nothing: a service without metrics.
type noMetrics struct{}

func (noMetrics) PaymentStatus(paygate.Mode, string, paygate.PaymentStatus) {}
func (noMetrics) RefundStatus(paygate.Mode, paygate.RefundStatus)           {}
func (noMetrics) Replayed()                                                 {}
func (noMetrics) Recovered(paygate.PaymentStatus)                           {}
func (noMetrics) ProviderCall(string, string, time.Duration, bool, error)   {}
func (noMetrics) CardTestingBlocked(string)                                 {}

// settleOperation is the provider operation that moves a payment to
// status to: capture or void.
func settleOperation(to paygate.PaymentStatus) string {
	if to == paygate.PaymentCaptured {
		return "capture"
	}
	return "void"
}
