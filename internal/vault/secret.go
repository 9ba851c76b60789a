package vault

import (
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"

	"github.com/paygate/paygate/internal/paygate"
)

// Secrets other than card numbers (webhook signing secrets) are sealed with
// AES-256-GCM under a key derived from a master key by HKDF with its own
// label, so that a sealed secret and a sealed card never share a key. A
// sealed secret carries the id of the master key that sealed it: the first
// configured key seals, every configured key opens, and RewrapSecret moves a
// secret to the first key. The additional data binds the secret to its
// context (what it is for, merchant and mode): a sealed secret copied to
// another merchant's or mode's row, or used for another purpose, does not
// open.
//
// A sealed secret is: format byte, the 8 bytes of the key id, a 12-byte
// nonce, then the ciphertext and its tag.

// Labels of the secret seal's derivations. Changing one makes every sealed
// secret unreadable.
const (
	labelSecretKey = "paygate/vault/v1/secret-key"
	labelSecretAAD = "paygate/vault/v1/secret"
)

// formatSecretV1 starts every sealed secret.
const formatSecretV1 byte = 1

// keyIDSize is the size of a key id in raw bytes (KeyID shows it in hex).
const keyIDSize = 8

// PurposeWebhookSecret is the purpose of a webhook endpoint's signing
// secret (current and previous alike: a rotation moves the one to the
// other).
const PurposeWebhookSecret = "webhook-signing-secret"

// SecretContext is where a sealed secret belongs. All of it is bound into
// the seal.
type SecretContext struct {
	Purpose    string
	MerchantID string
	Mode       paygate.Mode
}

// ErrNoSecretKey is returned by SealSecret and OpenSecret on a nil vault:
// no master key is configured.
var ErrNoSecretKey = errors.New("vault: no master key is configured to seal or open secrets")

// SecretKeyError is OpenSecret's error for a secret sealed under a master
// key that is not configured. It names the key's id (never a key) and says
// "secret", not "card": errors.Is(err, ErrUnknownKey) holds.
type SecretKeyError struct {
	KeyID string
}

func (e *SecretKeyError) Error() string {
	return fmt.Sprintf("vault: the secret is sealed under master key %s, which is not configured", e.KeyID)
}

// Is makes a SecretKeyError an ErrUnknownKey.
func (e *SecretKeyError) Is(target error) bool { return target == ErrUnknownKey }

// errSecretTampered is OpenSecret's ErrTampered, in words about a secret.
var errSecretTampered = secretTampered{}

type secretTampered struct{}

func (secretTampered) Error() string        { return "vault: the sealed secret failed authentication" }
func (secretTampered) Is(target error) bool { return target == ErrTampered }

// secretKey is the secret-sealing key derived from one master key.
type secretKey struct {
	id   string
	aead cipher.AEAD
}

func newSecretKey(master []byte) (secretKey, error) {
	id, err := KeyID(master)
	if err != nil {
		return secretKey{}, err
	}
	k, err := hkdf.Key(sha256.New, master, nil, labelSecretKey, KeySize)
	if err != nil {
		return secretKey{}, fmt.Errorf("vault: derive secret key: %w", err)
	}
	defer clear(k)
	aead, err := newGCM(k)
	if err != nil {
		return secretKey{}, err
	}
	return secretKey{id: id, aead: aead}, nil
}

// SealSecret encrypts secret for the context c under the first master key.
func (v *Vault) SealSecret(c SecretContext, secret []byte) ([]byte, error) {
	if v == nil || len(v.secrets) == 0 {
		return nil, ErrNoSecretKey
	}
	if c.Purpose == "" || c.MerchantID == "" || !c.Mode.Valid() {
		return nil, errors.New("vault: sealing a secret needs its purpose, merchant and mode")
	}
	k := v.secrets[0]
	id, err := hex.DecodeString(k.id)
	if err != nil || len(id) != keyIDSize {
		return nil, errors.New("vault: malformed key id")
	}
	n := k.aead.NonceSize()
	out := make([]byte, 1+keyIDSize+n, 1+keyIDSize+n+len(secret)+k.aead.Overhead())
	out[0] = formatSecretV1
	copy(out[1:], id)
	if _, err := rand.Read(out[1+keyIDSize:]); err != nil {
		return nil, fmt.Errorf("vault: generate a nonce: %w", err)
	}
	return k.aead.Seal(out, out[1+keyIDSize:], secret, secretAAD(c, k.id)), nil
}

// OpenSecret decrypts a secret that SealSecret sealed for the context c.
// Errors: a *SecretKeyError (errors.Is ErrUnknownKey) when it is sealed
// under a master key that is not configured; ErrTampered when it does not authenticate (altered, moved to
// another merchant, mode or purpose, or not a sealed secret at all);
// ErrNoSecretKey on a nil vault. It never returns a wrong secret.
func (v *Vault) OpenSecret(c SecretContext, sealed []byte) ([]byte, error) {
	if v == nil || len(v.secrets) == 0 {
		return nil, ErrNoSecretKey
	}
	id, err := SecretKeyID(sealed)
	if err != nil {
		return nil, err
	}
	var k *secretKey
	for i := range v.secrets {
		if v.secrets[i].id == id {
			k = &v.secrets[i]
		}
	}
	if k == nil {
		return nil, &SecretKeyError{KeyID: id}
	}
	n := k.aead.NonceSize()
	if len(sealed) < 1+keyIDSize+n+k.aead.Overhead() {
		return nil, errSecretTampered
	}
	pt, err := k.aead.Open(nil, sealed[1+keyIDSize:1+keyIDSize+n], sealed[1+keyIDSize+n:], secretAAD(c, id))
	if err != nil {
		return nil, errSecretTampered
	}
	return pt, nil
}

