package httpapi

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/paygate/paygate/internal/tracing"
)

// endSpan ends a request's server span (tracing.StartRequest in
// ServeHTTP) with what its log line names: the route pattern, the status,
// the request id, and the key's merchant and mode once authenticated (the
// key's id stays in the log). Off, it returns at once.
func endSpan(span trace.Span, method string, st *reqState, status int) {
	if !span.IsRecording() {
		return
	}
	route := st.route
	if route == routeUnmatched {
		route = ""
	}
	attrs := make([]attribute.KeyValue, 0, 3)
	attrs = append(attrs, tracing.RequestIDKey.String(st.requestID))
	if st.authed {
		attrs = append(attrs, tracing.MerchantIDKey.String(st.key.MerchantID), tracing.ModeKey.String(string(st.key.Mode)))
	}
	tracing.EndRequest(span, method, route, status, attrs...)
}
