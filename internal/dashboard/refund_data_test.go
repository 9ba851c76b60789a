package dashboard

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/ratelimit"
	"github.com/paygate/paygate/internal/testenv"
)

// refundForm reads the refund form of a payment page: its idempotency key
// and default amount.
func (f *dataFixture) refundFormOf(t *testing.T, v *viewer, paymentID string) url.Values {
	t.Helper()
	pg := f.get(v, "/payments/"+paymentID)
	if pg.code != http.StatusOK {
		t.Fatalf("payment page: %d", pg.code)
	}
	return url.Values{
		"csrf":            {"csrf"},
		"idempotency_key": {formValue(t, pg.body, "idempotency_key")},
		"amount":          {formValue(t, pg.body, "amount")},
	}
}

func (f *dataFixture) refunds(t *testing.T, tn tenant, paymentID string) []paygate.Refund {
	t.Helper()
	rs, err := f.st.RefundsByPayment(context.Background(), tn.merchantID, tn.mode, paymentID)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func (f *dataFixture) audits(t *testing.T, mid, action string) []paygate.AuditEntry {
	t.Helper()
	es, err := f.st.AuditLog(context.Background(), paygate.AuditQuery{MerchantID: mid})
	if err != nil {
		t.Fatal(err)
	}
	var out []paygate.AuditEntry
	for _, e := range es {
		if e.Action == action {
			out = append(out, e)
		}
	}
	return out
}

func TestRefundFromDashboard(t *testing.T) {
	t.Parallel()
	t.Run("OK_FullThenDoubleSubmit", func(t *testing.T) {
		t.Parallel()
		f := newDataFixture(t)
		pid := f.pay(f.a, cardOK, "10.50", "EUR", "cust-1", "")
		form := f.refundFormOf(t, f.a.viewer, pid)
		if form.Get("amount") != "10.50" {
			t.Errorf("default amount %q, want the whole 10.50", form.Get("amount"))
		}
		first := f.post(f.a.viewer, "/payments/"+pid+"/refund", form)
		if first.code != http.StatusSeeOther || !strings.HasPrefix(first.location, "/dashboard/test/payments/"+pid+"?refunded=") {
			t.Fatalf("refund: %d %q\n%s", first.code, first.location, first.body)
		}
		// The same form again (a double click, a reload): the same answer,
		// and still one refund.
		second := f.post(f.a.viewer, "/payments/"+pid+"/refund", form)
		if second.code != http.StatusSeeOther || second.location != first.location {
			t.Fatalf("second submit: %d %q, want %q", second.code, second.location, first.location)
		}
		rs := f.refunds(t, f.a, pid)
		if len(rs) != 1 || rs[0].Amount.Amount != 1050 || rs[0].AmountText != "10.50" || rs[0].Status != paygate.RefundCreated {
			t.Fatalf("refunds %+v", rs)
		}
		if first.location != "/dashboard/test/payments/"+pid+"?refunded="+rs[0].ID {
			t.Errorf("location %q does not name refund %s", first.location, rs[0].ID)
		}
		// The page announces it, and the form is gone: nothing is left.
		pg := f.get(f.a.viewer, strings.TrimPrefix(first.location, "/dashboard/test"))
		if !strings.Contains(pg.body, "Refund of €10.50 created.") || strings.Contains(pg.body, `name="idempotency_key"`) {
			t.Errorf("payment page after the refund:\n%s", pg.body)
		}
		au := f.audits(t, f.a.merchantID, paygate.AuditRefundIssued)
		if len(au) != 1 || au[0].Target != rs[0].ID || au[0].Detail != "10.50 EUR of payment "+pid || au[0].Mode != paygate.ModeTest || au[0].UserID != f.a.viewer.User.ID {
			t.Errorf("audit %+v", au)
		}
		// The API sees the refund, and the refund worker takes it to the
		// sandbox like any other.
		if n := f.svc.NewRefundWorker(time.Hour, time.Minute).RunOnce(context.Background()); n < 1 {
			t.Errorf("refund worker processed %d refunds", n)
		}
		status, data := f.call(f.a, http.MethodGet, "/v1/refunds/"+rs[0].ID, nil)
		if status != http.StatusOK || data["status"] != "succeeded" || data["amount"] != "10.50" {
			t.Errorf("GET /v1/refunds/%s: %d %v", rs[0].ID, status, data)
		}
		status, data = f.call(f.a, http.MethodGet, "/v1/payments/"+pid, nil)
		if status != http.StatusOK || data["amountRefunded"] != "10.50" {
			t.Errorf("payment after refund: %d %v", status, data)
		}
	})
	t.Run("OK_Partial", func(t *testing.T) {
		t.Parallel()
		f := newDataFixture(t)
		pid := f.pay(f.a, cardOK, "10.00", "EUR", "cust-1", "")
		form := f.refundFormOf(t, f.a.viewer, pid)
		form.Set("amount", "3.5")
		form.Set("reason", "one book returned")
		if pg := f.post(f.a.viewer, "/payments/"+pid+"/refund", form); pg.code != http.StatusSeeOther {
			t.Fatalf("partial refund: %d\n%s", pg.code, pg.body)
		}
		// The next form offers what is left.
		next := f.refundFormOf(t, f.a.viewer, pid)
		if next.Get("amount") != "6.50" || next.Get("idempotency_key") == form.Get("idempotency_key") {
			t.Errorf("next form %v", next)
		}
		if pg := f.post(f.a.viewer, "/payments/"+pid+"/refund", next); pg.code != http.StatusSeeOther {
			t.Fatalf("second partial refund: %d\n%s", pg.code, pg.body)
		}
		rs := f.refunds(t, f.a, pid)
		if len(rs) != 2 || rs[1].AmountText != "3.5" || rs[1].Reason != "one book returned" || rs[0].Amount.Amount != 650 {
			t.Fatalf("refunds %+v", rs)
		}
	})
	t.Run("ErrOverRemaining", func(t *testing.T) {
		t.Parallel()
		f := newDataFixture(t)
		pid := f.pay(f.a, cardOK, "10.00", "EUR", "cust-1", "")
		form := f.refundFormOf(t, f.a.viewer, pid)
		form.Set("amount", "10.01")
		pg := f.post(f.a.viewer, "/payments/"+pid+"/refund", form)
		if pg.code != http.StatusBadRequest || !strings.Contains(pg.body, "Amount: ") || !strings.Contains(pg.body, "The refund was not made.") {
			t.Fatalf("over-refund: %d\n%s", pg.code, pg.body)
		}
		if !strings.Contains(pg.body, `value="10.01"`) {
			t.Errorf("the form lost the amount typed")
		}
		if rs := f.refunds(t, f.a, pid); len(rs) != 0 {
			t.Fatalf("refunds stored: %+v", rs)
		}
		if au := f.audits(t, f.a.merchantID, paygate.AuditRefundIssued); len(au) != 0 {
			t.Errorf("audit of a refused refund: %+v", au)
		}
		// The key was released: the same form with a valid amount works.
		form.Set("amount", "10")
		if pg := f.post(f.a.viewer, "/payments/"+pid+"/refund", form); pg.code != http.StatusSeeOther {
			t.Fatalf("retry with the same key: %d\n%s", pg.code, pg.body)
		}
	})
	for name, amount := range map[string]string{
		"ErrAmountSyntax":    "ten",
		"ErrAmountPrecision": "1.234",
		"ErrAmountZero":      "0",
		"ErrAmountEmpty":     "",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newDataFixture(t)
			pid := f.pay(f.a, cardOK, "10.00", "EUR", "cust-1", "")
			form := f.refundFormOf(t, f.a.viewer, pid)
			form.Set("amount", amount)
			if pg := f.post(f.a.viewer, "/payments/"+pid+"/refund", form); pg.code != http.StatusBadRequest || !strings.Contains(pg.body, "Amount: ") {
				t.Fatalf("amount %q: %d\n%s", amount, pg.code, pg.body)
			}
			if rs := f.refunds(t, f.a, pid); len(rs) != 0 {
				t.Fatalf("refunds stored: %+v", rs)
			}
		})
	}
	t.Run("ErrCardNumberInReason", func(t *testing.T) {
		t.Parallel()
		f := newDataFixture(t)
		pid := f.pay(f.a, cardOK, "10.00", "EUR", "cust-1", "")
		form := f.refundFormOf(t, f.a.viewer, pid)
		form.Set("amount", "1.00")
		form.Set("reason", "refund to 4242 4242 4242 4242 please")
		pg := f.wantRefused(t, pid, form, "card numbers do not belong in reason", 0)
		if strings.Contains(pg.body, "4242 4242 4242 4242") {
			t.Errorf("the page shows the card number back")
		}
	})
	t.Run("ErrOtherFormValues", func(t *testing.T) {
		t.Parallel()
		f := newDataFixture(t)
		pid := f.pay(f.a, cardOK, "10.00", "EUR", "cust-1", "")
		form := f.refundFormOf(t, f.a.viewer, pid)
		form.Set("amount", "1")
		if pg := f.post(f.a.viewer, "/payments/"+pid+"/refund", form); pg.code != http.StatusSeeOther {
			t.Fatalf("refund: %d", pg.code)
		}
		form.Set("amount", "2")
		f.wantRefused(t, pid, form, "already submitted with other values", 1)
	})
	t.Run("ErrInFlight", func(t *testing.T) {
		t.Parallel()
		f := newDataFixture(t)
		pid := f.pay(f.a, cardOK, "10.00", "EUR", "cust-1", "")
		form := f.refundFormOf(t, f.a.viewer, pid)
		// Another submit of the same form is still being processed.
		body, err := refundFingerprint(paygate.Payment{ID: pid, Amount: paygate.Money{Currency: "EUR"}}, refundForm{Amount: "10.00"})
		if err != nil {
			t.Fatal(err)
		}
		fp, err := f.svc.RequestFingerprint(http.MethodPost, refundFingerprintPath, body)
		if err != nil {
			t.Fatal(err)
		}
		if _, reserved, err := f.st.ReserveIdempotency(context.Background(), paygate.IdempotencyReservation{
			MerchantID: f.a.merchantID, Mode: paygate.ModeTest, Key: refundKeyPrefix + form.Get("idempotency_key"),
			Fingerprint: fp, Now: f.clock.Now(),
		}); err != nil || !reserved {
			t.Fatalf("reserve: %v %v", reserved, err)
		}
		f.wantRefused(t, pid, form, "This refund is still being processed.", 0)
	})
	t.Run("ErrNotCaptured", func(t *testing.T) {
		t.Parallel()
		f := newDataFixture(t)
		pid := f.pay(f.a, cardDeclined, "10.00", "EUR", "cust-1", "")
		pg := f.get(f.a.viewer, "/payments/"+pid)
		if strings.Contains(pg.body, `name="idempotency_key"`) || !strings.Contains(pg.body, "Only a captured payment can be refunded.") {
			t.Errorf("a failed payment offers a refund")
		}
		f.wantRefused(t, pid, url.Values{"idempotency_key": {"0190c8e4-7b1a-7c3d-8e2f-123456789abc"}, "amount": {"1"}}, "", 0)
	})
	t.Run("ErrNoKey", func(t *testing.T) {
		t.Parallel()
		f := newDataFixture(t)
		pid := f.pay(f.a, cardOK, "10.00", "EUR", "cust-1", "")
		pg := f.post(f.a.viewer, "/payments/"+pid+"/refund", url.Values{"amount": {"1"}})
		if pg.code != http.StatusBadRequest || len(f.refunds(t, f.a, pid)) != 0 {
			t.Fatalf("refund without a key: %d", pg.code)
		}
	})
}

