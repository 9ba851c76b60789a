package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store/codec"
)

// Webhook delivery. Deliveries of state changes are inserted by the trigger
// events_webhook_delivery (migration 00002) in the statement that writes
// their event; the methods here claim, finish, list and add deliveries.
// Claims lock the due rows FOR UPDATE SKIP LOCKED, so nodes claiming at once
// take disjoint sets, and a row claimed (and committed) by another node no
// longer matches when re-checked under READ COMMITTED.

// endpointStateColumns are the columns scanEndpointState reads (one row
// mapping for both engines: codec.ScanEndpointState).
const endpointStateColumns = codec.EndpointStateColumns

func scanEndpointState(row pgx.Row) (paygate.WebhookEndpointState, error) {
	return codec.ScanEndpointState(row)
}

// configureEndpoint creates or replaces the endpoint of a
// WebhookEndpointConfig and enables it. The secret and CreatedAt are kept
// unless @rotate; a rotation of an existing endpoint keeps the replaced
// secret as the previous one until @previous_until. No row written fails
// the unit: unit_refused raises PG409 when the rotation was refused (the
// row holds a plain secret) and PG404 when the merchant does not exist.
// Every right-hand side of the update reads the row as it was before it.
const configureEndpoint = `
	WITH configured AS (
		INSERT INTO webhook_endpoints AS w (merchant_id, mode, url, secret, events, created_at, updated_at, secret_sealed)
		SELECT @merchant_id, @mode, @url, '', @events::text::jsonb, @created_at, @updated_at, @secret_sealed
		WHERE EXISTS (SELECT 1 FROM merchants WHERE id = @merchant_id)
		ON CONFLICT (merchant_id, mode) DO UPDATE SET
			url = EXCLUDED.url,
			events = EXCLUDED.events,
			previous_secret = CASE WHEN @rotate::boolean THEN '' ELSE w.previous_secret END,
			previous_secret_sealed = CASE WHEN @rotate::boolean THEN w.secret_sealed ELSE w.previous_secret_sealed END,
			previous_secret_expires_at = CASE WHEN @rotate::boolean THEN @previous_until::timestamptz
				ELSE w.previous_secret_expires_at END,
			secret = CASE WHEN @rotate::boolean THEN '' ELSE w.secret END,
			secret_sealed = CASE WHEN @rotate::boolean THEN EXCLUDED.secret_sealed ELSE w.secret_sealed END,
			disabled_at = NULL,
			updated_at = EXCLUDED.updated_at
		-- A rotation never copies a plain secret (a row not converted yet)
		-- into previous_secret: refused, the caller converts first.
		WHERE NOT (@rotate::boolean AND w.secret <> '')
		RETURNING 1
	)
	SELECT CASE WHEN EXISTS (SELECT 1 FROM configured) THEN true
		ELSE unit_refused(@rotate::boolean AND EXISTS (SELECT 1 FROM webhook_endpoints
			WHERE merchant_id = @merchant_id AND mode = @mode AND secret <> '')) END`

// configureArgs returns the arguments of configureEndpoint, or an error
// for an endpoint whose secret is not sealed.
func configureArgs(c paygate.WebhookEndpointConfig) (namedArgs, error) {
	e := c.Endpoint
	if err := codec.CheckSealedSecret(e); err != nil {
		return nil, err
	}
	events, err := codec.EncodeEndpointEvents(e.Events)
	if err != nil {
		return nil, err
	}
	created := e.CreatedAt
	if created.IsZero() {
		created = e.UpdatedAt
	}
	return namedArgs{
		"merchant_id": e.MerchantID, "mode": e.Mode, "url": e.URL, "secret_sealed": e.SealedSecret, "events": events,
		"created_at": created, "updated_at": e.UpdatedAt, "rotate": c.RotateSecret, "previous_until": c.PreviousUntil,
	}, nil
}

