package dashboard

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

const (
	cardOK       = "4242424242424242"
	cardDeclined = "4000000000000002"
)

func TestReadPaymentFilter(t *testing.T) {
	t.Parallel()
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("OK", func(t *testing.T) {
		q := url.Values{"status": {"captured", "failed"}, "from": {"2026-11-01"}, "to": {"2026-11-22"},
			"currency": {"eur"}, "ref": {" order-1 "}, "customer": {"cust-7"}}
		f, pq, errs := readPaymentFilter(q, berlin)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		// Days in the viewer's zone: Berlin is UTC+1 in November.
		if want := time.Date(2026, 10, 31, 23, 0, 0, 0, time.UTC); !pq.CreatedFrom.Equal(want) {
			t.Errorf("from %v, want %v", pq.CreatedFrom, want)
		}
		if want := time.Date(2026, 11, 22, 23, 0, 0, 0, time.UTC); !pq.CreatedBefore.Equal(want) {
			t.Errorf("before %v, want %v", pq.CreatedBefore, want)
		}
		if !slices.Equal(pq.Statuses, []paygate.PaymentStatus{"captured", "failed"}) || pq.Currency != "EUR" ||
			pq.MerchantRef != "order-1" || pq.CustomerExternalID != "cust-7" || pq.After != nil {
			t.Errorf("query %+v", pq)
		}
		if !f.filtered() || f.values().Encode() != "currency=EUR&customer=cust-7&from=2026-11-01&ref=order-1&status=captured&status=failed&to=2026-11-22" {
			t.Errorf("filter values %s", f.values().Encode())
		}
	})
	for name, q := range map[string]url.Values{
		"ErrBadDate":      {"from": {"22/11/2026"}},
		"ErrBadEndDate":   {"to": {"2026-02-30"}},
		"ErrReversed":     {"from": {"2026-11-22"}, "to": {"2026-11-01"}},
		"ErrStatus":       {"status": {"paid"}},
		"ErrCurrency":     {"currency": {"EURO"}},
		"ErrNotMoney":     {"currency": {"XAU"}},
		"ErrCursor":       {"after": {"yesterday,abc"}},
		"ErrCursorNoID":   {"after": {"2026-11-22T10:00:00Z"}},
		"ErrLongRef":      {"ref": {strings.Repeat("r", 256)}},
		"ErrLongCustomer": {"customer": {strings.Repeat("c", 256)}},
	} {
		t.Run(name, func(t *testing.T) {
			if _, _, errs := readPaymentFilter(q, berlin); len(errs) != 1 {
				t.Errorf("errors %q, want one", errs)
			}
		})
	}
}

func TestCursorRoundTrip(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 22, 10, 4, 5, 123456000, time.UTC)
	c, ok := parseCursor(formatCursor(at, "0190C8E4-7B1A-7C3D-8E2F-123456789ABC"))
	if !ok || !c.CreatedAt.Equal(at) || c.ID != "0190c8e4-7b1a-7c3d-8e2f-123456789abc" {
		t.Fatalf("cursor %+v %v", c, ok)
	}
}

