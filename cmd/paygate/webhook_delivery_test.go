package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store"
	"github.com/paygate/paygate/internal/webhook"
)

// deliveryKeys are the keys of a delivery in --json output, in order.
var deliveryKeys = []string{"id", "eventId", "event", "merchantId", "mode", "status", "attempts", "nextAttemptAt",
	"lastAttemptAt", "lastStatusCode", "lastError", "createdAt", "updatedAt", "history"}

// TestWebhookDeliveryCommands enqueues deliveries with test and resend
// (no serve runs, so they stay pending) and reads them back with
// deliveries, on both engines.
func TestWebhookDeliveryCommands(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, db string) {
		m := newMerchant(t, db, "Deliveries")
		run := func(args ...string) result { return cliRun(t, nil, append(args, "--database-url", db)...) }

		run("webhook", "test", "--merchant", m.MerchantID, "--mode", "test", "--json").
			mustFail(t, 1, "no such webhook endpoint")
		run("webhook", "test", "--merchant", id.New(), "--mode", "test").mustFail(t, 1, "merchant not found")
		if strings.HasPrefix(db, "postgres") {
			// The secret is sealed by the vault: PostgreSQL has no key
			// file to fall back on, so it is refused without a key.
			run("webhook", "set", "--merchant", m.MerchantID, "--mode", "test", "--url", "http://127.0.0.1:9/hook").
				mustFail(t, 1, "a card vault master key is required with PostgreSQL")
		}
		run("webhook", "set", "--merchant", m.MerchantID, "--mode", "test", "--url", "http://127.0.0.1:9/hook",
			"--events", "refund.failed", "--vault-key", newVaultKey(t)).mustSucceed(t)

		r := run("webhook", "test", "--merchant", m.MerchantID, "--mode", "test", "--json")
		var ping deliveryJSON
		jsonLine(t, r, &ping)
		wantKeys(t, r.stdout, deliveryKeys...)
		if ping.Event != "ping" || ping.Status != "pending" || ping.MerchantID != m.MerchantID || ping.Mode != "test" ||
			ping.Attempts != 0 || ping.NextAttemptAt == nil || ping.LastAttemptAt != nil || ping.LastStatusCode != nil ||
			!id.Valid(ping.ID) || !id.Valid(ping.EventID) || !timeRE.MatchString(ping.CreatedAt) || len(ping.History) != 0 {
			t.Errorf("webhook test printed %+v", ping)
		}
		if out := run("webhook", "test", "--merchant", m.MerchantID, "--mode", "test").mustSucceed(t).stdout; out == "" {
			t.Error("plain webhook test printed nothing")
		}

		r = run("webhook", "resend", "--event", ping.EventID, "--json")
		var again deliveryJSON
		jsonLine(t, r, &again)
		if again.EventID != ping.EventID || again.ID == ping.ID || again.Status != "pending" || again.Event != "ping" {
			t.Errorf("resend printed %+v, want a new delivery of event %s", again, ping.EventID)
		}
		run("webhook", "resend", "--event", id.New()).mustFail(t, 1, "no such event")
		run("webhook", "resend", "--event", "evt_1").mustFail(t, 1, "event not found")

		var list []deliveryJSON
		jsonLine(t, run("webhook", "deliveries", "--merchant", m.MerchantID, "--json"), &list)
		if len(list) != 3 || list[0].ID != again.ID {
			t.Fatalf("deliveries listed %+v, want three, the resend first", list)
		}
		jsonLine(t, run("webhook", "deliveries", "--merchant", m.MerchantID, "--event", ping.EventID, "--json"), &list)
		if len(list) != 2 {
			t.Errorf("deliveries of event %s: %d, want 2", ping.EventID, len(list))
		}
		for _, q := range [][]string{{"--status", "failed"}, {"--mode", "live"}} {
			jsonLine(t, run(append([]string{"webhook", "deliveries", "--merchant", m.MerchantID, "--json"}, q...)...), &list)
			if len(list) != 0 {
				t.Errorf("deliveries %v: %+v, want none", q, list)
			}
		}
		jsonLine(t, run("webhook", "deliveries", "--merchant", m.MerchantID, "--limit", "1", "--json"), &list)
		if len(list) != 1 {
			t.Errorf("--limit 1 listed %d", len(list))
		}
		if out := run("webhook", "deliveries", "--merchant", m.MerchantID).mustSucceed(t).stdout; out == "" {
			t.Error("plain webhook deliveries printed nothing")
		}
		run("webhook", "deliveries", "--merchant", id.New(), "--json").mustFail(t, 1, "merchant not found")
	})
}