// configureRefused names why configureEndpoint refused the unit.
func configureRefused(c paygate.WebhookEndpointConfig) func(*pgconn.PgError) error {
	return func(pgErr *pgconn.PgError) error {
		switch pgErr.Code {
		case sqlStateConflict:
			return fmt.Errorf("%w: the webhook endpoint of merchant %s (%s) still holds a plain secret; convert it before a rotation",
				paygate.ErrStateConflict, c.Endpoint.MerchantID, c.Endpoint.Mode)
		case sqlStateNotFound:
			return notFound("merchant")
		}
		return nil
	}
}

// WebhookEndpointState returns the endpoint of (merchant, mode) with its
// delivery state, or NOT_FOUND.
func (s *Store) WebhookEndpointState(ctx context.Context, merchantID string, mode paygate.Mode) (paygate.WebhookEndpointState, error) {
	e, err := scanEndpointState(s.pool.QueryRow(ctx, `
		SELECT `+endpointStateColumns+` FROM webhook_endpoints
		WHERE merchant_id = $1 AND mode = $2`, merchantID, mode))
	if errors.Is(err, pgx.ErrNoRows) {
		return paygate.WebhookEndpointState{}, notFound("webhook endpoint")
	}
	return e, translate(err)
}

// deliveryColumns are the columns scanDelivery reads (codec.ScanDelivery).
const deliveryColumns = codec.DeliveryColumns

func scanDelivery(row pgx.Row) (paygate.Delivery, error) { return codec.ScanDelivery(row) }

// claimDeliveries locks up to @limit due deliveries, skipping those another
// claim holds, leases them, and returns each with its event's payload and
// its endpoint (NULLs when there is none), as codec.ScanClaimedDelivery
// reads them. A delivery is not claimed while
// another delivery of its event (a resend, or the original) is in flight
// or is due and older: one event goes out once at a time, and when it
// succeeds its DeliveryFinish ends the others (decisions.md section 15).
const claimDeliveries = `
	WITH due AS (
		SELECT id FROM webhook_deliveries d
		WHERE status = 'pending' AND next_attempt_at <= @now
			AND (attempts > 0 OR next_attempt_at <= @first_due)
			AND NOT EXISTS (
				SELECT 1 FROM webhook_deliveries s
				WHERE s.event_id = d.event_id AND s.id <> d.id AND s.status = 'pending'
					AND ((s.lease <> '' AND s.next_attempt_at > @now)
						OR (s.next_attempt_at <= @now AND (s.attempts > 0 OR s.next_attempt_at <= @first_due) AND s.seq < d.seq)))
		ORDER BY next_attempt_at
		LIMIT @limit
		FOR UPDATE SKIP LOCKED
	), claimed AS (
		UPDATE webhook_deliveries d
		SET attempts = d.attempts + 1, lease = @lease, next_attempt_at = @lease_until, updated_at = @now
		FROM due WHERE d.id = due.id
		RETURNING d.id, d.event_id, d.merchant_id, d.mode, d.event_type, d.status, d.attempts, d.next_attempt_at,
			d.last_attempt_at, d.last_status_code, d.last_error, d.created_at, d.updated_at
	)
	SELECT c.id, c.event_id, c.merchant_id, c.mode, c.event_type, c.status, c.attempts, c.next_attempt_at,
		c.last_attempt_at, c.last_status_code, c.last_error, c.created_at, c.updated_at,
		e.payload, w.merchant_id, w.mode, w.url, w.secret, w.events, w.created_at, w.updated_at,
		w.previous_secret, w.previous_secret_expires_at, w.disabled_at, w.secret_sealed, w.previous_secret_sealed
	FROM claimed c
	JOIN events e ON e.id = c.event_id
	LEFT JOIN webhook_endpoints w ON w.merchant_id = c.merchant_id AND w.mode = c.mode
	ORDER BY c.next_attempt_at, c.id`

// ClaimDeliveries claims up to c.Limit due deliveries for one attempt each.
func (s *Store) ClaimDeliveries(ctx context.Context, c paygate.DeliveryClaim) ([]paygate.ClaimedDelivery, error) {
	if c.Limit <= 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, claimDeliveries, namedArgs{
		"now": c.Now, "first_due": c.FirstDue, "limit": c.Limit, "lease": c.Lease, "lease_until": c.LeaseUntil,
	})
	if err != nil {
		return nil, translate(err)
	}
	claimed, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (paygate.ClaimedDelivery, error) {
		return codec.ScanClaimedDelivery(r, c.Lease)
	})
	if err != nil {
		return nil, translate(err)
	}
	return claimed, nil
}

