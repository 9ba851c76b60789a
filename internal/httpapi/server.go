// Package httpapi serves the merchant-facing /v1 JSON API: routing, the
// envelope, errors, authentication, rate limits, idempotency and request
// validation. Use cases live in package payment; this package only
// translates between HTTP and them.
package httpapi

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/paygate/paygate/internal/apidoc"
	"github.com/paygate/paygate/internal/auth"
	"github.com/paygate/paygate/internal/cardfields"
	"github.com/paygate/paygate/internal/clientaddr"
	"github.com/paygate/paygate/internal/httpx"
	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/idempotency"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/payment"
	"github.com/paygate/paygate/internal/ratelimit"
	"github.com/paygate/paygate/internal/tracing"
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
	// Card tokens per minute per public key and per client address
	// (POST /v1/tokens, decisions §19); 0 means the default (300, 30).
	RateLimitTokens, RateLimitTokensPerAddr int
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
	// Metrics receives every answered request; nil records nothing.
	Metrics RequestMetrics
	// CardFields serves the browser's card fields (package cardfields:
	// paygate.js and its frame) at cardfields.Paths, for GET and HEAD,
	// without an API key; nil answers 404 there.
	CardFields http.Handler
}

// Server is the HTTP handler of the whole service.
type Server struct {
	cfg   Config
	log   *slog.Logger
	clock paygate.Clock
	// mux routes every request; api routes those under /v1 that take an
	// API key (newAPI).
	mux, api *httpx.Mux
	// recent is the idempotency keys of payments seen lately (knownPayer).
	recent *recentKeys
	// draining is set by Drain: the node is stopping.
	draining atomic.Bool
}

// Drain makes /readyz answer 503 from now on, so that a load balancer
// stops sending this node new requests while it finishes those it has
// (serve calls it on SIGTERM, decisions §16). Everything else is served as
// before.
func (s *Server) Drain() { s.draining.Store(true) }

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
	if cfg.Metrics == nil {
		cfg.Metrics = noMetrics{}
	}
	if cfg.RateLimitTokens <= 0 {
		cfg.RateLimitTokens = DefaultRateLimitTokens
	}
	if cfg.RateLimitTokensPerAddr <= 0 {
		cfg.RateLimitTokensPerAddr = DefaultRateLimitTokensPerAddr
	}
	s := &Server{cfg: cfg, log: cfg.Logger, clock: cfg.Clock, recent: newRecentKeys()}
	s.api = s.newAPI()
	s.mux = s.newMux()
	return s
}

// reqState is what one request accumulates for its log line.
type reqState struct {
	requestID string
	clientIP  string
	key       paygate.APIKey
	authed    bool
	// ahead is the record of the request's Idempotency-Key as it was read
	// with its API key (createPayment); nil when it was not read.
	ahead *payment.ReadAhead
	// unverified is set while key is only known (auth.Authenticator.Known),
	// for a payment whose insert verifies it.
	unverified bool
	// payment is the payment of a GET /v1/payments/{id}, read with its API
	// key; nil when it was not read so or not found, and getPayment reads
	// it itself.
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
	ctx, span := tracing.StartRequest(r) // the server span (tracing.go)
	r = r.WithContext(clientaddr.NewContext(context.WithValue(ctx, ctxKey{}, st), st.clientIP))

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
		s.cfg.Metrics.Request(st.route, r.Method, sw.status, time.Since(start))
		endSpan(span, r.Method, st, sw.status)
	}()

	st.route = routeUnmatched
	s.mux.ServeHTTP(sw, r)
}

// newMux returns the router of every path. Each route sets the name the
// request log shows; a path none matches is 404 without authentication.
func (s *Server) newMux() *httpx.Mux {
	mux := httpx.New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, paygate.Errorf(paygate.CodeNotFound, "", "no such path"))
	}))
	named := func(pattern, name string, h http.HandlerFunc) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			stateOf(r.Context()).route = name
			h(w, r)
		})
	}
	named("/healthz", "/healthz", s.healthz)
	named("/readyz", "/readyz", s.readyz)
	// The API's description of itself and its reference page (package
	// apidoc): no key and no rate limit. Like every /v1 path, the
	// document's path answers other methods, HEAD included, with 405.
	named("GET /v1/openapi.json", "/v1/openapi.json", apidoc.Document)
	for _, p := range []string{"/v1/openapi.json", "HEAD /v1/openapi.json"} {
		named(p, "/v1/openapi.json", s.notAllowed(http.MethodGet))
	}
	named("GET /docs/{$}", "/docs/", apidoc.Reference)
	named("GET /docs", "/docs/", apidoc.Reference)
	// 3-D Secure pages for the customer's browser (browser.go): no API
	// key, no idempotency, HTML answers. The callback's token is a
	// credential and stays out of the log.
	named(payment.CallbackPath, payment.CallbackPath+"{token}", func(w http.ResponseWriter, r *http.Request) {
		s.serveBrowser(w, s.withWeb(r, stateOf(r.Context())))
	})
	// The card fields (decisions §19): static scripts and the frame, whose
	// public key is in its query and never in the log.
	if s.cfg.CardFields != nil {
		for _, p := range cardfields.Paths {
			named("GET "+p, p, func(w http.ResponseWriter, r *http.Request) {
				s.cfg.CardFields.ServeHTTP(w, s.withWeb(r, stateOf(r.Context())))
			})
			named(p, p, s.notAllowed(http.MethodGet))
		}
	}
	for pattern, h := range s.cfg.Endpoints {
		named(pattern, pattern[strings.Index(pattern, " ")+1:], func(w http.ResponseWriter, r *http.Request) {
			h.ServeHTTP(w, s.withWeb(r, stateOf(r.Context())))
		})
	}
	for path, allow := range httpx.Allowed(slices.Collect(maps.Keys(s.cfg.Endpoints))) {
		named(path, path, s.notAllowed(allow))
	}
	// Card tokens take the public key, and only they (tokens.go).
	named(tokensPath, tokensPath, s.serveTokens)
	// Everything else under /v1 takes an API key; /v1/3ds/callback (no
	// slash) too, as ServeMux would otherwise redirect it to the callback.
	for _, p := range []string{"/v1", "/v1/", strings.TrimSuffix(payment.CallbackPath, "/")} {
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			s.api.ServePath(w, r, "/"+strings.Trim(r.URL.Path, "/"))
		})
	}
	if s.cfg.Dashboard != nil {
		named("/dashboard", "/dashboard/*", s.cfg.Dashboard.ServeHTTP)
		named("/dashboard/", "/dashboard/*", s.cfg.Dashboard.ServeHTTP)
		// A browser opening the server's root is led to the dashboard
		// (issue 22); other methods there, and every other unknown path,
		// stay the JSON 404.
		named("/{$}", "/", func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				s.writeError(w, r, paygate.Errorf(paygate.CodeNotFound, "", "no such path"))
				return
			}
			http.Redirect(w, r, "/dashboard/", http.StatusFound)
		})
	}
	return mux
}

