package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// CheckUpgradedWebhooks reads through the store, after an upgrade, the
// rows an engine's TestUpgradeKeepsEveryEventAndDelivery wrote with the
// schema before (issue 19: one representation), and checks that each
// reads as written. Its rows, all of merchant m1 in test mode unless
// said, with times at unless said:
//   - events e-cap (payment.captured, payment p1, payload {"a":1}), e-ref
//     (refund.succeeded, p1, refund r1, {"b":2}), e-ping (ping, neither, {});
//   - the test endpoint https://shop.example/hook subscribed to
//     payment.captured and refund.succeeded, sealed secret 0x01, sealed
//     previous secret 0x02 until later, enabled; the live endpoint
//     https://shop.example/live with no events, sealed secret 0x03,
//     disabled at at;
//   - deliveries d-new (e-cap, pending, never attempted), d-done (e-ref,
//     succeeded, 2 attempts, last at at, last status 200), d-ping (e-ping,
//     failed, 1 attempt, last error "refused");
//   - attempts d-done 1 (500, 1500µs, response "oops", error "HTTP 500",
//     private address not recorded), d-done 2 (200, 700µs, empty, false),
//     d-ping 1 (0, 20µs, empty, "refused", true).
//
// It claims d-new.
func CheckUpgradedWebhooks(t *testing.T, s paygate.Store, at, later time.Time) {
	t.Helper()
	ctx := t.Context()
	events, err := s.Events(ctx, paygate.EventQuery{MerchantID: "m1", Mode: paygate.ModeTest})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range events {
		got = append(got, e.ID+"|"+string(e.Type)+"|"+e.PaymentID+"|"+e.RefundID+"|"+string(e.Payload))
		if !e.CreatedAt.Equal(at) || e.CreatedAt.Location() != time.UTC || e.Mode != paygate.ModeTest || e.MerchantID != "m1" {
			t.Errorf("event %s: %+v", e.ID, e)
		}
	}
	want := []string{`e-cap|payment.captured|p1||{"a":1}`, `e-ref|refund.succeeded|p1|r1|{"b":2}`, `e-ping|ping|||{}`}
	if !slices.Equal(got, want) {
		t.Errorf("events after the upgrade:\n%q\nwant\n%q", got, want)
	}
	if ofPayment, err := s.Events(ctx, paygate.EventQuery{MerchantID: "m1", Mode: paygate.ModeTest, PaymentID: "p1"}); err != nil || len(ofPayment) != 2 {
		t.Errorf("events of the payment: %d, %v; want 2", len(ofPayment), err)
	}

	test, err := s.WebhookEndpointState(ctx, "m1", paygate.ModeTest)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(test.Events, []string{"payment.captured", "refund.succeeded"}) || test.URL != "https://shop.example/hook" ||
		string(test.SealedSecret) != "\x01" || string(test.SealedPreviousSecret) != "\x02" || test.Secret != "" ||
		test.PreviousSecretExpiresAt == nil || !test.PreviousSecretExpiresAt.Equal(later) || test.DisabledAt != nil ||
		!test.CreatedAt.Equal(at) || !test.UpdatedAt.Equal(at) {
		t.Errorf("test endpoint: %+v", test)
	}
	live, err := s.WebhookEndpointState(ctx, "m1", paygate.ModeLive)
	if err != nil {
		t.Fatal(err)
	}
	if live.Events != nil || live.DisabledAt == nil || !live.DisabledAt.Equal(at) || live.PreviousSecretExpiresAt != nil ||
		live.SealedPreviousSecret != nil || string(live.SealedSecret) != "\x03" {
		t.Errorf("live endpoint: %+v", live)
	}

	deliveries, err := s.Deliveries(ctx, paygate.DeliveryQuery{MerchantID: "m1", Mode: paygate.ModeTest})
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]paygate.Delivery{}
	for _, d := range deliveries {
		byID[d.ID] = d
	}
	if d := byID["d-new"]; len(deliveries) != 3 || d.LastAttemptAt != nil || d.Attempts != 0 || d.Status != paygate.DeliveryPending ||
		!d.NextAttemptAt.Equal(at) || d.EventType != paygate.EventPaymentCaptured {
		t.Errorf("deliveries after the upgrade: %+v", deliveries)
	}
	if d := byID["d-done"]; d.LastAttemptAt == nil || !d.LastAttemptAt.Equal(at) || d.LastStatusCode != 200 || d.Attempts != 2 ||
		d.Status != paygate.DeliverySucceeded {
		t.Errorf("attempted delivery: %+v", d)
	}
	if ofPayment, err := s.Deliveries(ctx, paygate.DeliveryQuery{MerchantID: "m1", Mode: paygate.ModeTest, PaymentID: "p1"}); err != nil || len(ofPayment) != 2 {
		t.Errorf("deliveries of the payment: %d, %v; want 2", len(ofPayment), err)
	}

	attempts, err := s.DeliveryAttempts(ctx, "m1", paygate.ModeTest, "d-done")
	if err != nil {
		t.Fatal(err)
	}
	if len(attempts) != 2 || attempts[0].PrivateAddress != nil || string(attempts[0].Response) != "oops" ||
		attempts[0].Latency != 1500*time.Microsecond || attempts[0].Error != "HTTP 500" || attempts[0].StatusCode != 500 ||
		!attempts[0].StartedAt.Equal(at) || attempts[1].PrivateAddress == nil || *attempts[1].PrivateAddress ||
		attempts[1].Response == nil || len(attempts[1].Response) != 0 {
		t.Errorf("attempts after the upgrade: %+v", attempts)
	}
	if ping, err := s.DeliveryAttempts(ctx, "m1", paygate.ModeTest, "d-ping"); err != nil || len(ping) != 1 ||
		ping[0].PrivateAddress == nil || !*ping[0].PrivateAddress {
		t.Errorf("attempt to a private address: %+v, %v", ping, err)
	}
	if none, err := s.DeliveryAttempts(ctx, "m1", paygate.ModeTest, "d-new"); err != nil || none == nil || len(none) != 0 {
		t.Errorf("attempts of a delivery never attempted: %+v, %v", none, err)
	}
	if _, err := s.DeliveryAttempts(ctx, "m1", paygate.ModeTest, "d-nope"); !paygate.IsNotFound(err) {
		t.Errorf("attempts of no delivery: %v, want NOT_FOUND", err)
	}

	now := at.Add(time.Minute)
	claimed, err := s.ClaimDeliveries(ctx, paygate.DeliveryClaim{Now: now, FirstDue: now, Lease: "lease-1", LeaseUntil: now.Add(time.Minute), Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(claimed) != 1 || claimed[0].Delivery.ID != "d-new" || string(claimed[0].Payload) != `{"a":1}` ||
		claimed[0].Endpoint == nil || !slices.Equal(claimed[0].Endpoint.Events, test.Events) ||
		string(claimed[0].Endpoint.SealedSecret) != "\x01" {
		t.Errorf("claimed after the upgrade: %+v", claimed)
	}
}
