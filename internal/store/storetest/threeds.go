package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// challengeTTL is the lifetime of the challenges of these cases.
const challengeTTL = 30 * time.Minute

// challengeValue returns a challenge of p created at the time, not stored.
func challengeValue(p paygate.Payment, created time.Time) paygate.ThreeDSChallenge {
	return paygate.ThreeDSChallenge{
		TokenHash:  randomBytes(32),
		PaymentID:  p.ID,
		MerchantID: p.MerchantID,
		Mode:       p.Mode,
		CreatedAt:  created,
		ExpiresAt:  created.Add(challengeTTL),
	}
}

// toPending3DS is the transition of a created payment to pending_3ds at the
// time.
func toPending3DS(p paygate.Payment, now time.Time) paygate.PaymentTransition {
	return paygate.PaymentTransition{
		ID: p.ID, MerchantID: p.MerchantID, Mode: p.Mode,
		From: []paygate.PaymentStatus{paygate.PaymentCreated}, To: paygate.PaymentPending3DS,
		ProviderID: "sandbox-eu", ProviderRef: "ref-" + p.ID, UpdatedAt: now,
	}
}

// createChallenge commits the unit of a payment's move to pending_3ds, as
// the payment service writes it: the transition, its events, the answer
// (when not nil) and the challenge.
func createChallenge(ctx context.Context, s paygate.Store, c paygate.ThreeDSChallenge, t paygate.PaymentTransition, events []paygate.Event, done *paygate.IdempotencyCompletion) error {
	u := paygate.Unit{Ops: []paygate.Op{t}}
	u.AddEvents(events)
	u.AddCompletion(done)
	u.Add(c)
	return s.Commit(ctx, u)
}

// pendingChallenge creates a payment in mode at created, moves it to
// pending_3ds with a stored challenge one second later, and returns both as
// stored.
func (f fixture) pendingChallenge(t *testing.T, mode paygate.Mode, created time.Time) (paygate.Payment, paygate.ThreeDSChallenge) {
	t.Helper()
	p := f.newPayment(t, mode, created)
	now := created.Add(time.Second)
	c := challengeValue(p, now)
	must(t, createChallenge(ctx(t), f.s, c, toPending3DS(p, now), nil, nil))
	got, err := f.s.PaymentByID(ctx(t), p.MerchantID, p.Mode, p.ID)
	must(t, err)
	return got, c
}

// finishCaptured is the finish of c that captures p at the time.
func finishCaptured(p paygate.Payment, c paygate.ThreeDSChallenge, now time.Time) paygate.ThreeDSFinish {
	return paygate.ThreeDSFinish{
		TokenHash: c.TokenHash, At: now,
		Transition: paygate.PaymentTransition{
			ID: p.ID, MerchantID: p.MerchantID, Mode: p.Mode,
			From: []paygate.PaymentStatus{paygate.PaymentPending3DS}, To: paygate.PaymentCaptured,
			ProviderRef: "captured-" + p.ID, AmountCaptured: ptr(p.Amount.Amount), UpdatedAt: now,
		},
		Events: []paygate.Event{eventValue(p, paygate.EventPaymentCaptured, "", now)},
	}
}

// finishExpired is the expiry job's finish of c at the time.
func finishExpired(p paygate.Payment, c paygate.ThreeDSChallenge, now time.Time) paygate.ThreeDSFinish {
	return paygate.ThreeDSFinish{
		TokenHash: c.TokenHash, At: now, OnlyExpired: true,
		Transition: paygate.PaymentTransition{
			ID: p.ID, MerchantID: p.MerchantID, Mode: p.Mode,
			From: []paygate.PaymentStatus{paygate.PaymentPending3DS}, To: paygate.PaymentFailed,
			ErrorCode: string(paygate.CodeAuthenticationExpired), ErrorMessage: "expired", UpdatedAt: now,
		},
		Events: []paygate.Event{eventValue(p, paygate.EventPaymentFailed, "", now)},
	}
}

// finishChallenge commits the finish's unit: the challenge's consumption,
// the payment's transition and its events.
func finishChallenge(c context.Context, s paygate.Store, f paygate.ThreeDSFinish) error {
	return s.Commit(c, paygate.Unit{Ops: f.Ops()})
}

