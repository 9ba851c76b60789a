package metrics

import (
	"context"
	"errors"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// Outcomes of a provider call, the values of the outcome label. The names
// of the failures are those the payment log uses (payment.kindName).
const (
	OutcomeSuccess     = "success"
	OutcomeDeclined    = "declined"
	OutcomeFailed      = "failed"
	OutcomeUnavailable = "unavailable"
	OutcomeUnknown     = "unknown_outcome"
)

// providerKey names one child of the provider duration histogram.
type providerKey struct {
	provider, operation, outcome string
}

// ProviderCall records one call to a provider: its operation (charge,
// capture, void, refund, 3ds, inquire), how long it took, and its outcome,
// from the error and, for an answer, whether it was a refusal (a declined
// charge, a failed refund).
func (m *Metrics) ProviderCall(provider, operation string, d time.Duration, declined bool, err error) {
	if m == nil {
		return
	}
	m.providerChildren.get(providerKey{provider, operation, Outcome(declined, err)}).Observe(d.Seconds())
}

// Outcome classifies a provider call's result for the outcome label.
func Outcome(declined bool, err error) string {
	if err == nil {
		if declined {
			return OutcomeDeclined
		}
		return OutcomeSuccess
	}
	var pe *paygate.ProviderError
	if errors.As(err, &pe) {
		switch pe.Kind {
		case paygate.ProviderUnavailable:
			return OutcomeUnavailable
		case paygate.ProviderUnknownOutcome:
			return OutcomeUnknown
		}
		return OutcomeFailed
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return OutcomeUnknown // the request went out; no answer came in time
	}
	return OutcomeFailed
}

// BreakerState sets the state of this node's circuit breaker of the
// provider: 0 closed, 1 half-open, 2 open.
func (m *Metrics) BreakerState(provider string, state paygate.BreakerState) {
	if m == nil {
		return
	}
	v := 0.0
	switch state {
	case paygate.BreakerHalfOpen:
		v = 1
	case paygate.BreakerOpen:
		v = 2
	}
	m.circuit.WithLabelValues(provider).Set(v)
}
