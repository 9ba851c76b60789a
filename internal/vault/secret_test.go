package vault

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/paygate/paygate/internal/paygate"
)

func secretContext() SecretContext {
	return SecretContext{Purpose: PurposeWebhookSecret, MerchantID: "merchant-1", Mode: paygate.ModeTest}
}

func TestSecretSealOpen(t *testing.T) {
	t.Parallel()
	secret := []byte("whsec_c2VjcmV0IHNpZ25pbmcga2V5IG9mIDMyIGJ5dGVzIQ==")
	k1, k2 := newKey(t), newKey(t)
	v := newVault(t, k1)
	c := secretContext()
	sealed, err := v.SealSecret(c, secret)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, secret) || bytes.Contains(sealed, secret[6:]) {
		t.Fatal("the sealed secret holds the secret")
	}
	id, err := SecretKeyID(sealed)
	if err != nil || id != v.PrimaryKeyID() {
		t.Fatalf("key id %q, %v; want %q", id, err, v.PrimaryKeyID())
	}

	t.Run("OK", func(t *testing.T) {
		got, err := v.OpenSecret(c, sealed)
		if err != nil || !bytes.Equal(got, secret) {
			t.Fatalf("OpenSecret = %q, %v", got, err)
		}
	})
	t.Run("ErrMovedToAnotherRow", func(t *testing.T) {
		for name, other := range map[string]SecretContext{
			"merchant": {Purpose: c.Purpose, MerchantID: "merchant-2", Mode: c.Mode},
			"mode":     {Purpose: c.Purpose, MerchantID: c.MerchantID, Mode: paygate.ModeLive},
			"purpose":  {Purpose: "other", MerchantID: c.MerchantID, Mode: c.Mode},
		} {
			if got, err := v.OpenSecret(other, sealed); !errors.Is(err, ErrTampered) {
				t.Errorf("%s: OpenSecret = %q, %v; want ErrTampered", name, got, err)
			}
		}
	})
	t.Run("ErrTampered", func(t *testing.T) {
		for i := range sealed {
			bad := bytes.Clone(sealed)
			bad[i] ^= 0x01
			if _, err := v.OpenSecret(c, bad); err == nil {
				t.Fatalf("a flipped byte %d opened", i)
			}
		}
		if _, err := v.OpenSecret(c, sealed[:len(sealed)-1]); !errors.Is(err, ErrTampered) {
			t.Errorf("a truncated seal: %v", err)
		}
		if _, err := v.OpenSecret(c, nil); !errors.Is(err, ErrTampered) {
			t.Errorf("nothing: %v", err)
		}
	})
	t.Run("ErrUnknownKey", func(t *testing.T) {
		_, err := newVault(t, k2).OpenSecret(c, sealed)
		if !errors.Is(err, ErrUnknownKey) {
			t.Errorf("another key: %v, want ErrUnknownKey", err)
		}
		// It speaks of a secret, not a card, and names the key's id.
		var ke *SecretKeyError
		if !errors.As(err, &ke) || ke.KeyID != v.PrimaryKeyID() ||
			err.Error() != "vault: the secret is sealed under master key "+v.PrimaryKeyID()+", which is not configured" {
			t.Errorf("another key: %q", err)
		}
	})
	t.Run("ErrTamperedSpeaksOfTheSecret", func(t *testing.T) {
		bad := bytes.Clone(sealed)
		bad[len(bad)-1] ^= 1
		_, err := v.OpenSecret(c, bad)
		if !errors.Is(err, ErrTampered) || strings.Contains(err.Error(), "card") {
			t.Errorf("a tampered secret: %q", err)
		}
	})
	t.Run("ErrNoVault", func(t *testing.T) {
		var none *Vault
		if _, err := none.OpenSecret(c, sealed); !errors.Is(err, ErrNoSecretKey) {
			t.Errorf("OpenSecret on nil: %v", err)
		}
		if _, err := none.SealSecret(c, secret); !errors.Is(err, ErrNoSecretKey) {
			t.Errorf("SealSecret on nil: %v", err)
		}
	})
	t.Run("RotatedKeys", func(t *testing.T) {
		// k2 first: it seals, k1 still opens, and a rewrap moves to k2.
		rotated := newVault(t, k2, k1)
		got, err := rotated.OpenSecret(c, sealed)
		if err != nil || !bytes.Equal(got, secret) {
			t.Fatalf("OpenSecret under the older key = %q, %v", got, err)
		}
		moved, ok, err := rotated.RewrapSecret(c, sealed)
		if err != nil || !ok {
			t.Fatalf("RewrapSecret = %v, %v", ok, err)
		}
		if id, _ := SecretKeyID(moved); id != rotated.PrimaryKeyID() {
			t.Fatalf("rewrapped under %s, want %s", id, rotated.PrimaryKeyID())
		}
		if _, err := newVault(t, k2).OpenSecret(c, moved); err != nil {
			t.Fatalf("the first key alone does not open the rewrapped secret: %v", err)
		}
		again, ok, err := rotated.RewrapSecret(c, moved)
		if err != nil || ok || !bytes.Equal(again, moved) {
			t.Fatalf("a second rewrap = %v, %v", ok, err)
		}
	})
	t.Run("SeparateFromCards", func(t *testing.T) {
		// The secret key is not the card wrapping key: a secret sealed under
		// the wrapping key with the same layout does not open.
		bad := bytes.Clone(sealed)
		k := v.keys[0]
		n := k.wrap.NonceSize()
		bad = k.wrap.Seal(bad[:1+keyIDSize+n], bad[1+keyIDSize:1+keyIDSize+n], secret, secretAAD(c, k.id))
		if _, err := v.OpenSecret(c, bad); !errors.Is(err, ErrTampered) {
			t.Fatalf("a seal under the card wrapping key opened: %v", err)
		}
	})
}

