package sqlite

import (
	"context"
	"database/sql"
)

// Operator figures for the metrics (internal/metrics reads them at each
// scrape): they count, they never return a merchant's data.

// DBStats returns the statistics of the pool of readers and of the
// writer's connection.
func (s *Store) DBStats() (read, write sql.DBStats) {
	return s.read.Stats(), s.write.Stats()
}

// PendingDeliveries counts the webhook deliveries still pending, of every
// merchant, due now or later (the partial index of ClaimDeliveries holds
// exactly them).
func (s *Store) PendingDeliveries(ctx context.Context) (int64, error) {
	var n int64
	err := s.read.QueryRowContext(ctx, `SELECT count(*) FROM webhook_deliveries WHERE status = 'pending'`).Scan(&n)
	return n, translate(err)
}
