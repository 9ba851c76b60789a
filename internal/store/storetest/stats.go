package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// pendingCounter is what an engine reports for the operator's metrics
// (internal/metrics): the webhook deliveries still pending, of every
// merchant.
type pendingCounter interface {
	PendingDeliveries(ctx context.Context) (int64, error)
}

// statsCases covers the figures the metrics read at each scrape.
func statsCases() []testCase {
	return []testCase{
		{"PendingDeliveriesOfEveryMerchant", func(t *testing.T, s paygate.Store) {
			pc, ok := s.(pendingCounter)
			if !ok {
				t.Fatalf("%T does not count its pending deliveries (PendingDeliveries)", s)
			}
			want := func(n int64) {
				t.Helper()
				got, err := pc.PendingDeliveries(ctx(t))
				must(t, err)
				if got != n {
					t.Fatalf("PendingDeliveries = %d, want %d", got, n)
				}
			}
			want(0)
			f, other := newMerchant(t, s, base), newMerchant(t, s, base)
			f.endpoint(t, paygate.ModeTest)
			other.endpoint(t, paygate.ModeLive)
			f.capture(t, f.newPayment(t, paygate.ModeTest, at(time.Minute)), at(2*time.Minute))
			f.capture(t, f.newPayment(t, paygate.ModeTest, at(time.Minute)), at(2*time.Minute))
			other.capture(t, other.newPayment(t, paygate.ModeLive, at(time.Minute)), at(3*time.Minute))
			// Not due yet counts too: it is still to be sent.
			other.capture(t, other.newPayment(t, paygate.ModeLive, at(time.Hour)), at(2*time.Hour))
			want(4)

			// A claimed delivery is pending until its attempt is recorded;
			// a retry keeps it pending, success and failure end it.
			got := claim(t, s, at(time.Hour), 0, 3)
			if len(got) != 3 {
				t.Fatalf("claimed %d deliveries, want 3", len(got))
			}
			want(4)
			for i, status := range []paygate.DeliveryStatus{paygate.DeliveryPending, paygate.DeliverySucceeded, paygate.DeliveryFailed} {
				c := got[i]
				must(t, finishDelivery(ctx(t), s, paygate.DeliveryFinish{
					DeliveryID: c.Delivery.ID, Lease: c.Lease, At: at(time.Hour), Status: status,
					NextAttemptAt: at(2 * time.Hour), Error: "HTTP 500",
				}))
			}
			want(2)
		}},
	}
}