func TestPaymentDetail(t *testing.T) {
	t.Parallel()
	f := newDataFixture(t)
	if status, data := f.call(f.a, http.MethodPost, "/v1/customers", map[string]any{"externalId": "cust-9", "email": "nine@example.com"}); status != http.StatusCreated {
		t.Fatalf("create customer: %d %v", status, data)
	}
	// An endpoint, so that the payment's events have deliveries.
	now := f.clock.Now()
	if _, err := testenv.ConfigureEndpoint(context.Background(), f.st, paygate.WebhookEndpoint{
		MerchantID: f.a.merchantID, Mode: paygate.ModeTest, URL: "http://127.0.0.1:9/hooks", SealedSecret: sealedSecret(t, f.a.merchantID, paygate.ModeTest),
		CreatedAt: now, UpdatedAt: now,
	}, false, now); err != nil {
		t.Fatal(err)
	}
	pid := f.pay(f.a, cardOK, "10.5", "EUR", "cust-9", "order-9")
	form := f.refundFormOf(t, f.a.viewer, pid)
	form.Set("amount", "2.50")
	f.post(f.a.viewer, "/payments/"+pid+"/refund", form)
	pg := f.get(f.a.viewer, "/payments/"+pid)
	if pg.code != http.StatusOK {
		t.Fatalf("detail: %d", pg.code)
	}
	for _, want := range []string{
		"€10.5", "€2.50", "€8.00", // amount as submitted, refunded, left
		"sandbox-eu", "Visa •••• 4242", "expires 12/", "order-9", "cust-9", "nine@example.com",
		"Captured · payment.captured", "Refund created (€2.50) · refund.created",
		`class="badge badge-created"`, "Not challenged.",
	} {
		if !strings.Contains(pg.body, want) {
			t.Errorf("detail does not show %q", want)
		}
	}
	ds, err := f.st.Deliveries(context.Background(), paygate.DeliveryQuery{MerchantID: f.a.merchantID, Mode: paygate.ModeTest})
	if err != nil || len(ds) != 2 { // payment.captured and refund.created
		t.Fatalf("deliveries %v %v", ds, err)
	}
	for _, dl := range ds {
		if !strings.Contains(pg.body, `href="/dashboard/test/webhook/deliveries/`+dl.ID+`"`) {
			t.Errorf("no link to delivery %s of %s", dl.ID, dl.EventType)
		}
	}
	if !strings.Contains(pg.body, `<span class="badge badge-pending">pending</span></a> 0 attempts`) {
		t.Errorf("deliveries do not show their status and attempts")
	}
	// The deliveries of all the payment's events are one read, not one
	// per event.
	counted := &deliveryReads{Store: f.st}
	f.d = New(Config{Store: counted, Payments: f.svc, Limiter: ratelimit.NewMemory(), Clock: f.clock, Vault: siteVault})
	again := f.get(f.a.viewer, "/payments/"+pid)
	for _, dl := range ds {
		if !strings.Contains(again.body, `href="/dashboard/test/webhook/deliveries/`+dl.ID+`"`) {
			t.Errorf("no link to delivery %s of %s", dl.ID, dl.EventType)
		}
	}
	if n, m := counted.byPayment.Load(), counted.byMerchant.Load(); n != 1 || m != 0 {
		t.Errorf("the payment page read deliveries %d times by payment and %d times by merchant; want once by payment", n, m)
	}
	for _, never := range []string{"4242424242424242", "123"} {
		if strings.Contains(pg.body, ">"+never+"<") {
			t.Errorf("detail shows %q", never)
		}
	}
}

