package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store/codec"
)

// AllowedOrigins returns the origins allowed to embed the card fields of
// (merchant, mode); none when they were never set.
func (s *Store) AllowedOrigins(ctx context.Context, merchantID string, mode paygate.Mode) ([]string, error) {
	var text string
	err := s.read.QueryRowContext(ctx, `SELECT origins FROM merchant_origins WHERE merchant_id = ? AND mode = ?`,
		merchantID, string(mode)).Scan(&text)
	if errors.Is(err, sql.ErrNoRows) {
		return []string{}, nil
	}
	if err != nil {
		return nil, translate(err)
	}
	return codec.Origins(text), nil
}

// changeOrigins replaces the origins of (merchant, mode) (OriginsChange).
// NOT_FOUND when the merchant does not exist.
func changeOrigins(ctx context.Context, tx *sql.Tx, c paygate.OriginsChange) error {
	var one int
	err := tx.QueryRowContext(ctx, `SELECT 1 FROM merchants WHERE id = ?`, c.MerchantID).Scan(&one)
	if err == sql.ErrNoRows {
		return notFound("merchant")
	}
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `
		INSERT INTO merchant_origins (merchant_id, mode, origins, updated_at)
		VALUES (?, ?, ?, ?)
		ON CONFLICT (merchant_id, mode) DO UPDATE SET origins = excluded.origins, updated_at = excluded.updated_at`,
		codec.OriginsArgs(c, micros(c.At))...)
	return err
}
