// Package httpapi serves the merchant-facing /v1 JSON API: routing, the
// envelope, errors, authentication, rate limits, idempotency and request
// validation. Use cases live in package payment; this package only
// translates between HTTP and them.
package httpapi

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/paygate/paygate/internal/auth"
	"github.com/paygate/paygate/internal/clientaddr"
	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/idempotency"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/payment"
	"github.com/paygate/paygate/internal/ratelimit"
	"github.com/paygate/paygate/internal/web"
)

// maxBody is the largest request body accepted (decisions §1).
const maxBody = 64 << 10

// Config holds what the API needs.
type Config struct {
	Store    paygate.Store
	Payments *payment.Service
	Auth     *auth.Authenticator
	Limiter  ratelimit.Limiter
	Clock    paygate.Clock
	Logger   *slog.Logger
	// Requests per minute per key, and failed authentications per minute
	// per client address.
	RateLimitTest, RateLimitLive, RateLimitUnauthenticated int
	// Dashboard serves /dashboard and everything under it (the merchant
	// dashboard's HTML pages); nil answers 404 there.
	Dashboard http.Handler
	// TrustedProxies are the reverse proxies whose X-Forwarded-For names
	// the client (serve --trusted-proxies); none: the peer is the client.
	TrustedProxies clientaddr.Proxies
	// Endpoints are the connectors' own endpoints (a provider's
	// notifications, the sandbox's challenge page), keyed by http.ServeMux
	// pattern. They are served without an API key (each authenticates what
	// it receives), logged under their pattern without its method, and
	// reach the request's id and the error envelope through package web.
	Endpoints map[string]http.Handler
}

// Server is the HTTP handler of the whole service.
type Server struct {
	cfg       Config
	log       *slog.Logger
	clock     paygate.Clock
	routes    []route
	endpoints *http.ServeMux
}

