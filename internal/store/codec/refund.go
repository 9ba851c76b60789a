package codec

import "github.com/paygate/paygate/internal/paygate"

// RefundColumns are the columns of a refunds row that ScanRefund reads, in
// its order; text columns are NOT NULL, with an empty string for none, on
// both engines.
const RefundColumns = `id, merchant_id, mode, payment_id, amount, currency, amount_text, reason, status,
	provider_id, provider_ref, failure_reason, error_code, error_message, created_at, updated_at`

// ScanRefund reads a row of RefundColumns.
func ScanRefund(row Scanner) (paygate.Refund, error) {
	var r paygate.Refund
	err := row.Scan(&r.ID, &r.MerchantID, &r.Mode, &r.PaymentID, &r.Amount.Amount, &r.Amount.Currency, &r.AmountText,
		&r.Reason, &r.Status, &r.ProviderID, &r.ProviderRef, &r.FailureReason, &r.ErrorCode, &r.ErrorMessage,
		At(&r.CreatedAt), At(&r.UpdatedAt))
	if err != nil {
		return paygate.Refund{}, err
	}
	return r, nil
}
