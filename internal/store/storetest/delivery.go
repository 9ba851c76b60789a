package storetest

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/testenv"
)

// deliveryCases covers paygate.WebhookStore: deliveries born with their
// events, claims and leases, finishing, listing, resend and ping.
func deliveryCases() []testCase {
	return []testCase{
		{"NoEndpointNoDelivery", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			p := f.newPayment(t, paygate.ModeTest, at(time.Minute))
			f.capture(t, p, at(2*time.Minute))
			wantDeliveries(t, s, paygate.DeliveryQuery{MerchantID: f.merchant.ID}, 0)
			if got := claim(t, s, at(time.Hour), 0, 10); len(got) != 0 {
				t.Fatalf("claimed %d deliveries without an endpoint", len(got))
			}
		}},
		{"EveryEventWritesItsDelivery", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			f.endpoint(t, paygate.ModeTest)
			p := f.newPayment(t, paygate.ModeTest, at(time.Minute))
			captured := f.capture(t, p, at(2*time.Minute))
			p, err := s.PaymentByID(ctx(t), p.MerchantID, p.Mode, p.ID)
			must(t, err)
			refund := refundValue(p, 100, at(3*time.Minute))
			created := eventValue(p, paygate.EventRefundCreated, refund.ID, at(3*time.Minute))
			must(t, createRefund(ctx(t), s, refund, []paygate.Event{created}, nil))
			failed := eventValue(p, paygate.EventRefundFailed, refund.ID, at(4*time.Minute))
			must(t, commitRefundTransition(ctx(t), s, paygate.RefundTransition{
				ID: refund.ID, MerchantID: refund.MerchantID, Mode: refund.Mode,
				From: paygate.RefundCreated, To: paygate.RefundFailed, UpdatedAt: at(4 * time.Minute),
			}, []paygate.Event{failed}))

			got := wantDeliveries(t, s, paygate.DeliveryQuery{MerchantID: f.merchant.ID}, 3)
			for i, ev := range []paygate.Event{failed, created, captured} { // newest first
				d := got[i]
				if !isUUID(d.ID) {
					t.Errorf("delivery id %q is not a UUID", d.ID)
				}
				want := paygate.Delivery{
					ID: d.ID, EventID: ev.ID, MerchantID: ev.MerchantID, Mode: ev.Mode, EventType: ev.Type,
					Status: paygate.DeliveryPending, NextAttemptAt: ev.CreatedAt,
					CreatedAt: ev.CreatedAt, UpdatedAt: ev.CreatedAt,
				}
				equal(t, "delivery of "+string(ev.Type), want, d)
				byID, err := paygate.DeliveryByID(ctx(t), s, f.merchant.ID, paygate.ModeTest, d.ID)
				must(t, err)
				equal(t, "delivery by id", want, byID)
			}
		}},
		{"NoDeliveryWithoutTheChange", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			f.endpoint(t, paygate.ModeTest)
			p := f.newPayment(t, paygate.ModeTest, at(time.Minute))
			f.capture(t, p, at(2*time.Minute))
			// A transition that loses its race writes neither event nor delivery.
			err := s.Commit(ctx(t), transitionUnit(paygate.PaymentTransition{
				ID: p.ID, MerchantID: p.MerchantID, Mode: p.Mode,
				From: []paygate.PaymentStatus{paygate.PaymentCreated}, To: paygate.PaymentFailed,
				UpdatedAt: at(3 * time.Minute),
			}, []paygate.Event{eventValue(p, paygate.EventPaymentFailed, "", at(3*time.Minute))}, nil))
			wantIs(t, err, paygate.ErrStateConflict)
			wantDeliveries(t, s, paygate.DeliveryQuery{MerchantID: f.merchant.ID}, 1)
		}},
		{"SubscriptionAndModeFilter", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			other := newMerchant(t, s, base)
			f.endpoint(t, paygate.ModeTest, string(paygate.EventPaymentFailed), string(paygate.EventRefundCreated))
			f.endpoint(t, paygate.ModeLive)
			other.endpoint(t, paygate.ModeTest)
			f.capture(t, f.newPayment(t, paygate.ModeTest, at(time.Minute)), at(2*time.Minute)) // not subscribed
			failed := f.fail(t, f.newPayment(t, paygate.ModeTest, at(time.Minute)), at(3*time.Minute))
			live := f.capture(t, f.newPayment(t, paygate.ModeLive, at(time.Minute)), at(4*time.Minute))

			got := wantDeliveries(t, s, paygate.DeliveryQuery{MerchantID: f.merchant.ID, Mode: paygate.ModeTest}, 1)
			if got[0].EventID != failed.ID {
				t.Errorf("test-mode delivery of event %s, want the payment.failed %s", got[0].EventID, failed.ID)
			}
			got = wantDeliveries(t, s, paygate.DeliveryQuery{MerchantID: f.merchant.ID, Mode: paygate.ModeLive}, 1)
			if got[0].EventID != live.ID || got[0].Mode != paygate.ModeLive {
				t.Errorf("live delivery %+v, want the live event %s", got[0], live.ID)
			}
			wantDeliveries(t, s, paygate.DeliveryQuery{MerchantID: f.merchant.ID}, 2)
			wantDeliveries(t, s, paygate.DeliveryQuery{MerchantID: other.merchant.ID}, 0)
		}},
		{"ConfigureRotatesKeepingThePreviousSecret", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			e := paygate.WebhookEndpoint{
				MerchantID: f.merchant.ID, Mode: paygate.ModeLive, URL: "https://a.example/hooks",
				SealedSecret: sealed("whsec_Zmlyc3Q="), Events: []string{"payment.captured"}, CreatedAt: at(time.Hour), UpdatedAt: at(time.Hour),
			}
			// Creating with rotateSecret has nothing to keep.
			got, err := testenv.ConfigureEndpoint(ctx(t), s, e, true, at(25*time.Hour))
			must(t, err)
			equal(t, "new endpoint", paygate.WebhookEndpointState{WebhookEndpoint: e}, got)

			second := e
			second.URL, second.SealedSecret, second.Events = "https://b.example/hooks", sealed("whsec_c2Vjb25k"), nil
			second.CreatedAt, second.UpdatedAt = at(2*time.Hour), at(2*time.Hour)
			got, err = testenv.ConfigureEndpoint(ctx(t), s, second, true, at(26*time.Hour))
			must(t, err)
			want := paygate.WebhookEndpointState{WebhookEndpoint: second, SealedPreviousSecret: e.SealedSecret, PreviousSecretExpiresAt: ptr(at(26 * time.Hour))}
			want.CreatedAt = e.CreatedAt
			equal(t, "rotated endpoint", want, got)
			stored, err := s.WebhookEndpointState(ctx(t), f.merchant.ID, paygate.ModeLive)
			must(t, err)
			equal(t, "stored endpoint", want, stored)
			plain, err := endpointOf(t, s, f.merchant.ID, paygate.ModeLive)
			must(t, err)
			equal(t, "endpoint", want.WebhookEndpoint, plain)

			// Setting again without rotation keeps both secrets.
			third := second
			third.SealedSecret, third.UpdatedAt = sealed("whsec_dGhpcmQ="), at(3*time.Hour)
			got, err = testenv.ConfigureEndpoint(ctx(t), s, third, false, at(27*time.Hour))
			must(t, err)
			want.UpdatedAt = at(3 * time.Hour)
			equal(t, "endpoint set again", want, got)

			_, err = testenv.ConfigureEndpoint(ctx(t), s, paygate.WebhookEndpoint{
				MerchantID: newID(), Mode: paygate.ModeTest, URL: "https://a.example", SealedSecret: sealed("whsec_eA=="),
				CreatedAt: base, UpdatedAt: base,
			}, false, at(time.Hour))
			wantNotFound(t, err)
			_, err = s.WebhookEndpointState(ctx(t), f.merchant.ID, paygate.ModeTest)
			wantNotFound(t, err)
		}},
		{"ClaimAttemptRetrySucceed", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			ep := f.endpoint(t, paygate.ModeTest)
			ev := f.capture(t, f.newPayment(t, paygate.ModeTest, at(time.Minute)), at(time.Hour))
			T := ev.CreatedAt

			if got := claim(t, s, T.Add(-time.Second), 0, 10); len(got) != 0 {
				t.Fatalf("claimed %d deliveries before they were due", len(got))
			}
			// A first wait of one second: not due yet at T.
			if got := claim(t, s, T, time.Second, 10); len(got) != 0 {
				t.Fatalf("claimed %d deliveries within the first wait", len(got))
			}
			got := claim(t, s, T.Add(time.Second), time.Second, 10)
			if len(got) != 1 {
				t.Fatalf("claimed %d deliveries, want 1", len(got))
			}
			c := got[0]
			if c.Delivery.EventID != ev.ID || c.Delivery.Attempts != 1 || c.Delivery.Status != paygate.DeliveryPending {
				t.Errorf("claimed %+v, want attempt 1 of event %s", c.Delivery, ev.ID)
			}
			if string(c.Payload) != string(ev.Payload) {
				t.Errorf("payload %s, want %s", c.Payload, ev.Payload)
			}
			if c.Endpoint == nil {
				t.Fatal("claimed without its endpoint")
			}
			equal(t, "claimed endpoint", ep, *c.Endpoint)
			if again := claim(t, s, T.Add(2*time.Second), 0, 10); len(again) != 0 {
				t.Fatalf("a leased delivery was claimed again")
			}

			attempt := paygate.DeliveryAttempt{
				DeliveryID: c.Delivery.ID, Number: 1, URL: ep.URL, StartedAt: T.Add(time.Second),
				StatusCode: 500, Latency: 1234 * time.Microsecond, Response: []byte("oops"), Error: "HTTP 500",
				PrivateAddress: ptr(true),
			}
			wantIs(t, finishDelivery(ctx(t), s, paygate.DeliveryFinish{
				DeliveryID: c.Delivery.ID, Lease: "not-the-lease", At: T.Add(2 * time.Second), Attempt: &attempt,
				Status: paygate.DeliveryPending, NextAttemptAt: T.Add(10 * time.Second),
			}), paygate.ErrStateConflict)
			wantNotFound(t, finishDelivery(ctx(t), s, paygate.DeliveryFinish{
				DeliveryID: newID(), Lease: c.Lease, At: T, Status: paygate.DeliveryFailed,
			}))
			must(t, finishDelivery(ctx(t), s, paygate.DeliveryFinish{
				DeliveryID: c.Delivery.ID, Lease: c.Lease, At: T.Add(2 * time.Second), Attempt: &attempt,
				Status: paygate.DeliveryPending, NextAttemptAt: T.Add(10 * time.Second),
			}))
			d, err := paygate.DeliveryByID(ctx(t), s, f.merchant.ID, paygate.ModeTest, c.Delivery.ID)
			must(t, err)
			equal(t, "delivery after a failed attempt", paygate.Delivery{
				ID: d.ID, EventID: ev.ID, MerchantID: ev.MerchantID, Mode: ev.Mode, EventType: ev.Type,
				Status: paygate.DeliveryPending, Attempts: 1, NextAttemptAt: T.Add(10 * time.Second),
				LastAttemptAt: ptr(T.Add(time.Second)), LastStatusCode: 500, LastError: "HTTP 500",
				CreatedAt: T, UpdatedAt: T.Add(2 * time.Second),
			}, d)
			attempts, err := s.DeliveryAttempts(ctx(t), f.merchant.ID, paygate.ModeTest, d.ID)
			must(t, err)
			equal(t, "attempts", []paygate.DeliveryAttempt{attempt}, attempts)

			if got := claim(t, s, T.Add(9*time.Second), time.Hour, 10); len(got) != 0 {
				t.Fatalf("claimed a retry before it was due")
			}
			// The first wait applies to first attempts only.
			got = claim(t, s, T.Add(10*time.Second), time.Hour, 10)
			if len(got) != 1 || got[0].Delivery.Attempts != 2 {
				t.Fatalf("claimed %+v, want the second attempt", got)
			}
			second := paygate.DeliveryAttempt{
				DeliveryID: d.ID, Number: 2, URL: ep.URL, StartedAt: T.Add(10 * time.Second),
				StatusCode: 204, Latency: 2 * time.Millisecond, Response: []byte(strings.Repeat("é", paygate.MaxAttemptResponse)),
				PrivateAddress: ptr(false),
			}
			must(t, finishDelivery(ctx(t), s, paygate.DeliveryFinish{
				DeliveryID: d.ID, Lease: got[0].Lease, At: T.Add(11 * time.Second), Attempt: &second,
				Status: paygate.DeliverySucceeded,
			}))
			// No more than 1 KiB of an answer is kept, whatever is passed.
			second.Response = second.Response[:paygate.MaxAttemptResponse]
			d, err = paygate.DeliveryByID(ctx(t), s, f.merchant.ID, paygate.ModeTest, d.ID)
			must(t, err)
			if d.Status != paygate.DeliverySucceeded || d.Attempts != 2 || d.LastStatusCode != 204 || d.LastError != "" {
				t.Errorf("delivery after success: %+v", d)
			}
			attempts, err = s.DeliveryAttempts(ctx(t), f.merchant.ID, paygate.ModeTest, d.ID)
			must(t, err)
			equal(t, "attempts", []paygate.DeliveryAttempt{attempt, second}, attempts)
			if got := claim(t, s, T.Add(48*time.Hour), 0, 10); len(got) != 0 {
				t.Fatalf("claimed a succeeded delivery")
			}
			wantIs(t, finishDelivery(ctx(t), s, paygate.DeliveryFinish{
				DeliveryID: d.ID, Lease: got0Lease(got), At: T.Add(12 * time.Second), Status: paygate.DeliveryFailed,
			}), paygate.ErrStateConflict)
		}},
		{"CrashedClaimComesBackAfterTheLease", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			f.endpoint(t, paygate.ModeTest)
			ev := f.capture(t, f.newPayment(t, paygate.ModeTest, at(time.Minute)), at(time.Hour))
			T := ev.CreatedAt
			first := claim(t, s, T, 0, 10) // leased for 30 seconds, never finished
			if len(first) != 1 {
				t.Fatalf("claimed %d, want 1", len(first))
			}
			if got := claim(t, s, T.Add(29*time.Second), 0, 10); len(got) != 0 {
				t.Fatal("claimed within another claim's lease")
			}
			second := claim(t, s, T.Add(30*time.Second), time.Hour, 10)
			if len(second) != 1 || second[0].Delivery.Attempts != 2 || second[0].Lease == first[0].Lease {
				t.Fatalf("after the lease: claimed %+v, want attempt 2 under a new lease", second)
			}
			wantIs(t, finishDelivery(ctx(t), s, paygate.DeliveryFinish{
				DeliveryID: first[0].Delivery.ID, Lease: first[0].Lease, At: T.Add(31 * time.Second), Status: paygate.DeliverySucceeded,
			}), paygate.ErrStateConflict)
			must(t, finishDelivery(ctx(t), s, paygate.DeliveryFinish{
				DeliveryID: second[0].Delivery.ID, Lease: second[0].Lease, At: T.Add(31 * time.Second), Status: paygate.DeliveryFailed,
				Error: "gave up",
			}))
			got := wantDeliveries(t, s, paygate.DeliveryQuery{MerchantID: f.merchant.ID, Status: paygate.DeliveryFailed}, 1)
			if got[0].LastError != "gave up" || got[0].LastAttemptAt != nil {
				t.Errorf("failed delivery without an attempt: %+v", got[0])
			}
			wantDeliveries(t, s, paygate.DeliveryQuery{MerchantID: f.merchant.ID, Status: paygate.DeliveryPending}, 0)
			if got := claim(t, s, T.Add(48*time.Hour), 0, 10); len(got) != 0 {
				t.Fatal("claimed a failed delivery")
			}
		}},
		{"ConcurrentClaimsOneClaimer", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			f.endpoint(t, paygate.ModeTest)
			f.capture(t, f.newPayment(t, paygate.ModeTest, at(time.Minute)), at(time.Hour))
			got := claimConcurrently(t, s, at(2*time.Hour), 16, 1)
			if len(got) != 1 {
				t.Fatalf("%d claimers got the one due delivery, want exactly 1", len(got))
			}
		}},
		{"ConcurrentClaimsDisjoint", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			f.endpoint(t, paygate.ModeTest)
			const n = 30
			for i := range n {
				f.capture(t, f.newPayment(t, paygate.ModeTest, at(time.Minute)), at(time.Hour+time.Duration(i)*time.Millisecond))
			}
			got := claimConcurrently(t, s, at(2*time.Hour), 8, 4)
			seen := map[string]bool{}
			for _, id := range got {
				if seen[id] {
					t.Fatalf("delivery %s claimed twice", id)
				}
				seen[id] = true
			}
			if len(seen) != n {
				t.Fatalf("claimed %d distinct deliveries, want %d", len(seen), n)
			}
		}},
		{"GoneDisablesTheEndpoint", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			ep := f.endpoint(t, paygate.ModeTest)
			ev1 := f.capture(t, f.newPayment(t, paygate.ModeTest, at(time.Minute)), at(time.Hour))
			inFlight := claim(t, s, at(time.Hour), 0, 1)
			ev2 := f.capture(t, f.newPayment(t, paygate.ModeTest, at(time.Minute)), at(time.Hour+time.Second))
			gone := claim(t, s, at(time.Hour+time.Second), 0, 1)
			ev3 := f.capture(t, f.newPayment(t, paygate.ModeTest, at(time.Minute)), at(time.Hour+2*time.Second))
			if len(inFlight) != 1 || len(gone) != 1 || inFlight[0].Delivery.EventID != ev1.ID || gone[0].Delivery.EventID != ev2.ID {
				t.Fatalf("claims: %+v then %+v", inFlight, gone)
			}
			T := at(time.Hour + 3*time.Second)
			must(t, finishDelivery(ctx(t), s, paygate.DeliveryFinish{
				DeliveryID: gone[0].Delivery.ID, Lease: gone[0].Lease, At: T, Status: paygate.DeliveryFailed,
				Attempt: &paygate.DeliveryAttempt{
					DeliveryID: gone[0].Delivery.ID, Number: 1, URL: ep.URL, StartedAt: T, StatusCode: 410, Error: "HTTP 410",
				},
				DisableEndpoint: true,
			}))
			state, err := s.WebhookEndpointState(ctx(t), f.merchant.ID, paygate.ModeTest)
			must(t, err)
			if state.DisabledAt == nil || !state.DisabledAt.Equal(T) {
				t.Fatalf("endpoint disabled at %v, want %s", state.DisabledAt, T)
			}
			// The idle pending delivery failed; the one in flight finishes normally.
			byEvent := map[string]paygate.Delivery{}
			for _, d := range wantDeliveries(t, s, paygate.DeliveryQuery{MerchantID: f.merchant.ID}, 3) {
				byEvent[d.EventID] = d
			}
			if d := byEvent[ev3.ID]; d.Status != paygate.DeliveryFailed || d.LastError == "" || d.Attempts != 0 {
				t.Errorf("idle delivery after 410: %+v", d)
			}
			if d := byEvent[ev1.ID]; d.Status != paygate.DeliveryPending {
				t.Errorf("in-flight delivery after 410: %+v", d)
			}
			// No new delivery, no resend, no ping while disabled.
			ev4 := f.capture(t, f.newPayment(t, paygate.ModeTest, at(time.Minute)), at(2*time.Hour))
			wantDeliveries(t, s, paygate.DeliveryQuery{MerchantID: f.merchant.ID, EventID: ev4.ID}, 0)
			_, err = s.ResendEvent(ctx(t), ev4.ID, newID(), at(2*time.Hour))
			wantIs(t, err, paygate.ErrStateConflict)
			_, err = testenv.CreatePing(ctx(t), s, pingValue(f, paygate.ModeTest, at(2*time.Hour)), newID())
			wantIs(t, err, paygate.ErrStateConflict)
			// The in-flight claim sees the endpoint disabled when it comes back.
			must(t, finishDelivery(ctx(t), s, paygate.DeliveryFinish{
				DeliveryID: inFlight[0].Delivery.ID, Lease: inFlight[0].Lease, At: T, Status: paygate.DeliveryPending,
				NextAttemptAt: T.Add(time.Second),
			}))
			back := claim(t, s, T.Add(time.Second), 0, 10)
			if len(back) != 1 || back[0].Endpoint == nil || back[0].Endpoint.DisabledAt == nil {
				t.Fatalf("claimed after the 410: %+v, want the in-flight delivery with a disabled endpoint", back)
			}

			// Setting the endpoint again enables it.
			state, err = testenv.ConfigureEndpoint(ctx(t), s, ep.WebhookEndpoint, false, time.Time{})
			must(t, err)
			if state.DisabledAt != nil {
				t.Fatalf("endpoint still disabled after being set again")
			}
			ev5 := f.capture(t, f.newPayment(t, paygate.ModeTest, at(time.Minute)), at(3*time.Hour))
			wantDeliveries(t, s, paygate.DeliveryQuery{MerchantID: f.merchant.ID, EventID: ev5.ID}, 1)
		}},
		{"ListingFiltersAndTenancy", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			other := newMerchant(t, s, base)
			f.endpoint(t, paygate.ModeTest)
			f.endpoint(t, paygate.ModeLive)
			other.endpoint(t, paygate.ModeTest)
			var events []paygate.Event
			for i := range 3 {
				events = append(events, f.capture(t, f.newPayment(t, paygate.ModeTest, at(time.Minute)), at(time.Hour+time.Duration(i)*time.Second)))
			}
			f.capture(t, f.newPayment(t, paygate.ModeLive, at(time.Minute)), at(2*time.Hour))
			foreign := other.capture(t, other.newPayment(t, paygate.ModeTest, at(time.Minute)), at(time.Hour))

			all := wantDeliveries(t, s, paygate.DeliveryQuery{MerchantID: f.merchant.ID}, 4)
			if all[0].Mode != paygate.ModeLive {
				t.Errorf("newest first: got %s first", all[0].Mode)
			}
			test := wantDeliveries(t, s, paygate.DeliveryQuery{MerchantID: f.merchant.ID, Mode: paygate.ModeTest}, 3)
			for i, d := range test {
				if d.EventID != events[2-i].ID {
					t.Errorf("test delivery %d is of event %s, want %s", i, d.EventID, events[2-i].ID)
				}
			}
			limited := wantDeliveries(t, s, paygate.DeliveryQuery{MerchantID: f.merchant.ID, Mode: paygate.ModeTest, Limit: 2}, 2)
			if limited[0].ID != test[0].ID || limited[1].ID != test[1].ID {
				t.Errorf("limit does not keep the newest")
			}
			wantDeliveries(t, s, paygate.DeliveryQuery{MerchantID: f.merchant.ID, EventID: events[1].ID}, 1)
			wantDeliveries(t, s, paygate.DeliveryQuery{MerchantID: f.merchant.ID, EventID: foreign.ID}, 0)
			wantDeliveries(t, s, paygate.DeliveryQuery{MerchantID: f.merchant.ID, Status: paygate.DeliveryFailed}, 0)
			// Every combination of the filters.
			both := wantDeliveries(t, s, paygate.DeliveryQuery{MerchantID: f.merchant.ID, Limit: 2}, 2)
			if both[0].ID != all[0].ID || both[1].ID != all[1].ID {
				t.Errorf("a limit over both modes does not keep the newest: %s, %s", both[0].ID, both[1].ID)
			}
			wantDeliveries(t, s, paygate.DeliveryQuery{MerchantID: f.merchant.ID, Status: paygate.DeliveryPending}, 4)
			wantDeliveries(t, s, paygate.DeliveryQuery{MerchantID: f.merchant.ID, Mode: paygate.ModeLive, Status: paygate.DeliveryPending}, 1)
			wantDeliveries(t, s, paygate.DeliveryQuery{MerchantID: f.merchant.ID, Mode: paygate.ModeTest, Status: paygate.DeliveryFailed}, 0)
			wantDeliveries(t, s, paygate.DeliveryQuery{MerchantID: f.merchant.ID, Mode: paygate.ModeTest, EventID: events[1].ID}, 1)
			wantDeliveries(t, s, paygate.DeliveryQuery{MerchantID: f.merchant.ID, Mode: paygate.ModeLive, EventID: events[1].ID}, 0)
			wantDeliveries(t, s, paygate.DeliveryQuery{
				MerchantID: f.merchant.ID, Mode: paygate.ModeTest, Status: paygate.DeliveryPending, EventID: events[2].ID, Limit: 1,
			}, 1)
			wantDeliveries(t, s, paygate.DeliveryQuery{MerchantID: f.merchant.ID, Status: paygate.DeliveryFailed, EventID: events[2].ID}, 0)

			theirs := wantDeliveries(t, s, paygate.DeliveryQuery{MerchantID: other.merchant.ID}, 1)[0]
			_, err := paygate.DeliveryByID(ctx(t), s, f.merchant.ID, paygate.ModeTest, theirs.ID)
			wantNotFound(t, err)
			_, err = paygate.DeliveryByID(ctx(t), s, other.merchant.ID, paygate.ModeLive, theirs.ID)
			wantNotFound(t, err)
			_, err = s.DeliveryAttempts(ctx(t), f.merchant.ID, paygate.ModeTest, theirs.ID)
			wantNotFound(t, err)
			attempts, err := s.DeliveryAttempts(ctx(t), other.merchant.ID, paygate.ModeTest, theirs.ID)
			must(t, err)
			if len(attempts) != 0 {
				t.Errorf("attempts of a new delivery: %+v", attempts)
			}
		}},
		{"ResendEvent", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			f.endpoint(t, paygate.ModeTest, string(paygate.EventPaymentFailed))
			// Not subscribed: no delivery, but an operator may still resend it.
			ev := f.capture(t, f.newPayment(t, paygate.ModeTest, at(time.Minute)), at(time.Hour))
			wantDeliveries(t, s, paygate.DeliveryQuery{MerchantID: f.merchant.ID}, 0)
			id := newID()
			d, err := s.ResendEvent(ctx(t), ev.ID, id, at(2*time.Hour))
			must(t, err)
			equal(t, "resent delivery", paygate.Delivery{
				ID: id, EventID: ev.ID, MerchantID: ev.MerchantID, Mode: ev.Mode, EventType: ev.Type,
				Status: paygate.DeliveryPending, NextAttemptAt: at(2 * time.Hour),
				CreatedAt: at(2 * time.Hour), UpdatedAt: at(2 * time.Hour),
			}, d)
			d2, err := s.ResendEvent(ctx(t), ev.ID, newID(), at(3*time.Hour))
			must(t, err)
			if d2.ID == d.ID || d2.EventID != ev.ID {
				t.Errorf("second resend: %+v", d2)
			}
			// One event goes out once at a time: the older resend first.
			got := claim(t, s, at(3*time.Hour), 0, 10)
			if len(got) != 1 || got[0].Delivery.ID != d.ID || string(got[0].Payload) != string(ev.Payload) {
				t.Fatalf("claimed %+v, want the first resend of the event", got)
			}
			_, err = s.ResendEvent(ctx(t), newID(), newID(), at(3*time.Hour))
			wantNotFound(t, err)
			// An event of a mode without endpoint.
			live := f.capture(t, f.newPayment(t, paygate.ModeLive, at(time.Minute)), at(time.Hour))
			_, err = s.ResendEvent(ctx(t), live.ID, newID(), at(3*time.Hour))
			wantNotFound(t, err)
			_, err = s.ResendEvent(ctx(t), ev.ID, d.ID, at(4*time.Hour))
			wantIs(t, err, paygate.ErrConflict)
		}},
		{"SucceededResendEndsTheOriginal", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			f.endpoint(t, paygate.ModeTest)
			ev := f.capture(t, f.newPayment(t, paygate.ModeTest, at(time.Minute)), at(time.Hour))
			original := wantDeliveries(t, s, paygate.DeliveryQuery{MerchantID: f.merchant.ID}, 1)[0]
			// The original fails once and waits for its retry at 3h.
			got := claim(t, s, at(time.Hour), 0, 10)
			if len(got) != 1 || got[0].Delivery.ID != original.ID {
				t.Fatalf("claimed %+v, want the original", got)
			}
			must(t, finishDelivery(ctx(t), s, paygate.DeliveryFinish{
				DeliveryID: original.ID, Lease: got[0].Lease, At: at(time.Hour), Status: paygate.DeliveryPending,
				NextAttemptAt: at(3 * time.Hour), Error: "HTTP 500",
				Attempt: &paygate.DeliveryAttempt{DeliveryID: original.ID, Number: 1, URL: "http://127.0.0.1:9/", StartedAt: at(time.Hour), StatusCode: 500, Error: "HTTP 500"},
			}))
			// A resend succeeds: the original ends with it.
			resent, err := s.ResendEvent(ctx(t), ev.ID, newID(), at(2*time.Hour))
			must(t, err)
			got = claim(t, s, at(2*time.Hour), 0, 10)
			if len(got) != 1 || got[0].Delivery.ID != resent.ID {
				t.Fatalf("claimed %+v, want the resend", got)
			}
			must(t, finishDelivery(ctx(t), s, paygate.DeliveryFinish{
				DeliveryID: resent.ID, Lease: got[0].Lease, At: at(2 * time.Hour), Status: paygate.DeliverySucceeded,
				Attempt: &paygate.DeliveryAttempt{DeliveryID: resent.ID, Number: 1, URL: "http://127.0.0.1:9/", StartedAt: at(2 * time.Hour), StatusCode: 200},
			}))
			after, err := paygate.DeliveryByID(ctx(t), s, f.merchant.ID, paygate.ModeTest, original.ID)
			must(t, err)
			if after.Status != paygate.DeliverySucceeded || after.Attempts != 1 {
				t.Errorf("the original after a successful resend: %+v, want succeeded after its one attempt", after)
			}
			// Its retry never comes.
			if got := claim(t, s, at(4*time.Hour), 0, 10); len(got) != 0 {
				t.Fatalf("claimed %+v after the resend succeeded", got)
			}
			// Other events' deliveries are untouched.
			other := f.capture(t, f.newPayment(t, paygate.ModeTest, at(time.Minute)), at(5*time.Hour))
			if got := claim(t, s, at(5*time.Hour), 0, 10); len(got) != 1 || got[0].Delivery.EventID != other.ID {
				t.Fatalf("claimed %+v, want the other event's delivery", got)
			}
		}},
		{"ResendWaitsForTheDeliveryInFlight", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			f.endpoint(t, paygate.ModeTest)
			ev := f.capture(t, f.newPayment(t, paygate.ModeTest, at(time.Minute)), at(time.Hour))
			original := wantDeliveries(t, s, paygate.DeliveryQuery{MerchantID: f.merchant.ID}, 1)[0]
			got := claim(t, s, at(time.Hour), 0, 10)
			if len(got) != 1 {
				t.Fatalf("claimed %d, want the original", len(got))
			}
			lease := got[0].Lease
			// Resent while the original is in flight: not claimed until the
			// original's attempt ends.
			resent, err := s.ResendEvent(ctx(t), ev.ID, newID(), at(time.Hour+time.Second))
			must(t, err)
			if got := claim(t, s, at(time.Hour+2*time.Second), 0, 10); len(got) != 0 {
				t.Fatalf("claimed %+v while the original was in flight", got)
			}
			// The original succeeds: the resend ends unsent.
			must(t, finishDelivery(ctx(t), s, paygate.DeliveryFinish{
				DeliveryID: original.ID, Lease: lease, At: at(time.Hour + 3*time.Second), Status: paygate.DeliverySucceeded,
			}))
			if got := claim(t, s, at(2*time.Hour), 0, 10); len(got) != 0 {
				t.Fatalf("claimed %+v after the original succeeded", got)
			}
			r, err := paygate.DeliveryByID(ctx(t), s, f.merchant.ID, paygate.ModeTest, resent.ID)
			must(t, err)
			if r.Status != paygate.DeliverySucceeded || r.Attempts != 0 {
				t.Errorf("the resend after the original succeeded: %+v", r)
			}
		}},
		{"ResendConcurrentClaimsSendOnce", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			f.endpoint(t, paygate.ModeTest)
			ev := f.capture(t, f.newPayment(t, paygate.ModeTest, at(time.Minute)), at(time.Hour))
			for range 5 {
				_, err := s.ResendEvent(ctx(t), ev.ID, newID(), at(time.Hour))
				must(t, err)
			}
			// Claimers racing for six deliveries of one event, each
			// finishing its claim as succeeded at once: once one has
			// succeeded, no claim may take another.
			var (
				mu   sync.Mutex
				sent int
				wg   sync.WaitGroup
			)
			for range 4 {
				wg.Go(func() {
					for range 10 {
						got, err := s.ClaimDeliveries(ctx(t), paygate.DeliveryClaim{
							Now: at(time.Hour), FirstDue: at(time.Hour), Lease: newID(), LeaseUntil: at(time.Hour + time.Minute), Limit: 10,
						})
						if err != nil {
							t.Error(err)
							return
						}
						for _, c := range got {
							mu.Lock()
							sent++
							mu.Unlock()
							if err := finishDelivery(ctx(t), s, paygate.DeliveryFinish{
								DeliveryID: c.Delivery.ID, Lease: c.Lease, At: at(time.Hour), Status: paygate.DeliverySucceeded,
							}); err != nil && !errors.Is(err, paygate.ErrStateConflict) {
								t.Error(err)
							}
						}
					}
				})
			}
			wg.Wait()
			if sent != 1 {
				t.Errorf("the event was claimed %d times, want once", sent)
			}
			for _, d := range wantDeliveries(t, s, paygate.DeliveryQuery{MerchantID: f.merchant.ID, EventID: ev.ID}, 6) {
				if d.Status != paygate.DeliverySucceeded {
					t.Errorf("delivery %s is %s, want succeeded", d.ID, d.Status)
				}
			}
		}},
		{"WebhookPing", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			ping := pingValue(f, paygate.ModeTest, at(time.Hour))
			_, err := testenv.CreatePing(ctx(t), s, ping, newID())
			wantNotFound(t, err)
			evs, err := s.Events(ctx(t), paygate.EventQuery{MerchantID: f.merchant.ID, Mode: paygate.ModeTest})
			must(t, err)
			if len(evs) != 0 {
				t.Fatalf("a refused ping left %d events", len(evs))
			}
			// Pings reach endpoints whatever their subscriptions, once.
			for _, events := range [][]string{nil, {string(paygate.EventPaymentFailed)}} {
				f.endpoint(t, paygate.ModeTest, events...)
				ping := pingValue(f, paygate.ModeTest, at(time.Hour))
				id := newID()
				d, err := testenv.CreatePing(ctx(t), s, ping, id)
				must(t, err)
				equal(t, "ping delivery", paygate.Delivery{
					ID: id, EventID: ping.ID, MerchantID: f.merchant.ID, Mode: paygate.ModeTest, EventType: paygate.EventPing,
					Status: paygate.DeliveryPending, NextAttemptAt: ping.CreatedAt, CreatedAt: ping.CreatedAt, UpdatedAt: ping.CreatedAt,
				}, d)
				wantDeliveries(t, s, paygate.DeliveryQuery{MerchantID: f.merchant.ID, EventID: ping.ID}, 1)
				got := claim(t, s, at(time.Hour), 0, 10)
				if len(got) != 1 || string(got[0].Payload) != string(ping.Payload) {
					t.Fatalf("claimed %+v, want the ping", got)
				}
				must(t, finishDelivery(ctx(t), s, paygate.DeliveryFinish{
					DeliveryID: id, Lease: got[0].Lease, At: at(time.Hour), Status: paygate.DeliverySucceeded,
				}))
			}
		}},
	}
}

