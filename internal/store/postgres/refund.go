package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store/codec"
)

// refundColumns are the columns scanRefund reads (one row mapping for both
// engines: codec.ScanRefund).
const refundColumns = codec.RefundColumns

func scanRefund(row pgx.Row) (paygate.Refund, error) { return codec.ScanRefund(row) }

func collectRefunds(rows pgx.Rows) ([]paygate.Refund, error) {
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (paygate.Refund, error) { return scanRefund(r) })
}

// insertRefundInUnit reserves the amount on the payment with one
// conditional UPDATE (captured, same currency, and the running total of
// refunds that are not failed within the captured amount), then inserts the
// refund only if the reservation succeeded. Concurrent refunds of one
// payment queue on the payment's row, and each re-checks the limit on the
// newest amount_refunded, so they can never overshoot together. When
// nothing was inserted, the last SELECT reads the payment and fails the
// statement, and so the unit, with the reason: unit_refused (PG404) when
// the payment does not exist for the merchant and mode, unit_invalid
// (PG400, migration 00012) naming the field otherwise.
const insertRefundInUnit = `
	WITH charged AS (
		UPDATE payments SET amount_refunded = amount_refunded + @amount
		WHERE id = @payment_id AND merchant_id = @merchant_id COLLATE "C" AND mode = @mode COLLATE "C"
			AND status = 'captured' AND currency = @currency
			AND amount_refunded + @amount <= amount_captured
		RETURNING provider_id
	), refund AS (
		INSERT INTO refunds (id, merchant_id, mode, payment_id, amount, currency, amount_text, reason, status,
			provider_id, provider_ref, failure_reason, error_code, error_message, created_at, updated_at)
		SELECT @id, @merchant_id, @mode, @payment_id, @amount, @currency, @amount_text, @reason, 'created',
			COALESCE(@provider_id, charged.provider_id), @provider_ref, @failure_reason, @error_code, @error_message,
			@created_at, @updated_at
		FROM charged
		RETURNING id
	)
	SELECT CASE
		WHEN EXISTS (SELECT 1 FROM refund) THEN true
		WHEN p.status IS NULL THEN unit_refused(false)
		WHEN p.status <> 'captured' THEN unit_invalid('transactionId', 'Only a captured payment can be refunded.')
		WHEN p.currency <> @currency THEN unit_invalid('currency', 'The currency must be the payment''s currency, ' || p.currency || '.')
		ELSE unit_invalid('amount', 'The refunds of this payment would exceed its captured amount.')
	END
	FROM (SELECT 1) AS one
	LEFT JOIN payments p ON p.id = @payment_id AND p.merchant_id = @merchant_id AND p.mode = @mode`

// newRefundArgs are the arguments of insertRefundInUnit.
func newRefundArgs(op paygate.NewRefund) namedArgs {
	r := op.Refund
	updated := r.UpdatedAt
	if updated.IsZero() {
		updated = r.CreatedAt
	}
	return namedArgs{
		"id": r.ID, "merchant_id": r.MerchantID, "mode": r.Mode, "payment_id": r.PaymentID,
		"amount": r.Amount.Amount, "currency": r.Amount.Currency, "amount_text": r.AmountText,
		// An empty provider is the payment's (COALESCE in the statement).
		"reason": r.Reason, "provider_id": nullText(r.ProviderID),
		"provider_ref": r.ProviderRef, "failure_reason": r.FailureReason,
		"error_code": r.ErrorCode, "error_message": r.ErrorMessage,
		"created_at": r.CreatedAt, "updated_at": updated,
	}
}

// RefundByID returns a refund of (merchant, mode), or NOT_FOUND.
func (s *Store) RefundByID(ctx context.Context, merchantID string, mode paygate.Mode, id string) (paygate.Refund, error) {
	r, err := scanRefund(s.pool.QueryRow(ctx, `
		SELECT `+refundColumns+` FROM refunds
		WHERE id = $1 AND merchant_id = $2 AND mode = $3`, id, merchantID, mode))
	if errors.Is(err, pgx.ErrNoRows) {
		return paygate.Refund{}, notFound("refund")
	}
	return r, translate(err)
}

