package providertest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/tracing"
)

// CheckTraceparent checks that an HTTP connector sends each call under a
// client span of its own, with paygate.provider, and tells the provider
// that span's traceparent. newProvider makes the connector against
// baseURL; ref is a provider reference of its shape, for a capture.
// (Installing a tracer provider is safe beside parallel tests: spans start
// only under a recording span, which none of them has.)
func CheckTraceparent(t *testing.T, newProvider func(baseURL string) (paygate.Provider, error), ref string) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	defer tracing.Install(tp)()

	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case got <- r.Header.Get("Traceparent"):
		default:
		}
		w.WriteHeader(http.StatusBadRequest)
	}))
	defer srv.Close()
	p, err := newProvider(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	ctx, root := tracing.StartRoot(context.Background(), "provider capture", trace.SpanKindInternal)
	_ = p.Capture(ctx, paygate.PaymentOp{PaymentID: "0193a0b0-0000-7000-8000-000000000001", ProviderRef: ref,
		Amount: paygate.Money{Amount: 1000, Currency: "EUR"}})
	root.End()

	var header string
	select {
	case header = <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("nothing reached the server")
	}
	var client *tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.SpanKind == trace.SpanKindClient {
			client = &s
			break
		}
	}
	if client == nil {
		t.Fatal("no client span")
	}
	if want := "00-" + client.SpanContext.TraceID().String() + "-" + client.SpanContext.SpanID().String() + "-01"; header != want {
		t.Errorf("traceparent %q, want the client span's %q", header, want)
	}
	if client.Parent.SpanID() != root.SpanContext().SpanID() {
		t.Error("the client span is not under the caller's span")
	}
	provider := ""
	for _, kv := range client.Attributes {
		if kv.Key == tracing.ProviderKey {
			provider = kv.Value.AsString()
		}
	}
	if provider != p.ID() {
		t.Errorf("paygate.provider %q, want %q", provider, p.ID())
	}
}