// withWeb gives a handler that lives outside this package the request's id
// and the error envelope (package web).
func (s *Server) withWeb(r *http.Request, st *reqState) *http.Request {
	return r.WithContext(web.NewContext(r.Context(), web.Request{ID: st.requestID, WriteError: s.writeError}))
}

// routeUnmatched is the route a request that matched none is logged under.
const routeUnmatched = "unmatched"

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	s.writeData(w, r, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if s.draining.Load() {
		s.writeError(w, r, paygate.Errorf(paygate.CodeServiceUnavailable, "", "the server is shutting down"))
		return
	}
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

// serveAPI authenticates and rate-limits a /v1 request, reading ahead with
// its key, then runs serve: the route's handler, or its 404 or 405 (newAPI).
// A payment whose key this node authenticated before (knownPayer) is served
// with the key unverified: its insert verifies it, and whatever else would
// answer first (the rate limit here, a validation error or a stored card in
// the runner) authenticates it before answering.
func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request, ahead readAhead, ids []string, serve handlerFunc) {
	ctx := r.Context()
	st := stateOf(ctx)
	var key paygate.APIKey
	var err error
	var reads paygate.RequestReads
	switch ik := r.Header.Get("Idempotency-Key"); ahead {
	case readIdempotency:
		// A payment's key record is read with its API key (createPayment).
		if idempotency.ValidKey(ik) {
			reads.IdempotencyKey = ik
		}
	case readPayment:
		// So is the payment of a GET (getPayment).
		reads.PaymentID = ids[0]
	}
	header := r.Header.Get("X-API-Key")
	if k, ahead, ok := s.knownPayer(header, reads); ok {
		// A payment with a key this node has authenticated before: its
		// insert authenticates the key (decisions §22), and the runner
		// authenticates it first whenever something else would answer.
		key, st.ahead, st.unverified = k, ahead, true
	} else {
		key, err = s.authenticate(ctx, st, header, reads)
	}
	if err != nil {
		if paygate.ErrorCode(err) != paygate.CodeUnauthorized {
			s.fail(w, r, err)
			return
		}
		s.refuse(w, r, err)
		return
	}
	st.key, st.authed = key, true
	if reads.IdempotencyKey != "" && !st.unverified {
		s.recent.seen(key.MerchantID, key.Mode, reads.IdempotencyKey) // knownPayer recorded its own
	}

	limit := s.cfg.RateLimitTest
	if key.Mode == paygate.ModeLive {
		limit = s.cfg.RateLimitLive
	}
	d, err := s.cfg.Limiter.Allow(ctx, "key:"+key.ID, limit)
	if st.unverified && (err != nil || !d.Allowed) {
		// A key only known by its hash is verified before it is told
		// anything but its payment's answer: a revoked key over its
		// limit, or with the limiter down, still gets 401 first.
		if _, aerr := s.authenticate(ctx, st, header, reads); aerr != nil {
			if paygate.ErrorCode(aerr) != paygate.CodeUnauthorized {
				s.fail(w, r, aerr)
				return
			}
			st.authed = false
			s.cfg.Auth.Forget(header)
			s.refuse(w, r, aerr)
			return
		}
		st.unverified = false
	}
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
	serve(w, r, key, ids)
}

// refuse answers a request whose API key failed authentication (err):
// 401, or 429 when its client address is over its budget of failed
// authentications (decisions §6).
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, err error) {
	// A key that only seemed known (knownPayer) had its rate limit
	// charged: an answer to a request without a valid key says nothing of
	// it.
	h := w.Header()
	h.Del("X-RateLimit-Limit")
	h.Del("X-RateLimit-Remaining")
	h.Del("X-RateLimit-Reset")
	d, lerr := s.cfg.Limiter.Allow(r.Context(), "unauth:"+clientIP(r), s.cfg.RateLimitUnauthenticated)
	if lerr == nil && !d.Allowed {
		h.Set("Retry-After", retryAfter(d.RetryAfter))
		s.writeError(w, r, paygate.Errorf(paygate.CodeRateLimited, "", "too many failed authentications from this address"))
		return
	}
	s.writeError(w, r, publicError(err))
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
