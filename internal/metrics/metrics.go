// Package metrics is the gateway's Prometheus instrumentation (decisions
// §16): the series the operator scrapes at GET /metrics on serve's
// --metrics-addr listener, and the hooks that feed them.
//
// The packages that do the work do not import this one: each declares the
// small interface it reports to (httpapi.RequestMetrics, payment.Metrics,
// provider.Metrics, webhook.Metrics), and *Metrics implements them all. A
// nil *Metrics is valid and records nothing, so wiring without metrics
// costs one nil check per hook.
//
// Every label value is bounded: routes are route patterns (with a cap on
// how many distinct ones are kept), methods outside the standard set are
// "other", statuses and outcomes come from fixed vocabularies. A client
// cannot make a series appear by choosing a path, a method or a header.
package metrics

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/paygate/paygate/internal/paygate"
)

// Buckets of the duration histograms, in seconds. An API answer on a local
// database takes a millisecond or a few (hence the fine low end); a
// provider call is tens of milliseconds to its timeout (at most 15 s,
// provider.MaxTimeout).
var (
	httpBuckets     = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}
	providerBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 15, 30}
)

// Label values known from the start, so that their series exist (at 0)
// before anything happened: a rate() over a series that appears only with
// its first event misses that event.
var (
	paymentStatuses = []paygate.PaymentStatus{
		paygate.PaymentCreated, paygate.PaymentAuthorized, paygate.PaymentCaptured,
		paygate.PaymentPending3DS, paygate.PaymentFailed, paygate.PaymentVoided,
	}
	refundStatuses  = []paygate.RefundStatus{paygate.RefundCreated, paygate.RefundPending, paygate.RefundSucceeded, paygate.RefundFailed}
	recoveredStates = []paygate.PaymentStatus{paygate.PaymentCaptured, paygate.PaymentAuthorized, paygate.PaymentFailed}
	// CardTestingRules are the card-testing guard's rules (decisions §20),
	// the values of paygate_card_testing_blocked_total's rule label.
	CardTestingRules = []string{"card_ip", "card", "customer", "ip_cards"}
)

// Metrics holds the gateway's series on a registry of its own (never the
// global one), so that one process may run several servers, as tests do.
// Its methods are safe for concurrent use, and do nothing on a nil
// *Metrics.
type Metrics struct {
	reg *prometheus.Registry

	httpRequests *prometheus.CounterVec
	httpDuration *prometheus.HistogramVec
	http         cache[httpKey, httpSeries]

	payments         *prometheus.CounterVec
	paymentChildren  cache[paymentKey, prometheus.Counter]
	refunds          *prometheus.CounterVec
	providerDuration *prometheus.HistogramVec
	providerChildren cache[providerKey, prometheus.Observer]
	circuit          *prometheus.GaugeVec
	deliveries       *prometheus.CounterVec
	replays          prometheus.Counter
	rateLimited      *prometheus.CounterVec
	recovered        *prometheus.CounterVec
	cardTesting      *prometheus.CounterVec
	guardErrors      prometheus.Counter
	routingErrors    prometheus.Counter

	log *slog.Logger
}

