package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store/codec"
)

const idempotencyColumns = codec.IdempotencyColumns

func scanIdempotency(row pgx.Row) (paygate.IdempotencyRecord, error) {
	return codec.ScanIdempotency(row)
}

// reserveIdempotency re-checks the API key and reserves the key in one
// statement. The insert happens only when the API key is an active secret
// key of the merchant and mode; on a conflict the old record is replaced
// only when it is expired (now >= created_at + TTL) or an abandoned
// in-flight record without a payment (now > created_at + PaymentLease).
// Under READ COMMITTED the ON CONFLICT clause locks the newest version of
// the conflicting row and evaluates its WHERE on it, so of many concurrent
// callers exactly one replaces (or inserts) the record. The record is in
// flight, unless the transaction that reserves it has its answer already
// (reserveArgs).
const reserveIdempotency = `
	WITH api_key AS (
		-- An empty api_key_id (the dashboard) skips the re-check.
		SELECT 1 WHERE @api_key_id = ''
		UNION ALL
		SELECT 1 FROM api_keys
		WHERE id = @api_key_id AND merchant_id = @merchant_id AND mode = @mode AND type = 'secret'
			AND (revoked_at IS NULL OR revoked_at > @now)
			AND (expires_at IS NULL OR expires_at > @now)
	), reserved AS (
		INSERT INTO idempotency_keys AS i (merchant_id, mode, key, fingerprint, state, status_code, body, payment_id, created_at)
		SELECT @merchant_id, @mode, @key, @fingerprint, @state, @status_code, @body, @payment_id, @now FROM api_key
		-- A live record (the replay of a request, or one in flight) is
		-- left alone without trying the insert: ON CONFLICT DO UPDATE
		-- would lock its row even when its WHERE is false, which makes
		-- every replay a write transaction with a WAL flush at commit,
		-- serialized on that row. Without a live record in this snapshot
		-- the insert runs and ON CONFLICT settles races as before.
		WHERE NOT EXISTS (
			SELECT 1 FROM idempotency_keys
			WHERE merchant_id = @merchant_id AND mode = @mode AND key = @key
				AND created_at > @expired_before
				AND NOT (state = 'in_flight' AND payment_id = '' AND created_at < @abandoned_before)
		)
		ON CONFLICT (merchant_id, mode, key) DO UPDATE SET
			fingerprint = EXCLUDED.fingerprint,
			state = EXCLUDED.state,
			status_code = EXCLUDED.status_code,
			body = EXCLUDED.body,
			payment_id = EXCLUDED.payment_id,
			created_at = EXCLUDED.created_at
		WHERE i.created_at <= @expired_before
			OR (i.state = 'in_flight' AND i.payment_id = '' AND i.created_at < @abandoned_before)
		RETURNING 1
	)
	SELECT EXISTS (SELECT 1 FROM api_key), EXISTS (SELECT 1 FROM reserved)`

// ReserveIdempotency reserves r.Key for a new request and returns the new
// in-flight record with reserved true, or returns the live record with
// reserved false and changes nothing. UNAUTHORIZED when the API key
// r.APIKeyID is not a secret key of the merchant and mode active at r.Now
// ("" skips that check).
//
// One round trip: the reservation and a read of the record are pipelined in
// one implicit transaction. The read is a later statement with a fresh
// snapshot, so it sees the live record even when another node committed it
// after the reservation statement began (and our own record when we
// reserved).
func (s *Store) ReserveIdempotency(ctx context.Context, r paygate.IdempotencyReservation) (paygate.IdempotencyRecord, bool, error) {
	// A record read as missing was released or purged between the two
	// statements: try again, a few times.
	for range 5 {
		var res reservation
		b := &pgx.Batch{}
		// The reservation commits without waiting for its WAL flush: it
		// settles concurrent requests as soon as it is visible, which a
		// commit is at once, and nothing the client is told rests on its
		// durability alone. Every later write of the request (the payment,
		// its outcome) commits synchronously after it, and a flush covers
		// all earlier WAL, so a durable payment implies a durable record.
		// If the database crashes first, the record is lost with nothing
		// that depended on it, and the key is free as after an abandoned
		// request. It saves a WAL flush wait.
		b.Queue(skipFlushWait)
		queueReservation(b, r, "", nil, &res)
		if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
			return paygate.IdempotencyRecord{}, false, translate(err)
		}
		switch {
		case !res.keyActive:
			return paygate.IdempotencyRecord{}, false, paygate.Errorf(paygate.CodeUnauthorized, "", "The API key is not active.")
		case res.reserved:
			return res.rec, true, nil
		case res.found:
			return res.rec, false, nil
		}
	}
	return paygate.IdempotencyRecord{}, false, paygate.ErrStateConflict
}

// reservation is what the statements queueReservation queues report.
type reservation struct {
	keyActive, reserved, found bool
	rec                        paygate.IdempotencyRecord // when found
}

