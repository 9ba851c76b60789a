package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store/codec"
)

const idempotencyColumns = codec.IdempotencyColumns

// ReserveIdempotency reserves r.Key for a new request. In one write
// transaction it re-checks that the API key r.APIKeyID is a secret key of
// (r.MerchantID, r.Mode) active at r.Now (UNAUTHORIZED otherwise, and
// nothing changes), then returns a live record with reserved false, or
// replaces an expired or abandoned record (or inserts a new one) and
// returns the new in-flight record with reserved true. The write lock makes
// concurrent reservations of one key, from any process, reserve it once.
func (s *Store) ReserveIdempotency(ctx context.Context, r paygate.IdempotencyReservation) (paygate.IdempotencyRecord, bool, error) {
	var (
		rec      paygate.IdempotencyRecord
		reserved bool
	)
	// Lazily committed, as the PostgreSQL store's reservation: every later
	// write of the request commits after it, a durable one makes it
	// durable, and a crash before that loses it with nothing that
	// depended on it.
	err := s.lazyTx(ctx, func(tx *sql.Tx) error {
		var err error
		rec, reserved, err = reserveIdempotency(ctx, tx, r, "")
		return err
	})
	if err != nil {
		return paygate.IdempotencyRecord{}, false, err
	}
	return rec, reserved, nil
}

// reserveIdempotency is ReserveIdempotency inside the caller's write
// transaction. paymentID, when not "", is written into a new record: the
// payment the same transaction inserts (CreatePayment with a reservation).
func reserveIdempotency(ctx context.Context, tx *sql.Tx, r paygate.IdempotencyReservation, paymentID string) (paygate.IdempotencyRecord, bool, error) {
	if err := checkAPIKey(ctx, tx, r); err != nil {
		return paygate.IdempotencyRecord{}, false, err
	}
	existing, err := scanIdempotency(tx.QueryRowContext(ctx,
		`SELECT `+idempotencyColumns+` FROM idempotency_keys WHERE merchant_id = ? AND mode = ? AND key = ?`,
		r.MerchantID, string(r.Mode), r.Key))
	switch {
	case err == nil && existing.Live(r.Now):
		return existing, false, nil
	case err != nil && !errors.Is(err, sql.ErrNoRows):
		return paygate.IdempotencyRecord{}, false, err
	}
	rec := paygate.IdempotencyRecord{
		MerchantID:  r.MerchantID,
		Mode:        r.Mode,
		Key:         r.Key,
		Fingerprint: r.Fingerprint,
		State:       paygate.IdempotencyInFlight,
		PaymentID:   paymentID,
		CreatedAt:   r.Now,
	}
	if _, err := tx.ExecContext(ctx, `
		INSERT INTO idempotency_keys (`+idempotencyColumns+`) VALUES (?, ?, ?, ?, ?, 0, NULL, ?, ?)
		ON CONFLICT (merchant_id, mode, key) DO UPDATE SET
			fingerprint = excluded.fingerprint,
			state = excluded.state,
			status_code = 0,
			body = NULL,
			payment_id = excluded.payment_id,
			created_at = excluded.created_at`,
		r.MerchantID, string(r.Mode), r.Key, r.Fingerprint, string(paygate.IdempotencyInFlight), paymentID, micros(r.Now)); err != nil {
		return paygate.IdempotencyRecord{}, false, err
	}
	return rec, true, nil
}

// checkAPIKey returns UNAUTHORIZED unless the reservation's API key is a
// secret key of its merchant and mode, active at its time. An empty
// APIKeyID (the dashboard, whose session is checked instead) skips it.
func checkAPIKey(ctx context.Context, tx *sql.Tx, r paygate.IdempotencyReservation) error {
	if r.APIKeyID == "" {
		return nil
	}
	k, err := scanAPIKey(tx.QueryRowContext(ctx,
		`SELECT `+apiKeyColumns+` FROM api_keys WHERE id = ? AND merchant_id = ? AND mode = ? AND type = ?`,
		r.APIKeyID, r.MerchantID, string(r.Mode), string(paygate.KeySecret)))
	if errors.Is(err, sql.ErrNoRows) || (err == nil && !k.ActiveAt(r.Now)) {
		return paygate.Errorf(paygate.CodeUnauthorized, "", "the API key is not valid")
	}
	return err
}

