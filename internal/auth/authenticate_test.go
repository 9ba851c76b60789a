package auth

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// fakeStore implements only APIKeys by hash; any other method panics through
// the nil embedded interface, which would reveal an unexpected call.
type fakeStore struct {
	paygate.Store
	mu    sync.Mutex
	keys  map[string]paygate.APIKey // by string(hash)
	err   error                     // returned by every lookup when set
	calls int
}

func newFakeStore() *fakeStore { return &fakeStore{keys: make(map[string]paygate.APIKey)} }

func (s *fakeStore) APIKeys(_ context.Context, q paygate.APIKeyQuery) ([]paygate.APIKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if q.ID != "" || q.MerchantID != "" || len(q.Hash) == 0 {
		panic("fakeStore: only a query by hash is expected")
	}
	if s.err != nil {
		return nil, s.err
	}
	k, ok := s.keys[string(q.Hash)]
	if !ok {
		return nil, nil
	}
	return []paygate.APIKey{k}, nil
}

func (s *fakeStore) put(k paygate.APIKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys[string(k.Hash)] = k
}

type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time { return c.t }

var now = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func at(t time.Time) *time.Time { return &t }

// addKey stores a fresh key, edited by mutate, and returns its secret.
func addKey(t *testing.T, s *fakeStore, mode paygate.Mode, typ paygate.KeyType, mutate func(*paygate.APIKey)) string {
	t.Helper()
	secret, k, err := NewKey("key_"+secretTail(t), "m_1", mode, typ, now.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if mutate != nil {
		mutate(&k)
	}
	s.put(k)
	return secret
}

func secretTail(t *testing.T) string {
	t.Helper()
	s, err := randomBase62(randReader, 8)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func assertUnauthorized(t *testing.T, err error, secret string) {
	t.Helper()
	var pe *paygate.Error
	if !errors.As(err, &pe) || pe.Code != paygate.CodeUnauthorized {
		t.Fatalf("err = %v, want UNAUTHORIZED", err)
	}
	if pe.Message != unauthorizedMessage {
		t.Fatalf("message %q is not the fixed one", pe.Message)
	}
	if len(secret) > 8 && strings.Contains(err.Error(), secret[len(secret)-8:]) {
		t.Fatalf("error echoes the key: %v", err)
	}
}

func TestAuthenticate(t *testing.T) {
	t.Parallel()
	s := newFakeStore()
	a := &Authenticator{Store: s, Clock: fixedClock{now}}
	ctx := context.Background()

	liveSecret := addKey(t, s, paygate.ModeLive, paygate.KeySecret, nil)
	testSecret := addKey(t, s, paygate.ModeTest, paygate.KeySecret, nil)
	graceSecret := addKey(t, s, paygate.ModeTest, paygate.KeySecret, func(k *paygate.APIKey) {
		k.ExpiresAt = at(now.Add(time.Minute)) // rotated, still in its grace period
	})
	laterRevoked := addKey(t, s, paygate.ModeTest, paygate.KeySecret, func(k *paygate.APIKey) {
		k.RevokedAt = at(now.Add(time.Second))
	})

	for name, secret := range map[string]string{
		"OKLive": liveSecret, "OKTest": testSecret, "OKGracePeriod": graceSecret, "OKRevokedLater": laterRevoked,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			k, err := a.Authenticate(ctx, secret)
			if err != nil {
				t.Fatal(err)
			}
			if k.MerchantID != "m_1" || k.Type != paygate.KeySecret {
				t.Fatalf("key %+v", k)
			}
			wantMode := paygate.ModeTest
			if strings.HasPrefix(secret, "smtgw_sk_live_") {
				wantMode = paygate.ModeLive
			}
			if k.Mode != wantMode {
				t.Fatalf("mode %q, want %q", k.Mode, wantMode)
			}
		})
	}

	unknown, _, _, _ := Generate(paygate.ModeTest, paygate.KeySecret)
	revoked := addKey(t, s, paygate.ModeTest, paygate.KeySecret, func(k *paygate.APIKey) { k.RevokedAt = at(now) })
	expired := addKey(t, s, paygate.ModeLive, paygate.KeySecret, func(k *paygate.APIKey) { k.ExpiresAt = at(now.Add(-time.Second)) })
	public := addKey(t, s, paygate.ModeTest, paygate.KeyPublic, nil)
	// A row whose stored type or mode disagrees with its prefix: refused.
	storedPublic := addKey(t, s, paygate.ModeTest, paygate.KeySecret, func(k *paygate.APIKey) { k.Type = paygate.KeyPublic })
	storedLive := addKey(t, s, paygate.ModeTest, paygate.KeySecret, func(k *paygate.APIKey) { k.Mode = paygate.ModeLive })

	for name, header := range map[string]string{
		"ErrMissing":         "",
		"ErrMalformed":       "not-a-key",
		"ErrTruncated":       testSecret[:len(testSecret)-10],
		"ErrTrailingGarbage": testSecret + "!",
		"ErrUnknown":         unknown,
		"ErrRevoked":         revoked,
		"ErrExpired":         expired,
		"ErrPublicKey":       public,
		"ErrStoredAsPublic":  storedPublic,
		"ErrModeMismatch":    storedLive,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := a.Authenticate(ctx, header)
			assertUnauthorized(t, err, header)
		})
	}
}

