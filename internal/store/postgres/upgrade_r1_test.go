package postgres

import (
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/paygate/paygate/internal/store/storetest"
)

// TestUpgradeKeepsEveryAccountRow upgrades a database holding merchants, API
// keys, users, sessions and audit entries written as the schema before 00017
// allowed (optional times NULL and set, a rotated key's successor, text
// columns left to their defaults) and reads each back through the store:
// every row is kept and reads as written, in UTC, through the one row
// mapping (codec/account.go); a rotated key still refuses a second rotation,
// and the mode and type checks still refuse a bad value.
func TestUpgradeKeepsEveryAccountRow(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url, db, _ := schemaAt(t, 16)
	at := time.Date(2026, 11, 1, 12, 0, 0, 123456000, time.UTC)
	later := at.Add(90*time.Minute + 7*time.Microsecond)
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO merchants (id, name, created_at) VALUES ('m1', 'Shop', $1)`, []any{at}},
		{`INSERT INTO merchants (id, name, created_at) VALUES ('m2', 'Other shop', $1)`, []any{later}},
		// No expiry, revocation, last use or successor: all NULL.
		{`INSERT INTO api_keys (id, merchant_id, mode, type, hash, hint, created_at)
		VALUES ('k-plain', 'm1', 'test', 'public', '\x01', 'pk_test_…aaaa', $1)`, []any{at}},
		// Rotated: an expiry and a successor; revoked too.
		{`INSERT INTO api_keys (id, merchant_id, mode, type, hash, hint, created_at, expires_at, revoked_at, successor_id)
		VALUES ('k-old', 'm1', 'live', 'secret', '\x02', 'sk_live_…bbbb', $1, $2, $2, 'k-next')`, []any{at, later}},
		{`INSERT INTO api_keys (id, merchant_id, mode, type, hash, hint, created_at, last_used_at)
		VALUES ('k-next', 'm1', 'live', 'secret', '\x03', 'sk_live_…cccc', $1, $1)`, []any{later}},
		{`INSERT INTO users (id, merchant_id, email, password_hash, created_at, updated_at)
		VALUES ('u1', 'm1', 'ada@shop.example', '$argon2id$v=19$x', $1, $2)`, []any{at, later}},
		// remote_addr left to its default.
		{`INSERT INTO sessions (id, token_hash, user_id, merchant_id, created_at, last_seen_at, expires_at)
		VALUES ('s-live', '\x10', 'u1', 'm1', $1, $2, $2::timestamptz + interval '1 day')`, []any{at, later}},
		{`INSERT INTO sessions (id, token_hash, user_id, merchant_id, created_at, last_seen_at, expires_at, revoked_at, remote_addr)
		VALUES ('s-revoked', '\x11', 'u1', 'm1', $1, $1, $2, $2, '192.0.2.1')`, []any{at, later}},
		// A sign-in: no mode, every optional text left to its default.
		{`INSERT INTO audit_log (id, merchant_id, mode, action, created_at) VALUES ('a1', 'm1', '', 'sign_in', $1)`, []any{at}},
		{`INSERT INTO audit_log (id, merchant_id, mode, user_id, email, action, target, detail, remote_addr, created_at)
		VALUES ('a2', 'm1', 'live', 'u1', 'ada@shop.example', 'key_rotated', 'k-old', 'expires later', '192.0.2.1', $1)`, []any{later}},
	} {
		if _, err := db.ExecContext(ctx, q.sql, q.args...); err != nil {
			t.Fatal(err)
		}
	}

	s, err := Open(ctx, url) // applies 00017 and later
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })

	storetest.CheckUpgradedAccounts(t, s, at, later)

	// The checks hold.
	for name, q := range map[string]string{
		"api_keys mode":  `UPDATE api_keys SET mode = 'staging' WHERE id = 'k-plain'`,
		"api_keys type":  `UPDATE api_keys SET type = 'restricted' WHERE id = 'k-plain'`,
		"audit_log mode": `UPDATE audit_log SET mode = 'sandbox' WHERE id = 'a1'`,
	} {
		_, err := s.pool.Exec(ctx, q)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "23514" {
			t.Errorf("%s: %v, want a check violation", name, err)
		}
	}
}