func TestPaymentDetailThreeDS(t *testing.T) {
	t.Parallel()
	f := newDataFixture(t)
	pending := f.pay(f.a, "4000000000003220", "15.00", "GBP", "cust-3ds", "")
	pg := f.get(f.a.viewer, "/payments/"+pending)
	for _, want := range []string{`class="badge badge-pending-3ds"`, "Waiting for the customer&#39;s 3-D Secure challenge",
		"Challenged: waiting for the customer to complete the challenge.", "Only a captured payment can be refunded."} {
		if !strings.Contains(pg.body, want) {
			t.Errorf("pending 3-D Secure payment does not show %q", want)
		}
	}
	declined := f.pay(f.a, cardDeclined, "15.00", "GBP", "cust-3ds", "")
	pg = f.get(f.a.viewer, "/payments/"+declined)
	for _, want := range []string{"<code>CARD_DECLINED</code> (<code>generic_decline</code>)", "Failed · payment.failed"} {
		if !strings.Contains(pg.body, want) {
			t.Errorf("declined payment does not show %q", want)
		}
	}
}

// deliveryReads counts the delivery reads of a Store.
type deliveryReads struct {
	Store
	byPayment, byMerchant atomic.Int64
}

func (s *deliveryReads) Deliveries(ctx context.Context, q paygate.DeliveryQuery) ([]paygate.Delivery, error) {
	if q.PaymentID != "" {
		s.byPayment.Add(1)
	} else {
		s.byMerchant.Add(1)
	}
	return s.Store.Deliveries(ctx, q)
}

