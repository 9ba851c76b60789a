package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store/codec"
)

// Webhook delivery. Deliveries of state changes are inserted by the trigger
// events_webhook_delivery (migration 00002) in the transaction that writes
// their event; the methods here claim, finish, list and add deliveries.
// SQLite has one writer, so a claim (an UPDATE in a BEGIN IMMEDIATE
// transaction) can never hand one delivery to two claimers.

// endpointStateColumns are the columns scanEndpointState reads (one row
// mapping for both engines: codec.ScanEndpointState).
const endpointStateColumns = codec.EndpointStateColumns

// configureEndpoint creates or replaces the endpoint of a
// WebhookEndpointConfig in the unit's transaction and enables it. The
// secret and CreatedAt are kept unless c.RotateSecret; a rotation of an
// existing endpoint keeps the replaced secret as the previous one until
// c.PreviousUntil. NOT_FOUND when the merchant does not exist (its foreign
// key); ErrStateConflict when a rotation would copy a plain secret.
func configureEndpoint(ctx context.Context, tx *sql.Tx, c paygate.WebhookEndpointConfig) error {
	e := c.Endpoint
	if err := codec.CheckSealedSecret(e); err != nil {
		return err
	}
	events, err := codec.EncodeEndpointEvents(e.Events)
	if err != nil {
		return err
	}
	// Every right-hand side reads the row as it was before the update.
	var one int
	err = tx.QueryRowContext(ctx, `
		INSERT INTO webhook_endpoints (`+endpointStateColumns+`)
		VALUES (?1, ?2, ?3, '', ?5, ?6, ?7, '', NULL, NULL, ?4, NULL)
		ON CONFLICT (merchant_id, mode) DO UPDATE SET
			url = excluded.url,
			events = excluded.events,
			previous_secret = CASE WHEN ?8 THEN '' ELSE webhook_endpoints.previous_secret END,
			previous_secret_sealed = CASE WHEN ?8 THEN webhook_endpoints.secret_sealed
				ELSE webhook_endpoints.previous_secret_sealed END,
			previous_secret_expires_at = CASE WHEN ?8 THEN ?9 ELSE webhook_endpoints.previous_secret_expires_at END,
			secret = CASE WHEN ?8 THEN '' ELSE webhook_endpoints.secret END,
			secret_sealed = CASE WHEN ?8 THEN excluded.secret_sealed ELSE webhook_endpoints.secret_sealed END,
			disabled_at = NULL,
			updated_at = excluded.updated_at
		-- A rotation never copies a plain secret (a row not converted
		-- yet) into previous_secret: refused, the caller converts first.
		WHERE NOT (?8 AND webhook_endpoints.secret <> '')
		RETURNING 1`,
		e.MerchantID, string(e.Mode), e.URL, e.SealedSecret, events,
		micros(e.CreatedAt), micros(e.UpdatedAt), c.RotateSecret, micros(c.PreviousUntil)).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%w: the webhook endpoint of merchant %s (%s) still holds a plain secret; convert it before a rotation",
			paygate.ErrStateConflict, e.MerchantID, e.Mode)
	}
	return err
}

// WebhookEndpointState returns the endpoint of (merchant, mode) with its
// delivery state, or NOT_FOUND.
func (s *Store) WebhookEndpointState(ctx context.Context, merchantID string, mode paygate.Mode) (paygate.WebhookEndpointState, error) {
	return endpointState(ctx, s.read, merchantID, mode)
}

// deliveryQuerier is a *sql.DB or a *sql.Tx.
type deliveryQuerier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func endpointState(ctx context.Context, q deliveryQuerier, merchantID string, mode paygate.Mode) (paygate.WebhookEndpointState, error) {
	e, err := scanEndpointState(q.QueryRowContext(ctx,
		`SELECT `+endpointStateColumns+` FROM webhook_endpoints WHERE merchant_id = ? AND mode = ?`,
		merchantID, string(mode)))
	if errors.Is(err, sql.ErrNoRows) {
		return paygate.WebhookEndpointState{}, notFound("webhook endpoint")
	}
	return e, translate(err)
}

