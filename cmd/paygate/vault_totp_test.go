package main

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"github.com/paygate/paygate/internal/dashboard"
	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store"
)

// A vault key rotation (README: add a new key first, rewrap, drop the old
// one) must not lock MFA users out: rewrap moves their TOTP secrets too.
func TestVaultRewrapMovesTOTPSecrets(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, db string) {
		ctx := context.Background()
		m := newMerchant(t, db, "Rewrap TOTP")
		oldKey, newKey := newVaultKey(t), newVaultKey(t)
		const secret = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP"

		// A user enrolled under the old key.
		st, err := store.Open(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		now := paygate.SystemClock{}.Now()
		u := paygate.User{ID: id.New(), MerchantID: m.MerchantID, Email: "mfa-" + id.New() + "@example.com",
			PasswordHash: "x", Role: paygate.RoleOwner, CreatedAt: now, UpdatedAt: now}
		sealed, err := openTestVault(t, oldKey).SealSecret(dashboard.TOTPSecretContext(u), []byte(secret))
		if err != nil {
			t.Fatal(err)
		}
		err = st.Commit(ctx, paygate.Unit{Ops: []paygate.Op{u,
			paygate.MFAChange{MerchantID: u.MerchantID, UserID: u.ID, Secret: sealed, RecoveryCodeHashes: [][]byte{make([]byte, 32)}, At: now}}})
		st.Close()
		if err != nil {
			t.Fatal(err)
		}

		r := cliRun(t, nil, "vault", "rewrap", "--database-url", db, "--vault-key", newKey+","+oldKey).mustSucceed(t)
		if !strings.Contains(r.stdout, "Rewrapped the TOTP secrets of 1 dashboard users") {
			t.Errorf("rewrap printed %q", r.stdout)
		}

		// The old key dropped: the secret opens and the code verifies.
		st, err = store.Open(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		users, err := st.Users(ctx, paygate.UserQuery{MerchantID: u.MerchantID, ID: u.ID})
		if err != nil || len(users) != 1 {
			t.Fatalf("user: %v %v", users, err)
		}
		got, err := openTestVault(t, newKey).OpenSecret(dashboard.TOTPSecretContext(users[0]), users[0].MFASecret)
		if err != nil {
			t.Fatalf("TOTP secret under the new key alone: %v", err)
		}
		at := time.Now()
		code, _ := totp.GenerateCode(secret, at)
		opts := totp.ValidateOpts{Period: 30, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1}
		if ok, err := totp.ValidateCustom(code, string(got), at, opts); !ok || err != nil {
			t.Errorf("the code does not verify after the rotation: %v", err)
		}
		ids, err := dashboard.TOTPSecretKeyIDs(ctx, st)
		if err != nil || ids[openTestVault(t, newKey).PrimaryKeyID()] != 1 || len(ids) != 1 {
			t.Errorf("TOTP key ids in use: %v %v", ids, err)
		}
	})
}

// The startup check of the keys in use counts TOTP secrets: one sealed
// under a key that is not configured is warned about, one under an older
// configured key gets the hint to rewrap.
func TestLogVaultCountsTOTPSecrets(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := sqliteURL(t)
	m := newMerchant(t, db, "TOTP keys")
	oldKey, newKey := newVaultKey(t), newVaultKey(t)
	st, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := paygate.SystemClock{}.Now()
	u := paygate.User{ID: id.New(), MerchantID: m.MerchantID, Email: "k-" + id.New() + "@example.com",
		PasswordHash: "x", Role: paygate.RoleOwner, CreatedAt: now, UpdatedAt: now}
	sealed, err := openTestVault(t, oldKey).SealSecret(dashboard.TOTPSecretContext(u), []byte("JBSWY3DPEHPK3PXP"))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Commit(ctx, paygate.Unit{Ops: []paygate.Op{u,
		paygate.MFAChange{MerchantID: u.MerchantID, UserID: u.ID, Secret: sealed, RecoveryCodeHashes: [][]byte{make([]byte, 32)}, At: now}}}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		keys []string
		want string
	}{
		{[]string{newKey}, "TOTP secrets are sealed under master keys that are not configured"},
		{[]string{newKey, oldKey}, "TOTP secrets are sealed under an older master key"},
	} {
		var buf bytes.Buffer
		if err := logVault(ctx, slog.New(slog.NewTextHandler(&buf, nil)), st, openTestVault(t, c.keys...), vaultKeySource{}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), c.want) || !strings.Contains(buf.String(), "users=1") {
			t.Errorf("keys %d: log %s", len(c.keys), buf.String())
		}
	}
}
