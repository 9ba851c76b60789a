package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store/codec"
)

// insertEvents is a CTE body that inserts the events passed as parallel
// arrays (see addEventArgs), in their order. The statement that embeds it
// adds its condition and "ORDER BY e.ord".
const insertEvents = `
		INSERT INTO events (id, merchant_id, mode, type, payment_id, refund_id, payload, created_at)
		SELECT e.id, e.merchant_id, e.mode, e.type, e.payment_id, e.refund_id, e.payload, e.created_at
		FROM unnest(@event_ids::text[], @event_merchant_ids::text[], @event_modes::text[],
			@event_types::text[], @event_payment_ids::text[], @event_refund_ids::text[],
			@event_payloads::bytea[], @event_created_at::timestamptz[])
			WITH ORDINALITY AS e(id, merchant_id, mode, type, payment_id, refund_id, payload, created_at, ord)`

// addEventArgs adds the arguments of insertEvents.
func addEventArgs(args namedArgs, events []paygate.Event) {
	n := len(events)
	ids, merchants, modes, types := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	payments, refunds := make([]string, n), make([]string, n)
	payloads, created := make([][]byte, n), make([]time.Time, n)
	for i, e := range events {
		ids[i], merchants[i], modes[i], types[i] = e.ID, e.MerchantID, string(e.Mode), string(e.Type)
		payments[i], refunds[i] = e.PaymentID, e.RefundID
		payloads[i], created[i] = nonNil(e.Payload), e.CreatedAt
	}
	args["event_ids"], args["event_merchant_ids"], args["event_modes"], args["event_types"] = ids, merchants, modes, types
	args["event_payment_ids"], args["event_refund_ids"] = payments, refunds
	args["event_payloads"], args["event_created_at"] = payloads, created
}

// completeIdempotency is a CTE body that stores the answer of an in-flight
// idempotency key (see addCompletionArgs). The statement that embeds it adds
// its condition with AND.
const completeIdempotency = `
		UPDATE idempotency_keys SET state = 'complete', status_code = @done_status_code, body = @done_body
		WHERE merchant_id = @done_merchant_id AND mode = @done_mode AND key = @done_key
			AND state = 'in_flight'`

// addCompletionArgs adds the arguments of completeIdempotency; a nil done
// matches no record.
func addCompletionArgs(args namedArgs, done *paygate.IdempotencyCompletion) {
	if done == nil {
		args["done_merchant_id"], args["done_mode"], args["done_key"] = nil, nil, nil
		args["done_status_code"], args["done_body"] = 0, []byte{}
		return
	}
	args["done_merchant_id"], args["done_mode"], args["done_key"] = done.MerchantID, string(done.Mode), done.Key
	args["done_status_code"], args["done_body"] = done.StatusCode, nonNil(done.Body)
}

// Events lists up to q.Limit events of (merchant, mode), oldest first
// (events of one transaction in the order given), of one payment and its
// refunds when q.PaymentID is set (by events_payment_idx). A limit of zero
// or less lists them all.
func (s *Store) Events(ctx context.Context, q paygate.EventQuery) ([]paygate.Event, error) {
	var b sqlBuilder
	where := `merchant_id = ` + b.arg(q.MerchantID) + ` AND mode = ` + b.arg(string(q.Mode))
	if q.PaymentID != "" {
		// events_payment_idx holds the events with a payment; its
		// predicate is repeated so that a generic plan may use it too.
		where = `payment_id = ` + b.arg(q.PaymentID) + ` AND payment_id <> '' AND ` + where
	}
	if q.ID != "" {
		where += ` AND id = ` + b.arg(q.ID)
	}
	if !q.CreatedFrom.IsZero() {
		where += ` AND created_at >= ` + b.arg(q.CreatedFrom)
	}
	if !q.CreatedBefore.IsZero() {
		where += ` AND created_at < ` + b.arg(q.CreatedBefore)
	}
	rows, err := s.pool.Query(ctx, `
		SELECT `+codec.EventColumns+`
		FROM events
		WHERE `+where+`
		ORDER BY created_at, seq
		LIMIT `+b.arg(nullLimit(q.Limit)), b.args...)
	if err != nil {
		return nil, translate(err)
	}
	events, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (paygate.Event, error) { return codec.ScanEvent(r) })
	if events == nil && err == nil {
		events = []paygate.Event{}
	}
	return events, translate(err)
}