// TestWebhookSetRotationKeepsPreviousSecret checks that --rotate-secret
// keeps the old secret for a day and that setting again enables a disabled
// endpoint.
func TestWebhookSetRotationKeepsPreviousSecret(t *testing.T) {
	t.Parallel()
	db := sqliteURL(t)
	m := newMerchant(t, db, "Rotation")
	set := func(args ...string) webhookSet {
		var w webhookSet
		jsonLine(t, cliRun(t, nil, append([]string{"webhook", "set", "--merchant", m.MerchantID, "--mode", "test",
			"--url", "http://127.0.0.1:9/hook", "--database-url", db, "--json"}, args...)...), &w)
		return w
	}
	first := set()
	before := time.Now()
	second := set("--rotate-secret")
	if second.Secret == first.Secret {
		t.Fatal("--rotate-secret kept the secret")
	}
	ctx := context.Background()
	st, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e, err := st.WebhookEndpointState(ctx, m.MerchantID, paygate.ModeTest)
	if err != nil {
		t.Fatal(err)
	}
	if e.Secret != "" || e.PreviousSecret != "" {
		t.Fatal("the store holds a plain secret")
	}
	// Sealed under the key webhook set generated beside the database.
	v, _, err := openVault(db, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := webhook.OpenSecrets(v, &e); err != nil {
		t.Fatal(err)
	}
	if e.Secret != second.Secret || e.PreviousSecret != first.Secret || e.PreviousSecretExpiresAt == nil ||
		e.PreviousSecretExpiresAt.Before(before.Add(24*time.Hour-time.Second)) || e.PreviousSecretExpiresAt.After(time.Now().Add(24*time.Hour)) {
		t.Errorf("after rotation: secret %v previous %v until %v", e.Secret == second.Secret, e.PreviousSecret == first.Secret, e.PreviousSecretExpiresAt)
	}
	if s := e.Secrets(time.Now()); len(s) != 2 {
		t.Errorf("%d secrets sign during the overlap, want 2", len(s))
	}
}

// TestWebhookPrivateTestGuard is decisions.md section 15 on the command
// line: --allow-private-test-webhooks=false (or
// PAYGATE_ALLOW_PRIVATE_TEST_WEBHOOKS=false) refuses to set or ping a
// test-mode endpoint on a non-public address, and the delivery log shows at
// most 1 KiB of an endpoint's answer, nothing of one from a private
// address while the guard is on.
func TestWebhookPrivateTestGuard(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, db string) {
		m := newMerchant(t, db, "Guard")
		vaultKey := newVaultKey(t)
		run := func(env map[string]string, args ...string) result {
			all := map[string]string{"PAYGATE_VAULT_KEY": vaultKey}
			for k, v := range env {
				all[k] = v
			}
			return cliRun(t, all, append(args, "--database-url", db)...)
		}
		guardEnv := map[string]string{"PAYGATE_ALLOW_PRIVATE_TEST_WEBHOOKS": "false"}
		for _, u := range []string{"http://127.0.0.1:9/hook", "http://10.0.0.7/hook", "http://localhost:9/hook", "http://169.254.169.254/"} {
			run(nil, "webhook", "set", "--merchant", m.MerchantID, "--mode", "test", "--url", u, "--allow-private-test-webhooks=false").
				mustFail(t, 1, "refused")
			run(guardEnv, "webhook", "set", "--merchant", m.MerchantID, "--mode", "test", "--url", u).mustFail(t, 1, "refused")
		}
		// http on a public name is fine in test mode under the guard.
		run(guardEnv, "webhook", "set", "--merchant", m.MerchantID, "--mode", "test", "--url", "http://hooks.example.com/x").mustSucceed(t)
		// Set by default (allowed): later pings are queued whatever the
		// guard (serve's dispatcher refuses to connect under it).
		run(nil, "webhook", "set", "--merchant", m.MerchantID, "--mode", "test", "--url", "http://127.0.0.1:9/hook").mustSucceed(t)

		// One attempt whose answer is 3 KiB, from a loopback address.
		var ping deliveryJSON
		jsonLine(t, run(nil, "webhook", "test", "--merchant", m.MerchantID, "--mode", "test", "--json"), &ping)
		ctx := context.Background()
		st, err := store.Open(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		at := time.Now().Add(time.Minute)
		claims, err := st.ClaimDeliveries(ctx, paygate.DeliveryClaim{Now: at, FirstDue: at, Lease: id.New(), LeaseUntil: at.Add(time.Minute), Limit: 10})
		if err != nil || len(claims) != 1 {
			t.Fatalf("claim: %d, %v", len(claims), err)
		}
		private := true
		if err := st.Commit(ctx, paygate.Unit{Ops: []paygate.Op{paygate.DeliveryFinish{
			DeliveryID: claims[0].Delivery.ID, Lease: claims[0].Lease, At: at, Status: paygate.DeliverySucceeded,
			Attempt: &paygate.DeliveryAttempt{
				DeliveryID: claims[0].Delivery.ID, Number: 1, URL: "http://127.0.0.1:9/hook", StartedAt: at, StatusCode: 200,
				Response: []byte(strings.Repeat("secret-ish internal page ", 120)), PrivateAddress: &private,
			},
		}}}); err != nil {
			t.Fatal(err)
		}
		shown := func(env map[string]string, args ...string) string {
			var list []deliveryJSON
			jsonLine(t, run(env, append([]string{"webhook", "deliveries", "--merchant", m.MerchantID, "--status", "succeeded", "--json"}, args...)...), &list)
			if len(list) != 1 || len(list[0].History) != 1 {
				t.Fatalf("deliveries: %+v", list)
			}
			return list[0].History[0].Response
		}
		if got := shown(nil); len(got) != 1024 || !strings.HasPrefix(got, "secret-ish internal page ") {
			t.Errorf("allowed: shown %d bytes, want the first 1 KiB", len(got))
		}
		if got := shown(guardEnv); got != "" {
			t.Errorf("guarded (env): shown %q, want nothing", got)
		}
		if got := shown(nil, "--allow-private-test-webhooks=false"); got != "" {
			t.Errorf("guarded (flag): shown %q, want nothing", got)
		}
	})
}
