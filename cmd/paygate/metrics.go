package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/paygate/paygate/internal/metrics"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/provider"
)

// defaultDemoMetricsAddr is where demo serves its metrics (decisions §16):
// Prometheus's customary port range, on loopback.
const defaultDemoMetricsAddr = "127.0.0.1:9464"

// metricsFlag registers --metrics-addr (env PAYGATE_METRICS_ADDR): off by
// default for serve, defaultDemoMetricsAddr for demo.
func metricsFlag(fs *flagSet, p *string) {
	def, usage := "", "`host:port` serving Prometheus metrics at GET /metrics on a listener of its own (default: off)"
	if fs.name == "demo" {
		def, usage = defaultDemoMetricsAddr, "`host:port` serving Prometheus metrics at GET /metrics on a listener of its own; empty for none"
	}
	fs.StringVar(p, "metrics-addr", def, usage)
	fs.envFlags = append(fs.envFlags, "metrics-addr")
}

// checkMetricsAddr accepts "" (off) or host:port with a port from 0 to
// 65535. Any host may be given: Prometheus usually scrapes from another
// machine, and the series hold no merchant's data.
func checkMetricsAddr(addr string) error {
	if addr == "" {
		return nil
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--metrics-addr %q must be host:port", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("--metrics-addr %q: port must be a number from 0 to 65535", addr)
	}
	return nil
}

// startMetrics returns serve's metrics, with the store's pools and outbox
// among them, served at GET /metrics on their own listener at addr until
// stop is called. With addr "" metrics are off: it returns a nil
// *metrics.Metrics (every hook then records nothing) and a stop that does
// nothing.
func startMetrics(ctx context.Context, addr string, st paygate.Store, log *slog.Logger) (m *metrics.Metrics, stop func(), err error) {
	if addr == "" {
		return nil, func() {}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("metrics: listen on %s: %w (choose another with --metrics-addr, or --metrics-addr= for none)", addr, err)
	}
	m = metrics.New(log)
	m.WatchStore(st)
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("metrics server stopped", "error", err.Error())
		}
	}()
	log.Info("metrics listening", "addr", ln.Addr().String())
	stop = func() {
		// A scrape in progress is cut short: the process is stopping, and
		// the last scrape Prometheus gets is the one before.
		_ = srv.Close()
		<-done
	}
	return m, stop, nil
}

// observeRouter has the router report charges and breaker states to m, and
// creates the payment series of every configured provider at 0. Nothing
// happens when m is nil (metrics off).
func observeRouter(m *metrics.Metrics, router *provider.Router) {
	if m == nil {
		return
	}
	router.SetMetrics(m)
	for _, s := range router.Statuses() {
		m.KnownProvider(s.Mode, s.ID)
	}
}
