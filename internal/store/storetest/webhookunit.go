package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// webhookUnitCases: the webhook operations of a unit are atomic with the
// others: one that refuses the unit leaves every operation before it
// unwritten, and one that applies is written with them.
func webhookUnitCases() []testCase {
	return []testCase{
		{"RefusedFinishWritesNothing", func(t *testing.T, s paygate.Store) {
			w := newUnitWorld(t, s)
			// The delivery is of the other mode: the unit's payment is
			// alone with its events.
			w.f.endpoint(t, paygate.ModeLive)
			ev := w.f.capture(t, w.f.newPayment(t, paygate.ModeLive, at(time.Minute)), at(time.Minute))
			c := claim(t, s, at(time.Hour), 0, 10)
			if len(c) != 1 || c[0].Delivery.EventID != ev.ID {
				t.Fatalf("claimed %+v, want the delivery of event %s", c, ev.ID)
			}
			for _, f := range []struct {
				finish paygate.DeliveryFinish
				want   error
			}{
				{paygate.DeliveryFinish{DeliveryID: c[0].Delivery.ID, Lease: "not-the-lease", At: at(time.Hour), Status: paygate.DeliverySucceeded}, paygate.ErrStateConflict},
				{paygate.DeliveryFinish{DeliveryID: newID(), Lease: c[0].Lease, At: at(time.Hour), Status: paygate.DeliverySucceeded}, nil},
			} {
				err := s.Commit(ctx(t), paygate.Unit{Ops: []paygate.Op{
					w.move(paygate.PaymentFailed, paygate.PaymentCreated),
					eventValue(w.p, paygate.EventPaymentFailed, "", at(2*time.Minute)),
					w.answer(`{"failed":1}`),
					f.finish,
				}})
				if f.want != nil {
					wantIs(t, err, f.want)
				} else {
					wantNotFound(t, err)
				}
				w.wantNothingWritten(t)
			}
			d, err := paygate.DeliveryByID(ctx(t), s, w.f.merchant.ID, paygate.ModeLive, c[0].Delivery.ID)
			must(t, err)
			equal(t, "delivery after refused finishes", c[0].Delivery, d)

			// With its lease, the finish is written with the rest.
			fail := eventValue(w.p, paygate.EventPaymentFailed, "", at(2*time.Minute))
			must(t, s.Commit(ctx(t), paygate.Unit{Ops: []paygate.Op{
				w.move(paygate.PaymentFailed, paygate.PaymentCreated), fail,
				paygate.DeliveryFinish{DeliveryID: c[0].Delivery.ID, Lease: c[0].Lease, At: at(time.Hour), Status: paygate.DeliverySucceeded},
			}}))
			w.wantEvents(t, fail)
			d, err = paygate.DeliveryByID(ctx(t), s, w.f.merchant.ID, paygate.ModeLive, c[0].Delivery.ID)
			must(t, err)
			if d.Status != paygate.DeliverySucceeded {
				t.Errorf("delivery %+v, want succeeded", d)
			}
		}},
		{"RefusedSecretsReplacementWritesNothing", func(t *testing.T, s paygate.Store) {
			w := newUnitWorld(t, s)
			w.f.endpoint(t, paygate.ModeTest)
			all, err := s.WebhookSecrets(ctx(t), "", "", 0)
			must(t, err)
			if len(all) != 1 {
				t.Fatalf("%d endpoints, want 1", len(all))
			}
			stale := all[0]
			stale.SealedSecret = sealed("whsec_c3RhbGU=")
			to := all[0]
			to.SealedSecret = sealed("whsec_bmV3")
			err = s.Commit(ctx(t), paygate.Unit{Ops: []paygate.Op{
				w.move(paygate.PaymentFailed, paygate.PaymentCreated),
				eventValue(w.p, paygate.EventPaymentFailed, "", at(2*time.Minute)),
				w.answer(`{"failed":1}`),
				paygate.WebhookSecretsReplacement{From: stale, To: to},
			}})
			wantIs(t, err, paygate.ErrStateConflict)
			w.wantNothingWritten(t)
			after, err := s.WebhookSecrets(ctx(t), "", "", 0)
			must(t, err)
			equal(t, "secrets after a refused unit", all, after)
		}},
		{"RefusedEndpointConfigWritesNothing", func(t *testing.T, s paygate.Store) {
			w := newUnitWorld(t, s)
			e := paygate.WebhookEndpoint{
				MerchantID: w.p.MerchantID, Mode: paygate.ModeTest, URL: "https://a.example/hooks",
				SealedSecret: sealed("whsec_Zmlyc3Q="), CreatedAt: base, UpdatedAt: base,
			}
			// A missing merchant refuses the unit.
			missing := e
			missing.MerchantID = newID()
			err := s.Commit(ctx(t), paygate.Unit{Ops: []paygate.Op{
				paygate.WebhookEndpointConfig{Endpoint: e},
				w.move(paygate.PaymentFailed, paygate.PaymentCreated),
				eventValue(w.p, paygate.EventPaymentFailed, "", at(2*time.Minute)),
				w.answer(`{"failed":1}`),
				paygate.WebhookEndpointConfig{Endpoint: missing},
			}})
			wantNotFound(t, err)
			w.wantNothingWritten(t)
			_, err = s.WebhookEndpointState(ctx(t), w.p.MerchantID, paygate.ModeTest)
			wantNotFound(t, err)
			// An endpoint configured before a refusal is not written.
			err = s.Commit(ctx(t), paygate.Unit{Ops: []paygate.Op{
				paygate.WebhookEndpointConfig{Endpoint: e},
				w.move(paygate.PaymentFailed, paygate.PaymentAuthorized),
			}})
			wantIs(t, err, paygate.ErrStateConflict)
			_, err = s.WebhookEndpointState(ctx(t), w.p.MerchantID, paygate.ModeTest)
			wantNotFound(t, err)
			// Configured with the payment's event, the endpoint gets its
			// delivery: the operations see the writes before them.
			fail := eventValue(w.p, paygate.EventPaymentFailed, "", at(2*time.Minute))
			must(t, s.Commit(ctx(t), paygate.Unit{Ops: []paygate.Op{
				paygate.WebhookEndpointConfig{Endpoint: e},
				w.move(paygate.PaymentFailed, paygate.PaymentCreated), fail,
			}}))
			ds, err := s.Deliveries(ctx(t), paygate.DeliveryQuery{MerchantID: w.p.MerchantID, Mode: paygate.ModeTest})
			must(t, err)
			if len(ds) != 1 || ds[0].EventID != fail.ID {
				t.Errorf("deliveries %+v, want one of event %s", ds, fail.ID)
			}
		}},
		{"RefusedPingAndResendWriteNothing", func(t *testing.T, s paygate.Store) {
			w := newUnitWorld(t, s)
			f := w.f
			refused := func(t *testing.T, op paygate.Op) error {
				t.Helper()
				err := s.Commit(ctx(t), paygate.Unit{Ops: []paygate.Op{
					w.move(paygate.PaymentFailed, paygate.PaymentCreated),
					eventValue(w.p, paygate.EventPaymentFailed, "", at(2*time.Minute)),
					w.answer(`{"failed":1}`),
					op,
				}})
				w.wantNothingWritten(t)
				return err
			}
			// No endpoint in test mode.
			ping := paygate.WebhookPing{Event: pingValue(f, paygate.ModeTest, at(time.Minute)), DeliveryID: newID()}
			err := refused(t, ping)
			wantNotFound(t, err)
			live := f.capture(t, f.newPayment(t, paygate.ModeLive, at(time.Minute)), at(time.Minute))
			resend := paygate.EventResend{MerchantID: f.merchant.ID, Mode: paygate.ModeLive, EventID: live.ID, DeliveryID: newID(), At: at(time.Hour)}
			wrongMode := resend
			wrongMode.Mode = paygate.ModeTest
			wantNotFound(t, refused(t, wrongMode))
			wantNotFound(t, refused(t, resend)) // no endpoint in live mode
			unknown := resend
			unknown.EventID = newID()
			wantNotFound(t, refused(t, unknown))

			// A disabled endpoint (its receiver answered 410).
			f.endpoint(t, paygate.ModeLive)
			ev := f.capture(t, f.newPayment(t, paygate.ModeLive, at(time.Minute)), at(2*time.Minute))
			c := claim(t, s, at(time.Hour), 0, 10)
			if len(c) != 1 || c[0].Delivery.EventID != ev.ID {
				t.Fatalf("claimed %+v, want the delivery of event %s", c, ev.ID)
			}
			must(t, finishDelivery(ctx(t), s, paygate.DeliveryFinish{
				DeliveryID: c[0].Delivery.ID, Lease: c[0].Lease, At: at(time.Hour), Status: paygate.DeliveryFailed,
				Error: "HTTP 410", DisableEndpoint: true,
			}))
			state, err := s.WebhookEndpointState(ctx(t), f.merchant.ID, paygate.ModeLive)
			must(t, err)
			if state.DisabledAt == nil {
				t.Fatal("the endpoint is not disabled")
			}
			want := "the webhook endpoint is disabled since " + state.DisabledAt.Format(time.RFC3339) + "; set it again to enable it"
			livePing := paygate.WebhookPing{Event: pingValue(f, paygate.ModeLive, at(time.Hour)), DeliveryID: newID()}
			for _, op := range []paygate.Op{livePing, resend} {
				err := refused(t, op)
				wantIs(t, err, paygate.ErrStateConflict)
				if err == nil || !strings.HasSuffix(err.Error(), ": "+want) {
					t.Errorf("%T refused with %v, want %q", op, err, want)
				}
			}
			before, err := s.Deliveries(ctx(t), paygate.DeliveryQuery{MerchantID: f.merchant.ID, Mode: paygate.ModeLive})
			must(t, err)
			if len(before) != 1 {
				t.Errorf("%d live deliveries after refused units, want 1", len(before))
			}
			events, err := s.Events(ctx(t), paygate.EventQuery{MerchantID: f.merchant.ID, Mode: paygate.ModeLive})
			must(t, err)
			if len(events) != 2 {
				t.Errorf("%d live events after refused units, want 2 (no ping)", len(events))
			}
		}},
	}
}
