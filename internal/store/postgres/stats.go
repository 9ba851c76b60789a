package postgres

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Operator figures for the metrics (internal/metrics reads them at each
// scrape): they count, they never return a merchant's data.

// PoolStat returns the statistics of the connection pool.
func (s *Store) PoolStat() *pgxpool.Stat { return s.pool.Stat() }

// PendingDeliveries counts the webhook deliveries still pending, of every
// merchant, due now or later (the partial index of ClaimDeliveries holds
// exactly them).
func (s *Store) PendingDeliveries(ctx context.Context) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries WHERE status = 'pending'`).Scan(&n)
	return n, translate(err)
}
