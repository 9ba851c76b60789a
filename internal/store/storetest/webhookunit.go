package storetest

import (
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
	}
}
