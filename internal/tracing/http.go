package tracing

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// traceContext reads and writes W3C traceparent (and tracestate) headers.
var traceContext propagation.TraceContext

// StartRequest starts the server span of an incoming request and returns
// the request's context with it. A valid W3C traceparent header makes the
// caller's span its parent, from any client: a merchant then finds
// paygate's spans under its own trace id, and a proxy's span above them.
// Nothing else of the caller's is trusted. Its tracestate is dropped, so
// that it is never passed on to a provider or a webhook receiver, and its
// sampled flag decides nothing: under the Sampler a remote parent counts
// as no parent. The span is named by the method until EndRequest renames it
// by route.
//
// With tracing off it returns the request's context and a no-op span.
func StartRequest(r *http.Request) (context.Context, trace.Span) {
	ctx := r.Context()
	t := installed.Load()
	if t == nil {
		return ctx, noSpan
	}
	if r.Header.Get("Traceparent") != "" {
		sc := trace.SpanContextFromContext(traceContext.Extract(ctx, propagation.HeaderCarrier(r.Header)))
		if sc.IsValid() {
			ctx = trace.ContextWithRemoteSpanContext(ctx, sc.WithTraceState(trace.TraceState{}))
		}
	}
	method := Method(r.Method)
	return (*t).Start(ctx, method, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(semconv.HTTPRequestMethodKey.String(method)))
}

// Sampler returns the sampler of a provider that serves StartRequest: a
// span under a span of this process follows its parent's decision, and
// any other span, a client's traceparent or not, is decided by root. A
// client's sampled flag thus neither forces nor suppresses the tracing of
// its requests: what is exported, and how much, stays the operator's
// choice.
func Sampler(root sdktrace.Sampler) sdktrace.Sampler {
	return sdktrace.ParentBased(root,
		sdktrace.WithRemoteParentSampled(root),
		sdktrace.WithRemoteParentNotSampled(root))
}

// EndRequest ends a server span: it names the span "METHOD route" (the
// method alone when route is empty, a request no route matched), as the
// HTTP semantic conventions do, records the route and the status, and marks
// a 5xx failed. Callers build attrs only when span.IsRecording().
func EndRequest(span trace.Span, method, route string, status int, attrs ...attribute.KeyValue) {
	if !span.IsRecording() {
		return
	}
	method = Method(method)
	if route != "" {
		span.SetName(method + " " + route)
		span.SetAttributes(semconv.HTTPRoute(route))
	}
	span.SetAttributes(semconv.HTTPResponseStatusCode(status))
	span.SetAttributes(attrs...)
	if status >= 500 {
		span.SetAttributes(semconv.ErrorTypeKey.String(strconv.Itoa(status)))
		span.SetStatus(codes.Error, "")
	}
	span.End()
}

// Method returns an HTTP method as spans name it: one of the standard
// methods, or _OTHER for anything a client made up, so that a span's name
// stays one of a known few.
func Method(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return m
	}
	return "_OTHER"
}

// Transport wraps base (nil: http.DefaultTransport) so that every request
// made under a recording span gets a client span of its own, and carries
// that span's traceparent to the server. attrs are added to each client
// span (paygate.provider for a connector). The span records the method, the
// server's host and port and the status, never the URL: its path and query
// may hold a merchant's token. A status of 400 or more, or no answer, marks
// it failed.
func Transport(base http.RoundTripper, attrs ...attribute.KeyValue) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &transport{base: base, attrs: attrs}
}

type transport struct {
	base  http.RoundTripper
	attrs []attribute.KeyValue
}

// RoundTrip sends the request, within a client span when there is one to
// start.
func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, span := Start(req.Context(), Method(req.Method), trace.SpanKindClient)
	if !span.IsRecording() {
		return t.base.RoundTrip(req)
	}
	span.SetAttributes(semconv.HTTPRequestMethodKey.String(Method(req.Method)), semconv.ServerAddress(req.URL.Hostname()))
	if p, err := strconv.Atoi(req.URL.Port()); err == nil {
		span.SetAttributes(semconv.ServerPort(p))
	}
	span.SetAttributes(t.attrs...)
	// A RoundTripper must not change the caller's request: the header goes
	// on a copy.
	req = req.Clone(ctx)
	traceContext.Inject(ctx, propagation.HeaderCarrier(req.Header))
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		End(span, transportErrorType(err))
		return resp, err
	}
	span.SetAttributes(semconv.HTTPResponseStatusCode(resp.StatusCode))
	errType := ""
	if resp.StatusCode >= 400 {
		errType = strconv.Itoa(resp.StatusCode)
	}
	End(span, errType)
	return resp, nil
}

// CloseIdleConnections closes the idle connections of the wrapped
// transport (http.Client.CloseIdleConnections reaches it through here).
func (t *transport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// transportErrorType names a request that got no answer by kind, never by
// its text (which names the URL).
func transportErrorType(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	return fmt.Sprintf("%T", err)
}
