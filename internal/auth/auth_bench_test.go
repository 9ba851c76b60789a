package auth

import (
	"context"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// oneKeyStore finds one key by its hash; everything else of Store is unused.
type oneKeyStore struct {
	paygate.Store
	key paygate.APIKey
}

func (s oneKeyStore) APIKeys(_ context.Context, q paygate.APIKeyQuery) ([]paygate.APIKey, error) {
	if string(q.Hash) != string(s.key.Hash) {
		return nil, nil
	}
	return []paygate.APIKey{s.key}, nil
}

// BenchmarkAuthenticate is a request's authentication without the database
// round trip: parse, hash, compare, check activity; and a refused key.
func BenchmarkAuthenticate(b *testing.B) {
	now := time.Now()
	secret, key, err := NewKey("k1", "m1", paygate.ModeTest, paygate.KeySecret, now)
	if err != nil {
		b.Fatal(err)
	}
	a := &Authenticator{Store: oneKeyStore{key: key}}
	b.Run("valid", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := a.Authenticate(context.Background(), secret); err != nil {
				b.Fatal(err)
			}
		}
	})
	wrong := secret[:len(secret)-1] + "0"
	if wrong == secret {
		wrong = secret[:len(secret)-1] + "1"
	}
	b.Run("unknown", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := a.Authenticate(context.Background(), wrong); err == nil {
				b.Fatal("authenticated a wrong key")
			}
		}
	})
}
