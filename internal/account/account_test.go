package account_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/paygate/paygate/internal/account"
	"github.com/paygate/paygate/internal/auth"
	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store/sqlite"
	"github.com/paygate/paygate/internal/vault"
	"github.com/paygate/paygate/internal/webhook"

	_ "modernc.org/sqlite"
)

func newStore(t *testing.T) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "account.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func newVault(t *testing.T) *vault.Vault {
	t.Helper()
	key := make([]byte, vault.KeySize)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	v, err := vault.New(key)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func newMerchant(t *testing.T, st paygate.Store, now time.Time) (string, paygate.APIKey) {
	t.Helper()
	mid := id.New()
	_, k, err := auth.NewKey(id.New(), mid, paygate.ModeTest, paygate.KeySecret, now)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Commit(context.Background(), paygate.Unit{Ops: []paygate.Op{paygate.Merchant{ID: mid, Name: "m", CreatedAt: now}, k}}); err != nil {
		t.Fatal(err)
	}
	return mid, k
}

func TestKeyLifecycle(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	ctx := context.Background()
	now := paygate.SystemClock{}.Now()
	mid, first := newMerchant(t, st, now)
	other, otherKey := newMerchant(t, st, now)

	secret, k, err := account.CreateKey(ctx, st, mid, paygate.ModeLive, now)
	if err != nil || !strings.HasPrefix(secret, "smtgw_sk_live_") || k.MerchantID != mid {
		t.Fatalf("CreateKey: %q %+v %v", secret, k, err)
	}

	t.Run("MerchantKeyScoped", func(t *testing.T) {
		if got, err := account.MerchantKey(ctx, st, mid, paygate.ModeLive, k.ID); err != nil || got.ID != k.ID {
			t.Errorf("own key: %+v %v", got, err)
		}
		for _, c := range []struct{ merchant, mode, key string }{
			{mid, "test", k.ID},           // the other mode
			{other, "live", k.ID},         // another merchant
			{mid, "test", otherKey.ID},    // another merchant's key
			{mid, "test", "not-a-key-id"}, // not an id
			{mid, "test", strings.ToUpper(first.ID)},
		} {
			if _, err := account.MerchantKey(ctx, st, c.merchant, paygate.Mode(c.mode), c.key); !paygate.IsNotFound(err) {
				t.Errorf("MerchantKey(%s, %s, %s): %v, want NOT_FOUND", c.merchant, c.mode, c.key, err)
			}
		}
		keys, err := account.MerchantKeys(ctx, st, mid, paygate.ModeTest)
		if err != nil || len(keys) != 1 || keys[0].ID != first.ID {
			t.Errorf("test keys %+v, %v", keys, err)
		}
	})

	t.Run("RotateWithGrace", func(t *testing.T) {
		_, next, old, err := account.RotateKey(ctx, st, k, time.Hour, now)
		if err != nil || next.Mode != paygate.ModeLive || next.Type != paygate.KeySecret || old.ExpiresAt == nil || !old.ExpiresAt.Equal(now.Add(time.Hour)) {
			t.Fatalf("RotateKey: %+v %+v %v", next, old, err)
		}
		// The old key has a successor: it cannot be rotated again, in its
		// grace period or later, and the refusal names the successor.
		for _, at := range []time.Time{now.Add(time.Minute), now.Add(2 * time.Hour)} {
			_, _, _, err = account.RotateKey(ctx, st, old, 0, at)
			var replaced *paygate.KeyReplacedError
			if !errors.As(err, &replaced) || replaced.SuccessorID != next.ID || err.Error() != replaced.Error() {
				t.Errorf("rotating a replaced key at %v: %v", at, err)
			}
		}
		if _, _, _, err := account.RotateKey(ctx, st, next, account.MaxGrace+time.Second, now); err == nil || !strings.Contains(err.Error(), "720h") {
			t.Errorf("a grace over 720h: %v", err)
		}
		if _, _, _, err := account.RotateKey(ctx, st, next, -time.Second, now); err == nil {
			t.Error("a negative grace was accepted")
		}
	})

	t.Run("Revoke", func(t *testing.T) {
		r, err := account.RevokeKey(ctx, st, first.ID, now)
		if err != nil || r.RevokedAt == nil {
			t.Fatalf("RevokeKey: %+v %v", r, err)
		}
		_, _, _, err = account.RotateKey(ctx, st, r, 0, now)
		var inactive *account.InactiveKeyError
		if !errors.As(err, &inactive) || !strings.Contains(err.Error(), "was revoked at") {
			t.Errorf("rotating a revoked key: %v", err)
		}
		if _, err := account.RevokeKey(ctx, st, id.New(), now); !paygate.IsNotFound(err) {
			t.Errorf("revoking an unknown key: %v", err)
		}
	})
}