// finishDelivery applies the outcome if the lease is held (fin), records
// the attempt, on success ends every other pending delivery of the event
// (ended: a retrying original or a queued resend, leased or not, so that no
// claim after this commit sends the event again; a claim that has locked
// one of them is waited for, and one that reads them after the commit
// finds them no longer pending), and on @disable disables the endpoint and
// fails its other pending deliveries that are not leased. The CTEs all read the snapshot
// from before the statement, hence "d.id <> fin.id".
const finishDelivery = `
	WITH fin AS (
		UPDATE webhook_deliveries SET
			status = @status,
			next_attempt_at = CASE WHEN @status = 'pending' THEN @next_attempt_at::timestamptz ELSE next_attempt_at END,
			lease = '',
			last_attempt_at = COALESCE(@last_attempt_at, last_attempt_at),
			last_status_code = @last_status_code,
			last_error = @last_error,
			updated_at = @at
		WHERE id = @id AND lease = @lease AND lease <> '' AND status = 'pending'
		RETURNING id, merchant_id, mode, event_id
	), ended AS (
		UPDATE webhook_deliveries d SET status = 'succeeded', lease = '', updated_at = @at
		FROM fin
		WHERE @status = 'succeeded' AND d.event_id = fin.event_id AND d.id <> fin.id AND d.status = 'pending'
	), attempt AS (
		INSERT INTO webhook_attempts (delivery_id, number, url, started_at, status_code, latency_us, response, error, private_address)
		SELECT fin.id, @number, @url, @started_at, @status_code, @latency_us, @response, @attempt_error, @private_address
		FROM fin WHERE @has_attempt::boolean
	), disabled AS (
		UPDATE webhook_endpoints w SET disabled_at = COALESCE(w.disabled_at, @at)
		FROM fin
		WHERE @disable::boolean AND w.merchant_id = fin.merchant_id AND w.mode = fin.mode
	), failed AS (
		UPDATE webhook_deliveries d SET status = 'failed', last_error = @disabled_error, updated_at = @at
		FROM fin
		WHERE @disable::boolean AND d.merchant_id = fin.merchant_id AND d.mode = fin.mode
			AND d.id <> fin.id AND d.status = 'pending'
			AND NOT (d.lease <> '' AND d.next_attempt_at > @at)
	)
	SELECT CASE WHEN EXISTS (SELECT 1 FROM fin) THEN true
		ELSE unit_refused(EXISTS (SELECT 1 FROM webhook_deliveries WHERE id = @id)) END`

// disabledError is the last error of the deliveries failed when their
// endpoint was disabled.
const disabledError = "the endpoint was disabled: the receiver answered 410 Gone"

// finishArgs returns the arguments of finishDelivery, or an error for an
// outcome no delivery can have.
func finishArgs(f paygate.DeliveryFinish) (namedArgs, error) {
	if !f.Status.Valid() {
		return nil, fmt.Errorf("postgres: finish delivery: invalid status %q", f.Status)
	}
	args := namedArgs{
		"id": f.DeliveryID, "lease": f.Lease, "status": f.Status, "next_attempt_at": f.NextAttemptAt, "at": f.At,
		"last_attempt_at": nil, "last_status_code": 0, "last_error": f.Error,
		"has_attempt": f.Attempt != nil, "number": 0, "url": "", "started_at": f.At, "status_code": 0,
		"latency_us": int64(0), "response": []byte{}, "attempt_error": "", "private_address": nil,
		"disable": f.DisableEndpoint, "disabled_error": disabledError,
	}
	if a := f.Attempt; a != nil {
		args["last_attempt_at"], args["last_status_code"], args["last_error"] = a.StartedAt, a.StatusCode, a.Error
		args["number"], args["url"], args["started_at"], args["status_code"] = a.Number, a.URL, a.StartedAt, a.StatusCode
		args["latency_us"], args["response"], args["attempt_error"] = a.Latency.Microseconds(), codec.AttemptResponse(a.Response), a.Error
		args["private_address"] = a.PrivateAddress
	}
	return args, nil
}

