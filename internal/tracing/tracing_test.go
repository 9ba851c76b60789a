package tracing

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// The tests that install a provider are not parallel: the installed tracer
// is the process's.

// install installs a provider that records every span in memory, until the
// test ends.
func install(t *testing.T) *tracetest.InMemoryExporter {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithSampler(Sampler(sdktrace.AlwaysSample())))
	uninstall := Install(tp)
	t.Cleanup(func() {
		uninstall()
		_ = tp.Shutdown(context.Background())
	})
	return exp
}

func attrs(s tracetest.SpanStub) map[attribute.Key]string {
	m := map[attribute.Key]string{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value.Emit()
	}
	return m
}

// canned answers every request with its response.
type canned struct{ resp *http.Response }

func (c canned) RoundTrip(*http.Request) (*http.Response, error) { return c.resp, nil }

// TestOffCostsNothing: with no provider installed, every hook returns what
// it was given and allocates nothing.
func TestOffCostsNothing(t *testing.T) {
	if Enabled() {
		t.Fatal("tracing is on before anything was installed")
	}
	ctx := context.Background()
	req := httptest.NewRequest(http.MethodPost, "/v1/payments", nil)
	req.Header.Set("Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	out := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:1/x", nil)
	rt := Transport(canned{&http.Response{StatusCode: 200, Body: http.NoBody}})
	for name, f := range map[string]func(){
		"Start": func() {
			c, span := Start(ctx, "x", trace.SpanKindInternal)
			End(span, "failed")
			if c != ctx || span.IsRecording() {
				t.Fatal("Start started something")
			}
		},
		"StartRoot": func() {
			c, span := StartRoot(ctx, "x", trace.SpanKindInternal)
			End(span, "")
			if c != ctx {
				t.Fatal("StartRoot changed the context")
			}
		},
		"StartRequest": func() {
			c, span := StartRequest(req)
			EndRequest(span, req.Method, "/v1/payments", 201)
			if c != req.Context() {
				t.Fatal("StartRequest changed the context")
			}
		},
		"StartStatement": func() {
			c, span := StartStatement(ctx, semconv.DBSystemNameSQLite, "SELECT 1 FROM payments")
			End(span, "")
			if c != ctx {
				t.Fatal("StartStatement changed the context")
			}
		},
		"Active": func() {
			if Active(ctx) {
				t.Fatal("Active with tracing off")
			}
		},
		"Transport": func() {
			resp, err := rt.RoundTrip(out)
			if err != nil || resp.StatusCode != 200 || out.Header.Get("Traceparent") != "" {
				t.Fatal("the transport changed the request or its answer")
			}
		},
	} {
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s allocates %.0f times with tracing off", name, n)
		}
	}
}

func TestChildSpansOnlyUnderARecordingSpan(t *testing.T) {
	exp := install(t)
	ctx := context.Background()
	if c, span := Start(ctx, "orphan", trace.SpanKindInternal); c != ctx || span.IsRecording() {
		t.Error("Start without a parent started a span")
	}
	if Active(ctx) {
		t.Error("Active without a parent")
	}
	rctx, root := StartRoot(ctx, "webhook delivery", trace.SpanKindInternal)
	if !Active(rctx) {
		t.Error("not Active under a recording span")
	}
	_, child := Start(rctx, "provider charge", trace.SpanKindInternal)
	End(child, "unavailable")
	// A root under a span still begins its own trace.
	_, other := StartRoot(rctx, "another", trace.SpanKindInternal)
	End(other, "")
	End(root, "")

	spans := exp.GetSpans()
	if len(spans) != 3 {
		t.Fatalf("%d spans, want 3", len(spans))
	}
	c, o, r := spans[0], spans[1], spans[2]
	if c.Parent.SpanID() != r.SpanContext.SpanID() || c.SpanContext.TraceID() != r.SpanContext.TraceID() {
		t.Error("the child is not under the root")
	}
	if c.Status.Code != codes.Error || attrs(c)["error.type"] != "unavailable" {
		t.Errorf("failed child: status %v, attributes %v", c.Status, attrs(c))
	}
	if r.Status.Code == codes.Error {
		t.Error("the root is marked failed")
	}
	if o.Parent.IsValid() || o.SpanContext.TraceID() == r.SpanContext.TraceID() {
		t.Error("StartRoot under a span joined its trace")
	}
}

