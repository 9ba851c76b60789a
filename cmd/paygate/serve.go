package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/mattn/go-isatty"

	"github.com/paygate/paygate/internal/auth"
	"github.com/paygate/paygate/internal/cardfields"
	"github.com/paygate/paygate/internal/connlimit"
	"github.com/paygate/paygate/internal/dashboard"
	"github.com/paygate/paygate/internal/httpapi"
	"github.com/paygate/paygate/internal/idempotency"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/payment"
	"github.com/paygate/paygate/internal/provider"
	"github.com/paygate/paygate/internal/provider/connector"
	"github.com/paygate/paygate/internal/ratelimit"
	"github.com/paygate/paygate/internal/store"
	"github.com/paygate/paygate/internal/tlscert"
	"github.com/paygate/paygate/internal/webhook"
)

// maxHeaderBytes is the largest request head (request line and header
// fields) served: one byte more is answered 431 (decisions §15). net/http
// allows MaxHeaderBytes plus 4096 bytes of read-ahead slack before it
// answers 431, so the server is given the limit less that slack.
const (
	maxHeaderBytes     = 64 << 10
	netHTTPHeaderSlack = 4096
)

// newLogger returns the logger every part of serve writes to: JSON lines,
// or text when format says so (--log-format; logFormat resolves "").
func newLogger(w io.Writer, level, format string) *slog.Logger {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		lv = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: lv}
	if logFormat(w, format) == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// logFormat resolves --log-format: without one, text for a person at a
// terminal and JSON for everything else (a file, a pipe, a log collector).
func logFormat(w io.Writer, format string) string {
	if format != "" {
		return format
	}
	if f, ok := w.(*os.File); ok && isatty.IsTerminal(f.Fd()) {
		return "text"
	}
	return "json"
}

// openStore opens serve's database. Its commits that write outbox events
// wake the dispatcher attached to the returned Waker. The store is the
// engine's own, not a decorator around it, so that every optional interface
// the engine implements reaches the code it is handed to.
func openStore(ctx context.Context, databaseURL string) (paygate.Store, *webhook.Waker, error) {
	waker := &webhook.Waker{}
	st, err := store.OpenWith(ctx, databaseURL, store.Options{OnEvents: waker.Wake})
	return st, waker, err
}