func scanEndpointState(row scanner) (paygate.WebhookEndpointState, error) {
	return codec.ScanEndpointState(row)
}

// deliveryColumns are the columns scanDelivery reads (codec.ScanDelivery).
const deliveryColumns = codec.DeliveryColumns

func scanDelivery(row scanner) (paygate.Delivery, error) { return codec.ScanDelivery(row) }

// dueCondition selects the deliveries due at ?1 (now), those never
// attempted only once due at ?2 (now minus the first wait) as well.
const dueCondition = `status = 'pending' AND next_attempt_at <= ?1 AND (attempts > 0 OR next_attempt_at <= ?2)`

// noSiblingFirst keeps a claim from sending one event twice at once (a
// delivery and its resend, decisions.md section 15): a due delivery d is
// claimed only when no other delivery of its event is in flight (pending
// under a lease that has not ended at ?1) and none that is due too was
// created before it. One of them goes; when it succeeds, its DeliveryFinish
// ends the others.
const noSiblingFirst = `NOT EXISTS (
	SELECT 1 FROM webhook_deliveries s
	WHERE s.event_id = d.event_id AND s.id <> d.id AND s.status = 'pending'
		AND ((s.lease <> '' AND s.next_attempt_at > ?1)
			OR (s.next_attempt_at <= ?1 AND (s.attempts > 0 OR s.next_attempt_at <= ?2) AND s.seq < d.seq)))`

// claimedDelivery reads a claimed delivery (?1) with its event's payload
// and its endpoint (NULLs when there is none), as codec.ScanClaimedDelivery
// reads them.
const claimedDelivery = `
	SELECT d.id, d.event_id, d.merchant_id, d.mode, d.event_type, d.status, d.attempts, d.next_attempt_at,
		d.last_attempt_at, d.last_status_code, d.last_error, d.created_at, d.updated_at,
		e.payload, w.merchant_id, w.mode, w.url, w.secret, w.events, w.created_at, w.updated_at,
		w.previous_secret, w.previous_secret_expires_at, w.disabled_at, w.secret_sealed, w.previous_secret_sealed
	FROM webhook_deliveries d
	JOIN events e ON e.id = d.event_id
	LEFT JOIN webhook_endpoints w ON w.merchant_id = d.merchant_id AND w.mode = d.mode
	WHERE d.id = ?1`

// ClaimDeliveries claims up to c.Limit due deliveries for one attempt each.
// A read on the read pool first looks whether anything is due, so that an
// idle dispatcher polling often never takes the write lock.
func (s *Store) ClaimDeliveries(ctx context.Context, c paygate.DeliveryClaim) ([]paygate.ClaimedDelivery, error) {
	if c.Limit <= 0 {
		return nil, nil
	}
	now, firstDue := micros(c.Now), micros(c.FirstDue)
	var one int
	err := s.read.QueryRowContext(ctx, `SELECT 1 FROM webhook_deliveries WHERE `+dueCondition+` LIMIT 1`,
		now, firstDue).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, translate(err)
	}
	var claimed []paygate.ClaimedDelivery
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		claimed = nil // a retried transaction starts over
		rows, err := tx.QueryContext(ctx, `
			UPDATE webhook_deliveries
			SET attempts = attempts + 1, lease = ?3, next_attempt_at = ?4, updated_at = ?1
			WHERE id IN (
				SELECT id FROM webhook_deliveries d WHERE `+dueCondition+` AND `+noSiblingFirst+`
				ORDER BY next_attempt_at LIMIT ?5)
			RETURNING id`,
			now, firstDue, c.Lease, micros(c.LeaseUntil), c.Limit)
		if err != nil {
			return err
		}
		var ids []string
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, id)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		if err := rows.Err(); err != nil {
			return err
		}
		for _, id := range ids {
			cd, err := codec.ScanClaimedDelivery(tx.QueryRowContext(ctx, claimedDelivery, id), c.Lease)
			if err != nil {
				return fmt.Errorf("claimed delivery %s: %w", id, err)
			}
			claimed = append(claimed, cd)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return claimed, nil
}

