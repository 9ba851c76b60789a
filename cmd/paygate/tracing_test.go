package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/testenv"
	"github.com/paygate/paygate/internal/tracing/receiver"
)

// TestServeTraces runs serve with OTEL_EXPORTER_OTLP_ENDPOINT naming an
// OTLP/HTTP receiver in this process, makes one payment whose request
// carries a client's traceparent, and reads the exported trace: the server
// span, named by route, under the client's span; store spans and the
// provider's span under it, all in the client's trace; and the webhook
// delivery as a trace of its own, whose POST carried the traceparent of its
// client span to the receiver. No span holds the card number, the API key
// or the client's tracestate.
//
// Not parallel: the tracer serve installs is the process's, and another
// traced serve at the same time would take its spans.
func TestServeTraces(t *testing.T) {
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) { checkServeTraces(t, e.url(t)) })
	}
}

func checkServeTraces(t *testing.T, db string) {
	vaultKey := newVaultKey(t)
	cliEnv := map[string]string{"PAYGATE_VAULT_KEY": vaultKey}
	var m merchantCreated
	jsonLine(t, cliRun(t, cliEnv, "merchant", "create", "--name", "Traces", "--database-url", db, "--json"), &m)

	// The merchant's webhook receiver, on loopback, keeps the headers of
	// what it is sent.
	hooks := make(chan http.Header, 16)
	hookSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		hooks <- r.Header.Clone()
	}))
	defer hookSrv.Close()
	cliRun(t, cliEnv, "webhook", "set", "--merchant", m.MerchantID, "--mode", "test", "--url", hookSrv.URL+"/hook",
		"--database-url", db).mustSucceed(t)

	recv, err := receiver.Start(true)
	if err != nil {
		t.Fatal(err)
	}
	defer recv.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr testenv.Buffer
	env := map[string]string{
		"PAYGATE_DATABASE_URL":        db,
		"PAYGATE_VAULT_KEY":           vaultKey,
		"OTEL_EXPORTER_OTLP_ENDPOINT": recv.URL,
	}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0"}, func(k string) string { return env[k] }, &stdout, &stderr)
	}()
	addr := waitListening(t, &stderr, done)
	if !strings.Contains(stderr.String(), `"msg":"exporting traces"`) {
		t.Errorf("serve did not log that it exports traces:\n%s", stderr.String())
	}

	// The client's own span, as a merchant's traced HTTP client sends it.
	const (
		clientTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
		clientSpan  = "00f067aa0ba902b7"
	)
	body := regexp.MustCompile(`-d '(\{.*\})'`).FindStringSubmatch(demoCurl("http://"+addr, m.TestSecretKey, time.Now().Year()))
	if body == nil {
		t.Fatal("no body in the demo curl")
	}
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/payments", strings.NewReader(body[1]))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-API-Key", m.TestSecretKey)
	req.Header.Set("Idempotency-Key", "traces-"+id.New())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Traceparent", "00-"+clientTrace+"-"+clientSpan+"-01")
	req.Header.Set("Tracestate", "merchant=private-state")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	respBody, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var created struct {
		Data struct {
			ID       string `json:"id"`
			Status   string `json:"status"`
			Provider string `json:"provider"`
		} `json:"data"`
	}
	if err := json.Unmarshal(respBody, &created); err != nil || resp.StatusCode != http.StatusCreated || created.Data.Status != "captured" {
		t.Fatalf("payment: %d %s", resp.StatusCode, respBody)
	}
	// A request without traceparent: its server span begins a trace.
	if r, err := http.Get("http://" + addr + "/healthz"); err != nil {
		t.Fatal(err)
	} else {
		r.Body.Close()
	}

	var hook http.Header
	select {
	case hook = <-hooks:
	case <-time.After(30 * time.Second):
		t.Fatal("the webhook receiver got nothing")
	}
	// Stop serve: its deferred stop flushes the spans still batched, after
	// the dispatcher has recorded the delivery.
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("serve exited %d; stderr:\n%s", code, stderr.String())
		}
	case <-time.After(40 * time.Second):
		t.Fatal("serve did not stop")
	}
	spans := recv.Spans()
	if recv.Failures() != 0 {
		t.Errorf("%d export requests could not be read", recv.Failures())
	}
	tr := newTraceView(spans)

	// The server span: named by route, under the client's span, in its trace.
	server := tr.one(t, func(s receiver.Span) bool { return s.Name == "POST /v1/payments" && s.TraceID == clientTrace })
	if server.ParentSpanID != clientSpan || server.Kind != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("server span: parent %q kind %v, want the client's span %s and SERVER", server.ParentSpanID, server.Kind, clientSpan)
	}
	for k, want := range map[string]string{
		"http.route": "/v1/payments", "http.request.method": "POST", "http.response.status_code": "201",
		"paygate.merchant_id": m.MerchantID, "paygate.mode": "test",
	} {
		if got := server.Attributes[k]; got != want {
			t.Errorf("server span %s = %q, want %q", k, got, want)
		}
	}
	if server.Attributes["paygate.request_id"] == "" || server.Service != "paygate" {
		t.Errorf("server span: request id %q, service %q", server.Attributes["paygate.request_id"], server.Service)
	}

	// Store spans: reads and the writes of the payment, all under it.
	system := "sqlite"
	if !strings.HasPrefix(db, "sqlite:") {
		system = "postgresql"
	}
	var reads, writes int
	for _, s := range tr.under(server) {
		if s.Attributes["db.system.name"] != system {
			continue
		}
		switch {
		case strings.HasPrefix(s.Name, "SELECT"):
			reads++
		case strings.HasPrefix(s.Name, "BATCH") || strings.HasPrefix(s.Name, "INSERT") ||
			strings.HasPrefix(s.Name, "UPDATE") || s.Name == "sqlite write transaction":
			writes++
		}
	}
	if writes == 0 || (system == "sqlite" && reads == 0) {
		t.Errorf("store spans under the server span: %d reads, %d writes; the trace:\n%s", reads, writes, tr.dump(clientTrace))
	}

	// The provider's span, with the provider's id, under the server span.
	prov := tr.one(t, func(s receiver.Span) bool { return s.Name == "provider charge" && s.TraceID == clientTrace })
	if !tr.descends(prov, server) {
		t.Errorf("the provider span is not under the server span; the trace:\n%s", tr.dump(clientTrace))
	}
	if prov.Attributes["paygate.provider"] != created.Data.Provider || prov.Attributes["paygate.payment_id"] != created.Data.ID ||
		prov.Attributes["paygate.result"] != "captured" {
		t.Errorf("provider span attributes %v, want provider %s payment %s result captured", prov.Attributes, created.Data.Provider, created.Data.ID)
	}

	// The webhook delivery: a trace of its own, whose POST's client span
	// is the parent the receiver was told of.
	parts := strings.Split(hook.Get("Traceparent"), "-")
	if len(parts) != 4 || parts[0] != "00" || parts[3] != "01" {
		t.Fatalf("the webhook receiver got traceparent %q", hook.Get("Traceparent"))
	}
	if ts := hook.Get("Tracestate"); ts != "" {
		t.Errorf("the webhook receiver got tracestate %q", ts)
	}
	post := tr.one(t, func(s receiver.Span) bool { return s.SpanID == parts[2] })
	delivery := tr.one(t, func(s receiver.Span) bool { return s.SpanID == post.ParentSpanID })
	if post.TraceID != parts[1] || post.Kind != tracepb.Span_SPAN_KIND_CLIENT || post.Name != "POST" ||
		post.Attributes["http.response.status_code"] != "200" {
		t.Errorf("the webhook POST's span: %+v", post)
	}
	if delivery.Name != "webhook delivery" || delivery.ParentSpanID != "" || delivery.TraceID == clientTrace ||
		delivery.Attributes["paygate.event_type"] != "payment.captured" || delivery.Attributes["paygate.result"] != "succeeded" ||
		delivery.Attributes["paygate.event_id"] != hook.Get("Webhook-Id") || delivery.Attributes["paygate.payment_id"] != created.Data.ID {
		t.Errorf("the delivery's span: %+v (webhook-id %s)", delivery, hook.Get("Webhook-Id"))
	}
	recorded := false
	for _, s := range tr.under(delivery) {
		recorded = recorded || s.Attributes["db.system.name"] == system
	}
	if !recorded {
		t.Errorf("no store span under the delivery; its trace:\n%s", tr.dump(delivery.TraceID))
	}

	health := tr.one(t, func(s receiver.Span) bool { return s.Name == "GET /healthz" })
	if health.ParentSpanID != "" || health.TraceID == clientTrace {
		t.Errorf("a request without traceparent: span %+v, want a root of its own trace", health)
	}

	// Nothing secret in any span.
	for _, s := range spans {
		for k, v := range s.Attributes {
			for _, secret := range []string{"4242424242424242", m.TestSecretKey, "private-state"} {
				if strings.Contains(v, secret) {
					t.Errorf("span %q attribute %s holds %q", s.Name, k, secret)
				}
			}
		}
	}
}

