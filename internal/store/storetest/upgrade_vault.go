package storetest

import (
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// CheckUpgradedCards reads back, through the store, the stored cards an
// upgrade test of either engine wrote at the schema before its migration
// (merchant m1, customer c1: card-direct saved directly under key k1,
// card-pending for payment p-never and one more card under k2, created
// at), as the new schema reads them.
func CheckUpgradedCards(t *testing.T, s paygate.Store, at time.Time) {
	t.Helper()
	ctx := t.Context()
	cards, err := s.StoredCards(ctx, paygate.StoredCardQuery{MerchantID: "m1", Mode: paygate.ModeTest, CustomerID: "c1"})
	if err != nil || len(cards) != 1 {
		t.Fatalf("active cards after the upgrade: %+v, %v", cards, err)
	}
	if c := cards[0]; c.ID != "card-direct" || c.PaymentID != "" || c.Sealed.KeyID != "k1" || string(c.Sealed.Ciphertext) != "\x02" ||
		c.Sealed.Fingerprint != "fp-1" || c.ExpYear != 2030 || !c.CreatedAt.Equal(at) || c.CreatedAt.Location() != time.UTC || c.DeletedAt != nil {
		t.Errorf("card saved directly: %+v", c)
	}
	sealed, err := s.StoredCardsToRewrap(ctx, "k2", "", 10)
	if err != nil || len(sealed) != 2 || sealed[1].ID != "card-pending" || sealed[1].PaymentID != "p-never" ||
		sealed[1].State != paygate.StoredCardPending {
		t.Errorf("sealed cards after the upgrade: %+v, %v", sealed, err)
	}
}

// CheckUpgradedIdempotencyAndRouting reads back, through the store, the
// idempotency records, 3-D Secure challenges, routing rows and recovery
// claims an upgrade test of either engine wrote at the schema before its
// migration (created at, claimed or expiring later), as the new schema
// reads them: every row kept, and a payment never claimed recoverable.
func CheckUpgradedIdempotencyAndRouting(t *testing.T, s paygate.Store, at, later time.Time) {
	t.Helper()
	ctx := t.Context()
	now := at.Add(time.Second)
	reserve := func(key string) (paygate.IdempotencyRecord, bool) {
		t.Helper()
		rec, reserved, err := s.ReserveIdempotency(ctx, paygate.IdempotencyReservation{
			MerchantID: "m1", Mode: paygate.ModeTest, Key: key, Fingerprint: []byte{0x0f}, Now: now,
		})
		if err != nil {
			t.Fatalf("reserve %s: %v", key, err)
		}
		return rec, reserved
	}
	if rec, reserved := reserve("idem-live"); reserved || rec.PaymentID != "" || rec.State != paygate.IdempotencyInFlight ||
		string(rec.Fingerprint) != "\x0a" || !rec.CreatedAt.Equal(at) {
		t.Errorf("live record without a payment: %+v, reserved %v", rec, reserved)
	}
	if rec, reserved := reserve("idem-abandoned"); !reserved || rec.PaymentID != "" {
		t.Errorf("abandoned record without a payment was not replaced: %+v, reserved %v", rec, reserved)
	}
	if rec, reserved := reserve("idem-done"); reserved || rec.PaymentID != "p-claimed" || rec.StatusCode != 201 ||
		string(rec.Body) != `{"id":"p-claimed"}` {
		t.Errorf("complete record: %+v, reserved %v", rec, reserved)
	}

	open, err := s.ThreeDSChallenges(ctx, paygate.ThreeDSChallengeQuery{TokenHash: []byte{0xaa}})
	if err != nil || len(open) != 1 || open[0].PaymentID != "p-never" || open[0].ClaimedUntil != nil ||
		open[0].ConsumedAt != nil || !open[0].ExpiresAt.Equal(later) {
		t.Errorf("open challenge: %+v, %v", open, err)
	}
	used, err := s.ThreeDSChallenges(ctx, paygate.ThreeDSChallengeQuery{PaymentID: "p-claimed", MerchantID: "m1", Mode: paygate.ModeTest})
	if err != nil || len(used) != 1 || used[0].ConsumedAt == nil || !used[0].ConsumedAt.Equal(later) {
		t.Errorf("consumed challenge: %+v, %v", used, err)
	}

	states, err := s.ProviderStates(ctx)
	if err != nil || len(states) != 1 || !states[0].Drained || !states[0].UpdatedAt.Equal(at) {
		t.Errorf("provider states: %+v, %v", states, err)
	}
	reports, err := s.BreakerReports(ctx, at)
	if err != nil || len(reports) != 1 || reports[0].State != paygate.BreakerHalfOpen || !reports[0].ReportedAt.Equal(later) {
		t.Errorf("breaker reports: %+v, %v", reports, err)
	}
	charge, err := s.SandboxChargeByPayment(ctx, "sandbox", "p-never")
	if err != nil || charge.Outcome != paygate.SandboxDeclined || charge.ProviderRef != "" || charge.Amount.Amount != 1000 ||
		!charge.ReadyAt.Equal(later) {
		t.Errorf("sandbox charge: %+v, %v", charge, err)
	}

	// Never claimed is recoverable; claimed until later is not.
	toRecover, err := s.PaymentsToRecover(ctx, now, 10)
	if err != nil || len(toRecover) != 1 || toRecover[0].ID != "p-never" {
		t.Errorf("payments to recover: %+v, %v", toRecover, err)
	}

}
