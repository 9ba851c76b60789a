package main

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/paygate/paygate/internal/store"
)

func TestMetricsAddrFlag(t *testing.T) {
	t.Parallel()
	var cfg serveConfig
	var called bool
	cliRunServe(t, nil, captureServe(&cfg, &called), "serve").mustSucceed(t)
	if cfg.MetricsAddr != "" {
		t.Errorf("serve: metrics at %q by default, want off", cfg.MetricsAddr)
	}
	db := sqliteURL(t)
	r := cliRunServe(t, nil, captureServe(&cfg, &called), "demo", "--database-url", db).mustSucceed(t)
	if cfg.MetricsAddr != "127.0.0.1:9464" {
		t.Errorf("demo: metrics at %q by default, want 127.0.0.1:9464", cfg.MetricsAddr)
	}
	if !strings.Contains(r.stdout, "http://127.0.0.1:9464/metrics") {
		t.Errorf("demo does not say where its metrics are:\n%s", r.stdout)
	}
	r = cliRunServe(t, nil, captureServe(&cfg, &called), "demo", "--database-url", db, "--metrics-addr=").mustSucceed(t)
	if cfg.MetricsAddr != "" || strings.Contains(r.stdout, "/metrics") {
		t.Errorf("demo --metrics-addr=: metrics at %q, output:\n%s", cfg.MetricsAddr, r.stdout)
	}
	env := map[string]string{"PAYGATE_METRICS_ADDR": "0.0.0.0:9100"}
	cliRunServe(t, env, captureServe(&cfg, &called), "serve").mustSucceed(t)
	if cfg.MetricsAddr != "0.0.0.0:9100" || !strings.Contains(cfg.String(), "metricsAddr=0.0.0.0:9100") {
		t.Errorf("from the environment: %q (%s)", cfg.MetricsAddr, cfg)
	}
	cliRunServe(t, env, captureServe(&cfg, &called), "serve", "--metrics-addr", ":9200").mustSucceed(t)
	if cfg.MetricsAddr != ":9200" {
		t.Errorf("the flag over the environment: %q", cfg.MetricsAddr)
	}
	for _, bad := range []string{"9464", "localhost", "127.0.0.1:http", "127.0.0.1:70000"} {
		cliRun(t, nil, "serve", "--metrics-addr", bad).mustFail(t, 2, "--metrics-addr")
	}
	for _, cmd := range []string{"serve", "demo"} {
		if help := cliRun(t, nil, cmd, "--help").mustSucceed(t); !strings.Contains(help.stdout, "--metrics-addr") {
			t.Errorf("%s --help does not document --metrics-addr", cmd)
		}
	}
}

// syncBuffer is a log destination safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestStartMetrics(t *testing.T) {
	t.Parallel()
	st, err := store.Open(t.Context(), sqliteURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var logs syncBuffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))

	m, stop, err := startMetrics(t.Context(), "", st, log)
	if err != nil || m != nil {
		t.Fatalf("metrics off: %v, %v", m, err)
	}
	stop()

	m, stop, err = startMetrics(t.Context(), "127.0.0.1:0", st, log)
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Msg, Addr string
	}
	for _, line := range strings.Split(logs.String(), "\n") {
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "metrics listening" {
			break
		}
	}
	if rec.Msg != "metrics listening" {
		t.Fatalf("no log line says where the metrics listen:\n%s", logs.String())
	}
	m.Replayed()
	res, err := http.Get("http://" + rec.Addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, want := range []string{"paygate_idempotent_replays_total 1", "paygate_webhook_outbox_pending 0", `paygate_db_connections_in_use{pool="read"}`} {
		if res.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("GET /metrics: %d, lacks %q", res.StatusCode, want)
		}
	}
	// Taken: one line that says what to do.
	if _, _, err := startMetrics(t.Context(), rec.Addr, st, log); err == nil || !strings.Contains(err.Error(), "--metrics-addr") {
		t.Errorf("a second listener on %s: %v", rec.Addr, err)
	}
	stop()
	if c, err := net.Dial("tcp", rec.Addr); err == nil {
		c.Close()
		t.Error("the metrics listener is still open after stop")
	}
}
