package vault

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/paygate/paygate/internal/paygate"
)

const pan = paygate.PAN("4242424242424242")

func newKey(t *testing.T) []byte {
	t.Helper()
	k := make([]byte, KeySize)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return k
}

func newVault(t *testing.T, keys ...[]byte) *Vault {
	t.Helper()
	v, err := New(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func card(id string) paygate.StoredCard {
	return paygate.StoredCard{
		ID: id, MerchantID: "merchant-1", Mode: paygate.ModeTest, CustomerID: "customer-1",
		State: paygate.StoredCardActive, Brand: "visa", Last4: "4242", ExpMonth: 12, ExpYear: 2034,
	}
}

// sealed returns the card with its number sealed by v.
func sealed(t *testing.T, v *Vault, c paygate.StoredCard, number paygate.PAN) paygate.StoredCard {
	t.Helper()
	s, err := v.Seal(c, number)
	if err != nil {
		t.Fatal(err)
	}
	c.Sealed = s
	return c
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	v := newVault(t, newKey(t))
	c := sealed(t, v, card("card-1"), pan)
	if c.Sealed.KeyID != v.PrimaryKeyID() || len(c.Sealed.KeyID) != 16 {
		t.Errorf("key id %q, want the primary %q (16 hex digits)", c.Sealed.KeyID, v.PrimaryKeyID())
	}
	for name, b := range map[string][]byte{"ciphertext": c.Sealed.Ciphertext, "wrapped key": c.Sealed.WrappedKey, "fingerprint": []byte(c.Sealed.Fingerprint)} {
		if bytes.Contains(b, []byte(pan.Reveal())) || bytes.Contains(b, []byte("4242")) {
			t.Errorf("the %s shows the number", name)
		}
	}
	got, err := v.Open(c)
	if err != nil {
		t.Fatal(err)
	}
	if got.Reveal() != pan.Reveal() {
		t.Fatal("Open returned another number")
	}
	// A fresh data key and nonce every time: two seals of one number differ.
	again := sealed(t, v, c, pan)
	if bytes.Equal(again.Sealed.Ciphertext, c.Sealed.Ciphertext) || bytes.Equal(again.Sealed.WrappedKey, c.Sealed.WrappedKey) {
		t.Error("two seals of one number are equal")
	}
	// The fingerprint is stable under one key, differs between numbers.
	if again.Sealed.Fingerprint != c.Sealed.Fingerprint || v.Fingerprint(pan) != c.Sealed.Fingerprint {
		t.Error("the fingerprint of one number changed")
	}
	if v.Fingerprint("5555555555554444") == c.Sealed.Fingerprint {
		t.Error("two numbers share a fingerprint")
	}
}

// TestBinding moves a sealed number to another card (another id, merchant,
// mode or customer), as a row swap in the database would: it must not open.
func TestBinding(t *testing.T) {
	t.Parallel()
	v := newVault(t, newKey(t))
	c := sealed(t, v, card("card-1"), pan)
	for name, change := range map[string]func(*paygate.StoredCard){
		"ID":       func(o *paygate.StoredCard) { o.ID = "card-2" },
		"Merchant": func(o *paygate.StoredCard) { o.MerchantID = "merchant-2" },
		"Mode":     func(o *paygate.StoredCard) { o.Mode = paygate.ModeLive },
		"Customer": func(o *paygate.StoredCard) { o.CustomerID = "customer-2" },
	} {
		t.Run(name, func(t *testing.T) {
			moved := c
			change(&moved)
			if _, err := v.Open(moved); !errors.Is(err, ErrTampered) {
				t.Fatalf("opened a ciphertext bound to another card: err %v", err)
			}
		})
	}

	// Swapping ciphertexts (or wrapped keys) between two real cards.
	d := sealed(t, v, card("card-2"), "5555555555554444")
	swapped := c
	swapped.Sealed.Ciphertext = d.Sealed.Ciphertext
	if _, err := v.Open(swapped); !errors.Is(err, ErrTampered) {
		t.Errorf("swapped ciphertext: err %v", err)
	}
	swapped = c
	swapped.Sealed.WrappedKey = d.Sealed.WrappedKey
	if _, err := v.Open(swapped); !errors.Is(err, ErrTampered) {
		t.Errorf("swapped wrapped key: err %v", err)
	}
	// The whole seal swapped: still bound to the other card.
	swapped = c
	swapped.Sealed = d.Sealed
	if _, err := v.Open(swapped); !errors.Is(err, ErrTampered) {
		t.Errorf("swapped seal: err %v", err)
	}
}

func TestTamper(t *testing.T) {
	t.Parallel()
	v := newVault(t, newKey(t))
	c := sealed(t, v, card("card-1"), pan)
	for _, field := range []string{"ciphertext", "wrapped"} {
		src := c.Sealed.Ciphertext
		if field == "wrapped" {
			src = c.Sealed.WrappedKey
		}
		for i := range src {
			flipped := bytes.Clone(src)
			flipped[i] ^= 0x01
			bad := c
			if field == "wrapped" {
				bad.Sealed.WrappedKey = flipped
			} else {
				bad.Sealed.Ciphertext = flipped
			}
			if _, err := v.Open(bad); !errors.Is(err, ErrTampered) {
				t.Fatalf("%s with byte %d flipped: err %v", field, i, err)
			}
		}
	}
	for name, b := range map[string][]byte{"Empty": nil, "Short": c.Sealed.Ciphertext[:10], "Truncated": c.Sealed.Ciphertext[:len(c.Sealed.Ciphertext)-1]} {
		bad := c
		bad.Sealed.Ciphertext = b
		if _, err := v.Open(bad); !errors.Is(err, ErrTampered) {
			t.Errorf("%s ciphertext: err %v", name, err)
		}
	}
}

func TestWrongKey(t *testing.T) {
	t.Parallel()
	k1, k2 := newKey(t), newKey(t)
	c := sealed(t, newVault(t, k1), card("card-1"), pan)
	// A vault without the key does not know its id.
	if _, err := newVault(t, k2).Open(c); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("open without the key: err %v, want ErrUnknownKey", err)
	}
	// A record that claims the id of a configured key it was not sealed
	// under fails authentication.
	v2 := newVault(t, k2)
	forged := c
	forged.Sealed.KeyID = v2.PrimaryKeyID()
	if _, err := v2.Open(forged); !errors.Is(err, ErrTampered) {
		t.Errorf("open under a wrong key: err %v, want ErrTampered", err)
	}
	// Errors name neither the number nor a key.
	for _, err := range []error{ErrTampered, ErrUnknownKey} {
		msg := err.Error()
		if strings.Contains(msg, pan.Reveal()) || strings.Contains(msg, base64.StdEncoding.EncodeToString(k1)) {
			t.Errorf("error %q leaks", msg)
		}
	}
}

// TestRotation adds a key, rewraps, drops the old key: the card still opens,
// and its fingerprint follows it.
func TestRotation(t *testing.T) {
	t.Parallel()
	oldKey, newK := newKey(t), newKey(t)
	before := newVault(t, oldKey)
	c := sealed(t, before, card("card-1"), pan)

	during := newVault(t, newK, oldKey) // the new key seals, both open
	if got, err := during.Open(c); err != nil || got.Reveal() != pan.Reveal() {
		t.Fatalf("open under the older key: %v", err)
	}
	fps := during.Fingerprints(pan)
	if len(fps) != 2 || fps[0] != during.Fingerprint(pan) || fps[1] != c.Sealed.Fingerprint {
		t.Fatalf("fingerprints under both keys: %v (stored %s)", fps, c.Sealed.Fingerprint)
	}
	s, moved, err := during.Rewrap(c)
	if err != nil || !moved {
		t.Fatalf("rewrap: moved %v, err %v", moved, err)
	}
	if s.KeyID != during.PrimaryKeyID() || s.Fingerprint != during.Fingerprint(pan) || bytes.Equal(s.WrappedKey, c.Sealed.WrappedKey) {
		t.Fatalf("rewrapped seal %+v is not under the new key", s)
	}
	c.Sealed = s
	if _, moved, _ := during.Rewrap(c); moved {
		t.Error("a card under the first key was rewrapped again")
	}

	after := newVault(t, newK) // the old key dropped
	if got, err := after.Open(c); err != nil || got.Reveal() != pan.Reveal() {
		t.Fatalf("open after the old key was dropped: %v", err)
	}
	if _, err := newVault(t, oldKey).Open(c); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("the old key alone still opens the rewrapped card: %v", err)
	}
	// A rewrap without the card's key fails and names why.
	if _, _, err := newVault(t, newKey(t)).Rewrap(c); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("rewrap without the key: %v", err)
	}
}

