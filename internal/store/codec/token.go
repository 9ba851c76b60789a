package codec

import "github.com/paygate/paygate/internal/paygate"

// CardTokenColumns are the columns of a card_tokens row that ScanCardToken
// reads, in its order. Both engines store a token alike (issue 24): key_id
// and sealed are NULL once the token is used (erased with its CVV);
// used_at is NULL and payment_id "" until then.
const CardTokenColumns = `id, merchant_id, mode, brand, last4, exp_month, exp_year, holder_name,
	client_addr, key_id, sealed, created_at, expires_at, used_at, payment_id`

// ScanCardToken reads a row of CardTokenColumns.
func ScanCardToken(row Scanner) (paygate.CardToken, error) {
	var t paygate.CardToken
	err := row.Scan(&t.ID, &t.MerchantID, &t.Mode, &t.Brand, &t.Last4, &t.ExpMonth, &t.ExpYear, &t.HolderName,
		&t.ClientAddr, OptionalText(&t.KeyID), &t.Sealed, At(&t.CreatedAt), At(&t.ExpiresAt), AtOptional(&t.UsedAt), &t.PaymentID)
	if err != nil {
		return paygate.CardToken{}, err
	}
	return t, nil
}

// TokenRefused is the message of a TokenUse's refusal (INVALID_REQUEST
// param token), one for every reason so that it tells a caller nothing of
// another merchant's tokens.
const TokenRefused = "The token does not exist, was already used, or has expired."
