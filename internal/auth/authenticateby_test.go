package auth

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// TestAuthenticateBy checks that a key read by the caller's lookup (one
// that reads more beside it, paygate.RequestReader) is judged exactly as
// Authenticate judges the store's: the lookup's NOT_FOUND and any key that
// is not an active secret key answer 401, a public key is refused without a
// lookup, and a failed lookup is no 401.
func TestAuthenticateBy(t *testing.T) {
	s := newFakeStore()
	secret := addKey(t, s, paygate.ModeTest, paygate.KeySecret, nil)
	revoked := addKey(t, s, paygate.ModeTest, paygate.KeySecret, func(k *paygate.APIKey) { k.RevokedAt = at(now.Add(-time.Minute)) })
	public := addKey(t, s, paygate.ModeTest, paygate.KeyPublic, nil)
	a := &Authenticator{Store: s, Clock: fixedClock{now}}
	lookups := 0
	byStore := func(hash []byte) (paygate.APIKey, error) {
		lookups++
		return paygate.OneAPIKey(s.APIKeys(context.Background(), paygate.APIKeyQuery{Hash: hash}))
	}

	key, err := a.AuthenticateBy(secret, byStore)
	want, _ := a.Authenticate(context.Background(), secret)
	if err != nil || key.ID == "" || key.ID != want.ID || lookups != 1 {
		t.Fatalf("secret key: %q, %v, %d lookups; want %q after one lookup", key.ID, err, lookups, want.ID)
	}
	for name, header := range map[string]string{
		"revoked": revoked, "unknown": "smtgw_sk_test_unknownunknownunknownunknownunknown1", "empty": "",
	} {
		if _, err := a.AuthenticateBy(header, byStore); paygate.ErrorCode(err) != paygate.CodeUnauthorized {
			t.Errorf("%s key: %v, want UNAUTHORIZED", name, err)
		}
	}
	lookups = 0
	if _, err := a.AuthenticateBy(public, byStore); paygate.ErrorCode(err) != paygate.CodeUnauthorized || lookups != 0 {
		t.Errorf("public key: %v after %d lookups; want UNAUTHORIZED without a lookup", err, lookups)
	}
	down := errors.New("database down")
	_, err = a.AuthenticateBy(secret, func([]byte) (paygate.APIKey, error) { return paygate.APIKey{}, down })
	if !errors.Is(err, down) || paygate.ErrorCode(err) == paygate.CodeUnauthorized {
		t.Errorf("failed lookup: %v; want the failure, not UNAUTHORIZED", err)
	}
}
