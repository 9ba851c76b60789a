package postgres

import (
	"strings"
	"testing"
)

// TestLookupsByKeyWithoutStatistics checks the plans of the payment path's
// lookups by primary key and by customer external id on tables that were
// never analyzed (as on a database with autovacuum off) and hold one
// merchant's payments, 20 and then 20,000: the generic plan, which a cached
// prepared statement ends up with (and keeps, on a connection, until the
// table's statistics change: never, without autovacuum), must find the
// payment through its primary key and the customer through all three
// columns of an index, not walk the merchant's entries of another index.
func TestLookupsByKeyWithoutStatistics(t *testing.T) {
	s, _ := openTest(t)
	f := seedMerchant(t, s)
	_, err := s.pool.Exec(t.Context(), `
		INSERT INTO customers (id, merchant_id, mode, external_id, created_at, updated_at)
		SELECT 'c-' || i, $1, 'test', 'cust-' || i, $2, $2 FROM generate_series(1, 1000) AS i`, f.merchant.ID, epoch)
	if err != nil {
		t.Fatal(err)
	}
	for _, rows := range []int{20, 20000} {
		_, err = s.pool.Exec(t.Context(), `
			INSERT INTO payments (id, merchant_id, mode, customer_id, status, amount, currency, amount_text,
				method, lease_until, created_at, updated_at)
			SELECT 'p-' || i, $1, 'test', 'c-' || (i % 1000 + 1), 'captured', 1000, 'EUR', '10.00', 'card',
				$2, $2::timestamptz + i * interval '1 second', $2
			FROM generate_series((SELECT count(*) FROM payments) + 1, $3) AS i`, f.merchant.ID, epoch, rows)
		if err != nil {
			t.Fatal(err)
		}
		checkLookupPlans(t, s, rows)
	}
}

func checkLookupPlans(t *testing.T, s *Store, rows int) {
	t.Helper()
	for name, q := range map[string]struct {
		sql        string
		positional int // arguments of a query with $1 to $n
	}{
		"transitionPayment":     {transitionPayment, 0},
		"transitionInUnit":      {transitionInUnit, 0},
		"paymentByID":           {paymentByID, 3},
		"paymentByKeyHash":      {paymentByKeyHash, 2},
		"createReservedPayment": {createReservedPayment, 0},
	} {
		r, err := rewrite(q.sql)
		if err != nil {
			t.Fatal(err)
		}
		n := len(r.names)
		if n == 0 {
			n = q.positional
		}
		plan := explainPlan(t, s, "force_generic_plan", r.sql, make([]any, n))
		for _, idx := range pgPaymentIndexes(plan) {
			if idx != "payments_pkey" {
				t.Errorf("%d payments: %s reads payments through %s:\n%s", rows, name, idx, plan)
			}
		}
		if strings.Contains(plan, "Filter: (external_id") {
			t.Errorf("%d payments: %s filters customers by external id outside an index:\n%s", rows, name, plan)
		}
	}
}
