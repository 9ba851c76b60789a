package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store"
)

// TestTimeoutCardIsRecovered is card 4000000000000705 with the timings of
// decisions §8: the create call answers 202 after the sandbox's 2 s timeout,
// with status created and the provider named; recovery (every 5 s by
// default) finds the payment captured, 3 s after the timeout, and the
// payment and its one event (and webhook) say captured. The 202 is the
// key's stored answer (decisions §15, "Replays of an unknown outcome"):
// retries get it byte for byte, before and after recovery.
func TestTimeoutCardIsRecovered(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engine) {
		db := e.url(t)
		m := createMerchant(t, db, "Timeout Ltd")
		rcv, secret := testEndpoint(t, db, m.MerchantID)
		g := startGateway(t, db, "--rate-limit-test", "100000")
		key := m.TestSecretKey
		body := paymentBody("4000000000000705", "70.50", "EUR")
		body["merchantRef"] = "timeout-1"

		start := time.Now()
		r := g.call(http.MethodPost, "/v1/payments", key, body, "Idempotency-Key", "timeout-1")
		expect(t, r, http.StatusAccepted)
		if d := time.Since(start); d < 2*time.Second || d > 4*time.Second {
			t.Fatalf("202 after %s, want about 2s", d)
		}
		d := r.Data()
		if d["status"] != "created" || d["provider"] != "sandbox-eu" || d["amount"] != "70.50" || d["threeDsRequired"] != false {
			t.Fatalf("202 body: %s", r.Raw)
		}
		id := d["id"].(string)
		rec := g.call(http.MethodGet, "/v1/payments/"+id, key, nil)
		if rec.Data()["status"] != "created" || rec.Data()["providerId"] != "sandbox-eu" {
			t.Fatalf("record before recovery: %s", rec.Raw)
		}
		retry := g.call(http.MethodPost, "/v1/payments", key, body, "Idempotency-Key", "timeout-1")
		expect(t, retry, http.StatusAccepted)
		if !bytes.Equal(retry.Raw, r.Raw) || retry.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("retry before recovery: %d %s (replayed %q); want the 202 %s",
				retry.Status, retry.Raw, retry.Header.Get("Idempotent-Replayed"), r.Raw)
		}

		eventually(t, 12*time.Second, "the payment to be captured", func() bool {
			return g.call(http.MethodGet, "/v1/payments/"+id, key, nil).Data()["status"] == "captured"
		})
		t.Logf("captured %s after the create call", time.Since(start).Round(100*time.Millisecond))
		got := g.call(http.MethodGet, "/v1/payments/"+id, key, nil).Data()
		if got["providerId"] != "sandbox-eu" || got["amountCaptured"] != "70.50" || got["errorCode"] != nil {
			t.Fatalf("captured record: %v", got)
		}
		evs := events(t, db, m.MerchantID, paygate.ModeTest)
		pe := paymentEvents(evs, id)
		if len(pe) != 1 || pe[0].Type != paygate.EventPaymentCaptured {
			t.Fatalf("events: %+v", pe)
		}
		var payload struct {
			Event string `json:"event"`
			Data  struct {
				TransactionID string `json:"transactionId"`
				Status        string `json:"status"`
				Amount        int64  `json:"amount"`
			} `json:"data"`
		}
		if err := json.Unmarshal(pe[0].Payload, &payload); err != nil || payload.Event != "payment.captured" ||
			payload.Data.TransactionID != id || payload.Data.Status != "captured" || payload.Data.Amount != 7050 {
			t.Fatalf("event payload %s", pe[0].Payload)
		}
		// The merchant is told by webhook, once.
		eventually(t, 20*time.Second, "the payment.captured webhook", func() bool {
			_, ok := rcv.succeeded()[pe[0].ID]
			return ok
		})
		hook := verify(t, rcv.succeeded()[pe[0].ID], secret)
		if hook["event"] != "payment.captured" || hook["data"].(map[string]any)["transactionId"] != id {
			t.Fatalf("webhook %v", hook)
		}
		if n := len(webhookIDsOf(t, rcv, id)); n != 1 {
			t.Fatalf("%d webhook ids for the payment, want 1", n)
		}

		// The stored answer is still the 202 the client was given.
		final := g.call(http.MethodPost, "/v1/payments", key, body, "Idempotency-Key", "timeout-1")
		expect(t, final, http.StatusAccepted)
		if !bytes.Equal(final.Raw, r.Raw) || final.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("retry after recovery: %d %s (replayed %q); want the 202 %s",
				final.Status, final.Raw, final.Header.Get("Idempotent-Replayed"), r.Raw)
		}
	})
}

