package e2e

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/testenv"
)

// Prometheus metrics (decisions §16): serve --metrics-addr serves them on a
// listener of its own.

// metricsURL returns the /metrics URL of a gateway started with
// --metrics-addr, from its log line "metrics listening" (logged before
// "listening", so it is there once startGateway returns).
func (g *gateway) metricsURL() string {
	g.t.Helper()
	sc := bufio.NewScanner(strings.NewReader(g.Logs()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var rec struct {
			Msg  string `json:"msg"`
			Addr string `json:"addr"`
		}
		if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == "metrics listening" {
			return "http://" + rec.Addr + "/metrics"
		}
	}
	g.t.Fatalf("the gateway did not log where its metrics listen:\n%s", g.Logs())
	return ""
}

// scrape reads /metrics and returns every series' value, keyed as the text
// format writes the series (labels sorted by name, as promhttp writes
// them): name{a="x",b="y"}.
func scrape(t *testing.T, u string) map[string]float64 {
	t.Helper()
	res, err := client.Get(u)
	if err != nil {
		t.Fatalf("scrape %s: %v", u, err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("scrape %s: %d %s", u, res.StatusCode, body)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if i < 0 || err != nil {
			t.Fatalf("scrape: malformed line %q", line)
		}
		out[line[:i]] = v
	}
	return out
}

// TestMetricsSeries drives a gateway through the things §16 counts (a
// capture, a decline, a replay, a refund, webhook attempts that fail, a
// refused authentication, an unknown path) and reads each series back.
func TestMetricsSeries(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engine) {
		dbURL := e.url(t)
		m := createMerchant(t, dbURL, "Metrics")
		rcv := newReceiver(t)
		rcv.setAnswer(func(string, int) int { return http.StatusInternalServerError })
		setWebhook(t, dbURL, m.MerchantID, "test", rcv.url)
		// A failed attempt waits an hour for the next: it stays pending.
		g := startGateway(t, dbURL, "--metrics-addr", "127.0.0.1:0", "--webhook-retry-schedule", "0s,1h",
			"--rate-limit-unauthenticated", "1")
		mu := g.metricsURL()

		body := paymentBody("4242424242424242", "10.00", "EUR")
		first := g.call(http.MethodPost, "/v1/payments", m.TestSecretKey, body, "Idempotency-Key", "metrics-1")
		expect(t, first, http.StatusCreated)
		expect(t, g.call(http.MethodPost, "/v1/payments", m.TestSecretKey, body, "Idempotency-Key", "metrics-1"), http.StatusCreated)
		expect(t, g.call(http.MethodPost, "/v1/payments", m.TestSecretKey, paymentBody("4000000000000002", "10.00", "EUR")), http.StatusBadRequest, "CARD_DECLINED")
		pid := first.Data()["id"].(string)
		expect(t, g.call(http.MethodPost, "/v1/refunds", m.TestSecretKey, map[string]any{"transactionId": pid, "amount": "1.00", "currency": "EUR"}), http.StatusCreated)
		expect(t, g.call(http.MethodGet, "/v1/payments/"+pid, "smtgw_sk_test_not-a-key", nil), http.StatusUnauthorized)
		expect(t, g.call(http.MethodGet, "/v1/payments/"+pid, "smtgw_sk_test_not-a-key", nil), http.StatusTooManyRequests)
		expect(t, g.call(http.MethodGet, "/no/such/path", "", nil), http.StatusNotFound)

		// Four events (captured, failed, refund created, refund
		// succeeded), each attempted once and left pending.
		var got map[string]float64
		eventually(t, 30*time.Second, "the refund and four webhook attempts", func() bool {
			got = scrape(t, mu)
			return got[`paygate_refunds_total{mode="test",status="succeeded"}`] == 1 &&
				got[`paygate_webhook_deliveries_total{result="retry"}`] == 4
		})
		for series, want := range map[string]float64{
			`paygate_http_requests_total{code="201",method="POST",route="/v1/payments"}`:                                   2,
			`paygate_http_requests_total{code="400",method="POST",route="/v1/payments"}`:                                   1,
			`paygate_http_requests_total{code="201",method="POST",route="/v1/refunds"}`:                                    1,
			`paygate_http_requests_total{code="401",method="GET",route="/v1/payments/{id}"}`:                               1,
			`paygate_http_requests_total{code="429",method="GET",route="/v1/payments/{id}"}`:                               1,
			`paygate_http_requests_total{code="404",method="GET",route="unmatched"}`:                                       1,
			`paygate_http_request_duration_seconds_count{method="POST",route="/v1/payments"}`:                              3,
			`paygate_payments_total{mode="test",provider="sandbox-eu",status="captured"}`:                                  1,
			`paygate_payments_total{mode="test",provider="sandbox-eu",status="failed"}`:                                    1,
			`paygate_payments_total{mode="test",provider="sandbox-us",status="captured"}`:                                  0,
			`paygate_refunds_total{mode="test",status="created"}`:                                                          1,
			`paygate_refunds_total{mode="test",status="pending"}`:                                                          1,
			`paygate_refunds_total{mode="test",status="succeeded"}`:                                                        1,
			`paygate_provider_request_duration_seconds_count{operation="charge",outcome="success",provider="sandbox-eu"}`:  1,
			`paygate_provider_request_duration_seconds_count{operation="charge",outcome="declined",provider="sandbox-eu"}`: 1,
			`paygate_provider_request_duration_seconds_count{operation="refund",outcome="success",provider="sandbox-eu"}`:  1,
			`paygate_provider_circuit_state{provider="sandbox-eu"}`:                                                        0,
			`paygate_webhook_deliveries_total{result="succeeded"}`:                                                         0,
			`paygate_webhook_outbox_pending`:                                                                               4,
			`paygate_idempotent_replays_total`:                                                                             1,
			`paygate_rate_limited_total{reason="failed_auth"}`:                                                             1,
			`paygate_rate_limited_total{reason="api_key"}`:                                                                 0,
			`paygate_recovery_resolved_total{status="captured"}`:                                                           0,
			`paygate_card_testing_blocked_total{rule="ip_cards"}`:                                                          0,
		} {
			v, ok := got[series]
			if !ok {
				t.Errorf("no series %s", series)
			} else if v != want {
				t.Errorf("%s = %v, want %v", series, v, want)
			}
		}
		pools := []string{"read", "write"}
		if e.name == "postgres" {
			pools = []string{"main"}
		}
		for _, p := range pools {
			for _, name := range []string{"paygate_db_connections_in_use", "paygate_db_wait_total", "paygate_db_wait_seconds_total"} {
				if _, ok := got[name+`{pool="`+p+`"}`]; !ok {
					t.Errorf("no %s of pool %s", name, p)
				}
			}
		}
		for _, name := range []string{"go_goroutines", "process_cpu_seconds_total"} {
			if _, ok := got[name]; !ok {
				t.Errorf("no %s: the Go and process collectors are missing", name)
			}
		}
		// The listener serves nothing else.
		for _, c := range []struct{ method, path string }{{"GET", "/"}, {"GET", "/v1/payments"}, {"POST", "/metrics"}} {
			req, _ := http.NewRequest(c.method, strings.TrimSuffix(mu, "/metrics")+c.path, nil)
			res, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusNotFound && res.StatusCode != http.StatusMethodNotAllowed {
				t.Errorf("%s %s on the metrics listener: %d", c.method, c.path, res.StatusCode)
			}
		}
	})
}