// New returns the handler. It panics when a dependency is missing, which is
// a wiring mistake.
func New(cfg Config) *Server {
	if cfg.Store == nil || cfg.Payments == nil || cfg.Auth == nil || cfg.Limiter == nil {
		panic("httpapi.New: Store, Payments, Auth and Limiter are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = paygate.SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, log: cfg.Logger, clock: cfg.Clock}
	s.routes = s.apiRoutes()
	s.endpoints = http.NewServeMux()
	for pattern, h := range cfg.Endpoints {
		s.endpoints.Handle(pattern, h)
	}
	return s
}

// reqState is what one request accumulates for its log line.
type reqState struct {
	requestID string
	clientIP  string
	key       paygate.APIKey
	authed    bool
	// peeked: the record of the request's Idempotency-Key was read with
	// its API key (auth.AuthenticatePeek); record is that record, nil when
	// there was none.
	peeked bool
	record *paygate.IdempotencyRecord
	// payment is the payment of a GET /v1/payments/{id}, read with its API
	// key (auth.AuthenticatePayment); nil when it was not read so or not
	// found, and getPayment reads it itself.
	payment *paygate.Payment
	// route is the route pattern the request matched (/v1/payments/{id}),
	// "unmatched" when none did: the log names it, never the raw path.
	route string
}

type ctxKey struct{}

func stateOf(ctx context.Context) *reqState {
	st, _ := ctx.Value(ctxKey{}).(*reqState)
	if st == nil {
		return &reqState{}
	}
	return st
}

var requestIDPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

// statusWriter remembers the status for the log line.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// ServeHTTP assigns the request id, logs one line per request, recovers
// panics into 500, and dispatches.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	st := &reqState{requestID: r.Header.Get("X-Request-Id")}
	if !requestIDPattern.MatchString(st.requestID) {
		st.requestID = id.New()
	}
	w.Header().Set("X-Request-Id", st.requestID)
	sw := &statusWriter{ResponseWriter: w}
	// The client address is decided once, here, and read from the context
	// by everything that uses one (the dashboard included).
	st.clientIP = s.cfg.TrustedProxies.ClientAddr(r)
	r = r.WithContext(clientaddr.NewContext(context.WithValue(r.Context(), ctxKey{}, st), st.clientIP))

	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.log.Error("panic serving request", "request_id", st.requestID, "panic", fmt.Sprint(v))
			if sw.status == 0 {
				s.writeError(sw, r, &paygate.Error{Code: paygate.CodeInternal, Message: "an internal error occurred"})
			}
		}
		// One line per request (decisions §15), with stable names: the
		// key's id, never the key; the route pattern, never the raw path.
		attrs := make([]slog.Attr, 0, 9)
		attrs = append(attrs,
			slog.String("request_id", st.requestID),
			slog.String("method", r.Method),
			slog.String("route", st.route),
			slog.Int("status", sw.status),
			slog.Float64("latency_ms", math.Round(float64(time.Since(start).Microseconds()))/1000),
		)
		if st.authed {
			attrs = append(attrs, slog.String("key_id", st.key.ID), slog.String("merchant_id", st.key.MerchantID), slog.String("mode", string(st.key.Mode)))
		}
		attrs = append(attrs, slog.String("client_ip", st.clientIP))
		s.log.LogAttrs(r.Context(), slog.LevelInfo, "request", attrs...)
	}()

	st.route = routeUnmatched
	switch path := r.URL.Path; {
	case path == "/healthz":
		st.route = path
		s.healthz(sw, r)
	case path == "/readyz":
		st.route = path
		s.readyz(sw, r)
	case isBrowserPath(path):
		// The 3-D Secure callback for the customer's browser (browser.go):
		// no API key, no idempotency, HTML answers.
		st.route = browserRoute(path)
		s.serveBrowser(sw, s.withWeb(r, st))
	case s.isEndpoint(r):
		_, pattern := s.endpoints.Handler(r)
		_, st.route, _ = strings.Cut(pattern, " ")
		if st.route == "" {
			st.route = pattern // a pattern without a method
		}
		s.endpoints.ServeHTTP(sw, s.withWeb(r, st)) // sets the pattern's path values
	case path == "/v1" || strings.HasPrefix(path, "/v1/"):
		s.serveAPI(sw, r) // sets the route it matched
	case (path == "/dashboard" || strings.HasPrefix(path, "/dashboard/")) && s.cfg.Dashboard != nil:
		st.route = "/dashboard/*"
		s.cfg.Dashboard.ServeHTTP(sw, r)
	default:
		s.writeError(sw, r, paygate.Errorf(paygate.CodeNotFound, "", "no such path"))
	}
}

// isEndpoint reports whether a connector's endpoint serves the request.
func (s *Server) isEndpoint(r *http.Request) bool {
	_, pattern := s.endpoints.Handler(r)
	return pattern != ""
}

// withWeb gives a handler that lives outside this package the request's id
// and the error envelope (package web).
func (s *Server) withWeb(r *http.Request, st *reqState) *http.Request {
	return r.WithContext(web.NewContext(r.Context(), web.Request{ID: st.requestID, WriteError: s.writeError}))
}

// routeUnmatched is the route a request that matched none is logged under.
const routeUnmatched = "unmatched"

