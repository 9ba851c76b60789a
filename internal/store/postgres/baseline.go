package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store/baseline"
)

var _ baseline.Store = (*Store)(nil)

// BaselinePayment performs the writes of one successful card payment
// (baseline.Writes) in one transaction: the statements the gateway
// sends for them (the idempotency reservation, createReservedPayment,
// transitionPayment), pipelined in one batch, which PostgreSQL runs as one
// implicit transaction in one round trip. That is the fewest round trips and
// commits these writes can take, so the gateway's rate over this one is its
// share of the database's limit.
func (s *Store) BaselinePayment(ctx context.Context, merchantID string, mode paygate.Mode, n int64) error {
	w := baseline.NewWrites(merchantID, mode, n, id.New(), id.New(), id.New(), time.Now())
	_, createArgs, err := createPaymentArgs(w.Payment)
	if err != nil {
		return err
	}
	moveArgs := transitionArgs(w.Transition, []paygate.Event{w.Event}, &w.Done)
	var moved, exists bool
	b := &pgx.Batch{}
	b.Queue(reserveIdempotency, reserveArgs(w.Reservation, w.Payment.Payment.ID, nil))
	b.Queue(createReservedPayment, createArgs)
	b.Queue(transitionPayment, moveArgs).QueryRow(func(row pgx.Row) error {
		return row.Scan(&moved, &exists)
	})
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return translate(err)
	}
	if !moved {
		return fmt.Errorf("postgres: baseline payment %d was not inserted", n)
	}
	return nil
}
