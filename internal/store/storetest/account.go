package storetest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

func basicCases() []testCase {
	return []testCase{
		{"Ping", func(t *testing.T, s paygate.Store) {
			must(t, s.Ping(ctx(t)))
		}},
	}
}

func merchantCases() []testCase {
	return []testCase{
		{"CreateAndGet", func(t *testing.T, s paygate.Store) {
			m := paygate.Merchant{ID: newID(), Name: "Ünïcode & Co", CreatedAt: base}
			keys := []paygate.APIKey{
				newKey(m.ID, paygate.ModeTest, paygate.KeySecret, base),
				newKey(m.ID, paygate.ModeLive, paygate.KeySecret, base),
				newKey(m.ID, paygate.ModeTest, paygate.KeyPublic, base),
				newKey(m.ID, paygate.ModeLive, paygate.KeyPublic, base),
			}
			must(t, createMerchant(ctx(t), s, m, keys))
			got, err := paygate.OneMerchant(s.Merchants(ctx(t), paygate.MerchantQuery{ID: m.ID}))
			must(t, err)
			equal(t, "merchant", m, got)
			for _, k := range keys {
				gotKey, err := paygate.OneAPIKey(s.APIKeys(ctx(t), paygate.APIKeyQuery{ID: k.ID}))
				must(t, err)
				equal(t, "key", k, gotKey)
			}
		}},
		{"UnknownIsNotFound", func(t *testing.T, s paygate.Store) {
			_, err := paygate.OneMerchant(s.Merchants(ctx(t), paygate.MerchantQuery{ID: newID()}))
			wantNotFound(t, err)
		}},
		{"DuplicateIDConflicts", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			err := createMerchant(ctx(t), s, paygate.Merchant{ID: f.merchant.ID, Name: "again", CreatedAt: at(time.Second)}, nil)
			wantIs(t, err, paygate.ErrConflict)
			got, err := paygate.OneMerchant(s.Merchants(ctx(t), paygate.MerchantQuery{ID: f.merchant.ID}))
			must(t, err)
			equal(t, "merchant after refused duplicate", f.merchant, got)
		}},
		{"CreateIsAtomic", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			m := paygate.Merchant{ID: newID(), Name: "second", CreatedAt: at(time.Second)}
			good := newKey(m.ID, paygate.ModeTest, paygate.KeySecret, m.CreatedAt)
			dup := newKey(m.ID, paygate.ModeLive, paygate.KeySecret, m.CreatedAt)
			dup.ID = f.testKey.ID // an existing key id: the whole merchant must be refused
			err := createMerchant(ctx(t), s, m, []paygate.APIKey{good, dup})
			wantIs(t, err, paygate.ErrConflict)
			_, err = paygate.OneMerchant(s.Merchants(ctx(t), paygate.MerchantQuery{ID: m.ID}))
			wantNotFound(t, err)
			_, err = paygate.OneAPIKey(s.APIKeys(ctx(t), paygate.APIKeyQuery{ID: good.ID}))
			wantNotFound(t, err)
		}},
		{"ListOldestFirstWithLimit", func(t *testing.T, s paygate.Store) {
			none, err := s.Merchants(ctx(t), paygate.MerchantQuery{Limit: 1})
			must(t, err)
			if len(none) != 0 {
				t.Fatalf("Merchants on an empty store: %d merchants", len(none))
			}
			second := newMerchant(t, s, at(2*time.Hour))
			oldest := newMerchant(t, s, at(time.Hour))
			third := newMerchant(t, s, at(3*time.Hour))
			got, err := s.Merchants(ctx(t), paygate.MerchantQuery{Limit: 1})
			must(t, err)
			equal(t, "first merchant", []paygate.Merchant{oldest.merchant}, got)
			all, err := s.Merchants(ctx(t), paygate.MerchantQuery{})
			must(t, err)
			equal(t, "every merchant, oldest first", []paygate.Merchant{oldest.merchant, second.merchant, third.merchant}, all)
			two, err := s.Merchants(ctx(t), paygate.MerchantQuery{Limit: 2})
			must(t, err)
			equal(t, "two oldest merchants", []paygate.Merchant{oldest.merchant, second.merchant}, two)
			byID, err := s.Merchants(ctx(t), paygate.MerchantQuery{ID: third.merchant.ID})
			must(t, err)
			equal(t, "merchant by id", []paygate.Merchant{third.merchant}, byID)
		}},
	}
}