// serve runs the gateway until ctx is cancelled, then drains HTTP, stops the
// background jobs and closes the store, in that order.
func serve(ctx context.Context, cfg serveConfig, stdout, stderr io.Writer) error {
	// The card vault's keys first: PostgreSQL without one is refused
	// before anything else happens, with one line (vault.go).
	vlt, vaultSrc, err := openVault(cfg.DatabaseURL, cfg.VaultKeys, true)
	if err != nil {
		return err
	}
	cfg.LogFormat = logFormat(stderr, cfg.LogFormat)
	log := newLogger(stderr, cfg.LogLevel, cfg.LogFormat)
	log.Info("starting paygate", "config", cfg)
	// Traces (tracing.go), before anything that starts spans is built; the
	// deferred stop flushes them last, after HTTP and the workers stopped.
	stopTracing, err := startTracing(ctx, cfg.Traces, log)
	if err != nil {
		return err
	}
	defer stopTracing()
	// Providers and routes (--config): any mistake stops serve, naming the
	// line (providers.go).
	routing, err := loadRouting(cfg.ConfigFile)
	if err != nil {
		return err
	}
	// HTTPS (--tls-cert, --tls-key): the pair is read now, and again
	// whenever its files change (package tlscert).
	var certs *tlscert.Pair
	if cfg.TLSCert != "" {
		if certs, err = tlscert.Load(cfg.TLSCert, cfg.TLSKey, tlscert.Options{Logger: log}); err != nil {
			return err
		}
	}

	st, waker, err := openStore(ctx, cfg.DatabaseURL)
	if err != nil {
		return fmt.Errorf("open database: %w", err)
	}
	defer st.Close()
	if err := logVault(ctx, log, st, vlt, vaultSrc); err != nil {
		return err
	}
	if err := sealWebhookSecrets(ctx, log, st, vlt); err != nil {
		return err
	}
	// Prometheus metrics on their own listener (--metrics-addr; metrics.go).
	mx, stopMetrics, err := startMetrics(ctx, cfg.MetricsAddr, st, log)
	if err != nil {
		return err
	}
	defer stopMetrics()

	limiter, closeLimiter, err := ratelimit.Open(cfg.RedisURL, log)
	if err != nil {
		return fmt.Errorf("rate limiter: %w", err)
	}
	defer closeLimiter()
	limiter = mx.Limiter(limiter) // counts refusals; itself when metrics are off

	// Listen before wiring: with port 0 the derived base URL names the port
	// actually bound, and the payment service puts the base URL in 3-D
	// Secure links.
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	defer ln.Close()
	if cfg.BaseURL == cfg.scheme()+"://"+cfg.Addr {
		cfg.BaseURL = cfg.scheme() + "://" + ln.Addr().String()
	}
	liveWarning := liveOverPlainHTTP(cfg, routing)
	if liveWarning != "" {
		log.Warn(liveWarning)
	}
	// At most --max-connections open at once; more wait to be accepted.
	ln = connlimit.Listener(ln, cfg.MaxConnections)

	clock := paygate.SystemClock{}
	// The router: breakers, drain states polled from the database, sandboxes
	// keeping their ledger in it (providers.go).
	// Success-rate routes keep their scores in Redis when --redis-url is
	// set, in process otherwise (providers.go).
	scorer, closeScorer, err := openScorer(cfg.RedisURL, clock, log, mx)
	if err != nil {
		return err
	}
	defer closeScorer()
	router, routingWatcher, err := startRouting(ctx, routing, st, clock, log, scorer)
	if err != nil {
		return err
	}
	defer routingWatcher.Stop()
	observeRouter(mx, router)
	// Webhook delivery: the dispatcher sends what the outbox holds, at once
	// after a local commit that wrote events (the store's hook, openStore),
	// and by polling for the rest (other nodes' events, retries, deliveries
	// due while no node ran).
	dispatcher := webhook.NewDispatcher(webhook.Config{
		Store: st, Clock: clock, Logger: log, Schedule: cfg.WebhookRetrySchedule, Vault: vlt,
		Policy:  webhookPolicy(cfg.AllowPrivateTestWebhooks),
		Metrics: mx,
	})
	waker.Attach(dispatcher)
	// The card-testing guard (decisions §20): counters shared through
	// Redis when --redis-url is set, in process otherwise (guard.go).
	cardGuard, closeGuard, err := openGuard(cfg.RedisURL, st, clock, log, mx)
	if err != nil {
		return err
	}
	defer closeGuard()
	payments := payment.New(payment.Config{
		Store:   st,
		Router:  router,
		Clock:   clock,
		Encoder: httpapi.Encoder{},
		Logger:  log,
		Vault:   vlt,
		ThreeDS: payment.ThreeDSConfig{BaseURL: cfg.BaseURL, ChallengeTTL: cfg.ThreeDSChallengeTTL},
		Metrics: mx,
		Guard:   cardGuard,
	})

	refunds := payments.NewRefundWorker(time.Second, 30*time.Second)
	if err := refunds.Start(ctx); err != nil {
		return fmt.Errorf("start refund worker: %w", err)
	}
	defer refunds.Stop()
	recovery := payments.NewRecovery(cfg.RecoveryInterval)
	if err := recovery.Start(ctx); err != nil {
		return fmt.Errorf("start payment recovery: %w", err)
	}
	defer recovery.Stop()
	purger := idempotency.NewPurger(st, clock, time.Hour, log)
	if err := purger.Start(ctx); err != nil {
		return fmt.Errorf("start idempotency purge: %w", err)
	}
	defer purger.Stop()
	// Expired card tokens are deleted, their sealed cards with them
	// (decisions §19); used ones were erased when used.
	sweeper := payments.NewTokenSweeper(payment.TokenSweeperInterval)
	if err := sweeper.Start(ctx); err != nil {
		return fmt.Errorf("start card token sweeper: %w", err)
	}
	defer sweeper.Stop()
	expirer := payments.NewThreeDSExpirer(payment.ExpiryInterval(cfg.ThreeDSChallengeTTL))
	if err := expirer.Start(ctx); err != nil {
		return fmt.Errorf("start 3-D Secure expiry: %w", err)
	}
	defer expirer.Stop()
	if err := dispatcher.Start(ctx); err != nil {
		return fmt.Errorf("start webhook dispatcher: %w", err)
	}
	defer dispatcher.Stop()
	// When API keys were last used: noted in memory, written every minute,
	// and once more on shutdown (after HTTP has drained, before the store
	// closes).
	usage := auth.NewUsageRecorder(st, log)
	usageCtx, stopUsage := context.WithCancel(context.WithoutCancel(ctx))
	usageDone := make(chan struct{})
	go func() {
		defer close(usageDone)
		usage.Run(usageCtx)
	}()
	defer func() {
		stopUsage()
		<-usageDone
	}()

	// The merchant dashboard under /dashboard/ (issue 8): the same store,
	// payment service and limiter as the API.
	dashCfg := dashboard.Config{
		Store:       st,
		Payments:    payments,
		Limiter:     limiter,
		Clock:       clock,
		Logger:      log,
		BaseURL:     cfg.BaseURL,
		SessionIdle: cfg.DashboardSessionIdle,
		SessionMax:  cfg.DashboardSessionMax,
		RequireMFA:  cfg.RequireMFA,
		Wake:        dispatcher.Wake,
		Vault:       vlt,
		Webhooks:    webhookPolicy(cfg.AllowPrivateTestWebhooks),
		LiveWarning: liveWarning,
	}
	// The live Overview warns when no provider serves live payments.
	dashCfg.LiveProviders = liveProviders(router)
	dash := dashboard.New(dashCfg)

	api := httpapi.New(httpapi.Config{
		Store:                    st,
		Payments:                 payments,
		Auth:                     &auth.Authenticator{Store: st, Clock: clock, Usage: usage},
		Limiter:                  limiter,
		Clock:                    clock,
		Logger:                   log,
		RateLimitTest:            cfg.RateLimitTest,
		RateLimitLive:            cfg.RateLimitLive,
		RateLimitUnauthenticated: cfg.RateLimitUnauthenticated,
		RateLimitTokens:          cfg.RateLimitTokens,
		RateLimitTokensPerAddr:   cfg.RateLimitTokensPerAddr,
		Dashboard:                dash,
		TrustedProxies:           cfg.TrustedProxies,
		Endpoints:                provider.Endpoints(connector.Services{Payments: payments, Logger: log}),
		Metrics:                  mx,
		CardFields: cardfields.New(cardfields.Config{Store: st, Clock: clock, Logger: log,
			Limiter: limiter, UnauthenticatedLimit: cfg.RateLimitUnauthenticated}),
	})

	// Requests run on a context of their own: the signal that stops serve
	// does not cut a payment short (stopServing).
	reqCtx, abortRequests := context.WithCancel(context.WithoutCancel(ctx))
	defer abortRequests()
	var handler http.Handler = api
	if certs != nil {
		handler = tlscert.HSTS(handler)
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      90 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    maxHeaderBytes - netHTTPHeaderSlack,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return reqCtx },
	}
	if certs != nil {
		srv.TLSConfig = certs.ServerConfig()
	}
	if cfg.PprofAddr != "" {
		addr, stopPprof, err := startPprof(ctx, cfg.PprofAddr, log)
		if err != nil {
			return fmt.Errorf("pprof: %w", err)
		}
		defer stopPprof()
		log.Info("pprof listening", "addr", addr)
	}
	errc := make(chan error, 1)
	go func() {
		if certs != nil {
			errc <- srv.ServeTLS(ln, "", "") // the pair comes from TLSConfig
			return
		}
		errc <- srv.Serve(ln)
	}()
	log.Info("listening", "addr", ln.Addr().String(), "base_url", cfg.BaseURL, "tls", certs != nil)

	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	if err := stopServing(srv, api, errc, cfg, log, abortRequests); err != nil {
		return err
	}
	// The deferred stops run now, in reverse order: the usage recorder's
	// last write, the dispatcher and the jobs, then the store.
	log.Info("stopped")
	return nil
}

