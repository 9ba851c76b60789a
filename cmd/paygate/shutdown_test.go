package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store"
	"github.com/paygate/paygate/internal/testenv"
)

// slowSandbox routes every test payment to a sandbox that answers after a
// latency, so that payments are in flight when serve is told to stop.
const slowSandbox = `
providers:
  - {id: slow-sandbox, kind: sandbox, sandbox: {latency: 4s}}
routes:
  test:
    default: [slow-sandbox]
`

// shutdownVaultKey is the card vault key of these tests' servers.
var shutdownVaultKey = base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{9}, 32))

// inFlightPayment is one payment request of a graceful-stop test.
type inFlightPayment struct {
	key    string // Idempotency-Key and merchantRef
	status int
	body   []byte
	err    error
}

// paymentJSON is a card payment of 10.00 EUR with the card that is always
// captured, with ref as its merchantRef.
func paymentJSON(ref string) []byte {
	return fmt.Appendf(nil, `{"amount":"10.00","currency":"EUR","paymentMethod":"card","customerId":"cust-stop","merchantRef":%q,`+
		`"card":{"number":"4242424242424242","expiryMonth":"12","expiryYear":"%02d","cvv":"123","holderName":"Ada Lovelace"}}`,
		ref, (time.Now().Year()+3)%100)
}

