package sqlite

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// TestDashboardListPlans checks that every filter combination of the
// dashboard's payment list reads the one index meant for it, in list order:
// no scan of the table and no sort of its rows, so a page costs the same
// with a million payments. The most selective filter picks the index
// (reference, customer, currency, status, plain list); a weaker index would
// read every payment of, say, a status to find one reference.
func TestDashboardListPlans(t *testing.T) {
	t.Parallel()
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "paygate.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	after := &paygate.PageCursor{CreatedAt: time.Now(), ID: "0195b4c2-0000-4000-8000-000000000000"}
	base := paygate.PaymentQuery{MerchantID: "m", Mode: paygate.ModeTest, After: after}
	failed := []paygate.PaymentStatus{paygate.PaymentFailed}
	several := []paygate.PaymentStatus{"failed", "voided", "captured"}
	dates := func(q *paygate.PaymentQuery) { q.CreatedFrom, q.CreatedBefore = time.Unix(1, 0), time.Now() }
	cases := []struct {
		name   string
		change func(q *paygate.PaymentQuery)
		index  string
	}{
		{"NoFilter", func(q *paygate.PaymentQuery) {}, "payments_list"},
		{"Dates", dates, "payments_list"},
		{"Status", func(q *paygate.PaymentQuery) { q.Statuses = failed }, "payments_list_status"},
		{"Statuses", func(q *paygate.PaymentQuery) { q.Statuses = several }, "payments_list_status"},
		{"StatusAndDates", func(q *paygate.PaymentQuery) { dates(q); q.Statuses = failed }, "payments_list_status"},
		{"Currency", func(q *paygate.PaymentQuery) { q.Currency = "JPY" }, "payments_currency"},
		{"CurrencyAndDates", func(q *paygate.PaymentQuery) { dates(q); q.Currency = "JPY" }, "payments_currency"},
		{"CurrencyAndStatus", func(q *paygate.PaymentQuery) { q.Currency, q.Statuses = "JPY", failed }, "payments_currency"},
		{"CurrencyAndStatuses", func(q *paygate.PaymentQuery) { q.Currency, q.Statuses = "JPY", several }, "payments_currency"},
		{"MerchantRef", func(q *paygate.PaymentQuery) { q.MerchantRef = "order-1" }, "payments_merchant_ref"},
		{"MerchantRefAndStatus", func(q *paygate.PaymentQuery) { q.MerchantRef, q.Statuses = "order-1", failed }, "payments_merchant_ref"},
		{"MerchantRefAndStatuses", func(q *paygate.PaymentQuery) { q.MerchantRef, q.Statuses = "order-1", several }, "payments_merchant_ref"},
		{"MerchantRefAndCurrency", func(q *paygate.PaymentQuery) { q.MerchantRef, q.Currency = "order-1", "EUR" }, "payments_merchant_ref"},
		{"MerchantRefAndCustomer", func(q *paygate.PaymentQuery) { q.MerchantRef, q.CustomerExternalID = "order-1", "cust-1" }, "payments_merchant_ref"},
		{"Customer", func(q *paygate.PaymentQuery) { q.CustomerID = "c" }, "payments_customer"},
		{"ExternalID", func(q *paygate.PaymentQuery) { q.CustomerExternalID = "cust-1" }, "payments_customer"},
		{"ExternalIDAndStatus", func(q *paygate.PaymentQuery) { q.CustomerExternalID, q.Statuses = "cust-1", failed }, "payments_customer"},
		{"ExternalIDAndStatuses", func(q *paygate.PaymentQuery) { q.CustomerExternalID, q.Statuses = "cust-1", several }, "payments_customer"},
		{"ExternalIDAndCurrencyAndDates", func(q *paygate.PaymentQuery) {
			dates(q)
			q.CustomerExternalID, q.Currency = "cust-1", "EUR"
		}, "payments_customer"},
		{"Last4", func(q *paygate.PaymentQuery) { q.CardLast4 = "4242" }, "payments_card_last4"},
		{"Last4AndStatusAndDates", func(q *paygate.PaymentQuery) { dates(q); q.CardLast4, q.Statuses = "4242", failed }, "payments_card_last4"},
		{"Last4AndCurrency", func(q *paygate.PaymentQuery) { q.CardLast4, q.Currency = "4242", "EUR" }, "payments_card_last4"},
		{"Everything", func(q *paygate.PaymentQuery) {
			dates(q)
			q.Statuses, q.Currency, q.MerchantRef, q.CustomerID, q.CustomerExternalID = several, "EUR", "order-1", "c", "cust-1"
		}, "payments_merchant_ref"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q := base
			c.change(&q)
			query, args := paymentListQuery(q)
			plan := explain(t, s, query, args)
			// Several statuses on the status index are one range each,
			// merged by a sort of at most a page per status.
			merged := c.index == "payments_list_status" && len(q.Statuses) > 1
			if strings.Contains(plan, "SCAN payments") || strings.Contains(plan, "TEMP B-TREE") && !merged {
				t.Errorf("plan of %s scans or sorts payments:\n%s", c.name, plan)
			}
			used := paymentIndexes(plan)
			if len(used) == 0 || slices.ContainsFunc(used, func(n string) bool { return n != c.index }) {
				t.Errorf("plan of %s reads %v, want only %s:\n%s", c.name, used, c.index, plan)
			}
			// The keyset cursor is part of the index range, not a
			// residual condition.
			if !strings.Contains(plan, "(created_at,id)<(?,?)") {
				t.Errorf("plan of %s does not seek to the cursor:\n%s", c.name, plan)
			}
		})
	}
}

