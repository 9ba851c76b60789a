// Package auth issues and checks API keys.
//
// A key is a prefix naming its type and mode (smtgw_sk_test_, smtgw_sk_live_,
// smtgw_pk_test_, smtgw_pk_live_) followed by random base62 characters. Only
// the SHA-256 hash of the whole string is stored; the secret is shown once.
// A 40-character base62 tail carries about 238 random bits, so a plain,
// unsalted SHA-256 is enough: nobody can guess or brute-force a preimage, and
// a fast hash lets every request be authenticated against the database
// without a cache that could outlive a revocation.
package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"io"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

const (
	// RandomLength is the number of random base62 characters Generate puts
	// after the prefix.
	RandomLength = 40
	// MinRandomLength is the fewest random characters Parse accepts after
	// the prefix (decisions.md section 4: at least 32).
	MinRandomLength = 32
	// MaxKeyLength bounds the whole key string Parse accepts, so that a
	// huge header is refused before it is hashed.
	MaxKeyLength = 128
)

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// The key prefixes, by type and mode.
const (
	prefixSecretTest = "smtgw_sk_test_"
	prefixSecretLive = "smtgw_sk_live_"
	prefixPublicTest = "smtgw_pk_test_"
	prefixPublicLive = "smtgw_pk_live_"
)

// prefixes lists every prefix with what it means; all have the same length.
var prefixes = [...]struct {
	prefix string
	mode   paygate.Mode
	typ    paygate.KeyType
}{
	{prefixSecretTest, paygate.ModeTest, paygate.KeySecret},
	{prefixSecretLive, paygate.ModeLive, paygate.KeySecret},
	{prefixPublicTest, paygate.ModeTest, paygate.KeyPublic},
	{prefixPublicLive, paygate.ModeLive, paygate.KeyPublic},
}

// prefixFor returns the prefix of a key of the mode and type.
func prefixFor(mode paygate.Mode, typ paygate.KeyType) (string, bool) {
	for _, p := range prefixes {
		if p.mode == mode && p.typ == typ {
			return p.prefix, true
		}
	}
	return "", false
}

// randReader is the source of key randomness; tests replace it to check the
// rejection sampling.
var randReader io.Reader = rand.Reader

// Generate returns a new key of the mode and type: the secret to show once,
// the hash to store, and the hint to list (prefix, "…", last four
// characters). It fails only on an invalid mode or type, or when the system
// random source fails.
func Generate(mode paygate.Mode, typ paygate.KeyType) (secret string, hash []byte, hint string, err error) {
	prefix, ok := prefixFor(mode, typ)
	if !ok {
		return "", nil, "", fmt.Errorf("auth: no key prefix for mode %q and type %q", mode, typ)
	}
	tail, err := randomBase62(randReader, RandomLength)
	if err != nil {
		return "", nil, "", fmt.Errorf("auth: generate key: %w", err)
	}
	secret = prefix + tail
	return secret, Hash(secret), prefix + "…" + tail[len(tail)-4:], nil
}

// NewKey generates a key and the APIKey record that stores it (hash and hint
// only). The secret is returned for showing once and must not be kept.
func NewKey(id, merchantID string, mode paygate.Mode, typ paygate.KeyType, now time.Time) (secret string, key paygate.APIKey, err error) {
	secret, hash, hint, err := Generate(mode, typ)
	if err != nil {
		return "", paygate.APIKey{}, err
	}
	return secret, paygate.APIKey{
		ID:         id,
		MerchantID: merchantID,
		Mode:       mode,
		Type:       typ,
		Hash:       hash,
		Hint:       hint,
		CreatedAt:  now,
	}, nil
}

// Hash returns the SHA-256 of the whole key string: the value stored in
// APIKey.Hash and looked up by Store.APIKeys (by hash).
func Hash(key string) []byte {
	sum := sha256.Sum256([]byte(key))
	return sum[:]
}

// Parse checks the syntax of a key: a known prefix followed by at least
// MinRandomLength base62 characters, MaxKeyLength characters in all. It
// reports the mode and type the prefix names; it does not tell whether the
// key exists.
func Parse(s string) (mode paygate.Mode, typ paygate.KeyType, ok bool) {
	if len(s) > MaxKeyLength {
		return "", "", false
	}
	for _, p := range prefixes {
		if len(s) < len(p.prefix) || s[:len(p.prefix)] != p.prefix {
			continue
		}
		tail := s[len(p.prefix):]
		if len(tail) < MinRandomLength {
			return "", "", false
		}
		for i := 0; i < len(tail); i++ {
			if !isBase62(tail[i]) {
				return "", "", false
			}
		}
		return p.mode, p.typ, true
	}
	return "", "", false
}

func isBase62(c byte) bool {
	return '0' <= c && c <= '9' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z'
}

// randomBase62 returns n characters drawn uniformly from the base62
// alphabet. Bytes of 248 and above are rejected (248 = 4·62), so that every
// character has exactly the same probability: a plain modulo would favour
// the first eight characters.
func randomBase62(r io.Reader, n int) (string, error) {
	const limit = 256 - 256%len(base62) // 248
	out := make([]byte, 0, n)
	// 64 bytes yield 40 characters unless more than 24 are rejected, which
	// happens with negligible probability; the loop refills if it does.
	var buf [64]byte
	for len(out) < n {
		if _, err := io.ReadFull(r, buf[:]); err != nil {
			return "", err
		}
		for _, b := range buf {
			if int(b) >= limit {
				continue
			}
			out = append(out, base62[int(b)%len(base62)])
			if len(out) == n {
				break
			}
		}
	}
	return string(out), nil
}
