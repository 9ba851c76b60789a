package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store/codec"
)

// refundColumns are the columns scanRefund reads (one row mapping for both
// engines: codec.ScanRefund).
const refundColumns = codec.RefundColumns

func scanRefund(row scanner) (paygate.Refund, error) { return codec.ScanRefund(row) }

// insertRefund inserts the refund in status created, in the unit's
// transaction, after checking it against the payment: NOT_FOUND when the
// payment does not exist for (merchant, mode); INVALID_REQUEST with param
// transactionId when it is not captured, currency when the currency
// differs, amount when the refunds that are not failed would exceed the
// captured amount. The limit is enforced by one conditional UPDATE of the
// payment's refunded total, so concurrent refunds cannot overshoot
// together. A duplicate refund id is paygate.ErrConflict. (Unit.Validate
// refuses an amount that is not positive.)
func insertRefund(ctx context.Context, tx *sql.Tx, op paygate.NewRefund) error {
	r := op.Refund
	r.Status = paygate.RefundCreated
	var chargedBy string
	err := tx.QueryRowContext(ctx, `
		UPDATE payments SET amount_refunded = amount_refunded + ?1
		WHERE id = ?2 AND merchant_id = ?3 AND mode = ?4
			AND status = ?5 AND currency = ?6 AND amount_refunded + ?1 <= amount_captured
		RETURNING provider_id`,
		r.Amount.Amount, r.PaymentID, r.MerchantID, string(r.Mode), string(paygate.PaymentCaptured), r.Amount.Currency).Scan(&chargedBy)
	if errors.Is(err, sql.ErrNoRows) {
		return refundRefusal(ctx, tx, r)
	}
	if err != nil {
		return err
	}
	if r.ProviderID == "" {
		r.ProviderID = chargedBy
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO refunds (`+refundColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, r.MerchantID, string(r.Mode), r.PaymentID, r.Amount.Amount, r.Amount.Currency, r.AmountText,
		r.Reason, string(r.Status), r.ProviderID, r.ProviderRef, r.FailureReason, r.ErrorCode, r.ErrorMessage,
		micros(r.CreatedAt), micros(r.UpdatedAt))
	return err
}

// refundRefusal explains why the payment's conditional update refused the
// refund, checking in the order of the contract. It runs in the write
// transaction that made the update, so the payment cannot change between.
func refundRefusal(ctx context.Context, tx *sql.Tx, r paygate.Refund) error {
	var (
		status, currency   string
		captured, refunded int64
	)
	err := tx.QueryRowContext(ctx, `
		SELECT status, currency, amount_captured, amount_refunded FROM payments
		WHERE id = ? AND merchant_id = ? AND mode = ?`,
		r.PaymentID, r.MerchantID, string(r.Mode)).Scan(&status, &currency, &captured, &refunded)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return notFound("payment")
	case err != nil:
		return err
	case status != string(paygate.PaymentCaptured):
		return paygate.Errorf(paygate.CodeInvalidRequest, "transactionId", "only a captured payment can be refunded")
	case currency != r.Amount.Currency:
		return paygate.Errorf(paygate.CodeInvalidRequest, "currency", "the currency must be the payment's currency")
	default:
		return paygate.Errorf(paygate.CodeInvalidRequest, "amount", "the refunds would exceed the captured amount")
	}
}

// RefundByID returns a refund of (merchant, mode), or NOT_FOUND.
func (s *Store) RefundByID(ctx context.Context, merchantID string, mode paygate.Mode, id string) (paygate.Refund, error) {
	r, err := scanRefund(s.read.QueryRowContext(ctx,
		`SELECT `+refundColumns+` FROM refunds WHERE id = ? AND merchant_id = ? AND mode = ?`,
		id, merchantID, string(mode)))
	if errors.Is(err, sql.ErrNoRows) {
		return paygate.Refund{}, notFound("refund")
	}
	return r, translate(err)
}

// RefundsByPayment lists a payment's refunds, newest first; NOT_FOUND when
// the payment does not exist for (merchant, mode).
func (s *Store) RefundsByPayment(ctx context.Context, merchantID string, mode paygate.Mode, paymentID string) ([]paygate.Refund, error) {
	var refunds []paygate.Refund
	err := s.inReadTx(ctx, func(tx *sql.Tx) error {
		var one int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM payments WHERE id = ? AND merchant_id = ? AND mode = ?`,
			paymentID, merchantID, string(mode)).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("payment")
		}
		if err != nil {
			return err
		}
		refunds, err = queryRefunds(ctx, tx, `
			SELECT `+refundColumns+` FROM refunds
			WHERE payment_id = ? AND merchant_id = ? AND mode = ?
			ORDER BY created_at DESC, rowid DESC`,
			paymentID, merchantID, string(mode))
		return err
	})
	return refunds, err
}