// finishRefused names why finishDelivery refused the unit.
func finishRefused(f paygate.DeliveryFinish) func(*pgconn.PgError) error {
	return func(pgErr *pgconn.PgError) error {
		switch pgErr.Code {
		case sqlStateConflict:
			return fmt.Errorf("%w: the lease of delivery %s is no longer held", paygate.ErrStateConflict, f.DeliveryID)
		case sqlStateNotFound:
			return notFound("delivery")
		}
		return nil
	}
}

// Deliveries lists a merchant's deliveries, newest first.
func (s *Store) Deliveries(ctx context.Context, q paygate.DeliveryQuery) ([]paygate.Delivery, error) {
	query, args := deliveryListQuery(q)
	return s.queryDeliveries(ctx, query, args...)
}

// deliveryListQuery returns the SQL and arguments of Deliveries. Only the
// filters that are set appear in it, every value a parameter, so that each
// combination gets its own plan: one delivery is its primary key, a
// payment's are the deliveries of its events (events_payment_idx, whose
// predicate is repeated, then
// webhook_deliveries_event_idx, merchant and mode filtered on both), an
// event is the few rows of webhook_deliveries_event_idx, a mode a range of
// webhook_deliveries_merchant_idx read newest first and stopped at the
// limit. Without any of them, each mode is read as its own range and the
// two are merged.
func deliveryListQuery(q paygate.DeliveryQuery) (string, []any) {
	var b sqlBuilder
	merchant := b.arg(q.MerchantID)
	where := `merchant_id = ` + merchant
	if q.PaymentID != "" {
		mode := b.arg(string(q.Mode))
		where = `event_id IN (SELECT id FROM events WHERE payment_id = ` + b.arg(q.PaymentID) +
			` AND payment_id <> '' AND merchant_id = ` + merchant + ` AND mode = ` + mode + `) AND ` + where + ` AND mode = ` + mode
	}
	if q.ID != "" {
		where += ` AND id = ` + b.arg(q.ID)
	}
	if q.Status != "" {
		where += ` AND status = ` + b.arg(string(q.Status))
	}
	if q.EventID != "" {
		where += ` AND event_id = ` + b.arg(q.EventID)
	}
	if q.EventType != "" {
		where += ` AND event_type = ` + b.arg(string(q.EventType))
	}
	if q.Mode != "" && q.PaymentID == "" {
		where += ` AND mode = ` + b.arg(string(q.Mode))
	}
	if q.EventAllFailed {
		where += ` AND NOT EXISTS (SELECT 1 FROM webhook_deliveries o WHERE o.event_id = webhook_deliveries.event_id AND o.status <> ` +
			b.arg(string(paygate.DeliveryFailed)) + `)`
	}
	order := ` ORDER BY created_at DESC, seq DESC LIMIT ` + b.arg(nullLimit(q.Limit))
	if q.Mode != "" || q.EventID != "" || q.PaymentID != "" || q.ID != "" {
		return `SELECT ` + deliveryColumns + ` FROM webhook_deliveries WHERE ` + where + order, b.args
	}
	test := `(SELECT ` + deliveryColumns + `, seq FROM webhook_deliveries WHERE ` + where +
		` AND mode = ` + b.arg(string(paygate.ModeTest)) + order + `)`
	live := `(SELECT ` + deliveryColumns + `, seq FROM webhook_deliveries WHERE ` + where +
		` AND mode = ` + b.arg(string(paygate.ModeLive)) + order + `)`
	return `SELECT ` + deliveryColumns + ` FROM (` + test + ` UNION ALL ` + live + `) AS d` + order, b.args
}

// queryDeliveries runs a query of deliveryColumns.
func (s *Store) queryDeliveries(ctx context.Context, query string, args ...any) ([]paygate.Delivery, error) {
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, translate(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (paygate.Delivery, error) { return scanDelivery(r) })
	if err != nil {
		return nil, translate(err)
	}
	if out == nil {
		out = []paygate.Delivery{}
	}
	return out, nil
}

