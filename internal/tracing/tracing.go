// Package tracing starts paygate's OpenTelemetry spans: one server span per
// request (http.go), child spans for store, provider and outgoing HTTP
// calls, and a root span per webhook delivery. The rest of the code calls
// it at a few hook points (middleware, the provider router, the store
// engines' drivers, the webhook dispatcher); nothing else imports OTel.
//
// Tracing is off until Install is called (serve does when an OTLP endpoint
// is configured, cmd/paygate/tracing.go). Off, every function here returns
// at once without allocating: Start hands back the context unchanged and a
// no-op span, so a hook costs one atomic load. On, a child span is started
// only under a recording span, so background work that no request or
// delivery started (polls, recovery, purges) makes no spans.
//
// No span attribute ever holds a card number, a CVV, a key, a secret, a
// request body, a raw URL or an error's text: only route patterns, ids,
// statuses, kinds of errors and the summaries of SQL statements.
package tracing

import (
	"context"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// ScopeName is the instrumentation scope of every span paygate starts.
const ScopeName = "github.com/paygate/paygate"

// Attributes of paygate's own, beside the semantic conventions'.
const (
	// ProviderKey names the payment provider of a provider call.
	ProviderKey = attribute.Key("paygate.provider")
	// OperationKey names what a provider call does: charge, capture,
	// void, refund.
	OperationKey = attribute.Key("paygate.operation")
	// PaymentIDKey, RequestIDKey, MerchantIDKey, ModeKey, EventIDKey,
	// EventTypeKey, DeliveryIDKey, AttemptKey and ResultKey are the ids
	// and outcomes the logs name too, so that a span and its log line
	// can be found from each other.
	PaymentIDKey  = attribute.Key("paygate.payment_id")
	RequestIDKey  = attribute.Key("paygate.request_id")
	MerchantIDKey = attribute.Key("paygate.merchant_id")
	ModeKey       = attribute.Key("paygate.mode")
	EventIDKey    = attribute.Key("paygate.event_id")
	EventTypeKey  = attribute.Key("paygate.event_type")
	DeliveryIDKey = attribute.Key("paygate.delivery_id")
	AttemptKey    = attribute.Key("paygate.attempt")
	ResultKey     = attribute.Key("paygate.result")
	// LazyCommitKey marks a SQLite write transaction that may commit
	// without an fsync of its own.
	LazyCommitKey = attribute.Key("paygate.store.lazy_commit")
)

// installed is the tracer of the installed provider; nil while tracing is
// off.
var installed atomic.Pointer[trace.Tracer]

// Install makes tp the provider of every span paygate starts from now on,
// and returns the function that turns tracing off again (if tp is still the
// one installed). The provider's own lifecycle (flushing, shutting down)
// stays with the caller.
func Install(tp trace.TracerProvider) (uninstall func()) {
	t := tp.Tracer(ScopeName)
	p := &t
	installed.Store(p)
	return func() { installed.CompareAndSwap(p, nil) }
}

// Enabled reports whether a provider is installed. The store engines ask
// once, when they open, whether to hook their drivers at all.
func Enabled() bool { return installed.Load() != nil }

// noSpan is what Start returns when it starts nothing: a no-op span (a
// zero-size value, so returning it allocates nothing).
var noSpan trace.Span = noop.Span{}

// Start starts a child span of the recording span in ctx. Without one, or
// with tracing off, it returns ctx unchanged and a span that records
// nothing: callers that set attributes check IsRecording first, so that
// building the attributes costs nothing either.
func Start(ctx context.Context, name string, kind trace.SpanKind) (context.Context, trace.Span) {
	t := installed.Load()
	if t == nil || !trace.SpanFromContext(ctx).IsRecording() {
		return ctx, noSpan
	}
	return (*t).Start(ctx, name, trace.WithSpanKind(kind))
}

// Active reports whether Start would start a span under ctx: tracing is on
// and ctx holds a recording span. A hook that has work to do before
// Start (collecting a batch's statements) asks first.
func Active(ctx context.Context) bool {
	return installed.Load() != nil && trace.SpanFromContext(ctx).IsRecording()
}

// StartRoot starts a span that begins its own trace (a webhook delivery,
// which runs from the outbox long after the request that wrote its event),
// whatever span ctx holds. With tracing off it returns ctx unchanged and a
// no-op span.
func StartRoot(ctx context.Context, name string, kind trace.SpanKind) (context.Context, trace.Span) {
	t := installed.Load()
	if t == nil {
		return ctx, noSpan
	}
	return (*t).Start(ctx, name, trace.WithSpanKind(kind), trace.WithNewRoot())
}

// End ends span, marking it failed when errType is not empty. errType is a
// kind of error (a SQLSTATE, a provider outcome, a Go type), never an
// error's text, which may quote the values it failed on.
func End(span trace.Span, errType string) {
	if !span.IsRecording() {
		return
	}
	if errType != "" {
		span.SetAttributes(semconv.ErrorTypeKey.String(errType))
		span.SetStatus(codes.Error, "")
	}
	span.End()
}
