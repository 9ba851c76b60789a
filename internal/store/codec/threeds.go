package codec

import "github.com/paygate/paygate/internal/paygate"

// ChallengeColumns are the columns of a threeds_challenges row that
// ScanChallenge reads, in its order. claimed_until and consumed_at are NULL
// for none on both engines.
const ChallengeColumns = `token_hash, payment_id, merchant_id, mode, created_at, expires_at, claimed_until, consumed_at`

// ScanChallenge reads a row of ChallengeColumns, and after them the
// destinations in more (a flag a statement returns beside the row).
func ScanChallenge(row Scanner, more ...any) (paygate.ThreeDSChallenge, error) {
	var c paygate.ThreeDSChallenge
	dest := append([]any{&c.TokenHash, &c.PaymentID, &c.MerchantID, &c.Mode, At(&c.CreatedAt), At(&c.ExpiresAt),
		AtOptional(&c.ClaimedUntil), AtOptional(&c.ConsumedAt)}, more...)
	if err := row.Scan(dest...); err != nil {
		return paygate.ThreeDSChallenge{}, err
	}
	return c, nil
}
