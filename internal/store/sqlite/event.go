package sqlite

import (
	"context"
	"database/sql"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store/codec"
)

// eventColumns are the columns of an event (one row mapping for both
// engines: codec.ScanEvent).
const eventColumns = codec.EventColumns

// insertEvents writes events to the outbox in the caller's transaction, in
// the order given.
func insertEvents(ctx context.Context, tx *sql.Tx, events []paygate.Event) error {
	for _, e := range events {
		payload := e.Payload
		if payload == nil {
			payload = []byte{}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO events (`+eventColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			e.ID, e.MerchantID, string(e.Mode), string(e.Type), e.PaymentID, e.RefundID, payload, micros(e.CreatedAt)); err != nil {
			return err
		}
	}
	return nil
}

// Events lists up to q.Limit events of (merchant, mode), oldest first
// (events of one instant in the order they were written), of one payment
// and its refunds when q.PaymentID is set (eventsByPaymentQuery). A limit
// that is not positive means no limit.
func (s *Store) Events(ctx context.Context, q paygate.EventQuery) ([]paygate.Event, error) {
	// The optional filters, after the merchant and the mode of either
	// query.
	var extra string
	var extraArgs []any
	if q.ID != "" {
		extra += ` AND id = ?`
		extraArgs = append(extraArgs, q.ID)
	}
	if !q.CreatedFrom.IsZero() {
		extra += ` AND created_at >= ?`
		extraArgs = append(extraArgs, micros(q.CreatedFrom))
	}
	if !q.CreatedBefore.IsZero() {
		extra += ` AND created_at < ?`
		extraArgs = append(extraArgs, micros(q.CreatedBefore))
	}
	query := `SELECT ` + eventColumns + ` FROM events WHERE merchant_id = ? AND mode = ?` + extra + ` ORDER BY created_at, seq LIMIT ?`
	args := append(append([]any{q.MerchantID, string(q.Mode)}, extraArgs...), sqlLimit(q.Limit))
	if q.PaymentID != "" {
		query = eventsOfPaymentSelect + extra + ` ORDER BY created_at, seq LIMIT ?`
		args = append(append([]any{q.PaymentID, q.MerchantID, string(q.Mode)}, extraArgs...), sqlLimit(q.Limit))
	}
	rows, err := s.read.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, translate(err)
	}
	return scanEvents(rows)
}

// scanEvents reads rows of eventColumns and closes them; an empty result
// is an empty slice.
func scanEvents(rows *sql.Rows) ([]paygate.Event, error) {
	defer rows.Close()
	events := []paygate.Event{}
	for rows.Next() {
		e, err := codec.ScanEvent(rows)
		if err != nil {
			return nil, translate(err)
		}
		events = append(events, e)
	}
	return events, translate(rows.Err())
}
