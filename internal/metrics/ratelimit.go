package metrics

import (
	"context"
	"strings"

	"github.com/paygate/paygate/internal/ratelimit"
)

// Reasons of a rate-limited request, the values of the reason label.
var rateLimitReasons = []string{"api_key", "failed_auth", "dashboard_login", "tokens"}

// reasonOf names the budget a limiter key belongs to by its prefix (the
// part before the first colon, which every caller gives its kind of key).
// The key's own value (a key id, an address, an email) never becomes a
// label.
func reasonOf(key string) string {
	prefix, _, _ := strings.Cut(key, ":")
	switch prefix {
	case "key":
		return "api_key"
	case "unauth":
		return "failed_auth"
	case "dashboard-login-addr", "dashboard-login-account":
		return "dashboard_login"
	case "tokens":
		// POST /v1/tokens: its public key's budget and its client
		// address's (tokens:key:…, tokens:addr:…).
		return "tokens"
	default:
		return otherLabel
	}
}

// Limiter returns l counting its refusals in paygate_rate_limited_total;
// on a nil *Metrics it returns l itself.
func (m *Metrics) Limiter(l ratelimit.Limiter) ratelimit.Limiter {
	if m == nil {
		return l
	}
	return &limiter{next: l, m: m}
}

// limiter is a ratelimit.Limiter that counts refusals.
type limiter struct {
	next ratelimit.Limiter
	m    *Metrics
}

// Allow asks the wrapped limiter and counts a refusal under its reason.
func (l *limiter) Allow(ctx context.Context, key string, perMinute int) (ratelimit.Decision, error) {
	d, err := l.next.Allow(ctx, key, perMinute)
	if err == nil && !d.Allowed {
		l.m.rateLimited.WithLabelValues(reasonOf(key)).Inc()
	}
	return d, err
}