// send posts a payment and tolerates a connection that dies with the
// server.
func send(g *gateway, key, idemKey string, body any) (response, error) {
	raw, _ := json.Marshal(body)
	req, err := http.NewRequest(http.MethodPost, g.url+"/v1/payments", bytes.NewReader(raw))
	if err != nil {
		return response{}, err
	}
	req.Header.Set("X-API-Key", key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", idemKey)
	resp, err := client.Do(req)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return response{}, err
	}
	r := response{Status: resp.StatusCode, Header: resp.Header, Raw: b}
	_ = json.Unmarshal(b, &r.Body)
	return r, nil
}

// kill ends the server with SIGKILL: no shutdown, no cleanup.
func (g *gateway) kill(t *testing.T) {
	t.Helper()
	if err := g.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-g.exited:
		g.exited <- err
	case <-time.After(30 * time.Second):
		t.Fatal("paygate did not die")
	}
}

// crashCase is one payment in flight when the server is killed, and the
// answer it must end with.
type crashCase struct {
	number, amount, currency string
	status                   int    // the final answer's HTTP status
	finalStatus              string // the payment's final status
	errorName                string // for 400/502
	provider                 string // who processed it
}

// TestCrashRecovery kills the server (SIGKILL) while payments wait at their
// providers (a 3 s latency) and a refund is pending, restarts it, and checks
// that every payment is final within 30 s of the restart with exactly one
// final event each, that retries with the original keys get 409 until then
// and the final answer after (the same bytes every time, consistent with
// the record), and that the refund ends succeeded.
func TestCrashRecovery(t *testing.T) {
	cases := map[string]crashCase{
		"visa":      {"4242424242424242", "10.00", "EUR", 201, "captured", "", "sandbox-eu"},
		"declined":  {"4000000000000002", "11.00", "USD", 400, "failed", "CARD_DECLINED", "sandbox-us"},
		"error":     {"4000000000000119", "1200", "JPY", 502, "failed", "PROVIDER_ERROR", "sandbox-apac"},
		"authorize": {"4000000000000077", "13.00", "GBP", 201, "authorized", "", "sandbox-eu"},
		"failover":  {"4000000000000259", "14.00", "EUR", 201, "captured", "", "sandbox-global"},
		"global":    {"4242424242424242", "15.00", "KWD", 201, "captured", "", "sandbox-global"},
		"timeout":   {"4000000000000705", "16.00", "CHF", 201, "captured", "", "sandbox-eu"},
		"refundbad": {"4000000000005126", "17.00", "SEK", 201, "captured", "", "sandbox-eu"},
	}
	config := `
providers:
  - {id: sandbox-eu, kind: sandbox, currencies: [EUR, GBP, CHF, SEK], sandbox: {latency: 3s}}
  - {id: sandbox-us, kind: sandbox, currencies: [USD], sandbox: {latency: 3s}}
  - {id: sandbox-apac, kind: sandbox, currencies: [JPY], sandbox: {latency: 3s}}
  - {id: sandbox-global, kind: sandbox, sandbox: {latency: 3s}}
routes:
  test:
    EUR: [sandbox-eu, sandbox-global]
    GBP: [sandbox-eu, sandbox-global]
    CHF: [sandbox-eu, sandbox-global]
    SEK: [sandbox-eu, sandbox-global]
    USD: [sandbox-us, sandbox-global]
    JPY: [sandbox-apac, sandbox-global]
    default: [sandbox-global]
`
	forEachEngine(t, func(t *testing.T, e engine) {
		db := e.url(t)
		cfg := writeConfig(t, config)
		m := createMerchant(t, db, "Crash Ltd")
		key := m.TestSecretKey
		rcv, secret := testEndpoint(t, db, m.MerchantID)
		g := startGateway(t, db, "--config", cfg, "--rate-limit-test", "100000")

		// A captured payment to refund; the refund is cut off at the provider.
		paid := g.call(http.MethodPost, "/v1/payments", key, paymentBody("4242424242424242", "30.00", "EUR"))
		expect(t, paid, http.StatusCreated)
		rf := g.call(http.MethodPost, "/v1/refunds", key, map[string]any{"transactionId": paid.Data()["id"], "amount": "30.00", "currency": "EUR"})
		expect(t, rf, http.StatusCreated)
		refundID := rf.Data()["id"].(string)

		bodies := map[string]map[string]any{}
		for name, c := range cases {
			b := paymentBody(c.number, c.amount, c.currency)
			b["merchantRef"] = "crash-" + name
			bodies[name] = b
		}
		var wg sync.WaitGroup
		for name := range cases {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// The answer is lost with the server: the client only knows
				// its key, and retries with it later.
				_, _ = send(g, key, "crash-"+name, bodies[name])
			}()
		}

		// Wait until every payment is at its provider (in its ledger) and
		// the refund is pending, then kill.
		st, err := store.Open(context.Background(), db)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		ids := map[string]string{}
		eventually(t, 20*time.Second, "every payment to reach its provider", func() bool {
			for name, c := range cases {
				p, err := st.PaymentByMerchantRef(context.Background(), m.MerchantID, paygate.ModeTest, "crash-"+name)
				if err != nil {
					return false
				}
				if p.Status != paygate.PaymentCreated {
					t.Fatalf("%s finished before the kill (%s): make the latency longer", name, p.Status)
				}
				ids[name] = p.ID
				if _, err := st.SandboxChargeByPayment(context.Background(), c.provider, p.ID); err != nil {
					return false
				}
			}
			r, err := st.RefundByID(context.Background(), m.MerchantID, paygate.ModeTest, refundID)
			return err == nil && r.Status == paygate.RefundPending
		})
		g.kill(t)
		wg.Wait()
		for name, id := range ids {
			p, err := st.PaymentByID(context.Background(), m.MerchantID, paygate.ModeTest, id)
			if err != nil || p.Status != paygate.PaymentCreated || p.ProviderID != "" {
				t.Fatalf("%s after the kill: %+v, %v", name, p, err)
			}
		}

		restart := time.Now()
		g = startGateway(t, db, "--config", cfg, "--rate-limit-test", "100000")
		// Right after the restart the requests' leases still run: retries
		// are told to come back.
		early, err := send(g, key, "crash-visa", bodies["visa"])
		if err != nil {
			t.Fatal(err)
		}
		if early.Status != http.StatusConflict || early.Header.Get("Retry-After") == "" {
			t.Fatalf("retry during recovery: %d %s (Retry-After %q)", early.Status, early.Raw, early.Header.Get("Retry-After"))
		}

		eventually(t, 30*time.Second-time.Since(restart), "every payment to be final", func() bool {
			for name := range cases {
				p, err := st.PaymentByID(context.Background(), m.MerchantID, paygate.ModeTest, ids[name])
				if err != nil || p.Status == paygate.PaymentCreated {
					return false
				}
			}
			return true
		})
		t.Logf("every payment final %s after the restart", time.Since(restart).Round(100*time.Millisecond))

		evs := events(t, db, m.MerchantID, paygate.ModeTest)
		for name, c := range cases {
			id := ids[name]
			rec := g.call(http.MethodGet, "/v1/payments/"+id, key, nil).Data()
			if rec["status"] != c.finalStatus || rec["providerId"] != c.provider {
				t.Errorf("%s: record %v; want %s by %s", name, rec, c.finalStatus, c.provider)
			}
			pe := paymentEvents(evs, id)
			if len(pe) != 1 || !strings.HasSuffix(string(pe[0].Type), c.finalStatus) {
				t.Errorf("%s: events %v, want one payment.%s", name, eventTypes(pe), c.finalStatus)
			}
			// Retries get the final answer, byte for byte the same each time.
			a, err := send(g, key, "crash-"+name, bodies[name])
			if err != nil {
				t.Fatal(err)
			}
			b, err := send(g, key, "crash-"+name, bodies[name])
			if err != nil {
				t.Fatal(err)
			}
			if a.Status != c.status || !bytes.Equal(a.Raw, b.Raw) || a.Header.Get("Idempotent-Replayed") != "true" {
				t.Errorf("%s: retries %d %s / %d %s; want %d twice, replayed", name, a.Status, a.Raw, b.Status, b.Raw, c.status)
				continue
			}
			if c.errorName != "" {
				e := a.Err()
				if e == nil || e["name"] != c.errorName || e["transactionId"] != id {
					t.Errorf("%s: answer %s, want %s naming the payment", name, a.Raw, c.errorName)
				}
			} else if a.Data()["id"] != id || a.Data()["status"] != c.finalStatus || a.Data()["provider"] != c.provider {
				t.Errorf("%s: answer %s", name, a.Raw)
			}
		}

		// Exactly one webhook per payment, the final status's, delivered
		// after the restart.
		eventually(t, 30*time.Second, "the final webhooks", func() bool {
			for name := range cases {
				if len(webhookIDsOf(t, rcv, ids[name])) == 0 {
					return false
				}
			}
			return true
		})
		for name, c := range cases {
			hooks := webhookIDsOf(t, rcv, ids[name])
			if len(hooks) != 1 {
				t.Errorf("%s: %d webhook ids, want 1", name, len(hooks))
				continue
			}
			for _, h := range hooks {
				p := verify(t, h, secret)
				if p["event"] != "payment."+c.finalStatus {
					t.Errorf("%s: webhook %v, want payment.%s", name, p["event"], c.finalStatus)
				}
			}
		}

		// The pending refund is retried once stale and ends succeeded.
		eventually(t, 45*time.Second, "the refund to succeed", func() bool {
			return g.call(http.MethodGet, "/v1/refunds/"+refundID, key, nil).Data()["status"] == "succeeded"
		})
		if n := countEvents(events(t, db, m.MerchantID, paygate.ModeTest), paygate.EventRefundSucceeded, ""); n != 1 {
			t.Fatalf("%d refund.succeeded events", n)
		}
	})
}

func eventTypes(evs []paygate.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = string(e.Type)
	}
	return out
}

// TestRecoveryIntervalFlag: --recovery-interval is validated.
func TestRecoveryIntervalFlag(t *testing.T) {
	t.Parallel()
	_, stderr, code := cli(t, nil, "serve", "--recovery-interval", "0s", "--database-url", "sqlite:"+t.TempDir()+"/x.db")
	if code != 2 || !strings.Contains(stderr, "--recovery-interval") {
		t.Fatalf("exit %d, %q", code, fmt.Sprint(stderr))
	}
}

// webhookIDsOf returns the delivered webhooks about a payment (not its
// refunds), one per webhook-id.
func webhookIDsOf(t *testing.T, rcv *receiver, paymentID string) map[string]hook {
	t.Helper()
	out := map[string]hook{}
	for id, h := range rcv.succeeded() {
		p := h.payload(t)
		d, _ := p["data"].(map[string]any)
		ev, _ := p["event"].(string)
		if d["transactionId"] == paymentID && strings.HasPrefix(ev, "payment.") {
			out[id] = h
		}
	}
	return out
}