// TestMetricsCaptureVoidRecovery counts what the first test does not: a
// capture, a void, and a payment whose outcome was unknown (the timeout
// card) finished by the recovery job after asking the provider.
func TestMetricsCaptureVoidRecovery(t *testing.T) {
	t.Parallel()
	_, m, g := startWithMerchant(t, sqliteEngine(), "Metrics recovery", "--metrics-addr", "127.0.0.1:0", "--recovery-interval", "1s")
	mu := g.metricsURL()
	key := m.TestSecretKey
	for _, op := range []string{"capture", "void"} {
		r := g.call(http.MethodPost, "/v1/payments", key, paymentBody("4000000000000077", "10.00", "EUR"))
		expect(t, r, http.StatusCreated)
		expect(t, g.call(http.MethodPost, "/v1/payments/"+r.Data()["id"].(string)+"/"+op, key, map[string]any{}), http.StatusOK)
	}
	expect(t, g.call(http.MethodPost, "/v1/payments", key, paymentBody("4000000000000705", "10.00", "EUR")), http.StatusAccepted)
	var got map[string]float64
	eventually(t, 20*time.Second, "the recovery of the timeout card", func() bool {
		got = scrape(t, mu)
		return got[`paygate_recovery_resolved_total{status="captured"}`] == 1
	})
	for series, want := range map[string]float64{
		`paygate_payments_total{mode="test",provider="sandbox-eu",status="authorized"}`:                                       2,
		`paygate_payments_total{mode="test",provider="sandbox-eu",status="captured"}`:                                         2, // the capture and the recovery
		`paygate_payments_total{mode="test",provider="sandbox-eu",status="voided"}`:                                           1,
		`paygate_payments_total{mode="test",provider="sandbox-eu",status="created"}`:                                          1, // the unknown outcome
		`paygate_provider_request_duration_seconds_count{operation="capture",outcome="success",provider="sandbox-eu"}`:        1,
		`paygate_provider_request_duration_seconds_count{operation="void",outcome="success",provider="sandbox-eu"}`:           1,
		`paygate_provider_request_duration_seconds_count{operation="charge",outcome="unknown_outcome",provider="sandbox-eu"}`: 1,
		`paygate_http_requests_total{code="202",method="POST",route="/v1/payments"}`:                                          1,
		`paygate_http_requests_total{code="200",method="POST",route="/v1/payments/{id}/capture"}`:                             1,
		`paygate_http_requests_total{code="200",method="POST",route="/v1/payments/{id}/void"}`:                                1,
	} {
		if v, ok := got[series]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", series, v, ok, want)
		}
	}
	// Recovery asks until the sandbox stops answering "still processing".
	if n := got[`paygate_provider_request_duration_seconds_count{operation="inquire",outcome="success",provider="sandbox-eu"}`]; n < 1 {
		t.Errorf("%v status inquiries counted, want at least one", n)
	}
}

