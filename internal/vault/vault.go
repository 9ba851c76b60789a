// Package vault encrypts stored card numbers: envelope encryption with
// AES-256-GCM, and a keyed fingerprint to find the same card saved twice.
//
// Every card gets a fresh random 256-bit data key. The number is sealed under
// the data key, and the data key is sealed ("wrapped") under a key derived
// from a master key. Both seals authenticate the card's identity as
// additional data: its id, merchant, mode and customer. A ciphertext or a
// wrapped key copied to another row, a flipped byte, or a wrong master key
// make Open fail; it never returns a wrong number.
//
// Master keys are 32 random bytes given by the operator (base64). Several may
// be configured: the first seals, every one opens, so that a key can be
// rotated (Rewrap moves a card to the first key). A master key is named by its
// key id, a short hash that reveals nothing about it; records keep the id of
// the key that sealed them.
//
// Nothing here logs, and no error carries a number or a key.
package vault

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/paygate/paygate/internal/paygate"
)

// KeySize is the size of a master key and of a data key: AES-256.
const KeySize = 32

// formatV1 starts every sealed blob, so that a later format can be told apart.
const formatV1 byte = 1

// Labels of the HKDF derivations from a master key, and of the additional
// data of the two seals. Changing one makes every stored card unreadable.
const (
	labelKeyID       = "paygate/vault/v1/key-id"
	labelWrap        = "paygate/vault/v1/wrap-key"
	labelFingerprint = "paygate/vault/v1/fingerprint-key"
	labelRequest     = "paygate/vault/v1/request-fingerprint-key"
	labelCardAAD     = "paygate/vault/v1/card-number"
	labelDataKeyAAD  = "paygate/vault/v1/data-key"
)

// Errors of Open and Rewrap. Their messages name no number and no key.
var (
	// ErrUnknownKey: the card was sealed under a master key that is not
	// configured (it was dropped before a rewrap moved the card).
	ErrUnknownKey = errors.New("vault: the card is sealed under a master key that is not configured")
	// ErrTampered: a seal did not authenticate. The record was altered or
	// moved to another row, or the key with its id is not the one that
	// sealed it.
	ErrTampered = errors.New("vault: the sealed card failed authentication")
)

// masterKey is one configured master key and what is derived from it.
type masterKey struct {
	id     string
	wrap   cipher.AEAD // seals data keys
	fpKey  []byte      // keys card fingerprints
	reqKey []byte      // keys idempotency fingerprints of requests
}

// Vault seals and opens card numbers under the configured master keys. It is
// immutable and safe for concurrent use.
type Vault struct {
	keys    []masterKey // keys[0] seals
	secrets []secretKey // the same keys, for SealSecret (secret.go)
	masters [][]byte    // the same keys, for DerivedKeys (derive.go)
}

// New returns a vault over the master keys, each KeySize bytes; the first
// seals, all open. Two equal keys are refused (a mistake in configuration).
func New(keys ...[]byte) (*Vault, error) {
	if len(keys) == 0 {
		return nil, errors.New("vault: no master key")
	}
	v := &Vault{}
	seen := map[string]bool{}
	for i, k := range keys {
		if len(k) != KeySize {
			return nil, fmt.Errorf("vault: master key %d has %d bytes, want %d", i+1, len(k), KeySize)
		}
		mk, err := newMasterKey(k)
		if err != nil {
			return nil, err
		}
		if seen[mk.id] {
			return nil, fmt.Errorf("vault: master key %d is given twice", i+1)
		}
		seen[mk.id] = true
		v.keys = append(v.keys, mk)
		sk, err := newSecretKey(k)
		if err != nil {
			return nil, err
		}
		v.secrets = append(v.secrets, sk)
		v.masters = append(v.masters, append([]byte(nil), k...))
	}
	return v, nil
}

// ParseKeys decodes master keys as configured (--vault-key,
// PAYGATE_VAULT_KEY): each standard base64 of 32 bytes. Errors name the
// key's position, never the key.
func ParseKeys(encoded []string) ([][]byte, error) {
	var keys [][]byte
	for i, e := range encoded {
		k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(e))
		if err != nil || len(k) != KeySize {
			return nil, fmt.Errorf("vault: key %d is not base64 of %d bytes", i+1, KeySize)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, errors.New("vault: no master key")
	}
	return keys, nil
}

