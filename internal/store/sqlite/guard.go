package sqlite

import (
	"context"
	"database/sql"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store/codec"
)

// GuardSettings returns the card-testing guard's settings of (merchant,
// mode): the stored rules and the defaults of the others.
func (s *Store) GuardSettings(ctx context.Context, merchantID string, mode paygate.Mode) (paygate.GuardSettings, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT `+codec.GuardColumns+` FROM guard_rules WHERE merchant_id = ? AND mode = ?`,
		merchantID, string(mode))
	if err != nil {
		return paygate.GuardSettings{}, translate(err)
	}
	defer rows.Close()
	var stored []paygate.GuardRuleSettings
	for rows.Next() {
		r, err := codec.ScanGuardRule(rows)
		if err != nil {
			return paygate.GuardSettings{}, translate(err)
		}
		stored = append(stored, r)
	}
	if err := rows.Err(); err != nil {
		return paygate.GuardSettings{}, translate(err)
	}
	return codec.GuardSettings(merchantID, mode, stored), nil
}

// changeGuard stores one rule's settings (GuardChange). NOT_FOUND when the
// merchant does not exist.
func changeGuard(ctx context.Context, tx *sql.Tx, c paygate.GuardChange) error {
	var one int
	err := tx.QueryRowContext(ctx, `SELECT 1 FROM merchants WHERE id = ?`, c.MerchantID).Scan(&one)
	if err == sql.ErrNoRows {
		return notFound("merchant")
	}
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `
		INSERT INTO guard_rules (merchant_id, mode, rule, enabled, threshold, window_ms, block_ms, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (merchant_id, mode, rule) DO UPDATE SET enabled = excluded.enabled,
			threshold = excluded.threshold, window_ms = excluded.window_ms, block_ms = excluded.block_ms,
			updated_at = excluded.updated_at`,
		codec.GuardArgs(c, micros(c.At))...)
	return err
}