func TestKeys(t *testing.T) {
	t.Parallel()
	k := newKey(t)
	enc := base64.StdEncoding.EncodeToString(k)
	keys, err := ParseKeys([]string{enc, " " + base64.StdEncoding.EncodeToString(newKey(t)) + "\n"})
	if err != nil || len(keys) != 2 || !bytes.Equal(keys[0], k) {
		t.Fatalf("ParseKeys: %v", err)
	}
	for name, bad := range map[string][]string{
		"None":     nil,
		"NotB64":   {"not base64!"},
		"Short":    {base64.StdEncoding.EncodeToString(k[:16])},
		"Long":     {base64.StdEncoding.EncodeToString(append(bytes.Clone(k), 0))},
		"Second":   {enc, "xx"},
		"URLSafe?": {strings.NewReplacer("+", "-", "/", "_").Replace(enc) + "!"},
	} {
		_, err := ParseKeys(bad)
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		for _, b := range bad {
			if len(b) > 4 && strings.Contains(err.Error(), b) {
				t.Errorf("%s: the error %q repeats the key", name, err)
			}
		}
	}
	if _, err := New(k, k); err == nil {
		t.Error("the same key twice was accepted")
	}
	if _, err := New(k[:31]); err == nil {
		t.Error("a 31-byte key was accepted")
	}
	if _, err := New(); err == nil {
		t.Error("no key was accepted")
	}

	// The key id is stable, short, and not the key.
	id1, _ := KeyID(k)
	id2, _ := KeyID(bytes.Clone(k))
	if id1 != id2 || len(id1) != 16 || strings.Contains(enc, id1) || strings.Contains(fmt.Sprintf("%x", k), id1) {
		t.Errorf("key id %q", id1)
	}
	v := newVault(t, k, newKey(t))
	if ids := v.KeyIDs(); len(ids) != 2 || ids[0] != id1 || v.PrimaryKeyID() != id1 {
		t.Errorf("key ids %v, primary %s", ids, v.PrimaryKeyID())
	}

	g, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	if ks, err := ParseKeys([]string{g}); err != nil || len(ks[0]) != KeySize {
		t.Errorf("a generated key does not parse: %v", err)
	}
}

// TestSealNeedsIdentity refuses to seal a card whose identity is not set:
// it would bind the ciphertext to nothing.
func TestSealNeedsIdentity(t *testing.T) {
	t.Parallel()
	v := newVault(t, newKey(t))
	c := card("")
	if _, err := v.Seal(c, pan); err == nil {
		t.Error("sealed a card without an id")
	}
	c = card("card-1")
	c.Mode = ""
	if _, err := v.Seal(c, pan); err == nil {
		t.Error("sealed a card without a mode")
	}
}
