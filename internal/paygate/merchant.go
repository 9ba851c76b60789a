package paygate

import (
	"errors"
	"time"
)

// Merchant is an account. Everything else belongs to one merchant and one
// mode.
type Merchant struct {
	ID        string
	Name      string
	CreatedAt time.Time
}

// MerchantQuery selects merchants (Store.Merchants). Zero fields do not
// filter.
type MerchantQuery struct {
	ID    string
	Limit int // <= 0: no limit
}

// OneMerchant returns the merchant that a query by ID found (the result of
// Store.Merchants), or NOT_FOUND when it found none.
func OneMerchant(merchants []Merchant, err error) (Merchant, error) {
	if err != nil {
		return Merchant{}, err
	}
	if len(merchants) == 0 {
		return Merchant{}, Errorf(CodeNotFound, "", "no such merchant")
	}
	return merchants[0], nil
}

// KeyType distinguishes secret keys (authenticate API calls) from public keys
// (identify the account client-side; refused for authentication).
type KeyType string

const (
	// KeySecret authenticates API requests.
	KeySecret KeyType = "secret"
	// KeyPublic identifies an account client-side and is refused by the API.
	KeyPublic KeyType = "public"
)

// APIKey is a stored key. Only the SHA-256 hash of the secret is kept.
type APIKey struct {
	ID         string
	MerchantID string
	Mode       Mode
	Type       KeyType
	Hash       []byte // SHA-256 of the full key string
	Hint       string // prefix + "…" + last four characters
	CreatedAt  time.Time
	ExpiresAt  *time.Time // set by rotation: the key stops working then
	RevokedAt  *time.Time // set by revocation: the key stopped working then
	// LastUsedAt is when the key last authenticated a request, recorded
	// coarsely (at most about once a minute, off the request path); nil
	// when never used.
	LastUsedAt *time.Time
}

// APIKeyQuery selects API keys (Store.APIKeys). Zero fields do not filter;
// at least one of ID, Hash and MerchantID must be set.
type APIKeyQuery struct {
	ID         string
	Hash       []byte // SHA-256 of the full key string
	MerchantID string
	Mode       Mode
}

// Check refuses a query that would list every merchant's keys.
func (q APIKeyQuery) Check() error {
	if q.ID == "" && len(q.Hash) == 0 && q.MerchantID == "" {
		return errors.New("an API key query needs an id, a hash or a merchant")
	}
	return nil
}

// OneAPIKey returns the key that a query by ID or Hash found (the result of
// Store.APIKeys), or NOT_FOUND when it found none.
func OneAPIKey(keys []APIKey, err error) (APIKey, error) {
	if err != nil {
		return APIKey{}, err
	}
	if len(keys) == 0 {
		return APIKey{}, Errorf(CodeNotFound, "", "no such API key")
	}
	return keys[0], nil
}

// The accounts' unit operations (see Op). Merchant and APIKey are
// inserted as they are:
//
//   - Merchant inserts a merchant; ErrConflict on a duplicate id. A new
//     merchant and its first keys are one unit: [Merchant, APIKey...].
//   - APIKey inserts a key. It fails the unit with NOT_FOUND when its
//     merchant does not exist (a Merchant before it in the unit counts),
//     and with ErrConflict on a duplicate id or hash.
func (Merchant) unitOp() {}
func (APIKey) unitOp()   {}

// APIKeyRotation is a unit operation: it inserts Next, makes the key OldID
// expire at OldExpiresAt (or keeps an earlier expiry it already has) and
// records Next as its successor. The old key must be active at
// Next.CreatedAt, the rotation time. It fails the unit with NOT_FOUND when
// OldID does not exist; with a *KeyReplacedError when it already has a
// successor (of two concurrent rotations of one key, one wins); with
// ErrStateConflict when it is revoked or expired; with ErrConflict when
// Next's id or hash is taken.
type APIKeyRotation struct {
	OldID        string
	Next         APIKey
	OldExpiresAt time.Time
}

func (APIKeyRotation) unitOp() {}

// APIKeyRevocation is a unit operation: the key is revoked at At, and a
// revoked key keeps its first revocation time (no refusal). It fails the
// unit with NOT_FOUND when the key does not exist.
type APIKeyRevocation struct {
	ID string
	At time.Time
}

func (APIKeyRevocation) unitOp() {}

// KeyReplacedError is an APIKeyRotation's refusal to rotate a key that an
// earlier rotation already replaced: a key has at most one successor
// (decisions.md section 15).
type KeyReplacedError struct {
	KeyID       string
	SuccessorID string
}

func (e *KeyReplacedError) Error() string {
	return "key " + e.KeyID + " was already rotated and cannot be rotated again: its successor is key " + e.SuccessorID
}

// ActiveAt reports whether the key may authenticate a request at t.
func (k APIKey) ActiveAt(t time.Time) bool {
	if k.RevokedAt != nil && !t.Before(*k.RevokedAt) {
		return false
	}
	if k.ExpiresAt != nil && !t.Before(*k.ExpiresAt) {
		return false
	}
	return true
}

// WebhookEndpoint is the one endpoint of a (merchant, mode).
type WebhookEndpoint struct {
	MerchantID string
	Mode       Mode
	URL        string
	// Secret is the signing secret, whsec_<base64>, in memory only: the
	// store keeps SealedSecret (the vault's seal of it) and never writes
	// Secret. A store fills Secret only from a row written before secrets
	// were sealed and not converted yet.
	Secret       string
	SealedSecret []byte
	Events       []string // empty means every event
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// Customer is a merchant's customer, unique by ExternalID within (merchant,
// mode).
type Customer struct {
	ID         string
	MerchantID string
	Mode       Mode
	ExternalID string
	Email      string // "" when none is stored
	Metadata   []byte // a JSON object, compact; "{}" when none
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// CustomerUpsert creates a customer or updates the one with the same
// ExternalID. Nil Email or Metadata leave the stored value as it is.
type CustomerUpsert struct {
	NewID      string // used only when the customer does not exist yet
	MerchantID string
	Mode       Mode
	ExternalID string
	Email      *string
	Metadata   []byte // nil: keep; otherwise a compact JSON object
	Now        time.Time
}