// TestPaymentDetailFailedRefund: a refund of card 4000000000005126 fails
// at the sandbox; the payment page shows why (decisions §15: errorCode and
// errorMessage), and a refund that did not fail shows no error.
func TestPaymentDetailFailedRefund(t *testing.T) {
	t.Parallel()
	f := newDataFixture(t)
	bad := f.pay(f.a, "4000000000005126", "10.00", "EUR", "cust-f", "order-f")
	good := f.pay(f.a, cardOK, "10.00", "EUR", "cust-g", "order-g")
	for _, pid := range []string{bad, good} {
		if status, data := f.call(f.a, http.MethodPost, "/v1/refunds", map[string]any{"transactionId": pid, "amount": "4.00", "currency": "EUR"}); status != http.StatusCreated {
			t.Fatalf("refund: %d %v", status, data)
		}
	}
	if n := f.svc.NewRefundWorker(time.Hour, time.Hour).RunOnce(context.Background()); n != 2 {
		t.Fatalf("the refund worker finished %d refunds, want 2", n)
	}
	pg := f.get(f.a.viewer, "/payments/"+bad)
	if pg.code != http.StatusOK {
		t.Fatalf("detail: %d", pg.code)
	}
	for _, want := range []string{`class="badge badge-failed"`, `<span class="mono">PROVIDER_ERROR</span> The card issuer refused the refund.`} {
		if !strings.Contains(pg.body, want) {
			t.Errorf("the failed refund's row does not show %q", want)
		}
	}
	if pg := f.get(f.a.viewer, "/payments/"+good); strings.Contains(pg.body, "refund-error") || !strings.Contains(pg.body, `class="badge badge-succeeded"`) {
		t.Errorf("the succeeded refund's row: %s", pg.body)
	}
}