// waitListening waits for serve's "listening" line and returns its address.
func waitListening(t *testing.T, stderr *testenv.Buffer, done <-chan int) string {
	t.Helper()
	addrRE := regexp.MustCompile(`"msg":"listening".*?"addr":"([^"]+)"`)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		select {
		case code := <-done:
			t.Fatalf("serve exited %d before listening; stderr:\n%s", code, stderr.String())
		default:
		}
		if sm := addrRE.FindStringSubmatch(stderr.String()); sm != nil {
			return sm[1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not log that it listens; stderr:\n%s", stderr.String())
		}
	}
}

// traceView indexes received spans by id.
type traceView struct {
	spans []receiver.Span
	byID  map[string]receiver.Span
}

func newTraceView(spans []receiver.Span) *traceView {
	v := &traceView{spans: spans, byID: map[string]receiver.Span{}}
	for _, s := range spans {
		v.byID[s.SpanID] = s
	}
	return v
}

// one returns the only span match accepts.
func (v *traceView) one(t *testing.T, match func(receiver.Span) bool) receiver.Span {
	t.Helper()
	var found []receiver.Span
	for _, s := range v.spans {
		if match(s) {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		names := make([]string, len(v.spans))
		for i, s := range v.spans {
			names[i] = s.Name
		}
		t.Fatalf("%d matching spans, want 1; received: %s", len(found), strings.Join(names, ", "))
	}
	return found[0]
}

// descends reports whether s is below ancestor, in its trace.
func (v *traceView) descends(s, ancestor receiver.Span) bool {
	for seen := 0; s.ParentSpanID != "" && seen < len(v.spans); seen++ {
		if s.TraceID != ancestor.TraceID {
			return false
		}
		if s.ParentSpanID == ancestor.SpanID {
			return true
		}
		p, ok := v.byID[s.ParentSpanID]
		if !ok {
			return false
		}
		s = p
	}
	return false
}

// under lists the spans below ancestor.
func (v *traceView) under(ancestor receiver.Span) []receiver.Span {
	var out []receiver.Span
	for _, s := range v.spans {
		if v.descends(s, ancestor) {
			out = append(out, s)
		}
	}
	return out
}

// dump renders a trace's spans, for failure messages.
func (v *traceView) dump(traceID string) string {
	var lines []string
	for _, s := range v.spans {
		if s.TraceID == traceID {
			lines = append(lines, fmt.Sprintf("%s <- %s  %s %v", s.SpanID, s.ParentSpanID, s.Name, s.Attributes))
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

func TestTraceSettings(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		env      map[string]string
		endpoint string
		err      string
	}{
		{"Unset", nil, "", ""},
		{"Base", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318/"}, "http://127.0.0.1:4318/v1/traces", ""},
		{"TracesWins", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://b/custom"}, "https://b/custom", ""},
		{"Disabled", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318", "OTEL_SDK_DISABLED": "true"}, "", ""},
		{"ExporterNone", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318", "OTEL_TRACES_EXPORTER": "none"}, "", ""},
		{"ExporterOther", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318", "OTEL_TRACES_EXPORTER": "zipkin"}, "http://a:4318/v1/traces", "OTEL_TRACES_EXPORTER"},
		{"GRPC", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "http://a:4317/v1/traces", "http/protobuf"},
		{"TracesProtocolWins", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}, "http://a:4318/v1/traces", ""},
		{"NotAURL", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "collector:4318"}, "collector:4318", "not an http(s) URL"},
		{"PasswordHidden", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "ftp://u:hunter2@h/x"}, "ftp://u:hunter2@h/x", "xxxxx"},
		{"BadSampler", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a", "OTEL_TRACES_SAMPLER": "jaeger_remote"}, "http://a/v1/traces", "OTEL_TRACES_SAMPLER"},
		{"BadRatio", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a", "OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "2"}, "http://a/v1/traces", "ratio"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := traceSettingsFromEnv(func(k string) string { return c.env[k] })
			if s.Endpoint != c.endpoint {
				t.Errorf("endpoint %q, want %q", s.Endpoint, c.endpoint)
			}
			err := s.check()
			if err == nil {
				_, err = s.sampler()
			}
			switch {
			case c.err == "" && err != nil:
				t.Errorf("error %v", err)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Errorf("error %v, want one naming %q", err, c.err)
			case err != nil && strings.Contains(err.Error(), "hunter2"):
				t.Errorf("the error shows the password: %v", err)
			}
		})
	}
}

// TestTraceSampler: a client's sampled flag decides nothing; the operator's
// sampler does, and spans under this process's own spans follow them.
func TestTraceSampler(t *testing.T) {
	t.Parallel()
	traceID, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	spanID, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	parent := func(remote, sampled bool) context.Context {
		sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceID, SpanID: spanID, Remote: remote})
		if sampled {
			sc = sc.WithTraceFlags(trace.FlagsSampled)
		}
		return trace.ContextWithSpanContext(context.Background(), sc)
	}
	for _, c := range []struct {
		name            string
		sampler         string
		remote, sampled bool
		want            bool
	}{
		{"OnRemoteUnsampled", "", true, false, true},
		{"OnRemoteSampled", "parentbased_always_on", true, true, true},
		{"OffRemoteSampled", "always_off", true, true, false},
		{"ZeroRatioRemoteSampled", "traceidratio", true, true, false},
		{"OnLocalUnsampled", "always_on", false, false, false},
		{"OffLocalSampled", "always_off", false, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := traceSettings{Sampler: c.sampler}
			if c.sampler == "traceidratio" {
				s.SamplerArg = "0"
			}
			sm, err := s.sampler()
			if err != nil {
				t.Fatal(err)
			}
			r := sm.ShouldSample(sdktrace.SamplingParameters{ParentContext: parent(c.remote, c.sampled), TraceID: traceID, Name: "GET /healthz"})
			if got := r.Decision == sdktrace.RecordAndSample; got != c.want {
				t.Errorf("sampled %v, want %v", got, c.want)
			}
		})
	}
}