// finishDelivery records the attempt and the outcome of a claimed delivery
// in the unit's transaction, if its lease is still held.
func finishDelivery(ctx context.Context, tx *sql.Tx, f paygate.DeliveryFinish) error {
	if !f.Status.Valid() {
		return fmt.Errorf("sqlite: finish delivery: invalid status %q", f.Status)
	}
	var (
		lastAt sql.NullInt64
		code   int
		errMsg = f.Error
	)
	if f.Attempt != nil {
		lastAt = sql.NullInt64{Int64: micros(f.Attempt.StartedAt), Valid: true}
		code, errMsg = f.Attempt.StatusCode, f.Attempt.Error
	}
	var merchantID, mode, eventID string
	err := tx.QueryRowContext(ctx, `
		UPDATE webhook_deliveries SET
			status = ?1,
			next_attempt_at = CASE WHEN ?1 = 'pending' THEN ?2 ELSE next_attempt_at END,
			lease = '',
			last_attempt_at = coalesce(?3, last_attempt_at),
			last_status_code = ?4,
			last_error = ?5,
			updated_at = ?6
		WHERE id = ?7 AND lease = ?8 AND lease <> '' AND status = 'pending'
		RETURNING merchant_id, mode, event_id`,
		string(f.Status), micros(f.NextAttemptAt), lastAt, code, errMsg, micros(f.At),
		f.DeliveryID, f.Lease).Scan(&merchantID, &mode, &eventID)
	if errors.Is(err, sql.ErrNoRows) {
		var one int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM webhook_deliveries WHERE id = ?`, f.DeliveryID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("delivery")
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("%w: the lease of delivery %s is no longer held", paygate.ErrStateConflict, f.DeliveryID)
	}
	if err != nil {
		return err
	}
	if a := f.Attempt; a != nil {
		var private sql.NullBool
		if a.PrivateAddress != nil {
			private = sql.NullBool{Bool: *a.PrivateAddress, Valid: true}
		}
		if _, err := tx.ExecContext(ctx, `
			INSERT INTO webhook_attempts (delivery_id, number, url, started_at, status_code, latency_us, response, error, private_address)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			f.DeliveryID, a.Number, a.URL, micros(a.StartedAt), a.StatusCode, a.Latency.Microseconds(),
			codec.AttemptResponse(a.Response), a.Error, private); err != nil {
			return err
		}
	}
	if f.Status == paygate.DeliverySucceeded {
		// The endpoint has the event: every other delivery of it that
		// is still pending (a retrying original, a queued resend) ends
		// as succeeded, in this transaction, so that no later claim
		// sends it again. One in flight loses its lease: its outcome is
		// not recorded and it is not retried.
		_, err := tx.ExecContext(ctx, `
			UPDATE webhook_deliveries SET status = 'succeeded', lease = '', updated_at = ?1
			WHERE event_id = ?2 AND id <> ?3 AND status = 'pending'`,
			micros(f.At), eventID, f.DeliveryID)
		return err
	}
	if !f.DisableEndpoint {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `
		UPDATE webhook_endpoints SET disabled_at = coalesce(disabled_at, ?1)
		WHERE merchant_id = ?2 AND mode = ?3`,
		micros(f.At), merchantID, mode); err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `
		UPDATE webhook_deliveries SET status = 'failed', last_error = ?1, updated_at = ?2
		WHERE merchant_id = ?3 AND mode = ?4 AND status = 'pending'
			AND NOT (lease <> '' AND next_attempt_at > ?2)`,
		disabledError, micros(f.At), merchantID, mode)
	return err
}

// disabledError is the last error of the deliveries failed when their
// endpoint was disabled.
const disabledError = "the endpoint was disabled: the receiver answered 410 Gone"

// Deliveries lists a merchant's deliveries, newest first.
func (s *Store) Deliveries(ctx context.Context, q paygate.DeliveryQuery) ([]paygate.Delivery, error) {
	query, args := deliveryListQuery(q)
	return s.queryDeliveries(ctx, query, args...)
}

