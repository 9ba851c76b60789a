package auth

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/crypto/argon2"
)

// Dashboard passwords are hashed with argon2id at the first cost the OWASP
// Password Storage Cheat Sheet recommends (19 MiB of memory, 2 passes, 1
// lane), a 16-byte random salt and a 32-byte key, and stored as a PHC
// string: $argon2id$v=19$m=19456,t=2,p=1$<salt>$<hash>, both in standard
// base64 without padding. The parameters are read back from the string, so
// hashes made at another cost still verify (and NeedsRehash tells when to
// upgrade them).
const (
	passwordMemoryKiB = 19456
	passwordTime      = 2
	passwordThreads   = 1
	passwordSaltLen   = 16
	passwordKeyLen    = 32

	// MinPasswordRunes is the fewest characters a password may have.
	MinPasswordRunes = 12
	// MaxPasswordBytes bounds a password, so that hashing a huge input
	// cannot be used to exhaust the server.
	MaxPasswordBytes = 1024
)

// Bounds on parameters read from a stored hash, so that a corrupted or
// hostile row cannot make one check take gigabytes or minutes.
const (
	maxMemoryKiB = 1 << 21 // 2 GiB
	maxTime      = 64
	minKeyLen    = 16
	maxKeyLen    = 128
)

// ErrPasswordTooShort and ErrPasswordTooLong are the reasons
// ValidatePassword refuses a password.
var (
	ErrPasswordTooShort = fmt.Errorf("the password must have at least %d characters", MinPasswordRunes)
	ErrPasswordTooLong  = fmt.Errorf("the password must have at most %d bytes", MaxPasswordBytes)
)

// ValidatePassword checks a new password: at least MinPasswordRunes
// characters (counted as Unicode code points) and at most MaxPasswordBytes
// bytes of valid UTF-8.
func ValidatePassword(pw string) error {
	if len(pw) > MaxPasswordBytes {
		return ErrPasswordTooLong
	}
	if !utf8.ValidString(pw) {
		return errors.New("the password is not valid UTF-8")
	}
	if utf8.RuneCountInString(pw) < MinPasswordRunes {
		return ErrPasswordTooShort
	}
	return nil
}

// argonParams are the cost parameters of one hash.
type argonParams struct {
	memory  uint32
	time    uint32
	threads uint8
}

var currentParams = argonParams{memory: passwordMemoryKiB, time: passwordTime, threads: passwordThreads}

// passwordSlots bounds how many argon2id computations run at once. Each
// holds its m parameter in memory (19 MiB at the current cost) for tens of
// milliseconds, and sign-in attempts from many addresses (or from the
// addresses of one IPv6 prefix, or with random emails) are not all stopped
// by the throttles: without a bound, a flood of them would exhaust the
// memory of the process that also serves the payment API. Past the bound,
// attempts wait their turn.
var passwordSlots = make(chan struct{}, max(2, runtime.GOMAXPROCS(0)))

// idKey is argon2.IDKey; a test replaces it to watch the concurrency.
var idKey = argon2.IDKey

// deriveKey runs argon2id within a slot of passwordSlots.
func deriveKey(pw, salt []byte, p argonParams, keyLen uint32) []byte {
	passwordSlots <- struct{}{}
	defer func() { <-passwordSlots }()
	return idKey(pw, salt, p.time, p.memory, p.threads, keyLen)
}

// HashPassword hashes pw with argon2id at the current cost and a fresh
// random salt, and returns the PHC string. It does not validate pw (see
// ValidatePassword); it fails only when pw is longer than MaxPasswordBytes
// or the system has no randomness.
func HashPassword(pw string) (string, error) {
	if len(pw) > MaxPasswordBytes {
		return "", ErrPasswordTooLong
	}
	salt := make([]byte, passwordSaltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("auth: password salt: %w", err)
	}
	key := deriveKey([]byte(pw), salt, currentParams, passwordKeyLen)
	return encodePHC(currentParams, salt, key), nil
}

func encodePHC(p argonParams, salt, key []byte) string {
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s",
		argon2.Version, p.memory, p.time, p.threads, b64.EncodeToString(salt), b64.EncodeToString(key))
}

