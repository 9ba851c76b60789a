package vault

import (
	"crypto/hkdf"
	"crypto/sha256"
	"errors"
	"fmt"
)

// ErrNoKey is returned by DerivedKeys on a nil vault: there is no master
// key to derive from.
var ErrNoKey = errors.New("vault: no master key configured")

// DerivedKeys returns a key of KeySize bytes derived by HKDF-SHA256 from
// each configured master key with label (a fixed, versioned name of what
// the key is for, e.g. "paygate/dashboard/v1/mfa-pending"), the sealing
// key's first. Such a key is the same on every node that has the master
// keys and exists only where they do, never in the database, so it can
// key MACs a node checks for another. Something keyed with it stops
// verifying once its master key is dropped, so only short-lived values
// (minutes) should depend on it. Errors: ErrNoKey on a nil vault, and an
// empty label.
func (v *Vault) DerivedKeys(label string) ([][]byte, error) {
	if v == nil || len(v.masters) == 0 {
		return nil, ErrNoKey
	}
	if label == "" {
		return nil, errors.New("vault: a derived key needs a label")
	}
	out := make([][]byte, len(v.masters))
	for i, m := range v.masters {
		k, err := hkdf.Key(sha256.New, m, nil, "paygate/vault/v1/derived:"+label, KeySize)
		if err != nil {
			return nil, fmt.Errorf("vault: derive key: %w", err)
		}
		out[i] = k
	}
	return out, nil
}