// browserRoute is the route of a 3-D Secure browser path: the callback's
// token is a credential and stays out of the log.
func browserRoute(path string) string {
	if strings.HasPrefix(path, payment.CallbackPath) {
		return payment.CallbackPath + "{token}"
	}
	return path
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	s.writeData(w, r, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.cfg.Store.Ping(ctx); err != nil {
		s.log.Warn("readiness check failed", "error", err)
		w.Header().Set("Retry-After", "1")
		s.writeError(w, r, paygate.Errorf(paygate.CodeServiceUnavailable, "", "the database is unreachable"))
		return
	}
	s.writeData(w, r, http.StatusOK, map[string]string{"status": "ready"})
}

// serveAPI authenticates, rate-limits and routes a /v1 request.
func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	st := stateOf(ctx)
	var key paygate.APIKey
	var err error
	m := match(s.routes, r.URL.Path)
	if m.ok {
		st.route = m.name()
	}
	switch ik := r.Header.Get("Idempotency-Key"); m.peeks(r.Method) {
	case peekIdempotency:
		// A payment's key record is read with its API key (createPayment).
		if idempotency.ValidKey(ik) {
			key, st.record, st.peeked, err = s.cfg.Auth.AuthenticatePeek(ctx, r.Header.Get("X-API-Key"), ik)
			break
		}
		key, err = s.cfg.Auth.Authenticate(ctx, r.Header.Get("X-API-Key"))
	case peekPayment:
		// So is the payment of a GET (getPayment).
		key, st.payment, err = s.cfg.Auth.AuthenticatePayment(ctx, r.Header.Get("X-API-Key"), m.ids[0])
	default:
		key, err = s.cfg.Auth.Authenticate(ctx, r.Header.Get("X-API-Key"))
	}
	if err != nil {
		if paygate.ErrorCode(err) != paygate.CodeUnauthorized {
			s.fail(w, r, err)
			return
		}
		// Failed authentications are limited per client address.
		d, lerr := s.cfg.Limiter.Allow(ctx, "unauth:"+clientIP(r), s.cfg.RateLimitUnauthenticated)
		if lerr == nil && !d.Allowed {
			w.Header().Set("Retry-After", retryAfter(d.RetryAfter))
			s.writeError(w, r, paygate.Errorf(paygate.CodeRateLimited, "", "too many failed authentications from this address"))
			return
		}
		s.writeError(w, r, publicError(err))
		return
	}
	st.key, st.authed = key, true

	limit := s.cfg.RateLimitTest
	if key.Mode == paygate.ModeLive {
		limit = s.cfg.RateLimitLive
	}
	d, err := s.cfg.Limiter.Allow(ctx, "key:"+key.ID, limit)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	h := w.Header()
	h.Set("X-RateLimit-Limit", strconv.Itoa(d.Limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(max(d.Remaining, 0)))
	h.Set("X-RateLimit-Reset", strconv.Itoa(ceilSeconds(d.ResetAfter)))
	if !d.Allowed {
		h.Set("Retry-After", retryAfter(d.RetryAfter))
		s.writeError(w, r, paygate.Errorf(paygate.CodeRateLimited, "", "rate limit exceeded: %d requests per minute", d.Limit))
		return
	}
	s.route(w, r, key, m)
}

func ceilSeconds(d time.Duration) int {
	if d <= 0 {
		return 0
	}
	return int((d + time.Second - 1) / time.Second)
}

func retryAfter(d time.Duration) string { return strconv.Itoa(max(ceilSeconds(d), 1)) }

// clientIP is the request's client address: the peer, or the client a
// trusted proxy forwarded for (Config.TrustedProxies, ServeHTTP).
func clientIP(r *http.Request) string { return clientaddr.FromRequest(r) }

// writeData writes a success envelope; GET responses carry meta.timestamp.
func (s *Server) writeData(w http.ResponseWriter, r *http.Request, status int, data any) {
	env := envelope{Data: data}
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		env.Meta = &metaBody{Timestamp: formatTime(s.clock.Now())}
	}
	writeRaw(w, status, mustJSON(env))
}

// writeError writes an error envelope; GET responses carry meta.timestamp.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, e *paygate.Error) {
	status, env := errorEnvelope(e)
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		env.Meta = &metaBody{Timestamp: formatTime(s.clock.Now())}
	}
	if status == http.StatusServiceUnavailable && w.Header().Get("Retry-After") == "" {
		w.Header().Set("Retry-After", "1")
	}
	writeRaw(w, status, mustJSON(env))
}

// fail writes any error, logging the internal ones in full.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	pe := publicError(err)
	if pe.Code == paygate.CodeInternal || pe.Code == paygate.CodeServiceUnavailable {
		s.log.Error("request failed", "request_id", stateOf(r.Context()).requestID, "error", err.Error())
	}
	s.writeError(w, r, pe)
}
