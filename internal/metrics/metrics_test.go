package metrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/ratelimit"
)

// sample is one series of a scrape.
type sample struct {
	name   string
	labels map[string]string
	value  float64 // counter, gauge or untyped value; a histogram's count
	sum    float64 // a histogram's sum
}

// gather scrapes m's registry and returns every series, keyed by name and
// labels as the text format writes them: name{a="x",b="y"}.
func gather(t *testing.T, m *Metrics) map[string]sample {
	t.Helper()
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	out := map[string]sample{}
	for _, mf := range mfs {
		for _, mt := range mf.GetMetric() {
			s := sample{name: mf.GetName(), labels: map[string]string{}}
			for _, lp := range mt.GetLabel() {
				s.labels[lp.GetName()] = lp.GetValue()
			}
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				s.value = mt.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				s.value = mt.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				s.value, s.sum = float64(mt.GetHistogram().GetSampleCount()), mt.GetHistogram().GetSampleSum()
			default:
				s.value = mt.GetUntyped().GetValue()
			}
			out[seriesKey(s.name, s.labels)] = s
		}
	}
	return out
}

// seriesKey writes a series as the text format does, labels sorted.
func seriesKey(name string, labels map[string]string) string {
	if len(labels) == 0 {
		return name
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%q", k, labels[k])
	}
	return name + "{" + strings.Join(parts, ",") + "}"
}

// want checks the value of one series, which must exist.
func want(t *testing.T, got map[string]sample, series string, v float64) {
	t.Helper()
	s, ok := got[series]
	if !ok {
		t.Errorf("no series %s", series)
		return
	}
	if s.value != v {
		t.Errorf("%s = %v, want %v", series, s.value, v)
	}
}

// TestEverySeriesOfSection16 checks that a fresh registry shows every
// series decisions §16 names, the label values known from the start at 0,
// and the Go and process collectors.
func TestEverySeriesOfSection16(t *testing.T) {
	m := New(nil)
	m.KnownProvider(paygate.ModeTest, "sandbox-eu")
	m.BreakerState("sandbox-eu", paygate.BreakerClosed)
	got := gather(t, m)
	for _, s := range []string{
		`paygate_payments_total{mode="test",provider="sandbox-eu",status="captured"}`,
		`paygate_payments_total{mode="test",provider="sandbox-eu",status="created"}`,
		`paygate_refunds_total{mode="live",status="succeeded"}`,
		`paygate_provider_circuit_state{provider="sandbox-eu"}`,
		`paygate_webhook_deliveries_total{result="succeeded"}`,
		`paygate_webhook_deliveries_total{result="disabled"}`,
		`paygate_idempotent_replays_total`,
		`paygate_rate_limited_total{reason="api_key"}`,
		`paygate_rate_limited_total{reason="failed_auth"}`,
		`paygate_recovery_resolved_total{status="captured"}`,
		`paygate_card_testing_blocked_total{rule="card_ip"}`,
		`paygate_card_testing_blocked_total{rule="card"}`,
		`paygate_card_testing_blocked_total{rule="customer"}`,
		`paygate_card_testing_blocked_total{rule="ip_cards"}`,
		`paygate_card_testing_guard_errors_total`,
		`paygate_routing_score_errors_total`,
	} {
		want(t, got, s, 0)
	}
	m.RoutingScoreError()
	want(t, gather(t, m), `paygate_routing_score_errors_total`, 1)
	names := map[string]bool{}
	for _, s := range got {
		names[s.name] = true
	}
	for _, n := range []string{"go_goroutines", "go_memstats_alloc_bytes", "process_cpu_seconds_total", "process_resident_memory_bytes"} {
		if !names[n] {
			t.Errorf("no %s: the Go and process collectors are missing", n)
		}
	}
	// The histograms and the request counter appear with their first
	// observation; their metadata is there from the start.
	var text strings.Builder
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	res, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	text.Write(b)
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("GET /metrics: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	for _, s := range []string{"paygate_card_testing_blocked_total", "paygate_provider_circuit_state", "# TYPE paygate_webhook_deliveries_total counter"} {
		if !strings.Contains(text.String(), s) {
			t.Errorf("the scrape lacks %q", s)
		}
	}
}

