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

// storedEvent commits an event of the merchant's test mode created at the
// time (its deliveries are born with it when an endpoint subscribes).
func storedEvent(t *testing.T, s *site, merchantID string, typ paygate.EventType, paymentID, payload string, at time.Time) paygate.Event {
	t.Helper()
	ev := paygate.Event{ID: id.New(), MerchantID: merchantID, Mode: paygate.ModeTest, Type: typ,
		PaymentID: paymentID, Payload: []byte(payload), CreatedAt: at}
	if err := s.st.Commit(context.Background(), paygate.Unit{Ops: []paygate.Op{ev}}); err != nil {
		t.Fatal(err)
	}
	return ev
}

// deliveriesOf lists the merchant's test deliveries of an event.
func deliveriesOf(t *testing.T, s *site, merchantID, eventID string) []paygate.Delivery {
	t.Helper()
	ds, err := s.st.Deliveries(context.Background(), paygate.DeliveryQuery{MerchantID: merchantID, Mode: paygate.ModeTest, EventID: eventID})
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func TestWebhookDeliveryTools(t *testing.T) {
	t.Parallel()
	var woken int
	s := newSite(t, func(c *Config) { c.Wake = func() { woken++ } })
	b := s.signedIn()
	ctx := context.Background()
	t0 := s.clock.Now().UTC()

	// Before the endpoint: two events of A (one a ping, never sent on),
	// and one of B.
	old1 := storedEvent(t, s, s.a.id, paygate.EventPaymentCaptured, id.New(), `{"event":"payment.captured","n":1}`, t0.Add(-72*time.Hour))
	old2 := storedEvent(t, s, s.a.id, paygate.EventRefundSucceeded, id.New(), `{"event":"refund.succeeded","n":2}`, t0.Add(-48*time.Hour))
	storedEvent(t, s, s.a.id, paygate.EventPing, "", `{"event":"ping"}`, t0.Add(-47*time.Hour))
	oldB := storedEvent(t, s, s.b.id, paygate.EventPaymentCaptured, id.New(), `{"event":"payment.captured"}`, t0.Add(-72*time.Hour))
	for _, m := range []string{s.a.id, s.b.id} {
		if _, err := testenv.ConfigureEndpoint(ctx, s.st, paygate.WebhookEndpoint{
			MerchantID: m, Mode: paygate.ModeTest, URL: "http://127.0.0.1:9/hook", SealedSecret: sealedSecret(t, m, paygate.ModeTest),
			CreatedAt: t0, UpdatedAt: t0,
		}, false, t0); err != nil {
			t.Fatal(err)
		}
	}
	// After it: a capture (delivered) and a failure (its delivery failed).
	pid := id.New()
	captured := storedEvent(t, s, s.a.id, paygate.EventPaymentCaptured, pid,
		`{"event":"payment.captured","data":{"id":"`+pid+`","metadata":{"note":"<script>alert(1)</script>"}}}`, t0.Add(time.Second))
	failedEv := storedEvent(t, s, s.a.id, paygate.EventPaymentFailed, id.New(), `{"event":"payment.failed"}`, t0.Add(2*time.Second))
	now := t0.Add(time.Minute)
	claims, err := s.st.ClaimDeliveries(ctx, paygate.DeliveryClaim{Now: now, FirstDue: now, Lease: id.New(), LeaseUntil: now.Add(time.Minute), Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var capturedID, failedID string
	for _, c := range claims {
		if c.Delivery.MerchantID != s.a.id {
			continue
		}
		status := paygate.DeliverySucceeded
		if c.Delivery.EventID == failedEv.ID {
			status, failedID = paygate.DeliveryFailed, c.Delivery.ID
		} else {
			capturedID = c.Delivery.ID
		}
		if err := s.st.Commit(ctx, paygate.Unit{Ops: []paygate.Op{paygate.DeliveryFinish{
			DeliveryID: c.Delivery.ID, Lease: c.Lease, At: now, Status: status, Error: "HTTP 500",
		}}}); err != nil {
			t.Fatal(err)
		}
	}
	if capturedID == "" || failedID == "" {
		t.Fatalf("claims %+v", claims)
	}

	t.Run("Payload", func(t *testing.T) {
		p := b.get("/dashboard/test/webhook/deliveries/" + capturedID)
		if p.code != http.StatusOK {
			t.Fatalf("delivery page: %d", p.code)
		}
		if !strings.Contains(p.body, `id="delivery-payload">{
  &#34;event&#34;: &#34;payment.captured&#34;,`) {
			t.Errorf("the payload is not shown indented and escaped:\n%s", p.body)
		}
		if strings.Contains(p.body, "<script>alert") || !strings.Contains(p.body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
			t.Error("the payload's markup is not escaped")
		}
		if !strings.Contains(p.body, `href="/dashboard/test/payments/`+pid+`"`) {
			t.Error("no link to the payment")
		}
		// A ping is about no payment.
		ping, err := testenv.CreatePing(ctx, s.st, paygate.Event{ID: id.New(), MerchantID: s.a.id, Mode: paygate.ModeTest,
			Type: paygate.EventPing, Payload: []byte(`{"event":"ping"}`), CreatedAt: now}, id.New())
		if err != nil {
			t.Fatal(err)
		}
		if p := b.get("/dashboard/test/webhook/deliveries/" + ping.ID); p.code != http.StatusOK || strings.Contains(p.body, `id="delivery-payment"`) {
			t.Errorf("ping delivery page: %d, with a payment link", p.code)
		}
	})

	t.Run("Filters", func(t *testing.T) {
		p := b.get("/dashboard/test/webhook?status=failed")
		if !strings.Contains(p.body, failedID) || strings.Contains(p.body, capturedID) {
			t.Errorf("status filter: failed listed %v, captured listed %v", strings.Contains(p.body, failedID), strings.Contains(p.body, capturedID))
		}
		if !strings.Contains(p.body, `<option value="failed" selected>`) {
			t.Error("the status filter is not shown selected")
		}
		p = b.get("/dashboard/test/webhook?event=payment.captured")
		if !strings.Contains(p.body, capturedID) || strings.Contains(p.body, failedID) {
			t.Error("event filter")
		}
		p = b.get("/dashboard/test/webhook?event=payment.captured&status=failed")
		if strings.Contains(p.body, capturedID) || strings.Contains(p.body, failedID) || !strings.Contains(p.body, "No delivery matches the filter") {
			t.Error("both filters")
		}
		p = b.get("/dashboard/test/webhook?status=lost")
		if p.code != http.StatusOK || !strings.Contains(p.body, `there is no delivery status &#34;lost&#34;`) || !strings.Contains(p.body, failedID) {
			t.Errorf("unknown status: %d", p.code)
		}
	})

	t.Run("ResendFailed", func(t *testing.T) {
		before := woken
		p := b.post("/dashboard/test/webhook", "/dashboard/test/webhook/resend-failed", nil)
		if p.code != http.StatusSeeOther || woken != before+1 {
			t.Fatalf("resend failed: %d %s, woken %d", p.code, p.location, woken-before)
		}
		if ds := deliveriesOf(t, s, s.a.id, failedEv.ID); len(ds) != 2 || ds[0].Status == ds[1].Status {
			t.Errorf("deliveries of the failed event: %+v", ds)
		}
		if ds := deliveriesOf(t, s, s.a.id, captured.ID); len(ds) != 1 {
			t.Errorf("a delivered event was sent again: %+v", ds)
		}
		if page := b.get(p.location); !strings.Contains(page.body, "1 failed event was queued again") {
			t.Errorf("notice after resend: %s", p.location)
		}
		// Its last delivery is pending now: nothing more to resend.
		p = b.post("/dashboard/test/webhook", "/dashboard/test/webhook/resend-failed", nil)
		if page := b.get(p.location); !strings.Contains(page.body, "There was no failed delivery to resend.") {
			t.Errorf("second resend: %s", p.location)
		}
		if ds := deliveriesOf(t, s, s.a.id, failedEv.ID); len(ds) != 2 {
			t.Errorf("the second resend queued again: %+v", ds)
		}
		// Without the CSRF token: refused.
		if p := b.do(http.MethodPost, "/dashboard/test/webhook/resend-failed", url.Values{}); p.code != http.StatusForbidden {
			t.Errorf("resend without CSRF: %d", p.code)
		}
	})

	t.Run("Backfill", func(t *testing.T) {
		for _, since := range []string{"", "yesterday", t0.Add(24 * time.Hour).Format(time.DateOnly)} {
			p := b.post("/dashboard/test/webhook", "/dashboard/test/webhook/backfill", url.Values{"since": {since}})
			if p.code != http.StatusBadRequest || !strings.Contains(p.body, `id="webhook-error"`) {
				t.Errorf("since %q: %d", since, p.code)
			}
		}
		p := b.post("/dashboard/test/webhook", "/dashboard/test/webhook/backfill", url.Values{"since": {t0.Add(-96 * time.Hour).Format(time.DateOnly)}})
		if p.code != http.StatusSeeOther {
			t.Fatalf("backfill: %d\n%s", p.code, p.body)
		}
		for _, ev := range []paygate.Event{old1, old2} {
			if ds := deliveriesOf(t, s, s.a.id, ev.ID); len(ds) != 1 || ds[0].Status != paygate.DeliveryPending {
				t.Errorf("event %s from before the endpoint: %+v", ev.Type, ds)
			}
		}
		if ds := deliveriesOf(t, s, s.b.id, oldB.ID); len(ds) != 0 {
			t.Errorf("another merchant's event was sent: %+v", ds)
		}
		if ds := deliveriesOf(t, s, s.a.id, captured.ID); len(ds) != 1 {
			t.Errorf("an event after the endpoint was sent again: %+v", ds)
		}
		if page := b.get(p.location); !strings.Contains(page.body, "2 events created before the endpoint existed were queued to it.") {
			t.Errorf("notice after backfill: %s", p.location)
		}
		// From a day with none of them.
		p = b.post("/dashboard/test/webhook", "/dashboard/test/webhook/backfill", url.Values{"since": {t0.Add(-time.Hour).Format(time.DateOnly)}})
		if page := b.get(p.location); p.code != http.StatusSeeOther || !strings.Contains(page.body, "No event of the subscribed types") {
			t.Errorf("backfill of an empty period: %d %s", p.code, p.location)
		}
	})

	es, err := s.st.AuditLog(ctx, paygate.AuditQuery{MerchantID: s.a.id})
	if err != nil {
		t.Fatal(err)
	}
	var resent, backfilled int
	for _, e := range es {
		if e.UserID == "" || e.Email != s.a.email {
			continue
		}
		switch e.Action {
		case paygate.AuditWebhookResent:
			resent++
		case paygate.AuditWebhookBackfill:
			backfilled++
			if e.Target != "http://127.0.0.1:9/hook" || !strings.Contains(e.Detail, "2 events") {
				t.Errorf("backfill entry %+v", e)
			}
		}
	}
	if resent != 1 || backfilled != 1 {
		t.Errorf("audit: %d resends, %d backfills; want 1 each (none for an empty run)", resent, backfilled)
	}
}
