package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store/codec"
	"github.com/paygate/paygate/internal/store/plan"
)

// customerColumns are the columns scanCustomer reads (one row mapping for
// both engines: codec.ScanCustomer).
const customerColumns = codec.CustomerColumns

// UpsertCustomer creates the customer of (merchant, mode, external id) or
// updates it: a given email or metadata replaces the stored one, a nil one
// keeps it. An existing customer keeps its id and CreatedAt.
func (s *Store) UpsertCustomer(ctx context.Context, u paygate.CustomerUpsert) (paygate.Customer, error) {
	var email sql.NullString
	if u.Email != nil && *u.Email != "" {
		email = sql.NullString{String: *u.Email, Valid: true}
	}
	metadata := "{}"
	if u.Metadata != nil {
		metadata = string(u.Metadata)
	}
	var c paygate.Customer
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		c, err = scanCustomer(tx.QueryRowContext(ctx, `
			INSERT INTO customers (`+customerColumns+`) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7)
			ON CONFLICT (merchant_id, mode, external_id) DO UPDATE SET
				email = CASE WHEN ?8 THEN excluded.email ELSE customers.email END,
				metadata = CASE WHEN ?9 THEN excluded.metadata ELSE customers.metadata END,
				updated_at = excluded.updated_at
			RETURNING `+customerColumns,
			u.NewID, u.MerchantID, string(u.Mode), u.ExternalID, email, metadata, micros(u.Now),
			u.Email != nil, u.Metadata != nil))
		return err
	})
	return c, err
}

// CustomerByID returns a customer of (merchant, mode), or NOT_FOUND.
func (s *Store) CustomerByID(ctx context.Context, merchantID string, mode paygate.Mode, id string) (paygate.Customer, error) {
	c, err := scanCustomer(s.read.QueryRowContext(ctx,
		`SELECT `+customerColumns+` FROM customers WHERE id = ? AND merchant_id = ? AND mode = ?`,
		id, merchantID, string(mode)))
	if errors.Is(err, sql.ErrNoRows) {
		return paygate.Customer{}, notFound("customer")
	}
	return c, translate(err)
}

func scanCustomer(row scanner) (paygate.Customer, error) { return codec.ScanCustomer(row) }

// paymentColumns are the columns scanPayment reads (one row mapping for
// both engines: codec.ScanPayment).
const paymentColumns = codec.PaymentColumns

func toBillingRow(b *paygate.Billing) (sql.NullString, error) {
	raw, err := codec.EncodeBilling(b)
	if err != nil || raw == nil {
		return sql.NullString{}, err
	}
	return sql.NullString{String: string(raw), Valid: true}, nil
}

func scanPayment(row scanner) (paygate.Payment, error) { return codec.ScanPayment(row) }

// CreatePayment, in one transaction, resolves the customer by external id
// (creating it with no email and empty metadata when missing), inserts the
// payment in status created, and links it to the idempotency record of
// p.Payment.IdempotencyKey. A duplicate payment id is paygate.ErrConflict.
// With np.Reservation, the key is reserved first in the same transaction
// (one writer transaction instead of two) and the record names the payment
// from the start; a taken key is a *paygate.KeyTakenError.
//
// When every provider of np.Route keeps its ledger in this database
// (plan.LazyCreate) the transaction commits lazily (lazyTx): the provider's
// ledger entry and the outcome commit after it, and the outcome's fsync
// makes it durable.
func (s *Store) CreatePayment(ctx context.Context, np paygate.NewPayment) (paygate.Payment, error) {
	var p paygate.Payment
	run := s.inTx
	if plan.LazyCreate(np) {
		run = s.lazyTx
	}
	np.Payment.Status = paygate.PaymentCreated
	err := run(ctx, func(tx *sql.Tx) error {
		var err error
		p, err = createPayment(ctx, tx, np)
		return err
	})
	if err != nil {
		return paygate.Payment{}, err
	}
	return p, nil
}

