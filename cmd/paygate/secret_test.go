package main

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/paygate/paygate/internal/store"
)

// TestWebhookSecretUpgrade: an endpoint written by a version before sealed
// secrets (plain secret in its row) is converted by the next command that
// opens the store with the vault, keeps its secret, and no column holds it
// afterwards.
func TestWebhookSecretUpgrade(t *testing.T) {
	t.Parallel()
	db := sqliteURL(t)
	m := newMerchant(t, db, "Upgrade")
	path, _ := store.SQLitePath(db)
	const old = "whsec_b2xkIHBsYWluIHNlY3JldCBvZiBhbiBlYXJsaWVyIHZlcnNpb24="
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	now := time.Now().UnixMicro()
	if _, err := raw.ExecContext(context.Background(), `
		INSERT INTO webhook_endpoints (merchant_id, mode, url, secret, events, created_at, updated_at, previous_secret)
		VALUES (?, 'test', 'http://127.0.0.1:9/old', ?, '[]', ?, ?, '')`, m.MerchantID, old, now, now); err != nil {
		t.Fatal(err)
	}
	var out webhookSet
	jsonLine(t, cliRun(t, nil, "webhook", "set", "--merchant", m.MerchantID, "--mode", "test",
		"--url", "http://127.0.0.1:9/new", "--json", "--database-url", db), &out)
	if out.Secret != old {
		t.Errorf("webhook set printed another secret than the stored one")
	}
	var secret string
	var sealed []byte
	if err := raw.QueryRowContext(context.Background(),
		`SELECT secret, secret_sealed FROM webhook_endpoints WHERE merchant_id = ?`, m.MerchantID).Scan(&secret, &sealed); err != nil {
		t.Fatal(err)
	}
	if secret != "" || len(sealed) == 0 || strings.Contains(string(sealed), strings.TrimPrefix(old, "whsec_")) {
		t.Errorf("after the upgrade: plain column %q, %d sealed bytes", secret, len(sealed))
	}
}