// TestMetricsLabelsBounded fires 1,000 requests at random unknown paths
// with odd methods, twice: the second round adds no series, and nothing a
// client chose (a path, a method) appears in the scrape.
func TestMetricsLabelsBounded(t *testing.T) {
	t.Parallel()
	dbURL := sqliteEngine().url(t)
	m := createMerchant(t, dbURL, "Bounded labels")
	// Limits out of the way, so that the answers do not change between
	// the rounds (a 429 is bounded too, but would come and go).
	const unlimited = "1000000000"
	g := startGateway(t, dbURL, "--metrics-addr", "127.0.0.1:0",
		"--rate-limit-test", unlimited, "--rate-limit-unauthenticated", unlimited)
	mu := g.metricsURL()

	var tokens []string
	round := func() {
		t.Helper()
		for i := range 1000 {
			tok := randomToken()
			tokens = append(tokens, tok)
			paths := []string{
				"/" + tok,
				"/v1/" + tok + "/x",
				"/v1/payments/" + tok,
				"/dashboard/" + tok,
				"/v1/customers/" + tok + "/cards/" + tok,
			}
			methods := []string{"GET", "POST", "DELETE", "BREW", "M" + strings.ToUpper(tok), "PROPFIND"}
			path, method := paths[i%len(paths)], methods[(i/len(paths))%len(methods)]
			req, err := http.NewRequest(method, g.url+path+"?"+tok+"="+tok, nil)
			if err != nil {
				t.Fatal(err)
			}
			if i%2 == 0 {
				req.Header.Set("X-API-Key", m.TestSecretKey)
			}
			res, err := client.Do(req)
			if err != nil {
				t.Fatalf("%s %s: %v", method, path, err)
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode >= 500 {
				t.Fatalf("%s %s: %d", method, path, res.StatusCode)
			}
		}
	}
	round()
	after1 := scrape(t, mu)
	round()
	after2 := scrape(t, mu)
	if len(after2) != len(after1) {
		var added []string
		for s := range after2 {
			if _, ok := after1[s]; !ok {
				added = append(added, s)
			}
		}
		t.Errorf("the second round of 1,000 requests took the series from %d to %d: %v", len(after1), len(after2), added)
	}
	var counted float64
	for s, v := range after2 {
		for _, tok := range tokens {
			if strings.Contains(s, tok) || strings.Contains(s, strings.ToUpper(tok)) {
				t.Fatalf("a client's path or method became a label: %s", s)
			}
		}
		if strings.HasPrefix(s, "paygate_http_requests_total{") {
			counted += v
		}
	}
	if counted < 2000 {
		t.Errorf("%v requests counted, want the 2,000 sent", counted)
	}
}

// randomToken returns 12 random hex digits.
func randomToken() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// TestMetricsScrapedByPrometheus runs the real Prometheus server (Debian's
// prometheus package) scraping a gateway every second, and reads a
// payment counter back through Prometheus's HTTP API.
func TestMetricsScrapedByPrometheus(t *testing.T) {
	t.Parallel()
	bin := testenv.Program(t, "/usr/bin/prometheus", "prometheus")
	_, m, g := startWithMerchant(t, sqliteEngine(), "Scraped", "--metrics-addr", "127.0.0.1:0")
	target := strings.TrimSuffix(strings.TrimPrefix(g.metricsURL(), "http://"), "/metrics")
	for range 3 {
		expect(t, g.call(http.MethodPost, "/v1/payments", m.TestSecretKey, paymentBody("4242424242424242", "10.00", "EUR")), http.StatusCreated)
	}
	prom := startPrometheus(t, bin, target)

	// One scrape after the payments is enough; the first comes within a
	// second or two of Prometheus's start.
	query := `sum(paygate_payments_total{job="paygate",status="captured"})`
	deadline := time.Now().Add(60 * time.Second)
	for {
		v, raw := prom.query(t, query)
		if v == "3" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %q after 60s, want 3: %s\nprometheus log:\n%s", query, v, raw, prom.logs())
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The target is healthy in Prometheus's eyes.
	if v, raw := prom.query(t, `up{job="paygate"}`); v != "1" {
		t.Errorf("up = %q: %s", v, raw)
	}
}

// prometheus is a running Prometheus server.
type prometheus struct {
	url string
	cmd *exec.Cmd
	mu  sync.Mutex
	log bytes.Buffer
}

func (p *prometheus) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.Write(b)
}

func (p *prometheus) logs() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// startPrometheus starts Prometheus on a free loopback port with its own
// storage, scraping target (host:port) every second, and waits until it
// is ready.
func startPrometheus(t *testing.T, bin, target string) *prometheus {
	t.Helper()
	dir := t.TempDir()
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: paygate
    scrape_interval: 1s
    scrape_timeout: 1s
    static_configs:
      - targets: [%q]
`, target)
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeLoopbackAddr(t)
	p := &prometheus{url: "http://" + addr}
	p.cmd = exec.Command(bin,
		"--config.file="+cfgPath,
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr,
		"--log.level=warn",
	)
	p.cmd.Stdout, p.cmd.Stderr = p, p
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start prometheus: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = p.cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = p.cmd.Process.Kill()
			<-exited
		}
	})
	eventually(t, 60*time.Second, "Prometheus to be ready", func() bool {
		select {
		case <-exited:
			t.Fatalf("prometheus exited:\n%s", p.logs())
		default:
		}
		res, err := client.Get(p.url + "/-/ready")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	})
	return p
}

// query runs an instant query and returns the value of its single sample
// ("" when there is none) and the raw answer.
func (p *prometheus) query(t *testing.T, q string) (string, string) {
	t.Helper()
	res, err := client.Get(p.url + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		t.Fatalf("query %s: %v", q, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var ans struct {
		Status string `json:"status"`
		Data   struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &ans); err != nil || ans.Status != "success" {
		t.Fatalf("query %s: %d %s", q, res.StatusCode, raw)
	}
	if len(ans.Data.Result) != 1 {
		return "", string(raw)
	}
	v, _ := ans.Data.Result[0].Value[1].(string)
	return v, string(raw)
}

// freeLoopbackAddr returns 127.0.0.1:PORT with a port that was free a
// moment ago, for a program that cannot be told to pick one.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}
