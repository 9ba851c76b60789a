package codec

import "github.com/paygate/paygate/internal/paygate"

// StoredCardColumns are the columns of a stored_cards row that
// ScanStoredCard reads, in its order. Both engines store a card alike
// (issue 19): payment_id is NOT NULL, "" for a card saved directly; the
// sealed columns (key_id, wrapped_key, ciphertext, fingerprint) are NULL
// once the card is deleted, as the partial indexes and the seal check
// need; deleted_at is NULL until then.
const StoredCardColumns = `id, merchant_id, mode, customer_id, state, payment_id, brand, last4, exp_month, exp_year,
	holder_name, key_id, wrapped_key, ciphertext, fingerprint, created_at, updated_at, deleted_at`

// ScanStoredCard reads a row of StoredCardColumns.
func ScanStoredCard(row Scanner) (paygate.StoredCard, error) {
	var c paygate.StoredCard
	err := row.Scan(&c.ID, &c.MerchantID, &c.Mode, &c.CustomerID, &c.State, &c.PaymentID, &c.Brand, &c.Last4,
		&c.ExpMonth, &c.ExpYear, &c.HolderName, OptionalText(&c.Sealed.KeyID), &c.Sealed.WrappedKey,
		&c.Sealed.Ciphertext, OptionalText(&c.Sealed.Fingerprint),
		At(&c.CreatedAt), At(&c.UpdatedAt), AtOptional(&c.DeletedAt))
	if err != nil {
		return paygate.StoredCard{}, err
	}
	return c, nil
}