// RefundsToProcess returns up to limit refunds of any merchant that are
// created, or pending and last updated before staleBefore, oldest first.
// It serves the background refund worker only.
func (s *Store) RefundsToProcess(ctx context.Context, staleBefore time.Time, limit int) ([]paygate.Refund, error) {
	var refunds []paygate.Refund
	err := s.inReadTx(ctx, func(tx *sql.Tx) error {
		var err error
		refunds, err = queryRefunds(ctx, tx, `
			SELECT `+refundColumns+` FROM refunds
			WHERE status = ? OR (status = ? AND updated_at < ?)
			ORDER BY created_at, rowid LIMIT ?`,
			string(paygate.RefundCreated), string(paygate.RefundPending), micros(staleBefore), sqlLimit(limit))
		return err
	})
	return refunds, err
}

func queryRefunds(ctx context.Context, tx *sql.Tx, query string, args ...any) ([]paygate.Refund, error) {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	refunds := []paygate.Refund{}
	for rows.Next() {
		r, err := scanRefund(rows)
		if err != nil {
			return nil, err
		}
		refunds = append(refunds, r)
	}
	return refunds, rows.Err()
}

// moveRefund moves the refund from t.From to t.To and sets the non-empty
// fields of t, in the unit's transaction. Moving to failed gives the amount
// back to the payment's refundable balance. ErrStateConflict when the
// refund is not in t.From; NOT_FOUND when it does not exist for the
// merchant and mode.
func moveRefund(ctx context.Context, tx *sql.Tx, t paygate.RefundTransition) error {
	var (
		paymentID string
		amount    int64
	)
	err := tx.QueryRowContext(ctx, `
		UPDATE refunds SET
			status = ?1,
			provider_ref = CASE WHEN ?2 = '' THEN provider_ref ELSE ?2 END,
			failure_reason = CASE WHEN ?3 = '' THEN failure_reason ELSE ?3 END,
			updated_at = ?4,
			error_code = coalesce(?9, error_code),
			error_message = coalesce(?10, error_message)
		WHERE id = ?5 AND merchant_id = ?6 AND mode = ?7 AND status = ?8
		RETURNING payment_id, amount`,
		string(t.To), t.ProviderRef, t.FailureReason, micros(t.UpdatedAt),
		t.ID, t.MerchantID, string(t.Mode), string(t.From),
		nullString(t.ErrorCode), nullString(t.ErrorMessage)).Scan(&paymentID, &amount)
	if errors.Is(err, sql.ErrNoRows) {
		return missingOrConflict(ctx, tx, "refunds", "refund", t.ID, t.MerchantID, t.Mode)
	}
	if err != nil {
		return err
	}
	if t.To == paygate.RefundFailed && t.From != paygate.RefundFailed {
		_, err = tx.ExecContext(ctx, `
			UPDATE payments SET amount_refunded = amount_refunded - ?
			WHERE id = ? AND merchant_id = ? AND mode = ?`,
			amount, paymentID, t.MerchantID, string(t.Mode))
	}
	return err
}

// sqlLimit turns a caller's limit into SQLite's: no limit (-1) when it is
// not positive.
func sqlLimit(limit int) int {
	if limit <= 0 {
		return -1
	}
	return limit
}

// nullString is s as a query argument, NULL when s is empty (the nullable
// columns that are NULL rather than empty when unset: a refund's error).
func nullString(s string) sql.NullString {
	return sql.NullString{String: s, Valid: s != ""}
}