// endpoint configures the fixture's endpoint of the mode, subscribed to
// events (all when none), and returns it.
func (f fixture) endpoint(t *testing.T, mode paygate.Mode, events ...string) paygate.WebhookEndpointState {
	t.Helper()
	e, err := testenv.ConfigureEndpoint(ctx(t), f.s, paygate.WebhookEndpoint{
		MerchantID: f.merchant.ID, Mode: mode, URL: "https://hooks.example/" + newID()[:8],
		SealedSecret: sealed("whsec_c2VjcmV0IG9mIHRoZSB0ZXN0"), Events: events, CreatedAt: base, UpdatedAt: base,
	}, false, time.Time{})
	must(t, err)
	return e
}

// capture moves a created payment to captured at the time with its event,
// and returns the event.
func (f fixture) capture(t *testing.T, p paygate.Payment, when time.Time) paygate.Event {
	t.Helper()
	ev := eventValue(p, paygate.EventPaymentCaptured, "", when)
	must(t, f.s.Commit(ctx(t), transitionUnit(paygate.PaymentTransition{
		ID: p.ID, MerchantID: p.MerchantID, Mode: p.Mode,
		From: []paygate.PaymentStatus{paygate.PaymentCreated}, To: paygate.PaymentCaptured,
		AmountCaptured: ptr(p.Amount.Amount), UpdatedAt: when,
	}, []paygate.Event{ev}, nil)))
	return ev
}

