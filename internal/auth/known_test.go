package auth

import (
	"context"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// TestKnown checks what Known remembers: only secret keys that
// authenticated on this instance, by their full header, whatever happened
// to them since (the caller verifies), and within its bound.
func TestKnown(t *testing.T) {
	s := newFakeStore()
	secret := addKey(t, s, paygate.ModeTest, paygate.KeySecret, nil)
	other := addKey(t, s, paygate.ModeTest, paygate.KeySecret, nil)
	revoked := addKey(t, s, paygate.ModeTest, paygate.KeySecret, func(k *paygate.APIKey) { k.RevokedAt = at(now.Add(-time.Minute)) })
	public := addKey(t, s, paygate.ModeTest, paygate.KeyPublic, nil)
	a := &Authenticator{Store: s, Clock: fixedClock{now}}

	if _, ok := a.Known(secret); ok {
		t.Fatal("a key is known before it authenticated")
	}
	want, err := a.Authenticate(context.Background(), secret)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := a.Known(secret); !ok || got.ID != want.ID || got.MerchantID != want.MerchantID || got.Mode != want.Mode {
		t.Fatalf("after authenticating: %+v, %v; want %+v", got, ok, want)
	}
	for name, header := range map[string]string{
		"another key that did not authenticate": other,
		"a revoked key":                         revoked,
		"a public key":                          public,
		"the key with a character changed":      secret[:len(secret)-1] + string(secret[len(secret)-1]^1),
		"empty":                                 "",
	} {
		if header != other {
			_, _ = a.Authenticate(context.Background(), header) // refused
		}
		if _, ok := a.Known(header); ok {
			t.Errorf("%s is known", name)
		}
	}

	// The bound: remembering more keys than it holds forgets the older
	// ones rather than growing.
	for i := range knownLimit {
		a.remember(paygate.APIKey{ID: "k", Hash: []byte{byte(i), byte(i >> 8), byte(i >> 16)}, Mode: paygate.ModeTest})
	}
	a.knownMu.RLock()
	n := len(a.known)
	a.knownMu.RUnlock()
	if n > knownLimit {
		t.Errorf("%d keys remembered, limit %d", n, knownLimit)
	}
	if _, ok := a.Known(secret); ok {
		t.Error("the first key is still known after the limit was passed")
	}
}