// paymentIndexRE finds the payments indexes of a query plan.
var paymentIndexRE = regexp.MustCompile(`(?:SEARCH|SCAN) payments USING (?:COVERING )?INDEX (\w+)`)

// paymentIndexes lists the indexes of payments a plan reads, in order.
func paymentIndexes(plan string) []string {
	var out []string
	for _, m := range paymentIndexRE.FindAllStringSubmatch(plan, -1) {
		out = append(out, m[1])
	}
	return out
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
	plan := explain(t, s, eventsByPaymentQuery+` LIMIT ?`, []any{"p", "m", "test", -1})
	if !strings.Contains(plan, "USING INDEX events_payment") || strings.Contains(plan, "TEMP B-TREE") {
		t.Errorf("plan of the events of a payment:\n%s", plan)
	}
}

// TestDeliveryPlans checks that the delivery lists read only the rows they
// return: a mode's deliveries along webhook_deliveries_merchant, newest
// first without a sort; an event's, or a payment's, by their event index.
// Conditions that are always there but test whether their parameter is
// empty would read every delivery of the merchant and sort them.
func TestDeliveryPlans(t *testing.T) {
	t.Parallel()
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "paygate.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	for _, c := range []struct {
		name  string
		q     paygate.DeliveryQuery
		index string
		sort  bool // a sort of the few rows of one event
	}{
		{"Mode", paygate.DeliveryQuery{Mode: paygate.ModeTest, Limit: 50}, "webhook_deliveries_merchant", false},
		{"ModeAndStatus", paygate.DeliveryQuery{Mode: paygate.ModeTest, Status: paygate.DeliveryFailed, Limit: 50}, "webhook_deliveries_merchant", false},
		{"NoMode", paygate.DeliveryQuery{Limit: 50}, "webhook_deliveries_merchant", true},
		{"Event", paygate.DeliveryQuery{Mode: paygate.ModeTest, EventID: "e"}, "webhook_deliveries_event", true},
		{"EventAndStatus", paygate.DeliveryQuery{Mode: paygate.ModeLive, EventID: "e", Status: paygate.DeliveryPending}, "webhook_deliveries_event", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.q.MerchantID = "m"
			query, args := deliveryListQuery(c.q)
			plan := explain(t, s, query, args)
			if strings.Contains(plan, "SCAN webhook_deliveries") || !c.sort && strings.Contains(plan, "TEMP B-TREE") {
				t.Errorf("plan of %s scans or sorts deliveries:\n%s", c.name, plan)
			}
			for _, m := range deliveryIndexRE.FindAllStringSubmatch(plan, -1) {
				if m[1] != c.index {
					t.Errorf("plan of %s reads %s, want %s:\n%s", c.name, m[1], c.index, plan)
				}
			}
			if !strings.Contains(plan, "INDEX "+c.index) {
				t.Errorf("plan of %s does not read %s:\n%s", c.name, c.index, plan)
			}
		})
	}
	t.Run("Payment", func(t *testing.T) {
		query, args := deliveryListQuery(paygate.DeliveryQuery{MerchantID: "m", Mode: paygate.ModeTest, PaymentID: "p"})
		plan := explain(t, s, query, args)
		if !strings.Contains(plan, "USING INDEX events_payment") || !strings.Contains(plan, "USING INDEX webhook_deliveries_event") ||
			strings.Contains(plan, "webhook_deliveries_merchant") || strings.Contains(plan, "SCAN webhook_deliveries") {
			t.Errorf("plan of the deliveries of a payment:\n%s", plan)
		}
	})
}

var deliveryIndexRE = regexp.MustCompile(`(?:SEARCH|SCAN) webhook_deliveries USING (?:COVERING )?INDEX (\w+)`)

// TestPaymentStatsPlan checks that the overview reads only the payments of
// its range, by payments_list.
func TestPaymentStatsPlan(t *testing.T) {
	t.Parallel()
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "paygate.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	plan := explain(t, s, paymentStatsQuery, []any{microsPerPeriod, "CARD_DECLINED", "m", "test", int64(1), int64(2)})
	if !strings.Contains(plan, "SEARCH payments USING INDEX payments_list (merchant_id=? AND mode=? AND created_at>? AND created_at<?)") {
		t.Errorf("plan of PaymentStats:\n%s", plan)
	}
	// The Routing page's chart reads the last hour the same way.
	plan = explain(t, s, providerStatsQuery, []any{microsPerProviderPeriod, "m", "test", int64(1), int64(2)})
	if !strings.Contains(plan, "SEARCH payments USING INDEX payments_list (merchant_id=? AND mode=? AND created_at>? AND created_at<?)") {
		t.Errorf("plan of ProviderStats:\n%s", plan)
	}
}
