package main

import (
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/provider"
)

// TestServeServingFlags checks --max-connections and --trusted-proxies
// (decisions §15): defaults, the environment, flags over it, and usage
// errors (exit 2) for bad values.
func TestServeServingFlags(t *testing.T) {
	t.Parallel()
	var cfg serveConfig
	var called bool
	cliRunServe(t, nil, captureServe(&cfg, &called), "serve").mustSucceed(t)
	if cfg.MaxConnections != 4096 || len(cfg.TrustedProxies) != 0 {
		t.Errorf("defaults: max connections %d, trusted proxies %q", cfg.MaxConnections, cfg.TrustedProxies)
	}
	env := map[string]string{"PAYGATE_MAX_CONNECTIONS": "10", "PAYGATE_TRUSTED_PROXIES": "10.0.0.0/8, 192.0.2.1,2001:db8::1"}
	cliRunServe(t, env, captureServe(&cfg, &called), "serve").mustSucceed(t)
	if cfg.MaxConnections != 10 || cfg.TrustedProxies.String() != "10.0.0.0/8,192.0.2.1/32,2001:db8::1/128" {
		t.Errorf("from the environment: max connections %d, trusted proxies %q", cfg.MaxConnections, cfg.TrustedProxies)
	}
	if s := cfg.String(); !strings.Contains(s, "maxConnections=10") || !strings.Contains(s, "trustedProxies=10.0.0.0/8,192.0.2.1/32,2001:db8::1/128") {
		t.Errorf("the logged configuration does not show them: %s", s)
	}
	cliRunServe(t, env, captureServe(&cfg, &called), "serve", "--max-connections", "2", "--trusted-proxies", "127.0.0.1").mustSucceed(t)
	if cfg.MaxConnections != 2 || cfg.TrustedProxies.String() != "127.0.0.1/32" {
		t.Errorf("flags over the environment: max connections %d, trusted proxies %q", cfg.MaxConnections, cfg.TrustedProxies)
	}
	for _, c := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"ErrProxyFlag", nil, []string{"serve", "--trusted-proxies", "10.0.0.0/33"}, "--trusted-proxies"},
		{"ErrProxyWord", nil, []string{"serve", "--trusted-proxies", "proxy.internal"}, "--trusted-proxies"},
		{"ErrProxyEnv", map[string]string{"PAYGATE_TRUSTED_PROXIES": "nonsense"}, []string{"serve"}, "PAYGATE_TRUSTED_PROXIES"},
		{"ErrMaxConnectionsZero", nil, []string{"serve", "--max-connections", "0"}, "--max-connections"},
		{"ErrMaxConnectionsWord", nil, []string{"serve", "--max-connections", "many"}, "--max-connections"},
		{"ErrMaxConnectionsEnv", map[string]string{"PAYGATE_MAX_CONNECTIONS": "-1"}, []string{"serve"}, "--max-connections"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cliRun(t, c.env, c.args...).mustFail(t, 2, c.want)
		})
	}
	help := cliRun(t, nil, "serve", "--help").mustSucceed(t)
	for _, flag := range []string{"--max-connections", "--trusted-proxies"} {
		if !strings.Contains(help.stdout, flag) {
			t.Errorf("serve --help does not document %s", flag)
		}
	}
}

// TestServeProductionFlags checks the flags of decisions §16: TLS, log
// format, drain delay and shutdown timeout; defaults, the environment,
// flags over it, and the base URL's default scheme under TLS.
func TestServeProductionFlags(t *testing.T) {
	t.Parallel()
	var cfg serveConfig
	var called bool
	cliRunServe(t, nil, captureServe(&cfg, &called), "serve").mustSucceed(t)
	if cfg.TLSCert != "" || cfg.TLSKey != "" || cfg.LogFormat != "" || cfg.DrainDelay != 5*time.Second || cfg.ShutdownTimeout != 30*time.Second {
		t.Errorf("defaults: %s", cfg)
	}
	env := map[string]string{
		"PAYGATE_TLS_CERT": "/etc/paygate/tls.crt", "PAYGATE_TLS_KEY": "/etc/paygate/tls.key",
		"PAYGATE_LOG_FORMAT": "TEXT", "PAYGATE_DRAIN_DELAY": "200ms", "PAYGATE_SHUTDOWN_TIMEOUT": "1m",
		"PAYGATE_ADDR": "0.0.0.0:8443",
	}
	cliRunServe(t, env, captureServe(&cfg, &called), "serve").mustSucceed(t)
	if cfg.TLSCert != "/etc/paygate/tls.crt" || cfg.TLSKey != "/etc/paygate/tls.key" || cfg.LogFormat != "text" ||
		cfg.DrainDelay != 200*time.Millisecond || cfg.ShutdownTimeout != time.Minute {
		t.Errorf("from the environment: %s", cfg)
	}
	if cfg.BaseURL != "https://0.0.0.0:8443" {
		t.Errorf("base URL under TLS %q, want https://0.0.0.0:8443", cfg.BaseURL)
	}
	if s := cfg.String(); !strings.Contains(s, "tlsCert=/etc/paygate/tls.crt") || !strings.Contains(s, "drainDelay=200ms") {
		t.Errorf("the logged configuration does not show them: %s", s)
	}
	cliRunServe(t, env, captureServe(&cfg, &called), "serve", "--log-format", "json", "--drain-delay", "0s", "--base-url", "https://pay.example.com").mustSucceed(t)
	if cfg.LogFormat != "json" || cfg.DrainDelay != 0 || cfg.BaseURL != "https://pay.example.com" {
		t.Errorf("flags over the environment: %s", cfg)
	}
	cliRun(t, map[string]string{"PAYGATE_TLS_KEY": "k.pem"}, "serve").mustFail(t, 2, "--tls-cert and --tls-key go together")
	cliRun(t, map[string]string{"PAYGATE_DRAIN_DELAY": "soon"}, "serve").mustFail(t, 2, "PAYGATE_DRAIN_DELAY")
}

// TestLiveOverPlainHTTP checks when serve warns that live providers are
// served over plain HTTP (decisions §16).
func TestLiveOverPlainHTTP(t *testing.T) {
	t.Parallel()
	const withLive = `
providers:
  - {id: stripe-live, kind: stripe, mode: live, credentials: {secret_key: STRIPE_LIVE_KEY}}
routes:
  live:
    default: [stripe-live]
`
	live, err := provider.ParseConfig("paygate.yaml", []byte(withLive), func(string) (string, bool) { return "sk_live_x", true })
	if err != nil {
		t.Fatal(err)
	}
	none, err := provider.ParseConfig("paygate.yaml", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		cfg     serveConfig
		routing *provider.Config
		warn    bool
	}{
		{"LivePlainHTTP", serveConfig{BaseURL: "http://10.0.0.5:8080"}, live, true},
		{"LiveBehindTLSProxy", serveConfig{BaseURL: "https://pay.example.com"}, live, false},
		{"LiveWithTLS", serveConfig{BaseURL: "http://pay.example.com", TLSCert: "c", TLSKey: "k"}, live, false},
		{"NoLiveProviders", serveConfig{BaseURL: "http://127.0.0.1:8080"}, none, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := liveOverPlainHTTP(c.cfg, c.routing)
			if (got != "") != c.warn {
				t.Fatalf("warning %q, want one: %v", got, c.warn)
			}
			if c.warn && (!strings.Contains(got, "stripe-live") || !strings.Contains(got, c.cfg.BaseURL) || !strings.Contains(got, "--tls-cert")) {
				t.Errorf("the warning does not name the providers, the base URL and the remedy: %q", got)
			}
		})
	}
}