func apiKeyCases() []testCase {
	return []testCase{
		{"CreateAndFind", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			k := newKey(f.merchant.ID, paygate.ModeLive, paygate.KeySecret, at(time.Hour))
			k.ExpiresAt = ptr(at(48 * time.Hour))
			must(t, commit(ctx(t), s, k))
			got, err := paygate.OneAPIKey(s.APIKeys(ctx(t), paygate.APIKeyQuery{ID: k.ID}))
			must(t, err)
			equal(t, "key by id", k, got)
			got, err = paygate.OneAPIKey(s.APIKeys(ctx(t), paygate.APIKeyQuery{Hash: k.Hash}))
			must(t, err)
			equal(t, "key by hash", k, got)
			got, err = paygate.OneAPIKey(s.APIKeys(ctx(t), paygate.APIKeyQuery{Hash: f.testKey.Hash}))
			must(t, err)
			equal(t, "fixture key by hash", f.testKey, got)
		}},
		{"ByHashDoesNotJudgeActivity", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			k := newKey(f.merchant.ID, paygate.ModeTest, paygate.KeySecret, base)
			k.RevokedAt = ptr(at(time.Second))
			k.ExpiresAt = ptr(at(time.Second))
			must(t, commit(ctx(t), s, k))
			got, err := paygate.OneAPIKey(s.APIKeys(ctx(t), paygate.APIKeyQuery{Hash: k.Hash}))
			must(t, err)
			equal(t, "revoked key by hash", k, got)
		}},
		{"UnknownIsNotFound", func(t *testing.T, s paygate.Store) {
			newMerchant(t, s, base)
			_, err := paygate.OneAPIKey(s.APIKeys(ctx(t), paygate.APIKeyQuery{ID: newID()}))
			wantNotFound(t, err)
			_, err = paygate.OneAPIKey(s.APIKeys(ctx(t), paygate.APIKeyQuery{Hash: randomBytes(32)}))
			wantNotFound(t, err)
		}},
		{"DuplicateConflicts", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			sameID := newKey(f.merchant.ID, paygate.ModeTest, paygate.KeySecret, at(time.Second))
			sameID.ID = f.testKey.ID
			wantIs(t, commit(ctx(t), s, sameID), paygate.ErrConflict)
			sameHash := newKey(f.merchant.ID, paygate.ModeTest, paygate.KeySecret, at(time.Second))
			sameHash.Hash = f.testKey.Hash
			wantIs(t, commit(ctx(t), s, sameHash), paygate.ErrConflict)
			got, err := paygate.OneAPIKey(s.APIKeys(ctx(t), paygate.APIKeyQuery{Hash: f.testKey.Hash}))
			must(t, err)
			equal(t, "original key", f.testKey, got)
		}},
		{"ListOldestFirst", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			other := newMerchant(t, s, base)
			late := newKey(f.merchant.ID, paygate.ModeTest, paygate.KeyPublic, at(3*time.Hour))
			early := newKey(f.merchant.ID, paygate.ModeLive, paygate.KeySecret, at(time.Hour))
			early.RevokedAt = ptr(at(2 * time.Hour))
			must(t, commit(ctx(t), s, late))
			must(t, commit(ctx(t), s, early))
			must(t, commit(ctx(t), s, newKey(other.merchant.ID, paygate.ModeTest, paygate.KeySecret, at(90*time.Minute))))
			got, err := s.APIKeys(ctx(t), paygate.APIKeyQuery{MerchantID: f.merchant.ID})
			must(t, err)
			if len(got) != 4 {
				t.Fatalf("got %d keys, want 4 (both modes, no other merchant's)", len(got))
			}
			// The two fixture keys share base as CreatedAt: compare them as a set.
			fixtureKeys := map[string]paygate.APIKey{f.testKey.ID: f.testKey, f.liveKey.ID: f.liveKey}
			for _, k := range got[:2] {
				want, ok := fixtureKeys[k.ID]
				if !ok {
					t.Fatalf("keys not oldest first: got %s created %s among the first two", k.ID, k.CreatedAt)
				}
				equal(t, "fixture key", want, k)
			}
			equal(t, "third key", early, got[2])
			equal(t, "fourth key", late, got[3])
		}},
		{"QueryFiltersCombine", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			other := newMerchant(t, s, base)
			for _, c := range []struct {
				name string
				q    paygate.APIKeyQuery
				want []paygate.APIKey
			}{
				{"id and its merchant", paygate.APIKeyQuery{ID: f.testKey.ID, MerchantID: f.merchant.ID}, []paygate.APIKey{f.testKey}},
				{"id and its merchant and mode", paygate.APIKeyQuery{ID: f.testKey.ID, MerchantID: f.merchant.ID, Mode: paygate.ModeTest}, []paygate.APIKey{f.testKey}},
				{"id and another merchant", paygate.APIKeyQuery{ID: f.testKey.ID, MerchantID: other.merchant.ID}, nil},
				{"id and the other mode", paygate.APIKeyQuery{ID: f.testKey.ID, MerchantID: f.merchant.ID, Mode: paygate.ModeLive}, nil},
				{"hash and another merchant", paygate.APIKeyQuery{Hash: f.liveKey.Hash, MerchantID: other.merchant.ID}, nil},
				{"hash and its mode", paygate.APIKeyQuery{Hash: f.liveKey.Hash, Mode: paygate.ModeLive}, []paygate.APIKey{f.liveKey}},
				{"id and another key's hash", paygate.APIKeyQuery{ID: f.testKey.ID, Hash: f.liveKey.Hash}, nil},
				{"unknown merchant", paygate.APIKeyQuery{MerchantID: newID()}, nil},
			} {
				got, err := s.APIKeys(ctx(t), c.q)
				must(t, err)
				if len(got) == 0 && len(c.want) == 0 {
					continue
				}
				equal(t, c.name, c.want, got)
			}
			// No query lists every merchant's keys.
			for _, q := range []paygate.APIKeyQuery{{}, {Mode: paygate.ModeTest}} {
				if keys, err := s.APIKeys(ctx(t), q); err == nil {
					t.Errorf("APIKeys(%+v) = %d keys, want an error", q, len(keys))
				}
			}
		}},
		{"ListByModeIsScoped", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			other := newMerchant(t, s, base)
			extra := newKey(f.merchant.ID, paygate.ModeTest, paygate.KeyPublic, at(time.Hour))
			must(t, commit(ctx(t), s, extra))
			got, err := s.APIKeys(ctx(t), paygate.APIKeyQuery{MerchantID: f.merchant.ID, Mode: paygate.ModeTest})
			must(t, err)
			equal(t, "test keys", []paygate.APIKey{f.testKey, extra}, got)
			got, err = s.APIKeys(ctx(t), paygate.APIKeyQuery{MerchantID: f.merchant.ID, Mode: paygate.ModeLive})
			must(t, err)
			equal(t, "live keys", []paygate.APIKey{f.liveKey}, got)
			got, err = s.APIKeys(ctx(t), paygate.APIKeyQuery{MerchantID: other.merchant.ID, Mode: paygate.ModeTest})
			must(t, err)
			equal(t, "other merchant's test keys", []paygate.APIKey{other.testKey}, got)
		}},
		{"RotateSetsExpiry", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			next := newKey(f.merchant.ID, paygate.ModeTest, paygate.KeySecret, at(time.Hour))
			must(t, commit(ctx(t), s, paygate.APIKeyRotation{OldID: f.testKey.ID, Next: next, OldExpiresAt: at(25 * time.Hour)}))
			got, err := paygate.OneAPIKey(s.APIKeys(ctx(t), paygate.APIKeyQuery{ID: next.ID}))
			must(t, err)
			equal(t, "new key", next, got)
			old, err := paygate.OneAPIKey(s.APIKeys(ctx(t), paygate.APIKeyQuery{ID: f.testKey.ID}))
			must(t, err)
			want := f.testKey
			want.ExpiresAt = ptr(at(25 * time.Hour))
			equal(t, "old key", want, old)
		}},
		{"RotateTwiceNamesSuccessor", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			first := newKey(f.merchant.ID, paygate.ModeTest, paygate.KeySecret, at(time.Hour))
			must(t, commit(ctx(t), s, paygate.APIKeyRotation{OldID: f.testKey.ID, Next: first, OldExpiresAt: at(25 * time.Hour)}))
			// The old key is in its grace period (active), but it has a
			// successor: a second rotation is refused and writes nothing.
			second := newKey(f.merchant.ID, paygate.ModeTest, paygate.KeySecret, at(2*time.Hour))
			err := commit(ctx(t), s, paygate.APIKeyRotation{OldID: f.testKey.ID, Next: second, OldExpiresAt: at(3 * time.Hour)})
			var replaced *paygate.KeyReplacedError
			if !errors.As(err, &replaced) || replaced.KeyID != f.testKey.ID || replaced.SuccessorID != first.ID {
				t.Fatalf("second rotation: %v, want a KeyReplacedError naming %s", err, first.ID)
			}
			_, err = paygate.OneAPIKey(s.APIKeys(ctx(t), paygate.APIKeyQuery{ID: second.ID}))
			wantNotFound(t, err)
			old, err := paygate.OneAPIKey(s.APIKeys(ctx(t), paygate.APIKeyQuery{ID: f.testKey.ID}))
			must(t, err)
			equal(t, "old key expiry after a refused rotation", ptr(at(25*time.Hour)), old.ExpiresAt)
			// Also once the old key has expired, the successor is named.
			third := newKey(f.merchant.ID, paygate.ModeTest, paygate.KeySecret, at(30*time.Hour))
			if err := commit(ctx(t), s, paygate.APIKeyRotation{OldID: f.testKey.ID, Next: third, OldExpiresAt: at(31 * time.Hour)}); !errors.As(err, &replaced) || replaced.SuccessorID != first.ID {
				t.Fatalf("rotating an expired key with a successor: %v", err)
			}
			// The successor can be rotated.
			must(t, commit(ctx(t), s, paygate.APIKeyRotation{OldID: first.ID, Next: newKey(f.merchant.ID, paygate.ModeTest, paygate.KeySecret, at(4*time.Hour)), OldExpiresAt: at(5 * time.Hour)}))
		}},
		{"RotateConcurrentOneWins", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			const n = 8
			nexts := make([]paygate.APIKey, n)
			errs := make([]error, n)
			var wg sync.WaitGroup
			for i := range n {
				nexts[i] = newKey(f.merchant.ID, paygate.ModeTest, paygate.KeySecret, at(time.Hour))
				wg.Go(func() {
					errs[i] = commit(ctx(t), s, paygate.APIKeyRotation{OldID: f.testKey.ID, Next: nexts[i], OldExpiresAt: at(25 * time.Hour)})
				})
			}
			wg.Wait()
			winner := -1
			for i, err := range errs {
				var replaced *paygate.KeyReplacedError
				switch {
				case err == nil && winner >= 0:
					t.Fatalf("rotations %d and %d of one key both succeeded", winner, i)
				case err == nil:
					winner = i
				case !errors.As(err, &replaced):
					t.Fatalf("rotation %d: %v, want a KeyReplacedError", i, err)
				}
			}
			if winner < 0 {
				t.Fatal("no rotation succeeded")
			}
			for i, k := range nexts {
				_, err := paygate.OneAPIKey(s.APIKeys(ctx(t), paygate.APIKeyQuery{ID: k.ID}))
				if i == winner {
					must(t, err)
				} else {
					wantNotFound(t, err)
				}
			}
			for i, err := range errs {
				var replaced *paygate.KeyReplacedError
				if i != winner && errors.As(err, &replaced) && replaced.SuccessorID != nexts[winner].ID {
					t.Errorf("rotation %d names successor %s, want %s", i, replaced.SuccessorID, nexts[winner].ID)
				}
			}
		}},
		{"RotateDuplicateNextConflicts", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			next := newKey(f.merchant.ID, paygate.ModeTest, paygate.KeySecret, at(time.Hour))
			next.ID = f.liveKey.ID
			wantIs(t, commit(ctx(t), s, paygate.APIKeyRotation{OldID: f.testKey.ID, Next: next, OldExpiresAt: at(25 * time.Hour)}), paygate.ErrConflict)
			old, err := paygate.OneAPIKey(s.APIKeys(ctx(t), paygate.APIKeyQuery{ID: f.testKey.ID}))
			must(t, err)
			equal(t, "old key after a refused rotation", f.testKey, old)
		}},
		{"RotateUnknownIsNotFound", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			next := newKey(f.merchant.ID, paygate.ModeTest, paygate.KeySecret, at(time.Hour))
			wantNotFound(t, commit(ctx(t), s, paygate.APIKeyRotation{OldID: newID(), Next: next, OldExpiresAt: at(25 * time.Hour)}))
			_, err := paygate.OneAPIKey(s.APIKeys(ctx(t), paygate.APIKeyQuery{ID: next.ID}))
			wantNotFound(t, err)
		}},
		{"RotateRevokedConflicts", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			err := commit(ctx(t), s, paygate.APIKeyRevocation{ID: f.testKey.ID, At: at(time.Minute)})
			must(t, err)
			next := newKey(f.merchant.ID, paygate.ModeTest, paygate.KeySecret, at(time.Hour))
			wantIs(t, commit(ctx(t), s, paygate.APIKeyRotation{OldID: f.testKey.ID, Next: next, OldExpiresAt: at(25 * time.Hour)}), paygate.ErrStateConflict)
			_, err = paygate.OneAPIKey(s.APIKeys(ctx(t), paygate.APIKeyQuery{ID: next.ID}))
			wantNotFound(t, err)
			old, err := paygate.OneAPIKey(s.APIKeys(ctx(t), paygate.APIKeyQuery{ID: f.testKey.ID}))
			must(t, err)
			equal(t, "revoked key's expiry", (*time.Time)(nil), old.ExpiresAt)
		}},
		{"RotateExpiredConflicts", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			// A key with an expiry and no successor (as rotated before
			// successors were recorded).
			expiring := newKey(f.merchant.ID, paygate.ModeTest, paygate.KeySecret, at(time.Minute))
			expiring.ExpiresAt = ptr(at(2 * time.Hour))
			must(t, commit(ctx(t), s, expiring))
			// Expired is judged at the rotation time, next.CreatedAt: at
			// exactly the expiry the key no longer works.
			for _, when := range []time.Time{at(2 * time.Hour), at(3 * time.Hour)} {
				next := newKey(f.merchant.ID, paygate.ModeTest, paygate.KeySecret, when)
				wantIs(t, commit(ctx(t), s, paygate.APIKeyRotation{OldID: expiring.ID, Next: next, OldExpiresAt: when.Add(24 * time.Hour)}), paygate.ErrStateConflict)
				_, err := paygate.OneAPIKey(s.APIKeys(ctx(t), paygate.APIKeyQuery{ID: next.ID}))
				wantNotFound(t, err)
			}
			// Just before its expiry it can still be rotated.
			next := newKey(f.merchant.ID, paygate.ModeTest, paygate.KeySecret, at(2*time.Hour-time.Microsecond))
			must(t, commit(ctx(t), s, paygate.APIKeyRotation{OldID: expiring.ID, Next: next, OldExpiresAt: at(30 * time.Hour)}))
			old, err := paygate.OneAPIKey(s.APIKeys(ctx(t), paygate.APIKeyQuery{ID: expiring.ID}))
			must(t, err)
			equal(t, "old key expiry", ptr(at(2*time.Hour)), old.ExpiresAt)
		}},
		{"RevokeKeepsFirstTime", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			got, err := revokeKey(ctx(t), s, f.testKey.ID, at(time.Hour))
			must(t, err)
			want := f.testKey
			want.RevokedAt = ptr(at(time.Hour))
			equal(t, "revoked key", want, got)
			got, err = revokeKey(ctx(t), s, f.testKey.ID, at(2*time.Hour))
			must(t, err)
			equal(t, "revoked again", want, got)
			got, err = paygate.OneAPIKey(s.APIKeys(ctx(t), paygate.APIKeyQuery{ID: f.testKey.ID}))
			must(t, err)
			equal(t, "stored key", want, got)
			other, err := paygate.OneAPIKey(s.APIKeys(ctx(t), paygate.APIKeyQuery{ID: f.liveKey.ID}))
			must(t, err)
			equal(t, "untouched key", f.liveKey, other)
		}},
		{"RefusedKeyOperationWritesNothing", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			revoked := newKey(f.merchant.ID, paygate.ModeTest, paygate.KeySecret, base)
			revoked.RevokedAt = ptr(at(time.Minute))
			rotated := newKey(f.merchant.ID, paygate.ModeTest, paygate.KeySecret, base)
			successor := newKey(f.merchant.ID, paygate.ModeTest, paygate.KeySecret, at(time.Hour))
			must(t, commit(ctx(t), s, revoked, rotated,
				paygate.APIKeyRotation{OldID: rotated.ID, Next: successor, OldExpiresAt: at(25 * time.Hour)}))
			rotated.ExpiresAt = ptr(at(25 * time.Hour))
			var replaced *paygate.KeyReplacedError
			for _, c := range []struct {
				name    string
				refused paygate.Op
				check   func(t *testing.T, err error)
			}{
				{"key of no merchant", newKey(newID(), paygate.ModeTest, paygate.KeySecret, base), func(t *testing.T, err error) { wantNotFound(t, err) }},
				{"key of a taken hash", func() paygate.APIKey {
					k := newKey(f.merchant.ID, paygate.ModeTest, paygate.KeySecret, base)
					k.Hash = f.liveKey.Hash
					return k
				}(), func(t *testing.T, err error) { wantIs(t, err, paygate.ErrConflict) }},
				{"rotation of no key", paygate.APIKeyRotation{OldID: newID(), Next: newKey(f.merchant.ID, paygate.ModeTest, paygate.KeySecret, at(2*time.Hour)), OldExpiresAt: at(3 * time.Hour)},
					func(t *testing.T, err error) { wantNotFound(t, err) }},
				{"rotation of a revoked key", paygate.APIKeyRotation{OldID: revoked.ID, Next: newKey(f.merchant.ID, paygate.ModeTest, paygate.KeySecret, at(2*time.Hour)), OldExpiresAt: at(3 * time.Hour)},
					func(t *testing.T, err error) { wantIs(t, err, paygate.ErrStateConflict) }},
				{"rotation of a replaced key", paygate.APIKeyRotation{OldID: rotated.ID, Next: newKey(f.merchant.ID, paygate.ModeTest, paygate.KeySecret, at(2*time.Hour)), OldExpiresAt: at(3 * time.Hour)},
					func(t *testing.T, err error) {
						if !errors.As(err, &replaced) || replaced.KeyID != rotated.ID || replaced.SuccessorID != successor.ID {
							t.Fatalf("got %v, want a KeyReplacedError naming %s", err, successor.ID)
						}
					}},
				{"revocation of no key", paygate.APIKeyRevocation{ID: newID(), At: at(time.Hour)}, func(t *testing.T, err error) { wantNotFound(t, err) }},
			} {
				t.Run(c.name, func(t *testing.T) {
					extra := newKey(f.merchant.ID, paygate.ModeTest, paygate.KeySecret, at(time.Hour))
					next := newKey(f.merchant.ID, paygate.ModeTest, paygate.KeySecret, at(time.Hour))
					m := paygate.Merchant{ID: newID(), Name: "new", CreatedAt: base}
					c.check(t, commit(ctx(t), s,
						m,
						extra,
						paygate.APIKeyRevocation{ID: f.liveKey.ID, At: at(time.Hour)},
						paygate.APIKeyRotation{OldID: f.testKey.ID, Next: next, OldExpiresAt: at(2 * time.Hour)},
						c.refused))
					_, err := paygate.OneMerchant(s.Merchants(ctx(t), paygate.MerchantQuery{ID: m.ID}))
					wantNotFound(t, err)
					for _, k := range []paygate.APIKey{extra, next} {
						_, err := paygate.OneAPIKey(s.APIKeys(ctx(t), paygate.APIKeyQuery{ID: k.ID}))
						wantNotFound(t, err)
					}
					for _, k := range []paygate.APIKey{f.testKey, f.liveKey, revoked, rotated, successor} {
						got, err := paygate.OneAPIKey(s.APIKeys(ctx(t), paygate.APIKeyQuery{ID: k.ID}))
						must(t, err)
						equal(t, "key after a refused unit", k, got)
					}
				})
			}
		}},
		{"RevokeUnknownIsNotFound", func(t *testing.T, s paygate.Store) {
			err := commit(ctx(t), s, paygate.APIKeyRevocation{ID: newID(), At: base})
			wantNotFound(t, err)
		}},
	}
}

