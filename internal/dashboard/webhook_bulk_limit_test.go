package dashboard

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/testenv"
)

// deliveryQueries records the delivery reads of failed deliveries.
type deliveryQueries struct {
	Store
	failed []paygate.DeliveryQuery
}

func (q *deliveryQueries) Deliveries(ctx context.Context, dq paygate.DeliveryQuery) ([]paygate.Delivery, error) {
	if dq.Status == paygate.DeliveryFailed {
		q.failed = append(q.failed, dq)
	}
	return q.Store.Deliveries(ctx, dq)
}

func TestResendFailedReadIsBounded(t *testing.T) {
	t.Parallel()
	var counted *deliveryQueries
	s := newSite(t, func(c *Config) { counted = &deliveryQueries{Store: c.Store}; c.Store = counted })
	b := s.signedIn()
	t0 := s.clock.Now().UTC()
	if _, err := testenv.ConfigureEndpoint(context.Background(), s.st, paygate.WebhookEndpoint{
		MerchantID: s.a.id, Mode: paygate.ModeTest, URL: "http://127.0.0.1:9/hook", SealedSecret: sealedSecret(t, s.a.id, paygate.ModeTest),
		CreatedAt: t0, UpdatedAt: t0,
	}, false, t0); err != nil {
		t.Fatal(err)
	}
	if p := b.post("/dashboard/test/webhook", "/dashboard/test/webhook/resend-failed", nil); p.code != http.StatusSeeOther {
		t.Fatalf("resend failed: %d", p.code)
	}
	// One bounded read, of the events whose every delivery failed: the
	// query leaves out events resent since, so each run reaches further
	// back (the store's conformance case DeliveriesOfEventsAllFailed).
	if len(counted.failed) != 1 || counted.failed[0].Limit != maxBulkResend+1 || !counted.failed[0].EventAllFailed {
		t.Errorf("reads of the failed deliveries: %+v, want one with Limit %d and EventAllFailed", counted.failed, maxBulkResend+1)
	}
}

// A backfill of more than maxBulkResend events is cut; going on from the
// page's form sends every event exactly once, even when the cut falls
// between events of one instant.
func TestBackfillGoesOnAfterTheLastEventSent(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	b := s.signedIn()
	ctx := context.Background()
	t0 := s.clock.Now().UTC().Truncate(time.Second)
	start := t0.Add(-24 * time.Hour)
	total := maxBulkResend + 2
	u := paygate.Unit{}
	for i := range total {
		at := start.Add(time.Duration(i) * time.Second)
		if i == maxBulkResend {
			at = start.Add(time.Duration(i-1) * time.Second) // the cut falls inside one instant
		}
		u.Add(paygate.Event{ID: id.New(), MerchantID: s.a.id, Mode: paygate.ModeTest, Type: paygate.EventPaymentCaptured,
			PaymentID: id.New(), Payload: []byte(`{}`), CreatedAt: at})
	}
	if err := s.st.Commit(ctx, u); err != nil {
		t.Fatal(err)
	}
	if _, err := testenv.ConfigureEndpoint(ctx, s.st, paygate.WebhookEndpoint{
		MerchantID: s.a.id, Mode: paygate.ModeTest, URL: "http://127.0.0.1:9/hook", SealedSecret: sealedSecret(t, s.a.id, paygate.ModeTest),
		CreatedAt: t0, UpdatedAt: t0,
	}, false, t0); err != nil {
		t.Fatal(err)
	}
	p := b.post("/dashboard/test/webhook", "/dashboard/test/webhook/backfill", url.Values{"since": {start.In(time.Local).Add(-24 * time.Hour).Format(time.DateOnly)}})
	if p.code != http.StatusSeeOther || !strings.Contains(p.location, "next=") {
		t.Fatalf("first run: %d %s", p.code, p.location)
	}
	page := b.get(p.location)
	form := url.Values{"since": {formValue(t, page.body, "since")}, "from": {formValue(t, page.body, "from")}}
	p = b.post("/dashboard/test/webhook", "/dashboard/test/webhook/backfill", form)
	if p.code != http.StatusSeeOther || strings.Contains(p.location, "next=") {
		t.Fatalf("second run: %d %s", p.code, p.location)
	}
	ds, err := s.st.Deliveries(ctx, paygate.DeliveryQuery{MerchantID: s.a.id, Mode: paygate.ModeTest})
	if err != nil {
		t.Fatal(err)
	}
	per := map[string]int{}
	for _, d := range ds {
		per[d.EventID]++
	}
	twice := 0
	for _, n := range per {
		if n > 1 {
			twice++
		}
	}
	if len(per) != total || twice != 0 {
		t.Errorf("after two runs: %d of %d events sent, %d of them more than once", len(per), total, twice)
	}
}