func scanIdempotency(row scanner) (paygate.IdempotencyRecord, error) {
	return codec.ScanIdempotency(row)
}

// completeIdempotency stores the answer of a reserved key
// (IdempotencyCompletion). Completing a key that has no record (released or
// purged meanwhile) or a complete one changes nothing.
func completeIdempotency(ctx context.Context, tx *sql.Tx, c paygate.IdempotencyCompletion) error {
	body := c.Body
	if body == nil {
		body = []byte{}
	}
	_, err := tx.ExecContext(ctx, `
		UPDATE idempotency_keys SET state = ?, status_code = ?, body = ?
		WHERE merchant_id = ? AND mode = ? AND key = ? AND state = ?`,
		string(paygate.IdempotencyComplete), c.StatusCode, body, c.MerchantID, string(c.Mode), c.Key,
		string(paygate.IdempotencyInFlight))
	return err
}

// releaseIdempotency deletes the in-flight record of the key
// (IdempotencyRelease), so that it may be used again at once. A complete
// record is kept.
func releaseIdempotency(ctx context.Context, tx *sql.Tx, r paygate.IdempotencyRelease) error {
	_, err := tx.ExecContext(ctx,
		`DELETE FROM idempotency_keys WHERE merchant_id = ? AND mode = ? AND key = ? AND state = ?`,
		r.MerchantID, string(r.Mode), r.Key, string(paygate.IdempotencyInFlight))
	return err
}