func webhookCases() []testCase {
	return []testCase{
		{"SetAndGet", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			e := paygate.WebhookEndpoint{
				MerchantID: f.merchant.ID, Mode: paygate.ModeLive,
				URL: "https://shop.example/hooks", SealedSecret: sealed("whsec_Zmlyc3Q="),
				Events:    []string{"payment.captured", "refund.created"},
				CreatedAt: at(time.Hour), UpdatedAt: at(time.Hour),
			}
			got, err := setEndpoint(t, s, e, false)
			must(t, err)
			equal(t, "set endpoint", e, got)
			got, err = endpointOf(t, s, f.merchant.ID, paygate.ModeLive)
			must(t, err)
			equal(t, "stored endpoint", e, got)
		}},
		{"NoEventsMeansAll", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			e := paygate.WebhookEndpoint{
				MerchantID: f.merchant.ID, Mode: paygate.ModeTest,
				URL: "http://127.0.0.1:9/hooks", SealedSecret: sealed("whsec_YWxs"),
				CreatedAt: base, UpdatedAt: base,
			}
			_, err := setEndpoint(t, s, e, false)
			must(t, err)
			got, err := endpointOf(t, s, f.merchant.ID, paygate.ModeTest)
			must(t, err)
			if len(got.Events) != 0 {
				t.Errorf("events: got %q, want none", got.Events)
			}
		}},
		{"SetAgainKeepsSecretUnlessRotated", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			first := paygate.WebhookEndpoint{
				MerchantID: f.merchant.ID, Mode: paygate.ModeTest,
				URL: "https://a.example/hooks", SealedSecret: sealed("whsec_Zmlyc3Q="),
				Events:    []string{"payment.captured"},
				CreatedAt: at(time.Hour), UpdatedAt: at(time.Hour),
			}
			_, err := setEndpoint(t, s, first, false)
			must(t, err)

			second := first
			second.URL = "https://b.example/hooks"
			second.SealedSecret = sealed("whsec_c2Vjb25k")
			second.Events = []string{"refund.created", "refund.failed"}
			second.CreatedAt, second.UpdatedAt = at(2*time.Hour), at(2*time.Hour)
			got, err := setEndpoint(t, s, second, false)
			must(t, err)
			want := second
			want.SealedSecret = first.SealedSecret
			want.CreatedAt = first.CreatedAt
			equal(t, "endpoint set again", want, got)
			stored, err := endpointOf(t, s, f.merchant.ID, paygate.ModeTest)
			must(t, err)
			equal(t, "stored endpoint", want, stored)

			third := second
			third.SealedSecret = sealed("whsec_dGhpcmQ=")
			third.Events = nil
			third.CreatedAt, third.UpdatedAt = at(3*time.Hour), at(3*time.Hour)
			got, err = setEndpoint(t, s, third, true)
			must(t, err)
			want = third
			want.CreatedAt = first.CreatedAt
			equal(t, "endpoint with rotated secret", want, got)
			stored, err = endpointOf(t, s, f.merchant.ID, paygate.ModeTest)
			must(t, err)
			equal(t, "stored endpoint", want, stored)
		}},
		{"Tenancy", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			other := newMerchant(t, s, base)
			e := paygate.WebhookEndpoint{
				MerchantID: f.merchant.ID, Mode: paygate.ModeTest,
				URL: "https://a.example/hooks", SealedSecret: sealed("whsec_Zmlyc3Q="), CreatedAt: base, UpdatedAt: base,
			}
			_, err := setEndpoint(t, s, e, false)
			must(t, err)
			_, err = endpointOf(t, s, f.merchant.ID, paygate.ModeLive)
			wantNotFound(t, err)
			_, err = endpointOf(t, s, other.merchant.ID, paygate.ModeTest)
			wantNotFound(t, err)
			// Setting the other mode's endpoint creates a separate one with its own secret.
			live := e
			live.Mode = paygate.ModeLive
			live.SealedSecret = sealed("whsec_bGl2ZQ==")
			got, err := setEndpoint(t, s, live, false)
			must(t, err)
			equal(t, "live endpoint", live, got)
			test, err := endpointOf(t, s, f.merchant.ID, paygate.ModeTest)
			must(t, err)
			equal(t, "test endpoint", e, test)
		}},
	}
}