// stopServing is serve's graceful stop of HTTP (decisions §16). /readyz
// answers 503 at once, and answers close their connections, so that the
// load balancer sends new requests to other nodes; during the drain delay
// whatever still comes is served. Then the listener closes (new connections
// are refused) and the requests in flight get the shutdown timeout to
// finish. Their context is not the signal's (serve's BaseContext), so a
// payment in flight completes; only requests still running after the
// timeout are cancelled, and recovery settles a payment cut off so, as
// after a crash. It returns once the server has stopped.
func stopServing(srv *http.Server, api *httpapi.Server, errc <-chan error, cfg serveConfig, log *slog.Logger, abortRequests context.CancelFunc) error {
	log.Info("shutting down: /readyz answers 503; new connections are accepted until the drain delay ends",
		"drain_delay", shortDuration(cfg.DrainDelay), "shutdown_timeout", shortDuration(cfg.ShutdownTimeout))
	api.Drain()
	srv.SetKeepAlivesEnabled(false)
	drain := time.NewTimer(cfg.DrainDelay)
	defer drain.Stop()
	select {
	case <-drain.C:
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	}
	log.Info("shutting down: listener closed; waiting for requests in flight")
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Warn("shutting down: requests still in flight after the shutdown timeout are cancelled", "error", err)
		abortRequests()
		_ = srv.Close()
	}
	<-errc
	return nil
}

// liveOverPlainHTTP is serve's warning when it serves live providers over
// plain HTTP and its base URL is not https (decisions §16): card numbers
// and live keys would cross the network in clear. "" when there is nothing
// to warn about.
func liveOverPlainHTTP(cfg serveConfig, routing *provider.Config) string {
	if cfg.TLSCert != "" || strings.HasPrefix(strings.ToLower(cfg.BaseURL), "https://") {
		return ""
	}
	var live []string
	for _, p := range routing.Providers {
		if p.Mode == paygate.ModeLive {
			live = append(live, p.ID)
		}
	}
	if len(live) == 0 {
		return ""
	}
	return fmt.Sprintf("Live providers (%s) are configured, but paygate serves plain HTTP and its base URL %s is not https: "+
		"card data and live keys would cross the network unencrypted. Serve HTTPS with --tls-cert and --tls-key, "+
		"or behind a TLS proxy with an https --base-url.", strings.Join(live, ", "), cfg.BaseURL)
}