func TestWebhookRules(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		url  string
		mode paygate.Mode
		ok   bool
	}{
		{"http://127.0.0.1:9000/hooks", paygate.ModeTest, true},
		{"https://shop.example/hooks", paygate.ModeLive, true},
		{"http://shop.example/hooks", paygate.ModeLive, false},
		{"https://127.0.0.1/hooks", paygate.ModeLive, false},
		{"https://10.1.2.3/hooks", paygate.ModeLive, false},
		{"https://localhost/hooks", paygate.ModeLive, false},
	} {
		u, err := account.ParseWebhookURL(c.url)
		if err != nil {
			t.Fatalf("ParseWebhookURL(%s): %v", c.url, err)
		}
		err = account.CheckWebhookTarget(u, c.mode, webhook.Policy{})
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, webhook.ErrRefused)) {
			t.Errorf("CheckWebhookTarget(%s, %s): %v", c.url, c.mode, err)
		}
	}
	for _, bad := range []string{"", "ftp://x.example/", "/relative", "http://", "https://" + strings.Repeat("a", account.MaxWebhookURL)} {
		if _, err := account.ParseWebhookURL(bad); err == nil {
			t.Errorf("ParseWebhookURL(%q) accepted", bad)
		}
	}
	got, err := account.CheckEvents([]string{"refund.failed", "payment.captured", "refund.failed"})
	if err != nil || strings.Join(got, ",") != "refund.failed,payment.captured" {
		t.Errorf("CheckEvents: %v %v", got, err)
	}
	if _, err := account.CheckEvents([]string{"payment.exploded"}); err == nil || !strings.Contains(err.Error(), `unknown event "payment.exploded"`) {
		t.Errorf("unknown event: %v", err)
	}
}

func TestSetWebhook(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	ctx := context.Background()
	now := paygate.SystemClock{}.Now()
	mid, _ := newMerchant(t, st, now)
	v := newVault(t)
	first, err := account.SetWebhook(ctx, st, v, mid, paygate.ModeTest, "http://127.0.0.1:9/a", nil, false, now)
	if err != nil || !strings.HasPrefix(first.Secret, "whsec_") {
		t.Fatalf("SetWebhook: %+v %v", first, err)
	}
	again, err := account.SetWebhook(ctx, st, v, mid, paygate.ModeTest, "http://127.0.0.1:9/b", []string{"refund.failed"}, false, now)
	if err != nil || again.Secret != first.Secret || again.URL != "http://127.0.0.1:9/b" {
		t.Errorf("setting again kept %+v, %v", again, err)
	}
	rotated, err := account.SetWebhook(ctx, st, v, mid, paygate.ModeTest, again.URL, again.Events, true, now)
	if err != nil || rotated.Secret == first.Secret || rotated.PreviousSecret != first.Secret ||
		rotated.PreviousSecretExpiresAt == nil || !rotated.PreviousSecretExpiresAt.Equal(now.Add(paygate.WebhookSecretOverlap)) {
		t.Errorf("rotation: %+v, %v", rotated, err)
	}
	if _, err := account.SetWebhook(ctx, st, v, id.New(), paygate.ModeTest, "http://127.0.0.1:9/a", nil, false, now); !paygate.IsNotFound(err) {
		t.Errorf("unknown merchant: %v", err)
	}
}

