package postgres

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// TestDashboardListUsesIndexes fills one merchant with 200,000 payments and
// 20,000 customers and checks that the dashboard's payment list and
// customer search, on their second page, read indexes (no sequential scan),
// both as a custom plan and as the generic plan a cached prepared statement
// ends up with.
func TestDashboardListUsesIndexes(t *testing.T) {
	if testing.Short() {
		t.Skip("inserts 200,000 payments")
	}
	s, _ := openTest(t)
	ctx := t.Context()
	f := seedMerchant(t, s)
	other := seedMerchant(t, s)
	const n = 200_000
	start := time.Now()
	// 20,000 customers; payments of the first 1,000 of them, two per
	// second (equal created_at in pairs), 90% captured, 6% failed, 4%
	// authorized; some in live mode and some of another merchant. One in
	// a thousand is in JPY (the rest a third USD, two thirds EUR); each
	// has its own merchant reference but for one shared by one in a
	// thousand.
	_, err := s.pool.Exec(ctx, `
		INSERT INTO customers (id, merchant_id, mode, external_id, email, created_at, updated_at)
		SELECT 'c-' || i, $1, 'test', 'cust-' || i, 'cust' || i || '@example.com', $2, $2
		FROM generate_series(1, 20000) AS i`, f.merchant.ID, epoch)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.pool.Exec(ctx, `
		INSERT INTO payments (id, merchant_id, mode, customer_id, status, amount, currency, amount_text,
			method, error_code, merchant_ref, lease_until, created_at, updated_at)
		SELECT 'p-' || lpad(i::text, 7, '0'),
			CASE WHEN i % 50 = 0 THEN $3 ELSE $1 END,
			CASE WHEN i % 40 = 0 THEN 'live' ELSE 'test' END,
			'c-' || (i % 1000 + 1),
			CASE WHEN i % 100 < 90 THEN 'captured' WHEN i % 100 < 96 THEN 'failed' ELSE 'authorized' END,
			1000 + i % 500, CASE WHEN i % 1000 = 1 THEN 'JPY' WHEN i % 3 = 0 THEN 'USD' ELSE 'EUR' END, '10.00', 'card',
			CASE WHEN i % 100 BETWEEN 90 AND 95 THEN 'CARD_DECLINED' ELSE '' END,
			CASE WHEN i % 1000 = 3 THEN 'order-shared' ELSE 'order-' || i END,
			$2::timestamptz, $2::timestamptz + (i / 2) * interval '1 second', $2::timestamptz + (i / 2) * interval '1 second'
		FROM generate_series(1, $4::int) AS i`, f.merchant.ID, epoch, other.merchant.ID, n)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `ANALYZE payments; ANALYZE customers`); err != nil {
		t.Fatal(err)
	}
	t.Logf("inserted %d payments in %v", n, time.Since(start).Round(time.Millisecond))

	searches := map[string]paygate.CustomerQuery{
		"SearchPrefix": {Text: "cust-4242"},
		"SearchEmail":  {Text: "CUST77@example.com"},
		"SearchAll":    {},
	}
	for name, q := range searches {
		t.Run(name, func(t *testing.T) {
			q.MerchantID, q.Mode, q.Limit = f.merchant.ID, paygate.ModeTest, 5
			page, err := s.SearchCustomers(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) == 0 {
				t.Fatal("found no customer")
			}
			last := page[len(page)-1]
			q.After = &paygate.PageCursor{CreatedAt: last.CreatedAt, ID: last.ID}
			query, args := customerSearchQuery(q)
			for _, mode := range []string{"auto", "force_generic_plan"} {
				if plan := explainPlan(t, s, mode, query, args); strings.Contains(plan, "Seq Scan on customers") {
					t.Errorf("%s plan (%s) scans every customer:\n%s", name, mode, plan)
				}
			}
		})
	}

	// Deliveries: an event and a delivery for each of 50,000 payments.
	_, err = s.pool.Exec(ctx, `
		INSERT INTO events (id, merchant_id, mode, type, payment_id, payload, created_at)
		SELECT 'e-' || p.id, p.merchant_id, p.mode, 'payment.captured', p.id, '\x7b7d'::bytea, p.created_at
		FROM payments p WHERE p.id <= 'p-0050000';
		INSERT INTO webhook_deliveries (id, event_id, merchant_id, mode, event_type, status, next_attempt_at, created_at, updated_at)
		SELECT 'd-' || e.id, e.id, e.merchant_id, e.mode, e.type,
			CASE WHEN e.seq % 10 = 0 THEN 'failed' ELSE 'succeeded' END, e.created_at, e.created_at, e.created_at
		FROM events e WHERE e.id LIKE 'e-p-%';
		ANALYZE events; ANALYZE webhook_deliveries`)
	if err != nil {
		t.Fatal(err)
	}
	deliveryCases := []struct {
		name  string
		q     paygate.DeliveryQuery
		index string
	}{
		{"DeliveriesOfMode", paygate.DeliveryQuery{Mode: paygate.ModeTest, Limit: 50}, "webhook_deliveries_merchant_idx"},
		{"DeliveriesOfModeAndStatus", paygate.DeliveryQuery{Mode: paygate.ModeTest, Status: paygate.DeliveryFailed, Limit: 50}, "webhook_deliveries_merchant_idx"},
		{"DeliveriesOfBothModes", paygate.DeliveryQuery{Limit: 50}, "webhook_deliveries_merchant_idx"},
		{"DeliveriesOfEvent", paygate.DeliveryQuery{Mode: paygate.ModeTest, EventID: "e-p-0000017"}, "webhook_deliveries_event_idx"},
		{"DeliveriesOfEventAnyMode", paygate.DeliveryQuery{EventID: "e-p-0000017", Status: paygate.DeliverySucceeded}, "webhook_deliveries_event_idx"},
	}
	for _, c := range deliveryCases {
		t.Run(c.name, func(t *testing.T) {
			c.q.MerchantID = f.merchant.ID
			ds, err := s.Deliveries(ctx, c.q)
			if err != nil {
				t.Fatal(err)
			}
			if len(ds) == 0 {
				t.Fatal("no deliveries")
			}
			query, args := deliveryListQuery(c.q)
			for _, mode := range []string{"auto", "force_generic_plan"} {
				plan := explainPlan(t, s, mode, query, args)
				used := regexp.MustCompile(`Index Scan(?: Backward)? using (\w+) on webhook_deliveries`).FindAllStringSubmatch(plan, -1)
				if strings.Contains(plan, "Seq Scan on webhook_deliveries") || len(used) == 0 {
					t.Errorf("%s plan (%s) does not read an index of deliveries:\n%s", c.name, mode, plan)
				}
				// A mode's deliveries are read in list order, up to the
				// limit; only an event's few are sorted.
				if c.q.EventID == "" && strings.Contains(plan, "Sort  (") {
					t.Errorf("%s plan (%s) sorts deliveries:\n%s", c.name, mode, plan)
				}
				for _, u := range used {
					if u[1] != c.index {
						t.Errorf("%s plan (%s) reads %s, want %s:\n%s", c.name, mode, u[1], c.index, plan)
					}
				}
			}
		})
	}
	t.Run("DeliveriesOfPayment", func(t *testing.T) {
		q := paygate.DeliveryQuery{MerchantID: f.merchant.ID, Mode: paygate.ModeTest, PaymentID: "p-0000017"}
		ds, err := s.Deliveries(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) != 1 {
			t.Fatalf("%d deliveries of the payment, want 1", len(ds))
		}
		for _, mode := range []string{"auto", "force_generic_plan"} {
			query, args := deliveryListQuery(q)
			plan := explainPlan(t, s, mode, query, args)
			if strings.Contains(plan, "Seq Scan") || !strings.Contains(plan, "events_payment_idx") ||
				!strings.Contains(plan, "webhook_deliveries_event_idx") {
				t.Errorf("DeliveriesOfPayment plan (%s):\n%s", mode, plan)
			}
		}
	})

	// The overview reads its 30 days of payments by payments_list_idx.
	t.Run("PaymentStats", func(t *testing.T) {
		args := paymentStatsArgs(f.merchant.ID, paygate.ModeTest, epoch.Add(24*time.Hour), epoch.Add(48*time.Hour))
		stats, err := s.PaymentStats(ctx, args[2].(string), paygate.ModeTest, args[4].(time.Time), args[5].(time.Time))
		if err != nil {
			t.Fatal(err)
		}
		if len(stats) == 0 {
			t.Fatal("no statistics")
		}
		for _, mode := range []string{"auto", "force_generic_plan"} {
			plan := explainPlan(t, s, mode, paymentStatsQuery, args)
			if used := pgPaymentIndexes(plan); strings.Contains(plan, "Seq Scan on payments") ||
				len(used) == 0 || slices.ContainsFunc(used, func(n string) bool { return n != "payments_list_idx" }) {
				t.Errorf("PaymentStats plan (%s) does not read payments_list_idx only:\n%s", mode, plan)
			}
		}
	})

	// The Routing page's chart reads its hour of payments the same way.
	t.Run("ProviderStats", func(t *testing.T) {
		args := providerStatsArgs(f.merchant.ID, paygate.ModeTest, epoch.Add(24*time.Hour), epoch.Add(25*time.Hour))
		if _, err := s.ProviderStats(ctx, f.merchant.ID, paygate.ModeTest, args[3].(time.Time), args[4].(time.Time)); err != nil {
			t.Fatal(err)
		}
		for _, mode := range []string{"auto", "force_generic_plan"} {
			// It filters answered statuses too, so the planner may take
			// the (merchant, mode, status, created_at) index instead: both
			// bound the read to the merchant, mode and hour.
			plan := explainPlan(t, s, mode, providerStatsQuery, args)
			if used := pgPaymentIndexes(plan); strings.Contains(plan, "Seq Scan on payments") ||
				len(used) == 0 || slices.ContainsFunc(used, func(n string) bool { return n != "payments_list_idx" && n != "payments_list_status_idx" }) {
				t.Errorf("ProviderStats plan (%s) reads neither payments_list_idx nor payments_list_status_idx only:\n%s", mode, plan)
			}
		}
	})

	// Each combination reads the index of its most selective filter
	// (reference, customer, currency, status, plain list), whatever the
	// statistics say: another index would read, say, every captured
	// payment to find a rare currency.
	dates := func(q paygate.PaymentQuery) paygate.PaymentQuery {
		q.CreatedFrom, q.CreatedBefore = epoch.Add(time.Hour), epoch.Add(20*time.Hour)
		return q
	}
	captured := []paygate.PaymentStatus{paygate.PaymentCaptured}
	failed := []paygate.PaymentStatus{paygate.PaymentFailed}
	several := []paygate.PaymentStatus{paygate.PaymentFailed, paygate.PaymentAuthorized, paygate.PaymentCaptured}
	cases := []struct {
		name  string
		q     paygate.PaymentQuery
		index string
	}{
		{"NoFilter", paygate.PaymentQuery{}, "payments_list_idx"},
		{"Dates", dates(paygate.PaymentQuery{}), "payments_list_idx"},
		{"Status", paygate.PaymentQuery{Statuses: failed}, "payments_list_status_idx"},
		{"Statuses", paygate.PaymentQuery{Statuses: several[:2]}, "payments_list_status_idx"},
		{"StatusAndDates", dates(paygate.PaymentQuery{Statuses: failed}), "payments_list_status_idx"},
		{"Currency", paygate.PaymentQuery{Currency: "JPY"}, "payments_currency_idx"},
		{"CurrencyAndDates", dates(paygate.PaymentQuery{Currency: "USD"}), "payments_currency_idx"},
		{"CurrencyAndStatus", paygate.PaymentQuery{Currency: "JPY", Statuses: captured}, "payments_currency_idx"},
		{"CommonCurrencyAndStatus", paygate.PaymentQuery{Currency: "USD", Statuses: failed}, "payments_currency_idx"},
		{"CurrencyAndStatuses", paygate.PaymentQuery{Currency: "JPY", Statuses: several}, "payments_currency_idx"},
		{"MerchantRef", paygate.PaymentQuery{MerchantRef: "order-shared"}, "payments_merchant_ref_idx"},
		{"MerchantRefAndStatus", paygate.PaymentQuery{MerchantRef: "order-shared", Statuses: captured}, "payments_merchant_ref_idx"},
		{"MerchantRefAndStatuses", paygate.PaymentQuery{MerchantRef: "order-shared", Statuses: several}, "payments_merchant_ref_idx"},
		{"MerchantRefAndCurrency", paygate.PaymentQuery{MerchantRef: "order-shared", Currency: "EUR"}, "payments_merchant_ref_idx"},
		{"MerchantRefAndCustomer", paygate.PaymentQuery{MerchantRef: "order-shared", CustomerExternalID: "cust-4"}, "payments_merchant_ref_idx"},
		{"Customer", paygate.PaymentQuery{CustomerExternalID: "cust-17"}, "payments_customer_idx"},
		{"CustomerID", paygate.PaymentQuery{CustomerID: "c-17"}, "payments_customer_idx"},
		{"CustomerAndStatus", paygate.PaymentQuery{CustomerExternalID: "cust-17", Statuses: captured}, "payments_customer_idx"},
		{"CustomerAndStatuses", paygate.PaymentQuery{CustomerExternalID: "cust-17", Statuses: several}, "payments_customer_idx"},
		{"CustomerAndCurrency", paygate.PaymentQuery{CustomerExternalID: "cust-17", Currency: "EUR"}, "payments_customer_idx"},
		{"Everything", dates(paygate.PaymentQuery{
			MerchantRef: "order-shared", CustomerExternalID: "cust-4", Currency: "EUR", Statuses: several,
		}), "payments_merchant_ref_idx"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q := c.q
			q.MerchantID, q.Mode, q.Limit = f.merchant.ID, paygate.ModeTest, 50
			first, err := s.ListPayments(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			if len(first) != 50 {
				t.Fatalf("first page: %d payments, want 50", len(first))
			}
			last := first[len(first)-1]
			q.After = &paygate.PageCursor{CreatedAt: last.CreatedAt, ID: last.ID}
			second, err := s.ListPayments(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			if len(second) == 0 || second[0].ID == last.ID || second[0].CreatedAt.After(last.CreatedAt) {
				t.Fatalf("second page: %d payments after %s", len(second), last.ID)
			}
			query, args := paymentListQuery(q)
			for _, mode := range []string{"auto", "force_generic_plan"} {
				plan := explainPlan(t, s, mode, query, args)
				if strings.Contains(plan, "Seq Scan on payments") {
					t.Errorf("%s plan (%s) of page 2 scans every payment:\n%s", c.name, mode, plan)
				}
				// Without residual conditions the index range is read
				// in list order and stops at the page's end. With them,
				// the planner may read the range and sort when it
				// expects fewer matches than a page; only the range of
				// the right index, though.
				if !strings.Contains(query, "IS TRUE") &&
					(strings.Contains(plan, "Bitmap Heap Scan on payments") || strings.Contains(plan, "Sort  (")) {
					t.Errorf("%s plan (%s) of page 2 reads every match before sorting:\n%s", c.name, mode, plan)
				}
				used := pgPaymentIndexes(plan)
				if len(used) == 0 || slices.ContainsFunc(used, func(n string) bool { return n != c.index }) {
					t.Errorf("%s plan (%s) of page 2 reads %v, want only %s:\n%s", c.name, mode, used, c.index, plan)
				}
			}
		})
	}
}

