package postgres

import (
	"fmt"
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
	// authorized; some in live mode and some of another merchant.
	_, err := s.pool.Exec(ctx, `
		INSERT INTO customers (id, merchant_id, mode, external_id, email, created_at, updated_at)
		SELECT 'c-' || i, $1, 'test', 'cust-' || i, 'cust' || i || '@example.com', $2, $2
		FROM generate_series(1, 20000) AS i`, f.merchant.ID, epoch)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.pool.Exec(ctx, `
		INSERT INTO payments (id, merchant_id, mode, customer_id, status, amount, currency, amount_text,
			method, error_code, lease_until, created_at, updated_at)
		SELECT 'p-' || lpad(i::text, 7, '0'),
			CASE WHEN i % 50 = 0 THEN $3 ELSE $1 END,
			CASE WHEN i % 40 = 0 THEN 'live' ELSE 'test' END,
			'c-' || (i % 1000 + 1),
			CASE WHEN i % 100 < 90 THEN 'captured' WHEN i % 100 < 96 THEN 'failed' ELSE 'authorized' END,
			1000 + i % 500, CASE WHEN i % 3 = 0 THEN 'USD' ELSE 'EUR' END, '10.00', 'card',
			CASE WHEN i % 100 BETWEEN 90 AND 95 THEN 'CARD_DECLINED' END,
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

	cases := map[string]paygate.PaymentQuery{
		"Status":   {Statuses: []paygate.PaymentStatus{paygate.PaymentFailed}},
		"Statuses": {Statuses: []paygate.PaymentStatus{paygate.PaymentFailed, paygate.PaymentAuthorized}},
		"NoFilter": {},
		"Dates":    {CreatedFrom: epoch.Add(time.Hour), CreatedBefore: epoch.Add(20 * time.Hour)},
		"Currency": {Currency: "USD", Statuses: []paygate.PaymentStatus{paygate.PaymentCaptured}},
		"Customer": {CustomerExternalID: "cust-17"},
	}
	for name, q := range cases {
		t.Run(name, func(t *testing.T) {
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
			if len(second) != 50 || second[0].ID == last.ID || second[0].CreatedAt.After(last.CreatedAt) {
				t.Fatalf("second page: %d payments starting at %+v after %s", len(second), second[0].CreatedAt, last.ID)
			}
			query, args := paymentListQuery(q)
			for _, mode := range []string{"auto", "force_generic_plan"} {
				plan := explainPlan(t, s, mode, query, args)
				if strings.Contains(plan, "Seq Scan on payments") || !strings.Contains(plan, "Index") {
					t.Errorf("%s plan (%s) of page 2 does not read an index of payments:\n%s", name, mode, plan)
				}
				if strings.Contains(plan, "Bitmap Heap Scan on payments") {
					t.Errorf("%s plan (%s) of page 2 reads every match before sorting:\n%s", name, mode, plan)
				}
			}
		})
	}
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
		case int:
			params[i] = fmt.Sprint(v)
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
