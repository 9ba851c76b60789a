package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/paygate/paygate/internal/auth"
	"github.com/paygate/paygate/internal/httpapi"
	"github.com/paygate/paygate/internal/idempotency"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/payment"
	"github.com/paygate/paygate/internal/provider"
	"github.com/paygate/paygate/internal/ratelimit"
	"github.com/paygate/paygate/internal/store"
)

// shutdownGrace is how long in-flight requests get to finish on SIGTERM.
const shutdownGrace = 30 * time.Second

// newLogger returns the JSON logger every part of serve writes to.
func newLogger(w io.Writer, level string) *slog.Logger {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		lv = slog.LevelInfo
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: lv}))
}

// serve runs the gateway until ctx is cancelled, then drains HTTP, stops the
// background jobs and closes the store, in that order.
func serve(ctx context.Context, cfg serveConfig, stdout, stderr io.Writer) error {
	log := newLogger(stderr, cfg.LogLevel)
	log.Info("starting paygate", "config", cfg)

	st, err := store.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return fmt.Errorf("open database: %w", err)
	}
	defer st.Close()

	fresh := make([]byte, 32)
	if _, err := rand.Read(fresh); err != nil {
		return fmt.Errorf("generate fingerprint key: %w", err)
	}
	fpKey, err := st.InstanceSecret(ctx, "card-fingerprint-key", fresh)
	if err != nil {
		return fmt.Errorf("load fingerprint key: %w", err)
	}

	limiter, closeLimiter, err := ratelimit.Open(cfg.RedisURL, log)
	if err != nil {
		return fmt.Errorf("rate limiter: %w", err)
	}
	defer closeLimiter()

	clock := paygate.SystemClock{}
	payments := payment.New(payment.Config{
		Store:          st,
		Router:         provider.Default(),
		Clock:          clock,
		Answers:        httpapi.Answers{},
		Logger:         log,
		FingerprintKey: fpKey,
	})

	refunds := payments.NewRefundWorker(time.Second, 30*time.Second)
	if err := refunds.Start(ctx); err != nil {
		return fmt.Errorf("start refund worker: %w", err)
	}
	defer refunds.Stop()
	purger := idempotency.NewPurger(st, clock, time.Hour, log)
	if err := purger.Start(ctx); err != nil {
		return fmt.Errorf("start idempotency purge: %w", err)
	}
	defer purger.Stop()

	api := httpapi.New(httpapi.Config{
		Store:                    st,
		Payments:                 payments,
		Auth:                     &auth.Authenticator{Store: st, Clock: clock},
		Limiter:                  limiter,
		Clock:                    clock,
		Logger:                   log,
		RateLimitTest:            cfg.RateLimitTest,
		RateLimitLive:            cfg.RateLimitLive,
		RateLimitUnauthenticated: cfg.RateLimitUnauthenticated,
	})

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	srv := &http.Server{
		Handler:           api,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      90 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	if cfg.BaseURL == "http://"+cfg.Addr {
		// The base URL was derived from an address with port 0: name the
		// port actually bound, so links the service hands out work.
		cfg.BaseURL = "http://" + ln.Addr().String()
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
