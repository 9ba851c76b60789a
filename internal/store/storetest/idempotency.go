package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

func idempotencyCases() []testCase {
	return []testCase{
		{"ReserveThenExisting", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			r := f.reservation(paygate.ModeTest, "key-1", at(time.Hour))
			_, reserved, err := s.ReserveIdempotency(ctx(t), r)
			must(t, err)
			if !reserved {
				t.Fatal("a new key was not reserved")
			}
			got := f.lookup(t, paygate.ModeTest, "key-1", at(time.Hour+time.Second))
			equal(t, "in-flight record", paygate.IdempotencyRecord{
				MerchantID: f.merchant.ID, Mode: paygate.ModeTest, Key: "key-1",
				Fingerprint: r.Fingerprint, State: paygate.IdempotencyInFlight,
				CreatedAt: at(time.Hour),
			}, got)
		}},
		{"ScopedByMerchantAndMode", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			other := newMerchant(t, s, base)
			f.reserve(t, paygate.ModeTest, "shared", at(time.Hour))
			f.reserve(t, paygate.ModeLive, "shared", at(time.Hour))
			other.reserve(t, paygate.ModeTest, "shared", at(time.Hour))
		}},
		{"CompleteIsReplayedExactly", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			r := f.reservation(paygate.ModeLive, "key-1", at(time.Hour))
			_, _, err := s.ReserveIdempotency(ctx(t), r)
			must(t, err)
			body := []byte("{\"data\":{\"id\":\"x\", \"amount\":\"10.5\"},\n \"z\":\"\u00e9\\u00e9\"}\n")
			must(t, commitOp(ctx(t), s, paygate.IdempotencyCompletion{
				MerchantID: f.merchant.ID, Mode: paygate.ModeLive, Key: "key-1",
				StatusCode: 201, Body: body,
			}))
			got := f.lookup(t, paygate.ModeLive, "key-1", at(2*time.Hour))
			equal(t, "complete record", paygate.IdempotencyRecord{
				MerchantID: f.merchant.ID, Mode: paygate.ModeLive, Key: "key-1",
				Fingerprint: r.Fingerprint, State: paygate.IdempotencyComplete,
				StatusCode: 201, Body: body, CreatedAt: at(time.Hour),
			}, got)
		}},
		{"FirstAnswerIsKept", func(t *testing.T, s paygate.Store) {
			// Once a client may have seen an answer, replays never change.
			f := newMerchant(t, s, base)
			f.reserve(t, paygate.ModeTest, "key-1", at(time.Hour))
			for _, body := range []string{`{"first":true}`, `{"second":true}`} {
				must(t, commitOp(ctx(t), s, paygate.IdempotencyCompletion{
					MerchantID: f.merchant.ID, Mode: paygate.ModeTest, Key: "key-1", StatusCode: 201, Body: []byte(body),
				}))
			}
			got := f.lookup(t, paygate.ModeTest, "key-1", at(2*time.Hour))
			if string(got.Body) != `{"first":true}` {
				t.Fatalf("replay changed to %s", got.Body)
			}
		}},
		{"LargeBody", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			f.reserve(t, paygate.ModeTest, "key-1", at(time.Hour))
			body := make([]byte, 0, 128<<10)
			for len(body) < 128<<10 {
				body = append(body, `{"k":"0123456789abcdef","n":[1,2,3]},`...)
			}
			must(t, commitOp(ctx(t), s, paygate.IdempotencyCompletion{
				MerchantID: f.merchant.ID, Mode: paygate.ModeTest, Key: "key-1", StatusCode: 502, Body: body,
			}))
			got := f.lookup(t, paygate.ModeTest, "key-1", at(2*time.Hour))
			if got.StatusCode != 502 || string(got.Body) != string(body) {
				t.Errorf("got status %d and %d body bytes, want 502 and the %d bytes stored", got.StatusCode, len(got.Body), len(body))
			}
		}},
		{"ExpiredRecordIsReplaced", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			f.reserve(t, paygate.ModeTest, "key-1", at(time.Hour))
			must(t, commitOp(ctx(t), s, paygate.IdempotencyCompletion{
				MerchantID: f.merchant.ID, Mode: paygate.ModeTest, Key: "key-1", StatusCode: 201, Body: []byte(`{}`),
			}))
			// One microsecond before the TTL ends the record is live.
			got := f.lookup(t, paygate.ModeTest, "key-1", at(time.Hour+paygate.IdempotencyTTL-time.Microsecond))
			if got.State != paygate.IdempotencyComplete {
				t.Fatalf("state %q before expiry, want complete", got.State)
			}
			// At CreatedAt + TTL it has expired and is replaced.
			now := at(time.Hour + paygate.IdempotencyTTL)
			r := f.reservation(paygate.ModeTest, "key-1", now)
			_, reserved, err := s.ReserveIdempotency(ctx(t), r)
			must(t, err)
			if !reserved {
				t.Fatal("an expired key was not reserved again")
			}
			got = f.lookup(t, paygate.ModeTest, "key-1", now.Add(time.Second))
			equal(t, "replacing record", paygate.IdempotencyRecord{
				MerchantID: f.merchant.ID, Mode: paygate.ModeTest, Key: "key-1",
				Fingerprint: r.Fingerprint, State: paygate.IdempotencyInFlight, CreatedAt: now,
			}, got)
		}},
		{"AbandonedInFlightIsReplaced", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			f.reserve(t, paygate.ModeTest, "key-1", at(time.Hour))
			got := f.lookup(t, paygate.ModeTest, "key-1", at(time.Hour+paygate.PaymentLease-time.Second))
			if got.State != paygate.IdempotencyInFlight {
				t.Fatalf("state %q, want in_flight", got.State)
			}
			now := at(time.Hour + paygate.PaymentLease + time.Second)
			r := f.reservation(paygate.ModeTest, "key-1", now)
			_, reserved, err := s.ReserveIdempotency(ctx(t), r)
			must(t, err)
			if !reserved {
				t.Fatal("an in-flight record without payment older than the lease was not replaced")
			}
			got = f.lookup(t, paygate.ModeTest, "key-1", now.Add(time.Second))
			equal(t, "replacing record", paygate.IdempotencyRecord{
				MerchantID: f.merchant.ID, Mode: paygate.ModeTest, Key: "key-1",
				Fingerprint: r.Fingerprint, State: paygate.IdempotencyInFlight, CreatedAt: now,
			}, got)
		}},
		{"InFlightWithPaymentIsKept", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			p := f.newPayment(t, paygate.ModeTest, at(time.Hour))
			got := f.lookup(t, paygate.ModeTest, p.IdempotencyKey, at(time.Hour+paygate.PaymentLease+time.Hour))
			if got.State != paygate.IdempotencyInFlight || got.PaymentID != p.ID {
				t.Fatalf("got state %q payment %q, want in_flight with payment %s", got.State, got.PaymentID, p.ID)
			}
		}},
		{"CompleteWithoutPaymentIsKept", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			f.reserve(t, paygate.ModeTest, "key-1", at(time.Hour))
			must(t, commitOp(ctx(t), s, paygate.IdempotencyCompletion{
				MerchantID: f.merchant.ID, Mode: paygate.ModeTest, Key: "key-1", StatusCode: 201, Body: []byte(`{"a":1}`),
			}))
			got := f.lookup(t, paygate.ModeTest, "key-1", at(time.Hour+paygate.PaymentLease+time.Hour))
			if got.State != paygate.IdempotencyComplete {
				t.Fatalf("state %q, want complete", got.State)
			}
		}},
		{"InactiveAPIKeyIsUnauthorized", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			other := newMerchant(t, s, base)
			revoked := newKey(f.merchant.ID, paygate.ModeTest, paygate.KeySecret, base)
			revoked.RevokedAt = ptr(at(time.Hour))
			expired := newKey(f.merchant.ID, paygate.ModeTest, paygate.KeySecret, base)
			expired.ExpiresAt = ptr(at(time.Hour))
			must(t, commit(ctx(t), s, revoked))
			must(t, commit(ctx(t), s, expired))
			for name, keyID := range map[string]string{
				"revoked":             revoked.ID,
				"expired":             expired.ID,
				"unknown":             newID(),
				"other merchant's":    other.testKey.ID,
				"other mode's (live)": f.liveKey.ID,
			} {
				r := f.reservation(paygate.ModeTest, "key-1", at(time.Hour))
				r.APIKeyID = keyID
				_, reserved, err := s.ReserveIdempotency(ctx(t), r)
				if reserved {
					t.Errorf("%s key: reserved", name)
				}
				if paygate.ErrorCode(err) != paygate.CodeUnauthorized {
					t.Errorf("%s key: got error %v, want UNAUTHORIZED", name, err)
				}
			}
			// Nothing was reserved: an active key reserves the key now.
			f.reserve(t, paygate.ModeTest, "key-1", at(time.Hour))
		}},
		{"APIKeyJudgedAtNow", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			k := newKey(f.merchant.ID, paygate.ModeTest, paygate.KeySecret, base)
			k.ExpiresAt = ptr(at(2 * time.Hour))
			k.RevokedAt = ptr(at(3 * time.Hour))
			must(t, commit(ctx(t), s, k))
			r := f.reservation(paygate.ModeTest, "key-1", at(2*time.Hour-time.Microsecond))
			r.APIKeyID = k.ID
			_, reserved, err := s.ReserveIdempotency(ctx(t), r)
			must(t, err)
			if !reserved {
				t.Fatal("a key in its grace period could not reserve")
			}
			r = f.reservation(paygate.ModeTest, "key-2", at(2*time.Hour))
			r.APIKeyID = k.ID
			_, _, err = s.ReserveIdempotency(ctx(t), r)
			wantCode(t, err, paygate.CodeUnauthorized, "")
		}},
		{"UnauthorizedReplacesNothing", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			first := f.reservation(paygate.ModeTest, "key-1", at(time.Hour))
			_, _, err := s.ReserveIdempotency(ctx(t), first)
			must(t, err)
			err = commit(ctx(t), s, paygate.APIKeyRevocation{ID: f.testKey.ID, At: at(2 * time.Hour)})
			must(t, err)
			// The old record is expired, but the key is revoked: the record stays.
			r := f.reservation(paygate.ModeTest, "key-1", at(time.Hour+paygate.IdempotencyTTL+time.Hour))
			_, _, err = s.ReserveIdempotency(ctx(t), r)
			wantCode(t, err, paygate.CodeUnauthorized, "")
			k := newKey(f.merchant.ID, paygate.ModeTest, paygate.KeySecret, base)
			must(t, commit(ctx(t), s, k))
			r = f.reservation(paygate.ModeTest, "key-1", at(time.Hour+paygate.PaymentLease/2))
			r.APIKeyID = k.ID
			got, reserved, err := s.ReserveIdempotency(ctx(t), r)
			must(t, err)
			if reserved {
				t.Fatal("the record was replaced by an unauthorized reservation")
			}
			equal(t, "fingerprint", first.Fingerprint, got.Fingerprint)
		}},
		{"Release", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			f.reserve(t, paygate.ModeTest, "key-1", at(time.Hour))
			f.reserve(t, paygate.ModeLive, "key-1", at(time.Hour))
			must(t, commitOp(ctx(t), s, paygate.IdempotencyRelease{MerchantID: f.merchant.ID, Mode: paygate.ModeTest, Key: "key-1"}))
			f.reserve(t, paygate.ModeTest, "key-1", at(time.Hour+time.Second))
			// The live record of the same key was not touched.
			f.lookup(t, paygate.ModeLive, "key-1", at(time.Hour+time.Second))
		}},
		{"ReleaseKeepsCompleteRecord", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			f.reserve(t, paygate.ModeTest, "key-1", at(time.Hour))
			must(t, commitOp(ctx(t), s, paygate.IdempotencyCompletion{
				MerchantID: f.merchant.ID, Mode: paygate.ModeTest, Key: "key-1", StatusCode: 201, Body: []byte(`{}`),
			}))
			must(t, commitOp(ctx(t), s, paygate.IdempotencyRelease{MerchantID: f.merchant.ID, Mode: paygate.ModeTest, Key: "key-1"}))
			got := f.lookup(t, paygate.ModeTest, "key-1", at(time.Hour+time.Second))
			if got.State != paygate.IdempotencyComplete {
				t.Fatalf("state %q, want complete", got.State)
			}
		}},
		{"Purge", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			other := newMerchant(t, s, base)
			f.reserve(t, paygate.ModeTest, "old-1", at(time.Hour))
			other.reserve(t, paygate.ModeLive, "old-2", at(2*time.Hour))
			f.reserve(t, paygate.ModeTest, "edge", at(3*time.Hour))
			f.reserve(t, paygate.ModeTest, "new", at(4*time.Hour))
			// Completed, so that the later lookups do not take them for abandoned.
			for _, key := range []string{"edge", "new"} {
				must(t, commitOp(ctx(t), s, paygate.IdempotencyCompletion{
					MerchantID: f.merchant.ID, Mode: paygate.ModeTest, Key: key, StatusCode: 201, Body: []byte(`{}`),
				}))
			}
			n, err := s.PurgeIdempotency(ctx(t), at(3*time.Hour))
			must(t, err)
			if n != 2 {
				t.Fatalf("purged %d records, want 2", n)
			}
			f.reserve(t, paygate.ModeTest, "old-1", at(5*time.Hour))
			f.lookup(t, paygate.ModeTest, "edge", at(5*time.Hour))
			f.lookup(t, paygate.ModeTest, "new", at(5*time.Hour))
			n, err = s.PurgeIdempotency(ctx(t), at(time.Hour))
			must(t, err)
			if n != 0 {
				t.Fatalf("purged %d records, want 0", n)
			}
		}},
		{"ConcurrentReserveOnce", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			const n = 20
			var (
				wg       sync.WaitGroup
				mu       sync.Mutex
				winners  []paygate.IdempotencyReservation
				existing []paygate.IdempotencyRecord
			)
			errs := make(chan error, n)
			for range n {
				r := f.reservation(paygate.ModeTest, "contended", at(time.Hour))
				wg.Go(func() {
					rec, reserved, err := s.ReserveIdempotency(ctx(t), r)
					if err != nil {
						errs <- err
						return
					}
					mu.Lock()
					defer mu.Unlock()
					if reserved {
						winners = append(winners, r)
					} else {
						existing = append(existing, rec)
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Errorf("concurrent reserve: %v", err)
			}
			if len(winners) != 1 {
				t.Fatalf("%d of %d concurrent reservations succeeded, want exactly 1", len(winners), n)
			}
			for _, rec := range existing {
				equal(t, "loser's view of the fingerprint", winners[0].Fingerprint, rec.Fingerprint)
			}
		}},
	}
}