// fail moves a created payment to failed at the time with its event, and
// returns the event.
func (f fixture) fail(t *testing.T, p paygate.Payment, when time.Time) paygate.Event {
	t.Helper()
	ev := eventValue(p, paygate.EventPaymentFailed, "", when)
	must(t, f.s.Commit(ctx(t), transitionUnit(paygate.PaymentTransition{
		ID: p.ID, MerchantID: p.MerchantID, Mode: p.Mode,
		From: []paygate.PaymentStatus{paygate.PaymentCreated}, To: paygate.PaymentFailed,
		DeclineCode: "generic_decline", UpdatedAt: when,
	}, []paygate.Event{ev}, nil)))
	return ev
}

// pingValue returns a ping event of the fixture's merchant.
func pingValue(f fixture, mode paygate.Mode, created time.Time) paygate.Event {
	return paygate.Event{
		ID: newID(), MerchantID: f.merchant.ID, Mode: mode, Type: paygate.EventPing,
		Payload: []byte(`{"event":"ping"}`), CreatedAt: created,
	}
}

// claim claims up to limit deliveries due at now with the first wait,
// leased for 30 seconds.
func claim(t *testing.T, s paygate.Store, now time.Time, firstWait time.Duration, limit int) []paygate.ClaimedDelivery {
	t.Helper()
	got, err := s.ClaimDeliveries(ctx(t), paygate.DeliveryClaim{
		Now: now, FirstDue: now.Add(-firstWait), Lease: newID(), LeaseUntil: now.Add(30 * time.Second), Limit: limit,
	})
	must(t, err)
	return got
}

