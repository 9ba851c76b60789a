package webhook

import (
	"context"
	"encoding/json"
	"strconv"

	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/tracing"
)

// startDelivery starts the span of one delivery attempt. A delivery runs
// from the outbox, later than and apart from the request that wrote its
// event (often on another node), so its span begins a trace of its own
// rather than join the payment's (which would mean storing a trace context
// with every event): what ties the two together is paygate.payment_id,
// on this span and on the payment's provider span, and the event id, on
// this span and in the delivery's log line. Under it come the POST's
// client span, whose traceparent the receiver gets (the client's
// transport, tracing.Transport), and the store's recording of the attempt.
func startDelivery(c paygate.ClaimedDelivery) (context.Context, trace.Span) {
	ctx, span := tracing.StartRoot(context.Background(), "webhook delivery", trace.SpanKindInternal)
	if span.IsRecording() {
		dl := c.Delivery
		span.SetAttributes(tracing.EventIDKey.String(dl.EventID), tracing.EventTypeKey.String(string(dl.EventType)),
			tracing.DeliveryIDKey.String(dl.ID), tracing.AttemptKey.Int(dl.Attempts))
		if id := paymentOf(c.Payload); id != "" {
			span.SetAttributes(tracing.PaymentIDKey.String(id))
		}
		if c.Endpoint != nil {
			span.SetAttributes(tracing.MerchantIDKey.String(c.Endpoint.MerchantID), tracing.ModeKey.String(string(c.Endpoint.Mode)))
		}
	}
	return ctx, span
}

// endDelivery ends a delivery's span with the attempt's result (succeeded,
// retry, failed, endpoint disabled) and the receiver's status; anything but
// success marks it failed, by result.
func endDelivery(span trace.Span, result string, o outcome) {
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(tracing.ResultKey.String(result))
	errType := ""
	if o.err != "" {
		errType = result
		if o.attempt != nil && o.attempt.StatusCode != 0 {
			errType = strconv.Itoa(o.attempt.StatusCode)
		}
	}
	if o.attempt != nil && o.attempt.StatusCode != 0 {
		span.SetAttributes(semconv.HTTPResponseStatusCode(o.attempt.StatusCode))
	}
	tracing.End(span, errType)
}

// paymentOf returns the payment id of an event's payload (its
// data.transactionId, in payment and refund events alike), "" when it has
// none.
func paymentOf(payload []byte) string {
	var p struct {
		Data struct {
			TransactionID string `json:"transactionId"`
		} `json:"data"`
	}
	if json.Unmarshal(payload, &p) != nil {
		return ""
	}
	return p.Data.TransactionID
}
