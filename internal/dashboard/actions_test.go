package dashboard

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/provider/sandbox"
)

// An authorized payment shows capture and void; capture takes the form's
// amount once however often the form is sent, and is audited; void asks
// for confirmation first.
func TestCaptureAndVoid(t *testing.T) {
	t.Parallel()
	f := newDataFixture(t)
	t.Run("OK_PartialCaptureOnce", func(t *testing.T) {
		pid := f.pay(f.a, sandbox.CardAuthorize, "10.00", "EUR", "cust-1", "")
		pg := f.get(f.a.viewer, "/payments/"+pid)
		if !strings.Contains(pg.body, `id="capture-submit"`) || !strings.Contains(pg.body, `id="void-link"`) {
			t.Fatalf("no capture or void on an authorized payment")
		}
		form := url.Values{"amount": {"7.50"}, "idempotency_key": {formValue(t, pg.body, "idempotency_key")}}
		for range 2 {
			if a := f.post(f.a.viewer, "/payments/"+pid+"/capture", form); a.code != http.StatusSeeOther {
				t.Fatalf("capture: %d %s", a.code, a.body)
			}
		}
		p, err := f.st.PaymentByID(t.Context(), f.a.merchantID, paygate.ModeTest, pid)
		if err != nil {
			t.Fatal(err)
		}
		if p.Status != paygate.PaymentCaptured || p.AmountCaptured != 750 {
			t.Fatalf("payment %s captured %d, want captured 750", p.Status, p.AmountCaptured)
		}
		pg = f.get(f.a.viewer, "/payments/"+pid+"?done=capture")
		if !strings.Contains(pg.body, "Payment captured: €7.50.") || !strings.Contains(pg.body, "partly captured") {
			t.Errorf("page after capture lacks the notice or the marker")
		}
		if strings.Contains(pg.body, `id="capture-submit"`) {
			t.Errorf("a captured payment still offers capture")
		}
		if n := f.audited(paygate.AuditPaymentCaptured); n != 1 {
			t.Errorf("%d capture audit entries, want 1", n)
		}
	})
	t.Run("OK_KWDPrefilledAmount", func(t *testing.T) {
		// The prefilled amount is one the capture accepts: two decimals
		// at most, also for a three-decimal currency.
		pid := f.pay(f.a, sandbox.CardAuthorize, "10", "KWD", "cust-1", "")
		pg := f.get(f.a.viewer, "/payments/"+pid)
		form := url.Values{"amount": {formValue(t, pg.body, "amount")}, "idempotency_key": {formValue(t, pg.body, "idempotency_key")}}
		if a := f.post(f.a.viewer, "/payments/"+pid+"/capture", form); a.code != http.StatusSeeOther {
			t.Fatalf("capture of %s KWD: %d", form.Get("amount"), a.code)
		}
		p, _ := f.st.PaymentByID(t.Context(), f.a.merchantID, paygate.ModeTest, pid)
		if p.Status != paygate.PaymentCaptured || p.AmountCaptured != 10000 {
			t.Errorf("payment %s captured %d, want captured 10000", p.Status, p.AmountCaptured)
		}
	})
	t.Run("OK_VoidAfterConfirmation", func(t *testing.T) {
		pid := f.pay(f.a, sandbox.CardAuthorize, "10.00", "EUR", "cust-1", "")
		c := f.get(f.a.viewer, "/payments/"+pid+"/void")
		if c.code != http.StatusOK || !strings.Contains(c.body, `id="confirm-void"`) {
			t.Fatalf("void confirmation: %d", c.code)
		}
		if a := f.post(f.a.viewer, "/payments/"+pid+"/void", url.Values{"idempotency_key": {formValue(t, c.body, "idempotency_key")}}); a.code != http.StatusSeeOther {
			t.Fatalf("void: %d %s", a.code, a.body)
		}
		p, _ := f.st.PaymentByID(t.Context(), f.a.merchantID, paygate.ModeTest, pid)
		if p.Status != paygate.PaymentVoided {
			t.Fatalf("status %s, want voided", p.Status)
		}
		if n := f.audited(paygate.AuditPaymentVoided); n != 1 {
			t.Errorf("%d void audit entries, want 1", n)
		}
		// Voided: no second void.
		c = f.get(f.a.viewer, "/payments/"+pid+"/void")
		if strings.Contains(c.body, `id="confirm-void"`) {
			t.Errorf("a voided payment offers a void")
		}
	})
	t.Run("ErrNotAuthorized", func(t *testing.T) {
		pid := f.pay(f.a, cardOK, "10.00", "EUR", "cust-1", "")
		a := f.post(f.a.viewer, "/payments/"+pid+"/capture", url.Values{"idempotency_key": {"0195b4c2-0000-4000-8000-000000000001"}})
		if a.code != http.StatusBadRequest || !strings.Contains(a.body, "only an authorized payment") {
			t.Errorf("capture of a captured payment: %d", a.code)
		}
	})
	t.Run("ErrOtherMerchant", func(t *testing.T) {
		pid := f.pay(f.b, sandbox.CardAuthorize, "10.00", "EUR", "cust-1", "")
		if a := f.get(f.a.viewer, "/payments/"+pid+"/void"); a.code != http.StatusNotFound {
			t.Errorf("void page of another merchant's payment: %d", a.code)
		}
		a := f.post(f.a.viewer, "/payments/"+pid+"/void", url.Values{"idempotency_key": {"0195b4c2-0000-4000-8000-000000000002"}})
		if a.code != http.StatusNotFound {
			t.Errorf("void of another merchant's payment: %d", a.code)
		}
	})
}

