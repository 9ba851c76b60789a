package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store/codec"
)

// insertCardToken inserts a token (CardToken) when its public key is
// active for its merchant and mode at its creation, and refuses with
// UNAUTHORIZED otherwise; a duplicate id violates the primary key:
// ErrConflict.
func insertCardToken(ctx context.Context, tx *sql.Tx, t paygate.CardToken) error {
	res, err := tx.ExecContext(ctx, `
		INSERT INTO card_tokens (id, merchant_id, mode, brand, last4, exp_month, exp_year, holder_name,
			client_addr, key_id, sealed, created_at, expires_at)
		SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13
		WHERE EXISTS (SELECT 1 FROM api_keys WHERE id = ?14 AND merchant_id = ?2 AND mode = ?3 AND type = ?15
			AND (revoked_at IS NULL OR revoked_at > ?12) AND (expires_at IS NULL OR expires_at > ?12))`,
		t.ID, t.MerchantID, string(t.Mode), t.Brand, t.Last4, t.ExpMonth, t.ExpYear, t.HolderName,
		t.ClientAddr, t.KeyID, t.Sealed, micros(t.CreatedAt), micros(t.ExpiresAt), t.APIKeyID, string(paygate.KeyPublic))
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return paygate.Errorf(paygate.CodeUnauthorized, "", "the API key is not valid")
	}
	return nil
}

// useCardToken uses a token once (TokenUse): it erases the sealed card and
// records the payment when the token of the merchant and mode is unused and
// unexpired at u.At, and refuses with INVALID_REQUEST param token
// otherwise. The writer is serialized, so of two uses the second finds the
// token used.
func useCardToken(ctx context.Context, tx *sql.Tx, u paygate.TokenUse) error {
	res, err := tx.ExecContext(ctx, `
		UPDATE card_tokens SET key_id = NULL, sealed = NULL, used_at = ?1, payment_id = ?2
		WHERE id = ?3 AND merchant_id = ?4 AND mode = ?5
			AND used_at IS NULL AND sealed IS NOT NULL AND expires_at > ?1`,
		micros(u.At), u.PaymentID, u.ID, u.MerchantID, string(u.Mode))
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return paygate.Errorf(paygate.CodeInvalidRequest, "token", "%s", codec.TokenRefused)
	}
	return nil
}

// CardToken returns the token of (merchant, mode) with the id, or
// NOT_FOUND.
func (s *Store) CardToken(ctx context.Context, merchantID string, mode paygate.Mode, id string) (paygate.CardToken, error) {
	t, err := codec.ScanCardToken(s.read.QueryRowContext(ctx, `SELECT `+codec.CardTokenColumns+` FROM card_tokens
		WHERE id = ? AND merchant_id = ? AND mode = ?`, id, merchantID, string(mode)))
	if errors.Is(err, sql.ErrNoRows) {
		return paygate.CardToken{}, notFound("card token")
	}
	return t, translate(err)
}

// PurgeCardTokens deletes the tokens expired at or before the time. The
// sweeper runs it every few seconds: when a read finds nothing expired, no
// write transaction is taken.
func (s *Store) PurgeCardTokens(ctx context.Context, expiredBy time.Time) (int64, error) {
	var due bool
	if err := s.read.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM card_tokens WHERE expires_at <= ?)`,
		micros(expiredBy)).Scan(&due); err != nil {
		return 0, translate(err)
	}
	if !due {
		return 0, nil
	}
	var n int64
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM card_tokens WHERE expires_at <= ?`, micros(expiredBy))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, err
}

// CardTokenKeyIDs counts the tokens still sealed, by key id.
func (s *Store) CardTokenKeyIDs(ctx context.Context) (map[string]int, error) {
	return s.countsByKeyID(ctx, `SELECT key_id, count(*) FROM card_tokens WHERE key_id IS NOT NULL GROUP BY key_id`)
}
