package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/paygate/paygate/internal/auth"
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
	"github.com/paygate/paygate/internal/webhook"
)

// shutdownGrace is how long in-flight requests get to finish on SIGTERM.
const shutdownGrace = 30 * time.Second

// maxHeaderBytes is the largest request head (request line and header
// fields) served: one byte more is answered 431 (decisions §15). net/http
// allows MaxHeaderBytes plus 4096 bytes of read-ahead slack before it
// answers 431, so the server is given the limit less that slack.
const (
	maxHeaderBytes     = 64 << 10
	netHTTPHeaderSlack = 4096
)

// newLogger returns the JSON logger every part of serve writes to.
func newLogger(w io.Writer, level string) *slog.Logger {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		lv = slog.LevelInfo
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: lv}))
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
	log := newLogger(stderr, cfg.LogLevel)
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

	limiter, closeLimiter, err := ratelimit.Open(cfg.RedisURL, log)
	if err != nil {
		return fmt.Errorf("rate limiter: %w", err)
	}
	defer closeLimiter()

	// Listen before wiring: with port 0 the derived base URL names the port
	// actually bound, and the payment service puts the base URL in 3-D
	// Secure links.
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	defer ln.Close()
	if cfg.BaseURL == "http://"+cfg.Addr {
		cfg.BaseURL = "http://" + ln.Addr().String()
	}
	// At most --max-connections open at once; more wait to be accepted.
	ln = connlimit.Listener(ln, cfg.MaxConnections)

	clock := paygate.SystemClock{}
	// The router: breakers, drain states polled from the database, sandboxes
	// keeping their ledger in it (providers.go).
	router, routingWatcher, err := startRouting(ctx, routing, st, clock, log)
	if err != nil {
		return err
	}
	defer routingWatcher.Stop()
	// Webhook delivery: the dispatcher sends what the outbox holds, at once
	// after a local commit that wrote events (the store's hook, openStore),
	// and by polling for the rest (other nodes' events, retries, deliveries
	// due while no node ran).
	dispatcher := webhook.NewDispatcher(webhook.Config{
		Store: st, Clock: clock, Logger: log, Schedule: cfg.WebhookRetrySchedule, Vault: vlt,
		Policy: webhookPolicy(cfg.AllowPrivateTestWebhooks),
	})
	waker.Attach(dispatcher)
	payments := payment.New(payment.Config{
		Store:   st,
		Router:  router,
		Clock:   clock,
		Encoder: httpapi.Encoder{},
		Logger:  log,
		Vault:   vlt,
		ThreeDS: payment.ThreeDSConfig{BaseURL: cfg.BaseURL, ChallengeTTL: cfg.ThreeDSChallengeTTL},
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
	dash := dashboard.New(dashboard.Config{
		Store:       st,
		Payments:    payments,
		Limiter:     limiter,
		Clock:       clock,
		Logger:      log,
		BaseURL:     cfg.BaseURL,
		SessionIdle: cfg.DashboardSessionIdle,
		SessionMax:  cfg.DashboardSessionMax,
		Wake:        dispatcher.Wake,
		Vault:       vlt,
		Webhooks:    webhookPolicy(cfg.AllowPrivateTestWebhooks),
	})

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
		Dashboard:                dash,
		TrustedProxies:           cfg.TrustedProxies,
		Endpoints:                provider.Endpoints(connector.Services{Payments: payments, Logger: log}),
	})

	srv := &http.Server{
		Handler:           api,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      90 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    maxHeaderBytes - netHTTPHeaderSlack,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
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
	go func() { errc <- srv.Serve(ln) }()
	log.Info("listening", "addr", ln.Addr().String(), "base_url", cfg.BaseURL)

	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down: draining requests")
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Warn("shutdown did not drain in time", "error", err)
	}
	<-errc
	log.Info("stopped")
	return nil
}