// queueReservation queues reserveIdempotency and a read of the record after
// it. The read is a later statement with a fresh snapshot, so it sees the
// live record even when another node committed it after the reservation
// statement began (and the new record when this one reserved it).
// paymentID and done are as for reserveArgs.
func queueReservation(b *pgx.Batch, r paygate.IdempotencyReservation, paymentID string, done *paygate.IdempotencyCompletion, out *reservation) {
	b.Queue(reserveIdempotency, reserveArgs(r, paymentID, done)).QueryRow(func(row pgx.Row) error {
		return row.Scan(&out.keyActive, &out.reserved)
	})
	queueOptionalRow(b, `SELECT `+idempotencyColumns+` FROM idempotency_keys
		WHERE merchant_id = $1 AND mode = $2 AND key = $3`, []any{r.MerchantID, r.Mode, r.Key},
		scanIdempotency, &out.rec, &out.found)
}

// queueOptionalRow queues a query of at most one row, scanned by scan into
// dst, and sets found when there is one: no row is not an error.
func queueOptionalRow[T any](b *pgx.Batch, sql string, args []any, scan func(pgx.Row) (T, error), dst *T, found *bool) {
	b.Queue(sql, args...).QueryRow(func(row pgx.Row) error {
		v, err := scan(row)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		*dst, *found = v, err == nil
		return err
	})
}

// reserveArgs returns the arguments of reserveIdempotency. paymentID, when
// not "", is written into the new record: the payment inserted in the same
// transaction (reserveAndCreatePayment, a unit's NewPayment). done, when
// not nil, is the key's answer, which the same transaction stores: the
// record is reserved complete with it rather than in flight and then
// answered (a unit's NewPayment followed by its answer).
func reserveArgs(r paygate.IdempotencyReservation, paymentID string, done *paygate.IdempotencyCompletion) namedArgs {
	args := namedArgs{
		"merchant_id": r.MerchantID, "mode": r.Mode, "key": r.Key, "fingerprint": r.Fingerprint,
		"api_key_id": r.APIKeyID, "now": r.Now, "payment_id": paymentID,
		"expired_before":   r.Now.Add(-paygate.IdempotencyTTL),
		"abandoned_before": r.Now.Add(-paygate.PaymentLease),
		"state":            string(paygate.IdempotencyInFlight), "status_code": 0, "body": nil,
	}
	if done != nil {
		args["state"], args["status_code"], args["body"] = string(paygate.IdempotencyComplete), done.StatusCode, nonNil(done.Body)
	}
	return args
}

// releaseIdempotency deletes an in-flight record so that the key may be
// used again at once (IdempotencyRelease). A completed record is kept: its
// answer stands.
const releaseIdempotency = `
	DELETE FROM idempotency_keys
	WHERE merchant_id = $1 AND mode = $2 AND key = $3 AND state = 'in_flight'`

// PurgeIdempotency deletes the records created before the time and returns
// how many.
func (s *Store) PurgeIdempotency(ctx context.Context, createdBefore time.Time) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE created_at < $1`, createdBefore)
	if err != nil {
		return 0, translate(err)
	}
	return tag.RowsAffected(), nil
}

// nonNil returns b, or an empty slice for nil, for NOT NULL bytea columns.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

var _ paygate.RequestReader = (*Store)(nil)

// APIKeyAndRequest reads the API key by its hash and, pipelined after it in
// the same round trip, what reads names within the key's merchant and mode
// (each read selects the merchant and mode by the hash itself). When the key
// was read and a read beside it failed, that failure is the data's Err.
func (s *Store) APIKeyAndRequest(ctx context.Context, hash []byte, reads paygate.RequestReads) (paygate.APIKey, paygate.RequestData, error) {
	var (
		key                        paygate.APIKey
		rec                        paygate.IdempotencyRecord
		p                          paygate.Payment
		keyFound, recFound, pFound bool
	)
	b := &pgx.Batch{}
	queueOptionalRow(b, `SELECT `+apiKeyReadColumns+` FROM api_keys WHERE hash = $1`, []any{hash}, scanAPIKeyUsed, &key, &keyFound)
	if reads.IdempotencyKey != "" {
		queueOptionalRow(b, `SELECT `+idempotencyColumns+` FROM idempotency_keys
			WHERE (merchant_id, mode) = (SELECT merchant_id, mode FROM api_keys WHERE hash = $1) AND key = $2`,
			[]any{hash, reads.IdempotencyKey}, scanIdempotency, &rec, &recFound)
	}
	if reads.PaymentID != "" {
		queueOptionalRow(b, paymentByKeyHash, []any{reads.PaymentID, hash}, scanPayment, &p, &pFound)
	}
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		if keyFound {
			return key, paygate.RequestData{Err: translate(err)}, nil
		}
		return paygate.APIKey{}, paygate.RequestData{}, translate(err)
	}
	if !keyFound {
		return paygate.APIKey{}, paygate.RequestData{}, notFound("API key")
	}
	var data paygate.RequestData
	if recFound {
		data.Record = &rec
	}
	if pFound {
		data.Payment = &p
	}
	return key, data, nil
}