// DeliveryAttempts lists a delivery's attempts, first first. When there
// is none, a second statement tells "no attempts yet" from "no such
// delivery" (deliveries are never deleted, so the answer holds).
func (s *Store) DeliveryAttempts(ctx context.Context, merchantID string, mode paygate.Mode, deliveryID string) ([]paygate.DeliveryAttempt, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT `+attemptColumns+`
		FROM webhook_attempts
		WHERE delivery_id = $1
			AND EXISTS (SELECT 1 FROM webhook_deliveries WHERE id = $1 AND merchant_id = $2 AND mode = $3)
		ORDER BY number`, deliveryID, merchantID, mode)
	if err != nil {
		return nil, translate(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (paygate.DeliveryAttempt, error) { return codec.ScanAttempt(r) })
	if err != nil {
		return nil, translate(err)
	}
	if len(out) > 0 {
		return out, nil
	}
	var found bool
	if err := s.pool.QueryRow(ctx, `
		SELECT EXISTS (SELECT 1 FROM webhook_deliveries WHERE id = $1 AND merchant_id = $2 AND mode = $3)`,
		deliveryID, merchantID, mode).Scan(&found); err != nil {
		return nil, translate(err)
	}
	if !found {
		return nil, notFound("delivery")
	}
	return []paygate.DeliveryAttempt{}, nil
}

// attemptColumns are the columns of an attempt (codec.ScanAttempt).
const attemptColumns = codec.AttemptColumns

// ResendEvent inserts a new delivery of an existing event to its endpoint.
func (s *Store) ResendEvent(ctx context.Context, eventID, deliveryID string, at time.Time) (paygate.Delivery, error) {
	d, err := scanDelivery(s.pool.QueryRow(ctx, `
		INSERT INTO webhook_deliveries (id, event_id, merchant_id, mode, event_type, status,
			next_attempt_at, created_at, updated_at)
		SELECT @id, e.id, e.merchant_id, e.mode, e.type, 'pending', @at, @at, @at
		FROM events e
		JOIN webhook_endpoints w ON w.merchant_id = e.merchant_id AND w.mode = e.mode
		WHERE e.id = @event_id AND w.disabled_at IS NULL
		RETURNING `+deliveryColumns,
		namedArgs{"id": deliveryID, "event_id": eventID, "at": at}))
	if errors.Is(err, pgx.ErrNoRows) {
		return paygate.Delivery{}, s.whyNoDelivery(ctx, `
			SELECT e.id IS NOT NULL, w.merchant_id IS NOT NULL, w.disabled_at
			FROM (SELECT 1) AS one
			LEFT JOIN events e ON e.id = $1
			LEFT JOIN webhook_endpoints w ON w.merchant_id = e.merchant_id AND w.mode = e.mode`, eventID)
	}
	return d, translate(err)
}

// endpointRefusal is the refusal of a statement that adds a delivery to
// the endpoint of (@merchant_id, @mode) (the CTE endpoint): PG404 "webhook
// endpoint" when there is none, PG409 with the time it was disabled, in
// microseconds since the epoch, when it is disabled (deliveryRefused).
const endpointRefusal = `
		WHEN NOT EXISTS (SELECT 1 FROM endpoint) THEN unit_refused_detail(false, 'webhook endpoint')
		ELSE unit_refused_detail(true, (SELECT (extract(epoch FROM disabled_at) * 1000000)::bigint::text FROM endpoint)) END`

// insertPing inserts a WebhookPing's event and its delivery, due at the
// event's time, when (merchant, mode) has an enabled endpoint; the unit
// fails otherwise (endpointRefusal).
const insertPing = `
	WITH endpoint AS (
		SELECT disabled_at FROM webhook_endpoints WHERE merchant_id = @merchant_id AND mode = @mode
	), ev AS (
		INSERT INTO events (id, merchant_id, mode, type, payment_id, refund_id, payload, created_at)
		SELECT @event_id, @merchant_id, @mode, @type, @payment_id, @refund_id, @payload, @at
		WHERE EXISTS (SELECT 1 FROM endpoint WHERE disabled_at IS NULL)
		RETURNING id
	), delivered AS (
		INSERT INTO webhook_deliveries (id, event_id, merchant_id, mode, event_type, status,
			next_attempt_at, created_at, updated_at)
		SELECT @id, ev.id, @merchant_id, @mode, @type, 'pending', @at, @at, @at FROM ev
		RETURNING id
	)
	SELECT CASE WHEN EXISTS (SELECT 1 FROM delivered) THEN true` + endpointRefusal

// pingArgs returns the arguments of insertPing.
func pingArgs(p paygate.WebhookPing) namedArgs {
	ev := p.Event
	return namedArgs{
		"id": p.DeliveryID, "event_id": ev.ID, "merchant_id": ev.MerchantID, "mode": ev.Mode, "type": ev.Type,
		"payment_id": ev.PaymentID, "refund_id": ev.RefundID, "payload": nonNil(ev.Payload), "at": ev.CreatedAt,
	}
}

// resendEvent inserts an EventResend's delivery of an event of (merchant,
// mode) when they have an enabled endpoint; the unit fails with PG404
// "event" when the event is not theirs, and otherwise as endpointRefusal.
const resendEvent = `
	WITH endpoint AS (
		SELECT disabled_at FROM webhook_endpoints WHERE merchant_id = @merchant_id AND mode = @mode
	), ev AS (
		SELECT id, type FROM events WHERE id = @event_id AND merchant_id = @merchant_id AND mode = @mode
	), delivered AS (
		INSERT INTO webhook_deliveries (id, event_id, merchant_id, mode, event_type, status,
			next_attempt_at, created_at, updated_at)
		SELECT @id, ev.id, @merchant_id, @mode, ev.type, 'pending', @at, @at, @at FROM ev
		WHERE EXISTS (SELECT 1 FROM endpoint WHERE disabled_at IS NULL)
		RETURNING id
	)
	SELECT CASE WHEN EXISTS (SELECT 1 FROM delivered) THEN true
		WHEN NOT EXISTS (SELECT 1 FROM ev) THEN unit_refused_detail(false, 'event')` + endpointRefusal

// resendArgs returns the arguments of resendEvent.
func resendArgs(r paygate.EventResend) namedArgs {
	return namedArgs{"id": r.DeliveryID, "event_id": r.EventID, "merchant_id": r.MerchantID, "mode": r.Mode, "at": r.At}
}

// deliveryRefused names why insertPing or resendEvent refused the unit, as
// whyNoDelivery does.
func deliveryRefused(pgErr *pgconn.PgError) error {
	switch pgErr.Code {
	case sqlStateNotFound:
		return notFound(pgErr.Detail)
	case sqlStateConflict:
		us, err := strconv.ParseInt(pgErr.Detail, 10, 64)
		if err != nil {
			return fmt.Errorf("%w: the webhook endpoint changed; retry", paygate.ErrStateConflict)
		}
		return disabledEndpoint(time.UnixMicro(us))
	}
	return nil
}

// disabledEndpoint is the refusal of a delivery to an endpoint disabled at
// the time.
func disabledEndpoint(at time.Time) error {
	return fmt.Errorf("%w: the webhook endpoint is disabled since %s; set it again to enable it",
		paygate.ErrStateConflict, at.Format(time.RFC3339))
}

// whyNoDelivery runs a query of (event exists, endpoint exists, endpoint
// disabled at) and names why a delivery was not inserted.
func (s *Store) whyNoDelivery(ctx context.Context, query string, args ...any) error {
	var eventExists, endpointExists bool
	var disabledAt *time.Time
	if err := s.pool.QueryRow(ctx, query, args...).Scan(&eventExists, &endpointExists, &disabledAt); err != nil {
		return translate(err)
	}
	switch {
	case !eventExists:
		return notFound("event")
	case !endpointExists:
		return notFound("webhook endpoint")
	case disabledAt != nil:
		return disabledEndpoint(*disabledAt)
	default:
		// The endpoint appeared or was enabled between the two statements.
		return fmt.Errorf("%w: the webhook endpoint changed; retry", paygate.ErrStateConflict)
	}
}