// decodePHC parses an argon2id PHC string.
func decodePHC(hash string) (argonParams, []byte, []byte, error) {
	// "", "argon2id", "v=19", "m=..,t=..,p=..", salt, key
	parts := strings.Split(hash, "$")
	if len(parts) != 6 || parts[0] != "" {
		return argonParams{}, nil, nil, errors.New("auth: password hash is not a PHC string")
	}
	if parts[1] != "argon2id" {
		return argonParams{}, nil, nil, fmt.Errorf("auth: password hash algorithm %q is not argon2id", parts[1])
	}
	if parts[2] != "v="+strconv.Itoa(argon2.Version) {
		return argonParams{}, nil, nil, fmt.Errorf("auth: password hash version %q is not supported", parts[2])
	}
	var p argonParams
	seen := 0
	for _, kv := range strings.Split(parts[3], ",") {
		name, value, ok := strings.Cut(kv, "=")
		if !ok {
			return argonParams{}, nil, nil, fmt.Errorf("auth: password hash parameter %q is malformed", kv)
		}
		n, err := strconv.ParseUint(value, 10, 32)
		if err != nil {
			return argonParams{}, nil, nil, fmt.Errorf("auth: password hash parameter %q: %w", kv, err)
		}
		switch name {
		case "m":
			p.memory = uint32(n)
			seen |= 1
		case "t":
			p.time = uint32(n)
			seen |= 2
		case "p":
			if n > 255 {
				return argonParams{}, nil, nil, fmt.Errorf("auth: password hash parameter %q is out of range", kv)
			}
			p.threads = uint8(n)
			seen |= 4
		default:
			return argonParams{}, nil, nil, fmt.Errorf("auth: password hash parameter %q is unknown", kv)
		}
	}
	if seen != 7 {
		return argonParams{}, nil, nil, errors.New("auth: password hash lacks one of m, t, p")
	}
	if p.time < 1 || p.time > maxTime || p.threads < 1 || p.memory < 8*uint32(p.threads) || p.memory > maxMemoryKiB {
		return argonParams{}, nil, nil, fmt.Errorf("auth: password hash parameters %q are out of range", parts[3])
	}
	b64 := base64.RawStdEncoding.Strict()
	salt, err := b64.DecodeString(parts[4])
	if err != nil || len(salt) < 8 {
		return argonParams{}, nil, nil, errors.New("auth: password hash salt is malformed")
	}
	key, err := b64.DecodeString(parts[5])
	if err != nil || len(key) < minKeyLen || len(key) > maxKeyLen {
		return argonParams{}, nil, nil, errors.New("auth: password hash key is malformed")
	}
	return p, salt, key, nil
}

// CheckPassword reports whether pw matches the PHC string hash, comparing
// in constant time. ok is false with a nil error for a wrong password; err
// is set when hash cannot be parsed (a corrupted row), and then ok is
// false. A password longer than MaxPasswordBytes never matches.
func CheckPassword(hash, pw string) (ok bool, err error) {
	p, salt, key, err := decodePHC(hash)
	if err != nil {
		return false, err
	}
	if len(pw) > MaxPasswordBytes {
		// Spend the same time as a real check all the same.
		_ = deriveKey([]byte(pw[:MaxPasswordBytes]), salt, p, uint32(len(key)))
		return false, nil
	}
	got := deriveKey([]byte(pw), salt, p, uint32(len(key)))
	return subtle.ConstantTimeCompare(got, key) == 1, nil
}

// NeedsRehash reports whether hash was made with other parameters than
// the current ones (or cannot be parsed): after a successful check, the
// caller should store a fresh HashPassword of the password.
func NeedsRehash(hash string) bool {
	p, salt, key, err := decodePHC(hash)
	if err != nil {
		return true
	}
	return p != currentParams || len(salt) != passwordSaltLen || len(key) != passwordKeyLen
}

var (
	dummyOnce sync.Once
	dummyHash string
)

// DummyCheck costs what CheckPassword costs at the current parameters and
// always fails. Call it when no user has the email typed, so that the
// answer's timing does not tell which emails have an account.
func DummyCheck(pw string) {
	dummyOnce.Do(func() {
		salt := make([]byte, passwordSaltLen)
		key := make([]byte, passwordKeyLen)
		// A random salt is not needed: nothing can match a key of zeros
		// except by breaking argon2id.
		dummyHash = encodePHC(currentParams, salt, key)
	})
	_, _ = CheckPassword(dummyHash, pw)
}
