package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store/codec"
)

// insertCardToken inserts a token (CardToken) when its public key is
// active for its merchant and mode at its creation, and fails the unit
// through unit_refused otherwise (PG404: tokenRefused names it
// UNAUTHORIZED); a duplicate id violates the primary key: ErrConflict.
const insertCardToken = `
	WITH api_key AS (
		SELECT 1 FROM api_keys
		WHERE id = @api_key_id AND merchant_id = @merchant_id AND mode = @mode AND type = 'public'
			AND (revoked_at IS NULL OR revoked_at > @created_at)
			AND (expires_at IS NULL OR expires_at > @created_at)
	), inserted AS (
		INSERT INTO card_tokens (id, merchant_id, mode, brand, last4, exp_month, exp_year, holder_name,
			client_addr, key_id, sealed, created_at, expires_at)
		SELECT @id, @merchant_id, @mode, @brand, @last4, @exp_month, @exp_year, @holder_name,
			@client_addr, @key_id, @sealed, @created_at, @expires_at FROM api_key
		RETURNING 1
	)
	SELECT EXISTS (SELECT 1 FROM inserted) OR unit_refused(false)`

// tokenRefused names the refusal of insertCardToken: its public key is
// not active.
func tokenRefused(pgErr *pgconn.PgError) error {
	if pgErr.Code == sqlStateNotFound {
		return paygate.Errorf(paygate.CodeUnauthorized, "", "The API key is not active.")
	}
	return nil
}

// cardTokenArgs returns the arguments of insertCardToken.
func cardTokenArgs(t paygate.CardToken) namedArgs {
	return namedArgs{
		"id": t.ID, "merchant_id": t.MerchantID, "mode": t.Mode, "brand": t.Brand, "last4": t.Last4,
		"exp_month": t.ExpMonth, "exp_year": t.ExpYear, "holder_name": t.HolderName,
		"client_addr": t.ClientAddr, "api_key_id": t.APIKeyID, "key_id": t.KeyID, "sealed": t.Sealed, "created_at": t.CreatedAt, "expires_at": t.ExpiresAt,
	}
}

// useCardTokenInUnit uses a token once (TokenUse): it erases the sealed card
// and records the payment when the token of the merchant and mode is
// unused and unexpired at @at, and fails the unit through unit_invalid
// (PG400, column token) otherwise. Under READ COMMITTED a second use waits
// for the first's row lock and re-checks its WHERE clause on the row the
// first wrote: it finds the token used, and is refused.
var useCardTokenInUnit = `
	WITH used AS (
		UPDATE card_tokens SET key_id = NULL, sealed = NULL, used_at = @at, payment_id = @payment_id
		WHERE id = @id AND merchant_id = @merchant_id AND mode = @mode
			AND used_at IS NULL AND sealed IS NOT NULL AND expires_at > @at
		RETURNING 1
	)
	SELECT CASE WHEN EXISTS (SELECT 1 FROM used) THEN true
		ELSE unit_invalid('token', '` + codec.TokenRefused + `') END`

// tokenUseArgs returns the arguments of useCardTokenInUnit.
func tokenUseArgs(u paygate.TokenUse) namedArgs {
	return namedArgs{"id": u.ID, "merchant_id": u.MerchantID, "mode": u.Mode, "payment_id": u.PaymentID, "at": u.At}
}

// CardToken returns the token of (merchant, mode) with the id, or
// NOT_FOUND.
func (s *Store) CardToken(ctx context.Context, merchantID string, mode paygate.Mode, id string) (paygate.CardToken, error) {
	t, err := codec.ScanCardToken(s.pool.QueryRow(ctx, `SELECT `+codec.CardTokenColumns+` FROM card_tokens
		WHERE id = $1 AND merchant_id = $2 AND mode = $3`, id, merchantID, mode))
	if errors.Is(err, pgx.ErrNoRows) {
		return paygate.CardToken{}, notFound("card token")
	}
	return t, translate(err)
}

// PurgeCardTokens deletes the tokens expired at or before the time.
func (s *Store) PurgeCardTokens(ctx context.Context, expiredBy time.Time) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM card_tokens WHERE expires_at <= $1`, expiredBy)
	if err != nil {
		return 0, translate(err)
	}
	return tag.RowsAffected(), nil
}

// CardTokenKeyIDs counts the tokens still sealed, by key id.
func (s *Store) CardTokenKeyIDs(ctx context.Context) (map[string]int, error) {
	return s.countsByKeyID(ctx, `SELECT key_id, count(*) FROM card_tokens WHERE key_id IS NOT NULL GROUP BY key_id`)
}