func TestRequest(t *testing.T) {
	m := New(nil)
	m.Request("/v1/payments/{id}", "GET", 200, 3*time.Millisecond)
	m.Request("/v1/payments/{id}", "GET", 200, 5*time.Millisecond)
	m.Request("/v1/payments/{id}", "GET", 404, time.Millisecond)
	m.Request("/v1/payments", "POST", 0, time.Millisecond)    // nothing written: net/http's 200
	m.Request("unmatched", "PROPFIND", 405, time.Millisecond) // an odd method
	m.Request("unmatched", "get", 404, time.Millisecond)      // methods are case-sensitive
	m.Request("unmatched", "GET", 999, time.Millisecond)      // a status outside 100-599
	got := gather(t, m)
	want(t, got, `paygate_http_requests_total{code="200",method="GET",route="/v1/payments/{id}"}`, 2)
	want(t, got, `paygate_http_requests_total{code="404",method="GET",route="/v1/payments/{id}"}`, 1)
	want(t, got, `paygate_http_requests_total{code="200",method="POST",route="/v1/payments"}`, 1)
	want(t, got, `paygate_http_requests_total{code="405",method="other",route="unmatched"}`, 1)
	want(t, got, `paygate_http_requests_total{code="404",method="other",route="unmatched"}`, 1)
	want(t, got, `paygate_http_requests_total{code="other",method="GET",route="unmatched"}`, 1)
	h := got[`paygate_http_request_duration_seconds{method="GET",route="/v1/payments/{id}"}`]
	if h.value != 3 || h.sum < 0.0089 || h.sum > 0.0091 {
		t.Errorf("GET /v1/payments/{id} duration: count %v sum %v, want 3 and 0.009", h.value, h.sum)
	}
}

// TestRequestLabelsBounded feeds label values no route would give (random
// routes, methods and statuses): the series stop growing at the limit, and
// no method other than the standard ones and "other" is ever a label.
func TestRequestLabelsBounded(t *testing.T) {
	m := New(nil)
	rng := rand.New(rand.NewPCG(1, 2))
	methods := []string{"GET", "POST", "BREW", "PROPFIND", "", "get", "DELETE"}
	for i := range 5 * maxHTTPSeries {
		route := fmt.Sprintf("/raw/path/%d", i)
		m.Request(route, methods[rng.IntN(len(methods))], 100+rng.IntN(1000), time.Millisecond)
	}
	if n := m.http.len(); n > maxHTTPSeries+len(methods)*601 {
		t.Fatalf("%d request series kept, want at most the limit and its overflow", n)
	}
	got := gather(t, m)
	requests, other := 0, 0.0
	for _, s := range got {
		if s.name != "paygate_http_requests_total" {
			continue
		}
		requests++
		switch s.labels["method"] {
		case "GET", "POST", "DELETE", "other":
		default:
			t.Errorf("method label %q", s.labels["method"])
		}
		if s.labels["route"] == "other" {
			other += s.value
		}
	}
	if requests > maxHTTPSeries+len(methods)*601 {
		t.Errorf("%d request series, want them bounded", requests)
	}
	if other == 0 {
		t.Error("no request counted under route \"other\" past the limit")
	}
}

// TestHotPathDoesNotAllocate: once a series exists, recording into it
// allocates nothing (the children are cached, not looked up by label
// values on every call).
func TestHotPathDoesNotAllocate(t *testing.T) {
	m := New(nil)
	for name, f := range map[string]func(){
		"Request":       func() { m.Request("/v1/payments", "POST", 201, time.Millisecond) },
		"PaymentStatus": func() { m.PaymentStatus(paygate.ModeTest, "sandbox-eu", paygate.PaymentCaptured) },
		"ProviderCall":  func() { m.ProviderCall("sandbox-eu", "charge", time.Millisecond, false, nil) },
		"Replayed":      m.Replayed,
	} {
		f()
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s allocates %v times per call", name, n)
		}
	}
}