// TestSetWebhookRotatesAnUnconvertedRow: rotating an endpoint whose row an
// earlier version wrote (plain secret) seals it first, so that the previous
// secret is the old one, sealed, and no column holds a plain secret.
func TestSetWebhookRotatesAnUnconvertedRow(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "account.db")
	st, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ctx := context.Background()
	now := paygate.SystemClock{}.Now()
	mid, _ := newMerchant(t, st, now)
	v := newVault(t)
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	old := webhook.NewSecret()
	if _, err := raw.ExecContext(ctx, `
		INSERT INTO webhook_endpoints (merchant_id, mode, url, secret, events, created_at, updated_at, previous_secret)
		VALUES (?, 'test', 'http://127.0.0.1:9/old', ?, '[]', ?, ?, '')`, mid, old, now.UnixMicro(), now.UnixMicro()); err != nil {
		t.Fatal(err)
	}
	rotated, err := account.SetWebhook(ctx, st, v, mid, paygate.ModeTest, "http://127.0.0.1:9/new", nil, true, now)
	if err != nil || rotated.Secret == old || rotated.PreviousSecret != old {
		t.Fatalf("rotation of an unconverted row: previous is the old secret %v, %v", rotated.PreviousSecret == old, err)
	}
	var secret, previous string
	if err := raw.QueryRowContext(ctx, `SELECT secret, previous_secret FROM webhook_endpoints WHERE merchant_id = ?`, mid).
		Scan(&secret, &previous); err != nil {
		t.Fatal(err)
	}
	if secret != "" || previous != "" {
		t.Error("a plain column holds a secret after the rotation")
	}
}

// TestCheckWebhookTargetGuardedTestMode is --allow-private-test-webhooks=false
// (decisions.md section 15): test-mode endpoints get the live-mode address
// guard, and may still use http.
func TestCheckWebhookTargetGuardedTestMode(t *testing.T) {
	t.Parallel()
	guard := webhook.Policy{GuardTestMode: true}
	for _, c := range []struct {
		url string
		ok  bool
	}{
		{"http://hooks.example.com/x", true},
		{"https://93.184.216.34/x", true},
		{"http://127.0.0.1:8080/hooks", false},
		{"http://localhost:8080/hooks", false},
		{"http://10.1.2.3/hooks", false},
		{"http://192.168.1.1/hooks", false},
		{"http://169.254.169.254/latest", false},
		{"http://[::1]/hooks", false},
		{"http://0.0.0.0/hooks", false},
		{"http://224.0.0.1/hooks", false},
		{"http://2130706433/hooks", false},
	} {
		u, err := account.ParseWebhookURL(c.url)
		if err != nil {
			t.Fatalf("ParseWebhookURL(%s): %v", c.url, err)
		}
		err = account.CheckWebhookTarget(u, paygate.ModeTest, guard)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, webhook.ErrRefused)) {
			t.Errorf("guarded CheckWebhookTarget(%s): %v", c.url, err)
		}
		if err := account.CheckWebhookTarget(u, paygate.ModeTest, webhook.Policy{}); err != nil {
			t.Errorf("unguarded test mode refused %s: %v", c.url, err)
		}
	}
}

// TestShownResponse: never more than 1 KiB of an endpoint's answer, and
// nothing of it from a non-public address when the guard applies.
func TestShownResponse(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	long := []byte(strings.Repeat("\xff", 600) + strings.Repeat("a", 2000))
	public := paygate.DeliveryAttempt{URL: "https://hooks.example.com/", Response: long, PrivateAddress: &no}
	for _, mode := range []paygate.Mode{paygate.ModeTest, paygate.ModeLive} {
		for _, p := range []webhook.Policy{{}, {GuardTestMode: true}} {
			got := account.ShownResponse(public, mode, p)
			if len(got) > paygate.MaxAttemptResponse || len(got) < paygate.MaxAttemptResponse-3 || !utf8.ValidString(got) {
				t.Errorf("%s %+v: shown %d bytes (valid UTF-8 %v), want at most 1 KiB", mode, p, len(got), utf8.ValidString(got))
			}
		}
	}
	for _, a := range []paygate.DeliveryAttempt{
		{URL: "http://127.0.0.1:9/", Response: []byte("internal"), PrivateAddress: &yes},
		{URL: "http://hooks.example.com/", Response: []byte("internal"), PrivateAddress: &yes}, // a name that resolved inside
		{URL: "http://10.0.0.5/", Response: []byte("internal")},                                // recorded before the address was
		{URL: "http://localhost:9/", Response: []byte("internal")},
	} {
		if got := account.ShownResponse(a, paygate.ModeTest, webhook.Policy{GuardTestMode: true}); got != "" {
			t.Errorf("guarded test mode showed %q of %s", got, a.URL)
		}
		if got := account.ShownResponse(a, paygate.ModeLive, webhook.Policy{}); got != "" {
			t.Errorf("live mode showed %q of %s", got, a.URL)
		}
		if got := account.ShownResponse(a, paygate.ModeTest, webhook.Policy{}); got != "internal" {
			t.Errorf("unguarded test mode showed %q of %s, want the answer", got, a.URL)
		}
	}
}