// challengeByHash returns the challenge of the token hash, or NOT_FOUND.
func challengeByHash(c context.Context, s paygate.Store, hash []byte) (paygate.ThreeDSChallenge, error) {
	cs, err := s.ThreeDSChallenges(c, paygate.ThreeDSChallengeQuery{TokenHash: hash})
	switch {
	case err != nil:
		return paygate.ThreeDSChallenge{}, err
	case len(cs) == 0:
		return paygate.ThreeDSChallenge{}, paygate.Errorf(paygate.CodeNotFound, "", "no challenge has the hash")
	case len(cs) > 1:
		return paygate.ThreeDSChallenge{}, fmt.Errorf("%d challenges have one token hash", len(cs))
	}
	return cs[0], nil
}

// wantStatus fails unless the stored payment has the status.
func wantStatus(t *testing.T, s paygate.Store, p paygate.Payment, want paygate.PaymentStatus) paygate.Payment {
	t.Helper()
	got, err := s.PaymentByID(ctx(t), p.MerchantID, p.Mode, p.ID)
	must(t, err)
	if got.Status != want {
		t.Fatalf("payment status %s, want %s", got.Status, want)
	}
	return got
}

// wantEvents fails unless the merchant's events of the mode have the types.
func wantEvents(t *testing.T, s paygate.Store, p paygate.Payment, types ...paygate.EventType) {
	t.Helper()
	evs, err := s.Events(ctx(t), paygate.EventQuery{MerchantID: p.MerchantID, Mode: p.Mode})
	must(t, err)
	var got []paygate.EventType
	for _, e := range evs {
		got = append(got, e.Type)
	}
	equal(t, "event types", types, got)
}