// claimConcurrently runs claimers that each claim up to limit deliveries
// at a time until nothing is left, and returns every claimed delivery id.
func claimConcurrently(t *testing.T, s paygate.Store, now time.Time, claimers, limit int) []string {
	t.Helper()
	var (
		mu   sync.Mutex
		ids  []string
		errs []error
		wg   sync.WaitGroup
	)
	start := make(chan struct{})
	for range claimers {
		wg.Go(func() {
			<-start
			for {
				got, err := s.ClaimDeliveries(ctx(t), paygate.DeliveryClaim{
					Now: now, FirstDue: now, Lease: newID(), LeaseUntil: now.Add(time.Minute), Limit: limit,
				})
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				}
				for _, c := range got {
					ids = append(ids, c.Delivery.ID)
				}
				mu.Unlock()
				if err != nil || len(got) == 0 {
					return
				}
			}
		})
	}
	close(start)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("concurrent claims: %v", err)
	}
	return ids
}

// wantDeliveries lists deliveries and fails unless there are n.
func wantDeliveries(t *testing.T, s paygate.Store, q paygate.DeliveryQuery, n int) []paygate.Delivery {
	t.Helper()
	got, err := s.Deliveries(ctx(t), q)
	must(t, err)
	if len(got) != n {
		t.Fatalf("deliveries %+v: got %d, want %d: %+v", q, len(got), n, got)
	}
	return got
}

// got0Lease returns the lease of the first claim, "" when none.
func got0Lease(got []paygate.ClaimedDelivery) string {
	if len(got) == 0 {
		return ""
	}
	return got[0].Lease
}

// isUUID reports whether s is a canonical lower-case UUID.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, r := range s {
		switch i {
		case 8, 13, 18, 23:
			if r != '-' {
				return false
			}
		default:
			if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') {
				return false
			}
		}
	}
	return true
}
