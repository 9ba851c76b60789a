package httpapi

import "time"

// RequestMetrics receives every answered request, after its log line
// (internal/metrics implements it). route is the route pattern, or
// "unmatched": never the raw path.
type RequestMetrics interface {
	Request(route, method string, status int, d time.Duration)
}

// noMetrics records nothing: the API without --metrics-addr.
type noMetrics struct{}

func (noMetrics) Request(string, string, int, time.Duration) {}
