package metrics

import (
	"context"
	"io"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/ratelimit"
)

// BenchmarkPaymentHooks is what metrics add to one approved payment: its
// request, its rate-limit decision, its charge and its status.
func BenchmarkPaymentHooks(b *testing.B) {
	m := New(nil)
	l := m.Limiter(allowAll{})
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_, _ = l.Allow(ctx, "key:k", 100)
			m.ProviderCall("sandbox-eu", "charge", 2*time.Millisecond, false, nil)
			m.PaymentStatus(paygate.ModeTest, "sandbox-eu", paygate.PaymentCaptured)
			m.Request("/v1/payments", "POST", 201, 3*time.Millisecond)
		}
	})
}

// BenchmarkScrape is one scrape of a registry holding the series of a
// server that has served every route.
func BenchmarkScrape(b *testing.B) {
	m := New(nil)
	for _, route := range []string{"/v1/payments", "/v1/payments/{id}", "/v1/refunds", "/v1/refunds/{id}", "/v1/customers", "unmatched", "/healthz", "/readyz", "/dashboard/*"} {
		for _, method := range []string{"GET", "POST"} {
			for _, code := range []int{200, 201, 400, 401, 404, 429} {
				m.Request(route, method, code, time.Millisecond)
			}
		}
	}
	for _, p := range []string{"sandbox-eu", "sandbox-us", "sandbox-apac", "sandbox-global"} {
		m.KnownProvider(paygate.ModeTest, p)
		m.BreakerState(p, paygate.BreakerClosed)
		m.ProviderCall(p, "charge", time.Millisecond, false, nil)
	}
	h := m.Handler()
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
		_, _ = io.Copy(io.Discard, w.Body)
	}
}

// allowAll is a limiter that allows everything, so that only the
// decorator's cost is measured.
type allowAll struct{}

func (allowAll) Allow(context.Context, string, int) (ratelimit.Decision, error) {
	return ratelimit.Decision{Allowed: true, Limit: 100, Remaining: 99}, nil
}
