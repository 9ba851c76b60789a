package sqlite

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// TestDashboardListPlans checks that the dashboard's payment lists read an
// index in list order: no scan of the table and no sort of its rows, so a
// page costs the same with a million payments.
func TestDashboardListPlans(t *testing.T) {
	t.Parallel()
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "paygate.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	after := &paygate.PageCursor{CreatedAt: time.Now(), ID: "0195b4c2-0000-4000-8000-000000000000"}
	base := paygate.PaymentQuery{MerchantID: "m", Mode: paygate.ModeTest, After: after}
	cases := map[string]func(q *paygate.PaymentQuery){
		"NoFilter":   func(q *paygate.PaymentQuery) {},
		"Status":     func(q *paygate.PaymentQuery) { q.Statuses = []paygate.PaymentStatus{paygate.PaymentFailed} },
		"Statuses":   func(q *paygate.PaymentQuery) { q.Statuses = []paygate.PaymentStatus{"failed", "voided", "captured"} },
		"Dates":      func(q *paygate.PaymentQuery) { q.CreatedFrom, q.CreatedBefore = time.Unix(1, 0), time.Now() },
		"Currency":   func(q *paygate.PaymentQuery) { q.Currency = "EUR" },
		"Customer":   func(q *paygate.PaymentQuery) { q.CustomerID = "c" },
		"ExternalID": func(q *paygate.PaymentQuery) { q.CustomerExternalID = "cust-1" },
		"StatusAndCurrency": func(q *paygate.PaymentQuery) {
			q.Statuses, q.Currency = []paygate.PaymentStatus{paygate.PaymentCaptured}, "EUR"
		},
	}
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			q := base
			change(&q)
			query, args := paymentListQuery(q)
			plan := explain(t, s, query, args)
			if strings.Contains(plan, "SCAN payments") || strings.Contains(plan, "TEMP B-TREE") && len(q.Statuses) < 2 {
				t.Errorf("plan of %s scans or sorts payments:\n%s", name, plan)
			}
			if !strings.Contains(plan, "USING INDEX payments_") {
				t.Errorf("plan of %s uses no payments index:\n%s", name, plan)
			}
		})
	}
}

func explain(t *testing.T, s *Store, query string, args []any) string {
	t.Helper()
	rows, err := s.read.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		b.WriteString(detail + "\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestDashboardSearchPlans checks that the customer search reads indexes.
func TestDashboardSearchPlans(t *testing.T) {
	t.Parallel()
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "paygate.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	after := &paygate.PageCursor{CreatedAt: time.Now(), ID: "0195b4c2-0000-4000-8000-000000000000"}
	for _, text := range []string{"", "cust-42", "ada@example.com"} {
		query, args := customerSearchQuery(paygate.CustomerQuery{MerchantID: "m", Mode: paygate.ModeTest, Text: text, After: after})
		plan := explain(t, s, query, args)
		if strings.Contains(plan, "SCAN customers") {
			t.Errorf("plan of a search for %q scans customers:\n%s", text, plan)
		}
		// A search reads the email index and the external id range, not
		// the list order (which would read every customer to find one).
		if text != "" && (!strings.Contains(plan, "USING INDEX customers_email") || !strings.Contains(plan, "external_id>")) {
			t.Errorf("plan of a search for %q does not read the email and external id indexes:\n%s", text, plan)
		}
	}
}

// TestDashboardEventsPlan checks that a payment's events are read by their
// own index, in order.
func TestDashboardEventsPlan(t *testing.T) {
	t.Parallel()
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "paygate.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	plan := explain(t, s, eventsByPaymentQuery, []any{"p", "m", "test"})
	if !strings.Contains(plan, "USING INDEX events_payment") || strings.Contains(plan, "TEMP B-TREE") {
		t.Errorf("plan of EventsByPayment:\n%s", plan)
	}
}
