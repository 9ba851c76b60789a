package main

import (
	"strings"
	"testing"
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
