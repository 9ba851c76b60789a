// Package account holds the operations on a merchant's API keys and
// webhook endpoint that the command line (paygate key …, paygate webhook
// set) and the dashboard share, so that both obey the same rules and say
// the same things.
package account

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/paygate/paygate/internal/auth"
	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
)

// DefaultGrace is how long a rotated key keeps working unless told
// otherwise (decisions.md section 4).
const DefaultGrace = 24 * time.Hour

// MaxGrace is the longest grace period a rotation may give the old key, on
// every interface (decisions.md section 15).
const MaxGrace = 720 * time.Hour

// GraceError is the refusal of a grace period that is negative or longer
// than MaxGrace.
type GraceError struct{ msg string }

func (e *GraceError) Error() string { return e.msg }

// CheckGrace returns a *GraceError when grace is negative or longer than
// MaxGrace; its message names the limit.
func CheckGrace(grace time.Duration) error {
	switch {
	case grace < 0:
		return &GraceError{"the grace period must not be negative"}
	case grace > MaxGrace:
		return &GraceError{fmt.Sprintf("the grace period can be at most %s (30 days)", formatGrace(MaxGrace))}
	}
	return nil
}

// formatGrace writes a whole number of hours as "720h".
func formatGrace(d time.Duration) string { return fmt.Sprintf("%dh", int64(d/time.Hour)) }

// timeLayout is RFC 3339 in UTC with milliseconds, as at the HTTP edge and
// in the command line's output.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

func formatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

// InactiveKeyError is the refusal to rotate a key that no longer
// authenticates (revoked or expired). Its message names the key and when
// it stopped.
type InactiveKeyError struct{ msg string }

func (e *InactiveKeyError) Error() string { return e.msg }

// CheckActive returns an *InactiveKeyError when k does not authenticate at
// t any more.
func CheckActive(k paygate.APIKey, t time.Time) error {
	if k.RevokedAt != nil && !t.Before(*k.RevokedAt) {
		return &InactiveKeyError{fmt.Sprintf("key %s was revoked at %s and cannot be rotated", k.ID, formatTime(*k.RevokedAt))}
	}
	if k.ExpiresAt != nil && !t.Before(*k.ExpiresAt) {
		return &InactiveKeyError{fmt.Sprintf("key %s expired at %s and cannot be rotated", k.ID, formatTime(*k.ExpiresAt))}
	}
	return nil
}

// CreateKey makes a new secret key for the merchant in mode and returns
// its secret, shown once and never stored.
func CreateKey(ctx context.Context, st paygate.Store, merchantID string, mode paygate.Mode, now time.Time) (string, paygate.APIKey, error) {
	return createKey(ctx, st, merchantID, mode, now, nil)
}

// CreateKeyBy is CreateKey that records the creation in the audit log, in
// the key's unit.
func CreateKeyBy(ctx context.Context, st paygate.Store, merchantID string, mode paygate.Mode, now time.Time, by Actor) (string, paygate.APIKey, error) {
	return createKey(ctx, st, merchantID, mode, now, &by)
}

func createKey(ctx context.Context, st paygate.Store, merchantID string, mode paygate.Mode, now time.Time, by *Actor) (string, paygate.APIKey, error) {
	secret, key, err := auth.NewKey(id.New(), merchantID, mode, paygate.KeySecret, now)
	if err != nil {
		return "", paygate.APIKey{}, fmt.Errorf("generate key: %w", err)
	}
	u := paygate.Unit{Ops: []paygate.Op{key}}
	if by != nil {
		u.Add(by.Entry(merchantID, mode, paygate.AuditKeyCreated, key.ID, "secret key "+key.Hint, now))
	}
	if err := st.Commit(ctx, u); err != nil {
		return "", paygate.APIKey{}, fmt.Errorf("create key: %w", err)
	}
	return secret, key, nil
}

// RotateKey replaces old with a new key of the same merchant, mode and
// type; old keeps working for grace (0 stops it now). It returns the new
// key's secret, the new key, and old as stored afterwards (its ExpiresAt
// is when it stops: an earlier expiry it already had is kept). A
// *GraceError refuses a grace outside 0..MaxGrace; a
// *paygate.KeyReplacedError a key that an earlier rotation already
// replaced (the store decides, so that two concurrent rotations cannot
// both succeed); an *InactiveKeyError a key that is revoked or expired.
func RotateKey(ctx context.Context, st paygate.Store, old paygate.APIKey, grace time.Duration, now time.Time) (string, paygate.APIKey, paygate.APIKey, error) {
	return rotateKey(ctx, st, old, grace, now, nil)
}

// RotateKeyBy is RotateKey that records the rotation in the audit log, in
// the rotation's unit.
func RotateKeyBy(ctx context.Context, st paygate.Store, old paygate.APIKey, grace time.Duration, now time.Time, by Actor) (string, paygate.APIKey, paygate.APIKey, error) {
	return rotateKey(ctx, st, old, grace, now, &by)
}