func TestPaymentsAndRefunds(t *testing.T) {
	m := New(nil)
	m.PaymentStatus(paygate.ModeTest, "sandbox-eu", paygate.PaymentCaptured)
	m.PaymentStatus(paygate.ModeTest, "sandbox-eu", paygate.PaymentCaptured)
	m.PaymentStatus(paygate.ModeLive, "", paygate.PaymentFailed) // no provider took it
	m.RefundStatus(paygate.ModeTest, paygate.RefundCreated)
	m.RefundStatus(paygate.ModeTest, paygate.RefundSucceeded)
	m.Replayed()
	m.Recovered(paygate.PaymentCaptured)
	m.CardTestingBlocked("card_ip")
	m.CardTestingBlocked("made-up")
	got := gather(t, m)
	want(t, got, `paygate_payments_total{mode="test",provider="sandbox-eu",status="captured"}`, 2)
	want(t, got, `paygate_payments_total{mode="live",provider="none",status="failed"}`, 1)
	want(t, got, `paygate_refunds_total{mode="test",status="created"}`, 1)
	want(t, got, `paygate_refunds_total{mode="test",status="succeeded"}`, 1)
	want(t, got, `paygate_refunds_total{mode="test",status="failed"}`, 0)
	want(t, got, `paygate_idempotent_replays_total`, 1)
	want(t, got, `paygate_recovery_resolved_total{status="captured"}`, 1)
	want(t, got, `paygate_card_testing_blocked_total{rule="card_ip"}`, 1)
	want(t, got, `paygate_card_testing_blocked_total{rule="other"}`, 1)
}

func TestProviderCalls(t *testing.T) {
	m := New(nil)
	unknown := &paygate.ProviderError{Kind: paygate.ProviderUnknownOutcome, Provider: "p", Message: "no answer"}
	for _, c := range []struct {
		name     string
		declined bool
		err      error
		want     string
	}{
		{"Success", false, nil, "success"},
		{"Declined", true, nil, "declined"},
		{"Failed", false, &paygate.ProviderError{Kind: paygate.ProviderFailed, Provider: "p", Message: "x"}, "failed"},
		{"Unavailable", false, &paygate.ProviderError{Kind: paygate.ProviderUnavailable, Provider: "p", Message: "x"}, "unavailable"},
		{"Unknown", false, unknown, "unknown_outcome"},
		{"UnknownWrapped", false, fmt.Errorf("charge: %w", unknown), "unknown_outcome"},
		{"Deadline", false, context.DeadlineExceeded, "unknown_outcome"},
		{"OtherError", false, errors.New("connector bug"), "failed"},
		{"ErrorWinsOverDeclined", true, errors.New("x"), "failed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Outcome(c.declined, c.err); got != c.want {
				t.Errorf("Outcome = %q, want %q", got, c.want)
			}
		})
	}
	m.ProviderCall("sandbox-eu", "charge", 20*time.Millisecond, false, nil)
	m.ProviderCall("sandbox-eu", "charge", 40*time.Millisecond, true, nil)
	m.ProviderCall("sandbox-eu", "refund", time.Second, false, unknown)
	m.BreakerState("sandbox-eu", paygate.BreakerOpen)
	m.BreakerState("sandbox-us", paygate.BreakerHalfOpen)
	m.BreakerState("sandbox-apac", paygate.BreakerClosed)
	got := gather(t, m)
	want(t, got, `paygate_provider_request_duration_seconds{operation="charge",outcome="success",provider="sandbox-eu"}`, 1)
	want(t, got, `paygate_provider_request_duration_seconds{operation="charge",outcome="declined",provider="sandbox-eu"}`, 1)
	want(t, got, `paygate_provider_request_duration_seconds{operation="refund",outcome="unknown_outcome",provider="sandbox-eu"}`, 1)
	want(t, got, `paygate_provider_circuit_state{provider="sandbox-eu"}`, 2)
	want(t, got, `paygate_provider_circuit_state{provider="sandbox-us"}`, 1)
	want(t, got, `paygate_provider_circuit_state{provider="sandbox-apac"}`, 0)
}

