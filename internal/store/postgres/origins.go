package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store/codec"
)

// AllowedOrigins returns the origins allowed to embed the card fields of
// (merchant, mode); none when they were never set.
func (s *Store) AllowedOrigins(ctx context.Context, merchantID string, mode paygate.Mode) ([]string, error) {
	var text string
	err := s.pool.QueryRow(ctx, `SELECT origins FROM merchant_origins WHERE merchant_id = $1 AND mode = $2`,
		merchantID, string(mode)).Scan(&text)
	if errors.Is(err, pgx.ErrNoRows) {
		return []string{}, nil
	}
	if err != nil {
		return nil, translate(err)
	}
	return codec.Origins(text), nil
}

// changeOriginsInUnit replaces the origins of (merchant, mode)
// (OriginsChange), failing the unit (PG404) when the merchant does not
// exist.
const changeOriginsInUnit = `
	WITH up AS (
		INSERT INTO merchant_origins (merchant_id, mode, origins, updated_at)
		SELECT $1, $2, $3, $4
		WHERE EXISTS (SELECT 1 FROM merchants WHERE id = $1)
		ON CONFLICT (merchant_id, mode) DO UPDATE SET origins = excluded.origins, updated_at = excluded.updated_at
		RETURNING 1
	)
	SELECT CASE WHEN EXISTS (SELECT 1 FROM up) THEN true ELSE unit_refused(false) END`