func rotateKey(ctx context.Context, st paygate.Store, old paygate.APIKey, grace time.Duration, now time.Time, by *Actor) (string, paygate.APIKey, paygate.APIKey, error) {
	if err := CheckGrace(grace); err != nil {
		return "", paygate.APIKey{}, old, err
	}
	secret, next, err := auth.NewKey(id.New(), old.MerchantID, old.Mode, old.Type, now)
	if err != nil {
		return "", paygate.APIKey{}, old, fmt.Errorf("generate key: %w", err)
	}
	u := paygate.Unit{Ops: []paygate.Op{
		paygate.APIKeyRotation{OldID: old.ID, Next: next, OldExpiresAt: now.Add(grace)},
	}}
	if by != nil {
		// The store keeps an earlier expiry the old key had: "at the latest".
		u.Add(by.Entry(old.MerchantID, old.Mode, paygate.AuditKeyRotated, old.ID,
			fmt.Sprintf("new key %s; the old one stops at the latest %s", next.Hint, formatTime(now.Add(grace))), now))
	}
	err = st.Commit(ctx, u)
	var replaced *paygate.KeyReplacedError
	switch {
	case errors.As(err, &replaced):
		return "", paygate.APIKey{}, old, replaced // without an engine's prefix: it is shown as it is
	case errors.Is(err, paygate.ErrStateConflict):
		if inactive := CheckActive(old, now); inactive != nil {
			return "", paygate.APIKey{}, old, inactive
		}
		return "", paygate.APIKey{}, old, &InactiveKeyError{fmt.Sprintf("key %s is revoked or expired and cannot be rotated", old.ID)}
	case err != nil:
		return "", paygate.APIKey{}, old, fmt.Errorf("rotate key: %w", err)
	}
	after, err := paygate.OneAPIKey(st.APIKeys(ctx, paygate.APIKeyQuery{ID: old.ID, MerchantID: old.MerchantID, Mode: old.Mode}))
	if err != nil {
		return "", paygate.APIKey{}, old, fmt.Errorf("read rotated key: %w", err)
	}
	if after.ExpiresAt == nil {
		return "", paygate.APIKey{}, old, fmt.Errorf("rotate key: the old key %s has no expiry after rotation", old.ID)
	}
	return secret, next, after, nil
}

// RevokeKey revokes a key at now (an earlier revocation is kept) and
// returns it as stored. The store's NOT_FOUND is returned as it is.
func RevokeKey(ctx context.Context, st paygate.Store, keyID string, now time.Time) (paygate.APIKey, error) {
	return revokeKey(ctx, st, keyID, now, nil)
}

// RevokeKeyBy is RevokeKey of the key k (as read by the caller) that
// records the revocation in the audit log, in the revocation's unit.
func RevokeKeyBy(ctx context.Context, st paygate.Store, k paygate.APIKey, now time.Time, by Actor) (paygate.APIKey, error) {
	e := by.Entry(k.MerchantID, k.Mode, paygate.AuditKeyRevoked, k.ID, string(k.Type)+" key "+k.Hint, now)
	return revokeKey(ctx, st, k.ID, now, &e)
}

func revokeKey(ctx context.Context, st paygate.Store, keyID string, now time.Time, audit *paygate.AuditEntry) (paygate.APIKey, error) {
	u := paygate.Unit{Ops: []paygate.Op{paygate.APIKeyRevocation{ID: keyID, At: now}}}
	if audit != nil {
		u.Add(*audit)
	}
	err := st.Commit(ctx, u)
	if paygate.IsNotFound(err) {
		return paygate.APIKey{}, err
	}
	if err != nil {
		return paygate.APIKey{}, fmt.Errorf("revoke key: %w", err)
	}
	k, err := paygate.OneAPIKey(st.APIKeys(ctx, paygate.APIKeyQuery{ID: keyID}))
	if err != nil {
		return k, fmt.Errorf("read revoked key: %w", err)
	}
	if k.RevokedAt == nil {
		return k, fmt.Errorf("revoke key: key %s has no revocation time after revoking", keyID)
	}
	return k, nil
}

// MerchantKeys lists the merchant's keys of one mode, from a query filtered
// by merchant and mode in SQL.
func MerchantKeys(ctx context.Context, st paygate.Store, merchantID string, mode paygate.Mode) ([]paygate.APIKey, error) {
	keys, err := st.APIKeys(ctx, paygate.APIKeyQuery{MerchantID: merchantID, Mode: mode})
	if err != nil {
		return nil, fmt.Errorf("list keys: %w", err)
	}
	return keys, nil
}

// MerchantKey returns the key keyID of the merchant in mode, or NOT_FOUND
// (also for another merchant's or the other mode's key, and for a string
// that is not a key id). The key is looked up among the merchant's keys,
// never by id alone.
func MerchantKey(ctx context.Context, st paygate.Store, merchantID string, mode paygate.Mode, keyID string) (paygate.APIKey, error) {
	if !id.Valid(keyID) {
		return paygate.APIKey{}, paygate.Errorf(paygate.CodeNotFound, "", "no such key")
	}
	keys, err := MerchantKeys(ctx, st, merchantID, mode)
	if err != nil {
		return paygate.APIKey{}, err
	}
	for _, k := range keys {
		if k.ID == keyID {
			return k, nil
		}
	}
	return paygate.APIKey{}, paygate.Errorf(paygate.CodeNotFound, "", "no such key")
}