// New returns the metrics on a fresh registry holding every series of
// decisions §16 and the Go and process collectors. log receives errors of
// scrapes (a store that could not be read); nil discards them.
func New(log *slog.Logger) *Metrics {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := &Metrics{reg: prometheus.NewRegistry(), log: log}
	m.httpRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "paygate_http_requests_total",
		Help: "API requests answered, by route pattern, method and status code.",
	}, []string{"route", "method", "code"})
	m.httpDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "paygate_http_request_duration_seconds",
		Help:    "Time to answer an API request, by route pattern and method.",
		Buckets: httpBuckets,
	}, []string{"route", "method"})
	m.payments = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "paygate_payments_total",
		Help: "Payment statuses written by this node: a creation's outcome (created when the provider's answer is unknown), a capture, a void, a 3-D Secure result or expiry, a recovery.",
	}, []string{"mode", "provider", "status"})
	m.refunds = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "paygate_refunds_total",
		Help: "Refund statuses written by this node: created, pending (sent to the provider), succeeded, failed.",
	}, []string{"mode", "status"})
	m.providerDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "paygate_provider_request_duration_seconds",
		Help:    "Time of a call to a payment provider, by provider, operation (charge, capture, void, refund, 3ds, inquire) and outcome (success, declined, failed, unavailable, unknown_outcome).",
		Buckets: providerBuckets,
	}, []string{"provider", "operation", "outcome"})
	m.circuit = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "paygate_provider_circuit_state",
		Help: "State of this node's circuit breaker of a provider: 0 closed, 1 half-open, 2 open.",
	}, []string{"provider"})
	m.deliveries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "paygate_webhook_deliveries_total",
		Help: "Webhook delivery attempts made by this node, by result: succeeded, retry (failed, another attempt is scheduled), failed (no attempt left, or nowhere to send it), disabled (the endpoint answered 410 Gone).",
	}, []string{"result"})
	m.replays = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "paygate_idempotent_replays_total",
		Help: "Requests answered with the stored answer of their Idempotency-Key.",
	})
	m.rateLimited = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "paygate_rate_limited_total",
		Help: "Requests refused by a rate limit, by reason: api_key (a key over its requests per minute), failed_auth (an address over its failed authentications), dashboard_login (sign-in attempts).",
	}, []string{"reason"})
	m.recovered = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "paygate_recovery_resolved_total",
		Help: "Payments the recovery job finished, by the status it wrote.",
	}, []string{"status"})
	m.cardTesting = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "paygate_card_testing_blocked_total",
		Help: "Payment attempts blocked by the card-testing guard, by rule.",
	}, []string{"rule"})
	m.guardErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "paygate_card_testing_guard_errors_total",
		Help: "Checks and records of the card-testing guard that failed (Redis or the database unavailable) and let the payment through unguarded.",
	})
	m.routingErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "paygate_routing_score_errors_total",
		Help: "Records and reads of the success-rate router's shared scores that failed (Redis unavailable); the node routes on its own scores meanwhile.",
	})
	m.reg.MustRegister(
		m.httpRequests, m.httpDuration, m.payments, m.refunds, m.providerDuration, m.circuit,
		m.deliveries, m.replays, m.rateLimited, m.recovered, m.cardTesting, m.guardErrors, m.routingErrors,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	m.http.make, m.http.limit, m.http.overflow = m.newHTTPSeries, maxHTTPSeries, httpOverflow
	m.paymentChildren.make = func(k paymentKey) prometheus.Counter {
		return m.payments.WithLabelValues(string(k.mode), k.provider, string(k.status))
	}
	m.providerChildren.make = func(k providerKey) prometheus.Observer {
		return m.providerDuration.WithLabelValues(k.provider, k.operation, k.outcome)
	}

	for _, mode := range []paygate.Mode{paygate.ModeTest, paygate.ModeLive} {
		for _, s := range refundStatuses {
			m.refunds.WithLabelValues(string(mode), string(s))
		}
	}
	for _, r := range deliveryResults {
		m.deliveries.WithLabelValues(r)
	}
	for _, r := range rateLimitReasons {
		m.rateLimited.WithLabelValues(r)
	}
	for _, s := range recoveredStates {
		m.recovered.WithLabelValues(string(s))
	}
	for _, r := range CardTestingRules {
		m.cardTesting.WithLabelValues(r)
	}
	return m
}

// Registry returns the registry the series are on, for a test or a
// collector of the caller's own.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the series in the Prometheus text format (or OpenMetrics,
// gzip or zstd when the scraper asks). A scrape that takes longer than 10 s
// is answered 503; at most four run at once.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		ErrorLog:            slog.NewLogLogger(m.log.Handler(), slog.LevelWarn),
		ErrorHandling:       promhttp.ContinueOnError,
		Registry:            m.reg,
		MaxRequestsInFlight: 4,
		Timeout:             10 * time.Second,
	})
}

// KnownProvider creates the payment series of a configured provider at 0,
// one per status, so that they exist before its first payment.
func (m *Metrics) KnownProvider(mode paygate.Mode, provider string) {
	if m == nil {
		return
	}
	for _, s := range paymentStatuses {
		m.paymentChildren.get(paymentKey{mode, provider, s})
	}
}

// PaymentStatus counts a status this node wrote for a payment of the mode
// at the provider ("" when none took it: counted as "none").
func (m *Metrics) PaymentStatus(mode paygate.Mode, provider string, status paygate.PaymentStatus) {
	if m == nil {
		return
	}
	if provider == "" {
		provider = "none"
	}
	m.paymentChildren.get(paymentKey{mode, provider, status}).Inc()
}

// RefundStatus counts a status this node wrote for a refund.
func (m *Metrics) RefundStatus(mode paygate.Mode, status paygate.RefundStatus) {
	if m == nil {
		return
	}
	m.refunds.WithLabelValues(string(mode), string(status)).Inc()
}

// Replayed counts a request answered with its Idempotency-Key's stored
// answer.
func (m *Metrics) Replayed() {
	if m == nil {
		return
	}
	m.replays.Inc()
}

// Recovered counts a payment the recovery job finished with status.
func (m *Metrics) Recovered(status paygate.PaymentStatus) {
	if m == nil {
		return
	}
	m.recovered.WithLabelValues(string(status)).Inc()
}

// CardTestingBlocked counts an attempt the card-testing guard blocked
// under rule, one of CardTestingRules (any other counts as "other").
func (m *Metrics) CardTestingBlocked(rule string) {
	if m == nil {
		return
	}
	known := false
	for _, r := range CardTestingRules {
		known = known || r == rule
	}
	if !known {
		rule = "other"
	}
	m.cardTesting.WithLabelValues(rule).Inc()
}

// GuardError counts a check or record of the card-testing guard that
// failed open.
func (m *Metrics) GuardError() {
	if m == nil {
		return
	}
	m.guardErrors.Inc()
}

// RoutingScoreError counts a record or read of the success-rate router's
// shared scores that failed (score.RedisConfig.OnError).
func (m *Metrics) RoutingScoreError() {
	if m == nil {
		return
	}
	m.routingErrors.Inc()
}

// paymentKey names one child of paygate_payments_total.
type paymentKey struct {
	mode     paygate.Mode
	provider string
	status   paygate.PaymentStatus
}