// PurgeIdempotency deletes the records created before the time, of every
// merchant, and returns how many.
func (s *Store) PurgeIdempotency(ctx context.Context, createdBefore time.Time) (int64, error) {
	var n int64
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM idempotency_keys WHERE created_at < ?`, micros(createdBefore))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, err
}

var _ paygate.RequestReader = (*Store)(nil)

// APIKeyAndRequest reads the API key by its hash and what reads names within
// the key's merchant and mode, on a reader connection: a replay never waits
// for the writer. The key and the idempotency record are one statement, and
// so are the key and a GET's payment (apiKeyAndPayment). When the key was
// read and a read beside it failed, that failure is the data's Err.
func (s *Store) APIKeyAndRequest(ctx context.Context, hash []byte, reads paygate.RequestReads) (paygate.APIKey, paygate.RequestData, error) {
	if reads.PaymentID != "" && reads.IdempotencyKey == "" {
		return s.apiKeyAndPayment(ctx, hash, reads.PaymentID)
	}
	// The record's columns come after the key's and are NULL without one.
	var (
		found                  bool
		fingerprint, body      []byte
		state, paymentID       sql.NullString
		statusCode, recCreated sql.NullInt64
	)
	row := s.read.QueryRowContext(ctx, `
		SELECT k.id, k.merchant_id, k.mode, k.type, k.hash, k.hint, k.created_at, k.expires_at, k.revoked_at, k.last_used_at,
			i.key IS NOT NULL, i.fingerprint, i.state, i.status_code, i.body, i.payment_id, i.created_at
		FROM api_keys k
		LEFT JOIN idempotency_keys i ON i.merchant_id = k.merchant_id AND i.mode = k.mode AND i.key = ?
		WHERE k.hash = ?`, reads.IdempotencyKey, hash)
	k, err := scanAPIKeyUsed(trailing{row, []any{&found, &fingerprint, &state, &statusCode, &body, &paymentID, &recCreated}})
	if errors.Is(err, sql.ErrNoRows) {
		return paygate.APIKey{}, paygate.RequestData{}, notFound("API key")
	}
	if err != nil {
		return paygate.APIKey{}, paygate.RequestData{}, translate(err)
	}
	var data paygate.RequestData
	if found && reads.IdempotencyKey != "" {
		data.Record = &paygate.IdempotencyRecord{
			MerchantID: k.MerchantID, Mode: k.Mode, Key: reads.IdempotencyKey, Fingerprint: fingerprint,
			State: paygate.IdempotencyState(state.String), StatusCode: int(statusCode.Int64), Body: body,
			PaymentID: paymentID.String, CreatedAt: fromMicros(recCreated.Int64),
		}
	}
	if reads.PaymentID != "" {
		// Both reads at once (no request of the API asks for them).
		p, err := s.PaymentByID(ctx, k.MerchantID, k.Mode, reads.PaymentID)
		switch {
		case err == nil:
			data.Payment = &p
		case !paygate.IsNotFound(err):
			return k, paygate.RequestData{Err: err}, nil
		}
	}
	return k, data, nil
}

// apiKeyAndPayment reads the API key by its hash and the payment id of
// (the key's merchant, the key's mode) in one statement: a GET's reads.
// The payment's columns are NULL without one, and read through COALESCE
// so that the one row mapping (codec.ScanPayment) reads them either way.
func (s *Store) apiKeyAndPayment(ctx context.Context, hash []byte, id string) (paygate.APIKey, paygate.RequestData, error) {
	row := s.read.QueryRowContext(ctx, `
		SELECT k.id, k.merchant_id, k.mode, k.type, k.hash, k.hint, k.created_at, k.expires_at, k.revoked_at, k.last_used_at,
			p.id IS NOT NULL, `+joinedPaymentColumns+`
		FROM api_keys k
		LEFT JOIN payments p ON p.id = ? AND p.merchant_id = k.merchant_id AND p.mode = k.mode
		WHERE k.hash = ?`, id, hash)
	var k paygate.APIKey
	var found bool
	p, err := codec.ScanPayment(scanFunc(func(dest ...any) error {
		var err error
		k, err = scanAPIKeyUsed(trailing{row, append([]any{&found}, dest...)})
		return err
	}))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return paygate.APIKey{}, paygate.RequestData{}, notFound("API key")
	case err != nil && k.ID != "":
		return k, paygate.RequestData{Err: translate(err)}, nil
	case err != nil:
		return paygate.APIKey{}, paygate.RequestData{}, translate(err)
	case !found:
		return k, paygate.RequestData{}, nil
	}
	return k, paygate.RequestData{Payment: &p}, nil
}

// joinedPaymentColumns are codec.PaymentColumns of a LEFT JOINed payments
// p, with NULL (no payment) read as each column's empty value.
var joinedPaymentColumns = func() string {
	numbers := map[string]bool{"amount": true, "amount_captured": true, "amount_refunded": true, "card_exp_month": true,
		"card_exp_year": true, "lease_until": true, "created_at": true, "updated_at": true}
	var cols []string
	for _, c := range strings.Split(codec.PaymentColumns, ",") {
		c = strings.TrimSpace(c)
		switch {
		case c == "billing":
			cols = append(cols, "p.billing")
		case c == "metadata":
			cols = append(cols, "COALESCE(p.metadata, '{}')")
		case numbers[c]:
			cols = append(cols, "COALESCE(p."+c+", 0)")
		default:
			cols = append(cols, "COALESCE(p."+c+", '')")
		}
	}
	return strings.Join(cols, ", ")
}()

// scanFunc is a scanner made of a function.
type scanFunc func(dest ...any) error

func (f scanFunc) Scan(dest ...any) error { return f(dest...) }

// trailing is a row whose leading columns a scan function reads; the
// columns after them go into rest.
type trailing struct {
	row  scanner
	rest []any
}

func (t trailing) Scan(dest ...any) error { return t.row.Scan(append(dest, t.rest...)...) }
