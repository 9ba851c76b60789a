package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paygate/paygate/internal/bench"
	"github.com/paygate/paygate/internal/testenv"
)

// benchChildEnv makes the test binary act as the paygate binary: bench
// starts its server with os.Executable(), which under go test is this
// binary.
const benchChildEnv = "GO_PAYGATE_BENCH_TEST_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(benchChildEnv) == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// TestBenchSQLite runs `paygate bench` end to end on a fresh SQLite
// database: merchant, child server, load, report.
func TestBenchSQLite(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server and loads it for a few seconds")
	}
	t.Setenv(benchChildEnv, "1")
	dir := t.TempDir()
	svg, cpuProf, heapProf := filepath.Join(dir, "bench.svg"), filepath.Join(dir, "cpu.prof"), filepath.Join(dir, "heap.prof")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"bench", "--duration", "2s", "--warmup", "500ms", "--concurrency", "4", "--json", "--svg", svg,
		// Passed to serve whole: a comma does not split the value.
		"--server-arg=--webhook-retry-schedule=0s,5s", "--server-cpuprofile", cpuProf, "--server-heapprofile", heapProf},
		func(string) string { return "" }, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var rep bench.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("%v: %s", err, stdout.String())
	}
	if rep.Target != "sqlite" || !strings.HasPrefix(rep.URL, "http://127.0.0.1:") || rep.Concurrency != 4 {
		t.Errorf("target %q url %q concurrency %d", rep.Target, rep.URL, rep.Concurrency)
	}
	if rep.Requests <= 0 || rep.Payments <= 0 || rep.RequestsPerSecond <= 0 || rep.ElapsedSeconds < 1.9 || rep.ElapsedSeconds > 10 {
		t.Errorf("requests %d payments %d rate %v elapsed %v", rep.Requests, rep.Payments, rep.RequestsPerSecond, rep.ElapsedSeconds)
	}
	if rep.TransportErrors != 0 || len(rep.Errors) != 0 {
		t.Errorf("transport errors %d (%s), errors %v", rep.TransportErrors, rep.TransportError, rep.Errors)
	}
	for name := range rep.Expected {
		if name != "CARD_DECLINED" {
			t.Errorf("expected error %s", name)
		}
	}
	l := rep.Latency
	if !(l.Min > 0 && l.Min <= l.P50 && l.P50 <= l.P90 && l.P90 <= l.P99 && l.P99 <= l.Max) {
		t.Errorf("latency %+v is not ordered", l)
	}
	if s := rep.Server; s == nil || s.CPUSeconds <= 0 || s.PeakRSSBytes < 1<<20 || s.PeakRSSBytes > 1<<30 {
		t.Errorf("server stats %+v", rep.Server)
	}
	if m := rep.Machine; m == nil || m.Cores < 1 || m.BusyPercent <= 0 || m.BusyPercent > 100 || m.StealPercent < 0 {
		t.Errorf("machine %+v", rep.Machine)
	}
	for _, f := range []string{svg, cpuProf, heapProf} {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", filepath.Base(f), err)
		}
	}
}

// TestBenchPostgresBaseline runs bench on PostgreSQL with --baseline: the
// child server gets a vault key, the baseline runs after the gateway on the
// same database and merchant, and the report has the ratio.
func TestBenchPostgresBaseline(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server and loads it for a few seconds")
	}
	dbURL := testenv.PostgresSchema(t)
	t.Setenv(benchChildEnv, "1")
	t.Setenv("PAYGATE_VAULT_KEY", "") // bench generates one
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"bench", "--database-url", dbURL, "--duration", "1s", "--warmup", "200ms",
		"--concurrency", "4", "--baseline", "--json"}, func(string) string { return "" }, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var rep bench.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("%v: %s", err, stdout.String())
	}
	if rep.Target != "postgres" || rep.Payments <= 0 || rep.TransportErrors != 0 || len(rep.Errors) != 0 {
		t.Fatalf("report %s", stdout.String())
	}
	b := rep.Baseline
	if b == nil || b.Transactions <= 0 || b.Errors != 0 || b.TxPerSecond <= 0 || b.Ratio <= 0 {
		t.Fatalf("baseline %+v", b)
	}
	if want := rep.PaymentsPerSecond / b.TxPerSecond; b.Ratio < want*0.99 || b.Ratio > want*1.01 {
		t.Errorf("ratio %v, want %v", b.Ratio, want)
	}
	if b.Machine == nil || b.Machine.BusyPercent <= 0 {
		t.Errorf("baseline machine %+v", b.Machine)
	}
}

