package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store/baseline"
)

var _ baseline.Store = (*Store)(nil)

// BaselinePayment performs the writes of one successful card payment
// (baseline.Writes) in one write transaction on the store's single
// writer connection: the statements CreatePayment with its reservation and
// the outcome's unit (Commit) run, with one commit (one WAL fsync at
// synchronous=FULL) instead of their three. The transaction is never
// grouped with others (groupcommit.go): the baseline is what the database
// does with one transaction per payment, without our batching.
func (s *Store) BaselinePayment(ctx context.Context, merchantID string, mode paygate.Mode, n int64) error {
	w := baseline.NewWrites(merchantID, mode, n, id.New(), id.New(), id.New(), time.Now())
	return s.soloTx(ctx, func(tx *sql.Tx) error {
		np := w.Payment
		np.Reservation = &w.Reservation
		if _, err := createPayment(ctx, tx, np); err != nil {
			return err
		}
		return transitionPayment(ctx, tx, w.Transition, []paygate.Event{w.Event}, &w.Done)
	})
}
