package dashboard

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// The search box finds payments by id, last 4, customer email and
// reference, saying which it searched by, within the viewer's merchant and
// mode, and keeps the filters around it.
func TestPaymentSearch(t *testing.T) {
	t.Parallel()
	f := newDataFixture(t)
	p1 := f.pay(f.a, cardOK, "10.50", "EUR", "cust-1", "order-1")
	f.clock.Add(time.Second)
	p2 := f.pay(f.a, cardDeclined, "20.00", "EUR", "cust-2", "order-2")
	f.clock.Add(time.Second)
	other := f.pay(f.b, cardOK, "10.50", "EUR", "cust-1", "order-1")
	addr := "Ada@Example.com"
	if _, err := f.st.UpsertCustomer(t.Context(), paygate.CustomerUpsert{MerchantID: f.a.merchantID, Mode: paygate.ModeTest, ExternalID: "cust-2", Email: &addr, Now: f.clock.Now()}); err != nil {
		t.Fatal(err)
	}
	last4 := func(number string) string { return number[len(number)-4:] }
	for _, tc := range []struct {
		name, q, kind string
		want          []string
	}{
		{"OK_ID", strings.ToUpper(p2), "payment id", []string{p2}},
		{"OK_IDOfAnotherMerchant", other, "payment id", nil},
		{"OK_Last4", last4(cardOK), "card last 4", []string{p1}},
		{"OK_Email", "ada@example.COM", "customer email", []string{p2}},
		{"OK_Reference", "order-1", "merchant reference", []string{p1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := f.get(f.a.viewer, "/payments?"+url.Values{"q": {tc.q}}.Encode())
			if a.code != http.StatusOK {
				t.Fatalf("status %d", a.code)
			}
			if got := paymentIDs(a.body); strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("payments %v, want %v", got, tc.want)
			}
			if !strings.Contains(a.body, "Searching by "+tc.kind+".") {
				t.Errorf("the page does not say it searched by %s", tc.kind)
			}
			if !strings.Contains(a.body, `href="/dashboard/test/payments.csv?q=`) {
				t.Errorf("the export link does not carry the search")
			}
		})
	}
	t.Run("OK_WithStatus", func(t *testing.T) {
		a := f.get(f.a.viewer, "/payments?q=order-2&status=captured")
		if got := paymentIDs(a.body); len(got) != 0 {
			t.Errorf("payments %v, want none", got)
		}
	})
	t.Run("ErrTwoReferences", func(t *testing.T) {
		a := f.get(f.a.viewer, "/payments?q=order-2&ref=order-1")
		if a.code != http.StatusBadRequest {
			t.Errorf("status %d", a.code)
		}
	})
	t.Run("ErrTooLong", func(t *testing.T) {
		a := f.get(f.a.viewer, "/payments?q="+strings.Repeat("x", 256))
		if a.code != http.StatusBadRequest {
			t.Errorf("status %d", a.code)
		}
	})
}
