package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// maxHTTPSeries bounds the (route, method, code) combinations kept. The API
// has a few dozen routes and answers a handful of codes on each, so the
// limit is only reached when something hands in raw paths: the requests
// past it are counted under route "other" rather than growing the scrape
// without end.
const maxHTTPSeries = 1000

// Label values outside the known sets.
const (
	otherLabel = "other"
	codeOther  = -1 // a status outside 100-599
)

// httpKey names one request series.
type httpKey struct {
	route, method string
	code          int
}

// httpSeries are the children one request updates.
type httpSeries struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

// Request counts one answered API request and its duration. route is the
// route pattern the request matched ("/v1/payments/{id}"), or the fixed
// name of none ("unmatched"), never the raw path; a method outside the
// standard set counts as "other"; a status of 0 (nothing written) as 200,
// as net/http answers then.
func (m *Metrics) Request(route, method string, status int, d time.Duration) {
	if m == nil {
		return
	}
	if status == 0 {
		status = http.StatusOK
	} else if status < 100 || status > 599 {
		status = codeOther
	}
	s := m.http.get(httpKey{route: route, method: methodLabel(method), code: status})
	s.requests.Inc()
	s.duration.Observe(d.Seconds())
}

func (m *Metrics) newHTTPSeries(k httpKey) httpSeries {
	code := otherLabel
	if k.code != codeOther {
		code = strconv.Itoa(k.code)
	}
	return httpSeries{
		requests: m.httpRequests.WithLabelValues(k.route, k.method, code),
		duration: m.httpDuration.WithLabelValues(k.route, k.method),
	}
}

// httpOverflow is where requests go once maxHTTPSeries is reached.
func httpOverflow(k httpKey) httpKey {
	return httpKey{route: otherLabel, method: k.method, code: k.code}
}

// methodLabel returns the method as its label: one of the standard methods,
// or "other". The returned string is a constant, never the request's.
func methodLabel(method string) string {
	switch method {
	case http.MethodGet:
		return http.MethodGet
	case http.MethodHead:
		return http.MethodHead
	case http.MethodPost:
		return http.MethodPost
	case http.MethodPut:
		return http.MethodPut
	case http.MethodPatch:
		return http.MethodPatch
	case http.MethodDelete:
		return http.MethodDelete
	case http.MethodOptions:
		return http.MethodOptions
	default:
		return otherLabel
	}
}
