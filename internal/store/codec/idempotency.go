package codec

import "github.com/paygate/paygate/internal/paygate"

// IdempotencyColumns are the columns of an idempotency_keys row that
// ScanIdempotency reads, in its order. payment_id is NOT NULL, "" for a
// record without a payment, on both engines; body is NULL until the record
// is complete.
const IdempotencyColumns = `merchant_id, mode, key, fingerprint, state, status_code, body, payment_id, created_at`

// ScanIdempotency reads a row of IdempotencyColumns.
func ScanIdempotency(row Scanner) (paygate.IdempotencyRecord, error) {
	var r paygate.IdempotencyRecord
	err := row.Scan(&r.MerchantID, &r.Mode, &r.Key, &r.Fingerprint, &r.State, &r.StatusCode, &r.Body,
		&r.PaymentID, At(&r.CreatedAt))
	if err != nil {
		return paygate.IdempotencyRecord{}, err
	}
	return r, nil
}
