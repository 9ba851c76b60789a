package storetest

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// CheckUpgradedAccounts reads back, through the store, the merchants, API
// keys, user, sessions and audit entries an upgrade test of either engine
// wrote at the schema before its migration (created at, or later; the live
// session expires a day after later), as the new schema reads them, and
// checks that a key rotated before the upgrade still refuses a second
// rotation.
func CheckUpgradedAccounts(t *testing.T, s paygate.Store, at, later time.Time) {
	t.Helper()
	ctx := t.Context()
	merchants, err := s.Merchants(ctx, paygate.MerchantQuery{})
	wantRows(t, "merchants", merchants, err, []paygate.Merchant{
		{ID: "m1", Name: "Shop", CreatedAt: at}, {ID: "m2", Name: "Other shop", CreatedAt: later},
	})
	keys, err := s.APIKeys(ctx, paygate.APIKeyQuery{MerchantID: "m1"})
	wantRows(t, "API keys", keys, err, []paygate.APIKey{
		{ID: "k-plain", MerchantID: "m1", Mode: paygate.ModeTest, Type: paygate.KeyPublic, Hash: []byte{1},
			Hint: "pk_test_…aaaa", CreatedAt: at},
		{ID: "k-old", MerchantID: "m1", Mode: paygate.ModeLive, Type: paygate.KeySecret, Hash: []byte{2},
			Hint: "sk_live_…bbbb", CreatedAt: at, ExpiresAt: &later, RevokedAt: &later},
		{ID: "k-next", MerchantID: "m1", Mode: paygate.ModeLive, Type: paygate.KeySecret, Hash: []byte{3},
			Hint: "sk_live_…cccc", CreatedAt: later, LastUsedAt: &later},
	})
	// A user of before roles (issue 22) is an owner.
	user := paygate.User{ID: "u1", MerchantID: "m1", Email: "ada@shop.example", PasswordHash: "$argon2id$v=19$x",
		Role: paygate.RoleOwner, CreatedAt: at, UpdatedAt: later}
	u, err := s.UserByEmail(ctx, "ada@shop.example")
	wantRows(t, "user", []paygate.User{u}, err, []paygate.User{user})
	for _, want := range []paygate.Session{
		{ID: "s-live", TokenHash: []byte{0x10}, UserID: "u1", MerchantID: "m1", CreatedAt: at, LastSeenAt: later,
			ExpiresAt: later.Add(24 * time.Hour)},
		{ID: "s-revoked", TokenHash: []byte{0x11}, UserID: "u1", MerchantID: "m1", CreatedAt: at, LastSeenAt: at,
			ExpiresAt: later, RevokedAt: &later, RemoteAddr: "192.0.2.1"},
	} {
		se, u, err := s.SessionByTokenHash(ctx, want.TokenHash)
		wantRows(t, "session "+want.ID, []any{se, u}, err, []any{want, user})
	}
	audit, err := s.AuditLog(ctx, paygate.AuditQuery{MerchantID: "m1"})
	wantRows(t, "audit log", audit, err, []paygate.AuditEntry{
		{ID: "a2", MerchantID: "m1", Mode: paygate.ModeLive, UserID: "u1", Email: "ada@shop.example",
			Action: "key_rotated", Target: "k-old", Detail: "expires later", RemoteAddr: "192.0.2.1", CreatedAt: later},
		{ID: "a1", MerchantID: "m1", Action: "sign_in", CreatedAt: at},
	})

	// The successor written before the upgrade still marks the key rotated.
	next := paygate.APIKey{ID: "k-third", MerchantID: "m1", Mode: paygate.ModeLive, Type: paygate.KeySecret,
		Hash: []byte{4}, Hint: "sk_live_…dddd", CreatedAt: at.Add(time.Minute)}
	err = s.Commit(ctx, paygate.Unit{Ops: []paygate.Op{paygate.APIKeyRotation{OldID: "k-old", Next: next, OldExpiresAt: later}}})
	var replaced *paygate.KeyReplacedError
	if !errors.As(err, &replaced) || replaced.SuccessorID != "k-next" {
		t.Errorf("rotating a key rotated before the upgrade: %v, want its successor k-next", err)
	}
}

// wantRows compares rows read back after an upgrade with the rows written.
func wantRows[T any](t *testing.T, what string, got T, err error, want T) {
	t.Helper()
	if err != nil {
		t.Errorf("%s after the upgrade: %v", what, err)
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s after the upgrade:\n got %+v\nwant %+v", what, got, want)
	}
}
