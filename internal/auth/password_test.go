package auth

import (
	"encoding/base64"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"
)

// referenceHash is the argon2id vector of the reference implementation
// (phc-winner-argon2, src/test.c): password "password", salt "somesalt",
// m=65536, t=2, p=1, 32-byte key.
const referenceHash = "$argon2id$v=19$m=65536,t=2,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc"

func TestCheckPasswordReferenceVector(t *testing.T) {
	ok, err := CheckPassword(referenceHash, "password")
	if err != nil || !ok {
		t.Fatalf("CheckPassword(reference, password) = %v, %v; want true", ok, err)
	}
	ok, err = CheckPassword(referenceHash, "passwore")
	if err != nil || ok {
		t.Fatalf("CheckPassword(reference, passwore) = %v, %v; want false, nil", ok, err)
	}
	// The PHC string round-trips through the parser and the encoder.
	p, salt, key, err := decodePHC(referenceHash)
	if err != nil {
		t.Fatal(err)
	}
	if got := encodePHC(p, salt, key); got != referenceHash {
		t.Fatalf("re-encoded = %s; want %s", got, referenceHash)
	}
	if !NeedsRehash(referenceHash) {
		t.Error("NeedsRehash(reference at m=65536) = false; want true")
	}
}

func TestHashPassword(t *testing.T) {
	t.Parallel()
	const pw = "correct horse battery staple"
	hash, err := HashPassword(pw)
	if err != nil {
		t.Fatal(err)
	}
	format := regexp.MustCompile(`^\$argon2id\$v=19\$m=19456,t=2,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$`)
	if !format.MatchString(hash) {
		t.Fatalf("hash %q does not have the PHC format of the OWASP parameters", hash)
	}
	if NeedsRehash(hash) {
		t.Error("NeedsRehash(fresh hash) = true")
	}
	if ok, err := CheckPassword(hash, pw); err != nil || !ok {
		t.Fatalf("CheckPassword(hash, pw) = %v, %v", ok, err)
	}
	if ok, err := CheckPassword(hash, pw+" "); err != nil || ok {
		t.Fatalf("CheckPassword(hash, other) = %v, %v; want false, nil", ok, err)
	}
	again, err := HashPassword(pw)
	if err != nil {
		t.Fatal(err)
	}
	if again == hash {
		t.Error("two hashes of one password are equal: the salt is not random")
	}
}

func TestCheckPasswordTampered(t *testing.T) {
	t.Parallel()
	parts := strings.Split(referenceHash, "$")
	key, _ := base64.RawStdEncoding.DecodeString(parts[5])
	key[0] ^= 1
	flipped := strings.Join(append(parts[:5:5], base64.RawStdEncoding.EncodeToString(key)), "$")
	if ok, err := CheckPassword(flipped, "password"); err != nil || ok {
		t.Errorf("CheckPassword(key with a flipped bit) = %v, %v; want false, nil", ok, err)
	}
	otherSalt := strings.Replace(referenceHash, "c29tZXNhbHQ", "c29tZXNhbHR", 1)
	if ok, _ := CheckPassword(otherSalt, "password"); ok {
		t.Error("CheckPassword accepted a hash with another salt")
	}
	otherCost := strings.Replace(referenceHash, "t=2", "t=3", 1)
	if ok, _ := CheckPassword(otherCost, "password"); ok {
		t.Error("CheckPassword accepted a hash with another time cost")
	}

	malformed := []string{
		"",
		"password",
		strings.Replace(referenceHash, "argon2id", "argon2i", 1),
		strings.Replace(referenceHash, "v=19", "v=16", 1),
		strings.Replace(referenceHash, "m=65536,t=2,p=1", "m=65536,t=2", 1),
		strings.Replace(referenceHash, "m=65536", "m=99999999", 1),
		strings.Replace(referenceHash, "t=2", "t=0", 1),
		strings.Replace(referenceHash, "p=1", "p=x", 1),
		strings.Replace(referenceHash, "c29tZXNhbHQ", "c29t!XNhbHQ", 1),
		referenceHash + "$extra",
		strings.TrimSuffix(referenceHash, "GRPPc"),
	}
	for _, h := range malformed {
		ok, err := CheckPassword(h, "password")
		if err == nil || ok {
			t.Errorf("CheckPassword(%q) = %v, %v; want false and an error", h, ok, err)
		}
		if !NeedsRehash(h) {
			t.Errorf("NeedsRehash(%q) = false; want true", h)
		}
	}
}

func TestValidatePassword(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		pw   string
		want error
	}{
		{"OK", "twelve chars", nil},
		{"OKRunes", "ééééééééééé€", nil}, // 12 runes, more bytes
		{"ErrPasswordTooShort", "eleven char", ErrPasswordTooShort},
		{"ErrPasswordTooShortBytes", "éééééééééé", ErrPasswordTooShort}, // 20 bytes, 10 runes
		{"OKMax", strings.Repeat("a", MaxPasswordBytes), nil},
		{"ErrPasswordTooLong", strings.Repeat("a", MaxPasswordBytes+1), ErrPasswordTooLong},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := ValidatePassword(c.pw); !errors.Is(err, c.want) {
				t.Fatalf("ValidatePassword = %v; want %v", err, c.want)
			}
		})
	}
	if err := ValidatePassword("invalid utf8 \xff\xfe"); err == nil {
		t.Error("ValidatePassword accepted invalid UTF-8")
	}
}

func TestDummyCheckCostsLikeACheck(t *testing.T) {
	hash, err := HashPassword("correct horse battery staple")
	if err != nil {
		t.Fatal(err)
	}
	DummyCheck("warm up") // the first call builds the dummy hash
	// The same work as a real check: a hash at the current parameters and
	// sizes, which nothing matches.
	if NeedsRehash(dummyHash) {
		t.Errorf("the dummy hash %q is not at the current cost", dummyHash)
	}
	if ok, err := CheckPassword(dummyHash, "warm up"); ok || err != nil {
		t.Errorf("CheckPassword(dummy) = %v, %v; want false, nil", ok, err)
	}
	// And it does run: far more than a no-op, even on a busy machine (the
	// fastest of five runs filters out most noise).
	measure := func(f func()) time.Duration {
		best := time.Duration(1<<63 - 1)
		for range 5 {
			start := time.Now()
			f()
			best = min(best, time.Since(start))
		}
		return best
	}
	real := measure(func() { _, _ = CheckPassword(hash, "wrong password!") })
	dummy := measure(func() { DummyCheck("wrong password!") })
	if dummy < real/4 {
		t.Errorf("DummyCheck took %v, a real check %v; want about the same", dummy, real)
	}
}