// pgPaymentIndexRE finds the payments indexes of a plan.
var pgPaymentIndexRE = regexp.MustCompile(`Index (?:Only )?Scan(?: Backward)? using (\w+) on payments|Bitmap Index Scan on (payments_\w+)`)

// pgPaymentIndexes lists the indexes of payments a plan reads, in order.
func pgPaymentIndexes(plan string) []string {
	var out []string
	for _, m := range pgPaymentIndexRE.FindAllStringSubmatch(plan, -1) {
		out = append(out, m[1]+m[2])
	}
	return out
}

// explainPlan returns the plan of query under the plan_cache_mode, run in
// one transaction so that the setting stays local.
func explainPlan(t *testing.T, s *Store, cacheMode, query string, args []any) string {
	t.Helper()
	tx, err := s.pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(t.Context()) }()
	if _, err := tx.Exec(t.Context(), `SELECT set_config('plan_cache_mode', $1, true)`, cacheMode); err != nil {
		t.Fatal(err)
	}
	// A prepared statement, so that force_generic_plan takes effect (an
	// unnamed statement is always planned with its parameters' values).
	if err := tx.Conn().PgConn().Exec(t.Context(), "PREPARE dashboard_list AS "+query).Close(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Conn().PgConn().Exec(t.Context(), "DEALLOCATE dashboard_list").Close() }()
	// EXECUTE takes values, not parameters: the test's own arguments as
	// literals.
	params := make([]string, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case string:
			params[i] = "'" + strings.ReplaceAll(v, "'", "''") + "'"
		case time.Time:
			params[i] = "'" + v.Format(time.RFC3339Nano) + "'::timestamptz"
		case int, int64:
			params[i] = fmt.Sprint(v)
		case nil:
			params[i] = "NULL"
		default:
			t.Fatalf("argument %d of type %T", i+1, a)
		}
	}
	rows, err := tx.Query(t.Context(), "EXPLAIN EXECUTE dashboard_list("+strings.Join(params, ", ")+")")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		b.WriteString(line + "\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