func threeDSCases() []testCase {
	const n = 12
	return []testCase{
		{"CreateAndGet", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			p := f.newPayment(t, paygate.ModeTest, at(time.Hour))
			now := at(time.Hour + time.Second)
			c := challengeValue(p, now)
			answer := []byte(`{"data":{"status":"pending_3ds","threeDsRequired":true}}`)
			must(t, createChallenge(ctx(t), s, c, toPending3DS(p, now), nil, &paygate.IdempotencyCompletion{
				MerchantID: p.MerchantID, Mode: p.Mode, Key: p.IdempotencyKey, StatusCode: 201, Body: answer,
			}))
			got, err := challengeByHash(ctx(t), s, c.TokenHash)
			must(t, err)
			equal(t, "challenge", c, got)
			stored := wantStatus(t, s, p, paygate.PaymentPending3DS)
			equal(t, "provider", "sandbox-eu", stored.ProviderID)
			equal(t, "provider ref", "ref-"+p.ID, stored.ProviderRef)
			rec := f.lookup(t, p.Mode, p.IdempotencyKey, now)
			equal(t, "idempotency state", paygate.IdempotencyComplete, rec.State)
			equal(t, "idempotency answer", answer, rec.Body)
			equal(t, "idempotency status", 201, rec.StatusCode)
		}},
		{"ByPaymentIsScoped", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			p, c := f.pendingChallenge(t, paygate.ModeTest, at(time.Hour))
			f.pendingChallenge(t, paygate.ModeTest, at(2*time.Hour)) // another payment's
			got, err := s.ThreeDSChallenges(ctx(t), paygate.ThreeDSChallengeQuery{MerchantID: p.MerchantID, Mode: p.Mode, PaymentID: p.ID})
			must(t, err)
			equal(t, "challenges", []paygate.ThreeDSChallenge{c}, got)
			for _, q := range []struct {
				merchant string
				mode     paygate.Mode
			}{{newID(), p.Mode}, {p.MerchantID, paygate.ModeLive}} {
				got, err := s.ThreeDSChallenges(ctx(t), paygate.ThreeDSChallengeQuery{MerchantID: q.merchant, Mode: q.mode, PaymentID: p.ID})
				must(t, err)
				if len(got) != 0 {
					t.Errorf("merchant %s mode %s sees %d challenges of another's payment", q.merchant, q.mode, len(got))
				}
			}
		}},
		{"CreateWithEvents", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			p := f.newPayment(t, paygate.ModeLive, at(time.Hour))
			now := at(time.Hour + time.Second)
			ev := eventValue(p, paygate.EventPaymentAuthorized, "", now)
			must(t, createChallenge(ctx(t), s, challengeValue(p, now), toPending3DS(p, now), []paygate.Event{ev}, nil))
			evs, err := s.Events(ctx(t), paygate.EventQuery{MerchantID: p.MerchantID, Mode: p.Mode})
			must(t, err)
			equal(t, "events", []paygate.Event{ev}, evs)
		}},
		{"CreateStateConflictWritesNothing", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			p, _ := f.pendingChallenge(t, paygate.ModeTest, at(time.Hour))
			// A second challenge for a payment that is no longer created.
			c := challengeValue(p, at(2*time.Hour))
			err := createChallenge(ctx(t), s, c, toPending3DS(p, at(2*time.Hour)),
				[]paygate.Event{eventValue(p, paygate.EventPaymentFailed, "", at(2*time.Hour))}, nil)
			wantIs(t, err, paygate.ErrStateConflict)
			_, err = challengeByHash(ctx(t), s, c.TokenHash)
			wantNotFound(t, err)
			wantEvents(t, s, p)
		}},
		{"CreateUnknownPaymentIsNotFound", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			p := f.paymentValue(paygate.ModeTest, at(time.Hour)) // never stored
			c := challengeValue(p, at(time.Hour))
			wantNotFound(t, createChallenge(ctx(t), s, c, toPending3DS(p, at(time.Hour)), nil, nil))
			_, err := challengeByHash(ctx(t), s, c.TokenHash)
			wantNotFound(t, err)
		}},
		{"CreateOtherMerchantIsNotFound", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			other := newMerchant(t, s, base)
			p := f.newPayment(t, paygate.ModeTest, at(time.Hour))
			c := challengeValue(p, at(time.Hour))
			c.MerchantID = other.merchant.ID
			tr := toPending3DS(p, at(time.Hour))
			tr.MerchantID = other.merchant.ID
			wantNotFound(t, createChallenge(ctx(t), s, c, tr, nil, nil))
			wantStatus(t, s, p, paygate.PaymentCreated)
		}},
		{"CreateDuplicateTokenWritesNothing", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			_, first := f.pendingChallenge(t, paygate.ModeTest, at(time.Hour))
			p := f.newPayment(t, paygate.ModeTest, at(time.Hour))
			now := at(time.Hour + time.Second)
			c := challengeValue(p, now)
			c.TokenHash = first.TokenHash
			err := createChallenge(ctx(t), s, c, toPending3DS(p, now),
				[]paygate.Event{eventValue(p, paygate.EventPaymentAuthorized, "", now)},
				&paygate.IdempotencyCompletion{MerchantID: p.MerchantID, Mode: p.Mode, Key: p.IdempotencyKey, StatusCode: 201, Body: []byte("{}")})
			wantIs(t, err, paygate.ErrConflict)
			wantStatus(t, s, p, paygate.PaymentCreated)
			wantEvents(t, s, p)
			rec := f.lookup(t, p.Mode, p.IdempotencyKey, now)
			equal(t, "idempotency state", paygate.IdempotencyInFlight, rec.State)
			got, err := challengeByHash(ctx(t), s, first.TokenHash)
			must(t, err)
			equal(t, "first challenge", first, got)
		}},
		{"ChallengeWithoutItsTransitionIsRefused", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			other := newMerchant(t, s, base)
			p := f.newPayment(t, paygate.ModeTest, at(time.Hour))
			now := at(time.Hour + time.Second)
			c := challengeValue(p, now)
			mine := c
			mine.MerchantID = other.merchant.ID // names another merchant
			for name, u := range map[string]paygate.Unit{
				"alone":          {Ops: []paygate.Op{c}},
				"before":         {Ops: []paygate.Op{c, toPending3DS(p, now)}},
				"other merchant": {Ops: []paygate.Op{toPending3DS(p, now), mine}},
			} {
				if err := s.Commit(ctx(t), u); err == nil {
					t.Errorf("%s: a challenge without its payment's transition committed", name)
				}
			}
			wantStatus(t, s, p, paygate.PaymentCreated)
			_, err := challengeByHash(ctx(t), s, c.TokenHash)
			wantNotFound(t, err)
		}},
		{"ByUnknownHashIsNotFound", func(t *testing.T, s paygate.Store) {
			_, err := challengeByHash(ctx(t), s, randomBytes(32))
			wantNotFound(t, err)
		}},
		{"ClaimOnceUntilItLapses", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			_, c := f.pendingChallenge(t, paygate.ModeTest, at(time.Hour))
			now := at(time.Hour + time.Minute)
			got, err := s.ClaimThreeDSChallenge(ctx(t), c.TokenHash, now, now.Add(time.Minute))
			must(t, err)
			want := c
			want.ClaimedUntil = ptr(now.Add(time.Minute))
			equal(t, "claimed challenge", want, got)
			_, err = s.ClaimThreeDSChallenge(ctx(t), c.TokenHash, now.Add(time.Second), now.Add(2*time.Minute))
			wantIs(t, err, paygate.ErrStateConflict)
			stored, err := challengeByHash(ctx(t), s, c.TokenHash)
			must(t, err)
			equal(t, "challenge after a refused claim", want, stored)
			// At the end of the claim, another request may claim it.
			later := now.Add(time.Minute)
			got, err = s.ClaimThreeDSChallenge(ctx(t), c.TokenHash, later, later.Add(time.Minute))
			must(t, err)
			equal(t, "claimed again until", ptr(later.Add(time.Minute)), got.ClaimedUntil)
		}},
		{"ClaimUnusableIsNotFound", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			_, err := s.ClaimThreeDSChallenge(ctx(t), randomBytes(32), at(time.Hour), at(2*time.Hour))
			wantNotFound(t, err)
			// Expired: at exactly ExpiresAt it can no longer be claimed.
			_, c := f.pendingChallenge(t, paygate.ModeTest, at(time.Hour))
			_, err = s.ClaimThreeDSChallenge(ctx(t), c.TokenHash, c.ExpiresAt, c.ExpiresAt.Add(time.Minute))
			wantNotFound(t, err)
			got, err := s.ClaimThreeDSChallenge(ctx(t), c.TokenHash, c.ExpiresAt.Add(-time.Microsecond), c.ExpiresAt.Add(time.Minute))
			must(t, err)
			equal(t, "claimed just before expiry", c.TokenHash, got.TokenHash)
			// Consumed.
			p, d := f.pendingChallenge(t, paygate.ModeTest, at(time.Hour))
			must(t, finishChallenge(ctx(t), s, finishCaptured(p, d, at(time.Hour+time.Minute))))
			_, err = s.ClaimThreeDSChallenge(ctx(t), d.TokenHash, at(time.Hour+2*time.Minute), at(2*time.Hour))
			wantNotFound(t, err)
		}},
		{"ClaimConcurrentlyOnce", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			_, c := f.pendingChallenge(t, paygate.ModeTest, at(time.Hour))
			now := at(time.Hour + time.Minute)
			wins := countSuccesses(t, n, func(int) (bool, error) {
				_, err := s.ClaimThreeDSChallenge(ctx(t), c.TokenHash, now, now.Add(time.Minute))
				if errors.Is(err, paygate.ErrStateConflict) {
					return false, nil
				}
				return err == nil, err
			})
			if wins != 1 {
				t.Fatalf("%d of %d concurrent claims succeeded, want 1", wins, n)
			}
		}},
		{"ReleaseLetsAnotherClaim", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			p, c := f.pendingChallenge(t, paygate.ModeTest, at(time.Hour))
			now := at(time.Hour + time.Minute)
			_, err := s.ClaimThreeDSChallenge(ctx(t), c.TokenHash, now, now.Add(time.Hour))
			must(t, err)
			must(t, commitOp(ctx(t), s, paygate.ThreeDSRelease{TokenHash: c.TokenHash}))
			got, err := challengeByHash(ctx(t), s, c.TokenHash)
			must(t, err)
			equal(t, "released challenge", c, got)
			_, err = s.ClaimThreeDSChallenge(ctx(t), c.TokenHash, now.Add(time.Second), now.Add(time.Hour))
			must(t, err)
			// Releasing a consumed challenge changes nothing.
			must(t, finishChallenge(ctx(t), s, finishCaptured(p, c, now.Add(2*time.Second))))
			before, err := challengeByHash(ctx(t), s, c.TokenHash)
			must(t, err)
			must(t, commitOp(ctx(t), s, paygate.ThreeDSRelease{TokenHash: c.TokenHash}))
			after, err := challengeByHash(ctx(t), s, c.TokenHash)
			must(t, err)
			equal(t, "consumed challenge after release", before, after)
			// An unknown hash is no error.
			must(t, commitOp(ctx(t), s, paygate.ThreeDSRelease{TokenHash: randomBytes(32)}))
		}},
		{"FinishConsumesOnce", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			p, c := f.pendingChallenge(t, paygate.ModeTest, at(time.Hour))
			now := at(time.Hour + time.Minute)
			_, err := s.ClaimThreeDSChallenge(ctx(t), c.TokenHash, now, now.Add(time.Minute))
			must(t, err)
			fin := finishCaptured(p, c, now.Add(time.Second))
			must(t, finishChallenge(ctx(t), s, fin))
			got := wantStatus(t, s, p, paygate.PaymentCaptured)
			equal(t, "amount captured", p.Amount.Amount, got.AmountCaptured)
			equal(t, "provider ref", "captured-"+p.ID, got.ProviderRef)
			equal(t, "updated at", now.Add(time.Second), got.UpdatedAt)
			stored, err := challengeByHash(ctx(t), s, c.TokenHash)
			must(t, err)
			equal(t, "consumed at", ptr(now.Add(time.Second)), stored.ConsumedAt)
			evs, err := s.Events(ctx(t), paygate.EventQuery{MerchantID: p.MerchantID, Mode: p.Mode})
			must(t, err)
			equal(t, "events", fin.Events, evs)
			// A replay changes nothing.
			again := finishCaptured(p, c, now.Add(2*time.Second))
			again.Transition.From = []paygate.PaymentStatus{paygate.PaymentPending3DS, paygate.PaymentCaptured}
			wantIs(t, finishChallenge(ctx(t), s, again), paygate.ErrStateConflict)
			wantEvents(t, s, p, paygate.EventPaymentCaptured)
			got = wantStatus(t, s, p, paygate.PaymentCaptured)
			equal(t, "updated at after replay", now.Add(time.Second), got.UpdatedAt)
		}},
		{"FinishStateConflictConsumesNothing", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			p, c := f.pendingChallenge(t, paygate.ModeTest, at(time.Hour))
			fin := finishCaptured(p, c, at(time.Hour+time.Minute))
			fin.Transition.From = []paygate.PaymentStatus{paygate.PaymentAuthorized}
			wantIs(t, finishChallenge(ctx(t), s, fin), paygate.ErrStateConflict)
			got, err := challengeByHash(ctx(t), s, c.TokenHash)
			must(t, err)
			equal(t, "challenge after a refused finish", c, got)
			wantStatus(t, s, p, paygate.PaymentPending3DS)
			wantEvents(t, s, p)
		}},
		{"FinishUnknownIsNotFound", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			other := newMerchant(t, s, base)
			p, c := f.pendingChallenge(t, paygate.ModeTest, at(time.Hour))
			fin := finishCaptured(p, c, at(time.Hour+time.Minute))
			fin.TokenHash = randomBytes(32)
			wantNotFound(t, finishChallenge(ctx(t), s, fin))
			// The challenge of another merchant's (or mode's) payment.
			fin = finishCaptured(p, c, at(time.Hour+time.Minute))
			fin.Transition.MerchantID = other.merchant.ID
			wantNotFound(t, finishChallenge(ctx(t), s, fin))
			fin = finishCaptured(p, c, at(time.Hour+time.Minute))
			fin.Transition.Mode = paygate.ModeLive
			wantNotFound(t, finishChallenge(ctx(t), s, fin))
			wantStatus(t, s, p, paygate.PaymentPending3DS)
		}},
		{"FinishConcurrentlyOnce", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			p, c := f.pendingChallenge(t, paygate.ModeTest, at(time.Hour))
			wins := countSuccesses(t, n, func(i int) (bool, error) {
				fin := finishCaptured(p, c, at(time.Hour+time.Minute))
				if i%2 == 1 {
					fin = finishExpired(p, c, c.ExpiresAt.Add(time.Second))
				}
				err := finishChallenge(ctx(t), s, fin)
				if errors.Is(err, paygate.ErrStateConflict) {
					return false, nil
				}
				return err == nil, err
			})
			if wins != 1 {
				t.Fatalf("%d of %d concurrent finishes succeeded, want 1", wins, n)
			}
			evs, err := s.Events(ctx(t), paygate.EventQuery{MerchantID: p.MerchantID, Mode: p.Mode})
			must(t, err)
			if len(evs) != 1 {
				t.Fatalf("%d events, want 1", len(evs))
			}
			wantStatus(t, s, p, map[paygate.EventType]paygate.PaymentStatus{
				paygate.EventPaymentCaptured: paygate.PaymentCaptured,
				paygate.EventPaymentFailed:   paygate.PaymentFailed,
			}[evs[0].Type])
		}},
		{"FinishOnlyExpired", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			p, c := f.pendingChallenge(t, paygate.ModeTest, at(time.Hour))
			// Not expired yet.
			wantIs(t, finishChallenge(ctx(t), s, finishExpired(p, c, c.ExpiresAt.Add(-time.Microsecond))), paygate.ErrStateConflict)
			// Claimed just before expiry by a callback that is still running.
			_, err := s.ClaimThreeDSChallenge(ctx(t), c.TokenHash, c.ExpiresAt.Add(-time.Second), c.ExpiresAt.Add(time.Minute))
			must(t, err)
			wantIs(t, finishChallenge(ctx(t), s, finishExpired(p, c, c.ExpiresAt.Add(time.Second))), paygate.ErrStateConflict)
			wantStatus(t, s, p, paygate.PaymentPending3DS)
			// Once the claim has lapsed, the expiry applies.
			fin := finishExpired(p, c, c.ExpiresAt.Add(time.Minute))
			must(t, finishChallenge(ctx(t), s, fin))
			got := wantStatus(t, s, p, paygate.PaymentFailed)
			equal(t, "error code", string(paygate.CodeAuthenticationExpired), got.ErrorCode)
			wantEvents(t, s, p, paygate.EventPaymentFailed)
		}},
		{"ByHashIsNotScopedByMerchant", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			other := newMerchant(t, s, base)
			p, c := f.pendingChallenge(t, paygate.ModeTest, at(time.Hour))
			// The hash selects the challenge; the payment fields do not
			// narrow it (the token is the credential).
			got, err := s.ThreeDSChallenges(ctx(t), paygate.ThreeDSChallengeQuery{
				TokenHash: c.TokenHash, MerchantID: other.merchant.ID, Mode: paygate.ModeLive, PaymentID: p.ID,
			})
			must(t, err)
			equal(t, "challenges of the hash", []paygate.ThreeDSChallenge{c}, got)
			got, err = s.ThreeDSChallenges(ctx(t), paygate.ThreeDSChallengeQuery{TokenHash: randomBytes(32)})
			must(t, err)
			equal(t, "challenges of an unknown hash", []paygate.ThreeDSChallenge{}, got)
			got, err = s.ThreeDSChallenges(ctx(t), paygate.ThreeDSChallengeQuery{MerchantID: p.MerchantID, Mode: p.Mode, PaymentID: newID()})
			must(t, err)
			equal(t, "challenges of an unknown payment", []paygate.ThreeDSChallenge{}, got)
		}},
		{"ConsumptionRefusalWritesNothing", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			p, c := f.pendingChallenge(t, paygate.ModeTest, at(time.Hour))
			q, d := f.pendingChallenge(t, paygate.ModeTest, at(time.Hour))
			must(t, finishChallenge(ctx(t), s, finishCaptured(p, c, at(time.Hour+time.Minute))))
			now := at(time.Hour + 2*time.Minute)
			// A good operation, then a consumption of a consumed challenge.
			_, err := s.ClaimThreeDSChallenge(ctx(t), d.TokenHash, now, now.Add(time.Hour))
			must(t, err)
			consumed := paygate.ThreeDSConsumption{TokenHash: c.TokenHash, PaymentID: p.ID, MerchantID: p.MerchantID, Mode: p.Mode, At: now}
			wantIs(t, commitOp(ctx(t), s, paygate.ThreeDSRelease{TokenHash: d.TokenHash},
				eventValue(q, paygate.EventPaymentFailed, "", now), consumed), paygate.ErrStateConflict)
			// Then one of a challenge the payment does not have.
			unknown := paygate.ThreeDSConsumption{TokenHash: randomBytes(32), PaymentID: q.ID, MerchantID: q.MerchantID, Mode: q.Mode, At: now}
			wantNotFound(t, commitOp(ctx(t), s, paygate.ThreeDSRelease{TokenHash: d.TokenHash},
				eventValue(q, paygate.EventPaymentFailed, "", now), unknown))
			// A consumption refused because it is not expired, after the
			// consumption of another challenge.
			early := paygate.ThreeDSConsumption{TokenHash: d.TokenHash, PaymentID: q.ID, MerchantID: q.MerchantID, Mode: q.Mode, At: now, OnlyExpired: true}
			_, e := f.pendingChallenge(t, paygate.ModeTest, at(time.Hour))
			r, _ := challengeByHash(ctx(t), s, e.TokenHash)
			good := paygate.ThreeDSConsumption{TokenHash: e.TokenHash, PaymentID: r.PaymentID, MerchantID: r.MerchantID, Mode: r.Mode, At: now}
			wantIs(t, commitOp(ctx(t), s, good, early), paygate.ErrStateConflict)
			got, err := challengeByHash(ctx(t), s, e.TokenHash)
			must(t, err)
			equal(t, "challenge consumed in a refused unit", e, got)
			got, err = challengeByHash(ctx(t), s, d.TokenHash)
			must(t, err)
			equal(t, "claim released in a refused unit", ptr(now.Add(time.Hour)), got.ClaimedUntil)
			wantEvents(t, s, p, paygate.EventPaymentCaptured)
			wantStatus(t, s, q, paygate.PaymentPending3DS)
		}},
		{"ExpiredOldestFirst", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			other := newMerchant(t, s, base)
			_, late := f.pendingChallenge(t, paygate.ModeTest, at(2*time.Hour))
			_, early := other.pendingChallenge(t, paygate.ModeLive, at(time.Hour))
			f.pendingChallenge(t, paygate.ModeTest, at(5*time.Hour)) // expires after now
			pc, consumed := f.pendingChallenge(t, paygate.ModeTest, at(time.Hour))
			must(t, finishChallenge(ctx(t), s, finishCaptured(pc, consumed, at(time.Hour+time.Minute))))
			_, claimed := f.pendingChallenge(t, paygate.ModeTest, at(time.Hour))
			now := at(4 * time.Hour)
			_, err := s.ClaimThreeDSChallenge(ctx(t), claimed.TokenHash, claimed.ExpiresAt.Add(-time.Second), now.Add(time.Minute))
			must(t, err)

			got, err := s.ExpiredThreeDSChallenges(ctx(t), now, 0)
			must(t, err)
			equal(t, "expired challenges", []paygate.ThreeDSChallenge{early, late}, got)
			got, err = s.ExpiredThreeDSChallenges(ctx(t), now, 1)
			must(t, err)
			equal(t, "expired challenges, limited", []paygate.ThreeDSChallenge{early}, got)
			// At exactly its ExpiresAt a challenge is expired.
			got, err = s.ExpiredThreeDSChallenges(ctx(t), early.ExpiresAt, 0)
			must(t, err)
			equal(t, "expired at the instant", []paygate.ThreeDSChallenge{early}, got)
			got, err = s.ExpiredThreeDSChallenges(ctx(t), at(time.Hour), 0)
			must(t, err)
			equal(t, "none expired yet", []paygate.ThreeDSChallenge{}, got)
		}},
	}
}