// TestSealSecretKeyed: a keyed seal opens only with its seal key and
// context; the master key alone (a database copy plus the key file) does
// not open it, nor does OpenSecret.
func TestSealSecretKeyed(t *testing.T) {
	t.Parallel()
	v, err := New(bytes.Repeat([]byte{3}, KeySize))
	if err != nil {
		t.Fatal(err)
	}
	c := SecretContext{Purpose: "card-token:tok_1", MerchantID: "m1", Mode: paygate.ModeTest}
	sealKey := bytes.Repeat([]byte{9}, MinSealKeySize)
	sealed, err := v.SealSecretKeyed(c, sealKey, []byte("4242424242424242|123"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte("4242")) {
		t.Fatal("plaintext in the seal")
	}
	if id, err := SecretKeyID(sealed); err != nil || id != v.secrets[0].id {
		t.Fatalf("key id %q %v", id, err)
	}
	pt, err := v.OpenSecretKeyed(c, sealKey, sealed)
	if err != nil || string(pt) != "4242424242424242|123" {
		t.Fatalf("open: %q %v", pt, err)
	}
	other := bytes.Clone(sealKey)
	other[0] ^= 1
	for name, open := range map[string]func() ([]byte, error){
		"another seal key": func() ([]byte, error) { return v.OpenSecretKeyed(c, other, sealed) },
		"no seal key":      func() ([]byte, error) { return v.OpenSecretKeyed(c, nil, sealed) },
		"another merchant": func() ([]byte, error) {
			return v.OpenSecretKeyed(SecretContext{Purpose: c.Purpose, MerchantID: "m2", Mode: c.Mode}, sealKey, sealed)
		},
		"OpenSecret": func() ([]byte, error) { return v.OpenSecret(c, sealed) },
	} {
		if pt, err := open(); !errors.Is(err, ErrTampered) || pt != nil {
			t.Errorf("%s: %q %v, want ErrTampered", name, pt, err)
		}
	}
	if _, err := v.SealSecretKeyed(c, sealKey[:MinSealKeySize-1], []byte("x")); err == nil {
		t.Error("a short seal key was taken")
	}
}