// createPayment is CreatePayment inside the caller's transaction, and the
// NewPayment operation of a unit: it inserts the payment in the status it
// has (CreatePayment sets created).
func createPayment(ctx context.Context, tx *sql.Tx, np paygate.NewPayment) (paygate.Payment, error) {
	p := np.Payment
	p.AmountRefunded = 0
	metadata := "{}"
	if p.Metadata != nil {
		metadata = string(p.Metadata)
	}
	billing, err := toBillingRow(p.Billing)
	if err != nil {
		return paygate.Payment{}, err
	}
	linked := false
	if r := np.Reservation; r != nil {
		if err := np.CheckReservation(); err != nil {
			return paygate.Payment{}, fmt.Errorf("sqlite: %w", err)
		}
		rec, reserved, err := reserveIdempotency(ctx, tx, *r, p.ID)
		if err != nil {
			return paygate.Payment{}, err
		}
		if !reserved {
			return paygate.Payment{}, &paygate.KeyTakenError{Record: rec}
		}
		linked = true
	}
	if _, err := tx.ExecContext(ctx, `
		INSERT INTO customers (`+customerColumns+`) VALUES (?1, ?2, ?3, ?4, NULL, '{}', ?5, ?5)
		ON CONFLICT (merchant_id, mode, external_id) DO NOTHING`,
		np.NewCustomerID, p.MerchantID, string(p.Mode), np.CustomerExternalID, micros(p.CreatedAt)); err != nil {
		return paygate.Payment{}, err
	}
	if err := tx.QueryRowContext(ctx,
		`SELECT id FROM customers WHERE merchant_id = ? AND mode = ? AND external_id = ?`,
		p.MerchantID, string(p.Mode), np.CustomerExternalID).Scan(&p.CustomerID); err != nil {
		return paygate.Payment{}, err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO payments (`+paymentColumns+`) VALUES (
		?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		p.ID, p.MerchantID, string(p.Mode), p.CustomerID, p.ProviderID, p.ProviderRef, string(p.Status),
		p.Amount.Amount, p.Amount.Currency, p.AmountText, p.AmountCaptured, p.AmountRefunded, string(p.Method), p.StoredCardID,
		p.MerchantRef, p.ErrorCode, p.ErrorMessage, p.DeclineCode,
		p.Card.Brand, p.Card.Last4, p.Card.ExpMonth, p.Card.ExpYear, p.Card.HolderName, p.Card.Fingerprint,
		billing, p.ReturnURL, p.DeviceFingerprint, metadata, p.IdempotencyKey,
		micros(p.LeaseUntil), micros(p.CreatedAt), micros(p.UpdatedAt)); err != nil {
		return paygate.Payment{}, err
	}
	if p.IdempotencyKey != "" && !linked {
		if _, err := tx.ExecContext(ctx,
			`UPDATE idempotency_keys SET payment_id = ? WHERE merchant_id = ? AND mode = ? AND key = ?`,
			p.ID, p.MerchantID, string(p.Mode), p.IdempotencyKey); err != nil {
			return paygate.Payment{}, err
		}
	}
	p.Metadata = []byte(metadata)
	return p, nil
}

// transitionPayment moves the payment (movePayment), inserts the events
// and stores done (when not nil) as the answer of its idempotency key, in
// the caller's transaction, which may write other rows too (a 3-D Secure
// challenge).
func transitionPayment(ctx context.Context, tx *sql.Tx, t paygate.PaymentTransition, events []paygate.Event, done *paygate.IdempotencyCompletion) error {
	if err := movePayment(ctx, tx, t); err != nil {
		return err
	}
	if err := insertEvents(ctx, tx, events); err != nil {
		return err
	}
	if done != nil {
		return completeIdempotency(ctx, tx, *done)
	}
	return nil
}

// movePayment moves the payment from one of t.From to t.To and sets the
// non-empty fields of t, in the caller's transaction. ErrStateConflict when
// the payment is in none of t.From; NOT_FOUND when it does not exist for
// the merchant and mode.
func movePayment(ctx context.Context, tx *sql.Tx, t paygate.PaymentTransition) error {
	from, err := json.Marshal(t.From)
	if err != nil {
		return fmt.Errorf("sqlite: encode statuses: %w", err)
	}
	var captured sql.NullInt64
	if t.AmountCaptured != nil {
		captured = sql.NullInt64{Int64: *t.AmountCaptured, Valid: true}
	}
	var updated sql.NullInt64
	if !t.UpdatedAt.IsZero() {
		updated = sql.NullInt64{Int64: micros(t.UpdatedAt), Valid: true}
	}
	res, err := tx.ExecContext(ctx, `
		UPDATE payments SET
			status = ?1,
			provider_id = CASE WHEN ?2 = '' THEN provider_id ELSE ?2 END,
			provider_ref = CASE WHEN ?3 = '' THEN provider_ref ELSE ?3 END,
			error_code = CASE WHEN ?4 = '' THEN error_code ELSE ?4 END,
			error_message = CASE WHEN ?5 = '' THEN error_message ELSE ?5 END,
			decline_code = CASE WHEN ?6 = '' THEN decline_code ELSE ?6 END,
			amount_captured = coalesce(?7, amount_captured),
			updated_at = coalesce(?8, updated_at)
		WHERE id = ?9 AND merchant_id = ?10 AND mode = ?11
			AND status IN (SELECT value FROM json_each(?12))`,
		string(t.To), t.ProviderID, t.ProviderRef, t.ErrorCode, t.ErrorMessage, t.DeclineCode,
		captured, updated, t.ID, t.MerchantID, string(t.Mode), string(from))
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return missingOrConflict(ctx, tx, "payments", "payment", t.ID, t.MerchantID, t.Mode)
	}
	return nil
}

