// Package e2e drives the real paygate binary over loopback HTTP, the way a
// merchant backend and an operator would.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/apidoc/apidoctest"
	"github.com/paygate/paygate/internal/testenv"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "paygate-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "paygate")
	args := []string{"build", "-o", binary}
	if raceEnabled {
		args = append(args, "-race")
	}
	args = append(args, "../cmd/paygate")
	cmd := exec.Command("go", args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build paygate:", err)
		os.Exit(1)
	}
	if checker, err = apidoctest.Load(); err != nil {
		fmt.Fprintln(os.Stderr, "docs/openapi.json:", err)
		os.Exit(1)
	}
	code := m.Run()
	fmt.Fprintf(os.Stderr, "e2e: %d exchanges with the gateways checked against docs/openapi.json in %s\n",
		checked.Load(), time.Duration(checking.Load()).Round(time.Millisecond))
	os.RemoveAll(dir)
	os.Exit(code)
}

// engine is a database the tests run against.
type engine struct {
	name string
	// url returns a fresh, empty database for one test.
	url func(t *testing.T) string
}

func sqliteEngine() engine {
	return engine{name: "sqlite", url: func(t *testing.T) string {
		return "sqlite:" + filepath.Join(t.TempDir(), "paygate.db")
	}}
}

func postgresEngine() engine {
	return engine{name: "postgres", url: func(t *testing.T) string { return testenv.PostgresSchema(t) }}
}

// engines lists both databases; every end-to-end case runs on each.
func engines() []engine { return []engine{sqliteEngine(), postgresEngine()} }

// forEachEngine runs f as a parallel subtest per engine.
func forEachEngine(t *testing.T, f func(t *testing.T, e engine)) {
	t.Helper()
	for _, e := range engines() {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			f(t, e)
		})
	}
}

// cli runs a paygate command and returns stdout, stderr and the exit code.
func cli(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = os.Environ()
	for _, a := range args {
		if strings.HasPrefix(a, "postgres") {
			// Commands that read or write secrets need the vault's key on
			// PostgreSQL, as serve does; env may override it.
			cmd.Env = append(cmd.Env, "PAYGATE_VAULT_KEY="+testVaultKey)
			break
		}
	}
	cmd.Env = append(cmd.Env, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run paygate %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

// mustCLI runs a command that must succeed and decodes its --json output.
func mustCLI(t *testing.T, v any, args ...string) {
	t.Helper()
	out, errOut, code := cli(t, nil, args...)
	if code != 0 {
		t.Fatalf("paygate %v: exit %d: %s", args, code, errOut)
	}
	if v != nil {
		if err := json.Unmarshal([]byte(out), v); err != nil {
			t.Fatalf("paygate %v: decode %q: %v", args, out, err)
		}
	}
}

// merchant is what `merchant create --json` prints.
type merchant struct {
	MerchantID      string `json:"merchantId"`
	Name            string `json:"name"`
	TestSecretKeyID string `json:"testSecretKeyId"`
	TestSecretKey   string `json:"testSecretKey"`
	LiveSecretKeyID string `json:"liveSecretKeyId"`
	LiveSecretKey   string `json:"liveSecretKey"`
	TestPublicKey   string `json:"testPublicKey"`
	LivePublicKey   string `json:"livePublicKey"`
}

func createMerchant(t *testing.T, dbURL, name string) merchant {
	t.Helper()
	var m merchant
	mustCLI(t, &m, "merchant", "create", "--name", name, "--json", "--database-url", dbURL)
	if m.MerchantID == "" || !strings.HasPrefix(m.TestSecretKey, "smtgw_sk_test_") || !strings.HasPrefix(m.LiveSecretKey, "smtgw_sk_live_") {
		t.Fatalf("merchant create printed %+v", m)
	}
	return m
}

// startWithMerchant is most tests' start: a fresh database on e with one
// merchant called name, and a gateway serving it with the extra flags.
func startWithMerchant(t *testing.T, e engine, name string, flags ...string) (dbURL string, m merchant, g *gateway) {
	t.Helper()
	dbURL = e.url(t)
	m = createMerchant(t, dbURL, name)
	return dbURL, m, startGateway(t, dbURL, flags...)
}

// gateway is a running `paygate serve`.
type gateway struct {
	t      *testing.T
	dbURL  string
	url    string
	cmd    *exec.Cmd
	mu     sync.Mutex
	logs   bytes.Buffer
	exited chan error
	// unwatched is set once the gateway's exchanges are no longer
	// checked (conformance_test.go); guarded by mu.
	unwatched bool
}

// startGateway starts `paygate serve` on a loopback port with the extra
// flags and waits until it listens.
func startGateway(t *testing.T, dbURL string, flags ...string) *gateway {
	t.Helper()
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--database-url", dbURL}, flags...)
	cmd := exec.Command(binary, args...)
	// No load balancer watches these gateways' /readyz: they stop at once
	// on SIGTERM, unless flags give a --drain-delay.
	cmd.Env = append(os.Environ(), "PAYGATE_DRAIN_DELAY=0s")
	if strings.HasPrefix(dbURL, "postgres") {
		// serve refuses PostgreSQL without a card vault key; a --vault-key
		// flag among flags wins over this.
		cmd.Env = append(cmd.Env, "PAYGATE_VAULT_KEY="+testVaultKey)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	g := &gateway{t: t, dbURL: dbURL, cmd: cmd, exited: make(chan error, 1)}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addrc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Bytes()
			g.mu.Lock()
			g.logs.Write(line)
			g.logs.WriteByte('\n')
			g.mu.Unlock()
			var rec struct {
				Msg  string `json:"msg"`
				Addr string `json:"addr"`
			}
			if json.Unmarshal(line, &rec) == nil && rec.Msg == "listening" {
				select {
				case addrc <- rec.Addr:
				default:
				}
			}
		}
	}()
	go func() { g.exited <- cmd.Wait() }()
	select {
	case addr := <-addrc:
		g.url = "http://" + addr
		unwatch := watch(addr, g)
		t.Cleanup(unwatch) // runs after Stop below
	case err := <-g.exited:
		t.Fatalf("paygate serve exited before listening: %v\n%s", err, g.Logs())
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("paygate serve did not listen within 60s\n%s", g.Logs())
	}
	t.Cleanup(func() { g.Stop() })
	return g
}

// testVaultKey is the card vault master key of the PostgreSQL gateways
// (base64 of 32 bytes).
const testVaultKey = "cGF5Z2F0ZS1lMmUtdGVzdC12YXVsdC1rZXktMzJieXQ="

// Logs returns everything the server wrote to stderr so far.
func (g *gateway) Logs() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.logs.String()
}