// TestBenchServerFails: a server that does not start fails the command
// with its log's end on the one error line.
func TestBenchServerFails(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server")
	}
	t.Setenv(benchChildEnv, "1")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"bench", "--duration", "1s", "--server-arg=--no-such-flag"},
		func(string) string { return "" }, &stdout, &stderr)
	if code != exitFailure || strings.Count(stderr.String(), "\n") != 1 || !strings.Contains(stderr.String(), "no-such-flag") {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
}

func TestBenchUsage(t *testing.T) {
	for _, args := range [][]string{
		{"--url", "http://127.0.0.1:8080"},              // no key
		{"--url", "http://10.0.0.1:8080", "--key", "k"}, // not loopback
		{"--url", "http://example.com", "--key", "k"},   // not loopback
		{"--url", "https://127.0.0.1", "--key", "k"},    // not http
		{"--key", "k"}, // key without url
		{"--self-test", "--url", "http://127.0.0.1:1", "--key", "k"}, // two targets
		{"--self-test", "--baseline"},                                // baseline needs own server
		{"--mix", "approve=0"},                                       // nothing to do
		{"--mix", "buy=1"},                                           // unknown operation
		{"--concurrency", "0"},                                       // no client
		{"--duration", "0s"},                                         // no measurement
		{"--rate", "-1"},                                             // negative rate
		{"--currency", "EURO"},                                       // not a code
		{"--url", "http://127.0.0.1:1", "--key", "k", "--server-arg=x"}, // not our server
		{"--self-test", "--server-cpuprofile", "p"},                     // not our server
		{"--requests", "10", "--server-cpuprofile", "p"},                // a profile needs a duration
		{"--provider", "paypal"},                                        // unknown provider
		{"--provider", "stripe-mock", "--self-test"},                    // not our server
		{"--provider", "stripe-mock", "--mix", "approve=1"},             // stripe-mock declines everything
		{"--provider", "stripe-mock", "--mix", "decline=1,refund=1"},    // nothing to refund
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), append([]string{"bench"}, args...), func(string) string { return "" }, &stdout, &stderr)
		if code != exitUsage || strings.Count(stderr.String(), "\n") != 1 || !strings.HasPrefix(stderr.String(), "paygate: bench: ") {
			t.Errorf("bench %v: exit %d, stderr %q", args, code, stderr.String())
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"bench", "--help"}, nil, &stdout, &stderr); code != 0 ||
		!strings.Contains(stdout.String(), "--baseline") || !strings.Contains(stdout.String(), "--json prints one JSON object") {
		t.Errorf("bench --help: exit %d\n%s", code, stdout.String())
	}
}

func TestBenchSelfTest(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"bench", "--self-test", "--requests", "300", "--warmup", "0s", "--concurrency", "4"},
		func(string) string { return "" }, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{"Target:", "self-test", "Requests:", "Transport errors:  0", "Server CPU:        unknown"} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
}

// TestBenchURL loads a running server through --url: the server's CPU and
// memory are unknown (null in the JSON report).
func TestBenchURL(t *testing.T) {
	srv := httptest.NewServer(bench.TrivialHandler())
	defer srv.Close()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"bench", "--url", srv.URL, "--key", "smtgw_sk_test_x", "--requests", "50",
		"--warmup", "0s", "--concurrency", "2", "--json"}, func(string) string { return "" }, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var out map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	if out["target"] != "url" || out["url"] != srv.URL || out["operations"] != float64(50) || out["server"] != nil {
		t.Fatalf("report %s", stdout.String())
	}
}

func TestServerEnv(t *testing.T) {
	env, err := serverEnv([]string{"HOME=/h", "PAYGATE_CONFIG=/etc/p.yaml", "PAYGATE_REDIS_URL=redis://x", "PAYGATE_VAULT_KEY=abc"}, true)
	if err != nil || strings.Join(env, " ") != "HOME=/h PAYGATE_VAULT_KEY=abc" {
		t.Fatalf("serverEnv = %v, %v", env, err)
	}
	env, err = serverEnv([]string{"HOME=/h", "PAYGATE_VAULT_KEY="}, true)
	if err != nil || len(env) != 2 || !strings.HasPrefix(env[1], "PAYGATE_VAULT_KEY=") || len(env[1]) != len("PAYGATE_VAULT_KEY=")+44 {
		t.Fatalf("serverEnv on PostgreSQL without a key = %v, %v", env, err)
	}
	env, _ = serverEnv([]string{"HOME=/h"}, false)
	if len(env) != 1 {
		t.Fatalf("serverEnv on SQLite = %v", env)
	}
}

