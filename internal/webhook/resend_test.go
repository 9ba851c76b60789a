package webhook

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store"
	"github.com/paygate/paygate/internal/testenv"
	swh "github.com/paygate/paygate/webhook"
)

// TestResendEndsTheFailingDelivery is decisions.md section 15: resending an
// event whose delivery is failing ends that delivery once the resend
// succeeds, so that the receiver (on loopback, counting) gets the event once
// more, not twice. On both engines, with the real dispatcher.
func TestResendEndsTheFailingDelivery(t *testing.T) {
	t.Parallel()
	for _, engine := range []struct {
		name string
		url  func(t *testing.T) string
	}{
		{"SQLite", func(t *testing.T) string { return "sqlite:" + t.TempDir() + "/paygate.db" }},
		{"PostgreSQL", func(t *testing.T) string { return testenv.PostgresSchema(t) }},
	} {
		t.Run(engine.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			st, err := store.Open(ctx, engine.url(t))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			clock := testenv.NewClock(time.Now())
			m := paygate.Merchant{ID: id.New(), Name: "Resend", CreatedAt: clock.Now()}
			if err := st.Commit(ctx, paygate.Unit{Ops: []paygate.Op{m}}); err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			failing := true
			succeeded := map[string]int{}
			rcv := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				defer mu.Unlock()
				if failing {
					w.WriteHeader(http.StatusServiceUnavailable)
					return
				}
				succeeded[r.Header.Get(swh.HeaderID)]++
				w.WriteHeader(http.StatusOK)
			})
			v := testVault(t)
			sealed, err := SealSecret(v, m.ID, paygate.ModeTest, secretA)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := testenv.ConfigureEndpoint(ctx, st, paygate.WebhookEndpoint{
				MerchantID: m.ID, Mode: paygate.ModeTest, URL: rcv.srv.URL, SealedSecret: sealed, CreatedAt: clock.Now(), UpdatedAt: clock.Now(),
			}, false, time.Time{}); err != nil {
				t.Fatal(err)
			}
			d := NewDispatcher(Config{Store: st, Vault: v, Clock: clock, Schedule: Schedule{0, time.Hour, time.Hour},
				Jitter: func(w time.Duration) time.Duration { return w }})

			ping := PingEvent(m.ID, paygate.ModeTest, clock.Now())
			original, err := testenv.CreatePing(ctx, st, ping, id.New())
			if err != nil {
				t.Fatal(err)
			}
			// The first attempt fails: the original waits an hour to retry.
			if n := d.RunOnce(ctx); n != 1 {
				t.Fatalf("first run attempted %d, want 1", n)
			}
			// The receiver is fixed and the operator resends.
			mu.Lock()
			failing = false
			mu.Unlock()
			clock.Add(time.Minute)
			resent, err := st.ResendEvent(ctx, ping.ID, id.New(), clock.Now())
			if err != nil {
				t.Fatal(err)
			}
			if n := d.RunOnce(ctx); n != 1 {
				t.Fatalf("the resend run attempted %d, want 1", n)
			}
			// The original's retry is due now; it must not go out.
			clock.Add(2 * time.Hour)
			if n := d.RunOnce(ctx); n != 0 {
				t.Errorf("after the resend succeeded the dispatcher attempted %d more", n)
			}
			mu.Lock()
			got, total := succeeded[ping.ID], rcv.count()
			mu.Unlock()
			if got != 1 || total != 2 {
				t.Errorf("the receiver got the event %d times successfully (%d requests in all), want once (2 requests)", got, total)
			}
			for _, del := range []paygate.Delivery{original, resent} {
				after, err := paygate.DeliveryByID(ctx, st, m.ID, paygate.ModeTest, del.ID)
				if err != nil {
					t.Fatal(err)
				}
				if after.Status != paygate.DeliverySucceeded {
					t.Errorf("delivery %s is %s, want succeeded", del.ID, after.Status)
				}
			}
		})
	}
}