// deliveryListQuery returns the SQL and arguments of Deliveries. Only the
// filters that are set appear in it, every value a parameter, so that each
// combination gets its own plan: a payment's deliveries are those of its
// events (deliveriesOfPayment), an event is the few rows of
// webhook_deliveries_event (named, as SQLite would rather walk the
// merchant's deliveries in order), a mode a range of
// webhook_deliveries_merchant read newest first and stopped at the limit.
// Without any of them, each mode is read as its own range and the two are
// merged.
func deliveryListQuery(q paygate.DeliveryQuery) (string, []any) {
	const order = ` ORDER BY created_at DESC, seq DESC LIMIT ?`
	limit := sqlLimit(q.Limit)
	where := `merchant_id = ?`
	args := []any{q.MerchantID}
	if q.ID != "" {
		where += ` AND id = ?`
		args = append(args, q.ID)
	}
	if q.Status != "" {
		where += ` AND status = ?`
		args = append(args, string(q.Status))
	}
	if q.EventType != "" {
		where += ` AND event_type = ?`
		args = append(args, string(q.EventType))
	}
	if q.EventAllFailed {
		where += ` AND NOT EXISTS (SELECT 1 FROM webhook_deliveries o WHERE o.event_id = webhook_deliveries.event_id AND o.status <> ?)`
		args = append(args, string(paygate.DeliveryFailed))
	}
	if q.PaymentID != "" {
		if q.EventID != "" {
			where += ` AND event_id = ?`
			args = append(args, q.EventID)
		}
		args = append([]any{q.PaymentID, q.MerchantID, string(q.Mode)}, args[1:]...)
		return `SELECT ` + deliveryColumns + ` FROM webhook_deliveries WHERE ` + deliveriesOfPayment +
			strings.TrimPrefix(where, `merchant_id = ?`) + order, append(args, limit)
	}
	if q.EventID != "" || q.Mode != "" || q.ID != "" {
		from := ` FROM webhook_deliveries WHERE `
		if q.EventID != "" {
			from = ` FROM webhook_deliveries INDEXED BY webhook_deliveries_event WHERE event_id = ? AND `
			args = append([]any{q.EventID}, args...)
		}
		if q.Mode != "" {
			where += ` AND mode = ?`
			args = append(args, string(q.Mode))
		}
		return `SELECT ` + deliveryColumns + from + where + order, append(args, limit)
	}
	var all []any
	for _, m := range []paygate.Mode{paygate.ModeTest, paygate.ModeLive} {
		all = append(append(all, args...), string(m), limit)
	}
	branch := `SELECT * FROM (SELECT ` + deliveryColumns + `, seq FROM webhook_deliveries WHERE ` + where + ` AND mode = ?` + order + `)`
	return `SELECT ` + deliveryColumns + ` FROM (` + branch + ` UNION ALL ` + branch + `)` + order, append(all, limit)
}

// queryDeliveries runs a query of deliveryColumns.
func (s *Store) queryDeliveries(ctx context.Context, query string, args ...any) ([]paygate.Delivery, error) {
	rows, err := s.read.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []paygate.Delivery{}
	for rows.Next() {
		d, err := scanDelivery(rows)
		if err != nil {
			return nil, translate(err)
		}
		out = append(out, d)
	}
	return out, translate(rows.Err())
}

func deliveryByID(ctx context.Context, q deliveryQuerier, merchantID string, mode paygate.Mode, id string) (paygate.Delivery, error) {
	d, err := scanDelivery(q.QueryRowContext(ctx,
		`SELECT `+deliveryColumns+` FROM webhook_deliveries WHERE id = ? AND merchant_id = ? AND mode = ?`,
		id, merchantID, string(mode)))
	if errors.Is(err, sql.ErrNoRows) {
		return paygate.Delivery{}, notFound("delivery")
	}
	return d, translate(err)
}

