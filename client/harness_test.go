package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The tests of this file's kind drive the real paygate binary, built once
// per run and started per test on a loopback port with a fresh SQLite
// database: the client is tested against the gateway merchants run, not
// against a double of it.

var build struct {
	once     sync.Once
	dir, bin string
	err      error
	out      bytes.Buffer
}

func TestMain(m *testing.M) {
	code := m.Run()
	if build.dir != "" {
		os.RemoveAll(build.dir)
	}
	os.Exit(code)
}

// paygateBinary builds cmd/paygate on first use.
func paygateBinary(t *testing.T) string {
	t.Helper()
	build.once.Do(func() {
		build.dir, build.err = os.MkdirTemp("", "paygate-client-")
		if build.err != nil {
			return
		}
		build.bin = filepath.Join(build.dir, "paygate")
		args := []string{"build", "-o", build.bin}
		if raceEnabled {
			args = append(args, "-race")
		}
		cmd := exec.Command("go", append(args, "../cmd/paygate")...)
		cmd.Stdout, cmd.Stderr = &build.out, &build.out
		build.err = cmd.Run()
	})
	if build.err != nil {
		t.Fatalf("build paygate: %v\n%s", build.err, build.out.String())
	}
	return build.bin
}

// merchantKeys is what `paygate merchant create --json` prints, in part.
type merchantKeys struct {
	MerchantID    string `json:"merchantId"`
	TestSecretKey string `json:"testSecretKey"`
	TestPublicKey string `json:"testPublicKey"`
}

// gateway is a running `paygate serve` with one merchant.
type gateway struct {
	url, dbURL string
	merchant   merchantKeys
}

// startGateway creates a database with one merchant and serves it with the
// extra flags until the test ends.
func startGateway(t *testing.T, flags ...string) *gateway {
	t.Helper()
	bin := paygateBinary(t)
	g := &gateway{dbURL: "sqlite:" + filepath.Join(t.TempDir(), "paygate.db")}
	g.paygate(t, &g.merchant, "merchant", "create", "--name", "Client tests", "--json")

	cmd := exec.Command(bin, append([]string{"serve", "--addr", "127.0.0.1:0", "--database-url", g.dbURL}, flags...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var logs bytes.Buffer
	addrc := make(chan string, 1)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			mu.Lock()
			logs.Write(sc.Bytes())
			logs.WriteByte('\n')
			mu.Unlock()
			var rec struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == "listening" {
				select {
				case addrc <- rec.Addr:
				default:
				}
			}
		}
	}()
	exited := make(chan error, 1)
	go func() {
		<-readDone // Wait closes the pipe: read it all first
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(45 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			mu.Lock()
			t.Logf("gateway log:\n%s", logs.String())
			mu.Unlock()
		}
	})
	select {
	case addr := <-addrc:
		g.url = "http://" + addr
	case err := <-exited:
		t.Fatalf("paygate serve exited before listening: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("paygate serve did not listen within 60s")
	}
	return g
}

// paygate runs a command of the binary on the gateway's database and
// decodes its --json output into v.
func (g *gateway) paygate(t *testing.T, v any, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, paygateBinary(t), append(args, "--database-url", g.dbURL)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("paygate %v: %v: %s", args, err, stderr.String())
	}
	if err := json.Unmarshal(stdout.Bytes(), v); err != nil {
		t.Fatalf("paygate %v printed %q: %v", args, stdout.String(), err)
	}
}

// client returns a client of the gateway with its merchant's test key.
func (g *gateway) client(t *testing.T, opts ...Option) *Client {
	t.Helper()
	c, err := New(g.url, g.merchant.TestSecretKey, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// testCard is a card of the sandbox's table with a future expiry.
func testCard(number string) *Card {
	return &Card{
		Number: number, ExpiryMonth: "12", ExpiryYear: fmt.Sprintf("%02d", (time.Now().Year()+3)%100),
		CVV: "123", HolderName: "Ada Lovelace",
	}
}

// payment is a valid card payment of 10.50 EUR with the card number.
func payment(number, merchantRef string) *PaymentParams {
	return &PaymentParams{
		Amount: "10.50", Currency: "EUR", CustomerID: "customer-42", Card: testCard(number),
		Billing: &Billing{
			Email: "ada@example.com", Phone: "+44 20 7946 0000", Country: "GB",
			Address: "1 Analytical St", City: "London", PostalCode: "N1 1AA",
		},
		MerchantRef: merchantRef,
		Metadata:    map[string]any{"orderId": merchantRef},
	}
}