// missingOrConflict tells why a conditional update of the row id of table
// (payments or refunds) changed nothing: NOT_FOUND when the row does not
// exist for the merchant and mode, ErrStateConflict otherwise.
func missingOrConflict(ctx context.Context, tx *sql.Tx, table, what, id, merchantID string, mode paygate.Mode) error {
	var one int
	// table is one of two constants, never input.
	err := tx.QueryRowContext(ctx, `SELECT 1 FROM `+table+` WHERE id = ? AND merchant_id = ? AND mode = ?`,
		id, merchantID, string(mode)).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return notFound(what)
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("%w: %s %s", paygate.ErrStateConflict, what, id)
}

// PaymentByID returns a payment of (merchant, mode), or NOT_FOUND.
func (s *Store) PaymentByID(ctx context.Context, merchantID string, mode paygate.Mode, id string) (paygate.Payment, error) {
	p, err := scanPayment(s.read.QueryRowContext(ctx,
		`SELECT `+paymentColumns+` FROM payments WHERE id = ? AND merchant_id = ? AND mode = ?`,
		id, merchantID, string(mode)))
	if errors.Is(err, sql.ErrNoRows) {
		return paygate.Payment{}, notFound("payment")
	}
	return p, translate(err)
}

// PaymentByMerchantRef returns the most recently created payment of
// (merchant, mode) with the reference, or NOT_FOUND. The empty reference
// matches nothing: a payment without a reference stores "", so it is
// answered without a query.
func (s *Store) PaymentByMerchantRef(ctx context.Context, merchantID string, mode paygate.Mode, ref string) (paygate.Payment, error) {
	if ref == "" {
		return paygate.Payment{}, notFound("payment")
	}
	p, err := scanPayment(s.read.QueryRowContext(ctx, `
		SELECT `+paymentColumns+` FROM payments
		WHERE merchant_id = ? AND mode = ? AND merchant_ref = ?
		ORDER BY created_at DESC, rowid DESC LIMIT 1`,
		merchantID, string(mode), ref))
	if errors.Is(err, sql.ErrNoRows) {
		return paygate.Payment{}, notFound("payment")
	}
	return p, translate(err)
}