func TestRequestSpans(t *testing.T) {
	const (
		clientTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
		clientSpan  = "00f067aa0ba902b7"
	)
	for _, c := range []struct {
		name, method, traceparent, route string
		status                           int
		wantName                         string
		wantParent                       bool
		wantFailed                       bool
	}{
		{"Parent", http.MethodGet, "00-" + clientTrace + "-" + clientSpan + "-01", "/v1/payments/{id}", 200, "GET /v1/payments/{id}", true, false},
		{"UnsampledParent", http.MethodPost, "00-" + clientTrace + "-" + clientSpan + "-00", "/v1/payments", 201, "POST /v1/payments", true, false},
		{"NoParent", http.MethodPost, "", "/v1/refunds", 400, "POST /v1/refunds", false, false},
		{"InvalidParent", http.MethodGet, "00-00000000000000000000000000000000-" + clientSpan + "-01", "/healthz", 200, "GET /healthz", false, false},
		{"Garbage", http.MethodGet, "not a traceparent", "/healthz", 200, "GET /healthz", false, false},
		{"Unmatched", http.MethodGet, "", "", 404, "GET", false, false},
		{"UnknownMethod", "BREW", "", "", 404, "_OTHER", false, false},
		{"ServerError", http.MethodPost, "", "/v1/payments", 500, "POST /v1/payments", false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			exp := install(t)
			req := httptest.NewRequest(c.method, "/whatever?token=secret", nil)
			if c.traceparent != "" {
				req.Header.Set("Traceparent", c.traceparent)
				req.Header.Set("Tracestate", "merchant=private")
			}
			ctx, span := StartRequest(req)
			if !span.IsRecording() || trace.SpanFromContext(ctx) != span {
				t.Fatal("no recording server span in the context")
			}
			if ts := span.SpanContext().TraceState().Len(); ts != 0 {
				t.Errorf("the server span kept the client's tracestate (%d members)", ts)
			}
			EndRequest(span, req.Method, c.route, c.status, RequestIDKey.String("req-1"))
			spans := exp.GetSpans()
			if len(spans) != 1 {
				t.Fatalf("%d spans, want 1", len(spans))
			}
			s := spans[0]
			a := attrs(s)
			if s.Name != c.wantName || s.SpanKind != trace.SpanKindServer {
				t.Errorf("span %q kind %v, want %q SERVER", s.Name, s.SpanKind, c.wantName)
			}
			if got := s.Parent.IsValid(); got != c.wantParent {
				t.Errorf("has a parent: %v, want %v", got, c.wantParent)
			}
			if c.wantParent && (s.Parent.TraceID().String() != clientTrace || s.Parent.SpanID().String() != clientSpan || !s.Parent.IsRemote()) {
				t.Errorf("parent %v, want the client's remote span", s.Parent)
			}
			if (s.Status.Code == codes.Error) != c.wantFailed {
				t.Errorf("status %v, want failed %v", s.Status, c.wantFailed)
			}
			if a["http.response.status_code"] == "" || a["paygate.request_id"] != "req-1" || a["http.route"] != c.route {
				t.Errorf("attributes %v", a)
			}
			for k, v := range a {
				if strings.Contains(v, "secret") || strings.Contains(v, "private") {
					t.Errorf("attribute %s = %q holds the URL or tracestate", k, v)
				}
			}
		})
	}
}

func TestTransport(t *testing.T) {
	exp := install(t)
	got := make(chan http.Header, 4)
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
		w.WriteHeader(status)
	}))
	defer srv.Close()
	client := &http.Client{Transport: Transport(nil, ProviderKey.String("stripe-eu"))}
	post := func(ctx context.Context) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/payment_intents?key=sk_secret", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if req.Header.Get("Traceparent") != "" {
			t.Error("the caller's request was changed")
		}
	}

	// Without a recording span: nothing started, nothing sent.
	post(context.Background())
	if h := <-got; h.Get("Traceparent") != "" {
		t.Errorf("traceparent %q sent without a span", h.Get("Traceparent"))
	}
	if n := len(exp.GetSpans()); n != 0 {
		t.Fatalf("%d spans without a parent", n)
	}

	ctx, root := StartRoot(context.Background(), "provider charge", trace.SpanKindInternal)
	post(ctx)
	status = http.StatusInternalServerError
	post(ctx)
	End(root, "")
	h1, h2 := <-got, <-got
	spans := exp.GetSpans()
	if len(spans) != 3 {
		t.Fatalf("%d spans, want 3", len(spans))
	}
	for i, c := range []struct {
		header http.Header
		status string
		failed bool
	}{{h1, "200", false}, {h2, "500", true}} {
		s := spans[i]
		want := "00-" + s.SpanContext.TraceID().String() + "-" + s.SpanContext.SpanID().String() + "-01"
		if got := c.header.Get("Traceparent"); got != want {
			t.Errorf("call %d: traceparent %q, want the client span's %q", i, got, want)
		}
		if s.Name != "POST" || s.SpanKind != trace.SpanKindClient || s.Parent.SpanID() != root.SpanContext().SpanID() {
			t.Errorf("call %d: span %q kind %v parent %v", i, s.Name, s.SpanKind, s.Parent.SpanID())
		}
		a := attrs(s)
		if a["paygate.provider"] != "stripe-eu" || a["server.address"] != "127.0.0.1" || a["http.response.status_code"] != c.status {
			t.Errorf("call %d: attributes %v", i, a)
		}
		if (s.Status.Code == codes.Error) != c.failed {
			t.Errorf("call %d: status %v", i, s.Status)
		}
		for k, v := range a {
			if strings.Contains(v, "sk_secret") || strings.Contains(v, "payment_intents") {
				t.Errorf("call %d: attribute %s = %q holds the URL", i, k, v)
			}
		}
	}
}