// GenerateKey returns a fresh master key, base64-encoded as configured.
func GenerateKey() (string, error) {
	k := make([]byte, KeySize)
	if _, err := rand.Read(k); err != nil {
		return "", fmt.Errorf("vault: generate a key: %w", err)
	}
	return base64.StdEncoding.EncodeToString(k), nil
}

// KeyID returns the id of a master key: the first 8 bytes (16 hex digits) of
// a value derived from it by HKDF. It identifies the key without revealing
// anything about it.
func KeyID(master []byte) (string, error) {
	b, err := hkdf.Key(sha256.New, master, nil, labelKeyID, 8)
	if err != nil {
		return "", fmt.Errorf("vault: derive key id: %w", err)
	}
	return hex.EncodeToString(b), nil
}

func newMasterKey(master []byte) (masterKey, error) {
	id, err := KeyID(master)
	if err != nil {
		return masterKey{}, err
	}
	wk, err := hkdf.Key(sha256.New, master, nil, labelWrap, KeySize)
	if err != nil {
		return masterKey{}, fmt.Errorf("vault: derive wrapping key: %w", err)
	}
	wrap, err := newGCM(wk)
	if err != nil {
		return masterKey{}, err
	}
	fk, err := hkdf.Key(sha256.New, master, nil, labelFingerprint, KeySize)
	if err != nil {
		return masterKey{}, fmt.Errorf("vault: derive fingerprint key: %w", err)
	}
	rk, err := hkdf.Key(sha256.New, master, nil, labelRequest, KeySize)
	if err != nil {
		return masterKey{}, fmt.Errorf("vault: derive request fingerprint key: %w", err)
	}
	return masterKey{id: id, wrap: wrap, fpKey: fk, reqKey: rk}, nil
}

func newGCM(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("vault: %w", err)
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("vault: %w", err)
	}
	return gcm, nil
}

// PrimaryKeyID is the id of the key that seals: the first configured.
func (v *Vault) PrimaryKeyID() string { return v.keys[0].id }

// KeyIDs lists the ids of the configured keys, the sealing one first.
func (v *Vault) KeyIDs() []string {
	ids := make([]string, len(v.keys))
	for i, k := range v.keys {
		ids[i] = k.id
	}
	return ids
}

func (v *Vault) key(id string) (masterKey, bool) {
	for _, k := range v.keys {
		if k.id == id {
			return k, true
		}
	}
	return masterKey{}, false
}

// Fingerprint is the keyed fingerprint of the number under the sealing key:
// the hex HMAC-SHA256 of the digits under a key derived from the first
// master key. It is what Seal stores.
func (v *Vault) Fingerprint(pan paygate.PAN) string { return fingerprint(v.keys[0], pan) }

// Fingerprints returns the fingerprint of the number under every configured
// key, the sealing key's first. A card sealed under an older key that a
// rewrap has not moved yet carries the older key's fingerprint, so finding
// the same card saved twice matches against all of them.
func (v *Vault) Fingerprints(pan paygate.PAN) []string {
	out := make([]string, len(v.keys))
	for i, k := range v.keys {
		out[i] = fingerprint(k, pan)
	}
	return out
}

// RequestKeys returns the keys of idempotency fingerprints
// (idempotency.Fingerprint), one derived from each configured master key,
// the sealing key's first. Like the card fingerprints' key, they exist only
// where the vault key does, never in the database (decisions §15); a
// record fingerprinted before a key rotation matches under the older key.
func (v *Vault) RequestKeys() [][]byte {
	out := make([][]byte, len(v.keys))
	for i, k := range v.keys {
		out[i] = k.reqKey
	}
	return out
}

func fingerprint(k masterKey, pan paygate.PAN) string {
	m := hmac.New(sha256.New, k.fpKey)
	m.Write([]byte(pan.Reveal()))
	return hex.EncodeToString(m.Sum(nil))
}

