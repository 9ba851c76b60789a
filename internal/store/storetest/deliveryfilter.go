package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// deliveryFilterCases are the dashboard's filters of issue 22: deliveries
// by event type, events by id and creation time (the resend of events
// created before an endpoint existed), and the audit log by actor, action
// and date. Every filter keeps the merchant and the mode.
func deliveryFilterCases() []testCase {
	return []testCase{
		{"DeliveriesByEventType", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			other := newMerchant(t, s, base)
			var captured []string
			for _, mode := range []paygate.Mode{paygate.ModeTest, paygate.ModeLive} {
				for _, g := range []fixture{f, other} {
					g.endpoint(t, mode)
					ev := g.capture(t, g.newPayment(t, mode, base), base.Add(time.Minute))
					g.fail(t, g.newPayment(t, mode, base), base.Add(2*time.Minute))
					if g.merchant.ID == f.merchant.ID {
						captured = append(captured, ev.ID)
					}
				}
			}
			ids := func(ds []paygate.Delivery) []string {
				var out []string
				for _, d := range ds {
					if d.MerchantID != f.merchant.ID || d.EventType != paygate.EventPaymentCaptured {
						t.Errorf("listed delivery %+v", d)
					}
					out = append(out, d.EventID)
				}
				slices.Sort(out)
				return out
			}
			ds, err := s.Deliveries(ctx(t), paygate.DeliveryQuery{MerchantID: f.merchant.ID, Mode: paygate.ModeTest, EventType: paygate.EventPaymentCaptured})
			must(t, err)
			equal(t, "captured deliveries of test mode", []string{captured[0]}, ids(ds))
			// Both modes (the engines' merged branch).
			ds, err = s.Deliveries(ctx(t), paygate.DeliveryQuery{MerchantID: f.merchant.ID, EventType: paygate.EventPaymentCaptured})
			must(t, err)
			want := slices.Clone(captured)
			slices.Sort(want)
			equal(t, "captured deliveries of both modes", want, ids(ds))
			// With the status too.
			ds, err = s.Deliveries(ctx(t), paygate.DeliveryQuery{MerchantID: f.merchant.ID, Mode: paygate.ModeLive,
				EventType: paygate.EventPaymentCaptured, Status: paygate.DeliveryPending})
			must(t, err)
			equal(t, "pending captured deliveries of live mode", []string{captured[1]}, ids(ds))
			ds, err = s.Deliveries(ctx(t), paygate.DeliveryQuery{MerchantID: f.merchant.ID, Mode: paygate.ModeLive,
				EventType: paygate.EventPaymentCaptured, Status: paygate.DeliveryFailed})
			must(t, err)
			if len(ds) != 0 {
				t.Errorf("failed captured deliveries: %+v", ds)
			}
			ds, err = s.Deliveries(ctx(t), paygate.DeliveryQuery{MerchantID: f.merchant.ID, Mode: paygate.ModeTest, EventType: paygate.EventRefundFailed})
			must(t, err)
			if len(ds) != 0 {
				t.Errorf("refund.failed deliveries: %+v", ds)
			}
		}},
		{"DeliveriesOfEventsAllFailed", func(t *testing.T, s paygate.Store) {
			// Two events whose deliveries failed; one is resent (its new
			// delivery pending): only the other's failed delivery is
			// listed, in both the mode's and the merged branch.
			f := newMerchant(t, s, base)
			f.endpoint(t, paygate.ModeTest)
			ev1 := f.capture(t, f.newPayment(t, paygate.ModeTest, base), base.Add(time.Minute))
			ev2 := f.capture(t, f.newPayment(t, paygate.ModeTest, base), base.Add(2*time.Minute))
			T := base.Add(time.Hour)
			got := claim(t, s, T, 0, 10)
			if len(got) != 2 {
				t.Fatalf("claimed %d deliveries, want 2", len(got))
			}
			for _, c := range got {
				must(t, finishDelivery(ctx(t), s, paygate.DeliveryFinish{
					DeliveryID: c.Delivery.ID, Lease: c.Lease, At: T, Status: paygate.DeliveryFailed, Error: "gave up",
				}))
			}
			_, err := resendMerchantEvent(ctx(t), s, f.merchant.ID, paygate.ModeTest, ev1.ID, newID(), T.Add(time.Minute))
			must(t, err)
			for _, mode := range []paygate.Mode{paygate.ModeTest, ""} {
				ds := wantDeliveries(t, s, paygate.DeliveryQuery{MerchantID: f.merchant.ID, Mode: mode,
					Status: paygate.DeliveryFailed, EventAllFailed: true}, 1)
				if ds[0].EventID != ev2.ID || ds[0].Status != paygate.DeliveryFailed {
					t.Errorf("mode %q: listed %+v, want the failed delivery of %s", mode, ds[0], ev2.ID)
				}
			}
			// Without the filter both failed deliveries are listed.
			wantDeliveries(t, s, paygate.DeliveryQuery{MerchantID: f.merchant.ID, Mode: paygate.ModeTest, Status: paygate.DeliveryFailed}, 2)
		}},
		{"EventsByIDAndTime", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			other := newMerchant(t, s, base)
			var evs []paygate.Event
			for i := range 4 {
				p := f.newPayment(t, paygate.ModeTest, base)
				evs = append(evs, f.capture(t, p, base.Add(time.Duration(i)*time.Hour)))
			}
			f.capture(t, f.newPayment(t, paygate.ModeLive, base), base.Add(time.Hour))
			other.capture(t, other.newPayment(t, paygate.ModeTest, base), base.Add(time.Hour))
			list := func(q paygate.EventQuery) []string {
				t.Helper()
				q.MerchantID, q.Mode = f.merchant.ID, paygate.ModeTest
				got, err := s.Events(ctx(t), q)
				must(t, err)
				out := []string{}
				for _, e := range got {
					out = append(out, e.ID)
				}
				return out
			}
			equal(t, "event by id", []string{evs[2].ID}, list(paygate.EventQuery{ID: evs[2].ID}))
			equal(t, "another merchant's event by id", []string{}, list(paygate.EventQuery{ID: newID()}))
			// [1h, 3h): the second and third, oldest first.
			equal(t, "events in a range", []string{evs[1].ID, evs[2].ID},
				list(paygate.EventQuery{CreatedFrom: base.Add(time.Hour), CreatedBefore: base.Add(3 * time.Hour)}))
			equal(t, "events from a time", []string{evs[2].ID, evs[3].ID}, list(paygate.EventQuery{CreatedFrom: base.Add(2 * time.Hour)}))
			equal(t, "events before a time", []string{evs[0].ID}, list(paygate.EventQuery{CreatedBefore: base.Add(time.Hour)}))
			equal(t, "events from a time, limited", []string{evs[1].ID}, list(paygate.EventQuery{CreatedFrom: base.Add(time.Hour), Limit: 1}))
			// With a payment: its events in the range only.
			equal(t, "a payment's events in a range", []string{evs[3].ID},
				list(paygate.EventQuery{PaymentID: evs[3].PaymentID, CreatedFrom: base.Add(2 * time.Hour)}))
			equal(t, "a payment's events out of the range", []string{},
				list(paygate.EventQuery{PaymentID: evs[0].PaymentID, CreatedFrom: base.Add(2 * time.Hour)}))
		}},
		{"AuditFilters", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			other := newMerchant(t, s, base)
			var all []paygate.AuditEntry
			for i := range 6 {
				e := auditValue(f, paygate.ModeTest, base.Add(time.Duration(i)*time.Hour))
				if i%2 == 0 {
					e.UserID, e.Email = "", paygate.AuditActorCLI
				}
				if i >= 3 {
					e.Action = paygate.AuditKeyRevoked
				}
				all = append(all, e)
			}
			o := auditValue(other, paygate.ModeTest, base.Add(time.Hour))
			o.UserID, o.Email = "", paygate.AuditActorCLI
			u := paygate.Unit{Ops: []paygate.Op{o}}
			for _, e := range all {
				u.Add(e)
			}
			must(t, s.Commit(ctx(t), u))
			list := func(q paygate.AuditQuery) []string {
				t.Helper()
				q.MerchantID = f.merchant.ID
				got, err := s.AuditLog(ctx(t), q)
				must(t, err)
				out := []string{}
				for _, e := range got {
					out = append(out, e.ID)
				}
				return out
			}
			ids := func(is ...int) []string {
				out := []string{}
				for _, i := range is {
					out = append(out, all[i].ID)
				}
				return out
			}
			equal(t, "the command line's entries", ids(4, 2, 0), list(paygate.AuditQuery{Actor: paygate.AuditActorCLI}))
			equal(t, "a user's entries", ids(5, 3, 1), list(paygate.AuditQuery{Actor: "ada@example.com"}))
			equal(t, "an unknown actor's entries", ids(), list(paygate.AuditQuery{Actor: "eve@example.com"}))
			equal(t, "revocations", ids(5, 4, 3), list(paygate.AuditQuery{Action: paygate.AuditKeyRevoked}))
			equal(t, "revocations by the command line", ids(4), list(paygate.AuditQuery{Action: paygate.AuditKeyRevoked, Actor: paygate.AuditActorCLI}))
			equal(t, "entries in [1h, 4h)", ids(3, 2, 1),
				list(paygate.AuditQuery{CreatedFrom: base.Add(time.Hour), CreatedBefore: base.Add(4 * time.Hour)}))
			// Keyset paging keeps the filters.
			first := list(paygate.AuditQuery{Actor: paygate.AuditActorCLI, Limit: 2})
			equal(t, "first page", ids(4, 2), first)
			equal(t, "second page", ids(0), list(paygate.AuditQuery{Actor: paygate.AuditActorCLI, Limit: 2,
				Before: &paygate.PageCursor{CreatedAt: all[2].CreatedAt, ID: all[2].ID}}))
			equal(t, "a page in a range", ids(2), list(paygate.AuditQuery{CreatedFrom: base.Add(time.Hour), Limit: 1,
				Before: &paygate.PageCursor{CreatedAt: all[3].CreatedAt, ID: all[3].ID}}))
		}},
	}
}