// wantRefused posts a refund form of the payment and checks that the page
// refuses it (400) with a message containing msg, and that the payment then
// has refunds refunds. It returns the page.
func (f *dataFixture) wantRefused(t *testing.T, paymentID string, form url.Values, msg string, refunds int) answer {
	t.Helper()
	pg := f.post(f.a.viewer, "/payments/"+paymentID+"/refund", form)
	if pg.code != http.StatusBadRequest || !strings.Contains(pg.body, msg) {
		t.Fatalf("refund form %v: %d, want 400 with %q\n%s", form, pg.code, msg, pg.body)
	}
	if rs := f.refunds(t, f.a, paymentID); len(rs) != refunds {
		t.Fatalf("refunds %+v, want %d", rs, refunds)
	}
	return pg
}

// TestRefundFingerprint checks that a refund form is fingerprinted by the
// same bytes for the same values every time: those of the API body an API
// client would send for it (an empty reason left out), as before the
// dashboard had its own runner call, so that a form re-submitted across an
// upgrade is still the same request.
func TestRefundFingerprint(t *testing.T) {
	t.Parallel()
	const tx = "0190c8e4-7b1a-7c3d-8e2f-123456789abc"
	p := paygate.Payment{ID: tx, Amount: paygate.Money{Currency: "JPY"}}
	for _, c := range []struct {
		form refundForm
		want string
	}{
		{refundForm{Amount: "5", Key: "k1"}, `{"amount":"5","currency":"JPY","transactionId":"` + tx + `"}`},
		{refundForm{Amount: "1", Reason: "damaged", Key: "k2"}, `{"amount":"1","currency":"JPY","reason":"damaged","transactionId":"` + tx + `"}`},
	} {
		got, err := refundFingerprint(p, c.form)
		if err != nil || string(got) != c.want {
			t.Errorf("form %+v: %s, %v; want %s", c.form, got, err, c.want)
		}
	}
}