// Seal encrypts the number for the card c (whose ID, MerchantID, Mode and
// CustomerID must be final: they are bound into the seals) under a fresh
// data key wrapped by the first master key.
func (v *Vault) Seal(c paygate.StoredCard, pan paygate.PAN) (paygate.SealedCard, error) {
	if c.ID == "" || c.MerchantID == "" || c.CustomerID == "" || !c.Mode.Valid() {
		return paygate.SealedCard{}, errors.New("vault: seal needs the card's id, merchant, mode and customer")
	}
	k := v.keys[0]
	dataKey := make([]byte, KeySize)
	if _, err := rand.Read(dataKey); err != nil {
		return paygate.SealedCard{}, fmt.Errorf("vault: generate a data key: %w", err)
	}
	defer clear(dataKey)
	gcm, err := newGCM(dataKey)
	if err != nil {
		return paygate.SealedCard{}, err
	}
	number := []byte(pan.Reveal())
	defer clear(number)
	ct, err := seal(gcm, number, cardAAD(c))
	if err != nil {
		return paygate.SealedCard{}, err
	}
	wrapped, err := seal(k.wrap, dataKey, dataKeyAAD(c, k.id))
	if err != nil {
		return paygate.SealedCard{}, err
	}
	return paygate.SealedCard{KeyID: k.id, WrappedKey: wrapped, Ciphertext: ct, Fingerprint: fingerprint(k, pan)}, nil
}

// Open decrypts the number of the card c. Errors: ErrUnknownKey when c is
// sealed under a key that is not configured; ErrTampered when a seal does
// not authenticate (the record was altered, moved to another row, or is
// bound to another card). The caller must drop the number as soon as the
// provider has it.
func (v *Vault) Open(c paygate.StoredCard) (paygate.PAN, error) {
	k, ok := v.key(c.Sealed.KeyID)
	if !ok {
		return "", ErrUnknownKey
	}
	dataKey, err := open(k.wrap, c.Sealed.WrappedKey, dataKeyAAD(c, k.id))
	if err != nil {
		return "", err
	}
	defer clear(dataKey)
	if len(dataKey) != KeySize {
		return "", ErrTampered
	}
	gcm, err := newGCM(dataKey)
	if err != nil {
		return "", err
	}
	number, err := open(gcm, c.Sealed.Ciphertext, cardAAD(c))
	if err != nil {
		return "", err
	}
	defer clear(number)
	return paygate.PAN(number), nil
}

// Rewrap returns c's number sealed afresh under the first master key: a new
// data key, and the fingerprint under the first key. moved is false (and
// the sealed card unchanged) when c is already sealed under the first key.
// Errors as Open.
func (v *Vault) Rewrap(c paygate.StoredCard) (sealed paygate.SealedCard, moved bool, err error) {
	if c.Sealed.KeyID == v.PrimaryKeyID() {
		return c.Sealed, false, nil
	}
	pan, err := v.Open(c)
	if err != nil {
		return paygate.SealedCard{}, false, err
	}
	s, err := v.Seal(c, pan)
	if err != nil {
		return paygate.SealedCard{}, false, err
	}
	return s, true, nil
}

// seal encrypts plaintext under a fresh random nonce: version byte, nonce,
// ciphertext and tag.
func seal(aead cipher.AEAD, plaintext, aad []byte) ([]byte, error) {
	out := make([]byte, 1+aead.NonceSize(), 1+aead.NonceSize()+len(plaintext)+aead.Overhead())
	out[0] = formatV1
	if _, err := rand.Read(out[1:]); err != nil {
		return nil, fmt.Errorf("vault: generate a nonce: %w", err)
	}
	return aead.Seal(out, out[1:], plaintext, aad), nil
}

// open reverses seal; any failure is ErrTampered.
func open(aead cipher.AEAD, blob, aad []byte) ([]byte, error) {
	n := aead.NonceSize()
	if len(blob) < 1+n+aead.Overhead() || blob[0] != formatV1 {
		return nil, ErrTampered
	}
	pt, err := aead.Open(nil, blob[1:1+n], blob[1+n:], aad)
	if err != nil {
		return nil, ErrTampered
	}
	return pt, nil
}

// cardAAD is the additional data of the number's seal: the card's identity.
// Each field is length-prefixed, so no choice of values imitates another.
func cardAAD(c paygate.StoredCard) []byte {
	return fields(labelCardAAD, c.ID, c.MerchantID, string(c.Mode), c.CustomerID)
}

// dataKeyAAD is the additional data of the data key's seal: the card's
// identity and the id of the master key that wraps it.
func dataKeyAAD(c paygate.StoredCard, keyID string) []byte {
	return fields(labelDataKeyAAD, keyID, c.ID, c.MerchantID, string(c.Mode), c.CustomerID)
}

func fields(parts ...string) []byte {
	var b bytes.Buffer
	for _, p := range parts {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(p)))
		b.Write(n[:])
		b.WriteString(p)
	}
	return b.Bytes()
}