// TestBenchStripeMock runs --provider stripe-mock briefly against a real
// stripe-mock: live payments through the Stripe connector (a CARD_DECLINED
// in live mode can only come from it: sandboxes serve test mode only, and
// an unrouted live payment is PROVIDER_ERROR), then stripe-mock alone.
// Without stripe-mock it skips, or fails when PAYGATE_TEST_REQUIRE_SERVICES=1.
func TestBenchStripeMock(t *testing.T) {
	if testing.Short() {
		t.Skip("starts stripe-mock and a server")
	}
	if _, err := bench.FindStripeMock(); err != nil {
		if os.Getenv("PAYGATE_TEST_REQUIRE_SERVICES") == "1" {
			t.Fatalf("stripe-mock is required (PAYGATE_TEST_REQUIRE_SERVICES=1): %v", err)
		}
		t.Skipf("skipping: %v", err)
	}
	t.Setenv(benchChildEnv, "1")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"bench", "--provider", "stripe-mock", "--requests", "50", "--warmup", "0s",
		"--concurrency", "4", "--json"}, func(string) string { return "" }, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var rep bench.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("%v: %s", err, stdout.String())
	}
	if rep.Provider != "stripe-mock" || rep.Mix["decline"] != 1 || len(rep.Mix) != 1 || rep.Operations != 50 {
		t.Errorf("provider %q mix %v operations %d", rep.Provider, rep.Mix, rep.Operations)
	}
	if rep.Payments != 50 || rep.Expected["CARD_DECLINED"] != 50 || len(rep.Errors) != 0 || rep.TransportErrors != 0 || rep.PaymentsPerSecond <= 0 {
		t.Errorf("payments %d (%v/s) expected %v errors %v transport %d (%s)", rep.Payments, rep.PaymentsPerSecond, rep.Expected,
			rep.Errors, rep.TransportErrors, rep.TransportError)
	}
	a := rep.ProviderAlone
	if a == nil {
		t.Fatalf("no providerAlone: %s", stdout.String())
	}
	if a.Provider != "stripe-mock" || !strings.HasPrefix(a.URL, "http://127.0.0.1:") || a.CallsPerPayment != 2 {
		t.Errorf("providerAlone %+v", a)
	}
	if a.Payments != 50 || a.Errors != 0 || a.Error != "" || a.PaymentsPerSecond <= 0 || a.RequestsPerSecond <= 0 || a.Ratio <= 0 {
		t.Errorf("providerAlone %+v", a)
	}
	if l := a.Latency; l.Count != 50 || !(l.Min > 0 && l.Min <= l.P50 && l.P50 <= l.P99 && l.P99 <= l.Max) {
		t.Errorf("providerAlone latency %+v", l)
	}
}

// TestBenchStripeMockMissing: without stripe-mock, one line naming its
// install command, before anything is provisioned.
func TestBenchStripeMockMissing(t *testing.T) {
	empty := t.TempDir()
	t.Setenv("PATH", empty)
	t.Setenv("GOBIN", "")
	t.Setenv("GOPATH", empty)
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"bench", "--provider", "stripe-mock", "--requests", "10"},
		func(string) string { return "" }, &stdout, &stderr)
	if code != exitFailure || strings.Count(stderr.String(), "\n") != 1 ||
		!strings.Contains(stderr.String(), "go install github.com/stripe/stripe-mock@v0.203.0") {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
}

// TestStripeMockConfig: the mode's configuration file is one serve
// accepts, with the key's variable set.
func TestStripeMockConfig(t *testing.T) {
	got := stripeMockConfig("http://127.0.0.1:4242", "EUR")
	for _, want := range []string{"kind: stripe", "mode: live", "base_url: http://127.0.0.1:4242", "secret_key: " + stripeMockKeyEnv,
		"live:\n    EUR: [stripe-mock]"} {
		if !strings.Contains(got, want) {
			t.Errorf("the configuration lacks %q:\n%s", want, got)
		}
	}
	path := filepath.Join(t.TempDir(), "providers.yaml")
	if err := os.WriteFile(path, []byte(got), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(stripeMockKeyEnv, stripeMockSecretKey)
	if _, err := loadRouting(path); err != nil {
		t.Fatal(err)
	}
}
