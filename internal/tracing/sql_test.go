package tracing

import "testing"

func TestSummary(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, sql          string
		summary, op, table string
	}{
		{"Select", `SELECT id, status FROM payments WHERE id = $1 AND merchant_id = $2`, "SELECT payments", "SELECT", "payments"},
		{"Lowercase", "select x from Customers c join payments p on p.customer_id = c.id", "SELECT Customers", "SELECT", "Customers"},
		{"SelectNoTable", `SELECT set_config('synchronous_commit', 'off', true)`, "SELECT", "SELECT", ""},
		{"Show", "SHOW synchronous_commit", "SHOW", "SHOW", ""},
		{"Insert", "INSERT INTO sandbox_ledger (a, b) VALUES (@a, @b) ON CONFLICT (a) DO NOTHING", "INSERT sandbox_ledger", "INSERT", "sandbox_ledger"},
		{"Upsert", "INSERT INTO keys (k) VALUES (?) ON CONFLICT (k) DO UPDATE SET k = EXCLUDED.k", "INSERT keys", "INSERT", "keys"},
		{"Update", "UPDATE ONLY payments SET status = $1 WHERE id = $2", "UPDATE payments", "UPDATE", "payments"},
		{"Delete", "DELETE FROM idempotency_keys WHERE created_at < $1", "DELETE idempotency_keys", "DELETE", "idempotency_keys"},
		{"ForUpdate", "SELECT id FROM webhook_deliveries WHERE due FOR UPDATE SKIP LOCKED", "SELECT webhook_deliveries", "SELECT", "webhook_deliveries"},
		{"Subquery", "SELECT EXISTS (SELECT 1 FROM customers WHERE id = $1)", "SELECT customers", "SELECT", "customers"},
		{"QuotedIdentifier", `SELECT * FROM "Payment Log" WHERE x = 'FROM secrets'`, "SELECT Payment Log", "SELECT", "Payment Log"},
		{"Comments", "-- FROM nothing\nSELECT /* FROM nothing */ a FROM b", "SELECT b", "SELECT", "b"},
		{"TableFunction", "SELECT e.id FROM unnest(@ids::text[]) AS e(id)", "SELECT", "SELECT", ""},
		{"WriteInCTEs", `WITH existing AS (SELECT id FROM customers WHERE ext = @ext),
			inserted AS (INSERT INTO customers (id) SELECT @id WHERE NOT EXISTS (SELECT 1 FROM existing) RETURNING id),
			payment AS (INSERT INTO payments (id) SELECT @pid FROM inserted RETURNING customer_id),
			linked AS (UPDATE idempotency_keys SET payment_id = @pid WHERE EXISTS (SELECT 1 FROM payment))
			SELECT customer_id FROM payment`,
			"SELECT customers INSERT customers INSERT payments UPDATE idempotency_keys", "", ""},
		{"CTENamedAsTable", `WITH events AS (INSERT INTO events (id) SELECT x FROM unnest(@ids::text[]) AS e(x) RETURNING id)
			SELECT count(*) FROM events`, "INSERT events", "INSERT", "events"},
		{"MoreThanFour", "WITH a AS (UPDATE t1 SET x = 1), b AS (UPDATE t2 SET x = 1), c AS (UPDATE t3 SET x = 1), d AS (UPDATE t4 SET x = 1) UPDATE t5 SET x = 1",
			"UPDATE t1 UPDATE t2 UPDATE t3 UPDATE t4", "", ""},
		{"Empty", "", "", "", ""},
		{"Unterminated", "SELECT 'oops FROM x", "SELECT", "SELECT", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			summary, op, table := Summary(c.sql)
			if summary != c.summary || op != c.op || table != c.table {
				t.Errorf("Summary = %q, %q, %q; want %q, %q, %q", summary, op, table, c.summary, c.op, c.table)
			}
		})
	}
}