// postPayment sends one payment and reads the whole answer.
func postPayment(client *http.Client, base, secret, key string) (int, []byte, error) {
	req, err := http.NewRequest(http.MethodPost, base+"/v1/payments", bytes.NewReader(paymentJSON(key)))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("X-API-Key", secret)
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// readyzStatus asks /readyz on a new connection; 0 with the error when no
// connection could be made.
func readyzStatus(base string) (int, error) {
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get(base + "/readyz")
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// TestServeGracefulStop stops serve (its context, as SIGTERM does) while a
// few dozen payments wait at a slow provider (decisions §16): /readyz
// answers 503 at once, new connections are refused after the drain delay
// while the payments in flight go on, every payment is answered 201 and is
// captured in the database, serve exits 0, and a retry of each after a
// restart replays the same answer (the idempotency record was completed).
func TestServeGracefulStop(t *testing.T) {
	t.Parallel()
	config := writeTestFile(t, "paygate.yaml", slowSandbox)
	forEachEngine(t, func(t *testing.T, db string) {
		m := newMerchant(t, db, "Graceful")
		args := []string{"serve", "--database-url", db, "--addr", "127.0.0.1:0", "--config", config,
			"--vault-key", shutdownVaultKey, "--rate-limit-test", "100000", "--drain-delay", "1s"}
		// A drain delay of 1s costs the test nothing (the payments take
		// longer) and leaves /readyz time to be asked on a busy machine.
		s := startServe(t, nil, args...)
		base := "http://" + s.addr

		const n = 30
		payments := make([]inFlightPayment, n)
		var outstanding atomic.Int32
		var wg sync.WaitGroup
		client := &http.Client{Timeout: 60 * time.Second}
		for i := range payments {
			p := &payments[i]
			p.key = fmt.Sprintf("stop-%02d", i)
			outstanding.Add(1)
			wg.Go(func() {
				defer outstanding.Add(-1)
				p.status, p.body, p.err = postPayment(client, base, m.TestSecretKey, p.key)
			})
		}

		// Every payment is at the provider (inserted, created) before the stop.
		st, err := store.Open(context.Background(), db)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			inserted := 0
			for _, p := range payments {
				if _, err := st.PaymentByMerchantRef(context.Background(), m.MerchantID, paygate.ModeTest, p.key); err == nil {
					inserted++
				}
			}
			if inserted == n {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("only %d of %d payments reached the provider within 30s", inserted, n)
			}
		}
		if outstanding.Load() == 0 {
			t.Fatal("every payment finished before the stop: make the sandbox's latency longer")
		}
		t.Logf("stopping with %d of %d payments in flight", outstanding.Load(), n)
		s.cancel()

		// /readyz answers 503 before the listener closes.
		var ready503 bool
		for deadline := time.Now().Add(10 * time.Second); !ready503 && time.Now().Before(deadline); {
			code, err := readyzStatus(base)
			if err != nil {
				t.Fatalf("/readyz refused before it answered 503: %v", err)
			}
			ready503 = code == http.StatusServiceUnavailable
		}
		if !ready503 {
			t.Fatal("/readyz never answered 503 after the stop")
		}
		// After the drain delay new connections are refused, while the
		// payments in flight are still being answered.
		var refused bool
		var inFlightAtRefusal int32
		for deadline := time.Now().Add(10 * time.Second); !refused && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			c, err := net.DialTimeout("tcp", s.addr, 5*time.Second)
			if err == nil {
				c.Close()
				continue
			}
			// Refused, or reset when the kernel had queued it as the
			// listener closed: either way it is not served.
			if !errors.Is(err, syscall.ECONNREFUSED) && !errors.Is(err, syscall.ECONNRESET) {
				t.Fatalf("dial after the drain delay: %v, want connection refused", err)
			}
			refused, inFlightAtRefusal = true, outstanding.Load()
		}
		if !refused {
			t.Fatal("new connections were still accepted 10s after the stop")
		}
		if inFlightAtRefusal == 0 {
			t.Error("the listener closed only after every payment was answered: the drain delay was not honoured")
		}

		wg.Wait()
		select {
		case code := <-s.done:
			s.done <- code
			if code != 0 {
				t.Errorf("serve exited %d; log:\n%s", code, s.logs.String())
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("serve did not exit; log:\n%s", s.logs.String())
		}

		// Every request was answered, 201, and its payment is captured.
		for _, p := range payments {
			if p.err != nil || p.status != http.StatusCreated {
				t.Errorf("%s: %d %s (%v)", p.key, p.status, p.body, p.err)
				continue
			}
			var env struct {
				Data struct{ ID, Status string } `json:"data"`
			}
			if err := json.Unmarshal(p.body, &env); err != nil || env.Data.Status != "captured" {
				t.Errorf("%s: answered %s", p.key, p.body)
				continue
			}
			got, err := st.PaymentByMerchantRef(context.Background(), m.MerchantID, paygate.ModeTest, p.key)
			if err != nil || got.ID != env.Data.ID || got.Status != paygate.PaymentCaptured {
				t.Errorf("%s in the database: %+v, %v; want %s captured", p.key, got.Status, err, env.Data.ID)
			}
		}

		// After a restart each retry replays the answer: nothing was left
		// half-done.
		again := startServe(t, nil, append(slices.Clone(args), "--drain-delay", "0s")...)
		for _, p := range payments {
			status, body, err := postPayment(client, "http://"+again.addr, m.TestSecretKey, p.key)
			if err != nil || status != p.status || !bytes.Equal(body, p.body) {
				t.Errorf("%s retried after the restart: %d %s (%v); want %d %s", p.key, status, body, err, p.status, p.body)
			}
		}
	})
}

// TestServeThreeNodesMigrateOnce starts three serve nodes at once on one
// empty PostgreSQL schema (decisions §16, migrations under a lock): each
// starts and is ready, and goose's table holds every version once.
func TestServeThreeNodesMigrateOnce(t *testing.T) {
	t.Parallel()
	db := testenv.PostgresSchema(t)
	const nodes = 3
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logs := make([]*testenv.Buffer, nodes)
	done := make(chan int, nodes)
	for i := range logs {
		logs[i] = &testenv.Buffer{}
		go func() {
			done <- run(ctx, []string{"serve", "--database-url", db, "--addr", "127.0.0.1:0", "--vault-key", shutdownVaultKey, "--drain-delay", "0s"},
				nil, io.Discard, logs[i])
		}()
	}
	for i, l := range logs {
		var addr string
		for deadline := time.Now().Add(60 * time.Second); addr == ""; time.Sleep(20 * time.Millisecond) {
			if m := listeningRE.FindStringSubmatch(l.String()); m != nil {
				addr = m[1]
			} else if time.Now().After(deadline) {
				t.Fatalf("node %d did not listen; log:\n%s", i, l.String())
			}
			select {
			case code := <-done:
				t.Fatalf("a node exited %d while starting; logs:\n%s\n%s\n%s", code, logs[0], logs[1], logs[2])
			default:
			}
		}
		if code, err := readyzStatus("http://" + addr); err != nil || code != http.StatusOK {
			t.Errorf("node %d: /readyz %d (%v)", i, code, err)
		}
	}
	cancel()
	for range nodes {
		if code := <-done; code != 0 {
			t.Errorf("a node exited %d", code)
		}
	}
	conn, err := pgx.Connect(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var versions, dups int
	if err := conn.QueryRow(context.Background(), `
		SELECT count(*), count(*) - count(DISTINCT version_id) FROM goose_db_version WHERE version_id > 0`).Scan(&versions, &dups); err != nil {
		t.Fatal(err)
	}
	if versions == 0 || dups != 0 {
		t.Errorf("goose_db_version: %d applied versions, %d applied more than once", versions, dups)
	}
}
