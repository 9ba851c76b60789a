package provider

import (
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// Metrics receives the router's charges and breaker changes, for the
// operator's metrics (internal/metrics implements it).
type Metrics interface {
	// ProviderCall reports a charge sent to a provider: how long it took,
	// whether it was declined, and its error. Charges the router refused
	// itself (breaker open, budget spent) never reached a provider and are
	// not reported.
	ProviderCall(provider, operation string, d time.Duration, declined bool, err error)
	// BreakerState reports the state a provider's breaker is in.
	BreakerState(provider string, state paygate.BreakerState)
}

// noMetrics records nothing: a router without metrics.
type noMetrics struct{}

func (noMetrics) ProviderCall(string, string, time.Duration, bool, error) {}
func (noMetrics) BreakerState(string, paygate.BreakerState)               {}

// SetMetrics makes the router report to m from now on, and reports the
// state of every provider's breaker at once, so that each has its series
// from the start. Call it before the router serves payments.
func (r *Router) SetMetrics(m Metrics) {
	if m == nil {
		m = noMetrics{}
	}
	r.metrics.Store(&m)
	for _, mode := range []paygate.Mode{paygate.ModeTest, paygate.ModeLive} {
		for _, g := range r.sorted[mode] {
			m.BreakerState(g.id, breakerState(g.cb.State()))
		}
	}
}

// observer returns the router's metrics.
func (r *Router) observer() Metrics {
	if m := r.metrics.Load(); m != nil {
		return *m
	}
	return noMetrics{}
}