// RewrapSecret returns the secret sealed afresh under the first master key;
// moved is false (and sealed returned as it is) when it is sealed under the
// first key already. Errors as OpenSecret.
func (v *Vault) RewrapSecret(c SecretContext, sealed []byte) (out []byte, moved bool, err error) {
	if v == nil || len(v.secrets) == 0 {
		return nil, false, ErrNoSecretKey
	}
	id, err := SecretKeyID(sealed)
	if err != nil {
		return nil, false, err
	}
	if id == v.secrets[0].id {
		return sealed, false, nil
	}
	secret, err := v.OpenSecret(c, sealed)
	if err != nil {
		return nil, false, err
	}
	defer clear(secret)
	out, err = v.SealSecret(c, secret)
	if err != nil {
		return nil, false, err
	}
	return out, true, nil
}

// SecretKeyID returns the id of the master key that sealed a secret (by
// SealSecret or SealSecretKeyed).
// ErrTampered when sealed is not a sealed secret.
func SecretKeyID(sealed []byte) (string, error) {
	if len(sealed) < 1+keyIDSize || (sealed[0] != formatSecretV1 && sealed[0] != formatKeyedV1) {
		return "", errSecretTampered
	}
	return hex.EncodeToString(sealed[1 : 1+keyIDSize]), nil
}

// secretAAD is the additional data of a secret's seal: its context and the
// id of the sealing key, each length-prefixed.
func secretAAD(c SecretContext, keyID string) []byte {
	return fields(labelSecretAAD, keyID, c.Purpose, c.MerchantID, string(c.Mode))
}

// Keyed seals (card tokens, issue 24): the sealing key is derived by HKDF
// from the master key AND a secret that the caller hands out and never
// stores (the secret part of a card token), bound to the context. Once the
// caller erases the sealed bytes, a copy of them (a database's dead
// tuples, WAL, backups or free pages) together with the master key still
// does not open without that secret: crypto-shredding. The layout is a
// sealed secret's with its own format byte.

// labelKeyedKey is the label of a keyed seal's key derivation.
const labelKeyedKey = "paygate/vault/v1/keyed-secret-key"

// formatKeyedV1 starts every keyed seal.
const formatKeyedV1 byte = 2

// MinSealKeySize is the least size of a keyed seal's secret.
const MinSealKeySize = 16

// keyedAEAD derives the AEAD of a keyed seal under master for the context.
func keyedAEAD(master, sealKey []byte, c SecretContext, keyID string) (cipher.AEAD, error) {
	k, err := hkdf.Key(sha256.New, master, sealKey, string(fields(labelKeyedKey, keyID, c.Purpose, c.MerchantID, string(c.Mode))), KeySize)
	if err != nil {
		return nil, fmt.Errorf("vault: derive keyed seal key: %w", err)
	}
	defer clear(k)
	return newGCM(k)
}

// SealSecretKeyed encrypts secret for the context c under a key derived
// from the first master key and sealKey (at least MinSealKeySize random
// bytes the caller keeps out of the database). Only OpenSecretKeyed with
// the same sealKey opens it. Errors as SealSecret's.
func (v *Vault) SealSecretKeyed(c SecretContext, sealKey, secret []byte) ([]byte, error) {
	if v == nil || len(v.masters) == 0 {
		return nil, ErrNoSecretKey
	}
	if c.Purpose == "" || c.MerchantID == "" || !c.Mode.Valid() || len(sealKey) < MinSealKeySize {
		return nil, errors.New("vault: a keyed seal needs its purpose, merchant, mode and seal key")
	}
	keyID := v.secrets[0].id
	id, err := hex.DecodeString(keyID)
	if err != nil || len(id) != keyIDSize {
		return nil, errors.New("vault: malformed key id")
	}
	aead, err := keyedAEAD(v.masters[0], sealKey, c, keyID)
	if err != nil {
		return nil, err
	}
	n := aead.NonceSize()
	out := make([]byte, 1+keyIDSize+n, 1+keyIDSize+n+len(secret)+aead.Overhead())
	out[0] = formatKeyedV1
	copy(out[1:], id)
	if _, err := rand.Read(out[1+keyIDSize:]); err != nil {
		return nil, fmt.Errorf("vault: generate a nonce: %w", err)
	}
	return aead.Seal(out, out[1+keyIDSize:], secret, secretAAD(c, keyID)), nil
}

// OpenSecretKeyed decrypts what SealSecretKeyed sealed for the context c
// with sealKey. Errors: a *SecretKeyError when its master key is not
// configured; ErrTampered when it does not authenticate (a wrong seal key,
// another context, altered); ErrNoSecretKey on a nil vault.
func (v *Vault) OpenSecretKeyed(c SecretContext, sealKey, sealed []byte) ([]byte, error) {
	if v == nil || len(v.masters) == 0 {
		return nil, ErrNoSecretKey
	}
	if len(sealed) < 1+keyIDSize || sealed[0] != formatKeyedV1 {
		return nil, errSecretTampered
	}
	keyID := hex.EncodeToString(sealed[1 : 1+keyIDSize])
	i := slices.IndexFunc(v.secrets, func(k secretKey) bool { return k.id == keyID })
	if i < 0 {
		return nil, &SecretKeyError{KeyID: keyID}
	}
	aead, err := keyedAEAD(v.masters[i], sealKey, c, keyID)
	if err != nil {
		return nil, err
	}
	n := aead.NonceSize()
	if len(sealed) < 1+keyIDSize+n+aead.Overhead() {
		return nil, errSecretTampered
	}
	pt, err := aead.Open(nil, sealed[1+keyIDSize:1+keyIDSize+n], sealed[1+keyIDSize+n:], secretAAD(c, keyID))
	if err != nil {
		return nil, errSecretTampered
	}
	return pt, nil
}
