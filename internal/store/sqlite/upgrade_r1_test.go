package sqlite

import (
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/store/storetest"
)

// TestUpgradeKeepsEveryAccountRow upgrades a file holding merchants, API
// keys, users, sessions and audit entries written as the schema before
// 00015 allowed (optional times NULL and set, a rotated key's successor,
// text columns left to their defaults) and reads each back through the
// store: every row is kept and reads as written, in UTC, through the one
// row mapping (codec/account.go); a rotated key still refuses a second
// rotation, and the mode and type checks PostgreSQL declares alike still
// refuse a bad value.
func TestUpgradeKeepsEveryAccountRow(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path, db, _ := schemaAt(t, 14)
	at := time.Date(2026, 11, 1, 12, 0, 0, 123456000, time.UTC)
	later := at.Add(90*time.Minute + 7*time.Microsecond)
	expires := later.Add(24 * time.Hour)
	for _, q := range []string{
		`INSERT INTO merchants (id, name, created_at) VALUES ('m1', 'Shop', ?1)`,
		`INSERT INTO merchants (id, name, created_at) VALUES ('m2', 'Other shop', ?2)`,
		// No expiry, revocation, last use or successor: all NULL.
		`INSERT INTO api_keys (id, merchant_id, mode, type, hash, hint, created_at)
		VALUES ('k-plain', 'm1', 'test', 'public', x'01', 'pk_test_…aaaa', ?1)`,
		// Rotated: an expiry and a successor; revoked too.
		`INSERT INTO api_keys (id, merchant_id, mode, type, hash, hint, created_at, expires_at, revoked_at, successor_id)
		VALUES ('k-old', 'm1', 'live', 'secret', x'02', 'sk_live_…bbbb', ?1, ?2, ?2, 'k-next')`,
		`INSERT INTO api_keys (id, merchant_id, mode, type, hash, hint, created_at, last_used_at)
		VALUES ('k-next', 'm1', 'live', 'secret', x'03', 'sk_live_…cccc', ?2, ?2)`,
		`INSERT INTO users (id, merchant_id, email, password_hash, created_at, updated_at)
		VALUES ('u1', 'm1', 'ada@shop.example', '$argon2id$v=19$x', ?1, ?2)`,
		// remote_addr left to its default.
		`INSERT INTO sessions (id, token_hash, user_id, merchant_id, created_at, last_seen_at, expires_at)
		VALUES ('s-live', x'10', 'u1', 'm1', ?1, ?2, ?3)`,
		`INSERT INTO sessions (id, token_hash, user_id, merchant_id, created_at, last_seen_at, expires_at, revoked_at, remote_addr)
		VALUES ('s-revoked', x'11', 'u1', 'm1', ?1, ?1, ?2, ?2, '192.0.2.1')`,
		// A sign-in: no mode, every optional text left to its default.
		`INSERT INTO audit_log (id, merchant_id, mode, action, created_at) VALUES ('a1', 'm1', '', 'sign_in', ?1)`,
		`INSERT INTO audit_log (id, merchant_id, mode, user_id, email, action, target, detail, remote_addr, created_at)
		VALUES ('a2', 'm1', 'live', 'u1', 'ada@shop.example', 'key_rotated', 'k-old', 'expires later', '192.0.2.1', ?2)`,
	} {
		if _, err := db.ExecContext(ctx, q, at.UnixMicro(), later.UnixMicro(), expires.UnixMicro()); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s, err := Open(ctx, path) // applies 00015 and later
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
		_, err := s.write.ExecContext(ctx, q)
		if err == nil || !strings.Contains(err.Error(), "CHECK constraint failed") {
			t.Errorf("%s: %v, want a check violation", name, err)
		}
	}
}
