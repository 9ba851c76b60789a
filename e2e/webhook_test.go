package e2e

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store"
	"github.com/paygate/paygate/internal/testenv"
	"github.com/paygate/paygate/internal/vault"
	internalwebhook "github.com/paygate/paygate/internal/webhook"
	"github.com/paygate/paygate/webhook"
)

// Webhook delivery end to end: the real binary, a real receiver on
// loopback, the public webhook.Verify on every request.

var eventTimeRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$`)

// TestWebhookEveryEvent makes every event the gateway produces and checks
// that each arrives once, signed, with the right payload, and that it is
// the event the database holds.
func TestWebhookEveryEvent(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engine) {
		db := e.url(t)
		m := createMerchant(t, db, "Every Event Ltd")
		rcv, secret := testEndpoint(t, db, m.MerchantID)
		g := startGateway(t, db)
		key := m.TestSecretKey

		eur := g.pay(key, "4242424242424242", "10.50", "EUR")
		jpy := g.pay(key, "4242424242424242", "100", "JPY")
		declined := g.pay(key, "4000000000009995", "10.50", "EUR")
		authorized := g.pay(key, "4000000000000077", "25.00", "EUR")
		expect(t, g.call(http.MethodPost, "/v1/payments/"+authorized+"/capture", key, map[string]any{"amount": "20.00"}), http.StatusOK)
		voided := g.pay(key, "4000000000000077", "7.00", "USD")
		expect(t, g.call(http.MethodPost, "/v1/payments/"+voided+"/void", key, map[string]any{}), http.StatusOK)
		rf := g.call(http.MethodPost, "/v1/refunds", key, map[string]any{"transactionId": eur, "amount": "4.00", "currency": "EUR"})
		expect(t, rf, http.StatusCreated)
		refund := rf.Data()["id"].(string)
		bad := g.pay(key, "4000000000005126", "3.00", "EUR")
		rf = g.call(http.MethodPost, "/v1/refunds", key, map[string]any{"transactionId": bad, "amount": "3.00", "currency": "EUR"})
		expect(t, rf, http.StatusCreated)
		badRefund := rf.Data()["id"].(string)

		type want struct {
			event, payment, refund, status, currency string
			amount                                   float64
			decline                                  string
		}
		wants := []want{
			{"payment.captured", eur, "", "captured", "EUR", 1050, ""},
			{"payment.captured", jpy, "", "captured", "JPY", 100, ""},
			{"payment.failed", declined, "", "failed", "EUR", 1050, "insufficient_funds"},
			{"payment.authorized", authorized, "", "authorized", "EUR", 2500, ""},
			{"payment.captured", authorized, "", "captured", "EUR", 2000, ""},
			{"payment.authorized", voided, "", "authorized", "USD", 700, ""},
			{"payment.voided", voided, "", "voided", "USD", 700, ""},
			{"refund.created", eur, refund, "created", "EUR", 400, ""},
			{"refund.succeeded", eur, refund, "succeeded", "EUR", 400, ""},
			{"payment.captured", bad, "", "captured", "EUR", 300, ""},
			{"refund.created", bad, badRefund, "created", "EUR", 300, ""},
			{"refund.failed", bad, badRefund, "failed", "EUR", 300, ""},
		}
		eventually(t, 60*time.Second, "every event delivered", func() bool { return len(rcv.succeeded()) >= len(wants) })

		stored := events(t, db, m.MerchantID, paygate.ModeTest)
		got := rcv.succeeded()
		if len(stored) != len(wants) || len(got) != len(wants) {
			t.Fatalf("%d events stored, %d delivered, want %d", len(stored), len(got), len(wants))
		}
		seen := map[string]bool{}
		for _, ev := range stored {
			h, ok := got[ev.ID]
			if !ok {
				t.Errorf("event %s (%s) was not delivered", ev.ID, ev.Type)
				continue
			}
			p := verify(t, h, secret)
			if string(h.Body) != string(ev.Payload) {
				t.Errorf("delivered body %s, stored payload %s", h.Body, ev.Payload)
			}
			data, _ := p["data"].(map[string]any)
			if p["event"] != string(ev.Type) || p["mode"] != "test" || !eventTimeRE.MatchString(fmt.Sprint(p["timestamp"])) ||
				data["merchantId"] != m.MerchantID {
				t.Errorf("envelope of %s: %s", ev.Type, h.Body)
			}
			i := slices.IndexFunc(wants, func(w want) bool {
				return !seen[fmt.Sprint(w)] && w.event == p["event"] && w.payment == data["transactionId"] &&
					(w.refund == "" || w.refund == data["refundId"])
			})
			if i < 0 {
				t.Errorf("unexpected event %s", h.Body)
				continue
			}
			w := wants[i]
			seen[fmt.Sprint(w)] = true
			if data["status"] != w.status || data["currency"] != w.currency || data["amount"] != w.amount {
				t.Errorf("%s of %s: status %v currency %v amount %v, want %s %s %v (%s)",
					w.event, w.payment, data["status"], data["currency"], data["amount"], w.status, w.currency, w.amount, h.Body)
			}
			if w.decline != "" && (data["declineCode"] != w.decline || data["errorCode"] != "CARD_DECLINED") {
				t.Errorf("payment.failed: %s", h.Body)
			}
			// decisions §15: a refund event says why a refund failed, and
			// null (present, not omitted) when it did not fail.
			if w.refund != "" {
				code, hasCode := data["errorCode"]
				msg, hasMsg := data["errorMessage"]
				failed := w.event == "refund.failed"
				if !hasCode || !hasMsg || (failed && (code != "PROVIDER_ERROR" || msg != "The card issuer refused the refund.")) ||
					(!failed && (code != nil || msg != nil)) {
					t.Errorf("%s: errorCode %v, errorMessage %v (%s)", w.event, code, msg, h.Body)
				}
			}
			if strings.Contains(string(h.Body), "4000000000009995") || strings.Contains(string(h.Body), `"cvv"`) {
				t.Errorf("a webhook carries card data: %s", h.Body)
			}
			if h.Header.Get("Content-Type") != "application/json" {
				t.Errorf("content type %q", h.Header.Get("Content-Type"))
			}
		}
		// Exactly once each: no event was sent twice to a receiver that
		// answered 204 at once.
		for _, h := range rcv.all() {
			if n := len(rcv.byID(h.ID)); n != 1 {
				t.Errorf("event %s arrived %d times", h.ID, n)
			}
		}
		for _, d := range deliveries(t, db, m.MerchantID) {
			if d.Status != "succeeded" || d.Attempts != 1 || len(d.History) != 1 || d.History[0].StatusCode == nil || *d.History[0].StatusCode != 204 {
				t.Errorf("delivery %+v", d)
			}
		}
		// One log line per attempt, and never a payload or a secret in the log.
		logs := g.Logs()
		if n := strings.Count(logs, `"msg":"webhook attempt"`); n != len(wants) {
			t.Errorf("%d webhook attempt log lines, want %d", n, len(wants))
		}
		leaks := []string{secret, strings.TrimPrefix(secret, "whsec_")}
		for _, h := range rcv.all() {
			leaks = append(leaks, string(h.Body))
		}
		for _, leak := range leaks {
			if strings.Contains(logs, leak) {
				t.Errorf("the log holds %q", leak)
			}
		}
	})
}

// TestWebhookRetries: a receiver failing the first attempts gets the same
// webhook-id again until it accepts; one that never accepts ends failed
// after the last attempt, and resend delivers the event again.
func TestWebhookRetries(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engine) {
		db := e.url(t)
		m := createMerchant(t, db, "Retries Ltd")
		rcv, secret := testEndpoint(t, db, m.MerchantID)
		rcv.setAnswer(func(_ string, n int) int {
			if n <= 2 {
				return http.StatusServiceUnavailable
			}
			return http.StatusOK
		})
		g := startGateway(t, db, "--webhook-retry-schedule", "0s,200ms,200ms")

		pid := g.pay(m.TestSecretKey, "4242424242424242", "12.00", "EUR")
		evs := events(t, db, m.MerchantID, paygate.ModeTest)
		if len(evs) != 1 {
			t.Fatalf("%d events", len(evs))
		}
		ev := evs[0]
		eventually(t, 30*time.Second, "the third attempt", func() bool { _, ok := rcv.succeeded()[ev.ID]; return ok })
		hooks := rcv.byID(ev.ID)
		if len(hooks) != 3 {
			t.Fatalf("%d attempts, want 3", len(hooks))
		}
		for i, h := range hooks {
			p := verify(t, h, secret)
			if p["data"].(map[string]any)["transactionId"] != pid || string(h.Body) != string(hooks[0].Body) {
				t.Errorf("attempt %d body %s", i+1, h.Body)
			}
		}
		if gap := hooks[1].At.Sub(hooks[0].At); gap < 150*time.Millisecond {
			t.Errorf("the second attempt came %s after the first; the schedule says 200ms (±10%%)", gap)
		}
		ds := deliveries(t, db, m.MerchantID, "--event", ev.ID)
		if len(ds) != 1 || ds[0].Status != "succeeded" || ds[0].Attempts != 3 || len(ds[0].History) != 3 {
			t.Fatalf("delivery %+v", ds)
		}
		for i, code := range []int{503, 503, 200} {
			a := ds[0].History[i]
			if a.Attempt != i+1 || a.StatusCode == nil || *a.StatusCode != code || a.URL != rcv.url ||
				(code == 200) != (a.Error == "") || !strings.Contains(a.Response, fmt.Sprint(code)) {
				t.Errorf("attempt %d: %+v, want %d", i+1, a, code)
			}
		}

		// A receiver that never accepts: failed after the third attempt.
		rcv.setAnswer(func(string, int) int { return http.StatusInternalServerError })
		g.pay(m.TestSecretKey, "4242424242424242", "13.00", "EUR")
		var failed delivery
		eventually(t, 30*time.Second, "a failed delivery", func() bool {
			ds := deliveries(t, db, m.MerchantID, "--status", "failed")
			if len(ds) == 1 {
				failed = ds[0]
			}
			return len(ds) == 1
		})
		if failed.Attempts != 3 || len(failed.History) != 3 || failed.NextAttemptAt != nil || failed.LastStatusCode == nil || *failed.LastStatusCode != 500 {
			t.Errorf("failed delivery %+v", failed)
		}
		if n := len(rcv.byID(failed.EventID)); n != 3 {
			t.Errorf("the failing receiver got %d attempts, want 3", n)
		}

		// Resend: a new delivery, the same webhook-id.
		rcv.setAnswer(func(string, int) int { return http.StatusAccepted })
		var resent delivery
		mustCLI(t, &resent, "webhook", "resend", "--event", failed.EventID, "--wait", "20s", "--json", "--database-url", db)
		if resent.EventID != failed.EventID || resent.ID == failed.ID || resent.Status != "succeeded" ||
			resent.LastStatusCode == nil || *resent.LastStatusCode != 202 {
			t.Errorf("resend printed %+v", resent)
		}
		hooks = rcv.byID(failed.EventID)
		if len(hooks) != 4 {
			t.Fatalf("%d requests of the resent event, want 4", len(hooks))
		}
		verify(t, hooks[3], secret)
		if string(hooks[3].Body) != string(hooks[0].Body) {
			t.Error("the resend carried another body")
		}
	})
}

// TestWebhookSurvivesKill: deliveries pending when the server is killed
// with SIGKILL go out after a restart, each exactly once. The first wait
// of the schedule keeps them pending past the kill.
func TestWebhookSurvivesKill(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engine) {
		db := e.url(t)
		m := createMerchant(t, db, "Crash Ltd")
		rcv, secret := testEndpoint(t, db, m.MerchantID)
		const firstWait = 3 * time.Second
		flags := []string{"--webhook-retry-schedule", "3s,200ms,200ms"}
		g := startGateway(t, db, flags...)
		var payments []string
		for _, n := range []string{"4242424242424242", "4000000000000002", "5555555555554444"} {
			payments = append(payments, g.pay(m.TestSecretKey, n, "5.00", "EUR"))
		}
		g.Kill()
		evs := events(t, db, m.MerchantID, paygate.ModeTest)
		if len(evs) != len(payments) {
			t.Fatalf("%d events, want %d", len(evs), len(payments))
		}
		pending := deliveries(t, db, m.MerchantID, "--status", "pending")
		if len(pending) != len(payments) {
			t.Logf("%d of %d deliveries were still pending at the kill (the kill was slower than the first wait)", len(pending), len(payments))
		}
		// Stay down until the deliveries are due: they come due while no
		// server runs.
		due := evs[len(evs)-1].CreatedAt.Add(firstWait)
		time.Sleep(time.Until(due))

		start := time.Now()
		startGateway(t, db, flags...)
		eventually(t, 60*time.Second, "every event after the restart", func() bool { return len(rcv.succeeded()) == len(evs) })
		t.Logf("delivered %d events %s after the restart", len(evs), time.Since(start).Round(time.Millisecond))
		for _, ev := range evs {
			hs := rcv.byID(ev.ID)
			if len(hs) != 1 {
				t.Errorf("event %s arrived %d times, want once", ev.ID, len(hs))
				continue
			}
			verify(t, hs[0], secret)
		}
	})
}

// TestWebhookTwoNodesDeliverOnce runs two serve processes on one
// PostgreSQL database. Every event needs two attempts (the receiver fails
// the first); each attempt reaches the receiver exactly once.
func TestWebhookTwoNodesDeliverOnce(t *testing.T) {
	t.Parallel()
	db := postgresEngine().url(t)
	m := createMerchant(t, db, "Two Nodes Ltd")
	rcv, secret := testEndpoint(t, db, m.MerchantID)
	rcv.setAnswer(func(id string, n int) int {
		if n == 1 {
			return http.StatusBadGateway
		}
		return http.StatusOK
	})
	flags := []string{"--webhook-retry-schedule", "0s,100ms,100ms,100ms,100ms", "--rate-limit-test", "100000"}
	nodes := []*gateway{startGateway(t, db, flags...), startGateway(t, db, flags...)}

	const perNode, workers = 20, 4
	var wg sync.WaitGroup
	for _, g := range nodes {
		for w := range workers {
			wg.Go(func() {
				for range perNode / workers {
					g.pay(m.TestSecretKey, "4242424242424242", fmt.Sprintf("%d.00", 1+w), "EUR")
				}
			})
		}
	}
	wg.Wait()
	evs := events(t, db, m.MerchantID, paygate.ModeTest)
	if len(evs) != perNode*len(nodes) {
		t.Fatalf("%d events, want %d", len(evs), perNode*len(nodes))
	}
	eventually(t, 60*time.Second, "every event accepted", func() bool { return len(rcv.succeeded()) == len(evs) })
	ds := deliveries(t, db, m.MerchantID)
	for _, d := range ds {
		if d.Status != "succeeded" {
			t.Errorf("delivery %+v", d)
		}
	}
	for _, ev := range evs {
		hs := rcv.byID(ev.ID)
		if len(hs) != 2 {
			t.Errorf("event %s: the receiver got %d attempts, want exactly 2", ev.ID, len(hs))
			continue
		}
		verify(t, hs[1], secret)
	}
	for _, d := range ds {
		if d.Attempts != 2 || len(d.History) != 2 {
			t.Errorf("delivery of %s: %d attempts claimed, %d recorded, want 2", d.EventID, d.Attempts, len(d.History))
		}
	}
	for i, g := range nodes {
		t.Logf("node %d made %d attempts", i+1, strings.Count(g.Logs(), `"msg":"webhook attempt"`))
	}
}

// TestWebhookGoneDisables: a 410 disables the endpoint; later events get
// no delivery until the endpoint is set again.
func TestWebhookGoneDisables(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engine) {
		db := e.url(t)
		m := createMerchant(t, db, "Gone Ltd")
		rcv := newReceiver(t)
		rcv.setAnswer(func(string, int) int { return http.StatusGone })
		setWebhook(t, db, m.MerchantID, "test", rcv.url)
		g := startGateway(t, db, "--webhook-retry-schedule", "0s,100ms,100ms")

		g.pay(m.TestSecretKey, "4242424242424242", "1.00", "EUR")
		var gone delivery
		eventually(t, 30*time.Second, "the 410", func() bool {
			ds := deliveries(t, db, m.MerchantID, "--status", "failed")
			if len(ds) == 1 {
				gone = ds[0]
			}
			return len(ds) == 1
		})
		if gone.Attempts != 1 || gone.LastStatusCode == nil || *gone.LastStatusCode != 410 || !strings.Contains(gone.LastError, "410") {
			t.Errorf("delivery after 410: %+v", gone)
		}
		rcv.setAnswer(func(string, int) int { return http.StatusOK })

		second := g.pay(m.TestSecretKey, "4242424242424242", "2.00", "EUR")
		evID := eventOf(t, db, m.MerchantID, second)
		if ds := deliveries(t, db, m.MerchantID, "--event", evID); len(ds) != 0 {
			t.Errorf("an event after the 410 got deliveries: %+v", ds)
		}
		_, stderr, code := cli(t, nil, "webhook", "test", "--merchant", m.MerchantID, "--mode", "test", "--database-url", db)
		if code != 1 || !strings.Contains(stderr, "disabled") {
			t.Errorf("webhook test on a disabled endpoint: exit %d %s", code, stderr)
		}

		setWebhook(t, db, m.MerchantID, "test", rcv.url)
		third := g.pay(m.TestSecretKey, "4242424242424242", "3.00", "EUR")
		evID = eventOf(t, db, m.MerchantID, third)
		eventually(t, 30*time.Second, "a delivery after webhook set", func() bool { _, ok := rcv.succeeded()[evID]; return ok })
		if n := len(rcv.all()); n != 2 {
			t.Errorf("the receiver got %d requests, want 2 (the 410 and the one after set)", n)
		}
	})
}

// eventOf returns the id of the one event of a payment.
func eventOf(t *testing.T, db, merchantID, paymentID string) string {
	t.Helper()
	var ids []string
	for _, ev := range events(t, db, merchantID, paygate.ModeTest) {
		if ev.PaymentID == paymentID {
			ids = append(ids, ev.ID)
		}
	}
	if len(ids) != 1 {
		t.Fatalf("payment %s has %d events, want 1", paymentID, len(ids))
	}
	return ids[0]
}

// TestWebhookSubscriptions: --events limits what an endpoint receives, and
// a mode without endpoint gets nothing, without error.
func TestWebhookSubscriptions(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engine) {
		db := e.url(t)
		m := createMerchant(t, db, "Subscriptions Ltd")
		rcv := newReceiver(t)
		secret := setWebhook(t, db, m.MerchantID, "test", rcv.url, "--events", "payment.failed,refund.succeeded")
		g := startGateway(t, db)

		captured := g.pay(m.TestSecretKey, "4242424242424242", "8.00", "EUR")
		declined := g.pay(m.TestSecretKey, "4000000000000002", "8.00", "EUR")
		expect(t, g.call(http.MethodPost, "/v1/refunds", m.TestSecretKey, map[string]any{"transactionId": captured, "amount": "8.00", "currency": "EUR"}), http.StatusCreated)

		want := map[string]bool{"payment.failed": true, "refund.succeeded": true}
		eventually(t, 30*time.Second, "the subscribed events", func() bool { return len(rcv.succeeded()) == len(want) })
		for _, h := range rcv.succeeded() {
			p := verify(t, h, secret)
			if !want[p["event"].(string)] {
				t.Errorf("an unsubscribed event arrived: %s", h.Body)
			}
			if p["event"] == "payment.failed" && p["data"].(map[string]any)["transactionId"] != declined {
				t.Errorf("payment.failed of another payment: %s", h.Body)
			}
		}
		// The unsubscribed events have no delivery at all (written in the
		// same transaction as the event, so this is no race).
		all := events(t, db, m.MerchantID, paygate.ModeTest)
		ds := deliveries(t, db, m.MerchantID)
		if len(all) != 4 || len(ds) != 2 {
			t.Errorf("%d events, %d deliveries; want 4 and 2", len(all), len(ds))
		}
		for _, d := range ds {
			if !want[d.Event] {
				t.Errorf("delivery of unsubscribed %s", d.Event)
			}
		}
	})
}

// TestWebhookCLI: webhook test sends a signed ping through the running
// server; a rotated secret and the previous one both verify for a day.
func TestWebhookCLI(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engine) {
		db := e.url(t)
		m := createMerchant(t, db, "Tools Ltd")
		rcv := newReceiver(t)
		first := setWebhook(t, db, m.MerchantID, "test", rcv.url, "--events", "refund.failed")
		startGateway(t, db)

		var ping delivery
		mustCLI(t, &ping, "webhook", "test", "--merchant", m.MerchantID, "--mode", "test", "--wait", "20s", "--json", "--database-url", db)
		if ping.Event != "ping" || ping.Status != "succeeded" || ping.Attempts != 1 || len(ping.History) != 1 ||
			ping.LastStatusCode == nil || *ping.LastStatusCode != 204 || ping.LastError != "" {
			t.Fatalf("webhook test printed %+v", ping)
		}
		hs := rcv.byID(ping.EventID)
		if len(hs) != 1 {
			t.Fatalf("the ping arrived %d times", len(hs))
		}
		p := verify(t, hs[0], first)
		if p["event"] != "ping" || p["mode"] != "test" || p["data"].(map[string]any)["merchantId"] != m.MerchantID {
			t.Errorf("ping %s", hs[0].Body)
		}

		second := setWebhook(t, db, m.MerchantID, "test", rcv.url, "--rotate-secret")
		if second == first {
			t.Fatal("--rotate-secret kept the secret")
		}
		mustCLI(t, &ping, "webhook", "test", "--merchant", m.MerchantID, "--mode", "test", "--wait", "20s", "--json", "--database-url", db)
		hs = rcv.byID(ping.EventID)
		if len(hs) != 1 {
			t.Fatalf("the second ping arrived %d times", len(hs))
		}
		if n := len(strings.Fields(hs[0].Header.Get(webhook.HeaderSignature))); n != 2 {
			t.Errorf("%d signatures during the rotation, want 2", n)
		}
		verify(t, hs[0], first)
		verify(t, hs[0], second)

		ds := deliveries(t, db, m.MerchantID)
		if len(ds) != 2 || ds[0].Event != "ping" || ds[1].Event != "ping" {
			t.Errorf("deliveries %+v", ds)
		}
		_, stderr, code := cli(t, nil, "webhook", "test", "--merchant", m.MerchantID, "--mode", "live", "--database-url", db)
		if code != 1 || !strings.Contains(stderr, "no such webhook endpoint") {
			t.Errorf("webhook test without a live endpoint: exit %d %s", code, stderr)
		}
	})
}

// TestWebhookLiveGuard: live endpoints on loopback or private addresses are
// refused when set, and an address that slipped in (here written to the
// database directly) is refused again at delivery without a request.
func TestWebhookLiveGuard(t *testing.T) {
	t.Parallel()
	db := sqliteEngine().url(t)
	m := createMerchant(t, db, "Guard Ltd")
	rcv := newReceiver(t)
	for _, u := range []string{"https://127.0.0.1/hooks", "https://10.0.0.1/hooks", "https://localhost/hooks",
		"https://[::1]/hooks", "https://169.254.169.254/latest", "http://hooks.example.com/x", rcv.url} {
		_, stderr, code := cli(t, nil, "webhook", "set", "--merchant", m.MerchantID, "--mode", "live", "--url", u, "--database-url", db)
		if code != 1 || !strings.Contains(stderr, "--url refused") {
			t.Errorf("live endpoint %s: exit %d %q, want refused", u, code, stderr)
		}
	}
	// Test mode accepts the same loopback receiver.
	setWebhook(t, db, m.MerchantID, "test", rcv.url)

	port := rcv.url[strings.LastIndex(rcv.url, ":")+1 : strings.LastIndex(rcv.url, "/")]
	ctx := context.Background()
	st, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	now := paygate.SystemClock{}.Now()
	// Sealed under the database's vault key, which webhook set created.
	path, _ := store.SQLitePath(db)
	key, err := vault.LoadKeyFile(path + vault.KeyFileSuffix)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := vault.ParseKeys([]string{key})
	if err != nil {
		t.Fatal(err)
	}
	v, err := vault.New(raw...)
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := internalwebhook.SealSecret(v, m.MerchantID, paygate.ModeLive, internalwebhook.NewSecret())
	if err != nil {
		t.Fatal(err)
	}
	_, err = testenv.ConfigureEndpoint(ctx, st, paygate.WebhookEndpoint{
		MerchantID: m.MerchantID, Mode: paygate.ModeLive, URL: "https://localhost:" + port + "/hooks",
		SealedSecret: sealed, CreatedAt: now, UpdatedAt: now,
	}, false, time.Time{})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	startGateway(t, db, "--webhook-retry-schedule", "0s,1h")
	var ping delivery
	mustCLI(t, &ping, "webhook", "test", "--merchant", m.MerchantID, "--mode", "live", "--wait", "20s", "--json", "--database-url", db)
	if ping.LastAttemptAt == nil || len(ping.History) != 1 || !strings.Contains(ping.History[0].Error, "refused") || ping.LastStatusCode != nil {
		t.Errorf("live delivery to localhost: %+v", ping)
	}
	if n := len(rcv.all()); n != 0 {
		t.Errorf("the receiver got %d requests from a live endpoint on loopback", n)
	}
}

// TestWebhookLatency measures, without asserting, how long an event takes
// from its state change (the payload's timestamp) to the receiver, over
// 100 payments on each engine. The numbers go to the test log.
func TestWebhookLatency(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engine) {
		db := e.url(t)
		m := createMerchant(t, db, "Latency Ltd")
		rcv := newReceiver(t)
		setWebhook(t, db, m.MerchantID, "test", rcv.url)
		g := startGateway(t, db, "--rate-limit-test", "100000")
		const n = 100
		for range n {
			g.pay(m.TestSecretKey, "4242424242424242", "1.00", "EUR")
		}
		eventually(t, 60*time.Second, "every event", func() bool { return len(rcv.succeeded()) == n })
		var lat []time.Duration
		for _, h := range rcv.succeeded() {
			ts, err := time.Parse(time.RFC3339Nano, h.payload(t)["timestamp"].(string))
			if err != nil {
				t.Fatal(err)
			}
			lat = append(lat, h.At.Sub(ts))
		}
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
		t.Logf("%s: state change to receiver over %d payments (race build: %v): median %s, p95 %s, max %s",
			e.name, n, raceEnabled, pct(0.5).Round(100*time.Microsecond), pct(0.95).Round(100*time.Microsecond), lat[len(lat)-1].Round(100*time.Microsecond))
	})
}