func TestDeliveries(t *testing.T) {
	m := New(nil)
	for _, r := range []string{"succeeded", "succeeded", "retry", "failed", "endpoint disabled", "something new"} {
		m.Delivered(r)
	}
	got := gather(t, m)
	want(t, got, `paygate_webhook_deliveries_total{result="succeeded"}`, 2)
	want(t, got, `paygate_webhook_deliveries_total{result="retry"}`, 1)
	want(t, got, `paygate_webhook_deliveries_total{result="failed"}`, 1)
	want(t, got, `paygate_webhook_deliveries_total{result="disabled"}`, 1)
	want(t, got, `paygate_webhook_deliveries_total{result="other"}`, 1)
}

// TestLimiterCountsRefusals: the decorated limiter decides as the one it
// wraps, and counts each refusal under the reason its key's prefix names;
// the key's own value never becomes a label.
func TestLimiterCountsRefusals(t *testing.T) {
	m := New(nil)
	l := m.Limiter(ratelimit.NewMemory())
	ctx := t.Context()
	allow := func(key string, perMinute int) bool {
		t.Helper()
		d, err := l.Allow(ctx, key, perMinute)
		if err != nil {
			t.Fatal(err)
		}
		return d.Allowed
	}
	for range 3 {
		allow("key:k1", 1)
		allow("unauth:192.0.2.1", 2)
		allow("dashboard-login-account:a@example.com", 1)
		allow("dashboard-login-addr:192.0.2.0/24", 1)
		allow("tokens:key:k4", 1)
		allow("tokens:addr:192.0.2.7", 1)
		allow("elsewhere:x", 1)
	}
	if !allow("key:k2", 1) {
		t.Error("another key's budget was charged")
	}
	if _, err := l.Allow(ctx, "key:k3", 0); !errors.Is(err, ratelimit.ErrInvalidLimit) {
		t.Errorf("an invalid limit: %v, want ErrInvalidLimit passed through", err)
	}
	got := gather(t, m)
	want(t, got, `paygate_rate_limited_total{reason="api_key"}`, 2)
	want(t, got, `paygate_rate_limited_total{reason="failed_auth"}`, 1)
	want(t, got, `paygate_rate_limited_total{reason="dashboard_login"}`, 4)
	want(t, got, `paygate_rate_limited_total{reason="tokens"}`, 4)
	want(t, got, `paygate_rate_limited_total{reason="other"}`, 2)
	for k, s := range got {
		if s.name == "paygate_rate_limited_total" && len(s.labels) != 1 {
			t.Errorf("rate-limit series with more than a reason: %s", k)
		}
		if strings.Contains(k, "192.0.2") || strings.Contains(k, "example.com") || strings.Contains(k, "k1") {
			t.Errorf("a key's value became a label: %s", k)
		}
	}
}

// TestNilMetrics: a nil *Metrics (metrics off) takes every call and
// records nothing.
func TestNilMetrics(t *testing.T) {
	var m *Metrics
	m.Request("/v1/payments", "POST", 201, time.Millisecond)
	m.PaymentStatus(paygate.ModeTest, "p", paygate.PaymentCaptured)
	m.RefundStatus(paygate.ModeTest, paygate.RefundCreated)
	m.Replayed()
	m.Recovered(paygate.PaymentCaptured)
	m.CardTestingBlocked("card")
	m.KnownProvider(paygate.ModeTest, "p")
	m.ProviderCall("p", "charge", time.Millisecond, false, nil)
	m.BreakerState("p", paygate.BreakerOpen)
	m.Delivered("succeeded")
	if pools, pending := m.WatchStore(nil); pools || pending {
		t.Error("a nil *Metrics watched a store")
	}
	inner := ratelimit.NewMemory()
	if l := m.Limiter(inner); l != ratelimit.Limiter(inner) {
		t.Error("a nil *Metrics wrapped the limiter")
	}
}

// TestSeveralRegistries: two Metrics in one process (two servers in one
// test) keep separate counts; neither touches the global registry.
func TestSeveralRegistries(t *testing.T) {
	a, b := New(nil), New(nil)
	a.Replayed()
	want(t, gather(t, a), "paygate_idempotent_replays_total", 1)
	want(t, gather(t, b), "paygate_idempotent_replays_total", 0)
}