// DeliveryAttempts lists a delivery's attempts, first first.
func (s *Store) DeliveryAttempts(ctx context.Context, merchantID string, mode paygate.Mode, deliveryID string) ([]paygate.DeliveryAttempt, error) {
	var out []paygate.DeliveryAttempt
	err := s.inReadTx(ctx, func(tx *sql.Tx) error {
		if _, err := deliveryByID(ctx, tx, merchantID, mode, deliveryID); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `
			SELECT `+codec.AttemptColumns+`
			FROM webhook_attempts WHERE delivery_id = ? ORDER BY number`, deliveryID)
		if err != nil {
			return err
		}
		defer rows.Close()
		out = []paygate.DeliveryAttempt{}
		for rows.Next() {
			a, err := codec.ScanAttempt(rows)
			if err != nil {
				return err
			}
			out = append(out, a)
		}
		return rows.Err()
	})
	return out, err
}

// ResendEvent inserts a new delivery of an existing event to its endpoint.
func (s *Store) ResendEvent(ctx context.Context, eventID, deliveryID string, at time.Time) (paygate.Delivery, error) {
	var d paygate.Delivery
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var merchantID, mode, typ string
		err := tx.QueryRowContext(ctx, `SELECT merchant_id, mode, type FROM events WHERE id = ?`, eventID).
			Scan(&merchantID, &mode, &typ)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("event")
		}
		if err != nil {
			return err
		}
		d, err = insertDelivery(ctx, tx, deliveryID, eventID, merchantID, paygate.Mode(mode), paygate.EventType(typ), at)
		return err
	})
	return d, err
}

// resendEvent inserts an EventResend's delivery, in the unit's
// transaction, of an event of (merchant, mode): NOT_FOUND unless the event
// is theirs.
func resendEvent(ctx context.Context, tx *sql.Tx, r paygate.EventResend) error {
	var typ string
	err := tx.QueryRowContext(ctx, `SELECT type FROM events WHERE id = ? AND merchant_id = ? AND mode = ?`,
		r.EventID, r.MerchantID, string(r.Mode)).Scan(&typ)
	if errors.Is(err, sql.ErrNoRows) {
		return notFound("event")
	}
	if err != nil {
		return err
	}
	_, err = insertDelivery(ctx, tx, r.DeliveryID, r.EventID, r.MerchantID, r.Mode, paygate.EventType(typ), r.At)
	return err
}

// insertPing inserts a WebhookPing's event and its delivery in the unit's
// transaction.
func insertPing(ctx context.Context, tx *sql.Tx, p paygate.WebhookPing) error {
	if err := insertEvents(ctx, tx, []paygate.Event{p.Event}); err != nil {
		return err
	}
	ev := p.Event
	_, err := insertDelivery(ctx, tx, p.DeliveryID, ev.ID, ev.MerchantID, ev.Mode, ev.Type, ev.CreatedAt)
	return err
}

// insertDelivery inserts a pending delivery due at at, after checking that
// the (merchant, mode) has an enabled endpoint: NOT_FOUND or
// ErrStateConflict otherwise.
func insertDelivery(ctx context.Context, tx *sql.Tx, id, eventID, merchantID string, mode paygate.Mode, typ paygate.EventType, at time.Time) (paygate.Delivery, error) {
	e, err := endpointState(ctx, tx, merchantID, mode)
	if err != nil {
		return paygate.Delivery{}, err
	}
	if e.DisabledAt != nil {
		return paygate.Delivery{}, fmt.Errorf("%w: the webhook endpoint is disabled since %s; set it again to enable it",
			paygate.ErrStateConflict, e.DisabledAt.Format(time.RFC3339))
	}
	return scanDelivery(tx.QueryRowContext(ctx, `
		INSERT INTO webhook_deliveries (id, event_id, merchant_id, mode, event_type, status, next_attempt_at, created_at, updated_at)
		VALUES (?1, ?2, ?3, ?4, ?5, 'pending', ?6, ?6, ?6)
		RETURNING `+deliveryColumns,
		id, eventID, merchantID, string(mode), string(typ), micros(at)))
}