// Stop sends SIGTERM and waits for a clean exit.
func (g *gateway) Stop() error {
	if g.cmd.ProcessState != nil {
		return nil
	}
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-g.exited:
		g.exited <- err
		return err
	case <-time.After(45 * time.Second):
		_ = g.cmd.Process.Kill()
		return fmt.Errorf("paygate did not stop within 45s")
	}
}

// response is a decoded API answer.
type response struct {
	Status int
	Header http.Header
	Raw    []byte
	Body   map[string]any
}

// Data returns data as an object.
func (r response) Data() map[string]any {
	d, _ := r.Body["data"].(map[string]any)
	return d
}

// Err returns error as an object.
func (r response) Err() map[string]any {
	e, _ := r.Body["error"].(map[string]any)
	return e
}

var client = &http.Client{Timeout: 60 * time.Second, Transport: conformingTransport{next: http.DefaultTransport}}

// call sends a request. body may be nil, a string (sent raw) or a value
// (sent as JSON). For POSTs a fresh Idempotency-Key and the JSON content
// type are set unless headers name them.
func (g *gateway) call(method, path, key string, body any, headers ...string) response {
	g.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			g.t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, g.url+path, rd)
	if err != nil {
		g.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("X-API-Key", key)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", fmt.Sprintf("k-%d", time.Now().UnixNano()))
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			req.Header.Del(headers[i])
		} else {
			req.Header.Set(headers[i], headers[i+1])
		}
	}
	resp, err := client.Do(req)
	if err != nil {
		g.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := response{Status: resp.StatusCode, Header: resp.Header, Raw: raw}
	_ = json.Unmarshal(raw, &r.Body)
	return r
}

// expect fails the test unless the answer has the status (and, for errors,
// the name and param; param "-" means no param).
func expect(t *testing.T, r response, status int, nameParam ...string) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Raw)
	}
	if len(nameParam) > 0 {
		e := r.Err()
		if e == nil || e["name"] != nameParam[0] {
			t.Fatalf("error name: want %s: %s", nameParam[0], r.Raw)
		}
		if len(nameParam) > 1 {
			p, _ := e["param"].(string)
			want := nameParam[1]
			if want == "-" {
				want = ""
			}
			if p != want {
				t.Fatalf("error param %q, want %q: %s", p, want, r.Raw)
			}
		}
	}
}

// futureYear is a two-digit expiry year three years ahead.
func futureYear() string { return fmt.Sprintf("%02d", (time.Now().Year()+3)%100) }

// paymentBody is a valid card payment with the card number (and a CVV of
// the brand's length: 4 digits for American Express, 3 otherwise).
func paymentBody(number, amount, currency string) map[string]any {
	cvv := "123"
	if strings.HasPrefix(number, "34") || strings.HasPrefix(number, "37") {
		cvv = "1234"
	}
	return map[string]any{
		"amount":     amount,
		"currency":   currency,
		"customerId": "cust-e2e",
		"card": map[string]any{
			"number": number, "expiryMonth": "12", "expiryYear": futureYear(),
			"cvv": cvv, "holderName": "Ada Lovelace",
		},
		"billing": map[string]any{
			"firstName": "Ada", "lastName": "Lovelace", "email": "ada@example.com",
			"phone": "+44 20 7946 0000", "country": "GB", "address": "1 Analytical St",
			"city": "London", "postalCode": "N1 1AA",
		},
		"merchantRef": "order-" + number[len(number)-4:],
		"metadata":    map[string]any{"orderId": "o-1"},
	}
}

// eventually polls f until it returns true or the time runs out.
func eventually(t *testing.T, within time.Duration, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if f() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("timed out after %s waiting for %s", within, what)
}