// The refund form leads to a page that restates the amount and currency
// (with all the currency's decimals) before the POST that refunds.
func TestRefundConfirmation(t *testing.T) {
	t.Parallel()
	f := newDataFixture(t)
	pid := f.pay(f.a, cardOK, "10", "KWD", "cust-1", "")
	pg := f.get(f.a.viewer, "/payments/"+pid)
	if !strings.Contains(pg.body, `method="get" action="/dashboard/test/payments/`+pid+`/refund"`) {
		t.Fatalf("the refund form does not lead to the confirmation")
	}
	key := formValue(t, pg.body, "idempotency_key")
	c := f.get(f.a.viewer, "/payments/"+pid+"/refund?"+url.Values{"amount": {"1.5"}, "idempotency_key": {key}}.Encode())
	if c.code != http.StatusOK || !strings.Contains(c.body, "Refund KWD\u00a01.500 (KWD)?") || !strings.Contains(c.body, `id="confirm-refund"`) {
		t.Fatalf("confirmation %d:\n%s", c.code, c.body)
	}
	if got := formValue(t, c.body, "idempotency_key"); got != key {
		t.Errorf("the confirmation carries key %s, want the form's %s", got, key)
	}
	for _, bad := range []string{"", "abc", "11"} {
		if c := f.get(f.a.viewer, "/payments/"+pid+"/refund?amount="+url.QueryEscape(bad)); c.code != http.StatusBadRequest || strings.Contains(c.body, `id="confirm-refund"`) {
			t.Errorf("amount %q: %d, or a refund button", bad, c.code)
		}
	}
	a := f.post(f.a.viewer, "/payments/"+pid+"/refund", url.Values{"amount": {"1.5"}, "idempotency_key": {key}, "reason": {"damaged"}})
	if a.code != http.StatusSeeOther {
		t.Fatalf("refund: %d", a.code)
	}
	if pg := f.get(f.a.viewer, "/payments/"+pid); !strings.Contains(pg.body, "partly refunded") {
		t.Errorf("no partly refunded marker")
	}
}

// audited counts merchant a's audit entries of the action.
func (f *dataFixture) audited(action string) int {
	f.t.Helper()
	es, err := f.st.AuditLog(f.t.Context(), paygate.AuditQuery{MerchantID: f.a.merchantID})
	if err != nil {
		f.t.Fatal(err)
	}
	n := 0
	for _, e := range es {
		if e.Action == action {
			n++
		}
	}
	return n
}