// RefundsByPayment lists a payment's refunds, newest first; NOT_FOUND when
// the payment does not exist for (merchant, mode). The existence check and
// the listing are pipelined in one round trip.
func (s *Store) RefundsByPayment(ctx context.Context, merchantID string, mode paygate.Mode, paymentID string) ([]paygate.Refund, error) {
	var exists bool
	var refunds []paygate.Refund
	b := &pgx.Batch{}
	b.Queue(`SELECT EXISTS (SELECT 1 FROM payments WHERE id = $1 AND merchant_id = $2 COLLATE "C" AND mode = $3 COLLATE "C")`,
		paymentID, merchantID, mode).QueryRow(func(row pgx.Row) error { return row.Scan(&exists) })
	b.Queue(`
		SELECT `+refundColumns+` FROM refunds
		WHERE payment_id = $1 AND merchant_id = $2 AND mode = $3
		ORDER BY created_at DESC, seq DESC`, paymentID, merchantID, mode).
		Query(func(rows pgx.Rows) error {
			var err error
			refunds, err = collectRefunds(rows)
			return err
		})
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return nil, translate(err)
	}
	if !exists {
		return nil, notFound("payment")
	}
	return refunds, nil
}

// RefundsToProcess returns up to limit refunds of any merchant in status
// created, or pending and last updated before staleBefore, oldest first.
// A limit of zero or less returns them all.
func (s *Store) RefundsToProcess(ctx context.Context, staleBefore time.Time, limit int) ([]paygate.Refund, error) {
	// The first condition lets the partial index refunds_to_process_idx
	// serve the query.
	rows, err := s.pool.Query(ctx, `
		SELECT `+refundColumns+` FROM refunds
		WHERE status IN ('created', 'pending')
			AND (status = 'created' OR updated_at < $1)
		ORDER BY created_at, seq
		LIMIT $2`, staleBefore, nullLimit(limit))
	if err != nil {
		return nil, translate(err)
	}
	refunds, err := collectRefunds(rows)
	return refunds, translate(err)
}

// transitionRefundInUnit moves a refund conditionally and gives a failed
// refund's amount back to the payment, only when the refund moved; when it
// did not, unit_refused fails the statement, and so the unit: PG409 when
// the refund exists in another state, PG404 when it does not exist for the
// merchant and mode. The refund row is locked before the payment row; an
// inserted refund locks only the payment row and a refund row of its own,
// so the two never wait on each other in a cycle.
const transitionRefundInUnit = `
	WITH moved AS (
		UPDATE refunds SET
			status = @to,
			provider_ref = COALESCE(@provider_ref, provider_ref),
			failure_reason = COALESCE(@failure_reason, failure_reason),
			error_code = COALESCE(@error_code, error_code),
			error_message = COALESCE(@error_message, error_message),
			updated_at = COALESCE(@updated_at, updated_at)
		WHERE id = @id AND merchant_id = @merchant_id AND mode = @mode AND status = @from
		RETURNING payment_id, amount
	), released AS (
		UPDATE payments p SET amount_refunded = p.amount_refunded - moved.amount
		FROM moved
		WHERE p.id = moved.payment_id AND p.merchant_id = @merchant_id COLLATE "C" AND p.mode = @mode COLLATE "C"
			AND @to::text = 'failed' AND @from::text <> 'failed'
		RETURNING p.id
	)
	SELECT CASE WHEN EXISTS (SELECT 1 FROM moved) THEN true
		ELSE unit_refused(EXISTS (SELECT 1 FROM refunds WHERE id = @id AND merchant_id = @merchant_id AND mode = @mode)) END`

// refundTransitionArgs are the arguments of transitionRefundInUnit.
func refundTransitionArgs(t paygate.RefundTransition) namedArgs {
	return namedArgs{
		"id": t.ID, "merchant_id": t.MerchantID, "mode": t.Mode,
		"from": string(t.From), "to": string(t.To),
		"provider_ref": nullText(t.ProviderRef), "failure_reason": nullText(t.FailureReason),
		"error_code": nullText(t.ErrorCode), "error_message": nullText(t.ErrorMessage),
		"updated_at": nullTime(t.UpdatedAt),
	}
}
