package provider

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/trace"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/tracing"
)

// startCall starts the span of one call to the provider ("provider
// charge"), a child of the request's span, with paygate.provider and, for
// a call about a payment, its id. Off, it costs an atomic load.
func (g *guarded) startCall(ctx context.Context, op, paymentID string) (context.Context, trace.Span) {
	ctx, span := tracing.Start(ctx, "provider "+op, trace.SpanKindInternal)
	if span.IsRecording() {
		span.SetAttributes(tracing.ProviderKey.String(g.id), tracing.OperationKey.String(op), tracing.ModeKey.String(string(g.mode)))
		if paymentID != "" {
			span.SetAttributes(tracing.PaymentIDKey.String(paymentID))
		}
	}
	return ctx, span
}

// endCall ends a provider call's span, failed with the kind of the
// provider's error (never its message) when there is one. A decline is an
// answer, not a failure: the charge's span records its status.
func endCall(span trace.Span, status paygate.PaymentStatus, err error) {
	if !span.IsRecording() {
		return
	}
	if status != "" {
		span.SetAttributes(tracing.ResultKey.String(string(status)))
	}
	tracing.End(span, providerErrorType(err))
}

// providerErrorType names a provider call's failure by what it means for
// the money.
func providerErrorType(err error) string {
	if err == nil {
		return ""
	}
	var pe *paygate.ProviderError
	if !errors.As(err, &pe) {
		return "failed"
	}
	switch pe.Kind {
	case paygate.ProviderUnavailable:
		return "unavailable"
	case paygate.ProviderUnknownOutcome:
		return "unknown_outcome"
	}
	return "failed"
}
