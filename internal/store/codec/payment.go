package codec

import (
	"fmt"

	"github.com/paygate/paygate/internal/paygate"
)

// PaymentColumns are the columns of a payments row that ScanPayment reads,
// in its order. Both engines store a payment alike (issue 19): text columns
// are NOT NULL, with an empty string for none; billing is NULL for none; times are as
// At describes.
const PaymentColumns = `id, merchant_id, mode, customer_id, provider_id, provider_ref, status,
	amount, currency, amount_text, amount_captured, amount_refunded, method, stored_card_id,
	merchant_ref, error_code, error_message, decline_code,
	card_brand, card_last4, card_exp_month, card_exp_year, card_holder_name, card_fingerprint,
	billing, return_url, device_fingerprint, metadata, idempotency_key, lease_until,
	created_at, updated_at`

// ScanPayment reads a row of PaymentColumns.
func ScanPayment(row Scanner) (paygate.Payment, error) {
	var p paygate.Payment
	var billing []byte
	var metadata string
	err := row.Scan(&p.ID, &p.MerchantID, &p.Mode, &p.CustomerID, &p.ProviderID, &p.ProviderRef, &p.Status,
		&p.Amount.Amount, &p.Amount.Currency, &p.AmountText, &p.AmountCaptured, &p.AmountRefunded, &p.Method, &p.StoredCardID,
		&p.MerchantRef, &p.ErrorCode, &p.ErrorMessage, &p.DeclineCode,
		&p.Card.Brand, &p.Card.Last4, &p.Card.ExpMonth, &p.Card.ExpYear, &p.Card.HolderName, &p.Card.Fingerprint,
		&billing, &p.ReturnURL, &p.DeviceFingerprint, &metadata, &p.IdempotencyKey, At(&p.LeaseUntil),
		At(&p.CreatedAt), At(&p.UpdatedAt))
	if err != nil {
		return paygate.Payment{}, err
	}
	p.Metadata = []byte(metadata)
	if p.Billing, err = DecodeBilling(billing); err != nil {
		return paygate.Payment{}, fmt.Errorf("payment %s: %w", p.ID, err)
	}
	return p, nil
}