func TestAuthenticateNoLookupForMalformedOrPublic(t *testing.T) {
	t.Parallel()
	s := newFakeStore()
	a := &Authenticator{Store: s, Clock: fixedClock{now}}
	public := addKey(t, s, paygate.ModeLive, paygate.KeyPublic, nil)
	for _, h := range []string{"", "smtgw_sk_test_short", public} {
		_, err := a.Authenticate(context.Background(), h)
		assertUnauthorized(t, err, h)
	}
	if s.calls != 0 {
		t.Fatalf("%d store lookups, want none", s.calls)
	}
}

// TestAuthenticateRevocationIsImmediate checks that nothing is cached: the
// request after a revocation is refused.
func TestAuthenticateRevocationIsImmediate(t *testing.T) {
	t.Parallel()
	s := newFakeStore()
	a := &Authenticator{Store: s, Clock: fixedClock{now}}
	secret := addKey(t, s, paygate.ModeTest, paygate.KeySecret, nil)
	k, err := a.Authenticate(context.Background(), secret)
	if err != nil {
		t.Fatal(err)
	}
	k.RevokedAt = at(now)
	s.put(k)
	_, err = a.Authenticate(context.Background(), secret)
	assertUnauthorized(t, err, secret)
}

func TestAuthenticateErrStoreUnavailable(t *testing.T) {
	t.Parallel()
	s := newFakeStore()
	secret := addKey(t, s, paygate.ModeTest, paygate.KeySecret, nil)
	s.err = paygate.Errorf(paygate.CodeServiceUnavailable, "", "database unreachable")
	a := &Authenticator{Store: s, Clock: fixedClock{now}}
	_, err := a.Authenticate(context.Background(), secret)
	if got := paygate.ErrorCode(err); got != paygate.CodeServiceUnavailable {
		t.Fatalf("code %q, want SERVICE_UNAVAILABLE (err %v)", got, err)
	}

	s.err = errors.New("disk on fire")
	_, err = a.Authenticate(context.Background(), secret)
	if got := paygate.ErrorCode(err); got != paygate.CodeInternal {
		t.Fatalf("code %q, want INTERNAL_ERROR (err %v)", got, err)
	}
	if !errors.Is(err, s.err) {
		t.Fatalf("store error not wrapped: %v", err)
	}
}

func TestAuthenticateDefaultClock(t *testing.T) {
	t.Parallel()
	s := newFakeStore()
	secret := addKey(t, s, paygate.ModeTest, paygate.KeySecret, func(k *paygate.APIKey) {
		k.RevokedAt = at(time.Now().Add(-time.Minute))
	})
	_, err := (&Authenticator{Store: s}).Authenticate(context.Background(), secret)
	assertUnauthorized(t, err, secret)
}