func TestPaymentsList(t *testing.T) {
	t.Parallel()
	f := newDataFixture(t)
	day1 := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	f.clock.Set(day1)
	p1 := f.pay(f.a, cardOK, "10.50", "EUR", "cust-1", "order-1")
	p2 := f.pay(f.a, cardDeclined, "20.00", "EUR", "cust-2", "order-2")
	f.clock.Set(day1.AddDate(0, 0, 1))
	p3 := f.pay(f.a, cardOK, "7", "USD", "cust-1", "order-3")
	other := f.pay(f.b, cardOK, "10.50", "EUR", "cust-1", "order-1")

	list := func(t *testing.T, query string) []string {
		t.Helper()
		pg := f.get(f.a.viewer, "/payments?"+query)
		if pg.code != http.StatusOK {
			t.Fatalf("GET /payments?%s: %d\n%s", query, pg.code, pg.body)
		}
		return paymentIDs(pg.body)
	}
	for _, tc := range []struct {
		name, query string
		want        []string
	}{
		{"All", "", []string{p3, p2, p1}},
		{"Status", "status=failed", []string{p2}},
		{"Statuses", "status=failed&status=captured", []string{p3, p2, p1}},
		{"Currency", "currency=usd", []string{p3}},
		{"MerchantRef", "ref=order-1", []string{p1}},
		{"Customer", "customer=cust-1", []string{p3, p1}},
		{"From", "from=2026-11-21", []string{p3}},
		{"To", "to=2026-11-20", []string{p2, p1}},
		{"Range", "from=2026-11-20&to=2026-11-21", []string{p3, p2, p1}},
		{"Nothing", "from=2026-11-22", nil},
		{"Combined", "status=captured&currency=EUR&customer=cust-1", []string{p1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := list(t, tc.query); !slices.Equal(got, tc.want) {
				t.Errorf("payments %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("OtherMerchantNeverShown", func(t *testing.T) {
		if got := list(t, "ref=order-1"); slices.Contains(got, other) {
			t.Errorf("merchant a sees b's payment %s", other)
		}
	})
	t.Run("OtherModeNeverShown", func(t *testing.T) {
		pg := f.get(f.aLive.viewer, "/payments")
		if pg.code != http.StatusOK || len(paymentIDs(pg.body)) != 0 {
			t.Errorf("live mode shows test payments: %d %v", pg.code, paymentIDs(pg.body))
		}
	})
	t.Run("ErrBadDate", func(t *testing.T) {
		pg := f.get(f.a.viewer, "/payments?from=yesterday&ref=order-1")
		if pg.code != http.StatusBadRequest || !strings.Contains(pg.body, "The start date must be a date like 2026-11-22.") {
			t.Fatalf("bad date: %d\n%s", pg.code, pg.body)
		}
		// The form keeps what was typed.
		if !strings.Contains(pg.body, `value="yesterday"`) || !strings.Contains(pg.body, `value="order-1"`) {
			t.Errorf("the form lost the input")
		}
	})
	t.Run("Shows", func(t *testing.T) {
		pg := f.get(f.a.viewer, "/payments?ref=order-1")
		for _, want := range []string{"€10.50", `class="badge badge-captured"`, "Visa •••• 4242", "order-1"} {
			if !strings.Contains(pg.body, want) {
				t.Errorf("list does not show %q", want)
			}
		}
	})
}

func TestPaymentsPagination(t *testing.T) {
	t.Parallel()
	f := newDataFixture(t)
	var ids []string
	for i := range pageSize + 3 {
		ref := "even"
		if i%2 == 1 {
			ref = "odd"
		}
		ids = append(ids, f.pay(f.a, cardOK, "1.00", "EUR", "cust-p", ref))
		f.clock.Add(time.Millisecond)
	}
	slices.Reverse(ids) // newest first

	first := f.get(f.a.viewer, "/payments")
	got := paymentIDs(first.body)
	if !slices.Equal(got, ids[:pageSize]) {
		t.Fatalf("first page: %d payments, want the newest %d", len(got), pageSize)
	}
	if hrefOf(t, first.body, "← Newest") != "" {
		t.Errorf("the first page links to itself as Newest")
	}
	older := hrefOf(t, first.body, "Older →")
	if older == "" {
		t.Fatalf("no Older link")
	}
	u, err := url.Parse(older)
	if err != nil {
		t.Fatal(err)
	}
	second := f.get(f.a.viewer, strings.TrimPrefix(u.Path, "/dashboard/test")+"?"+u.RawQuery)
	if got := paymentIDs(second.body); !slices.Equal(got, ids[pageSize:]) {
		t.Fatalf("second page %v, want %v", got, ids[pageSize:])
	}
	if hrefOf(t, second.body, "Older →") != "" {
		t.Errorf("the last page has an Older link")
	}
	if got := hrefOf(t, second.body, "← Newest"); got != "/dashboard/test/payments" {
		t.Errorf("Newest link %q", got)
	}

	// The filters travel with the page links.
	var odd []string
	for _, pid := range ids {
		p, err := f.st.PaymentByID(context.Background(), f.a.merchantID, paygate.ModeTest, pid)
		if err != nil {
			t.Fatal(err)
		}
		if p.MerchantRef == "odd" {
			odd = append(odd, pid)
		}
	}
	pg := f.get(f.a.viewer, "/payments?ref=odd")
	if got := paymentIDs(pg.body); !slices.Equal(got, odd) || hrefOf(t, pg.body, "Older →") != "" {
		t.Errorf("filtered list %d payments, want %d, no Older link", len(got), len(odd))
	}
}
